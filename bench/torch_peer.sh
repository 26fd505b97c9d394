# shellcheck shell=bash
# What the side-by-side scripts with a PyTorch peer share (bench/compare_torch,
# bench/compare_detect): Debian's PyTorch installed when it is missing, as
# ../shared/BENCH.md says, and the ratio lines from the two JSON lines of a
# dflow benchmark and its reference. Sourced, not run, from the repository root.

# install_torch_peer [PACKAGE...]: installs python3-torch, OpenBLAS (without it
# Debian's torch uses the reference BLAS, ~40x slower) and the Debian packages
# named (python3-torchvision) unless /usr/bin/python3 already imports them.
install_torch_peer() {
  local modules=torch package
  for package in "$@"; do modules+=", ${package#python3-}"; done
  /usr/bin/python3 -c "import $modules" 2>/dev/null && return
  echo "$(basename "$0"): installing PyTorch (python3-torch $* libopenblas0-pthread)" >&2
  local sudo=(); [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-torch "$@" \
    libopenblas0-pthread >&2
}

# print_ratios DFLOW_JSON TORCH_JSON METRIC...: one line per metric,
#   MODEL METRIC dflow=X torch=Y ratio=X/Y
# after checking that both sides train the same number of parameters.
print_ratios() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
d, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert d["params"] == t["params"], f"parameter counts differ: dflow {d['params']} torch {t['params']}"
for metric in sys.argv[3:]:
    print(f"{d['model']} {metric} dflow={d[metric]:.3f} torch={t[metric]:.3f} "
          f"ratio={d[metric] / t[metric]:.3f}")
PY
}
