#!/usr/bin/env bash
# The apps' `train --workers N --elastic` (dflow-count and dflow-detect, on
# tiny generated datasets): without a change of membership the run ends with
# the fixed ring's bits; dflow-count with 3 workers loses one to kill -9 and
# the other two finish the run (every step logged once, its last checkpoint
# evaluates); a worker
# started later with DFLOW_ELASTIC joins the running job. Every run is under
# `timeout`.
# Usage: test_apps_elastic.sh PATH/TO/dflow-count PATH/TO/dflow-detect
set -u
COUNT=${1:?usage: $0 DFLOW_COUNT DFLOW_DETECT}
DETECT=${2:?usage: $0 DFLOW_COUNT DFLOW_DETECT}
EXE=$COUNT
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"
checks=0

# expect_contains DESCRIPTION FILE TEXT: FILE holds TEXT.
expect_contains() {
  checks=$((checks + 1))
  grep -qaF -- "$3" "$2" || fail "$1: '$3' not in $2: $(grep -av eta "$2" | tail -c 2000)"
}

# wait_for FILE PATTERN: up to 60 s for FILE to hold a line matching PATTERN.
wait_for() {
  for _ in $(seq 600); do grep -qaE "$2" "$1" 2> /dev/null && return 0; sleep 0.1; done
  fail "no '$2' in $1 after 60 s: $(tail -c 2000 "$1")"
  return 1
}
# kill_worker LABEL: kill -9 the process the launcher started as LABEL.
kill_worker() {
  local p
  for p in $(pgrep -f "$COUNT train"); do
    tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "DFLOW_ELASTIC_ID=$1" && kill -9 "$p"
  done
}

"$COUNT" generate --out "$TMP/flowers" --images 12 --width 72 --height 40 --max-flowers 6 --seed 3 > /dev/null ||
  fail "generate flowers"
count=(--data "$TMP/flowers" --tile 32 --batch 2 --threads 1 --keep 3)
timeout 120 "$DETECT" generate --out "$TMP/scenes" --images 16 --size 96x80 --classes 2 --seed 3 > /dev/null ||
  fail "generate scenes"
detect=(--data "$TMP/scenes" --size 64 --width 0.25 --batch 2 --threads 1 --keep 3)

# --- no change of membership: the fixed ring's bits, both apps
for app in count detect; do
  exe=$COUNT args=("${count[@]}")
  [[ $app == detect ]] && exe=$DETECT args=("${detect[@]}")
  for mode in ring elastic; do
    extra=()
    [[ $mode == elastic ]] && extra=(--elastic)
    checks=$((checks + 1))
    timeout 120 "$exe" train "${args[@]}" --out "$TMP/$app-$mode" --steps 4 --workers 2 "${extra[@]}" \
      > "$TMP/$app-$mode.txt" 2>&1 || fail "$app train --workers 2 $mode: $(tail -c 2000 "$TMP/$app-$mode.txt")"
  done
  checks=$((checks + 1))
  cmp -s "$TMP/$app-ring/checkpoints/model-4.safetensors" "$TMP/$app-elastic/checkpoints/model-4.safetensors" ||
    fail "$app: the elastic run without a change differs from the fixed ring's"
done

# --- dflow-count, 3 workers, worker:1 killed mid-run: the other two finish
timeout 180 "$COUNT" train "${count[@]}" --out "$TMP/killed" --steps 600 --checkpoint-every 20 --workers 3 \
  --elastic --min-workers 2 > "$TMP/killed.txt" 2>&1 &
launcher=$!
wait_for "$TMP/killed.txt" "^\[worker:2\] worker:2: elastic round 1"
for _ in $(seq 600); do [[ -e $TMP/killed/checkpoints/model-40.safetensors ]] && break; sleep 0.1; done
kill_worker worker:1
checks=$((checks + 1))
wait $launcher || fail "the elastic run with a killed worker: exit $?: $(grep -av eta "$TMP/killed.txt" | tail -c 2000)"
expect_contains "the survivors regrouped" "$TMP/killed.txt" "[worker:0] elastic round 2 (worker:1 left): rank 0 of 2"
expect_contains "the run reached its last step" "$TMP/killed.txt" "[worker:0] checkpoint $TMP/killed/checkpoints/model-600.safetensors"
checks=$((checks + 1))
"$COUNT" eval --data "$TMP/flowers" --checkpoint "$TMP/killed" > "$TMP/killed-eval.txt" 2>&1 ||
  fail "eval after the elastic run: $(cat "$TMP/killed-eval.txt")"
# The loss curve goes on through the change: every step logged once, finite.
checks=$((checks + 1))
python3 - "$TMP/killed/metrics.jsonl" <<'EOF' || fail "the loss curve broke at the kill"
import json, math, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
steps = [r["step"] for r in rows]
sys.exit(0 if steps == list(range(1, 601)) and all(math.isfinite(r["loss"]) for r in rows) else 1)
EOF

# --- dflow-count, 2 workers, a third started by hand joins
timeout 180 "$COUNT" train "${count[@]}" --out "$TMP/joined" --steps 600 --checkpoint-every 20 --workers 2 \
  --max-workers 3 --elastic > "$TMP/joined.txt" 2>&1 &
launcher=$!
wait_for "$TMP/joined.txt" "elastic rendezvous at "
rendezvous=$(sed -n 's/.*elastic rendezvous at \([0-9.:]*\) .*/\1/p' "$TMP/joined.txt")
for _ in $(seq 600); do [[ -e $TMP/joined/checkpoints/model-40.safetensors ]] && break; sleep 0.1; done
DFLOW_ELASTIC=$rendezvous DFLOW_ELASTIC_ID=late timeout 180 "$COUNT" train "${count[@]}" --out "$TMP/joined" \
  --steps 600 --checkpoint-every 20 --workers 2 --max-workers 3 --elastic > "$TMP/late.txt" 2>&1 &
late=$!
checks=$((checks + 1))
wait $launcher || fail "the run a worker joined: exit $?: $(grep -av eta "$TMP/joined.txt" | tail -c 2000)"
checks=$((checks + 1))
wait $late || fail "the late worker: exit $?: $(grep -av eta "$TMP/late.txt" | tail -c 2000)"
expect_contains "the late worker joined" "$TMP/joined.txt" "(late joined): rank 0 of 3"
expect_contains "it trained as rank 2" "$TMP/late.txt" "late: elastic round 2, rank 2 of 3"
expect_contains "the run reached its last step" "$TMP/joined.txt" "[worker:0] checkpoint $TMP/joined/checkpoints/model-600.safetensors"

echo "$checks checks passed"
