#!/usr/bin/env bash
# dflow-count train --workers 2 --strategy ring|ps on a tiny generated
# dataset: it starts its workers (and ps tasks) through `dflow launch` (found
# beside it), each worker reads its own shard, the chief alone writes
# config.json and checkpoints, a run resumed from the step-2 checkpoint ends
# with the uninterrupted run's bits (ring and sync ps), sync ps ends with
# ring's bits, async ps with 2 ps tasks finishes, Ctrl-C stops every ring
# worker at the same step (under ps: every process at once, and the run
# resumes from the last periodic checkpoint), and bad combinations fail
# clearly. Every run is under `timeout`.
# Usage: test_dflow_count_workers.sh PATH/TO/dflow-count
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-count}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"
# Below the ephemeral range (32768..), where the links' own sockets could take our ports.
PORT=$((20000 + RANDOM % 10000))
source "$(dirname "$(readlink -f "$0")")/rewind_checkpoint.sh"
source "$(dirname "$(readlink -f "$0")")/worker_checks.sh"

"$EXE" generate --out "$TMP/data" --images 8 --width 72 --height 40 --max-flowers 6 --seed 3 > /dev/null ||
  fail "generate"
train=(--data "$TMP/data" --tile 32 --batch 2 --threads 1 --checkpoint-every 2 --keep 10)

# One worker, for the shard sizes.
timeout 60 "$EXE" train "${train[@]}" --out "$TMP/single" --steps 2 > "$TMP/single.txt" ||
  { cat "$TMP/single.txt"; fail "single-process train"; }

timeout 60 "$EXE" train "${train[@]}" --out "$TMP/full" --steps 4 --workers 2 --strategy ring \
  --base-port $PORT > "$TMP/full.txt" 2>&1 || { cat "$TMP/full.txt"; fail "train --workers 2"; }
expect_two_workers "train --workers 2" "$TMP/full.txt" "$TMP/full" 4
expect_half_epoch "$TMP/single" "$TMP/full"

# Resumed from step 2 by two workers: the uninterrupted run's bits.
cp -r "$TMP/full" "$TMP/resumed"
rewind_checkpoint "$TMP/resumed" 4 2
timeout 60 "$EXE" train --out "$TMP/resumed" --resume --threads 1 --workers 2 --base-port $((PORT + 10)) \
  > "$TMP/resume.txt" 2>&1 || { cat "$TMP/resume.txt"; fail "resume with 2 workers"; }
expect_resumed_bits ring "$TMP/resume.txt" "$TMP/full" "$TMP/resumed" 4

# Ctrl-C (SIGINT to the launcher, which dflow-count became): every worker
# stops at the same step and the chief saves it.
expect_ctrl_c_stops "$TMP/stopped.txt" "$TMP/stopped" timeout 60 "$EXE" train "${train[@]}" \
  --out "$TMP/stopped" --steps 100000 --workers 2 --base-port $((PORT + 20))

# --strategy ps: 2 workers and 1 parameter server under dflow launch, sync.
timeout 60 "$EXE" train "${train[@]}" --out "$TMP/ps" --steps 4 --workers 2 --strategy ps \
  --base-port $((PORT + 30)) > "$TMP/ps.txt" 2>&1 || { cat "$TMP/ps.txt"; fail "train --strategy ps"; }
grep -q "^\[ps:0\] ps task .* serving" "$TMP/ps.txt" || { cat "$TMP/ps.txt"; fail "no ps task"; }
expect_two_workers "train --strategy ps" "$TMP/ps.txt" "$TMP/ps" 4
# One thread per task: every sum in one order, so sync ps and ring agree bit for bit.
cmp "$TMP/full/checkpoints/model-4.safetensors" "$TMP/ps/checkpoints/model-4.safetensors" ||
  fail "sync ps and ring end at step 4 with different variables"
"$EXE" eval --data "$TMP/data" --checkpoint "$TMP/ps" --metrics "$TMP/ps-metrics.json" > /dev/null ||
  fail "eval of the ps run's checkpoint"

# Resumed from the ps run's step-2 checkpoint: its bits at step 4.
cp -r "$TMP/ps" "$TMP/ps-resumed"
rewind_checkpoint "$TMP/ps-resumed" 4 2
timeout 60 "$EXE" train --out "$TMP/ps-resumed" --resume --threads 1 --workers 2 --strategy ps \
  --base-port $((PORT + 40)) > "$TMP/ps-resume.txt" 2>&1 || { cat "$TMP/ps-resume.txt"; fail "ps resume"; }
expect_resumed_bits ps "$TMP/ps-resume.txt" "$TMP/ps" "$TMP/ps-resumed" 4

# Async with 2 ps tasks: the chief saves the global step it ends at.
timeout 60 "$EXE" train "${train[@]}" --out "$TMP/ps-async" --steps 4 --workers 2 --strategy ps --ps 2 \
  --ps-mode async --base-port $((PORT + 50)) > "$TMP/ps-async.txt" 2>&1 ||
  { cat "$TMP/ps-async.txt"; fail "train --ps 2 --ps-mode async"; }
