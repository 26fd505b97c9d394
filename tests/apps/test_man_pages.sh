#!/usr/bin/env bash
# The man pages the build writes (each program's --man-page): valid roff
# (groff with every warning on says nothing), the page the program writes
# now, and every option that --help shows, for the program and each of its
# commands, is on its page.
# usage: test_man_pages.sh PROGRAM PAGE [PROGRAM PAGE]...
set -u
failures=0
checks=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

check_page() {
  local program=$1 page=$2 name
  name=$(basename "$program")
  checks=$((checks + 1))
  [[ -s $page ]] || { fail "$name: no page at $page"; return; }
  "$program" --man-page | cmp -s - "$page" || fail "$name: --man-page differs from the built page $page"
  local warnings
  warnings=$(groff -man -ww -z "$page" 2>&1)
  [[ -z $warnings ]] || fail "$name: groff warns: $warnings"
  # The rendered text, hyphens as typed (roff's \- renders as U+2212 in UTF-8).
  local text
  text=$(groff -man -Tascii "$page" 2>/dev/null | sed 's/.\x08//g')
  local commands
  commands=$(sed 's/\\-/-/g' "$page" | sed -n "s/^\.SS $name //p")
  local help command option missing=""
  for command in "" $commands; do
    # shellcheck disable=SC2086 # a command of several words is several arguments
    help=$("$program" $command --help 2>&1) || { fail "$name $command --help failed"; continue; }
    for option in $(grep -oE '(^|[ ,])--[a-z][a-z0-9-]*' <<<"$help" | sed 's/^[ ,]*//' | sort -u); do
      grep -qF -- "$option" <<<"$text" || missing+=" $command:$option"
    done
  done
  [[ -z $missing ]] || fail "$name: options in --help but not on the page:$missing"
  grep -q "^\.SH SYNOPSIS" "$page" || fail "$name: the page has no SYNOPSIS"
  # An option's help that says its default in words gets no stored one after it.
  local twice
  twice=$(grep -n "(default.*(default" "$page")
  [[ -z $twice ]] || fail "$name: two defaults for one option: $twice"
  [[ $name == dflow-* && -z $commands ]] && fail "$name: the page lists no commands"
}

failed_pages=0
while (($# >= 2)); do
  before=$failures
  check_page "$1" "$2"
  ((failures > before)) && failed_pages=$((failed_pages + 1))
  shift 2
done
echo "$((checks - failed_pages)) of $checks man pages passed"
((failures == 0))
