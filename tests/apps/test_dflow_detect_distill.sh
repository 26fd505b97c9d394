#!/usr/bin/env bash
# dflow-detect train --teacher end to end on tiny generated data: a thinner
# student distilled from a trained teacher's outputs and feature maps (the
# terms in the progress line, the teacher inside the student's checkpoints
# unchanged, the adapters trained), resumed, evaluated like any run; one
# imitating only the finest maps with a decaying weight; one in the Pearson
# form; a RetinaNet student imitates its teacher's pyramid; a teacher of other
# classes or other default boxes is refused before anything is written.
# Usage: test_dflow_detect_distill.sh PATH/TO/dflow-detect
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-detect}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"

"$EXE" generate --out "$TMP/data" --images 16 --size 96x96 --classes 3 --max-objects 3 --seed 3 > /dev/null ||
  fail "generate"
"$EXE" generate --out "$TMP/other" --images 8 --size 96x96 --classes 2 --seed 4 > /dev/null || fail "generate other"
small=(--batch 4 --threads 1 --augment none)
"$EXE" train --data "$TMP/data" --out "$TMP/teacher" --size 64 --width 0.5 --steps 3 "${small[@]}" > /dev/null ||
  fail "train the teacher"

"$EXE" train --data "$TMP/data" --out "$TMP/student" --size 64 --width 0.25 --steps 3 "${small[@]}" \
  --teacher "$TMP/teacher" --distill both > "$TMP/student.txt" 2>&1 || { cat "$TMP/student.txt"; fail "distill"; }
grep -q "teacher .*model-3.safetensors (.* variables), distilling outputs and features" "$TMP/student.txt" ||
  { cat "$TMP/student.txt"; fail "distill: the teacher's line"; }
for term in distill_cls distill_box imitation; do
  grep -q "$term [0-9]" "$TMP/student.txt" || { cat "$TMP/student.txt"; fail "no $term in the progress line"; }
done
"$EXE" train --out "$TMP/student" --resume --steps 5 --threads 1 > "$TMP/resume.txt" 2>&1 ||
  { cat "$TMP/resume.txt"; fail "resume a distilled run"; }
grep -q "imitation [0-9]" "$TMP/resume.txt" || { cat "$TMP/resume.txt"; fail "resume: no imitation term"; }
python3 - "$TMP" <<'PY' || fail "the teacher or the adapters in the student's checkpoint"
import json, struct, sys
root = sys.argv[1]
def tensors(run):
    path = run + "/checkpoints/" + json.load(open(run + "/checkpoints/checkpoint.json"))["latest"]
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}
teacher, student = tensors(root + "/teacher"), tensors(root + "/student")
inside = {k[len("teacher/"):]: v for k, v in student.items() if k.startswith("teacher/")}
assert inside and set(inside) == {k for k in teacher if "/slots/" not in k and k != "global_step"}, \
    sorted(set(inside) ^ set(teacher))[:5]
for name, value in inside.items():
    assert teacher[name] == value, "the teacher's " + name + " changed"
assert not any(k.startswith("teacher/") and "/slots/" in k for k in student), "the teacher has optimizer slots"
adapters = [k for k in student if k.startswith("feature_imitation/") and "/slots/" not in k]
assert len(adapters) == 12, adapters  # a filter and a bias per map
assert all(k + "/slots/Adam_m" in student for k in adapters), "the adapters are not trained"
config = json.load(open(root + "/student/config.json"))
assert config["distillation"] == "both" and config["distill_from"].endswith("model-3.safetensors"), config
PY
"$EXE" eval --data "$TMP/data" --checkpoint "$TMP/student" --threads 1 > "$TMP/eval.txt" 2>&1 ||
  { cat "$TMP/eval.txt"; fail "eval of the distilled student"; }

# --- only the two finest maps (the backbone's), the weight decaying to 0 at the last step
"$EXE" train --data "$TMP/data" --out "$TMP/finest" --size 64 --width 0.25 --steps 2 "${small[@]}" \
  --teacher "$TMP/teacher" --distill feature --imitation-maps 2 --imitation-schedule cosine \
  > "$TMP/finest.txt" 2>&1 || { cat "$TMP/finest.txt"; fail "imitate the two finest maps"; }
python3 - "$TMP/finest" <<'PY' || fail "the two-map student's adapters or config"
import json, struct, sys
run = sys.argv[1]
data = open(run + "/checkpoints/" + json.load(open(run + "/checkpoints/checkpoint.json"))["latest"], "rb").read()
header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
adapters = sorted(k for k in header if k.startswith("feature_imitation/") and "/slots/" not in k)
assert [k.split("/")[1] for k in adapters] == ["map1"] * 2 + ["map2"] * 2, adapters
config = json.load(open(run + "/config.json"))
assert config["imitation_maps"] == 2 and config["imitation_schedule"] == "cosine", config
PY
# --- the Pearson form (Cao et al. 2022): no mask, its own default weight,
# recorded and read back on resume
"$EXE" train --data "$TMP/data" --out "$TMP/pearson" --size 64 --width 0.25 --steps 2 "${small[@]}" \
  --teacher "$TMP/teacher" --distill feature --imitation-maps 2 --imitation-loss pearson \
  > "$TMP/pearson.txt" 2>&1 || { cat "$TMP/pearson.txt"; fail "Pearson imitation"; }
