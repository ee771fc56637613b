#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzzes the C API's argument checks with libFuzzer for a bounded time (CI runs it):
#   bash scripts/fuzz.sh [SECONDS]   (default 60; wall time, a fuzzing process on each core:
#                                     RFA_FUZZ_WORKERS, default the core count, through
#                                     libFuzzer's fork mode where more than one)
#   bash scripts/fuzz.sh --build-only     (installs and builds, runs nothing: CI builds it early)
#   bash scripts/fuzz.sh --install-only   (installs what it needs, builds nothing)
# Installs clang-14 and its compiler-rt if missing (Debian 12), builds the harness
# (tests/fuzz/capi_fuzzer.cpp) with ASan + UBSan in $RFA_FUZZ_BUILD_DIR (default ./build-fuzz),
# replays the seed corpus (tests/fuzz/corpus), then fuzzes from it into a scratch corpus.
# Fails on any crash, sanitizer report, leak or broken contract; prints libFuzzer's
# executions, coverage (cov) and features (ft) at the end.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RFA_FUZZ_BUILD_DIR:-$here/build-fuzz}
seconds=${1:-60}
stop_after=fuzzing
case $seconds in
  --build-only) stop_after=build ;;
  --install-only) stop_after=install ;;
  *)
    if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
      echo "fuzz: SECONDS must be a whole number of seconds, not '$seconds'" >&2
      exit 2
    fi
    ;;
esac

# shellcheck source=scripts/install_debian_packages.sh
source "$here/scripts/install_debian_packages.sh"
install_debian_packages fuzz clang-14 libclang-rt-14-dev
[ "$stop_after" != install ] || exit 0

mkdir -p "$build"
# Line tables are all a report's stack needs (cmake/RfaCompilerFlags.cmake sets -O1 for fuzzing).
CC=clang-14 CXX=clang++-14 cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRFA_ENABLE_FUZZING=ON \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-gline-tables-only -DNDEBUG" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-gline-tables-only -DNDEBUG" \
  -DRFA_ENABLE_CUDA=OFF -DRFA_ENABLE_FORTRAN=OFF -DRFA_ENABLE_BENCHMARKS=OFF -DRFA_ENABLE_DOCS=OFF \
  -DRFA_ENABLE_NATIVE=OFF >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" --target rfa_capi_fuzzer
[ "$stop_after" != build ] || exit 0

# Open MPI keeps some allocations until MPI_Finalize, which a fuzzer never reaches: the
# suppressions name them (tests/fuzz/lsan.supp); rfa's own allocations are all checked.
# Allocations beyond 1 GiB fail (null, so std::bad_alloc): a fuzzed size that asks for more
# (2^31 heads' tables, say) tests rfa's out-of-memory path instead of ending the run in
# libFuzzer's own limit (its malloc limit is its RSS limit).
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:verify_asan_link_order=0:max_allocation_size_mb=1024
export LSAN_OPTIONS=suppressions=$here/tests/fuzz/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fuzzer="$build/tests/fuzz/rfa_capi_fuzzer"
ctest --test-dir "$build" -R rfa_capi_fuzzer_seeds --output-on-failure  # the seed corpus, once each
scratch="$build/fuzz-corpus"
mkdir -p "$scratch"
workers=${RFA_FUZZ_WORKERS:-$(nproc)}
if ! [[ "$workers" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: RFA_FUZZ_WORKERS must be a positive whole number, not '$workers'" >&2
  exit 2
fi
# Fork mode: the workers fuzz in child processes and merge what they find into the corpus; a
# crash, sanitizer report, leak, timeout or out-of-memory stop in any of them ends the run with
# its exit code and input (fork mode would otherwise carry on past timeouts and OOMs).
fork=()
[ "$workers" -gt 1 ] && fork=(-fork="$workers" -ignore_timeouts=0 -ignore_ooms=0)
set +e
"$fuzzer" "${fork[@]}" -max_total_time="$seconds" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$build/" "$scratch" "$here/tests/fuzz/corpus" >"$build/fuzz.log" 2>&1
status=$?
set -e
# One process prints its totals (stat::); fork mode prints a line per job: the last says them.
grep -E "^#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|contract broken" \
  "$build/fuzz.log" || true
[ ${#fork[@]} -eq 0 ] || { grep -E "^#[0-9]+: cov:" "$build/fuzz.log" || true; } | tail -n 1
if [ "$status" -ne 0 ]; then
  echo "fuzz: the fuzzer failed (exit $status); the input is in $build/crash-* (or leak-*, timeout-*), log in $build/fuzz.log" >&2
  tail -40 "$build/fuzz.log" >&2
  exit 1
fi
echo "fuzz: clean after ${seconds} s on $workers core(s)"
