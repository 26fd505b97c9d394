#!/usr/bin/env bash
# dflow-detect's incremental learning end to end on tiny generated data:
# the forgetting report's four runs (add-class with and without teacher and
# exemplars), the teacher left untouched, the exemplar memory's size and
# balance, on-line sessions with their memory and exact resume inside a
# session, and bad input named.
# Usage: test_dflow_detect_incremental.sh PATH/TO/dflow-detect
set -u
source "$(dirname "$(readlink -f "$0")")/rewind_checkpoint.sh"
EXE=${1:?usage: $0 PATH/TO/dflow-detect}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"

"$EXE" generate --out "$TMP/data" --images 60 --size 96x96 --classes 4 --max-objects 3 --seed 3 > /dev/null ||
  fail "generate"
"$EXE" generate --out "$TMP/test" --images 8 --size 96x96 --classes 4 --max-objects 3 --seed 4 > /dev/null ||
  fail "generate test"
small=(--size 64 --width 0.25 --batch 4 --augment none --threads 1)

# --- the forgetting report: old model, joint, fine-tune, distill + exemplars
"$EXE" forgetting-report --data "$TMP/data" --test "$TMP/test" --out "$TMP/report" --new-class diamond \
  "${small[@]}" --old-steps 6 --new-steps 4 --exemplars 0.2 > "$TMP/report.txt" 2>&1 ||
  { cat "$TMP/report.txt"; fail "forgetting-report"; }
for row in "circle" "diamond (new)" "old classes mAP" "new classes mAP" "mAP"; do
  grep -q "^$row " "$TMP/report/report.txt" || { cat "$TMP/report.txt"; fail "no row '$row' in the report"; }
done
grep -q "distill_cls" "$TMP/report.txt" || fail "the distillation terms are not in the progress line"
python3 - "$TMP/report" <<'PY' || fail "report.json"
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
assert [c["class"] for c in r["per_class"]] == ["circle", "square", "triangle", "diamond"], r["per_class"]
for c in r["per_class"]:
    assert set(c) >= {"old", "joint", "fine-tune", "distill"}, c
    assert (c["old"] < 0) == c["new"], c  # the old model has no AP for the new class
for key in ("old_map", "new_map", "map"):
    assert set(r[key]) == {"old", "joint", "fine-tune", "distill"}, r[key]
PY

# The teacher inside the distill run's graph keeps the old model's values
# (no gradients, no slots), and the old classes' memory is balanced.
python3 - "$TMP/report" <<'PY' || fail "teacher or memory"
import json, math, struct, sys
root = sys.argv[1]
def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}
def latest(run):
    return run + "/checkpoints/" + json.load(open(run + "/checkpoints/checkpoint.json"))["latest"]
old, new = tensors(latest(root + "/old")), tensors(latest(root + "/distill"))
teacher = {k[len("teacher/"):]: v for k, v in new.items() if k.startswith("teacher/")}
assert teacher, "no teacher variables in the distill run's checkpoint"
assert not any("Adam" in k for k in new if k.startswith("teacher/")), "the teacher has optimizer slots"
for name, value in teacher.items():
    assert old[name] == value, "the teacher's " + name + " changed"
assert any(old[k] != new[k] for k in teacher if "moving" not in k), "the student did not train"
memory = json.load(open(root + "/distill/memory/annotations.json"))
data = json.load(open(root + "/data/old/annotations.json"))
names = {c["id"]: c["name"] for c in data["categories"]}
for cid, name in names.items():
    held = {o["image_id"] for o in data["annotations"] if o["category_id"] == cid}
    mid = [c["id"] for c in memory["categories"] if c["name"] == name][0]
    kept = {o["image_id"] for o in memory["annotations"] if o["category_id"] == mid}
    assert len(kept) >= math.ceil(0.2 * len(held)), (name, len(kept), len(held))
assert "diamond" not in [c["name"] for c in memory["categories"]]
assert len(memory["images"]) < len(data["images"]), "the memory is not a share"
assert not [c for c in json.load(open(root + "/fine-tune/config.json"))["class_names"] if c not in
            ["circle", "square", "triangle", "diamond"]]