grep -q "^\[ps:1\] ps task" "$TMP/ps-async.txt" || { cat "$TMP/ps-async.txt"; fail "async: no second ps task"; }
grep -q "^\[worker:0\] checkpoint .*model-[0-9]*.safetensors" "$TMP/ps-async.txt" ||
  { cat "$TMP/ps-async.txt"; fail "async: the chief wrote no final checkpoint"; }

# Ctrl-C under ps stops every task at once (the ps tasks hold the variables,
# so no final checkpoint): the chief's last periodic checkpoint resumes.
timeout 60 "$EXE" train "${train[@]}" --out "$TMP/ps-stopped" --steps 100000 --workers 2 --strategy ps \
  --base-port $((PORT + 60)) > "$TMP/ps-stopped.txt" 2>&1 &
launcher=$!
for _ in $(seq 200); do [[ -s $TMP/ps-stopped/checkpoints/model-4.safetensors ]] && break; sleep 0.1; done
kill -INT $launcher
wait $launcher && fail "the interrupted ps run exited 0"
grep -q "interrupted by signal 2" "$TMP/ps-stopped.txt" || { cat "$TMP/ps-stopped.txt"; fail "ps: the launcher did not stop"; }
latest=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['latest'])" \
  "$TMP/ps-stopped/checkpoints/checkpoint.json")
step=${latest//[^0-9]/}
timeout 60 "$EXE" train --out "$TMP/ps-stopped" --resume --steps $((step + 2)) --threads 1 --workers 2 \
  --strategy ps --base-port $((PORT + 70)) > "$TMP/ps-stopped-resume.txt" 2>&1 ||
  { cat "$TMP/ps-stopped-resume.txt"; fail "resume of the interrupted ps run"; }
grep -q "^\[worker:0\] resuming .*$latest at step $step" "$TMP/ps-stopped-resume.txt" &&
  grep -q "^\[worker:0\] checkpoint .*model-$((step + 2)).safetensors" "$TMP/ps-stopped-resume.txt" ||
  { cat "$TMP/ps-stopped-resume.txt"; fail "the interrupted ps run did not resume at step $step"; }

# 1-bit gradients between two ring workers: trains to the end and checkpoints.
timeout 60 "$EXE" train "${train[@]}" --out "$TMP/onebit" --steps 4 --workers 2 --strategy ring --codec 1bit \
  --base-port $((PORT + 80)) > "$TMP/onebit.txt" 2>&1 || { cat "$TMP/onebit.txt"; fail "train --codec 1bit"; }
[[ -s $TMP/onebit/checkpoints/model-4.safetensors ]] || fail "the 1-bit run wrote no final checkpoint"
cmp -s "$TMP/full/checkpoints/model-4.safetensors" "$TMP/onebit/checkpoints/model-4.safetensors" &&
  fail "1-bit gradients gave the float32 run's bits"
expect_error "--codec 1bit goes with --strategy ring" \
  "$EXE" train "${train[@]}" --out "$TMP/ps-codec" --steps 2 --workers 2 --strategy ps --codec 1bit
expect_error "--codec: 2bit not in" \
  "$EXE" train "${train[@]}" --out "$TMP/codec2" --steps 2 --workers 2 --codec 2bit

expect_error "--ps: must be between 1 and 64, got 0" \
  "$EXE" train "${train[@]}" --out "$TMP/ps0" --steps 2 --workers 2 --strategy ps --ps 0
expect_error "--ps and --ps-mode go with --strategy ps" \
  "$EXE" train "${train[@]}" --out "$TMP/ps-ring" --steps 2 --workers 2 --strategy ring --ps 2
expect_error "--ps-mode must be sync or async, got 'lazy'" \
  "$EXE" train "${train[@]}" --out "$TMP/ps-lazy" --steps 2 --workers 2 --strategy ps --ps-mode lazy
ps_cluster='{"cluster":{"worker":["127.0.0.1:1"],"ps":["127.0.0.1:2"]},"task":{"type":"worker","index":0}}'
DFLOW_CLUSTER=$ps_cluster DFLOW_STRATEGY=ps expect_error "--ps 2 but DFLOW_CLUSTER lists 1 ps tasks" \
  "$EXE" train "${train[@]}" --out "$TMP/ps-mismatch" --steps 2 --ps 2
for d in ps0 ps-ring ps-lazy ps-mismatch ps-codec codec2; do [[ -e $TMP/$d ]] && fail "a refused run wrote $TMP/$d"; done
expect_error "unknown data-parallel strategy 'star'" \
  "$EXE" train "${train[@]}" --out "$TMP/star" --steps 2 --workers 2 --strategy star
cluster='{"cluster":{"worker":["127.0.0.1:1","127.0.0.1:2","127.0.0.1:3"]},"task":{"type":"worker","index":0}}'
DFLOW_CLUSTER=$cluster expect_error "--workers 2 but DFLOW_CLUSTER lists 3 workers" \
  "$EXE" train "${train[@]}" --out "$TMP/mismatch" --steps 2 --workers 2
echo "dflow-count --workers: all checks passed"
