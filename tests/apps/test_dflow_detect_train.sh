#!/usr/bin/env bash
# dflow-detect end to end on a tiny generated dataset: train with
# checkpoints, resume exactly, eval (COCO table, VOC table, last line JSON;
# also of the detector quantized to int8),
# predict (boxes drawn, COCO results, CSV), and bad input that must fail
# clearly without writing anything half-way.
# Usage: test_dflow_detect_train.sh PATH/TO/dflow-detect
set -u
source "$(dirname "$(readlink -f "$0")")/rewind_checkpoint.sh"
EXE=${1:?usage: $0 PATH/TO/dflow-detect}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"

"$EXE" generate --out "$TMP/data" --images 12 --size 96x80 --classes 2 --seed 3 > /dev/null ||
  fail "generate"
"$EXE" generate --out "$TMP/test" --images 4 --size 96x96 --classes 2 --seed 4 > /dev/null ||
  fail "generate test"

# A small network and batches keep it fast; one thread keeps it deterministic.
train=(--data "$TMP/data" --size 64 --width 0.25 --batch 4 --threads 1 --checkpoint-every 2 --keep 10)
"$EXE" train "${train[@]}" --out "$TMP/full" --steps 6 > "$TMP/full.txt" || { cat "$TMP/full.txt"; fail "train"; }
cat "$TMP/full.txt"
for f in config.json checkpoints/model-2.safetensors checkpoints/model-6.safetensors; do
  [[ -s $TMP/full/$f ]] || fail "train did not write $f"
done
grep -q "img/s" "$TMP/full.txt" || fail "no progress line"
grep -q '"class_names"' "$TMP/full/config.json" || fail "config.json has no class names"

# A run that crashed after its step-4 checkpoint, resumed, ends with the same
# weights as the run that never stopped.
cp -r "$TMP/full" "$TMP/resumed"
rewind_checkpoint "$TMP/resumed" 6 4
"$EXE" train --out "$TMP/resumed" --resume --threads 1 > "$TMP/resume.txt" ||
  { cat "$TMP/resume.txt"; fail "resume"; }
grep -q "at step 4" "$TMP/resume.txt" || { cat "$TMP/resume.txt"; fail "resume did not start at step 4"; }
cmp "$TMP/full/checkpoints/model-6.safetensors" "$TMP/resumed/checkpoints/model-6.safetensors" ||
  fail "resumed run differs from the uninterrupted one"
expect_error "already holds a run" "$EXE" train "${train[@]}" --out "$TMP/full" --steps 2
expect_error "--size" "$EXE" train --out "$TMP/full" --resume --size 96
expect_error "TPU" "$EXE" train "${train[@]}" --out "$TMP/on-tpu" --steps 1 --device /device:TPU:0
[[ ! -e $TMP/on-tpu ]] || fail "a refused device left a run directory"

# eval: the tables, a results file, and the JSON as the last line.
"$EXE" eval --data "$TMP/test" --checkpoint "$TMP/full" --results "$TMP/results.json" \
  > "$TMP/eval.txt" || { cat "$TMP/eval.txt"; fail "eval"; }
grep -q "Average Precision" "$TMP/eval.txt" || fail "eval printed no COCO summary"
grep -q "mAP" "$TMP/eval.txt" || fail "eval printed no VOC table"
tail -n 1 "$TMP/eval.txt" | python3 -c '
import json, sys
r = json.load(sys.stdin)
for key in ("AP", "AP50", "voc07_map", "per_class"): assert key in r, key
assert len(r["per_class"]) == 2, r["per_class"]
' || fail "eval's last line is not the summary JSON"
# eval --int8: the detector quantized (calibrated on training images) and
# evaluated the same way; its detections' scores stay near the float ones'.
"$EXE" eval --data "$TMP/test" --checkpoint "$TMP/full" --threads 1 --int8 --calibration "$TMP/data" \
  --calibration-images 4 > "$TMP/eval8.txt" || { cat "$TMP/eval8.txt"; fail "eval --int8"; }
grep -q "int8: quantized [1-9][0-9]* of [1-9][0-9]* convolutions, calibrated on 4 images" "$TMP/eval8.txt" ||
  { cat "$TMP/eval8.txt"; fail "eval --int8 did not quantize"; }
tail -n 1 "$TMP/eval8.txt" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["int8"] is True and len(r["per_class"]) == 2, r
' || fail "eval --int8's last line is not the summary JSON"
expect_error "needs --calibration" "$EXE" eval --data "$TMP/test" --checkpoint "$TMP/full" --int8
expect_error "is not a detection dataset" "$EXE" eval --data "$TMP/test" --checkpoint "$TMP/full" --int8 \
  --calibration "$TMP/nothing-here"
# The results file is read back by cocoeval against the same ground truth.
"$EXE" cocoeval --gt "$TMP/test/annotations.json" --dt "$TMP/results.json" > /dev/null ||
  fail "eval's results file is not a COCO results file"

# predict: PNGs with boxes, COCO results and CSV; two inputs with one file
# name get an image each.
mkdir -p "$TMP/other"
cp "$TMP/test/images/scene_00000.png" "$TMP/other/"
"$EXE" predict --checkpoint "$TMP/full" --score 0 --out "$TMP/drawn" --json "$TMP/pred.json" \
  --csv "$TMP/pred.csv" "$TMP/test/images" "$TMP/other/scene_00000.png" > "$TMP/predict.txt" ||
  { cat "$TMP/predict.txt"; fail "predict"; }
[[ $(ls "$TMP/drawn" | wc -l) == 5 ]] || { ls "$TMP/drawn"; fail "predict did not draw 5 images"; }
[[ -s $TMP/drawn/scene_00000_2_boxes.png ]] || fail "a second input of one name overwrote the first"
head -n 1 "$TMP/pred.csv" | grep -q "image,class,score" || fail "no CSV header"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert isinstance(r, list) and r and "bbox" in r[0]' \
  "$TMP/pred.json" || fail "predict --json is not a list of COCO results"

