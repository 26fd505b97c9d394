#!/usr/bin/env bash
# Ring all-reduce training across real processes (the data_parallel_mlp
# program): workers started seconds apart all connect; a worker with another
# cluster document fails every rank clearly; 3 workers under `dflow launch`
# end with the in-process ring's bits; a worker killed with -9 is named by
# the others (and the launcher) within 10 s, also under `dflow launch`, where
# the others exit by themselves (status 1) before the launcher would stop
# them; a run resumed from the chief's
# checkpoint ends with the bits of an uninterrupted run; 1-bit gradients
# still train. Every process runs
# under `timeout`, so a hang fails instead of hanging.
# Usage: test_ring_processes.sh PATH/TO/dflow PATH/TO/data_parallel_mlp
set -u
DFLOW=$(readlink -f "${1:?usage: $0 DFLOW DATA_PARALLEL_MLP}")
TRAINER=$(readlink -f "${2:?usage: $0 DFLOW DATA_PARALLEL_MLP}")
source "$(dirname "$(readlink -f "$0")")/../../apps/cli_checks.sh"

# Below the kernel's ephemeral range (32768 and up), where a socket of our own
# could hold a port we want to bind.
BASE=$((20000 + RANDOM % 12000))
# cluster N INDEX [FIRST_PORT]: the DFLOW_CLUSTER document of worker INDEX of N.
cluster() {
  local n=$1 index=$2 first=${3:-$BASE} workers="" k
  for ((k = 0; k < n; ++k)); do workers+="${workers:+,}\"127.0.0.1:$((first + k))\""; done
  echo "{\"cluster\":{\"worker\":[$workers]},\"task\":{\"type\":\"worker\",\"index\":$index}}"
}
# start NAME CLUSTER_JSON ARGS...: runs the trainer in the background (at most
# 60 s) with its own DFLOW_CLUSTER; stdout/stderr in NAME.out/NAME.err, pid in pid_NAME.
start() {
  local name=$1 doc=$2; shift 2
  DFLOW_CLUSTER=$doc timeout 60 "$TRAINER" "$@" > "$name.out" 2> "$name.err" &
  eval "pid_$name=$!"
}
# expect_exit NAME CODE: waits for NAME and checks its exit status.
expect_exit() {
  local pid_var="pid_$1"
  checks=$((checks + 1))
  wait "${!pid_var}"
  local code=$?
  [[ $code == "$2" ]] || fail "$1: exit $code (expected $2); stderr: $(cat "$1.err")"
}
expect_same() {
  checks=$((checks + 1))
  cmp -s "$2" "$3" || fail "$1: $2 and $3 differ"
}

# --- start-up: worker 2 starts 4 s after the others (past the 3 s heartbeat timeout)
start w0 "$(cluster 3 0)" --steps 3 --out late
start w1 "$(cluster 3 1)" --steps 3 --out late
sleep 4
start w2 "$(cluster 3 2)" --steps 3 --out late
for w in w0 w1 w2; do expect_exit $w 0; done
expect_same "late start, worker 1" late.0 late.1
expect_same "late start, worker 2" late.0 late.2

# --- worker 1 was given a cluster of 2: every rank fails, naming both sides
BASE=$((BASE + 10))
start w0 "$(cluster 3 0)" --startup-timeout 10
start w1 "$(cluster 2 1)" --startup-timeout 10
start w2 "$(cluster 3 2)" --startup-timeout 10
for w in w0 w1 w2; do expect_exit $w 1; done
# Whichever side notices first words it: "worker:0 was started with 3 ranks but rank 1 with 2".
for w in w0 w1 w2; do
  checks=$((checks + 1))
  grep -qE "worker:[0-2] was started with (3 ranks but rank 1 with 2|2 ranks but rank [02] with 3): the ranks have different cluster documents" $w.err ||
    fail "mismatch on $w: $(cat $w.err)"
done

# --- 3 workers under dflow launch give the in-process ring's bits
BASE=$((BASE + 10))
checks=$((checks + 1))
timeout 60 "$DFLOW" launch -n 3 --base-port $BASE -- "$TRAINER" --steps 15 --out procs > launch.out 2> launch.err ||
  fail "launch: exit $?; stderr: $(cat launch.err)"
timeout 60 "$TRAINER" --in-process 3 --steps 15 --out threads 2> threads.err || fail "in-process: $(cat threads.err)"
for k in 0 1 2; do expect_same "processes = threads, worker $k" procs.$k threads.$k; done
expect_same "workers agree" procs.0 procs.2

# wait_for FILE PATTERN: up to 20 s for FILE to hold a line matching PATTERN.
wait_for() {
  for _ in $(seq 200); do grep -qE "$2" "$1" 2> /dev/null && return 0; sleep 0.1; done
  fail "no '$2' in $1 after 20 s: $(tail -c 2000 "$1")"
  return 1
}

