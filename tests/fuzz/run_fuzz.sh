#!/usr/bin/env bash
# Builds dflow's libFuzzer targets (tests/fuzz/fuzz_<target>.cc) with clang,
# ASan and UBSan, and fuzzes each for a short time (FUZZ_SECONDS, default 15)
# from its committed seeds in tests/fuzz/corpus/<target>/. Skips, saying why,
# when clang++ or its fuzzer runtime is missing.
#
#   run_fuzz.sh SRCDIR SCRATCH [TARGET...]     (no TARGET: every target)
#
# A target lists the engine sources it needs on a line of its own,
#   // fuzz-sources: graph/npy.cc graph/tensor.cc ...
# and the libraries to link on one more, "// fuzz-libs: -lpugixml". Each source
# is compiled once (through ccache when there is one) and shared by the targets.
# New inputs the fuzzer finds go to SCRATCH/corpus/<target>/, crashes to
# SCRATCH/<target>-crash-*. FUZZ_JOBS (default 2) compiles and fuzzes that many at once.
set -euo pipefail
src=$(readlink -f "${1:?usage: run_fuzz.sh SRCDIR SCRATCH [TARGET...]}")
scratch=$(mkdir -p "${2:?usage: run_fuzz.sh SRCDIR SCRATCH [TARGET...]}" && readlink -f "$2")
shift 2
seconds=${FUZZ_SECONDS:-15}
jobs=${FUZZ_JOBS:-2}
targets=("$@")
if ((${#targets[@]} == 0)); then
  for file in "$src"/tests/fuzz/fuzz_*.cc; do
    name=${file##*/fuzz_}
    targets+=("${name%.cc}")
  done
fi

if ! command -v clang++ >/dev/null; then
  echo "SKIP: clang++ is not installed (./dev installs clang and libclang-rt-dev), so nothing was fuzzed"
  exit 0
fi
cxx=(clang++)
command -v ccache >/dev/null && cxx=(ccache clang++)
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=undefined -Wall -Wextra
       -Wno-unused-parameter -I"$src"
       $(pkg-config --cflags stb 2>/dev/null || true))
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer,address,undefined - -o "$scratch/probe" 2>"$scratch/probe.log"; then
  cat "$scratch/probe.log"
  echo "SKIP: clang++ has no libFuzzer runtime (libclang-rt-dev), so nothing was fuzzed"
  exit 0
fi

field() { sed -n "s|^// $1: ||p" "$src/tests/fuzz/fuzz_$2.cc"; }

# Every source the targets need, compiled once with coverage and sanitizers.
declare -A wanted=()
for target in "${targets[@]}"; do
  [[ -f $src/tests/fuzz/fuzz_$target.cc ]] || { echo "FAIL: no target tests/fuzz/fuzz_$target.cc"; exit 1; }
  for file in $(field fuzz-sources "$target") "tests/fuzz/fuzz_$target.cc"; do wanted[$file]=1; done
done
compile() {
  local object="$scratch/obj/${1%.cc}.o"
  mkdir -p "${object%/*}"
  "${cxx[@]}" "${flags[@]}" -fsanitize=fuzzer-no-link,address,undefined -c "$src/$1" -o "$object" \
    2>"$object.log" || { cat "$object.log"; echo "FAIL: $1 did not compile"; return 1; }
  cat "$object.log"  # warnings
}
export -f compile
export src scratch
export flags_string="${flags[*]}" cxx_string="${cxx[*]}"
printf '%s\n' "${!wanted[@]}" | sort |
  xargs -P "$jobs" -I{} bash -c 'flags=($flags_string); cxx=($cxx_string); compile {}' ||
  { echo "FAIL: the fuzz targets did not build"; exit 1; }

failed=()
linked=()
for target in "${targets[@]}"; do
  objects=()
  for file in $(field fuzz-sources "$target") "tests/fuzz/fuzz_$target.cc"; do
    objects+=("$scratch/obj/${file%.cc}.o")
  done
  # shellcheck disable=SC2046
  if clang++ -fsanitize=fuzzer,address,undefined "${objects[@]}" $(field fuzz-libs "$target") \
      -o "$scratch/fuzz_$target" 2>"$scratch/$target.link.log"; then
    linked+=("$target")
  else
    cat "$scratch/$target.link.log"
    echo "FAIL: fuzz_$target did not link"
    failed+=("$target")
  fi
done

# One target's run, in a working folder of its own; its verdict goes to
# SCRATCH/<target>.result so that targets fuzzed side by side do not mix.
fuzz() {
  local target=$1 corpus="$scratch/corpus/$1" work="$scratch/work-$1" log="$scratch/$1.log"
  local seeds=()
  [[ -d $src/tests/fuzz/corpus/$target ]] && seeds=("$src/tests/fuzz/corpus/$target")
  rm -rf "$work" "$scratch/$target-"*
  mkdir -p "$corpus" "$work"
  if (cd "$work" && "$scratch/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$scratch/$target-" "$corpus" "${seeds[@]}") \
        >"$log" 2>&1; then
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "PASS: $target: no crash in ${seconds} s (${runs:-?} runs, corpus $(ls "$corpus" | wc -l) files)" \
      >"$scratch/$target.result"
  else
    { tail -60 "$log"; echo "FAIL: $target: the fuzzer found a crash; the input is in $scratch/$target-*"; } \
      >"$scratch/$target.result"
  fi
  rm -rf "$work"
}
running=0
for target in "${linked[@]}"; do
  if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
  fuzz "$target" &
  running=$((running + 1))
done
wait
for target in "${linked[@]}"; do
  cat "$scratch/$target.result"
  grep -q "^PASS: " "$scratch/$target.result" || failed+=("$target")
done
((${#failed[@]} == 0)) || { echo "FAIL: ${failed[*]}"; exit 1; }
echo "PASS: fuzzed ${#linked[@]} targets for ${seconds} s each"
