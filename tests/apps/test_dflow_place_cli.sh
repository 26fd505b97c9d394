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

cli_summary
