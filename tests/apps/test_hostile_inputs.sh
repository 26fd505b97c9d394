#!/usr/bin/env bash
# Hostile-but-fair input to the apps: options out of range,
# resumes from elsewhere or with other settings, outputs that are devices,
# a corrupt image among good ones, and messages that must name the real
# cause. One tiny dataset and two-step runs keep it quick.
# Usage: test_hostile_inputs.sh PATH/TO/dflow PATH/TO/dflow-count PATH/TO/dflow-detect
set -u
DFLOW=${1:?usage: $0 PATH/TO/dflow PATH/TO/dflow-count PATH/TO/dflow-detect}
COUNT=${2:?usage: $0 PATH/TO/dflow PATH/TO/dflow-count PATH/TO/dflow-detect}
DETECT=${3:?usage: $0 PATH/TO/dflow PATH/TO/dflow-count PATH/TO/dflow-detect}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"

# expect_output "what must appear" CMD...: CMD must succeed and say it.
expect_output() {
  local want=$1
  shift
  timeout 120 "$@" > "$TMP/out.txt" 2>&1 || { cat "$TMP/out.txt"; fail "failed: $*"; }
  grep -qF -- "$want" "$TMP/out.txt" || { cat "$TMP/out.txt"; fail "no message '$want': $*"; }
}

"$COUNT" generate --out "$TMP/data" --images 4 --width 40 --height 40 --max-flowers 4 --seed 3 > /dev/null ||
  fail "generate"

# --- Numeric options: readable ranges, thread counts capped everywhere.
expect_error "--steps: must be at least 1, got 0" "$COUNT" train --data "$TMP/data" --out "$TMP/r0" --steps 0
expect_error "--batch: must be at least 1, got 0" "$COUNT" train --data "$TMP/data" --out "$TMP/r0" --batch 0
expect_error "--keep: must be between 1 and" "$COUNT" train --data "$TMP/data" --out "$TMP/r0" --keep 0
expect_error "--images: must be between 1 and" "$COUNT" generate --out "$TMP/g" --images 0
expect_error "--threads: must be at most 1024, got 100000" "$COUNT" train --data "$TMP/data" --out "$TMP/r0" \
  --threads 100000
expect_error "--decode-threads: must be at most 1024" "$DETECT" train --data "$TMP/data" --out "$TMP/r0" \
  --decode-threads 5000
expect_error "--threads: must be between 0 and 1024, got -3" "$DFLOW" server --threads -3
expect_error "--threads: must be at most 1024" "$DFLOW" run --threads 2000 graph.json
expect_error "--max-flowers: must be at most" "$COUNT" generate --out "$TMP/g" --max-flowers 100000000
expect_error "--images: must be at most 100000, got 100000000" "$DETECT" generate --out "$TMP/g" --images 100000000
[[ ! -e $TMP/g ]] || fail "a refused generate wrote $TMP/g"
if grep -q "1797693" "$TMP/err.txt"; then fail "a range message prints DBL_MAX"; fi

# --- Resume: the dataset is found by its absolute path and checked; the
# recorded settings stay unless given again, and then it says so.
train=(--tile 32 --batch 2 --threads 1 --checkpoint-every 1 --keep 7)
(cd "$TMP" && "$COUNT" train --data data --out run "${train[@]}" --steps 2 > /dev/null) || fail "train"
grep -qF "\"data\": \"$TMP/data\"" "$TMP/run/config.json" || fail "config.json holds a relative data path"
mkdir -p "$TMP/elsewhere"
"$COUNT" generate --out "$TMP/elsewhere/data" --images 3 --width 40 --height 40 --seed 9 > /dev/null
(cd "$TMP/elsewhere" && "$COUNT" train --out ../run --resume --steps 3 > "$TMP/resume.txt" 2>&1) ||
  { cat "$TMP/resume.txt"; fail "resume from another directory"; }
grep -q "from 4 images" "$TMP/resume.txt" || { cat "$TMP/resume.txt"; fail "resume read other data"; }
grep -q '"keep": 7' "$TMP/run/config.json" || fail "resume reset --keep to its default"
grep -q '"checkpoint_every": 1' "$TMP/run/config.json" || fail "resume reset --checkpoint-every"
expect_output "--keep 5 overrides the run's recorded 7" "$COUNT" train --out "$TMP/run" --resume --steps 4 --keep 5
grep -q '"keep": 5' "$TMP/run/config.json" || fail "an explicit --keep was not recorded"
sed -i 's/"field_00001.png": \[/"field_00001.png": [[1, 1], /' "$TMP/data/points.json"
expect_error "is not the one this run trained on" "$COUNT" train --out "$TMP/run" --resume --steps 5

# --- Outputs: a device or pipe is written through, not replaced by a regular
# file; a link's target is replaced, not the link; every failed write is an
# error naming the file. The links keep a regression from replacing /dev.
ln -s /dev/full "$TMP/full"
ln -s /dev/null "$TMP/null"
image=$TMP/data/field_00000.png
expect_error "cannot write '$TMP/full' (write): No space left on device" \
  "$COUNT" predict --checkpoint "$TMP/run" --csv "$TMP/full" "$image"
