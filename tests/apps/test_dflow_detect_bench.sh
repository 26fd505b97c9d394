#!/usr/bin/env bash
# dflow-detect export and bench end to end on a tiny generated dataset: a
# detector exported as a float and an int8 graph file (and one quantized by
# `dflow quantize`, which keeps the detector's metadata), which predict and
# eval take as they take the checkpoint; bench over a
# folder of images and over videos made by `generate --video` (mp4 and
# avi): the table, the JSON line, mAP against ground truth (the same for the
# checkpoint and its float graph), the CSV that collects runs, the annotated
# images and video (read back); bad input that must fail clearly without
# writing anything.
# Usage: test_dflow_detect_bench.sh PATH/TO/dflow-detect PATH/TO/dflow
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-detect PATH/TO/dflow}
DFLOW=${2:?usage: $0 PATH/TO/dflow-detect PATH/TO/dflow}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"

# The value of FIELD in the JSON line (the last line) of FILE.
field() { tail -1 "$1" | python3 -c "import json, sys; print(json.load(sys.stdin)['$2'])"; }

"$EXE" generate --out "$TMP/data" --images 8 --size 96x80 --classes 2 --seed 3 > /dev/null || fail "generate"
"$EXE" generate --out "$TMP/mp4" --images 6 --size 96x80 --classes 2 --seed 4 --video clip.mp4 --fps 5 \
  > "$TMP/gen.txt" || fail "generate --video"
grep -qF "wrote 6 frames of clip.mp4" "$TMP/gen.txt" || { cat "$TMP/gen.txt"; fail "generate --video summary"; }
"$EXE" generate --out "$TMP/avi" --images 5 --size 64x48 --classes 2 --seed 5 --video clip.avi > /dev/null ||
  fail "generate --video avi"
grep -q '"file_name":"5"' "$TMP/mp4/annotations.json" || fail "frames are not named by number"
"$EXE" train --data "$TMP/data" --out "$TMP/run" --size 64 --width 0.25 --batch 4 --steps 2 --threads 1 \
  > /dev/null || fail "train"

# A checkpoint over a video with ground truth: every frame timed and evaluated,
# the annotated video saved, a CSV row.
"$EXE" bench --checkpoint "$TMP/run" --video "$TMP/mp4/clip.mp4" --gt "$TMP/mp4/annotations.json" --threads 1 \
  --save "$TMP/saved" --score 0 --csv "$TMP/runs.csv" --json "$TMP/dets.json" > "$TMP/video.txt" ||
  { cat "$TMP/video.txt"; fail "bench --video"; }
cat "$TMP/video.txt"
for row in "frames                    6" "precision                 fp32" "resolution                64" \
           "average_inference_ms" "average_preprocess_ms" "average_postprocess_ms" "fps" "map_50_95" "cpu"; do
  grep -qF -- "$row" "$TMP/video.txt" || fail "the table lacks '$row'"
done
[[ $(field "$TMP/video.txt" map_50) != None ]] || fail "no mAP@0.5 with ground truth"
python3 -c "import json; d = json.load(open('$TMP/dets.json')); assert d and all(1 <= x['image_id'] <= 6 for x in d)" ||
  fail "the COCO results do not name the frames"
[[ -s $TMP/saved/clip_boxes.mp4 ]] || fail "no annotated video"
# The annotated video reads back: 6 frames of the source's size.
"$EXE" bench --checkpoint "$TMP/run" --video "$TMP/saved/clip_boxes.mp4" --threads 1 > "$TMP/readback.txt" ||
  { cat "$TMP/readback.txt"; fail "the annotated video does not read back"; }
[[ $(field "$TMP/readback.txt" frames) == 6 ]] || fail "the annotated video has $(field "$TMP/readback.txt" frames) frames"

# MJPEG in avi, frames of another size.
"$EXE" bench --checkpoint "$TMP/run" --video "$TMP/avi/clip.avi" --gt "$TMP/avi/annotations.json" --threads 1 \
  --save "$TMP/saved-avi" --csv "$TMP/runs.csv" > "$TMP/avi.txt" || { cat "$TMP/avi.txt"; fail "bench avi"; }
[[ -s $TMP/saved-avi/clip_boxes.avi && $(field "$TMP/avi.txt" frames) == 5 ]] || fail "avi bench"

# Exported graphs: the float one finds what the checkpoint finds; the int8
# one is about a quarter of its size.
"$EXE" export --checkpoint "$TMP/run" -o "$TMP/model.json" --threads 1 > /dev/null || fail "export"
"$EXE" export --checkpoint "$TMP/run" -o "$TMP/model-int8.json" --int8 --calibration "$TMP/data" \
  --calibration-images 2 --threads 1 > "$TMP/export8.txt" || { cat "$TMP/export8.txt"; fail "export --int8"; }
