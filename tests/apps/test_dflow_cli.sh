#!/usr/bin/env bash
# End-to-end tests of the `dflow` tool: ops listing, run (feeds, fetches,
# .npy output, trace), dot, and that every bad input exits 1 with
# "dflow: error: ...". Usage: test_dflow_cli.sh PATH/TO/dflow
# numpy (python3-numpy) is used where present to cross-check .npy files.
set -u
DFLOW=${1:?usage: $0 PATH/TO/dflow}
source "$(dirname "$(readlink -f "$0")")/cli_checks.sh"

NUMPY_PYTHON=""
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import numpy' 2> /dev/null; then NUMPY_PYTHON=$p; break; fi
done
JSON_PYTHON=${NUMPY_PYTHON:-python3}

# A graph with only state ops: layer/sum = x + bias, through a variable.
cat > g.json << 'EOF'
{"format": "dflow.graph/1", "seed": 0, "nodes": [
  {"name": "layer/sum", "op": "AssignAdd", "inputs": ["layer/acc", "layer/bias", "^layer/init"]},
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 3]}},
  {"name": "layer/acc", "op": "VariableV2", "attrs": {"dtype": "float32", "shape": [2, 3]}},
  {"name": "layer/init", "op": "Assign", "inputs": ["layer/acc", "x"]},
  {"name": "layer/bias", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [2, 3], "values": [1, 2, 3, 4, 5, 6]}}},
  {"name": "ints", "op": "Const", "attrs": {"dtype": "int64",
     "value": {"dtype": "int64", "shape": [2, 3], "values": [0, 10, 20, 30, 40, 50]}}},
  {"name": "xs", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [2, 3], "values": [0, 10, 20, 30, 40, 50]}}},
  {"name": "wide", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [2, 4], "values": [0, 0, 0, 0, 0, 0, 0, 0]}}}
]}
EOF

# --- --version, and defaults in --help
expect_ok "--version" --version
checks=$((checks + 1))
grep -Eq '^dflow [0-9]+\.[0-9]+\.[0-9]+$' out.txt || fail "--version should print 'dflow X.Y.Z', got: $(cat out.txt)"
expect_ok "launch --help" launch --help
expect_contains "launch --help shows a default" out.txt "--base-port INT=2222"
# A default the help says in words is not followed by the stored placeholder.
expect_ok "run --help" run --help
expect_contains "run --help says the threads' default" out.txt "Worker threads (default: one per core)"
checks=$((checks + 1))
grep -qF -- "--threads INT:0 to 1024=" out.txt && fail "run --help shows the threads' placeholder: $(grep -F -- --threads out.txt)"

# --- dflow ops
expect_ok "ops" ops
expect_contains "ops lists AssignAdd" out.txt "AssignAdd(ref: ref T, value: T) -> (output_ref: T)"
expect_contains "ops shows attrs" out.txt "attr use_locking: bool = false"
expect_ok "ops --json" ops --json
checks=$((checks + 1))
"$JSON_PYTHON" - out.txt << 'EOF' || fail "ops --json is not the expected JSON"
import json, sys
ops = json.load(open(sys.argv[1]))
names = [op["name"] for op in ops]
assert names == sorted(names), names
for name in ["Const", "Placeholder", "VariableV2", "Assign", "AssignAdd", "AssignSub", "NoOp"]:
    assert name in names, name
for op in ops:
    assert set(op) >= {"name", "signature", "inputs", "outputs", "attrs", "stateful", "gradient",
                       "doc"}, op
