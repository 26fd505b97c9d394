#!/usr/bin/env bash
# End-to-end test of `dflow quantize`: a frozen two-layer conv graph
# (conv 3x3 + bias + ReLU6, pointwise + bias) calibrated on .npy batches
# that `dflow run` writes becomes an int8 graph whose layers pass codes to
# each other; `dflow run` runs it with the float graph's names and gets
# nearly the float outputs; the report names each layer; bad input exits 1
# naming what is wrong. Usage: test_dflow_quantize.sh PATH/TO/dflow
set -u
DFLOW=${1:?usage: $0 PATH/TO/dflow}
source "$(dirname "$(readlink -f "$0")")/cli_checks.sh"

# near_float DIR: DIR/y.npy holds the 108 values of float_out/y.npy within
# 5% relative RMS error.
near_float() {
  python3 - "$1/y.npy" << 'EOF'
import struct, sys
def npy(path):
    data = open(path, "rb").read()
    header_len = struct.unpack("<H", data[8:10])[0]
    body = data[10 + header_len:]
    return struct.unpack(f"<{len(body) // 4}f", body)
f, q = npy("float_out/y.npy"), npy(sys.argv[1])
assert len(f) == len(q) == 108, (len(f), len(q))
error = (sum((a - b) ** 2 for a, b in zip(f, q)) / sum(a * a for a in f)) ** 0.5
assert error < 0.05, error
EOF
}

# q.json: the float graph; c.json: four calibration inputs and a held-out one, as Consts.
python3 - << 'EOF'
import json, random
random.seed(1)
def values(n, lo, hi): return [round(random.uniform(lo, hi), 4) for _ in range(n)]
def const(name, shape, lo, hi):
    size = 1
    for d in shape: size *= d
    return {"name": name, "op": "Const", "attrs": {"dtype": "float32",
            "value": {"dtype": "float32", "shape": shape, "values": values(size, lo, hi)}}}
nodes = [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [1, 6, 6, 2]}},
    const("w1", [3, 3, 2, 4], -0.5, 0.5), const("b1", [4], -0.1, 0.2),
    {"name": "conv1", "op": "Conv2D", "inputs": ["x", "w1"], "attrs": {"T": "float32"}},
    {"name": "bias1", "op": "BiasAdd", "inputs": ["conv1", "b1"], "attrs": {"T": "float32"}},
    {"name": "relu1", "op": "Relu6", "inputs": ["bias1"], "attrs": {"T": "float32"}},
    const("w2", [1, 1, 4, 3], -0.6, 0.6), const("b2", [3], -0.2, 0.2),
    {"name": "conv2", "op": "Conv2D", "inputs": ["relu1", "w2"], "attrs": {"T": "float32"}},
    {"name": "y", "op": "BiasAdd", "inputs": ["conv2", "b2"], "attrs": {"T": "float32"}},
]
json.dump({"format": "dflow.graph/1", "seed": 0, "nodes": nodes}, open("q.json", "w"))
inputs = [const(f"batch{i}", [1, 6, 6, 2], -1, 1) for i in range(4)] + [const("held_out", [1, 6, 6, 2], -1, 1)]
json.dump({"format": "dflow.graph/1", "seed": 0, "nodes": inputs}, open("c.json", "w"))
EOF
expect_ok "write the calibration batches" run c.json --fetch batch0 --fetch batch1 --fetch batch2 --fetch batch3 \
  --out calib
expect_ok "write the held-out input" run c.json --fetch held_out --out held

expect_ok "quantize" quantize q.json --output y --calibration calib -o q8.json --report report.json
expect_contains "quantize reports the layers" out.txt "quantized 2 of 2 convolutions; wrote q8.json"
expect_contains "the table names the layers" out.txt "pointwise"
checks=$((checks + 1))
python3 - << 'EOF' || fail "report.json or q8.json is not as expected"
import json
layers = json.load(open("report.json"))
assert [l["quantized"] for l in layers] == [True, True], layers
assert layers[0]["kind"] == "conv 3x3/1" and layers[1]["kind"] == "pointwise", layers
assert not layers[0]["input_from_int8"] and layers[1]["input_from_int8"], layers
assert layers[0]["output_range"][0] == 0 and layers[0]["output_range"][1] <= 6, layers
assert all(l["relative_error"] < 0.05 for l in layers), layers
ops = [n["op"] for n in json.load(open("q8.json"))["nodes"]]
assert ops.count("QuantizeV2") == 1 and "Dequantize" not in ops, ops  # the last layer returns float itself
assert ops.count("QuantizedConv2DWithBiasAndDequantize") == 1, ops
assert "Conv2D" not in ops and "_FusedConv2D" not in ops, ops
EOF