# A predict that fails on its last image (truncated) writes no drawn images,
# JSON or CSV.
mkdir -p "$TMP/mixed"
cp "$TMP/test/images/scene_00000.png" "$TMP/mixed/"
head -c 200 "$TMP/test/images/scene_00001.png" > "$TMP/mixed/scene_00001.png"
expect_error "scene_00001.png" "$EXE" predict --checkpoint "$TMP/full" --out "$TMP/drawn-mixed" \
  --json "$TMP/mixed.json" --csv "$TMP/mixed.csv" "$TMP/mixed"
[[ ! -e $TMP/drawn-mixed && ! -e $TMP/mixed.json && ! -e $TMP/mixed.csv ]] ||
  fail "a failed predict left outputs behind"
# Resuming keeps the recorded --keep unless given, and says when it is
# overridden; data changed under the run's path is refused.
"$EXE" train --out "$TMP/resumed" --resume --steps 7 --keep 4 > "$TMP/resume2.txt" ||
  { cat "$TMP/resume2.txt"; fail "resume --keep"; }
grep -qF -- "--keep 4 overrides the run's recorded 10" "$TMP/resume2.txt" || { cat "$TMP/resume2.txt"; fail "no override message"; }
cp -r "$TMP/data" "$TMP/data-moved"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["annotations"][0]["bbox"][0] += 1; json.dump(d, open(sys.argv[1], "w"))' \
  "$TMP/data/annotations.json" || fail "editing annotations.json"
expect_error "is not the one this run trained on" "$EXE" train --out "$TMP/resumed" --resume --steps 8
rm -rf "$TMP/data" && mv "$TMP/data-moved" "$TMP/data"

# RetinaNet on ResNet-18 goes through the same commands.
"$EXE" train --data "$TMP/data" --out "$TMP/retina" --model retinanet-resnet18 --size 64 --batch 2 \
  --steps 2 --threads 1 > "$TMP/retina.txt" || { cat "$TMP/retina.txt"; fail "train retinanet"; }
grep -q '"model": "retinanet-resnet18"' "$TMP/retina/config.json" || fail "config.json lacks the model"
grep -q '"learning_rate": 0.0001' "$TMP/retina/config.json" || fail "RetinaNet's default rate not recorded"
"$EXE" eval --data "$TMP/test" --checkpoint "$TMP/retina" > "$TMP/retina-eval.txt" ||
  { cat "$TMP/retina-eval.txt"; fail "eval retinanet"; }
"$EXE" predict --checkpoint "$TMP/retina" --score 0 "$TMP/test/images/scene_00001.png" > /dev/null ||
  fail "predict retinanet"
sed -i 's/"retinanet-resnet18"/"yolo-v9"/' "$TMP/retina/config.json"
expect_error 'unknown model "yolo-v9"' "$EXE" eval --data "$TMP/test" --checkpoint "$TMP/retina"

# SSD on SqueezeNet too; it has no width multiplier to thin it.
"$EXE" train --data "$TMP/data" --out "$TMP/squeeze" --model ssd-squeezenet --size 64 --batch 2 \
  --steps 2 --threads 1 > "$TMP/squeeze.txt" || { cat "$TMP/squeeze.txt"; fail "train ssd-squeezenet"; }
grep -q '"model": "ssd-squeezenet"' "$TMP/squeeze/config.json" || fail "config.json lacks ssd-squeezenet"
"$EXE" eval --data "$TMP/test" --checkpoint "$TMP/squeeze" > "$TMP/squeeze-eval.txt" ||
  { cat "$TMP/squeeze-eval.txt"; fail "eval ssd-squeezenet"; }
"$EXE" predict --checkpoint "$TMP/squeeze" --score 0 "$TMP/test/images/scene_00001.png" > /dev/null ||
  fail "predict ssd-squeezenet"
expect_error "SqueezeNet takes 1, got 0.5" "$EXE" train --data "$TMP/data" --out "$TMP/squeeze-thin" \
  --model ssd-squeezenet --size 64 --width 0.5 --steps 1
[[ ! -e $TMP/squeeze-thin ]] || fail "a refused ssd-squeezenet run wrote its directory"

# Bad input: named, and nothing written.
cp -r "$TMP/data" "$TMP/corrupt"
echo "not a png" > "$TMP/corrupt/images/scene_00001.png"
expect_error "scene_00001.png" "$EXE" train --data "$TMP/corrupt" --out "$TMP/corrupt-run" --size 64 \
  --width 0.25 --batch 4 --steps 4
expect_error "scene_00001.png" "$EXE" predict --checkpoint "$TMP/full" --out "$TMP/bad-out" \
  "$TMP/corrupt/images/scene_00001.png"
[[ ! -e $TMP/bad-out ]] || fail "predict on a bad image wrote its output directory"
"$EXE" generate --out "$TMP/three" --images 4 --size 96x96 --classes 3 --seed 5 > /dev/null
expect_error "is not one of the run's 2 classes" "$EXE" eval --data "$TMP/three" --checkpoint "$TMP/full"
"$EXE" train --data "$TMP/three" --out "$TMP/run3" --size 64 --width 0.25 --batch 4 --steps 1 \
  --threads 1 > /dev/null || fail "train on three classes"
cp "$TMP/run3/config.json" "$TMP/full/config.json"
expect_error "does not hold the ssd-mobilenet network" "$EXE" eval --data "$TMP/test" \
  --checkpoint "$TMP/full"
echo "dflow-detect train/eval/predict: all checks passed"
