#!/usr/bin/env bash
# The first trained model end to end: spiral_mlp trains with Adam, must reach
# at least 97% held-out accuracy, saves a checkpoint, restores it into a
# fresh graph and session with identical predictions, and keeps only the
# checkpoints it should. Usage: test_spiral_mlp.sh PATH/TO/spiral_mlp
set -u
EXE=${1:?usage: $0 PATH/TO/spiral_mlp}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$EXE" --out "$TMP/run" > "$TMP/out.txt" 2>&1 || { cat "$TMP/out.txt"; echo "FAIL: exit status"; exit 1; }
cat "$TMP/out.txt"
result=$(tail -n 1 "$TMP/out.txt")
python3 - "$result" <<'PY' || exit 1
import json, sys
r = json.loads(sys.argv[1])
ok = r["test_accuracy"] >= 0.97 and r["restored_identical"] is True
print(f"held-out accuracy {r['test_accuracy']:.4f} (needs >= 0.97), "
      f"restored identical: {r['restored_identical']}, {r['train_seconds']:.2f} s")
sys.exit(0 if ok else 1)
PY
[[ -f $TMP/run/model-3000.safetensors && -f $TMP/run/checkpoint.json ]] ||
  { echo "FAIL: checkpoint files missing"; ls -l "$TMP/run"; exit 1; }

# --save-graph writes the training graph and a batch that `dflow profile` reads.
"$EXE" --steps 20 --out "$TMP/short" --save-graph "$TMP/graph" > /dev/null 2>&1 ||
  { echo "FAIL: --save-graph run"; exit 1; }
for f in graph.json x.npy labels.npy; do
  [[ -s $TMP/graph/$f ]] || { echo "FAIL: --save-graph did not write $f"; exit 1; }
done

# Bad input gets a clear message and a failing exit status, not a crash.
if "$EXE" --steps 0 > "$TMP/bad.txt" 2>&1; then echo "FAIL: --steps 0 accepted"; exit 1; fi
grep -q "steps" "$TMP/bad.txt" || { echo "FAIL: no message naming --steps"; cat "$TMP/bad.txt"; exit 1; }
echo "PASS"