grep -q "imitation [0-9]" "$TMP/pearson.txt" || { cat "$TMP/pearson.txt"; fail "pearson: no imitation term"; }
python3 -c "
import json, sys
fine, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert fine['imitation_loss'] == 'fine-grained' and fine['imitation_weight'] == 0.01, fine
assert c['imitation_loss'] == 'pearson' and c['imitation_weight'] == 1, c
c['imitation_loss'] = 'l1'
json.dump(c, open(sys.argv[2], 'w'))" "$TMP/finest/config.json" "$TMP/pearson/config.json" || fail "pearson: the config"
expect_error '"imitation_loss" must be fine-grained or pearson, got "l1"' "$EXE" train --out "$TMP/pearson" --resume \
  --steps 3
expect_error "imitation-loss" "$EXE" train --data "$TMP/data" --out "$TMP/bad" --size 64 --width 0.25 --steps 1 \
  "${small[@]}" --teacher "$TMP/teacher" --imitation-loss l2
# --- soft targets at temperature 2 on every anchor, the boxes bounded by the
# teacher's (Chen et al. 2017), recorded and read back on resume
"$EXE" train --data "$TMP/data" --out "$TMP/hot" --size 64 --width 0.25 --steps 2 "${small[@]}" \
  --teacher "$TMP/teacher" --distill output --distill-temperature 2 --distill-anchors all --distill-box bounded \
  > "$TMP/hot.txt" 2>&1 || { cat "$TMP/hot.txt"; fail "soft targets at a temperature on every anchor"; }
grep -q "distill_cls [0-9].*distill_box [0-9]" "$TMP/hot.txt" || { cat "$TMP/hot.txt"; fail "hot: no distill terms"; }
python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
assert c['distill_temperature'] == 2 and c['distill_anchors'] == 'all' and c['distill_box'] == 'bounded', c
c['distill_anchors'] = 'some'
json.dump(c, open(sys.argv[1], 'w'))" "$TMP/hot/config.json" || fail "hot: the config"
expect_error '"distill_anchors" must be foreground or all, got "some"' "$EXE" train --out "$TMP/hot" --resume --steps 3
expect_error "distill-box" "$EXE" train --data "$TMP/data" --out "$TMP/bad" --size 64 --width 0.25 --steps 1 \
  "${small[@]}" --teacher "$TMP/teacher" --distill-box teacher
expect_error "distill-temperature" "$EXE" train --data "$TMP/data" --out "$TMP/bad" --size 64 --width 0.25 --steps 1 \
  "${small[@]}" --teacher "$TMP/teacher" --distill-temperature 0
expect_error "read 6 maps" "$EXE" train --data "$TMP/data" --out "$TMP/bad" --size 64 --width 0.25 --steps 1 \
  "${small[@]}" --teacher "$TMP/teacher" --distill feature --imitation-maps 7

# --- RetinaNet imitates its teacher's P3-P7 (9 anchors a cell)
"$EXE" train --data "$TMP/data" --out "$TMP/retina" --model retinanet-resnet18 --size 64 --steps 1 "${small[@]}" \
  > /dev/null 2>&1 || fail "train retinanet"
"$EXE" train --data "$TMP/data" --out "$TMP/retina-student" --model retinanet-resnet18 --size 64 --steps 2 \
  "${small[@]}" --teacher "$TMP/retina" --distill feature > "$TMP/retina-student.txt" 2>&1 ||
  { cat "$TMP/retina-student.txt"; fail "distill retinanet features"; }
grep -q "imitation [0-9]" "$TMP/retina-student.txt" || { cat "$TMP/retina-student.txt"; fail "retinanet: no imitation term"; }
python3 - "$TMP/retina-student" <<'PY' || fail "the retinanet student's adapters"
import json, struct, sys
run = sys.argv[1]
data = open(run + "/checkpoints/" + json.load(open(run + "/checkpoints/checkpoint.json"))["latest"], "rb").read()
header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
adapters = [k for k in header if k.startswith("feature_imitation/") and "/slots/" not in k]
assert len(adapters) == 10, adapters  # a filter and a bias for each of P3-P7
assert all(header[k]["shape"] in ([1, 1, 256, 256], [256]) for k in adapters), adapters
PY

# --- teachers that cannot teach: named, nothing written
expect_error "knows other classes" "$EXE" train --data "$TMP/other" --out "$TMP/bad" --size 64 --width 0.25 \
  --steps 1 "${small[@]}" --teacher "$TMP/teacher"
expect_error "different default boxes" "$EXE" train --data "$TMP/data" --out "$TMP/bad" --size 96 --width 0.25 \
  --steps 1 "${small[@]}" --teacher "$TMP/teacher"
expect_error "not inside a dflow-detect run directory" "$EXE" train --data "$TMP/data" --out "$TMP/bad" --size 64 \
  --width 0.25 --steps 1 "${small[@]}" --teacher "$TMP/data/annotations.json"
[[ ! -e $TMP/bad/config.json ]] || fail "a refused teacher left a run behind"
echo "PASS"
