#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the script tests in this folder: a scratch folder $tmp, removed on exit, and
#   check DESCRIPTION COMMAND...  runs COMMAND and prints "ok   DESCRIPTION" or "FAIL ...",
#                                 counting the failures
#   checks_done OUTPUT            exits 1 showing OUTPUT (the output of the script under test)
#                                 when a check failed, else says all passed
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}
checks_done() {
  if [ $failures -ne 0 ]; then
    echo "$failures check(s) failed; the script's output:"
    cat "$1"
    exit 1
  fi
  echo "all checks passed"
}
