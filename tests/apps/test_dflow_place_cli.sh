#!/usr/bin/env bash
# End-to-end tests of `dflow place` and `dflow partition` on a small graph
# and cluster: where nodes go and why, the partition files, and that bad
# input exits 1 with "dflow: error: ...". Usage: test_dflow_place_cli.sh PATH/TO/dflow
set -u
DFLOW=${1:?usage: $0 PATH/TO/dflow}
source "$(dirname "$(readlink -f "$0")")/cli_checks.sh"

# A variable on the parameter server, updated from a worker's result.
cat > g.json << 'EOF'
{"format": "dflow.graph/1", "nodes": [
  {"name": "w", "op": "VariableV2", "device": "/job:ps", "attrs": {"dtype": "float32", "shape": [2, 2]}},
  {"name": "x", "op": "Const", "device": "/job:worker/task:1", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [2, 2], "values": [1, 2, 3, 4]}}},
  {"name": "y", "op": "MatMul", "device": "/job:worker/task:1", "inputs": ["x", "w"]},
  {"name": "update", "op": "AssignAdd", "inputs": ["w", "y"]},
  {"name": "done", "op": "NoOp", "device": "/job:worker/task:0", "inputs": ["^update"]}
]}
EOF
cat > cluster.json << 'EOF'
{"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"], "ps": ["127.0.0.1:2224"]}}
EOF
PS=/job:ps/replica:0/task:0/device:CPU:0
W1=/job:worker/replica:0/task:1/device:CPU:0

# --- dflow place
expect_ok "place" place g.json --cluster cluster.json
expect_contains "place: requested" out.txt "y (MatMul) -> $W1: MatMul 'y' requests '/job:worker/task:1'"
expect_contains "place: colocated" out.txt "update (AssignAdd) -> $PS: VariableV2 'w' requests '/job:ps'; in the colocation group [w, update] of variable 'w'"
expect_contains "place: estimate" out.txt "estimated step time:"
expect_ok "place --json" place g.json --cluster cluster.json --json
checks=$((checks + 1))
python3 - out.txt << EOF || fail "place --json is not the expected JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
devices = {n["name"]: n["device"] for n in doc["nodes"]}
assert devices["update"] == "$PS", devices
assert len(doc["devices"]) == 3, doc["devices"]
EOF
DFLOW_CLUSTER=$(cat cluster.json) "$DFLOW" place g.json > env.txt 2>&1 || fail "place with DFLOW_CLUSTER failed: $(cat env.txt)"
expect_contains "place from DFLOW_CLUSTER" env.txt "update (AssignAdd) -> $PS"
expect_ok "place --devices" place g.json --soft-placement --devices "/job:ps/replica:0/task:0/device:CPU:0,/job:worker/replica:0/task:0/device:CPU:0,/job:worker/replica:0/task:1/device:CPU:0"
expect_contains "place --devices" out.txt "w (VariableV2) -> $PS"

# --- dflow partition
expect_ok "partition" partition g.json --cluster cluster.json --out parts
for f in ps.0.CPU.0.json ps.0.CPU.0.dot worker.0.CPU.0.json worker.1.CPU.0.json worker.1.CPU.0.dot \
         partitions.dot placement.json; do
  checks=$((checks + 1))
  [[ -s parts/$f ]] || fail "partition did not write parts/$f"
done
expect_contains "partition summary" out.txt "$PS: "
expect_contains "send in worker 1" parts/worker.1.CPU.0.json '"op":"_Send"'
expect_contains "recv on ps" parts/ps.0.CPU.0.json '"tensor_name":"y:0"'
expect_contains "control dummy on ps" parts/ps.0.CPU.0.json '"tensor_name":"^update"'
expect_contains "combined dot cut edge" parts/partitions.dot 'label="y:0"'
# Each partition file is a graph dflow can load again.
expect_ok "dot of a partition" dot parts/worker.0.CPU.0.json
expect_contains "worker 0 receives the control dummy" out.txt "_Recv"

