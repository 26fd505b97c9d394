#!/usr/bin/python3
"""torchvision.ops.nms on the boxes of bench/nms.cc (the same splitmix64
draws, so the very same float32 boxes), 1k, 10k and 100k boxes, IoU 0.5,
2 threads; and torchvision.ops.batched_nms on them with box i in class
i % 80, as bench/nms.cc's CombinedNonMaxSuppression case. Median of 7 runs
(3 at 100k boxes). Prints one JSON object:
{"1000": {"ms": median per call, "kept": K}, "batched_1000": {...}, ...}.
Usage: /usr/bin/python3 bench/torch_nms.py [--runs R]"""
import argparse
import json
import time

import numpy as np
import torch
import torchvision

GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def uniform(seed, count):
    """Draws 0..count-1 of bench/nms.cc's Uniform(seed, i), as float32."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (np.arange(count, dtype=np.uint64) + np.uint64(1)) * GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def random_boxes(n, seed=1):
    """(boxes as torchvision's [x1, y1, x2, y2], scores), float32."""
    u = uniform(seed, 5 * n).reshape(n, 5)
    half = np.float32(0.5)
    cy, cx = np.float32(1000) * u[:, 0], np.float32(1000) * u[:, 1]
    h = np.float32(16) + np.float32(96) * u[:, 2]
    w = np.float32(16) + np.float32(96) * u[:, 3]
    boxes = np.stack([cx - half * w, cy - half * h, cx + half * w, cy + half * h], axis=1)
    return torch.from_numpy(boxes), torch.from_numpy(np.ascontiguousarray(u[:, 4]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(2)
    results = {}
    for n in (1000, 10000, 100000):
        boxes, scores = random_boxes(n)
        classes = torch.arange(n) % 80
        for name, nms in ((str(n), lambda: torchvision.ops.nms(boxes, scores, 0.5)),
                          (f"batched_{n}",
                           lambda: torchvision.ops.batched_nms(boxes, scores, classes, 0.5))):
            results[name] = timed(nms, n, args.runs)
    print(json.dumps(results))


def timed(nms, n, runs):
    """{"ms": the median time of one call, "kept": boxes kept}."""
    kept = nms()  # warm-up
    repeat = max(1, 20000 // n)  # calls per timed run: short runs are noisy
    runs = runs if n < 100000 else min(runs, 3)  # 100k: tens of seconds each
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(repeat):
            nms()
        times.append((time.perf_counter() - start) / repeat)
    return {"ms": float(np.median(times)) * 1e3, "kept": int(kept.numel())}


if __name__ == "__main__":
    main()
