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