# The int8 graph runs under the float graph's names, near its outputs.
expect_ok "run the float graph" run q.json --feed x=held/held_out.npy --fetch y --out float_out
expect_ok "run the int8 graph" run q8.json --feed x=held/held_out.npy --fetch y --out int8_out
checks=$((checks + 1))
near_float int8_out || fail "the int8 graph's y is not near the float graph's"

# --dynamic: no calibration needed; every conv int8 with its input's range at run time.
expect_ok "quantize --dynamic" quantize q.json --output y --dynamic -o dyn.json --report dyn.json.report
expect_contains "dynamic quantizes" out.txt "quantized 2 of 2 convolutions; wrote dyn.json"
expect_contains "dynamic ranges" out.txt "at run time"
expect_ok "run the dynamic graph" run dyn.json --feed x=held/held_out.npy --fetch y --out dyn_out
checks=$((checks + 1))
python3 - << 'EOF' || fail "the dynamic graph or its report is not as expected"
import json
layers = json.load(open("dyn.json.report"))
assert all(l["quantized"] and l["dynamic"] and l["relative_error"] is None for l in layers), layers
ops = [n["op"] for n in json.load(open("dyn.json"))["nodes"]]
assert ops.count("QuantizeV2") == 2 and "Dequantize" not in ops, ops
EOF
checks=$((checks + 1))
near_float dyn_out || fail "the dynamic graph's y is not near the float graph's"
expect_ok "quantize --dynamic with calibration" quantize q.json --output y --dynamic --calibration calib -o dyn2.json \
  --report dyn2.report
checks=$((checks + 1))
python3 -c "
import json
layers = json.load(open('dyn2.report'))
assert all(0 <= l['relative_error'] < 0.05 for l in layers), layers" || fail "--dynamic --calibration: the error"

# --skip keeps a layer float; the percentile calibrator and per-tensor weights run.
expect_ok "quantize --skip" quantize q.json --output y --calibration x=calib -o skip.json --skip relu1
expect_contains "the skipped layer stays float" out.txt "float: skipped (--skip)"
expect_contains "one layer quantized" out.txt "quantized 1 of 2 convolutions"
expect_ok "quantize --calibrator percentile --per-tensor" quantize q.json --output y --calibration calib/batch0.npy \
  --calibrator percentile --percentile 99.9 --per-tensor -o p.json
expect_contains "percentile quantizes" out.txt "quantized 2 of 2 convolutions"

# Bad input, named.
expect_error "no calibration" "--calibration [INPUT=]PATH) or --dynamic" quantize q.json --output y -o f.json
expect_error "no output" "at least one --output" quantize q.json --calibration calib -o f.json
expect_error "a skip that is no layer" "--skip names 'nope'" quantize q.json --output y --calibration calib \
  --skip nope -o f.json
mkdir -p empty
expect_error "a folder without batches" "has no .npy file" quantize q.json --output y --calibration empty -o f.json
expect_error "an input that is not there" "calib/missing.npy" quantize q.json --output y \
  --calibration calib/missing.npy -o f.json
expect_error "batches of another shape" "x" quantize q.json --output y --calibration x=held/held_out.npy \
  --calibration x=calib -o f.json
expect_error "an unknown calibrator" "kl" quantize q.json --output y --calibration calib \
  --calibrator kl -o f.json
expect_ok "quantize --calibrator entropy" quantize q.json --output y --calibration calib --calibrator entropy \
  -o e.json
expect_contains "entropy quantizes" out.txt "quantized 2 of 2 convolutions"
cat > v.json << 'EOF'
{"format": "dflow.graph/1", "seed": 0, "nodes": [
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [1, 6, 6, 2]}},
  {"name": "w", "op": "VariableV2", "attrs": {"dtype": "float32", "shape": [3, 3, 2, 4]}},
  {"name": "y", "op": "Conv2D", "inputs": ["x", "w"], "attrs": {"T": "float32"}}
]}
EOF
expect_error "a graph with variables" "freeze it first" quantize v.json --output y --calibration calib -o f.json

cli_summary
