#!/usr/bin/env bash
# Builds the wire decoder's libFuzzer target with clang (ASan + UBSan) and
# fuzzes it for a short time (FUZZ_SECONDS, default 20). Skips, saying why,
# when clang++ or its fuzzer runtime is missing. Usage: run_fuzz_wire.sh SRCDIR [SCRATCH]
set -euo pipefail
src=$(readlink -f "${1:?usage: run_fuzz_wire.sh SRCDIR [SCRATCH]}")
scratch=${2:-$(mktemp -d)}
mkdir -p "$scratch/corpus"
seconds=${FUZZ_SECONDS:-20}
if ! command -v clang++ >/dev/null; then
  echo "SKIP: clang++ is not installed, so the wire decoder was not fuzzed"
  exit 0
fi
fuzzer="$scratch/fuzz_wire"
if ! clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src" "$src/tests/dist/transport/fuzz_wire.cc" "$src/dist/transport/wire.cc" "$src/graph/tensor.cc" \
    "$src/graph/shape.cc" "$src/graph/dtype.cc" "$src/graph/allocator.cc" "$src/graph/status.cc" \
    -o "$fuzzer" 2>"$scratch/build.log"; then
  if grep -q "libclang_rt.fuzzer\|fsanitize=fuzzer" "$scratch/build.log"; then
    echo "SKIP: clang++ has no libFuzzer runtime (libclang-rt-dev), so the wire decoder was not fuzzed"
    exit 0
  fi
  cat "$scratch/build.log"
  echo "FAIL: the fuzz target did not build"
  exit 1
fi
FUZZ_WIRE_SEED="$scratch/corpus/seed" "$fuzzer"
echo "fuzzing the wire decoder for ${seconds} s"
"$fuzzer" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 "$scratch/corpus" \
  >"$scratch/fuzz.log" 2>&1 || { tail -40 "$scratch/fuzz.log"; echo "FAIL: the fuzzer found a crash"; exit 1; }
grep -E "stat::number_of_executed_runs|cov:" "$scratch/fuzz.log" | tail -2
echo "PASS: no crash in ${seconds} s"
