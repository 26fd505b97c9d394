#!/usr/bin/env bash
# dflow-detect prune end to end on tiny generated data: channel pruning
# rebuilds the network thinner (every layer's channels halved in the
# checkpoint, the channel counts in config.json; SSD-MobileNet,
# SqueezeNet-SSD and RetinaNet) and the pruned run is evaluated and exported
# like any other; L1 unstructured pruning per layer
# and global zeroes exactly the share asked and keeps the pruned weights at
# zero through fine-tuning and a resume, while the others train; bad input
# is named and writes nothing.
# Usage: test_dflow_detect_prune.sh PATH/TO/dflow-detect
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-detect}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"

"$EXE" generate --out "$TMP/data" --images 24 --size 96x96 --classes 3 --max-objects 3 --seed 3 > /dev/null ||
  fail "generate"
"$EXE" train --data "$TMP/data" --out "$TMP/run" --size 64 --width 0.25 --batch 4 --steps 3 --threads 1 \
  --augment none > /dev/null || fail "train"

# Reads a run's latest checkpoint as {name: (shape, [floats])} (float32 tensors only).
cat > "$TMP/tensors.py" <<'PY'
import json, struct
def latest(run):
    return run + "/checkpoints/" + json.load(open(run + "/checkpoints/checkpoint.json"))["latest"]