by_name = {op["name"]: op for op in ops}
assert by_name["MatMul"]["gradient"] is True and by_name["Less"]["gradient"] is False
assert by_name["Add"]["broadcasts"] is True and by_name["MatMul"]["broadcasts"] is False
placeholder = next(op for op in ops if op["name"] == "Placeholder")
assert placeholder["stateful"] is True
shape = next(a for a in placeholder["attrs"] if a["name"] == "shape")
assert shape == {"name": "shape", "type": "shape", "default": None}, shape
add = next(op for op in ops if op["name"] == "AssignAdd")
assert "bool" not in next(a for a in add["attrs"] if a["name"] == "T")["allowed"]
matmul = by_name["MatMul"]["cpp_builders"]
assert [b["header"] for b in matmul] == ["ops/linalg.h"], matmul
assert matmul[0]["attrs_structs"]["MatMulAttrs"] == ["bool transpose_a = false;", "bool transpose_b = false;"], matmul
assert len(by_name["VariableV2"]["cpp_builders"]) == 2 and by_name["_Send"]["cpp_builders"] == []
# Most ops a graph is built from have a builder.
assert sum(1 for op in ops if op["cpp_builders"]) >= 100
EOF
expect_ok "ops NAME" ops NoOp
expect_contains "ops NAME prints it" out.txt "NoOp() -> ()"
expect_contains "ops NAME prints its C++ builder" out.txt "C++: Node* ops::NoOp(const Scope& scope)  [ops/state.h]"
expect_ok "ops MatMul" ops MatMul
expect_contains "ops shows the builder's attrs struct" out.txt "struct MatMulAttrs {"
expect_ok "ops _Send" ops _Send
expect_contains "ops says when an op has no builder" out.txt 'C++: no builder in ops/; Scope::AddOp("_Send", inputs, attrs) adds it'
expect_error "ops unknown" "unknown op 'Frobnicate'" ops Frobnicate

# --- dflow run: make feeds with dflow itself, then run on them.
expect_ok "run consts" run g.json --fetch xs --fetch ints --fetch wide --out feeds
expect_contains "run prints fetches" out.txt "xs: float32[2,3] [0 10 20 30 40 50] -> feeds/xs.npy"
expect_contains "run prints int fetches" out.txt "ints: int64[2,3] [0 10 20 30 40 50] -> feeds/ints.npy"
expect_ok "run" run g.json --feed x=feeds/xs.npy --fetch layer/sum:0 --fetch x --out out \
  --trace trace.json
expect_contains "run output" out.txt "layer/sum:0: float32[2,3] [1 12 23 34 45 56] -> out/layer_sum_0.npy"
expect_contains "run output" out.txt "x: float32[2,3] [0 10 20 30 40 50] -> out/x.npy"
expect_contains "trace summary" out.txt "time per op:"
expect_contains "trace summary" out.txt "AssignAdd"
expect_ok "profile" profile g.json --feed x=feeds/xs.npy --target layer/sum --warmup 1 --steps 3
expect_contains "profile says what it averaged" out.txt "mean of 3 traced steps after 1 warm-up steps"
expect_contains "profile lists ops" out.txt "time per op:"
expect_contains "profile lists the node" out.txt "layer/sum"
expect_error "profile without work" "nothing to profile" profile g.json
expect_error "profile of a missing node" "layer/nope" profile g.json --target layer/nope
checks=$((checks + 1))
[[ -f out/layer_sum_0.npy && -f out/x.npy && -f trace.json ]] || fail "run did not write its files: $(ls -R)"
checks=$((checks + 1))
cmp -s feeds/xs.npy out/x.npy || fail "fetching a fed tensor changed its .npy bytes"
checks=$((checks + 1))
"$JSON_PYTHON" - trace.json << 'EOF' || fail "trace.json is not a Chrome trace"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
complete = [e for e in events if e["ph"] == "X"]
assert {"layer/sum", "layer/init"} <= {e["name"] for e in complete}, complete
assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in complete)
EOF
# Outputs read back as feeds (dflow's own .npy files round-trip).
expect_ok "run on own output" run g.json --feed x=out/layer_sum_0.npy --fetch layer/sum --out out2
expect_contains "run on own output" out.txt "layer/sum: float32[2,3] [2 14 26 38 50 62] -> out2/layer_sum.npy"
expect_ok "target only" run g.json --feed x=feeds/xs.npy --target layer/init
expect_ok "options before the graph" run --feed x=feeds/xs.npy --fetch x g.json --threads 1
expect_contains "options before the graph" out.txt "x: float32[2,3] [0 10 20 30 40 50]"

# A fetch of output 1 of a multi-output op (when the array ops are built in).
if "$DFLOW" ops Split > /dev/null 2>&1; then
  cat > split.json << 'EOF'
{"format": "dflow.graph/1", "nodes": [
  {"name": "axis", "op": "Const", "attrs": {"dtype": "int32",
     "value": {"dtype": "int32", "shape": [], "values": [0]}}},
  {"name": "v", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2, 3]}},
  {"name": "parts/split", "op": "Split", "inputs": ["axis", "v"], "attrs": {"num_split": 2}}
]}
EOF
  expect_ok "multi-output fetch" run split.json --feed v=feeds/xs.npy --fetch parts/split:1 --out split
  expect_contains "multi-output fetch" out.txt \
    "parts/split:1: float32[1,3] [30 40 50] -> split/parts_split_1.npy"
