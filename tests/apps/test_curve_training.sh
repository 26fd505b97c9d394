#!/usr/bin/env bash
# Training over CURVE (dflow keygen; DFLOW_CURVE_KEYS): 2-worker ring and
# sync parameter-server runs of the counting app end with the same
# parameters, bit for bit, as the same runs in the clear (refused clients:
# tests/dist/transport/test_curve.cc). Every run is under `timeout`.
# Usage: test_curve_training.sh PATH/TO/dflow-count PATH/TO/dflow
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-count PATH/TO/dflow}
DFLOW=${2:?usage: $0 PATH/TO/dflow-count PATH/TO/dflow}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"
PORT=$((20000 + RANDOM % 10000))

"$DFLOW" keygen --out "$TMP/keys" > /dev/null || fail "keygen"
[[ $(stat -c %a "$TMP/keys/server.key_secret") == 600 ]] || fail "the server's secret key is not 0600"
"$DFLOW" keygen --out "$TMP/more" --join "$TMP/keys" > /dev/null || fail "keygen --join"
[[ -s $TMP/keys/clients/client-2.key && -s $TMP/more/server.key ]] || fail "keygen --join did not add the client"
"$EXE" generate --out "$TMP/data" --images 8 --width 72 --height 40 --max-flowers 6 --seed 3 > /dev/null ||
  fail "generate"
train=(train --data "$TMP/data" --tile 32 --batch 2 --threads 1 --checkpoint-every 2 --steps 4 --workers 2)

for strategy in ring ps; do
  timeout 90 "$EXE" "${train[@]}" --strategy $strategy --out "$TMP/$strategy-clear" --base-port $PORT \
    > "$TMP/$strategy-clear.txt" 2>&1 || { cat "$TMP/$strategy-clear.txt"; fail "$strategy in the clear"; }
  DFLOW_CURVE_KEYS=$TMP/keys timeout 90 "$EXE" "${train[@]}" --strategy $strategy --out "$TMP/$strategy-curve" \
    --base-port $((PORT + 10)) > "$TMP/$strategy-curve.txt" 2>&1 ||
    { cat "$TMP/$strategy-curve.txt"; fail "$strategy over CURVE"; }
  grep -q "^\[worker:1\] dflow transport: CURVE with the keys of $TMP/keys" "$TMP/$strategy-curve.txt" ||
    { cat "$TMP/$strategy-curve.txt"; fail "$strategy: the workers did not use CURVE"; }
  grep -q "CURVE" "$TMP/$strategy-clear.txt" && fail "$strategy: CURVE without keys"
  cmp "$TMP/$strategy-clear/checkpoints/model-4.safetensors" "$TMP/$strategy-curve/checkpoints/model-4.safetensors" ||
    fail "$strategy: CURVE changed the parameters"
  PORT=$((PORT + 20))
done

echo "CURVE training: all checks passed"
