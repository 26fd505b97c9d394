#!/usr/bin/env bash
# Model parallelism with data parallelism: dflow-detect train --split puts
# the backbone, the extras and the heads on tasks of their own (started by
# `dflow launch --model-parts`), and the run ends with the bits of the same
# run unsplit: SSD with two ring workers of three part tasks each, SSD and
# RetinaNet with one worker of two part tasks against a single process, a
# split run resumed, and add-class (teacher included) split against its ring
# run. A dead part task fails the run naming it; bad --split values are
# refused before anything starts. Every run is under `timeout`.
# Usage: test_dflow_detect_split.sh PATH/TO/dflow-detect
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-detect}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"
source "$(dirname "$(readlink -f "$0")")/rewind_checkpoint.sh"
source "$(dirname "$(readlink -f "$0")")/worker_checks.sh"
# Below the ephemeral range (32768..), where the links' own sockets could take our ports.
PORT=$((20000 + RANDOM % 10000))

timeout 60 "$EXE" generate --out "$TMP/data" --images 16 --size 96x80 --classes 3 --seed 3 > /dev/null ||
  fail "generate"
# One thread per task: every sum in one order, split or not.
common=(--size 64 --width 0.25 --batch 2 --threads 1 --checkpoint-every 2 --keep 10)
train=(--data "$TMP/data" "${common[@]}")

# same_bits WHAT A B: the runs A and B end with the same variables at step 4.
same_bits() {
  cmp "$2/checkpoints/model-4.safetensors" "$3/checkpoints/model-4.safetensors" ||
    fail "$1: the split run ends with other variables than the unsplit one"
}
# parts_hold_variables LOG N: part tasks 0..N-1 each held variables of their own.
parts_hold_variables() {
  local k
  for ((k = 0; k < $2; ++k)); do
    grep -Eq "^\[part:$k\] .*(told to stop \(training finished\)|stopping on signal 15), holding [1-9][0-9]* variable" "$1" ||
      { cat "$1"; fail "part task $k held no part of the network"; }
  done
}

# Two ring workers, each the client of its backbone, extras and heads tasks.
timeout 120 "$EXE" train "${train[@]}" --out "$TMP/ring" --steps 4 --workers 2 --base-port $PORT \
  > "$TMP/ring.txt" 2>&1 || { cat "$TMP/ring.txt"; fail "train --workers 2"; }
timeout 180 "$EXE" train "${train[@]}" --out "$TMP/split" --steps 4 --workers 2 --split backbone,extras,heads \
  --base-port $((PORT + 10)) > "$TMP/split.txt" 2>&1 || { cat "$TMP/split.txt"; fail "train --split"; }
expect_two_workers "train --split" "$TMP/split.txt" "$TMP/split" 4
parts_hold_variables "$TMP/split.txt" 6
same_bits "2 workers, 3 parts each" "$TMP/ring" "$TMP/split"

# Resumed split from step 2: the uninterrupted split run's bits.
cp -r "$TMP/split" "$TMP/split-resumed"
rewind_checkpoint "$TMP/split-resumed" 4 2
timeout 180 "$EXE" train --out "$TMP/split-resumed" --resume --threads 1 --workers 2 --split backbone,extras,heads \
  --base-port $((PORT + 30)) > "$TMP/split-resume.txt" 2>&1 || { cat "$TMP/split-resume.txt"; fail "split resume"; }
expect_resumed_bits "split" "$TMP/split-resume.txt" "$TMP/split" "$TMP/split-resumed" 4

# One worker, parts grouped in two tasks, against one process: SSD and RetinaNet.
for model in ssd-mobilenet retinanet-resnet18; do
  timeout 120 "$EXE" train "${train[@]}" --model $model --out "$TMP/one-$model" --steps 4 \
    > "$TMP/one-$model.txt" 2>&1 || { cat "$TMP/one-$model.txt"; fail "train $model"; }
  timeout 180 "$EXE" train "${train[@]}" --model $model --out "$TMP/grouped-$model" --steps 4 \
    --split backbone+extras,heads --base-port $((PORT + 40)) > "$TMP/grouped-$model.txt" 2>&1 ||
    { cat "$TMP/grouped-$model.txt"; fail "train $model --split backbone+extras,heads"; }
  parts_hold_variables "$TMP/grouped-$model.txt" 2
  same_bits "$model, one worker, 2 part tasks" "$TMP/one-$model" "$TMP/grouped-$model"
