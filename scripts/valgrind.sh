#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The C API and engine suites under valgrind memcheck, at one and two ranks:
#   bash scripts/valgrind.sh            (all of them; ~40 min on 2 cores: docs/testing.md)
#   bash scripts/valgrind.sh ENGINE_GTEST_FILTER
# Builds in $RFA_VALGRIND_BUILD_DIR (default ./build-valgrind) with RFA_ENABLE_NATIVE=OFF
# (valgrind 3.19 cannot execute AVX-512, which -march=native emits on newer CPUs) and debug
# info. Every process runs under memcheck; any error (invalid access, use of uninitialised
# memory, a definite leak) fails the run. Suppressed: Open MPI's own file (its internals), and
# tests/valgrind/rfa.supp, each entry with the reason.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RFA_VALGRIND_BUILD_DIR:-$here/build-valgrind}
engine_filter=${1:-*}
command -v valgrind >/dev/null || { echo "valgrind: install it (apt-get install valgrind)" >&2; exit 1; }

mkdir -p "$build"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRFA_ENABLE_NATIVE=OFF -DRFA_ENABLE_CUDA=OFF \
  -DRFA_ENABLE_FORTRAN=OFF -DRFA_ENABLE_BENCHMARKS=OFF -DRFA_ENABLE_DOCS=OFF >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log" >&2; exit 1; }
tests=(rfa_engine_test capi_forward_backward_test capi_invalid_calls_test capi_config_macros_test capi_c_api_test)
cmake --build "$build" -j "$(nproc)" --target "${tests[@]}"

mpi_flags=(--oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)
memcheck=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
          --show-leak-kinds=definite --track-origins=yes --num-callers=30
          --suppressions=/usr/share/openmpi/openmpi-valgrind.supp --suppressions="$here/tests/valgrind/rfa.supp"
          --log-file="$build/valgrind.%q{OMPI_COMM_WORLD_RANK}.%p.log")  # moved per test below
failed=0
run() {  # run NAME RANKS COMMAND...
  local name=$1 ranks=$2
  shift 2
  echo "valgrind: $name at np $ranks"
  rm -f "$build"/valgrind.*.log
  if ! mpiexec -n "$ranks" "${mpi_flags[@]}" "${memcheck[@]}" "$@" >"$build/$name.np$ranks.out" 2>&1; then
    echo "valgrind: $name at np $ranks FAILED (output: $build/$name.np$ranks.out)" >&2
    grep -h -A30 "ERROR SUMMARY: [1-9]\|Invalid\|uninitialised\|definitely lost" "$build"/valgrind.*.log | head -80 >&2 || true
    failed=1
  fi
  grep -h "ERROR SUMMARY" "$build"/valgrind.*.log | sed "s/^/  /"
  mkdir -p "$build/logs/$name.np$ranks"
  mv "$build"/valgrind.*.log "$build/logs/$name.np$ranks/"
}
for np in 1 2; do
  run rfa_engine_test "$np" "$build/tests/engine/rfa_engine_test" --gtest_filter="$engine_filter"
  run capi_forward_backward_test "$np" "$build/tests/capi/capi_forward_backward_test"
  run capi_invalid_calls_test "$np" "$build/tests/capi/capi_invalid_calls_test"
  run capi_config_macros_test "$np" "$build/tests/capi/capi_config_macros_test"
done
run capi_c_api_test 2 "$build/tests/capi/capi_c_api_test"
[ "$failed" -eq 0 ] && echo "valgrind: clean"
exit "$failed"
