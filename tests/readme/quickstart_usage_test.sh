#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# quickstart.sh with a wrong or missing mode: exit 2, say why, print the usage and nothing else
# (it must stop before installing or building anything). --help: the same text, exit 0.
set -u
script=$1
fail() { echo "quickstart_usage_test: $*" >&2; exit 1; }
for mode in bogus ""; do
  out=$(bash "$script" $mode 2>&1); rc=$?
  [ "$rc" -eq 2 ] || fail "'quickstart.sh $mode' exited $rc, not 2: $out"
  if [ -n "$mode" ]; then
    grep -q "unknown mode 'bogus'" <<<"$out" || fail "no 'unknown mode' in: $out"
  else
    grep -q "no mode given" <<<"$out" || fail "no 'no mode given' in: $out"
  fi
  grep -q "^usage: bash scripts/quickstart.sh run|test" <<<"$out" || fail "no usage line in: $out"
  grep -q "^  test \[args\]" <<<"$out" || fail "the usage misses the test mode: $out"
  ! grep -q "set -euo\|^#\|SPDX\|cmake\b.*-S" <<<"$out" || fail "the usage shows script lines: $out"
done
out=$(bash "$script" --help 2>&1) || fail "--help exited non-zero"
grep -q "RFA_BUILD_DIR" <<<"$out" || fail "--help misses the environment: $out"
echo "quickstart_usage_test: ok"