fi

# --- dflow dot
expect_ok "dot" dot g.json
expect_contains "dot header" out.txt "digraph dflow {"
expect_contains "dot node" out.txt '"layer/sum" [label="layer/sum\nAssignAdd"];'
expect_contains "dot edge" out.txt '"x" -> "layer/init" [label="float32[?,3]"];'
expect_contains "dot control edge" out.txt '"layer/init" -> "layer/sum" [style=dashed];'
expect_contains "dot scope cluster" out.txt 'subgraph "cluster_layer" {'
expect_ok "dot --collapse-scopes" dot g.json --collapse-scopes
expect_contains "collapsed scope box" out.txt '"layer" [label="layer\n4 ops: Assign, AssignAdd, Const, ...", shape=box3d];'
expect_contains "edge into a collapsed scope" out.txt '"x" -> "layer" [label="float32[?,3]"];'
checks=$((checks + 1))
! grep -q 'layer/' out.txt || fail "--collapse-scopes still draws nodes inside the scope"
expect_ok "dot --only" dot g.json --only layer/
expect_contains "an outside input as a dashed ellipse" out.txt '"x" [label="x\nPlaceholder", shape=ellipse, style=dashed];'
checks=$((checks + 1))
! grep -q '"ints"' out.txt || fail "--only drew a node outside the prefix"
expect_ok "dot --no-shapes" dot g.json --no-shapes
expect_contains "an edge without its shape" out.txt '"x" -> "layer/init";'
# Valid DOT: Graphviz renders every variant (when installed; ./dev installs it).
if command -v dot > /dev/null; then
  for flags in "" "--collapse-scopes" "--only layer/" "--no-shapes"; do
    checks=$((checks + 1))
    # shellcheck disable=SC2086
    "$DFLOW" dot g.json $flags | dot -Tsvg > render.svg 2> render.err && [[ -s render.svg ]] ||
      fail "Graphviz did not render 'dflow dot $flags': $(cat render.err)"
  done
fi

# --- numpy cross-checks
if [[ -n $NUMPY_PYTHON ]]; then
  checks=$((checks + 1))
  "$NUMPY_PYTHON" - << 'EOF' || fail "numpy cross-check"
import numpy as np
np.save("np_x.npy", np.random.RandomState(0).randn(2, 3).astype(np.float32))
EOF
  expect_ok "run numpy feed" run g.json --feed x=np_x.npy --fetch layer/sum --fetch x --out npout
  checks=$((checks + 1))
  "$NUMPY_PYTHON" - << 'EOF' || fail "numpy reads dflow's outputs with the right values"
import numpy as np
x = np.load("np_x.npy")
out = np.load("npout/layer_sum.npy")
assert out.dtype == np.float32 and out.shape == (2, 3), (out.dtype, out.shape)
assert np.array_equal(out, x + np.arange(1, 7, dtype=np.float32).reshape(2, 3)), out
assert np.array_equal(np.load("npout/x.npy"), x)
EOF
else
  echo "note: numpy not found; skipping the numpy cross-checks"
fi

# --- bad input: exit 1 and a message
echo "not json" > bad.json
echo "not npy" > bad.npy
expect_error "no subcommand" "subcommand is required"
expect_error "unknown subcommand" "" frobnicate
expect_error "unknown option" "--bogus" run g.json --bogus --fetch x
expect_error "missing graph file" "cannot open 'missing.json'" run missing.json --fetch x
expect_error "graph not JSON" "'bad.json': not valid JSON: parse error at line 1" run bad.json --fetch x
expect_error "bad npy" "'bad.npy': not a .npy file (bad magic)" run g.json --feed x=bad.npy --fetch x
expect_error "missing npy" "cannot open 'missing.npy'" run g.json --feed x=missing.npy --fetch x
expect_error "feed without =" "--feed 'feeds/xs.npy': expected NAME=FILE.npy" \
  run g.json --feed feeds/xs.npy --fetch x