PY
[[ ! -e $TMP/report/fine-tune/memory ]] || fail "fine-tuning without exemplars kept a memory"

# RetinaNet too: its class subnet's last layer widened, focal loss plus distillation.
"$EXE" train --data "$TMP/report/data/old" --out "$TMP/retina" --model retinanet-resnet18 --size 64 --batch 2 \
  --steps 2 --threads 1 --augment none > "$TMP/retina.txt" 2>&1 || { cat "$TMP/retina.txt"; fail "train retinanet"; }
"$EXE" add-class --from "$TMP/retina" --data "$TMP/report/data/new" --out "$TMP/retina2" --steps 2 --threads 1 \
  --exemplars 0.1 > "$TMP/retina2.txt" 2>&1 || { cat "$TMP/retina2.txt"; fail "add-class retinanet"; }
grep -q "2 class layers widened from 3 to 4 classes; the teacher holds the old model" "$TMP/retina2.txt" ||
  { cat "$TMP/retina2.txt"; fail "add-class retinanet: widening"; }
grep -q "distill_box" "$TMP/retina2.txt" || fail "add-class retinanet: no distillation terms"

# --- bad input
expect_error 'the class "circle" of' "$EXE" add-class --from "$TMP/report/old" --data "$TMP/data" \
  --out "$TMP/bad" --steps 1
[[ ! -e $TMP/bad/config.json ]] || fail "a refused add-class wrote a run"
"$EXE" train --data "$TMP/report/data/old" --out "$TMP/squeeze" --model ssd-squeezenet --size 64 --batch 4 \
  --steps 1 --threads 1 > /dev/null || fail "train ssd-squeezenet"
cp "$TMP/squeeze/checkpoints/model-1.safetensors" "$TMP/report/old/checkpoints/other-model.safetensors"
expect_error "it is not a checkpoint of the ssd-mobilenet network" "$EXE" add-class \
  --from "$TMP/report/old/checkpoints/other-model.safetensors" --data "$TMP/report/data/new" \
  --out "$TMP/bad2" --steps 1 --exemplars 0
expect_error "no checkpoint in" "$EXE" add-class --from "$TMP/test" --data "$TMP/report/data/new" \
  --out "$TMP/bad3" --steps 1
expect_error "already holds a run" "$EXE" add-class --from "$TMP/report/old" --data "$TMP/report/data/new" \
  --out "$TMP/report/distill" --steps 1

# Herding (iCaRL) picks as many exemplars per class as the random choice.
"$EXE" train --data "$TMP/report/data/old" --out "$TMP/herding" --session "${small[@]}" --steps 2 \
  --exemplars 0.2 --exemplar-choice herding > "$TMP/herding.txt" || { cat "$TMP/herding.txt"; fail "herding"; }
python3 - "$TMP/herding/memory/annotations.json" "$TMP/report/data/old/annotations.json" <<'PY' ||
import json, math, sys
memory, data = (json.load(open(p)) for p in sys.argv[1:])
for c in data["categories"]:
    held = {o["image_id"] for o in data["annotations"] if o["category_id"] == c["id"]}
    mid = [m["id"] for m in memory["categories"] if m["name"] == c["name"]][0]
    kept = {o["image_id"] for o in memory["annotations"] if o["category_id"] == mid}
    assert len(kept) >= math.ceil(0.2 * len(held)), (c["name"], len(kept), len(held))
PY
  fail "herding's memory"
grep -q '"exemplar_choice": *"herding"' "$TMP/herding/config.json" || fail "the run did not record herding"

# --- on-line sessions: each continues the run with its data and the memory
"$EXE" generate --out "$TMP/s2" --images 20 --size 96x96 --classes 3 --max-objects 3 --seed 5 > /dev/null
session=(--checkpoint-every 2 --keep 10 --exemplars 0.2)
"$EXE" train --data "$TMP/report/data/old" --out "$TMP/online" --session "${small[@]}" --steps 4 \
  --checkpoint-every 2 --keep 10 > "$TMP/s1.txt" || { cat "$TMP/s1.txt"; fail "session 1"; }