def tensors(run):
    data = open(latest(run), "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for k, v in header.items():
        if v["dtype"] != "F32":
            continue
        raw = data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
        out[k] = (v["shape"], struct.unpack("<%df" % (len(raw) // 4), raw))
    return out
def weights(t):  # the prunable weights: filters, not optimizer slots or masks
    return {k: v for k, v in t.items() if len(v[0]) >= 2 and "/slots/" not in k and not k.endswith("/prune_mask")}
PY

# --- channels: half of every prunable layer's channels removed, then fine-tuned
"$EXE" prune --checkpoint "$TMP/run" --mode channels --sparsity 0.5 --out "$TMP/thin" --steps 2 --threads 1 \
  > "$TMP/thin.txt" 2>&1 || { cat "$TMP/thin.txt"; fail "prune channels"; }
grep -q "channels at 50%: 22 layers thinned, [0-9]* -> [0-9]* parameters" "$TMP/thin.txt" ||
  { cat "$TMP/thin.txt"; fail "prune channels: summary"; }
PYTHONPATH=$TMP python3 - "$TMP" <<'PY' || fail "prune channels: checkpoint or config"
import json, sys
from tensors import tensors
root = sys.argv[1]
wide, thin = tensors(root + "/run"), tensors(root + "/thin")
config = json.load(open(root + "/thin/config.json"))
assert config["prune"] == "channels" and config["sparsity"] == 0.5, config
assert config["channels"]["stem"] == 4 and config["channels"]["block13/pointwise"] == 128, config["channels"]
assert config["pruned_from"].endswith(".safetensors"), config["pruned_from"]
assert wide["ssd/stem/filter"][0] == [3, 3, 3, 8] and thin["ssd/stem/filter"][0] == [3, 3, 3, 4]
assert thin["ssd/block1/depthwise/filter"][0] == [3, 3, 1, 4]
assert thin["ssd/block1/pointwise/filter"][0] == [1, 1, 4, 8]
assert thin["ssd/head2/classes/filter"][0] == [3, 3, 128, 24]  # input halved, output kept: 6 x (3 + 1)
wide_n = sum(len(v[1]) for k, v in wide.items() if "/slots/" not in k)
thin_n = sum(len(v[1]) for k, v in thin.items() if "/slots/" not in k)
assert thin_n < wide_n / 2, (thin_n, wide_n)
PY
"$EXE" eval --data "$TMP/data" --checkpoint "$TMP/thin" --threads 1 > "$TMP/eval.txt" 2>&1 ||
  { cat "$TMP/eval.txt"; fail "eval of the thinned run"; }
tail -1 "$TMP/eval.txt" | python3 -c "import json, sys; assert 'AP50' in json.load(sys.stdin)" || fail "eval JSON"
"$EXE" export --checkpoint "$TMP/thin" --out "$TMP/thin.json" > /dev/null 2>&1 || fail "export of the thinned run"
"$EXE" export --checkpoint "$TMP/run" --out "$TMP/wide.json" > /dev/null 2>&1 || fail "export of the wide run"
(($(stat -c %s "$TMP/thin.json") < $(stat -c %s "$TMP/wide.json") / 2)) ||
  fail "the thinned graph file is not smaller than half the wide one"

# --sparsity 0: the unpruned control starts from the very weights it was given.
"$EXE" prune --checkpoint "$TMP/run" --mode channels --sparsity 0 --out "$TMP/kept" --steps 0 --threads 1 \
  > "$TMP/kept.txt" 2>&1 || { cat "$TMP/kept.txt"; fail "prune --sparsity 0"; }
grep -q "channels at 0%: every channel kept (the unpruned control), [0-9]* parameters" "$TMP/kept.txt" ||
  { cat "$TMP/kept.txt"; fail "prune --sparsity 0: summary"; }
PYTHONPATH=$TMP python3 - "$TMP" <<'PY' || fail "prune --sparsity 0: the weights changed"
import sys
from tensors import tensors, weights
root = sys.argv[1]
wide, kept = weights(tensors(root + "/run")), weights(tensors(root + "/kept"))
assert wide.keys() == kept.keys() and len(wide) > 20, (sorted(wide), sorted(kept))
for name in wide:
    assert wide[name] == kept[name], name
PY

# The benchmark's CSV row names the pruning.
"$EXE" bench --checkpoint "$TMP/thin" --images "$TMP/data/images" --limit 2 --threads 1 --csv "$TMP/runs.csv" \
  > "$TMP/bench.txt" 2>&1 || { cat "$TMP/bench.txt"; fail "bench of the thinned run"; }
grep -q "ssd-mobilenet width 0.25, channels pruned 50%" "$TMP/runs.csv" || { cat "$TMP/runs.csv"; fail "model_name"; }

# --- unstructured: exactly the share zeroed, kept zero while the rest trains
check_masks() {  # RUN SPARSITY global|layer
  PYTHONPATH=$TMP python3 - "$TMP" "$@" <<'PY'
import sys
from tensors import tensors, weights
root, run, sparsity, scope = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
source, pruned = tensors(root + "/run"), tensors(root + "/" + run)
w = weights(pruned)
assert len(w) == len(weights(source)) > 20, len(w)
total = zeros = 0
moved = False
for name, (shape, values) in w.items():
    mask = pruned[name + "/prune_mask"][1]
    assert all(v == 0 for v, m in zip(values, mask) if m == 0), name + ": a pruned weight is not zero"
    n, z = len(values), sum(1 for m in mask if m == 0)
    if scope == "layer":
        assert z == round(sparsity * n), (name, z, n)
    total, zeros = total + n, zeros + z
    moved = moved or any(a != b for a, b, m in zip(values, source[name][1], mask) if m == 1)
assert zeros == round(sparsity * total), (zeros, total)
assert moved, "the unpruned weights did not train"
PY
}
"$EXE" prune --checkpoint "$TMP/run" --mode l1-unstructured --sparsity 0.5 --out "$TMP/sparse" --steps 3 \
  --threads 1 > "$TMP/sparse.txt" 2>&1 || { cat "$TMP/sparse.txt"; fail "prune l1-unstructured"; }
grep -q "weights are zero, kept zero while training" "$TMP/sparse.txt" || { cat "$TMP/sparse.txt"; fail "summary"; }
check_masks sparse 0.5 layer || fail "l1-unstructured masks"
"$EXE" train --out "$TMP/sparse" --resume --steps 5 --threads 1 > "$TMP/resume.txt" 2>&1 ||
  { cat "$TMP/resume.txt"; fail "resume a pruned run"; }
grep -q "resuming .* at step 3" "$TMP/resume.txt" || { cat "$TMP/resume.txt"; fail "resume: step"; }
check_masks sparse 0.5 layer || fail "l1-unstructured masks after a resume"
"$EXE" prune --checkpoint "$TMP/run" --mode l1-global --sparsity 0.3 --out "$TMP/global" --steps 2 \
  --threads 1 > "$TMP/global.txt" 2>&1 || { cat "$TMP/global.txt"; fail "prune l1-global"; }
check_masks global 0.3 global || fail "l1-global masks"
"$EXE" eval --data "$TMP/data" --checkpoint "$TMP/global" --threads 1 > /dev/null 2>&1 || fail "eval of a masked run"

# --- channels of SqueezeNet-SSD (its fires' concatenations cut at their parts)
# and of RetinaNet (inside the ResNet's blocks and the subnets)
"$EXE" train --data "$TMP/data" --out "$TMP/squeeze" --model ssd-squeezenet --size 64 --batch 2 --steps 1 \
  --threads 1 --augment none > /dev/null 2>&1 || fail "train ssd-squeezenet"
"$EXE" prune --checkpoint "$TMP/squeeze" --mode channels --out "$TMP/squeeze-thin" --steps 1 --threads 1 \
  > "$TMP/squeeze-thin.txt" 2>&1 || { cat "$TMP/squeeze-thin.txt"; fail "prune ssd-squeezenet channels"; }
grep -q "channels at 50%: 35 layers thinned" "$TMP/squeeze-thin.txt" ||
  { cat "$TMP/squeeze-thin.txt"; fail "prune ssd-squeezenet: summary"; }
"$EXE" train --data "$TMP/data" --out "$TMP/retina" --model retinanet-resnet18 --size 64 --batch 2 --steps 1 \
  --threads 1 --augment none > /dev/null 2>&1 || fail "train retinanet-resnet18"
"$EXE" prune --checkpoint "$TMP/retina" --mode channels --sparsity 0.25 --out "$TMP/retina-thin" --steps 1 \
  --threads 1 > "$TMP/retina-thin.txt" 2>&1 || { cat "$TMP/retina-thin.txt"; fail "prune retinanet channels"; }
grep -q "channels at 25%: 16 layers thinned" "$TMP/retina-thin.txt" ||
  { cat "$TMP/retina-thin.txt"; fail "prune retinanet: summary"; }
PYTHONPATH=$TMP python3 - "$TMP" <<'PY' || fail "prune ssd-squeezenet/retinanet: checkpoints"
import sys
from tensors import tensors
root = sys.argv[1]
sq = tensors(root + "/squeeze-thin")
assert sq["ssd/squeezenet/fire2/squeeze/filter"][0] == [1, 1, 32, 8], sq["ssd/squeezenet/fire2/squeeze/filter"][0]
assert sq["ssd/squeezenet/fire2/expand3x3/filter"][0] == [3, 3, 8, 32]
assert sq["ssd/squeezenet/fire3/squeeze/filter"][0] == [1, 1, 64, 8]  # both expands' halves
assert sq["ssd/head1/boxes/depthwise/filter"][0] == [3, 3, 1, 256]    # fire8: 128 + 128
assert sq["ssd/head6/classes/filter"][0] == [1, 1, 128, 24]           # extra5's expand halved, output kept
rn = tensors(root + "/retina-thin")
assert rn["retinanet/resnet/layer1/block0/conv1/filter"][0] == [3, 3, 64, 48]
assert rn["retinanet/resnet/layer1/block0/conv2/filter"][0] == [3, 3, 48, 64]  # the residual keeps 64
assert rn["retinanet/class_head/predict/filter"][0] == [3, 3, 192, 27]        # 9 anchors x 3 classes
PY
"$EXE" eval --data "$TMP/data" --checkpoint "$TMP/retina-thin" --threads 1 > "$TMP/eval.txt" 2>&1 ||
  { cat "$TMP/eval.txt"; fail "eval of the thinned retinanet"; }
"$EXE" bench --checkpoint "$TMP/squeeze-thin" --images "$TMP/data/images" --limit 2 --threads 1 \
  > "$TMP/bench.txt" 2>&1 || { cat "$TMP/bench.txt"; fail "bench of the thinned ssd-squeezenet"; }

# --- bad input: named, nothing written
cp -r "$TMP/thin" "$TMP/odd" && python3 - "$TMP/odd/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["channels"]["block14/pointwise"] = 8; json.dump(c, open(sys.argv[1], "w"))
PY
expect_error 'no layer "block14/pointwise"' "$EXE" eval --data "$TMP/data" --checkpoint "$TMP/odd" --threads 1
expect_error "already holds a run" "$EXE" prune --checkpoint "$TMP/run" --out "$TMP/thin" --steps 1
expect_error "give the fine-tuning's --steps" "$EXE" prune --checkpoint "$TMP/run" --out "$TMP/bad2"
expect_error "--sparsity" "$EXE" prune --checkpoint "$TMP/run" --out "$TMP/bad2" --sparsity 1.5 --steps 1
expect_error "not with parameter servers" \
  "$EXE" prune --checkpoint "$TMP/run" --mode l1-global --out "$TMP/bad2" --steps 1 --workers 2 --strategy ps
mkdir -p "$TMP/loose" && cp "$TMP/run/checkpoints/"*.safetensors "$TMP/loose/"
expect_error "not inside a dflow-detect run directory" \
  "$EXE" prune --checkpoint "$(ls "$TMP/loose/"*.safetensors | head -1)" --out "$TMP/bad2" --steps 1
[[ ! -e $TMP/bad2 ]] || fail "a refused prune wrote its run"
echo "PASS"