expect_error "feed with empty name" "expected NAME=FILE.npy" run g.json --feed =feeds/xs.npy --fetch x
expect_error "unknown feed" "feed 'nope': no node named 'nope'" run g.json --feed nope=feeds/xs.npy --fetch x
expect_error "unknown fetch" "fetch 'nope': no node named 'nope'" run g.json --feed x=feeds/xs.npy --fetch nope
expect_error "unknown target" "target 'nope'" run g.json --feed x=feeds/xs.npy --target nope
expect_error "bad fetch index" "Placeholder 'x' has only 1 output(s)" run g.json --feed x=feeds/xs.npy --fetch x:3
expect_error "shape mismatch" "feed 'x' expects shape [?,3], got float32[2,4]" \
  run g.json --feed x=feeds/wide.npy --fetch x
expect_error "dtype mismatch" "feed 'x' expects float32[?,3], got int64[2,3]" \
  run g.json --feed x=feeds/ints.npy --fetch x
expect_error "unfed placeholder" "placeholder 'x'" run g.json --fetch layer/sum
expect_error "nothing to run" "nothing to run" run g.json --feed x=feeds/xs.npy
expect_error "fed twice" "'x' is fed twice" run g.json --feed x=feeds/xs.npy --feed x=feeds/xs.npy --fetch x
expect_error "fetch file clash" "would both be written to layer_sum.npy" \
  run g.json --feed x=feeds/xs.npy --fetch layer/sum --fetch layer:sum --out clash
expect_error "out is a file" "--out 'g.json': cannot create directory" \
  run g.json --feed x=feeds/xs.npy --fetch x --out g.json
expect_error "trace dir missing" "--trace 'no/such/t.json'" \
  run g.json --feed x=feeds/xs.npy --fetch x --trace no/such/t.json
expect_error "bad threads" "--threads" run g.json --feed x=feeds/xs.npy --fetch x --threads -2
expect_error "dot missing file" "cannot open 'missing.json'" dot missing.json
expect_error "dot bad graph" "not valid JSON" dot bad.json
# --- dflow freeze: y = x * w with w a variable initialised to [1, 2, 3]
cat > v.json << 'EOF'
{"format": "dflow.graph/1", "seed": 0, "nodes": [
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 3]}},
  {"name": "w", "op": "VariableV2", "attrs": {"dtype": "float32", "shape": [3]}},
  {"name": "w/value", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [3], "values": [1, 2, 3]}}},
  {"name": "w/init", "op": "Assign", "inputs": ["w", "w/value"]},
  {"name": "y", "op": "Mul", "inputs": ["x", "w"]}
]}
EOF
expect_ok "freeze --init" freeze v.json --output y --init -o frozen.json
expect_contains "freeze reports" out.txt "froze v.json to frozen.json: 3 nodes"
checks=$((checks + 1))
"$JSON_PYTHON" - frozen.json << 'EOF' || fail "frozen.json does not hold x, w as a Const, y"
import json, sys
nodes = {n["name"]: n for n in json.load(open(sys.argv[1]))["nodes"]}
assert set(nodes) == {"x", "w", "y"}, nodes
assert nodes["w"]["op"] == "Const", nodes["w"]
assert nodes["w"]["attrs"]["value"]["values"] == [1, 2, 3], nodes["w"]
EOF
expect_error "freeze without values" "--init, --checkpoint FILE" freeze v.json --output y -o f.json
expect_error "freeze without outputs" "at least one --output" freeze v.json --init -o f.json
expect_error "freeze a missing output" "nope" freeze v.json --output nope --init -o f.json
# --- dflow freeze --checkpoint: a plain safetensors file (as PyTorch writes
# them: no dflow checksums) gives w the values [4, 5, 6]
"$JSON_PYTHON" - << 'EOF'
import json, struct
def write(path, tensors):
    header, data = {}, b""
    for name, (dtype, fmt, shape, values) in tensors.items():
        raw = struct.pack("<%d%s" % (len(values), fmt), *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    blob = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(blob)) + blob + data)
write("w456.safetensors", {"w": ("F32", "f", [3], [4, 5, 6])})
write("w_wrong_shape.safetensors", {"w": ("F32", "f", [2], [4, 5])})
write("other.safetensors", {"v": ("F32", "f", [3], [4, 5, 6])})
EOF
check_frozen_w() {  # check_frozen_w FILE EXPECTED_VALUES (a JSON list)
  checks=$((checks + 1))
  "$JSON_PYTHON" - "$1" "$2" << 'EOF' || fail "$1: w is not a Const holding $2"
import json, sys
nodes = {n["name"]: n for n in json.load(open(sys.argv[1]))["nodes"]}
assert nodes["w"]["op"] == "Const", nodes["w"]
assert nodes["w"]["attrs"]["value"]["values"] == json.loads(sys.argv[2]), nodes["w"]
EOF
}
expect_ok "freeze --checkpoint" freeze v.json --output y --checkpoint w456.safetensors -o frozen_ckpt.json
check_frozen_w frozen_ckpt.json "[4, 5, 6]"
# --init, then --checkpoint: the checkpoint's values win
expect_ok "freeze --init --checkpoint" freeze v.json --output y --init --checkpoint w456.safetensors \
  -o frozen_both.json