grep -qF "(int8, 2 classes, 64x64 input)" "$TMP/export8.txt" || { cat "$TMP/export8.txt"; fail "export --int8 summary"; }
images=(--images "$TMP/data" --gt "$TMP/data/annotations.json" --threads 1 --csv "$TMP/runs.csv")
"$EXE" bench --checkpoint "$TMP/run" "${images[@]}" > "$TMP/ckpt.txt" || { cat "$TMP/ckpt.txt"; fail "bench checkpoint"; }
"$EXE" bench --graph "$TMP/model.json" "${images[@]}" > "$TMP/fp32.txt" || { cat "$TMP/fp32.txt"; fail "bench graph"; }
"$EXE" bench --graph "$TMP/model-int8.json" "${images[@]}" --save "$TMP/drawn" > "$TMP/int8.txt" ||
  { cat "$TMP/int8.txt"; fail "bench int8 graph"; }
# The same mAP up to float rounding: in the graph file the batch norms are
# constants, folded into the filters when it loads, while the checkpoint
# runs them as ops on its variables. On this barely trained detector,
# scores tie closely, so a rounding can swap two and move AP by ~1e-5 (a
# wrong export moves it by far more).
close() {
  python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-3)" "$1" "$2"
}
for metric in map_50 map_50_95; do
  close "$(field "$TMP/ckpt.txt" $metric)" "$(field "$TMP/fp32.txt" $metric)" ||
    fail "the float graph's $metric $(field "$TMP/fp32.txt" $metric) differs from the checkpoint's $(field "$TMP/ckpt.txt" $metric)"
done
[[ $(field "$TMP/int8.txt" precision) == int8 && $(field "$TMP/fp32.txt" precision) == fp32 ]] || fail "precision"
# --limit N is evaluated on the N images that ran: as on ground truth of those alone.
python3 - "$TMP/data/annotations.json" "$TMP/first4.json" << 'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ids = {i["id"] for i in d["images"][:4]}
d["images"] = d["images"][:4]
d["annotations"] = [a for a in d["annotations"] if a["image_id"] in ids]
json.dump(d, open(sys.argv[2], "w"))
EOF
"$EXE" bench --checkpoint "$TMP/run" --images "$TMP/data" --gt "$TMP/data/annotations.json" --threads 1 --limit 4 \
  > "$TMP/limit.txt" || { cat "$TMP/limit.txt"; fail "bench --limit"; }
"$EXE" bench --checkpoint "$TMP/run" --images "$TMP/data" --gt "$TMP/first4.json" --threads 1 > "$TMP/first4.txt" ||
  { cat "$TMP/first4.txt"; fail "bench on 4 images"; }
[[ $(field "$TMP/limit.txt" map_50_95) == $(field "$TMP/first4.txt" map_50_95) && $(field "$TMP/limit.txt" frames) == 4 ]] ||
  fail "--limit 4 evaluates $(field "$TMP/limit.txt" map_50_95), the first 4 images alone $(field "$TMP/first4.txt" map_50_95)"
python3 -c "
import json, sys
f, q = (json.loads(open(p).read().splitlines()[-1])['model_size_mb'] for p in ('$TMP/fp32.txt', '$TMP/int8.txt'))
assert q < 0.3 * f, (f, q)" || fail "the int8 graph is not about a quarter of the float one"
[[ $(ls "$TMP/drawn" | wc -l) == 8 ]] || fail "--save did not draw the 8 images"

# `dflow quantize` of the exported float graph keeps the detector's metadata.
python3 - "$TMP/calib.json" << 'EOF'
import json, random, sys
random.seed(1)
values = [round(random.random(), 3) for _ in range(64 * 64 * 3)]
node = {"name": "batch", "op": "Const", "attrs": {"dtype": "float32",
        "value": {"dtype": "float32", "shape": [1, 64, 64, 3], "values": values}}}