grep -q "session 1 ended" "$TMP/s1.txt" || { cat "$TMP/s1.txt"; fail "session 1 did not end"; }
"$EXE" train --data "$TMP/s2" --out "$TMP/online" --session --steps 4 --threads 1 --checkpoint-every 2 \
  --keep 10 > "$TMP/s2.txt" || { cat "$TMP/s2.txt"; fail "session 2"; }
grep -q "session 2 ended" "$TMP/s2.txt" || { cat "$TMP/s2.txt"; fail "session 2 did not end"; }
[[ -s $TMP/online/checkpoints/model-8.safetensors ]] || fail "session 2 did not continue at step 4"
python3 - "$TMP/online" <<'PY' || fail "sessions.json or memory"
import json, os, sys
run = sys.argv[1]
s = json.load(open(run + "/sessions.json"))
assert [x["session"] for x in s] == [1, 2] and s[1]["first_step"] == 4 and s[1]["steps"] == 4, s
assert s[0]["memory_images"] < s[1]["memory_images"], s
memory = json.load(open(run + "/memory/annotations.json"))
assert len(memory["images"]) == s[1]["memory_images"], len(memory["images"])
files = [f for d, _, fs in os.walk(run) for f in fs if f.endswith(".png")]
assert len(files) == len(memory["images"]), "the run keeps images beyond its memory"
PY
# A session stopped after its step-10 checkpoint (before its end updated
# the memory) and resumed ends as the uninterrupted one did, and its memory
# is taken once.
"$EXE" generate --out "$TMP/s3" --images 20 --size 96x96 --classes 3 --max-objects 3 --seed 6 > /dev/null
cp -r "$TMP/online" "$TMP/online-copy"
"$EXE" train --data "$TMP/s3" --out "$TMP/online" --session --steps 4 --threads 1 --checkpoint-every 2 \
  --keep 10 > /dev/null || fail "session 3"
cp -r "$TMP/online-copy/memory" "$TMP/memory-before" && cp "$TMP/online-copy/sessions.json" "$TMP/sessions-before"
"$EXE" train --data "$TMP/s3" --out "$TMP/online-copy" --session --steps 4 --threads 1 --checkpoint-every 2 \
  --keep 10 > /dev/null || fail "session 3 (copy)"
rewind_checkpoint "$TMP/online-copy" 12 10
rm -r "$TMP/online-copy/memory" && mv "$TMP/memory-before" "$TMP/online-copy/memory"
mv "$TMP/sessions-before" "$TMP/online-copy/sessions.json"
"$EXE" train --out "$TMP/online-copy" --resume --threads 1 > "$TMP/resume.txt" ||
  { cat "$TMP/resume.txt"; fail "resume a session"; }
grep -q "at step 10" "$TMP/resume.txt" || { cat "$TMP/resume.txt"; fail "the session did not resume at step 10"; }
cmp "$TMP/online/checkpoints/model-12.safetensors" "$TMP/online-copy/checkpoints/model-12.safetensors" ||
  fail "the resumed session differs from the uninterrupted one"
cmp "$TMP/online/memory/annotations.json" "$TMP/online-copy/memory/annotations.json" ||
  fail "the resumed session's memory differs"
python3 -c "import json,sys; assert [x['session'] for x in json.load(open(sys.argv[1]))] == [1, 2, 3]" \
  "$TMP/online-copy/sessions.json" || fail "sessions.json after the resumed session"
expect_error "--model is fixed by" "$EXE" train --data "$TMP/s3" --out "$TMP/online" --session --steps 2 \
  --model ssd-squeezenet
expect_error "give the session's --steps or --epochs" "$EXE" train --data "$TMP/s3" --out "$TMP/online" --session
expect_error 'has the class "diamond"' "$EXE" train --data "$TMP/data" --out "$TMP/online" --session --steps 2
echo "PASS"
