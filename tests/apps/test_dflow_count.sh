#!/usr/bin/env bash
# dflow-count end to end on a tiny generated dataset: generate, train with
# checkpoints, resume exactly, eval (table + metrics.json, last line JSON),
# predict (counts, heatmaps, CSV), and bad input that must fail clearly
# without writing anything half-way.
# Usage: test_dflow_count.sh PATH/TO/dflow-count PATH/TO/spiral_mlp
set -u
source "$(dirname "$(readlink -f "$0")")/rewind_checkpoint.sh"
EXE=${1:?usage: $0 PATH/TO/dflow-count PATH/TO/spiral_mlp}
SPIRAL=${2:?usage: $0 PATH/TO/dflow-count PATH/TO/spiral_mlp}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"

"$EXE" generate --out "$TMP/data" --images 6 --width 72 --height 40 --max-flowers 6 --seed 3 ||
  fail "generate"
[[ -s $TMP/data/points.json && -s $TMP/data/field_00005.png ]] || fail "generate wrote no dataset"
"$EXE" generate --out "$TMP/test" --images 3 --width 40 --height 40 --max-flowers 6 --seed 4 > /dev/null

# Small tiles and batches keep it fast; one thread keeps it deterministic.
train=(--data "$TMP/data" --tile 32 --batch 2 --threads 1 --checkpoint-every 2 --keep 10 --balance)
"$EXE" train "${train[@]}" --out "$TMP/full" --steps 6 > "$TMP/full.txt" || { cat "$TMP/full.txt"; fail "train"; }
cat "$TMP/full.txt"
for f in config.json checkpoints/model-2.safetensors checkpoints/model-6.safetensors; do
  [[ -s $TMP/full/$f ]] || fail "train did not write $f"
done
grep -q "img/s" "$TMP/full.txt" || fail "no progress line"
# RUN/metrics.jsonl: a line per step with the loss terms, img/s and the
# learning rate of the step (cosine-decayed from --lr's default, 0.002).
python3 - "$TMP/full/metrics.jsonl" <<'PY' || fail "metrics.jsonl"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["step"] for l in lines] == list(range(1, 7)), lines
for l in lines:
    assert {"time", "img_per_s", "loss", "mae", "lr"} <= l.keys(), l
assert 0 < lines[-1]["lr"] < lines[0]["lr"] <= 0.002 * (1 + 1e-6), [l["lr"] for l in lines]
PY

# A run that crashed after its step-4 checkpoint: the same run directory with
# the index pointing at model-4. Resumed, it must end with the same weights
# as the run that never stopped.
cp -r "$TMP/full" "$TMP/resumed"
rewind_checkpoint "$TMP/resumed" 6 4
"$EXE" train --out "$TMP/resumed" --resume --threads 1 > "$TMP/resume.txt" ||
  { cat "$TMP/resume.txt"; fail "resume"; }
grep -q "at step 4" "$TMP/resume.txt" || { cat "$TMP/resume.txt"; fail "resume did not start at step 4"; }
cmp "$TMP/full/checkpoints/model-6.safetensors" "$TMP/resumed/checkpoints/model-6.safetensors" ||
  fail "resumed run differs from the uninterrupted one"
expect_error "already holds a run" "$EXE" train "${train[@]}" --out "$TMP/full" --steps 2
# --device: the CPU named explicitly trains the same bits; a device type
# dflow does not have, or a GPU for data-parallel workers, is refused.
"$EXE" train "${train[@]}" --out "$TMP/on-cpu" --steps 6 --device /device:CPU:0 > /dev/null || fail "train --device"
cmp "$TMP/full/checkpoints/model-6.safetensors" "$TMP/on-cpu/checkpoints/model-6.safetensors" ||
  fail "--device /device:CPU:0 trained other weights"
expect_error "TPU" "$EXE" train "${train[@]}" --out "$TMP/on-tpu" --steps 1 --device /device:TPU:0
[[ ! -e $TMP/on-tpu ]] || fail "a refused device left a run directory"
expect_error "is for single-process training" "$EXE" train "${train[@]}" --out "$TMP/gpu-workers" \
  --steps 1 --workers 2 --device /device:GPU:0
[[ ! -e $TMP/gpu-workers ]] || fail "a refused run left a run directory"
expect_error "TPU" "$EXE" predict --checkpoint "$TMP/full" "$TMP/test" --device /device:TPU:0
expect_error "--lr" "$EXE" train --out "$TMP/full" --resume --lr 0.1

# eval: a table, metrics.json, and the JSON as the last line.
(cd "$TMP" && "$EXE" eval --data "$TMP/test" --checkpoint "$TMP/full" > "$TMP/eval.txt") ||
  { cat "$TMP/eval.txt"; fail "eval"; }
cat "$TMP/eval.txt"
python3 - "$(tail -n 1 "$TMP/eval.txt")" "$TMP/metrics.json" <<'PY' || fail "eval JSON"
import json, sys
last = json.loads(sys.argv[1])
saved = json.load(open(sys.argv[2]))
for key in ("mae", "rmse", "mre", "baseline_mae"):
    assert isinstance(last[key], (int, float)), key