json.dump({"format": "dflow.graph/1", "seed": 0, "nodes": [node]}, open(sys.argv[1], "w"))
EOF
(cd "$TMP" && "$DFLOW" run calib.json --fetch batch --out calib > /dev/null) || fail "write a calibration batch"
outputs=$(python3 -c "
import json
g = json.load(open('$TMP/model.json'))
print(' '.join('--output ' + o for o in json.loads(g['metadata']['dflow-detect'])['outputs']))")
# shellcheck disable=SC2086
"$DFLOW" quantize "$TMP/model.json" $outputs --calibration "$TMP/calib" -o "$TMP/quantized.json" > /dev/null ||
  fail "dflow quantize of an exported detector"
"$EXE" bench --graph "$TMP/quantized.json" --images "$TMP/data/images" --threads 1 --limit 2 > "$TMP/q.txt" ||
  { cat "$TMP/q.txt"; fail "bench of dflow quantize's graph"; }
[[ $(field "$TMP/q.txt" precision) == int8 && $(field "$TMP/q.txt" frames) == 2 ]] || fail "dflow quantize's graph"

# predict and eval take the graph files too. eval: the float graph's mAP is
# the checkpoint's (up to the rounding above), the int8 graph says int8, and
# a float graph can be quantized there as a checkpoint can.
eval_json() {
  local name=$1
  shift
  "$EXE" eval --data "$TMP/data" --threads 1 "$@" > "$TMP/eval-$name.txt" ||
    { cat "$TMP/eval-$name.txt"; fail "eval $*"; }
}
eval_json checkpoint --checkpoint "$TMP/run"
eval_json fp32 --graph "$TMP/model.json"
eval_json int8 --graph "$TMP/model-int8.json"
eval_json quantized --graph "$TMP/model.json" --int8 --calibration "$TMP/data" --calibration-images 2
python3 - "$TMP" << 'EOF' || fail "eval of the graph files"
import json, sys
runs = ("checkpoint", "fp32", "int8", "quantized")
r = {k: json.loads(open(f"{sys.argv[1]}/eval-{k}.txt").read().splitlines()[-1]) for k in runs}
for metric in ("AP", "AP50", "voc07_map"):
    assert abs(r["checkpoint"][metric] - r["fp32"][metric]) <= 1e-3, (metric, r["checkpoint"], r["fp32"])
assert [r[k]["int8"] for k in runs] == [False, False, True, True], [r[k]["int8"] for k in runs]
EOF
expect_error "already quantized" "$EXE" eval --data "$TMP/data" --graph "$TMP/model-int8.json" --int8 \
  --calibration "$TMP/data"
# predict: the checkpoint's 20 best boxes of each image are among the float
# graph's (same class, IoU > 0.99, score within 1e-3); --score keeps exactly
# the boxes scored at or above it; the int8 graph draws every image.
"$EXE" predict --checkpoint "$TMP/run" "$TMP/data/images" --score 0 --threads 1 --json "$TMP/p-ckpt.json" \
  > /dev/null || fail "predict --checkpoint"
"$EXE" predict --graph "$TMP/model.json" "$TMP/data/images" --score 0 --threads 1 --json "$TMP/p-graph.json" \
  > /dev/null || fail "predict --graph"
cut=$(python3 - "$TMP/p-ckpt.json" "$TMP/p-graph.json" << 'EOF'
import json, statistics, sys
ckpt, graph = (json.load(open(p)) for p in sys.argv[1:])
def iou(a, b):
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    inter = max(w, 0) * max(h, 0)
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)
assert ckpt
for image in {d["image_id"] for d in ckpt}:
    mine = sorted((d for d in ckpt if d["image_id"] == image), key=lambda d: -d["score"])[:20]
    theirs = [d for d in graph if d["image_id"] == image]
    for d in mine:
        assert any(t["category_id"] == d["category_id"] and abs(t["score"] - d["score"]) < 1e-3 and
                   iou(t["bbox"], d["bbox"]) > 0.99 for t in theirs), (image, d)
print(round(statistics.median(d["score"] for d in graph), 4))
EOF
) || fail "predict --graph does not find the checkpoint's boxes"
"$EXE" predict --graph "$TMP/model.json" "$TMP/data/images" --score "$cut" --threads 1 --json "$TMP/p-cut.json" \
  > /dev/null || fail "predict --graph --score $cut"
python3 -c "
import json
full, cut = json.load(open('$TMP/p-graph.json')), json.load(open('$TMP/p-cut.json'))
assert cut and len(cut) == sum(d['score'] >= $cut for d in full), (len(cut), len(full))" ||
  fail "predict --graph --score $cut does not keep exactly the boxes scored at least $cut"
"$EXE" predict --graph "$TMP/model-int8.json" "$TMP/data/images" --threads 1 --out "$TMP/p-drawn" > /dev/null ||
  fail "predict with the int8 graph"
[[ $(ls "$TMP/p-drawn" | wc -l) == 8 ]] || fail "predict --graph --out did not draw the 8 images"
# A graph exported with --score 0.3 cannot report lower scores: predict and
# eval say so, and eval's mAP counts only those.
"$EXE" export --checkpoint "$TMP/run" -o "$TMP/model-03.json" --score 0.3 --threads 1 > /dev/null ||
  fail "export --score 0.3"
"$EXE" predict --graph "$TMP/model-03.json" --score 0.1 "$TMP/data/images" --threads 1 --json "$TMP/p-03.json" \
  > /dev/null 2> "$TMP/p-03.err" || fail "predict with a graph exported with --score 0.3"
