#!/usr/bin/env bash
# End-to-end tests of `dflow launch` with tiny shell programs as the tasks:
# the cluster environment each task sees, prefixed output, a failing task
# (the others get --failure-wait to exit by themselves, then are stopped), a
# task killed with -9, a task that ignores SIGTERM, SIGINT forwarding, and bad
# arguments. Every run is under `timeout`, so a hang fails instead of hanging.
# Usage: test_dflow_launch.sh PATH/TO/dflow
set -u
DFLOW=${1:?usage: $0 PATH/TO/dflow}
source "$(dirname "$(readlink -f "$0")")/cli_checks.sh"

# launch EXPECTED_EXIT DESCRIPTION ARGS...: runs dflow launch (at most 30 s).
launch() {
  local expected=$1 desc=$2; shift 2
  checks=$((checks + 1))
  timeout 30 "$DFLOW" launch "$@" > out.txt 2> err.txt
  local code=$?
  [[ $code == "$expected" ]] || fail "$desc: exit $code (expected $expected); stderr: $(cat err.txt)"
}

# Task bodies pick their role from DFLOW_CLUSTER's "task" part.
IS_WORKER1='[[ $DFLOW_CLUSTER == *"\"type\":\"worker\",\"index\":1}"* ]]'
IS_PS='[[ $DFLOW_CLUSTER == *"\"type\":\"ps\""* ]]'

# --- every task succeeds
launch 0 "all succeed" -n 3 --base-port 23000 -- bash -c 'echo "strategy $DFLOW_STRATEGY"; echo "$DFLOW_CLUSTER"; echo "python unbuffered $PYTHONUNBUFFERED"; printf "no newline"'
expect_contains "Python tasks unbuffered" out.txt "[worker:0] python unbuffered 1"
expect_contains "prefix" out.txt "[worker:0] strategy ring"
expect_contains "prefix 2" out.txt "[worker:2] strategy ring"
expect_contains "cluster" out.txt '[worker:2] {"cluster":{"worker":["127.0.0.1:23000","127.0.0.1:23001","127.0.0.1:23002"]},"task":{"type":"worker","index":2}}'
expect_contains "last line without newline" out.txt "[worker:1] no newline"

# --- model-part tasks: G per worker, job "part", ports after the workers'
# (The workers wait a second: tasks of other jobs are stopped once the workers are done.)
launch 0 "model parts" -n 2 --model-parts 2 --base-port 23050 -- \
  bash -c 'echo "$DFLOW_CLUSTER"; [[ $DFLOW_CLUSTER == *"\"type\":\"worker\""* ]] && sleep 1; true'
expect_contains "part cluster" out.txt '[part:3] {"cluster":{"worker":["127.0.0.1:23050","127.0.0.1:23051"],"part":["127.0.0.1:23052","127.0.0.1:23053","127.0.0.1:23054","127.0.0.1:23055"]},"task":{"type":"part","index":3}}'

# --- parameter servers serve until the workers are done, then are stopped
# (The workers wait for the ps to be up, so its line is always there.)
WAIT_FOR_PS='for _ in $(seq 100); do [[ -e ps_ready ]] && break; sleep 0.1; done'
launch 0 "ps stopped after workers" -n 2 --ps 1 --base-port 23100 -- \
  bash -c "if $IS_PS; then echo serving; touch ps_ready; sleep 60; else $WAIT_FOR_PS; echo trained; fi"
expect_contains "ps strategy" out.txt "[ps:0] serving"
expect_contains "workers" out.txt "[worker:1] trained"

# --- under parameter servers the others get longer than the chief's 10 s
# step timeout to report a dead worker, so its report is not cut off.
launch 1 "ps failure wait" -n 2 --ps 1 --base-port 23150 -- bash -c "if $IS_WORKER1; then exit 3; fi; sleep 0.2"
expect_contains "ps failure wait" err.txt "waiting up to 15000 ms for the other tasks"

# --- one worker fails: the others that do not exit within --failure-wait are
# stopped, and the launcher says who failed first
launch 1 "a worker fails" -n 3 --failure-wait 0.5 -- bash -c "if $IS_WORKER1; then echo failing; exit 3; fi; sleep 60"
expect_contains "failure named" err.txt "task worker:1"
expect_contains "failure how" err.txt "exited with status 3; waiting up to 500 ms for the other tasks to exit"
expect_contains "then stopped" err.txt "they did not exit within 500 ms of it; stopping the other tasks"
expect_contains "failure in the error" err.txt "dflow: error: launch: task worker:1"

# --failure-wait 0: stopped at once.
launch 1 "no failure wait" -n 2 --failure-wait 0 -- bash -c "if $IS_WORKER1; then exit 3; fi; sleep 60"
expect_contains "stopped at once" err.txt "exited with status 3; stopping the other tasks"

