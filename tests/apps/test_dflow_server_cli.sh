#!/usr/bin/env bash
# `dflow server`: bad arguments exit 1 with "dflow: error: ..." naming what
# was wrong; a good one serves until SIGTERM, then exits 0, and warns when
# --bind leaves loopback; `dflow run --remote` runs a graph on it.
# Usage: test_dflow_server_cli.sh PATH/TO/dflow
set -u
DFLOW=${1:?usage: $0 PATH/TO/dflow}
source "$(dirname "$(readlink -f "$0")")/cli_checks.sh"

# A free loopback port: bind port 0 and read back what the kernel chose.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "{\"cluster\": {\"worker\": [\"127.0.0.1:$port\"]}}" > cluster.json

expect_error "no cluster" "needs --cluster FILE or DFLOW_CLUSTER" server --job worker --task 0
expect_error "missing file" "cannot open 'nope.json'" server --cluster nope.json --job worker --task 0
expect_error "no job" "needs --job" server --cluster cluster.json --task 0
expect_error "task out of range" "no task /job:worker/replica:0/task:3" server --cluster cluster.json --job worker --task 3
expect_error "bad --bind" "bad port '99999'" server --cluster cluster.json --job worker --task 0 --bind 127.0.0.1:99999
expect_error "plaintext beyond loopback" "refusing to listen on 192.0.2.1:$port in the clear" \
  server --cluster cluster.json --job worker --task 0 --bind "192.0.2.1:$port"
expect_error "unbindable --bind" "cannot listen on 192.0.2.1:$port" \
  server --cluster cluster.json --job worker --task 0 --bind "192.0.2.1:$port" --insecure
expect_contains "--insecure warns" err.txt "WARNING: listening on 192.0.2.1:$port without CURVE"

# Serves, then stops cleanly on SIGTERM (within 5 s).
checks=$((checks + 1))
"$DFLOW" server --cluster cluster.json --job worker --task 0 2> serve.txt &
pid=$!
for _ in $(seq 50); do grep -q "listening on 127.0.0.1:$port" serve.txt && break; sleep 0.1; done
kill -TERM "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill -KILL "$pid"
  fail "dflow server did not stop within 5 s of SIGTERM"
else
  wait "$pid" || fail "dflow server exited $? on SIGTERM: $(cat serve.txt)"
fi
expect_contains "serving" serve.txt "task /job:worker/replica:0/task:0 listening on 127.0.0.1:$port"
DFLOW_CLUSTER="{\"cluster\": {\"worker\": [\"127.0.0.1:$port\"]}, \"task\": {\"type\": \"worker\", \"index\": 5}}" \
  expect_error "task from DFLOW_CLUSTER" "task.index 5 is out of range" server

# `dflow run --remote`: the graph runs on the server's task, with the same
# results, placement and trace as a local run would show for that device.
cat > g.json << 'EOF'
{"format": "dflow.graph/1", "seed": 0, "nodes": [
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [3]}},
  {"name": "two", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [3], "values": [2, 2, 2]}}},
  {"name": "y", "op": "Mul", "inputs": ["x", "two"], "device": "/job:worker/task:0"}
]}
EOF
/usr/bin/python3 -c 'import numpy; numpy.save("x.npy", numpy.array([1, 2, 3], dtype=numpy.float32))'
"$DFLOW" server --cluster cluster.json --job worker --task 0 2> serve.txt &
pid=$!
for _ in $(seq 50); do grep -q "listening on 127.0.0.1:$port" serve.txt && break; sleep 0.1; done
expect_ok "run --remote" run g.json --remote "zmq://127.0.0.1:$port" --feed x=x.npy --fetch y --out o \
  --trace t.json --show-placement
expect_contains "remote result" out.txt "y: float32[3] [2 4 6]"
expect_contains "remote placement" out.txt "/job:worker/replica:0/task:0/device:CPU:0"
expect_contains "remote trace" t.json "/job:worker/replica:0/task:0/device:CPU:0"
checks=$((checks + 1))
/usr/bin/python3 -c 'import numpy, sys; sys.exit(0 if (numpy.load("o/y.npy") == [2, 4, 6]).all() else 1)' ||
  fail "run --remote wrote the wrong o/y.npy"
expect_ok "profile --remote" profile g.json --remote "zmq://127.0.0.1:$port" --feed x=x.npy --fetch y --steps 3 \
  --trace p.json
expect_contains "remote profile" out.txt "mean of 3 traced steps"
expect_contains "remote profile's trace" p.json "/job:worker/replica:0/task:0/device:CPU:0"
expect_error "local, node on a task it lacks" "requests device '/job:worker/task:0' but this session has only" \
  run g.json --feed x=x.npy --fetch y
expect_ok "local with soft placement" run g.json --feed x=x.npy --fetch y --soft-placement
expect_contains "local result" out.txt "y: float32[3] [2 4 6]"
expect_error "bad --remote" "session target 'http://127.0.0.1:1' is not of the form zmq://host:port" \
  run g.json --remote http://127.0.0.1:1 --feed x=x.npy --fetch y
expect_error "missing GPU" "no GPU is visible for /device:GPU:7" \
  run g.json --device /device:GPU:7 --feed x=x.npy --fetch y
# A server survives anything a client sends: a Range of 2^61 int64 elements
# (it used to segfault the server) fails the step naming the node, and the
# server still runs the next graph.
cat > range.json << 'EOF'
{"format": "dflow.graph/1", "nodes": [
  {"name": "limit", "op": "Placeholder", "attrs": {"dtype": "int64", "shape": []}},
  {"name": "zero", "op": "Const", "attrs": {"dtype": "int64", "value": {"dtype": "int64", "shape": [], "values": [0]}}},
  {"name": "one", "op": "Const", "attrs": {"dtype": "int64", "value": {"dtype": "int64", "shape": [], "values": [1]}}},
  {"name": "r", "op": "Range", "inputs": ["zero", "limit", "one"], "device": "/job:worker/task:0"}
]}
EOF
/usr/bin/python3 -c 'import numpy; numpy.save("limit.npy", numpy.array(2**61, dtype=numpy.int64))'
expect_error "remote Range of 2^61 elements" "has too many elements" \
  run range.json --remote "zmq://127.0.0.1:$port" --feed limit=limit.npy --fetch r
expect_ok "the server still serves" run g.json --remote "zmq://127.0.0.1:$port" --feed x=x.npy --fetch y
expect_contains "result after the hostile graph" out.txt "y: float32[3] [2 4 6]"
kill -TERM "$pid"
wait "$pid" 2> /dev/null
cli_summary
