#!/usr/bin/env python3
"""pycocotools' COCOeval (bbox) on the files `bench_coco_eval --write DIR`
writes, timed the same way (evaluate + accumulate + summarize), for a side by
side with bench_coco_eval and `dflow-detect cocoeval` where pycocotools is
installed (it is not packaged in Debian 12).
    python3 bench/compare_cocoeval.py DIR
"""
import json
import sys
import time

from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval


def main(directory):
    truth = COCO()
    with open(f"{directory}/gt.json") as f:
        truth.dataset = json.load(f)
    truth.dataset.setdefault("info", {})
    truth.dataset.setdefault("licenses", [])
    truth.createIndex()
    detections = truth.loadRes(f"{directory}/dt.json")
    start = time.perf_counter()
    evaluation = COCOeval(truth, detections, "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    seconds = time.perf_counter() - start
    print(json.dumps({"eval_s": round(seconds, 4), "stats": [float(s) for s in evaluation.stats]}))


if __name__ == "__main__":
    main(sys.argv[1])
