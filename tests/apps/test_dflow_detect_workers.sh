#!/usr/bin/env bash
# dflow-detect train --workers 2 on a tiny generated dataset: it starts its
# workers through `dflow launch` (found beside it), each worker reads its own
# shard, the chief alone writes config.json and checkpoints, a ring run
# resumed from the step-2 checkpoint ends with the uninterrupted run's bits,
# Ctrl-C stops both workers at the same step, sync ps (1 ps task) ends with
# ring's bits and resumes exactly, async ps with 2 ps tasks finishes,
# incremental learning, channel pruning and distillation with workers give
# the same bits over ring and sync ps, and bad combinations fail clearly.
# Every run is under `timeout`.
# Usage: test_dflow_detect_workers.sh PATH/TO/dflow-detect
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-detect}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"
source "$(dirname "$(readlink -f "$0")")/rewind_checkpoint.sh"
source "$(dirname "$(readlink -f "$0")")/worker_checks.sh"
# Below the ephemeral range (32768..), where the links' own sockets could take our ports.
PORT=$((20000 + RANDOM % 10000))

timeout 60 "$EXE" generate --out "$TMP/data" --images 16 --size 96x80 --classes 2 --seed 3 > /dev/null ||
  fail "generate"
# A small network and batches keep it fast; one thread per worker keeps it deterministic.
train=(--data "$TMP/data" --size 64 --width 0.25 --batch 2 --threads 1 --checkpoint-every 2 --keep 10)

timeout 120 "$EXE" train "${train[@]}" --out "$TMP/single" --steps 1 > "$TMP/single.txt" ||
  { cat "$TMP/single.txt"; fail "single-process train"; }

timeout 120 "$EXE" train "${train[@]}" --out "$TMP/full" --steps 4 --workers 2 --strategy ring \
  --base-port $PORT > "$TMP/full.txt" 2>&1 || { cat "$TMP/full.txt"; fail "train --workers 2"; }
expect_two_workers "train --workers 2" "$TMP/full.txt" "$TMP/full" 4
expect_half_epoch "$TMP/single" "$TMP/full"

# Resumed from step 2 by two workers: the uninterrupted run's bits.
cp -r "$TMP/full" "$TMP/resumed"
rewind_checkpoint "$TMP/resumed" 4 2
timeout 120 "$EXE" train --out "$TMP/resumed" --resume --threads 1 --workers 2 --base-port $((PORT + 10)) \
  > "$TMP/resume.txt" 2>&1 || { cat "$TMP/resume.txt"; fail "resume with 2 workers"; }
expect_resumed_bits ring "$TMP/resume.txt" "$TMP/full" "$TMP/resumed" 4

# Ctrl-C (SIGINT to the launcher, which dflow-detect became).
expect_ctrl_c_stops "$TMP/stopped.txt" "$TMP/stopped" timeout 60 "$EXE" train "${train[@]}" \
  --out "$TMP/stopped" --steps 100000 --workers 2 --base-port $((PORT + 20))

# --strategy ps: 2 workers and 1 parameter server, sync. One thread per
# task: every sum in one order, so sync ps and ring agree bit for bit (the
# chief alone updates the batch-norm statistics on the ps, as ring keeps the chief's).
timeout 120 "$EXE" train "${train[@]}" --out "$TMP/ps" --steps 4 --workers 2 --strategy ps \
  --base-port $((PORT + 30)) > "$TMP/ps.txt" 2>&1 || { cat "$TMP/ps.txt"; fail "train --strategy ps"; }
grep -q "^\[ps:0\] ps task .* serving" "$TMP/ps.txt" || { cat "$TMP/ps.txt"; fail "no ps task"; }
expect_two_workers "train --strategy ps" "$TMP/ps.txt" "$TMP/ps" 4
cmp "$TMP/full/checkpoints/model-4.safetensors" "$TMP/ps/checkpoints/model-4.safetensors" ||
  fail "sync ps and ring end at step 4 with different variables"

# Resumed from the ps run's step-2 checkpoint: its bits at step 4.
cp -r "$TMP/ps" "$TMP/ps-resumed"
rewind_checkpoint "$TMP/ps-resumed" 4 2
timeout 120 "$EXE" train --out "$TMP/ps-resumed" --resume --threads 1 --workers 2 --strategy ps \
  --base-port $((PORT + 40)) > "$TMP/ps-resume.txt" 2>&1 || { cat "$TMP/ps-resume.txt"; fail "ps resume"; }
expect_resumed_bits ps "$TMP/ps-resume.txt" "$TMP/ps" "$TMP/ps-resumed" 4

timeout 60 "$EXE" eval --data "$TMP/data" --checkpoint "$TMP/ps" --threads 1 > /dev/null || fail "eval of the ps run's checkpoint"

# Async with 2 ps tasks: the chief saves the global step it ends at.
timeout 120 "$EXE" train "${train[@]}" --out "$TMP/ps-async" --steps 4 --workers 2 --strategy ps --ps 2 \
  --ps-mode async --base-port $((PORT + 50)) > "$TMP/ps-async.txt" 2>&1 ||
  { cat "$TMP/ps-async.txt"; fail "train --ps 2 --ps-mode async"; }
grep -q "^\[worker:0\] checkpoint .*model-[0-9]*.safetensors" "$TMP/ps-async.txt" ||
  { cat "$TMP/ps-async.txt"; fail "async: the chief wrote no final checkpoint"; }

# Incremental learning across processes: add-class with its teacher and
# exemplars over a ring and over sync ps (same bits), and an on-line session
# under ps whose chief keeps the memory.
timeout 60 "$EXE" generate --out "$TMP/three" --images 16 --size 96x80 --classes 3 --seed 7 > /dev/null ||
  fail "generate 3 classes"