# The others notice the failure themselves (here: a file worker 1 leaves,
# seen half a second later, as a heartbeat timeout would be) and exit on
# their own within the default wait: their last words are relayed, the
# launcher stops nobody and reports the first failure.
NOTICE='for _ in $(seq 100); do [[ -e w1_dead ]] && { sleep 0.5; echo "worker:1 died, exiting" >&2; exit 2; }; sleep 0.1; done; sleep 60'
start=$SECONDS
launch 1 "the others exit by themselves" -n 3 -- bash -c "if $IS_WORKER1; then touch w1_dead; exit 3; fi; $NOTICE"
expect_contains "survivor 0 reports" out.txt "[worker:0] worker:1 died, exiting"
expect_contains "survivor 2 reports" out.txt "[worker:2] worker:1 died, exiting"
expect_contains "survivor exit relayed" err.txt "dflow launch: then task worker:2"
expect_contains "first failure is the error" err.txt "dflow: error: launch: task worker:1"
checks=$((checks + 1))
grep -q "stopping the other tasks" err.txt && fail "the launcher stopped tasks that exited by themselves: $(cat err.txt)"
checks=$((checks + 1))
(( SECONDS - start < 10 )) || fail "the launcher waited $((SECONDS - start)) s for tasks that had exited"

launch 1 "a worker is killed with -9" -n 2 --failure-wait 0.5 -- bash -c "if $IS_WORKER1; then kill -9 \$\$; fi; sleep 60"
expect_contains "signal named" err.txt "task worker:1"
expect_contains "signal how" err.txt "was killed by signal 9"

# A task that ignores SIGTERM is killed after the grace period.
launch 1 "stubborn task" -n 2 --grace 0.5 --failure-wait 0.5 -- bash -c "if $IS_WORKER1; then sleep 0.2; exit 1; fi; trap '' TERM; sleep 60"
expect_contains "stubborn failure" err.txt "task worker:1"

launch 1 "program not found" -n 2 --failure-wait 0.5 -- /nonexistent/program
expect_contains "exec failure" out.txt "dflow launch: cannot run '/nonexistent/program'"
expect_contains "exec failure status" err.txt "exited with status 127"

# --- SIGINT to the launcher reaches every task
checks=$((checks + 1))
timeout 30 "$DFLOW" launch -n 2 -- bash -c 'trap "echo caught INT; exit 0" INT; echo ready; sleep 60 & wait' > out.txt 2> err.txt &
launcher=$!
for _ in $(seq 100); do [[ $(grep -c ready out.txt) == 2 ]] && break; sleep 0.1; done
kill -INT "$launcher"
wait "$launcher"
code=$?
[[ $code == 1 ]] || fail "SIGINT: exit $code (expected 1); stderr: $(cat err.txt)"
expect_contains "SIGINT forwarded 0" out.txt "[worker:0] caught INT"
expect_contains "SIGINT forwarded 1" out.txt "[worker:1] caught INT"
expect_contains "SIGINT reported" err.txt "interrupted by signal 2"

# --- after SIGINT a task may take longer than --grace to finish (a step, a
# checkpoint); a second SIGINT kills every task at once.
checks=$((checks + 1))
# (`timeout --foreground` hands each signal to the launcher once; without it
# timeout also signals its whole group.)
timeout --foreground 30 "$DFLOW" launch -n 1 --grace 1 -- \
  bash -c 'trap "sleep 2; echo saved; exit 0" INT; echo ready; sleep 60 & wait' > out.txt 2> err.txt &
launcher=$!
for _ in $(seq 100); do grep -q ready out.txt && break; sleep 0.1; done
kill -INT "$launcher"
wait "$launcher"
expect_contains "a slow stop is waited for" out.txt "[worker:0] saved"
checks=$((checks + 1))
timeout --foreground 30 "$DFLOW" launch -n 1 -- bash -c 'trap "" INT; echo ready; sleep 60' > out.txt 2> err.txt &
launcher=$!
for _ in $(seq 100); do grep -q ready out.txt && break; sleep 0.1; done
start=$SECONDS
kill -INT "$launcher"
sleep 1.5  # (copies of one signal within a second count once)
kill -INT "$launcher"
wait "$launcher"
((SECONDS - start < 10)) || fail "a second SIGINT did not kill the tasks at once"
expect_contains "second signal" err.txt "a second signal: killing every task"

# --- bad arguments
expect_error "no workers" "-n must be at least 1, got 0" launch -n 0 -- true
expect_error "too many workers" "-n must be at most 256, got 100000" launch -n 100000 -- true
expect_error "ps strategy without ps" "--strategy ps needs at least one parameter server" launch -n 2 --strategy ps -- true
expect_error "ring with ps" "--strategy ring takes no parameter servers, got --ps 1" launch -n 2 --ps 1 --strategy ring -- true
expect_error "unknown strategy" "unknown --strategy 'star' (expected ps or ring)" launch -n 2 --strategy star -- true
expect_error "ports" "ports 65535..65536 are not all in 1..65535" launch -n 2 --base-port 65535 -- true
expect_error "no program" "no program to run (give it after --)" launch -n 2
expect_error "negative failure wait" "--failure-wait must be >= 0, got -1" launch -n 2 --failure-wait -1 -- true
expect_error "model parts" "--model-parts must be 0 to 8, got 9" launch -n 2 --model-parts 9 -- true

cli_summary