assert last == saved, "metrics.json differs from the printed line"
assert [b["bin"] for b in last["bins"]] == ["0", "1", "2", "3", "4", "5-7", "8+"], last["bins"]
for b in last["bins"]:  # an empty bin has no errors rather than errors of 0
    assert (b["mae"] is None) == (b["images"] == 0), b
PY

# predict: a count per image, heatmaps and a CSV.
"$EXE" predict --checkpoint "$TMP/full/checkpoints" "$TMP/test" --heatmap "$TMP/heat" \
  --csv "$TMP/counts.csv" > "$TMP/predict.txt" || { cat "$TMP/predict.txt"; fail "predict"; }
[[ $(wc -l < "$TMP/counts.csv") -eq 4 ]] || fail "CSV should have a header and 3 rows"
head -n 1 "$TMP/counts.csv" | grep -qx "image,count" || fail "CSV header"
[[ -s $TMP/heat/field_00002_heatmap.png ]] || fail "no heatmap"
# On a 128x96 image the heatmap carries the count at the top left (white
# text on a dark tab) and the colour ramp down the right edge: black at the
# bottom (0), white at the top (the peak).
"$EXE" generate --out "$TMP/wide" --images 1 --width 128 --height 96 --max-flowers 6 --seed 8 > /dev/null
"$EXE" predict --checkpoint "$TMP/full/checkpoints" "$TMP/wide" --heatmap "$TMP/wide-heat" > /dev/null ||
  fail "predict on a 128x96 image"
python3 - "$TMP/wide-heat/field_00000_heatmap.png" <<'PY' || fail "heatmap legend"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
chunks, at = {}, 8
while at < len(data):
    length, kind = struct.unpack(">I4s", data[at:at + 8])
    chunks.setdefault(kind, b"")
    chunks[kind] += data[at + 8:at + 8 + length]
    at += 12 + length
width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
assert (width, height, depth, colour) == (128, 96, 8, 2), (width, height, depth, colour)
raw, rows, stride = zlib.decompress(chunks[b"IDAT"]), [], 3 * 128
for y in range(height):  # undo the PNG row filters
    kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    up = rows[-1] if rows else bytearray(stride)
    for i in range(stride):
        a, b, c = (line[i - 3] if i >= 3 else 0), up[i], (up[i - 3] if i >= 3 else 0)
        p = a + b - c
        pred = [0, a, b, (a + b) // 2, a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c][kind]
        line[i] = (line[i] + pred) & 255
    rows.append(line)
pixel = lambda x, y: tuple(rows[y][3 * x:3 * x + 3])
tab = [pixel(x, y) for x in range(2, 40) for y in range(2, 12)]
assert (40, 40, 40) in tab and (255, 255, 255) in tab, "no count text on a tab at the top left"
assert pixel(123, 93) == (0, 0, 0), pixel(123, 93)
assert pixel(123, 14) == (255, 255, 255), pixel(123, 14)
assert pixel(119, 50) == (255, 255, 255), "the ramp is not outlined"
PY

# Bad input: a clear message naming the culprit, nothing written half-way.
cp -r "$TMP/test" "$TMP/corrupt"
head -c 100 /dev/urandom > "$TMP/corrupt/field_00001.png"
expect_error "field_00001.png" "$EXE" eval --data "$TMP/corrupt" --checkpoint "$TMP/full" \
  --metrics "$TMP/corrupt-metrics.json"
[[ ! -e $TMP/corrupt-metrics.json ]] || fail "eval wrote metrics for a failed run"
expect_error "field_00001.png" "$EXE" predict --checkpoint "$TMP/full" "$TMP/corrupt" \
  --csv "$TMP/corrupt.csv"
[[ ! -e $TMP/corrupt.csv ]] || fail "predict wrote a CSV for a failed run"
expect_error "field_00001.png" "$EXE" train --data "$TMP/corrupt" --out "$TMP/bad-run" --steps 1 --tile 32
mkdir "$TMP/empty"
expect_error "no image files in" "$EXE" predict --checkpoint "$TMP/full" "$TMP/empty"
python3 - "$TMP/test/points.json" <<'PY'
import json, sys
points = json.load(open(sys.argv[1]))
points["field_00000.png"] = [[500.0, 3.0]]
json.dump(points, open(sys.argv[1], "w"))
PY
expect_error "outside" "$EXE" eval --data "$TMP/test" --checkpoint "$TMP/full" --metrics "$TMP/m.json"
"$SPIRAL" --steps 2 --out "$TMP/spiral" > /dev/null || fail "spiral_mlp"
expect_error "not a checkpoint of the dflow-count model" "$EXE" predict --checkpoint "$TMP/spiral" \
  "$TMP/data/field_00000.png"
expect_error "config.json" "$EXE" train --out "$TMP/nothing" --resume --steps 3
echo "PASS"
