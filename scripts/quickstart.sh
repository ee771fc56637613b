#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rfa quick start: installs what is missing (Debian 12), configures, builds, then
#   run  [flags]  runs the main job (rfa_run) under mpiexec, one rank per core; flags go to rfa_run
#   test [args]   builds the docs and runs the whole test suite through ctest, one test per core
#                 at a time (RFA_JOBS); args go to ctest
# Both are idempotent: a second run installs nothing and rebuilds only what changed.
# Environment: RFA_BUILD_DIR (default ./build), RFA_RANKS (default: one per core, at least 2),
# RFA_CMAKE_ARGS (extra configure flags, e.g. "-DRFA_ENABLE_CUDA=OFF"), RFA_JOBS (default: cores).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RFA_BUILD_DIR:-$here/build}
jobs=${RFA_JOBS:-$(nproc)}
mode=${1:-}
[ $# -gt 0 ] && shift

# The usage text is the header comment above (less its licence line): from its second line
# up to the first line that is not a comment, without the leading "# ".
usage() {
  echo "usage: bash scripts/quickstart.sh run|test [flags]"
  awk '/SPDX-License-Identifier/ { next } NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' \
    "${BASH_SOURCE[0]}"
}
case "$mode" in
  run|test) ;;
  -h|--help|help) usage; exit 0 ;;
  "") { echo "quickstart: no mode given"; usage; } >&2; exit 2 ;;
  *) { echo "quickstart: unknown mode '$mode'"; usage; } >&2; exit 2 ;;
esac

packages=(cmake make g++ gfortran pkg-config libtrilinos-kokkos-dev libopenmpi-dev openmpi-bin
          libhwloc-dev googletest libgtest-dev libbenchmark-dev doxygen graphviz binutils
          python3-numpy python3-scipy python3-matplotlib python3-pip)  # perf/compare, perf/plot; pip: fetch_cudnn_frontend.sh
# shellcheck source=scripts/install_debian_packages.sh
source "$here/scripts/install_debian_packages.sh"
install_debian_packages quickstart "${packages[@]}"

# shellcheck disable=SC2086  # RFA_CMAKE_ARGS is a list of flags
mkdir -p "$build"
# With nvcc, the cuDNN block kernel is compiled too: its frontend headers come from PyPI.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  bash "$here/scripts/fetch_cudnn_frontend.sh" "$build"
fi
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release ${RFA_CMAKE_ARGS:-} >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$jobs"

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
    cmake --build "$build" --target docs
    # One test per core at a time: an MPI test counts as many cores as it has ranks (its
    # PROCESSORS property), and one with more ranks than cores runs alone.
    exec ctest --test-dir "$build" --output-on-failure --parallel "$jobs" "$@"
    ;;
esac