expect_error "cannot write '$TMP/full'" "$COUNT" eval --data "$TMP/data" --checkpoint "$TMP/run" --metrics "$TMP/full"
"$COUNT" predict --checkpoint "$TMP/run" --csv "$TMP/null" "$image" > /dev/null || fail "predict --csv /dev/null"
[[ -L $TMP/null && -c $TMP/null ]] || fail "writing through a link to /dev/null replaced the link"
"$COUNT" predict --checkpoint "$TMP/run" --csv /dev/stdout "$image" > "$TMP/stdout.txt" || fail "--csv /dev/stdout"
grep -q "^image,count" "$TMP/stdout.txt" && grep -q "field_00000.png  " "$TMP/stdout.txt" ||
  fail "--csv /dev/stdout redirected to a file lost the CSV or the printed count: $(cat "$TMP/stdout.txt")"
expect_error "it is a directory" "$COUNT" predict --checkpoint "$TMP/run" --csv "$TMP/data" "$image"
echo old > "$TMP/real.csv"
ln -s real.csv "$TMP/link.csv"
"$COUNT" predict --checkpoint "$TMP/run" --csv "$TMP/link.csv" "$image" > /dev/null || fail "predict --csv LINK"
[[ -L $TMP/link.csv ]] && grep -q "image,count" "$TMP/real.csv" || fail "the link was replaced, not its target"
mkfifo "$TMP/fifo"
timeout 60 cat "$TMP/fifo" > "$TMP/from-fifo" &
reader=$!
"$COUNT" predict --checkpoint "$TMP/run" --csv "$TMP/fifo" "$image" > /dev/null || fail "predict --csv FIFO"
wait $reader
[[ -p $TMP/fifo ]] && grep -q "image,count" "$TMP/from-fifo" || fail "the FIFO was replaced, not written"
cat > "$TMP/v.json" << 'EOF'
{"format": "dflow.graph/1", "seed": 0, "nodes": [
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 3]}},
  {"name": "w", "op": "VariableV2", "attrs": {"dtype": "float32", "shape": [3]}},
  {"name": "w/value", "op": "Const", "attrs": {"dtype": "float32",
     "value": {"dtype": "float32", "shape": [3], "values": [1, 2, 3]}}},
  {"name": "w/init", "op": "Assign", "inputs": ["w", "w/value"]},
  {"name": "y", "op": "Mul", "inputs": ["x", "w"]}
]}
EOF
expect_error "cannot write '$TMP/full'" "$DFLOW" freeze "$TMP/v.json" --output y --init -o "$TMP/full"
expect_error "cannot write '$TMP/full'" "$DFLOW" run "$TMP/v.json" --fetch w/value --trace "$TMP/full" \
  --out "$TMP/fetched"

# --- A failed predict writes nothing: a truncated image among good ones.
mkdir "$TMP/mixed"
cp "$TMP/data/field_00000.png" "$TMP/data/field_00001.png" "$TMP/mixed/"
head -c 300 "$TMP/data/field_00002.png" > "$TMP/mixed/field_00002.png"
expect_error "field_00002.png" "$COUNT" predict --checkpoint "$TMP/run" --heatmap "$TMP/heat" --csv "$TMP/c.csv" \
  "$TMP/mixed"
[[ ! -e $TMP/heat && ! -e $TMP/c.csv ]] || fail "a failed predict left outputs behind"
expect_error "field_00002.png" "$COUNT" predict --checkpoint "$TMP/run" --heatmap "$TMP/new/deep/heat" "$TMP/mixed"
[[ ! -e $TMP/new ]] || fail "a failed predict left the folders it made for its output"
[[ -z $(find "$TMP" -name '*.partial.*') ]] || fail "a failed predict left its staging folder"
"$COUNT" predict --checkpoint "$TMP/run" --heatmap "$TMP/heat" "$TMP/data" > /dev/null || fail "predict --heatmap"
[[ -s $TMP/heat/field_00003_heatmap.png ]] || fail "predict --heatmap wrote no heatmaps"

# --- A data-parallel strategy is checked even with one worker.
expect_error "unknown data-parallel strategy 'bogus'" "$COUNT" train --data "$TMP/data" --out "$TMP/r1" --steps 1 \
  --strategy bogus --workers 1
expect_error "unknown data-parallel strategy 'bogus'" "$DETECT" train --data "$TMP/data" --out "$TMP/r1" --steps 1 \
  --strategy bogus
[[ ! -e $TMP/r1 ]] || fail "a refused train wrote its run directory"

# --- A checkpoint index naming a missing file says so.
cp -r "$TMP/run" "$TMP/copied"
latest=$(ls "$TMP/copied/checkpoints/" | grep safetensors | sort -t- -k2 -n | tail -1)
rm "$TMP/copied/checkpoints/$latest"
expect_error "names $latest as the latest checkpoint, but" "$COUNT" predict --checkpoint "$TMP/copied" "$image"
expect_error "names $latest as the latest checkpoint, but" "$COUNT" train --out "$TMP/copied" --resume --steps 9

echo "hostile input checks passed"