check_frozen_w frozen_both.json "[4, 5, 6]"
expect_error "freeze: checkpoint of another model" "variable 'w' is not in the checkpoint" \
  freeze v.json --output y --checkpoint other.safetensors -o f.json
expect_error "freeze: checkpoint shape differs" "has shape [3] in the graph but [2] in the checkpoint" \
  freeze v.json --output y --checkpoint w_wrong_shape.safetensors -o f.json
head -c 20 w456.safetensors > truncated.safetensors
expect_error "freeze: truncated checkpoint" "truncated.safetensors" \
  freeze v.json --output y --checkpoint truncated.safetensors -o f.json
expect_error "freeze: missing checkpoint" "no_such.safetensors" \
  freeze v.json --output y --checkpoint no_such.safetensors -o f.json
checks=$((checks + 1))
[[ ! -e f.json ]] || fail "a failed freeze wrote f.json"

# --- hostile inputs: errors, never a crash or a read without end
expect_error "dot of a device file" "not a regular file" dot /dev/zero
"$JSON_PYTHON" -c 'import sys; d = 100000
sys.stdout.write("{\"format\": \"dflow.graph/1\", \"seed\": " + "[" * d + "]" * d + ", \"nodes\": []}")' \
  > deep.json
for cmd in dot place; do
  expect_error "$cmd of JSON nested 100,000 deep" "nested more than 256 levels" $cmd deep.json
done
cat > huge.json << 'EOF'
{"format": "dflow.graph/1", "nodes": [
  {"name": "e", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [0], "values": []}}},
  {"name": "s", "op": "Const", "attrs": {"dtype": "int64",
     "value": {"dtype": "int64", "shape": [2], "values": [4294967296, 4294967296]}}},
  {"name": "r", "op": "Reshape", "inputs": ["e", "s"]},
  {"name": "m", "op": "MatMul", "inputs": ["r", "r"]}
]}
EOF
expect_error "run of a shape that overflows" "Reshape 'r': shape [4294967296,4294967296] has too many elements" \
  run huge.json --fetch m
expect_error "place of a shape that overflows" "Reshape 'r'" place huge.json

# --- plot: two runs' metrics.jsonl (a resumed run repeats step 3) as curves
mkdir -p run-a run-b
for s in 1 2 3 3 4; do echo "{\"step\": $s, \"time\": $s.5, \"loss\": $((10 - s)), \"mae\": 0.$s, \"img_per_s\": 5}"; done > run-a/metrics.jsonl
for s in 1 2 3; do echo "{\"step\": $s, \"time\": 1, \"loss\": $((12 - s)), \"mae\": 0.$s, \"img_per_s\": 4}"; done > run-b/metrics.jsonl
checks=$((checks + 1))
"$DFLOW" plot run-a run-b -o curves.png --smooth 2 > out.txt 2> err.txt || fail "plot: $(cat err.txt)"
[[ $(head -c 4 curves.png | tail -c 3) == PNG ]] || fail "plot wrote no PNG"
expect_contains "plot says what it drew" out.txt "3 metric(s) of 2 run(s) in curves.png"
checks=$((checks + 1))
"$DFLOW" plot run-a -o curves.svg --metric loss > /dev/null 2>&1 && grep -q "<svg" curves.svg || fail "plot to SVG"
expect_error "plot of a run without metrics" "run-c/metrics.jsonl is missing" plot run-c -o c.png
expect_error "plot to another format" "-o must end in .png or .svg" plot run-a -o c.jpg
mkdir plot-tmp
TMPDIR=$PWD/plot-tmp expect_error "plot of a metric a run lacks" "has no metric 'box'" plot run-a --metric box -o c.png
checks=$((checks + 1))
[[ -z $(ls -A plot-tmp) ]] || fail "a failed plot left its scratch files: $(ls -A plot-tmp)"

checks=$((checks + 1))
"$DFLOW" --help > out.txt 2>&1 || fail "--help exits non-zero"

cli_summary