grep -qF "reports only scores of at least 0.3 (exported with --score 0.3), not down to 0.1" "$TMP/p-03.err" ||
  { cat "$TMP/p-03.err"; fail "predict does not say that the graph drops scores below 0.3"; }
"$EXE" eval --data "$TMP/data" --graph "$TMP/model-03.json" --threads 1 > "$TMP/eval-03.txt" 2> "$TMP/eval-03.err" ||
  fail "eval of a graph exported with --score 0.3"
grep -qF "neither reported nor counted in mAP" "$TMP/eval-03.err" || { cat "$TMP/eval-03.err"; fail "no note from eval"; }
python3 - "$TMP" << 'EOF' || fail "a graph exported with --score 0.3"
import json, sys
assert all(d["score"] >= 0.3 for d in json.load(open(f"{sys.argv[1]}/p-03.json"))), "predict reported lower scores"
threshold = json.loads(open(f"{sys.argv[1]}/eval-03.txt").read().splitlines()[-1])["score_threshold"]
assert abs(threshold - 0.3) < 1e-6, f"eval's score_threshold is {threshold}"
EOF
expect_error "Exactly 1 option from [--checkpoint,--graph]" "$EXE" predict "$TMP/data"
expect_error "Exactly 1 option from [--checkpoint,--graph]" "$EXE" eval --data "$TMP/data" --checkpoint "$TMP/run" \
  --graph "$TMP/model.json"
expect_error "without a detector's metadata" "$EXE" predict --graph "$TMP/calib.json" "$TMP/data/images"

# The CSV: one header, one row per run, in the order they ran.
[[ $(wc -l < "$TMP/runs.csv") == 6 ]] || { cat "$TMP/runs.csv"; fail "runs.csv should hold a header and 5 rows"; }
head -1 "$TMP/runs.csv" | grep -q "^date,model_name,precision,node_name,device,cpu,memory_gb,threads," ||
  fail "CSV header: $(head -1 "$TMP/runs.csv")"
[[ $(sed -n 6p "$TMP/runs.csv" | cut -d, -f3) == int8 ]] || fail "the last row is not the int8 run"

# Bad input fails naming it, and nothing is written: no saved folder, no CSV row.
cp "$TMP/runs.csv" "$TMP/runs-before.csv"
head -c 3000 "$TMP/mp4/clip.mp4" > "$TMP/cut.mp4"
expect_error "cut.mp4" "$EXE" bench --checkpoint "$TMP/run" --video "$TMP/cut.mp4" --save "$TMP/no-save" \
  --csv "$TMP/runs.csv"
grep -qE "frame|cannot be opened" "$TMP/err.txt" || { cat "$TMP/err.txt"; fail "the truncated video's error"; }
[[ ! -e $TMP/no-save ]] || fail "a failed bench left its --save folder"
cmp -s "$TMP/runs.csv" "$TMP/runs-before.csv" || fail "a failed bench changed the CSV"
echo "not a graph" > "$TMP/bad.json"
expect_error "no image files in" "$EXE" bench --checkpoint "$TMP/run" --images "$TMP/data"
expect_error "bad.json" "$EXE" bench --graph "$TMP/bad.json" --images "$TMP/data"
expect_error "without a detector's metadata" "$EXE" bench --graph "$TMP/calib.json" --images "$TMP/data"
expect_error "must be a frame number" "$EXE" bench --checkpoint "$TMP/run" --video "$TMP/mp4/clip.mp4" \
  --gt "$TMP/data/annotations.json"
expect_error "is 64x48 there but 96x80" "$EXE" bench --checkpoint "$TMP/run" --video "$TMP/mp4/clip.mp4" \
  --gt "$TMP/avi/annotations.json"
expect_error "not a video file" "$EXE" bench --checkpoint "$TMP/run" --video "$TMP/data/annotations.json"
expect_error "Exactly 1 option from [--checkpoint,--graph]" "$EXE" bench --checkpoint "$TMP/run" \
  --graph "$TMP/model.json" --images "$TMP/data"
expect_error "give the input" "$EXE" bench --checkpoint "$TMP/run"
echo "a,b" > "$TMP/other.csv"
expect_error "another header" "$EXE" bench --checkpoint "$TMP/run" --images "$TMP/data/images" --limit 1 --csv "$TMP/other.csv"
[[ $(cat "$TMP/other.csv") == "a,b" ]] || fail "a foreign CSV was changed"
expect_error "a file name with a video extension" "$EXE" generate --out "$TMP/g" --images 2 --video clip.txt
echo "dflow-detect export and bench: all checks passed"