# --- bad input
expect_error "no devices" "no devices: give --cluster FILE or --devices LIST" place g.json
expect_error "both sources" "give --cluster or --devices, not both" place g.json --cluster cluster.json --devices /device:CPU:0
expect_error "missing cluster" "cannot open 'nope.json'" place g.json --cluster nope.json
echo '{"cluster": {"worker": ["127.0.0.1:99999"]}}' > badport.json
expect_error "bad port" "badport.json: cluster.worker[0]: address '127.0.0.1:99999' has a bad port" \
  place g.json --cluster badport.json
expect_error "request not in cluster" "VariableV2 'w' requests device '/job:ps' but no device matches it" \
  place g.json --devices /job:worker/replica:0/task:0/device:CPU:0,/job:worker/replica:0/task:1/device:CPU:0
expect_error "partial device in list" "device '/job:worker' is not a full device name" place g.json --devices /job:worker
expect_error "partition needs out" "--out" partition g.json --cluster cluster.json

# --- dflow run --show-placement and dflow place --profile (measured node times)
# Two element-wise ops reading one 1 MB feed: by the FLOP estimate each takes
# ~26 us and shipping the feed to the other device ~105 us, so they share one.
cat > readers.json << 'EOF'
{"format": "dflow.graph/1", "nodes": [
  {"name": "dims", "op": "Const", "attrs": {"dtype": "int32",
     "value": {"dtype": "int32", "shape": [2], "values": [512, 512]}}},
  {"name": "one", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [], "values": [1]}}},
  {"name": "ones", "op": "Fill", "inputs": ["dims", "one"]},
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [512, 512]}},
  {"name": "a", "op": "Exp", "inputs": ["x"]},
  {"name": "b", "op": "Log", "inputs": ["x"]}
]}
EOF
C0=/job:localhost/replica:0/task:0/device:CPU:0
C1=/job:localhost/replica:0/task:0/device:CPU:1
expect_ok "make a 1 MB feed" run readers.json --fetch ones --out feeds
expect_ok "run --show-placement" run readers.json --feed x=feeds/ones.npy --fetch a --fetch b \
  --devices $C0,$C1 --threads 1 --show-placement --trace step.json
expect_contains "show-placement: a" out.txt "a (Exp) -> $C0: cost model: finishes at"
expect_contains "show-placement: b stays with a" out.txt "b (Log) -> $C0: cost model: finishes at"
expect_ok "run --show-placement, one device" run readers.json --feed x=feeds/ones.npy --fetch a \
  --show-placement
expect_contains "show-placement: the only device" out.txt "a (Exp) -> /device:CPU:0: the only device"
expect_ok "place --profile with a real trace" place readers.json --devices $C0,$C1 --profile step.json
expect_contains "place --profile: measured" out.txt "(Exp) -> "
expect_contains "place --profile: measured" out.txt ": cost model (measured "
expect_ok "profile --trace" profile readers.json --feed x=feeds/ones.npy --fetch a --steps 2 \
  --trace mean.json
expect_contains "profile --trace: written" out.txt "mean step written to mean.json"
expect_ok "place --profile with a mean step" place readers.json --devices $C0,$C1 --profile mean.json
expect_contains "place --profile with a mean step: measured" out.txt "a (Exp) -> $C0: cost model (measured "
# A profile in which each op takes 10 ms: waiting 10 ms for the first one
# placed (b) is worse than shipping the feed, so a moves to the other device.
cat > slow.json << EOF
{"traceEvents": [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "$C0"}},
  {"name": "a", "cat": "Exp", "ph": "X", "ts": 0, "dur": 10000, "pid": 0, "tid": 0},
  {"name": "b", "cat": "Log", "ph": "X", "ts": 0, "dur": 10000, "pid": 0, "tid": 0}]}
EOF
expect_ok "place --profile" place readers.json --devices $C0,$C1 --profile slow.json
expect_contains "place --profile: b measured" out.txt "b (Log) -> $C0: cost model (measured 10000 us)"
expect_contains "place --profile: a moves" out.txt "a (Exp) -> $C1: cost model (measured 10000 us)"
expect_error "missing profile" "nope.json" place readers.json --devices $C0,$C1 --profile nope.json
echo '{"events": []}' > notrace.json
expect_error "not a trace" "profile 'notrace.json' has no traceEvents list" \
  place readers.json --devices $C0,$C1 --profile notrace.json
expect_error "run --devices bad" "CPU" run readers.json --fetch ones --devices CPU

cli_summary