class_subset "$TMP/three" "$TMP/new" only triangle || fail "new-class split"
add_class=(add-class --from "$TMP/full" --data "$TMP/new" --steps 4 --threads 1 --exemplars 0.5)
timeout 120 "$EXE" "${add_class[@]}" --out "$TMP/added-ring" --workers 2 --strategy ring \
  --base-port $((PORT + 60)) > "$TMP/added-ring.txt" 2>&1 || { cat "$TMP/added-ring.txt"; fail "add-class ring"; }
grep -q "^\[worker:0\] .*distill_cls" "$TMP/added-ring.txt" || { cat "$TMP/added-ring.txt"; fail "no distillation"; }
grep -q "^\[worker:1\] exemplar memory" "$TMP/added-ring.txt" && fail "worker 1 wrote the memory too"
[[ -s $TMP/added-ring/memory/annotations.json ]] || fail "add-class with workers kept no memory"
timeout 120 "$EXE" "${add_class[@]}" --out "$TMP/added-ps" --workers 2 --strategy ps \
  --base-port $((PORT + 70)) > "$TMP/added-ps.txt" 2>&1 || { cat "$TMP/added-ps.txt"; fail "add-class ps"; }
cmp "$TMP/added-ring/checkpoints/model-4.safetensors" "$TMP/added-ps/checkpoints/model-4.safetensors" ||
  fail "add-class: sync ps and ring end with different variables"
timeout 120 "$EXE" train "${train[@]}" --out "$TMP/first" --session --steps 2 --workers 2 --strategy ring \
  --base-port $((PORT + 90)) > "$TMP/first.txt" 2>&1 || { cat "$TMP/first.txt"; fail "a first session with workers"; }
grep -q "^\[worker:0\] session 1 ended" "$TMP/first.txt" || { cat "$TMP/first.txt"; fail "session 1 did not end"; }
cp -r "$TMP/ps" "$TMP/online"
timeout 120 "$EXE" train --data "$TMP/data" --out "$TMP/online" --session --steps 2 --workers 2 --strategy ps \
  --base-port $((PORT + 80)) > "$TMP/online.txt" 2>&1 || { cat "$TMP/online.txt"; fail "a session under ps"; }
grep -q "^\[worker:0\] session 2 ended" "$TMP/online.txt" || { cat "$TMP/online.txt"; fail "the session did not end"; }
[[ -s $TMP/online/checkpoints/model-6.safetensors && -s $TMP/online/sessions.json ]] ||
  fail "the session under ps did not continue at step 4 or log itself"

# The compression box across processes: channel pruning fine-tuned, and a
# student distilled from a teacher (outputs and features), by two workers
# over a ring and over sync ps: the same bits either way.
for strategy in ring ps; do
  timeout 120 "$EXE" prune --checkpoint "$TMP/full" --mode channels --sparsity 0.5 --out "$TMP/thin-$strategy" \
    --steps 2 --threads 1 --workers 2 --strategy $strategy --base-port $((PORT + 100)) > "$TMP/thin-$strategy.txt" 2>&1 ||
    { cat "$TMP/thin-$strategy.txt"; fail "prune channels with --strategy $strategy"; }
  timeout 120 "$EXE" train "${train[@]}" --out "$TMP/student-$strategy" --steps 2 --teacher "$TMP/full" \
    --distill both --workers 2 --strategy $strategy --base-port $((PORT + 110)) > "$TMP/student-$strategy.txt" 2>&1 ||
    { cat "$TMP/student-$strategy.txt"; fail "distill with --strategy $strategy"; }
  grep -q "^\[worker:0\] .*imitation [0-9]" "$TMP/student-$strategy.txt" ||
    { cat "$TMP/student-$strategy.txt"; fail "distill with --strategy $strategy: no imitation term"; }
done
cmp "$TMP/thin-ring/checkpoints/model-2.safetensors" "$TMP/thin-ps/checkpoints/model-2.safetensors" ||
  fail "prune: sync ps and ring end with different variables"
cmp "$TMP/student-ring/checkpoints/model-2.safetensors" "$TMP/student-ps/checkpoints/model-2.safetensors" ||
  fail "distill: sync ps and ring end with different variables"

expect_error "--codec 1bit goes with --strategy ring" \
  "$EXE" train "${train[@]}" --out "$TMP/ps-codec" --steps 2 --workers 2 --strategy ps --codec 1bit
expect_error "--ps and --ps-mode go with --strategy ps" \
  "$EXE" train "${train[@]}" --out "$TMP/ps-ring" --steps 2 --workers 2 --strategy ring --ps 2
expect_error "unknown data-parallel strategy 'star'" \
  "$EXE" train "${train[@]}" --out "$TMP/star" --steps 2 --workers 2 --strategy star
expect_error "data-parallel workers run on the CPU" \
  "$EXE" train "${train[@]}" --out "$TMP/gpu" --steps 2 --workers 2 --device /device:GPU:0
cluster='{"cluster":{"worker":["127.0.0.1:1","127.0.0.1:2","127.0.0.1:3"]},"task":{"type":"worker","index":0}}'
DFLOW_CLUSTER=$cluster expect_error "--workers 2 but DFLOW_CLUSTER lists 3 workers" \
  "$EXE" train "${train[@]}" --out "$TMP/mismatch" --steps 2 --workers 2
for d in ps-codec ps-ring star gpu mismatch; do [[ -e $TMP/$d ]] && fail "a refused run wrote $TMP/$d"; done
echo "dflow-detect --workers: all checks passed"
