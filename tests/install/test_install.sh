#!/usr/bin/env bash
# Installs dflow from a build directory into a scratch DESTDIR, then builds
# tests/install/example.cc against the installed headers and library with
# `pkg-config --cflags --libs dflow`, as a user outside the tree would, and
# runs it. Then the installed tree moves to a scratch prefix of its own (an
# install names no absolute path: dflow.pc is relocatable, the programs and
# the Python extension find libdflow through $ORIGIN), and is used from there
# as the README says for `--prefix`: the program again, the installed `dflow`
# with no library path set, and, when the build has the Python package, a
# graph run with the installed package.
# usage: test_install.sh BUILD_DIR EXAMPLE_SOURCE [SANITIZERS (meson's b_sanitize)]
set -euo pipefail
build=$1
example=$2
sanitize=${3:-none}
cxx=${CXX:-c++}

fail() { echo "FAIL: $*" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

meson install -C "$build" --no-rebuild --quiet --destdir "$root" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "meson install failed"; }

pc=$(find "$root" -name dflow.pc -print -quit)
[[ -n $pc ]] || fail "dflow.pc was not installed"
lib=$(find "$root" -name 'libdflow.so' -print -quit)
[[ -n $lib ]] || fail "libdflow.so was not installed"
libdir=$(dirname "$lib")

# A CUDA build installs its GPU module beside libdflow.so, where libdflow
# looks for it; libdflow itself never links the CUDA libraries.
config=$(find "$root" -name dflow_config.h -print -quit)
if grep -q 'DFLOW_WITH_CUDA 1' "$config"; then
  [[ -f $libdir/libdflow_cuda.so ]] || fail "libdflow_cuda.so was not installed beside $lib"
fi
! ldd "$lib" | grep -Eq 'libcudart|libcublas' || fail "libdflow.so links CUDA: $(ldd "$lib")"

# dflow.pc names the prefix relative to itself, so the staged copy needs no
# PKG_CONFIG_SYSROOT_DIR.
export PKG_CONFIG_PATH=$(dirname "$pc")
read -r -a flags <<<"$(pkg-config --cflags --libs dflow)"
read -r -a cflags <<<"$(pkg-config --cflags dflow)"
echo "pkg-config --cflags --libs dflow: ${flags[*]}"
extra=()
[[ $sanitize != none && -n $sanitize ]] && extra=(-fsanitize="$sanitize")

# Every installed header compiles on its own terms: nothing it includes was
# left out of the install.
includedir=$(find "$root" -type d -path '*/include/dflow' -print -quit)
[[ -n $includedir ]] || fail "no include/dflow directory was installed"
(cd "$includedir" && find . -name '*.h' | sort | sed 's|^\./\(.*\)|#include "\1"|') >"$tmp/all_headers.cc"
echo 'int main() { return 0; }' >>"$tmp/all_headers.cc"
"$cxx" -std=c++20 -fsyntax-only "${cflags[@]}" "$tmp/all_headers.cc" ||
  fail "the installed headers do not compile together"

"$cxx" -std=c++20 "$example" -o "$tmp/example" "${extra[@]}" "${flags[@]}" ||
  fail "the example does not build against the installed dflow"
