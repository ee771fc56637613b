#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rfa quick start: installs what is missing (Debian 12), configures, builds, then
#   run  [flags]  builds the library and the main job (rfa_run) only, and runs the job under
#                 mpiexec, one rank per core; flags go to rfa_run
#   test [args]   builds everything (tests, benchmarks, docs) and runs the whole test suite
#                 through ctest, one test per core at a time (RFA_JOBS); args go to ctest
#   build [args]  builds what test [args] would, and runs nothing (CI builds its later passes
#                 while the first one's tests run)
# Each is idempotent: a second run installs nothing and rebuilds only what changed.
# Environment: RFA_BUILD_DIR (default ./build), RFA_RANKS (default: one per core, at least 2),
# RFA_CMAKE_ARGS (extra configure flags, e.g. "-DRFA_ENABLE_CUDA=OFF"), RFA_JOBS (default: cores),
# RFA_BUILD_ONLY_SELECTED=1 (test, build: build only the programs of the tests the args select,
# and no docs unless they select a docs test: scripts/selected_test_targets.py; CI's sanitizer
# pass).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RFA_BUILD_DIR:-$here/build}
jobs=${RFA_JOBS:-$(nproc)}
mode=${1:-}
[ $# -gt 0 ] && shift

# The usage text is the header comment above (less its licence line): from its second line
# up to the first line that is not a comment, without the leading "# ".
usage() {
  echo "usage: bash scripts/quickstart.sh run|test|build [flags]"
  awk '/SPDX-License-Identifier/ { next } NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' \
    "${BASH_SOURCE[0]}"
}
case "$mode" in
  run|test|build) ;;
  -h|--help|help) usage; exit 0 ;;
  "") { echo "quickstart: no mode given"; usage; } >&2; exit 2 ;;
  *) { echo "quickstart: unknown mode '$mode'"; usage; } >&2; exit 2 ;;
esac
# build is test without the tests' run.
run_tests=1
if [ "$mode" = build ]; then
  mode=test
  run_tests=0
fi

# What the library and the main job need; the test suite, the benchmarks' peer comparison and
# plots (perf/compare, perf/plot: numpy, scipy, matplotlib), the docs and the tests across
# "nodes" (scripts/multinode: iproute2's ip and tc, util-linux's unshare), the GPU bundle's
# packing and its check (xz-utils) and the refusal of a CPU the build does not fit (an emulated
# one: qemu-user), the environment's decimals read under a decimal-comma locale (localedef
# builds one from the sources in locales) and a program built with the other MPI family
# (libmpich-dev: MPICH beside Open MPI, which stays the default mpicc and mpiexec) need the rest.
packages=(cmake make g++ gfortran pkg-config libtrilinos-kokkos-dev libopenmpi-dev openmpi-bin
          libhwloc-dev libbenchmark-dev binutils)
[ "$mode" = test ] && packages+=(googletest libgtest-dev doxygen graphviz python3-numpy python3-scipy
                                 python3-matplotlib python3-pip iproute2 util-linux xz-utils qemu-user
                                 locales libmpich-dev)  # pip: fetch_gpu_headers.sh
# shellcheck source=scripts/install_debian_packages.sh
source "$here/scripts/install_debian_packages.sh"
install_debian_packages quickstart "${packages[@]}"

mkdir -p "$build"
# A list of targets left by an earlier RFA_BUILD_ONLY_SELECTED run is dropped (it may name
# targets that this configuration does not have); such a run sets its own below.
configure=(-DCMAKE_BUILD_TYPE=Release -U RFA_SELECTED_TARGETS)
if [ "$mode" = test ]; then
  configure+=(-DRFA_ENABLE_TESTS=ON -DRFA_ENABLE_DOCS=ON)
  # With nvcc, the cuDNN block kernel and the Hopper kernels are compiled too: their header-only
  # dependencies (the cuDNN frontend, CUTLASS) come from PyPI.
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    bash "$here/scripts/fetch_gpu_headers.sh" "$build"
  fi
elif [ ! -f "$build/CMakeCache.txt" ]; then
  # A first run configures without the tests and docs (and so without their packages); a
  # later test run turns them on in the same folder.
  configure+=(-DRFA_ENABLE_TESTS=OFF -DRFA_ENABLE_DOCS=OFF)
fi
# shellcheck disable=SC2086  # RFA_CMAKE_ARGS is a list of flags
cmake -S "$here" -B "$build" "${configure[@]}" ${RFA_CMAKE_ARGS:-} >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log" >&2; exit 1; }
if [ "$mode" = run ]; then
  cmake --build "$build" -j "$jobs" --target rfa rfa_run
elif [ "${RFA_BUILD_ONLY_SELECTED:-0}" = 1 ]; then
  # Selected tests that run no program of the build (a docs check, say) need none built.
  mapfile -t targets < <(python3 "$here/scripts/selected_test_targets.py" "$build" "$@")
  if [ ${#targets[@]} -gt 0 ]; then
    # One goal over them all (CMakeLists.txt, RFA_SELECTED_TARGETS), so the jobs stay busy.
    cmake "$build" "-DRFA_SELECTED_TARGETS=$(IFS=';'; echo "${targets[*]}")" >>"$build/configure.log" 2>&1 \
      || { cat "$build/configure.log" >&2; exit 1; }
    cmake --build "$build" -j "$jobs" --target rfa_selected_targets
  fi
else
  cmake --build "$build" -j "$jobs"
fi

mpi_flags=(--oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)

case "$mode" in
  run)
    # One rank per core (at least 2, so there is a ring): more ranks than cores take turns and
    # time each other's work; rfa_run says so when that happens.
    cores=$(nproc)
    ranks=${RFA_RANKS:-$(( cores > 2 ? cores : 2 ))}
    exec mpiexec -np "$ranks" "${mpi_flags[@]}" "$build/perf/ring/rfa_run" "$@"
    ;;
  test)
    # The docs, unless only selected tests' programs are built and none of those tests is a docs test.
    docs_tests=$(ctest --test-dir "$build" -N -L docs "$@")
    if [ "${RFA_BUILD_ONLY_SELECTED:-0}" != 1 ] || grep -qE '^ +Test +#' <<<"$docs_tests"; then
      cmake --build "$build" --target docs
    fi
    [ "$run_tests" = 1 ] || exit 0
    # One test per core at a time: an MPI test counts as many cores as it has ranks (its
    # PROCESSORS property), and one with more ranks than cores runs alone.
    exec ctest --test-dir "$build" --output-on-failure --parallel "$jobs" "$@"
    ;;
esac