done

# add-class: the teacher is split as the student is; ring and split agree.
class_subset "$TMP/data" "$TMP/new" only triangle || fail "the new class's data"
class_subset "$TMP/data" "$TMP/old" without triangle || fail "the old classes' data"
timeout 120 "$EXE" train "${common[@]}" --data "$TMP/old" --out "$TMP/old-run" --steps 2 > "$TMP/old.txt" 2>&1 ||
  { cat "$TMP/old.txt"; fail "train the old classes"; }
add_class=(add-class --from "$TMP/old-run" --data "$TMP/new" --steps 4 --threads 1 --exemplars 0.5 --workers 2)
timeout 120 "$EXE" "${add_class[@]}" --out "$TMP/added-ring" --base-port $((PORT + 50)) > "$TMP/added-ring.txt" 2>&1 ||
  { cat "$TMP/added-ring.txt"; fail "add-class ring"; }
timeout 180 "$EXE" "${add_class[@]}" --out "$TMP/added-split" --split backbone,extras,heads \
  --base-port $((PORT + 60)) > "$TMP/added-split.txt" 2>&1 || { cat "$TMP/added-split.txt"; fail "add-class --split"; }
grep -q "^\[worker:0\] .*distill_cls" "$TMP/added-split.txt" || { cat "$TMP/added-split.txt"; fail "no distillation"; }
same_bits "add-class, 2 workers, 3 parts each" "$TMP/added-ring" "$TMP/added-split"

# A part task killed mid-run: the run fails, naming the part task, and stops.
timeout 120 "$EXE" train "${train[@]}" --out "$TMP/killed" --steps 100000 --split backbone,extras,heads \
  --base-port $((PORT + 80)) > "$TMP/killed.txt" 2>&1 &
launcher=$!
for _ in $(seq 300); do grep -q "^\[worker:0\] step" "$TMP/killed.txt" && break; sleep 0.1; done
victim=$(grep -l '"type":"part","index":1' /proc/[0-9]*/environ 2>/dev/null | head -1 | cut -d/ -f3)
[[ -n $victim ]] || { kill $launcher; cat "$TMP/killed.txt"; fail "no part task 1 to kill"; }
kill -9 "$victim"
wait $launcher
status=$?
((status != 0 && status != 124)) || { cat "$TMP/killed.txt"; fail "a dead part task: status $status"; }
grep -q "task part:1 .*killed by signal 9" "$TMP/killed.txt" || { cat "$TMP/killed.txt"; fail "launch did not name the dead part task"; }

expect_error '--split: "backbone,extras" leaves out the heads' \
  "$EXE" train "${train[@]}" --out "$TMP/bad1" --steps 2 --split backbone,extras
expect_error '--split: unknown part "neck"' \
  "$EXE" train "${train[@]}" --out "$TMP/bad2" --steps 2 --split backbone,neck,heads
expect_error '--split: part "heads" is named twice' \
  "$EXE" train "${train[@]}" --out "$TMP/bad3" --steps 2 --split backbone+heads,extras,heads
expect_error "--split goes with --strategy ring" \
  "$EXE" train "${train[@]}" --out "$TMP/bad4" --steps 2 --workers 2 --strategy ps --split backbone,extras,heads
cluster='{"cluster":{"worker":["127.0.0.1:1"]},"task":{"type":"worker","index":0}}'
DFLOW_CLUSTER=$cluster expect_error "needs 3 part task(s) per worker, 3 for 1 worker(s); DFLOW_CLUSTER lists 0" \
  "$EXE" train "${train[@]}" --out "$TMP/bad5" --steps 2 --split backbone,extras,heads
for d in bad1 bad2 bad3 bad4 bad5; do [[ -e $TMP/$d ]] && fail "a refused run wrote $TMP/$d"; done
echo "dflow-detect --split: all checks passed"
