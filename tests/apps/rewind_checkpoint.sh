# rewind_checkpoint RUN DROPPED KEPT: makes RUN's step-KEPT checkpoint its
# latest and deletes step DROPPED's, as if the run had stopped after KEPT.
# Sourced by the apps' end-to-end tests.
rewind_checkpoint() {
  rm "$1/checkpoints/model-$2.safetensors"
  python3 - "$1/checkpoints/checkpoint.json" "model-$2.safetensors" "model-$3.safetensors" <<'PY'
import json, sys
path, dropped, kept = sys.argv[1:]
index = json.load(open(path))
index["all"] = [f for f in index["all"] if f != dropped]
index["latest"] = kept
json.dump(index, open(path, "w"))
PY
}