# --- worker 1 killed with -9 mid-training, processes started without a launcher:
# workers 0 and 2 name it and exit 1 within 10 s
BASE=$((BASE + 10))
for k in 0 1 2; do start w$k "$(cluster 3 $k)" --steps 1000 --step-sleep-ms 50; done
# Killed once every worker is past start-up (before, a lost peer is one that has not started yet).
for w in w0 w1 w2; do wait_for $w.out "^connected"; done
sleep 1
kill -9 "$(sed -n 's/^pid //p' w1.out)"
killed_at=$SECONDS
for w in w0 w2; do
  expect_exit $w 1
  expect_contains "$w names the dead worker" $w.err "worker:1 stopped answering heartbeats"
done
checks=$((checks + 1))
(( SECONDS - killed_at <= 10 )) || fail "the survivors took $((SECONDS - killed_at)) s to stop (at most 10)"
wait "$pid_w1" 2> /dev/null

# --- the same under dflow launch, with the chief writing checkpoints every 5 steps
BASE=$((BASE + 10))
mkdir ckpt
timeout 60 "$DFLOW" launch -n 3 --base-port $BASE -- "$TRAINER" --steps 1000 --step-sleep-ms 50 \
  --checkpoint-dir ckpt --checkpoint-every 5 > killed.out 2> killed.err &
launcher=$!
wait_for killed.out "^\[worker:0\] checkpoint ckpt/model-10.safetensors"
kill -9 "$(sed -n 's/^\[worker:1\] pid //p' killed.out)"
killed_at=$SECONDS
checks=$((checks + 1))
wait $launcher
code=$?
[[ $code == 1 ]] || fail "launcher with a killed worker: exit $code (expected 1)"
(( SECONDS - killed_at <= 10 )) || fail "the launcher took $((SECONDS - killed_at)) s to stop (at most 10)"
expect_contains "launcher names the dead worker" killed.err "task worker:1"
expect_contains "launcher says how" killed.err "was killed by signal 9"
for k in 0 2; do
  checks=$((checks + 1))
  grep -qE "^\[worker:$k\] .*worker:1 stopped answering heartbeats" killed.out ||
    fail "under launch, worker $k did not name the dead worker: $(tail -c 2000 killed.out)"
  checks=$((checks + 1))
  grep -qE "then task worker:$k \(pid [0-9]+\) exited with status 1" killed.err ||
    fail "under launch, worker $k did not exit by itself with status 1: $(cat killed.err)"
done
checks=$((checks + 1))
grep -q "stopping the other tasks" killed.err && fail "the launcher had to stop the survivors: $(cat killed.err)"

# --- resumed from the killed run's last checkpoint to step 40: the bits of a run straight to 40
BASE=$((BASE + 10))
checks=$((checks + 1))
timeout 60 "$DFLOW" launch -n 3 --base-port $BASE -- "$TRAINER" --steps 40 --out straight > straight.out 2> straight.err ||
  fail "straight run: $(cat straight.err)"
BASE=$((BASE + 10))
checks=$((checks + 1))
timeout 60 "$DFLOW" launch -n 3 --base-port $BASE -- "$TRAINER" --steps 40 --checkpoint-dir ckpt --resume \
  --out resumed > resumed.out 2> resumed.err || fail "resumed run: $(cat resumed.err)"
expect_contains "resumed from a checkpoint" resumed.out "[worker:0] restored ckpt/model-"
for k in 0 1 2; do expect_same "resumed = straight, worker $k" resumed.$k straight.$k; done
checks=$((checks + 1))
cmp -s straight.0 procs.0 && fail "40 steps and 15 steps gave the same variables"

# --- 1-bit gradients (error feedback) across 3 processes still train: from
# ~0.3 held-out accuracy at step 0 to above 0.9 after 300 steps
BASE=$((BASE + 10))
checks=$((checks + 1))
timeout 60 "$DFLOW" launch -n 3 --base-port $BASE -- "$TRAINER" --steps 300 --codec 1bit > onebit.out 2> onebit.err ||
  fail "1-bit run: $(cat onebit.err)"
accuracy=$(sed -n 's/^\[worker:0\] held-out accuracy //p' onebit.out)
checks=$((checks + 1))
awk -v a="${accuracy:-0}" 'BEGIN { exit !(a > 0.9) }' ||
  fail "1-bit training reached held-out accuracy '${accuracy}' (expected > 0.9): $(tail -5 onebit.out)"
checks=$((checks + 1))
"$TRAINER" --in-process 2 --codec 2bit > badcodec.out 2> badcodec.err && fail "--codec 2bit was accepted"
expect_contains "a bad codec is named" badcodec.err "2bit"

cli_summary
