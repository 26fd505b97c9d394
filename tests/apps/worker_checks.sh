# Shared by the apps' data-parallel tests (sourced after app_checks.sh):
# checks on runs of `train --workers 2` under `dflow launch`, whose output
# lines start with the task's name ("[worker:1] ...").

# expect_two_workers WHAT LOG RUN STEPS: both workers of the run WHAT reached
# step STEPS, the chief alone wrote checkpoints, and RUN holds config.json
# and the step-2 and step-STEPS checkpoints.
expect_two_workers() {
  local what=$1 log=$2 run=$3 steps=$4
  grep -q "^\[worker:0\] step $steps/$steps" "$log" && grep -q "^\[worker:1\] step $steps/$steps" "$log" ||
    { cat "$log"; fail "$what: not two workers under dflow launch"; }
  grep -q "^\[worker:0\] checkpoint .*model-$steps.safetensors" "$log" || fail "$what: the chief wrote no final checkpoint"
  grep -q "^\[worker:1\] checkpoint" "$log" && fail "$what: worker 1 wrote a checkpoint"
  local f
  for f in config.json checkpoints/model-2.safetensors checkpoints/model-$steps.safetensors; do
    [[ -s $run/$f ]] || fail "$what did not write $f"
  done
}

# expect_half_epoch SINGLE SHARDED: each of 2 workers reads half of the data,
# so run SHARDED's epoch has half the batches of the one-worker run SINGLE.
expect_half_epoch() {
  local single sharded
  single=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['batches_per_epoch'])" "$1/config.json")
  sharded=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['batches_per_epoch'])" "$2/config.json")
  (( sharded * 2 == single || sharded * 2 == single - 1 )) ||
    fail "batches per epoch: $sharded per worker of 2, $single for one worker"
}

# expect_resumed_bits WHAT LOG FULL RESUMED STEPS: worker 1 of the resumed
# run (output LOG) took the chief's step-2 checkpoint, and the run ends with
# the bits of the uninterrupted run FULL at step STEPS.
expect_resumed_bits() {
  local what=$1 log=$2 full=$3 resumed=$4 steps=$5
  grep -q "^\[worker:1\] resuming the chief's checkpoint at step 2" "$log" ||
    { cat "$log"; fail "$what: worker 1 did not resume at step 2"; }
  cmp "$full/checkpoints/model-$steps.safetensors" "$resumed/checkpoints/model-$steps.safetensors" ||
    fail "$what: the resumed 2-worker run differs from the uninterrupted one"
}

# expect_ctrl_c_stops LOG RUN CMD...: CMD (a 2-worker ring run writing RUN)
# gets SIGINT once worker 1 is training; every worker stops at the same step
# and the chief saves it.
expect_ctrl_c_stops() {
  local log=$1 run=$2
  shift 2
  "$@" > "$log" 2>&1 &
  local launcher=$!
  for _ in $(seq 200); do grep -q "^\[worker:1\] step" "$log" && break; sleep 0.1; done
  kill -INT $launcher
  wait $launcher
  grep -q "interrupted by signal 2" "$log" || { cat "$log"; fail "the launcher did not stop"; }
  local step0 step1
  step0=$(sed -n 's/^\[worker:0\] stopped at step \([0-9]*\):.*/\1/p' "$log")
  step1=$(sed -n 's/^\[worker:1\] stopped at step \([0-9]*\):.*/\1/p' "$log")
  [[ -n $step0 && $step0 == "$step1" ]] || { cat "$log"; fail "workers stopped at steps '$step0' and '$step1'"; }
  [[ -s $run/checkpoints/model-$step0.safetensors ]] || fail "the chief did not save step $step0"
}

# class_subset SRC DST only|without NAME: writes DST/annotations.json over
# SRC's images: "only" keeps the images holding class NAME, with its objects
# alone (add-class's new data); "without" keeps every image and the other
# classes' objects (the old run's data).
class_subset() {
  python3 - "$@" <<'PY'
import json, os, sys
src, dst, mode, name = sys.argv[1:]
a = json.load(open(src + "/annotations.json"))
chosen = [c for c in a["categories"] if (c["name"] == name) == (mode == "only")]
ids = {c["id"] for c in chosen}
anns = [o for o in a["annotations"] if o["category_id"] in ids]
holding = {o["image_id"] for o in anns}
images = [dict(i, file_name=os.path.join(src, i["file_name"])) for i in a["images"]
          if mode == "without" or i["id"] in holding]
os.makedirs(dst)
json.dump({"images": images, "annotations": anns, "categories": chosen}, open(dst + "/annotations.json", "w"))
PY
}