ldd_out=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/example")
grep -q "libdflow.so.0 => $libdir/" <<<"$ldd_out" || fail "the example does not load the installed libdflow: $ldd_out"
# The library is versioned: the soname libdflow.so.0, a file named with the
# full version, and libdflow.so for linking.
[[ $(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}') == libdflow.so.0 ]] ||
  fail "libdflow's soname is not libdflow.so.0: $(objdump -p "$lib" | grep SONAME)"
[[ -L $lib && -L $libdir/libdflow.so.0 ]] || fail "libdflow.so and libdflow.so.0 are not links to the versioned file"

LD_LIBRARY_PATH=$libdir "$tmp/example" >"$tmp/out.txt" || { cat "$tmp/out.txt"; fail "the example failed"; }
cat "$tmp/out.txt"
for expected in "y = float32[2,2] [5 0 0 3.5]" "steps = 3" \
                "error: feed 'x' expects shape [?,2], got float32[2,3]"; do
  grep -qxF "$expected" "$tmp/out.txt" || fail "expected the line: $expected"
done
echo "PASS: built and ran an out-of-tree program against the installed dflow"

# The installed data-parallel example builds the way its header says and
# trains (alone: a job of one worker).
ring_source=$(find "$root" -path '*/doc/dflow/examples/spiral_ring.cc' -print -quit)
[[ -n $ring_source ]] || fail "the example spiral_ring.cc was not installed under share/doc/dflow/examples"
[[ -f $(dirname "$ring_source")/spiral_ring.py ]] || fail "spiral_ring.py was not installed beside spiral_ring.cc"
"$cxx" -std=c++20 -O1 "$ring_source" -o "$tmp/spiral_ring" "${extra[@]}" "${flags[@]}" ||
  fail "the installed spiral_ring.cc does not build against the installed dflow"
(cd "$tmp" && env -u DFLOW_CLUSTER LD_LIBRARY_PATH=$libdir ./spiral_ring --steps 200 --out ring >ring.txt) ||
  { cat "$tmp/ring.txt"; fail "the installed example spiral_ring failed"; }
grep -q "^held-out accuracy .* with 1 worker(s)$" "$tmp/ring.txt" || { cat "$tmp/ring.txt"; fail "spiral_ring reported no accuracy"; }
[[ -f $tmp/ring/model-200.safetensors ]] || fail "spiral_ring saved no checkpoint"
echo "PASS: the installed example spiral_ring.cc built and trained"

for page in dflow dflow-count dflow-detect; do
  [[ -s $(find "$root" -path "*/share/man/man1/$page.1" -print -quit) ]] || fail "the man page $page.1 was not installed"
done
echo "PASS: the man pages were installed"

# An install under a prefix of one's own is the same files under another
# root: nothing installed names the configured prefix's library directory
# (rpaths are relative), and the tree works after a move.
configured_libdir=$(meson introspect "$build" --buildoptions | /usr/bin/python3 -c '
import json, sys
options = {o["name"]: o["value"] for o in json.load(sys.stdin)}
print(options["prefix"].rstrip("/") + "/" + options["libdir"])')
if grep -rlF "$configured_libdir" "$root" >"$tmp/absolute.txt"; then
  fail "installed files name $configured_libdir (an install could not move): $(cat "$tmp/absolute.txt")"
fi
staged_prefix=$(realpath "$(pkg-config --variable=prefix dflow)")
prefix=$tmp/prefix
mv "$staged_prefix" "$prefix"
rm -rf "$root"
libdir=$prefix/${libdir#"$staged_prefix"/}
export PKG_CONFIG_PATH=$prefix/${PKG_CONFIG_PATH#"$staged_prefix"/}
[[ $(pkg-config --cflags dflow) == *"$prefix/"* ]] || fail "pkg-config does not point into the prefix: $(pkg-config --cflags dflow)"
read -r -a flags <<<"$(pkg-config --cflags --libs dflow)"
"$cxx" -std=c++20 "$example" -o "$tmp/example_prefix" "${extra[@]}" "${flags[@]}" ||
  fail "the example does not build against dflow installed under a prefix"
LD_LIBRARY_PATH=$libdir "$tmp/example_prefix" >"$tmp/out_prefix.txt" || { cat "$tmp/out_prefix.txt"; fail "the example failed"; }
grep -qxF "steps = 3" "$tmp/out_prefix.txt" || fail "the example built against the prefix did not train"
env -u LD_LIBRARY_PATH "$prefix/bin/dflow" --version | grep -q "^dflow " ||
  fail "the installed dflow does not run from the prefix by itself: $(env -u LD_LIBRARY_PATH "$prefix/bin/dflow" --version 2>&1)"
echo "PASS: dflow installed under a prefix of its own ($prefix) built and ran the program and the dflow tool"

# The Python package, when the build has it: installed into the
# interpreter's site-packages under the prefix, it imports and runs a graph
# from there (outside the build tree) with /usr/bin/python3, no library path
# set.
if find "$build/python" -name '_dflow*.so' 2>/dev/null | grep -q .; then
  extension=$(find "$prefix" -name '_dflow*.so' -print -quit)
  [[ -n $extension ]] || fail "the Python extension was not installed"
  package=$(dirname "$extension")
  [[ -f $package/__init__.py ]] || fail "the Python package's __init__.py was not installed beside $extension"
  (cd "$tmp" && env -u LD_LIBRARY_PATH PYTHONPATH=$(dirname "$package") /usr/bin/python3 - "$package" <<'PY') ||
import os, sys
import numpy as np
import dflow
from dflow import ops
assert os.path.dirname(dflow.__file__) == sys.argv[1], dflow.__file__
x = dflow.placeholder(dflow.float32, [None, 2], name="x")
y = ops.Relu(ops.MatMul(x, dflow.constant([[1, -1], [2, 0.5]])))
with dflow.Session() as sess:
    result = sess.run(y, {x: [[1, 1], [3, -2]]}).tolist()
assert result == [[3, 0], [0, 0]], result
print("python y =", result)
PY
    fail "the installed Python package does not run"
  echo "PASS: the installed Python package ran a graph"
fi
