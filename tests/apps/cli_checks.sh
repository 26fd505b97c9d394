# Shared by the `dflow` CLI test scripts (sourced, not run): a scratch
# directory as the working directory, and checks that count themselves.
# Expects DFLOW (the tool) to be set; the script ends with cli_summary.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0
checks=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_ok DESCRIPTION ARGS...: exit status 0; stdout in out.txt.
expect_ok() {
  local desc=$1; shift
  checks=$((checks + 1))
  "$DFLOW" "$@" > out.txt 2> err.txt
  local code=$?
  [[ $code == 0 ]] || fail "$desc: exit $code, stderr: $(cat err.txt)"
}

# expect_error DESCRIPTION MESSAGE ARGS...: exit status 1 and stderr holding
# "dflow: error: " and MESSAGE.
expect_error() {
  local desc=$1 message=$2; shift 2
  checks=$((checks + 1))
  "$DFLOW" "$@" > out.txt 2> err.txt
  local code=$?
  if [[ $code != 1 ]]; then
    fail "$desc: expected exit 1, got $code; stderr: $(cat err.txt)"
  elif ! grep -q "^dflow: error: " err.txt || ! grep -qF -- "$message" err.txt; then
    fail "$desc: stderr lacks '$message': $(cat err.txt)"
  fi
}

# expect_contains DESCRIPTION FILE TEXT: FILE holds the line fragment TEXT.
expect_contains() {
  checks=$((checks + 1))
  grep -qF -- "$3" "$2" || fail "$1: '$3' not in $2: $(head -c 2000 "$2")"
}

# Prints "N of M checks passed"; fails when any failed.
cli_summary() {
  echo "$((checks - failures)) of $checks checks passed"
  [[ $failures == 0 ]]
}
