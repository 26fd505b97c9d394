# Shared by the apps' end-to-end tests (sourced, not run): a scratch
# directory TMP removed on exit, `fail`, and `expect_error`.

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

# expect_error "what must appear" CMD...: CMD must fail (within a minute) and
# say it, on stdout or stderr.
expect_error() {
  local want=$1
  shift
  if timeout 60 "$@" > "$TMP/err.txt" 2>&1; then cat "$TMP/err.txt"; fail "accepted: $*"; fi
  grep -qF -- "$want" "$TMP/err.txt" || { cat "$TMP/err.txt"; fail "no message naming '$want': $*"; }
}
