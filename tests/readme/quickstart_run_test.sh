#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# quickstart.sh run with stand-ins for the tools it calls (dpkg-query says every package is
# there, cmake does nothing, nproc gives the cores, mpiexec prints its arguments): the job runs
# on one rank per core and at least 2 (so there is a ring), RFA_RANKS overrides that, and the
# flags reach rfa_run. quickstart.sh build and test (cmake and ctest log their arguments, the
# GPU headers' download fails): build builds everything, the docs too, and runs no test; test
# builds the same and runs the suite with its arguments.
#   quickstart_run_test.sh QUICKSTART_SH
set -u
script=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "quickstart_run_test: $*" >&2; exit 1; }
mkdir -p "$tmp/fakes"
stand_in() { printf '#!/bin/sh\n%s\n' "$2" >"$tmp/fakes/$1"; chmod +x "$tmp/fakes/$1"; }
stand_in dpkg-query 'echo "install ok installed"'
stand_in cmake 'exit 0'
stand_in nproc 'echo "$FAKE_CORES"'
stand_in mpiexec 'echo "mpiexec $*"'
run() { # CORES [VAR=VALUE...]: the mpiexec line quickstart.sh run --seq 64 ends in
  local cores=$1
  shift
  env -u RFA_RANKS PATH="$tmp/fakes:$PATH" FAKE_CORES="$cores" RFA_BUILD_DIR="$tmp/build" "$@" bash "$script" run --seq 64 2>&1 |
    grep '^mpiexec'
}
for case in "1 2" "2 2" "3 3" "4 4"; do
  set -- $case
  line=$(run "$1") || fail "no mpiexec line with $1 core(s)"
  grep -q -- "-np $2 " <<<"$line" || fail "$1 core(s): expected -np $2, got: $line"
  grep -q -- "/perf/ring/rfa_run --seq 64$" <<<"$line" || fail "the flags do not reach rfa_run: $line"
done
line=$(run 4 RFA_RANKS=3) || fail "no mpiexec line with RFA_RANKS"
grep -q -- "-np 3 " <<<"$line" || fail "RFA_RANKS=3 on 4 cores: expected -np 3, got: $line"
# build and test: what cmake and ctest were asked (a ctest listing, -N, runs nothing).
stand_in cmake 'echo "cmake $*" >>"$FAKE_LOG"'
stand_in ctest 'echo "ctest $*" >>"$FAKE_LOG"'
stand_in no-python 'exit 1'
for mode in build test; do
  log=$tmp/$mode.log
  : >"$log"
  env -u RFA_JOBS -u RFA_BUILD_ONLY_SELECTED -u RFA_CMAKE_ARGS PATH="$tmp/fakes:$PATH" FAKE_CORES=2 FAKE_LOG="$log" PYTHON=no-python RFA_BUILD_DIR="$tmp/build-$mode" \
    bash "$script" $mode -R some_test >"$tmp/$mode.out" 2>&1 || fail "quickstart.sh $mode failed: $(cat "$tmp/$mode.out")"
  grep -qE "^cmake --build $tmp/build-$mode -j 2$" "$log" || fail "$mode: no build of everything: $(cat "$log")"
  grep -qE "^cmake --build $tmp/build-$mode --target docs$" "$log" || fail "$mode: the docs not built: $(cat "$log")"
  runs=$(grep '^ctest' "$log" | grep -v -- ' -N ')
  if [ $mode = build ]; then
    [ -z "$runs" ] || fail "build ran tests: $runs"
  else
    grep -q -- "--parallel 2 -R some_test$" <<<"$runs" || fail "test: no ctest run with its arguments: $(cat "$log")"
  fi
done
echo "quickstart_run_test: ok"
