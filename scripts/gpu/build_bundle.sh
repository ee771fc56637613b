#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds, on this machine (no GPU needed), everything a lent GPU machine runs: the bundle that
# scripts/gpu/device_check.sh checks and measures there (docs/gpus.md, "Checking on a lent GPU").
#
#   bash scripts/gpu/build_bundle.sh --kokkos-source SRC [--bundle DIR] [--cache DIR] [--jobs N] [--baseline REV]
#   bash scripts/gpu/build_bundle.sh --dry-run --from-build BUILD [--bundle DIR] [--baseline REV]
#
# SRC is a Kokkos source: a tree, a .tar.gz of one, or a git repository (the tag in
# RFA_KOKKOS_REF, default 4.6.01). Kokkos is built with its CUDA backend for Hopper (HOPPER90)
# with the small edits CUDA 13 needs, then rfa against it for sm_90 (rfa's sm_80 kernels run
# there too) with the cuDNN block kernel and the Hopper (sm_90a) kernels required (their
# header-only dependencies from PyPI: scripts/fetch_gpu_headers.sh), NCCL, no -march=native.
# The bundle (default .device-bundle, ignored by git, what a device call carries) holds
# bundle.tar.xz, which device_check.sh unpacks there:
#   bin/      the device check's programs (tests, rfa_run, the GPU benchmarks), stripped
#   lib/      librfa, Kokkos' libraries and what else they need beyond the C/C++ runtime, the
#             CUDA driver, NCCL and cuDNN (the GPU machine's own: PyTorch's wheels carry both),
#             and the crash report device_check.sh's backtrace phase preloads
#   mpi/      Debian's Open MPI 4.1 runtime, unpacked from its packages (the GPU machine has none)
# and beside it manifest.txt (what was built, from which commit, with which versions, how
# large) and steps.txt (the steps, with their timeouts). It fails when the packed bundle and
# the working tree together exceed RFA_BUNDLE_LIMIT_MIB (default 48: a device call carries
# 64 MiB). Packed with xz, 75 MiB of programs and libraries travel as about 12.
# --baseline REV also builds the kernel benchmark of commit REV of this repository with nvcc
# alone (its own standalone Makefile: perf/cuda/, or kernels_cuda/ before 391894d), for sm_90,
# into the bundle as bin/rfa_cuda_kernel_bench.baseline (manifest.txt names REV): the other
# side of device_check.sh's ab phase, a paired A/B of rfa's sm_80 kernels then and now (the
# baseline for the cost of the variants: e93937c, the kernels measured on an H100 before them).
# --dry-run (CI): no CUDA-enabled Kokkos is built; the bundle is staged from BUILD, a build of
# this repository with the CUDA kernels (the programs a CUDA-enabled Kokkos is needed for are
# then listed as missing), so that staging, the MPI runtime, the size check and the step list
# are checked where a full build does not fit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundle=$here/.device-bundle
cache=$here/.device-cache
jobs=$(nproc)
kokkos_source=""
from_build=""
dry=""
baseline=""
while [ $# -gt 0 ]; do
  case $1 in
    --kokkos-source) kokkos_source=${2:?}; shift ;;
    --bundle) bundle=${2:?}; shift ;;
    --cache) cache=${2:?}; shift ;;
    --jobs) jobs=${2:?}; shift ;;
    --dry-run) dry=yes ;;
    --baseline) baseline=${2:?--baseline needs a revision}; shift ;;
    --from-build) from_build=$(cd "${2:?}" && pwd); shift ;;
    -h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "build_bundle: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$dry" ]; then
  [ -n "$from_build" ] || { echo "build_bundle: --dry-run needs --from-build BUILD" >&2; exit 2; }
else
  [ -n "$kokkos_source" ] || { echo "build_bundle: --kokkos-source SRC is needed (a Kokkos 4.x tree, tarball or git repository)" >&2; exit 2; }
fi
bundle=$(realpath -m "$bundle")
cache=$(realpath -m "$cache")
limit_mib=${RFA_BUNDLE_LIMIT_MIB:-48}
export PATH=/usr/local/cuda/bin:$PATH
say() { echo "build_bundle: $*"; }

# The programs device_check.sh runs, by where a build puts them; the first five need only the
# CUDA kernels, the rest an engine built against a CUDA-enabled Kokkos.
programs=(tests/cuda/rfa_cuda_kernel_test tests/cuda/rfa_cudnn_attention_test
  tests/cuda/rfa_hopper_fragment_views_test perf/cuda/rfa_cuda_kernel_bench perf/cuda/rfa_cuda_ring_step_bench
  tests/capi/capi_cuda_test tests/engine/rfa_device_strategies_test tests/comm_nccl/comm_nccl_communicator_test
  examples/rfa_example_cuda_c perf/ring/rfa_run)
kernel_only=5

# ---------------------------------------------------------------- Kokkos with CUDA (HOPPER90)
# The edits Kokkos 4.6 needs for CUDA 13 (all in Kokkos_Cuda_Instance.hpp): cudaGraphAddDependencies
# takes edge data; cudaMemPrefetchAsync and cudaMemAdvise take a cudaMemLocation.
patch_kokkos_for_cuda13() {
  local instance=$1/core/src/Cuda/Kokkos_Cuda_Instance.hpp
  grep -q "cudaMemPrefetchAsync(devPtr, count, dstDevice" "$instance" || return 0  # already edited, or a newer Kokkos
  sed -i -e 's/cudaGraphAddDependencies(graph, from, to, numDependencies)/cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies)/' \
    -e 's/cudaMemPrefetchAsync(devPtr, count, dstDevice, m_stream)/cudaMemPrefetchAsync(devPtr, count, cudaMemLocation{cudaMemLocationTypeDevice, dstDevice}, 0, m_stream)/' \
    -e 's/cudaMemPrefetchAsync(devPtr, count, dstDevice,$/cudaMemPrefetchAsync(devPtr, count, cudaMemLocation{cudaMemLocationTypeDevice, dstDevice}, 0,/' \
    -e 's/cudaMemAdvise(devPtr, count, advice, device);/cudaMemAdvise(devPtr, count, advice, cudaMemLocation{cudaMemLocationTypeDevice, device});/' \
    "$instance"
  grep -q "nullptr, numDependencies" "$instance" && grep -q "cudaMemLocation{" "$instance" ||
    { say "could not apply the CUDA 13 edits to $instance"; exit 1; }
}
build_kokkos() {
  local src=$cache/kokkos-src
  rm -rf "$src"
  mkdir -p "$src"
  if [ -f "$kokkos_source" ]; then
    tar -xzf "$kokkos_source" -C "$src" --strip-components=1
  elif [ -f "$kokkos_source/CMakeLists.txt" ]; then
    cp -r "$kokkos_source/." "$src"
  elif git -C "$kokkos_source" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$kokkos_source" archive "${RFA_KOKKOS_REF:-4.6.01}" | tar -x -C "$src"
  fi
  [ -f "$src/CMakeLists.txt" ] || { say "no Kokkos source tree in $kokkos_source"; exit 1; }
  kokkos_version=$(sed -n 's/^set(Kokkos_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))/\2/p' "$src/CMakeLists.txt" | paste -sd.)
  kokkos=$cache/kokkos-$kokkos_version-cuda-hopper90
  if [ -f "$kokkos/.built" ]; then
    say "Kokkos $kokkos_version (CUDA, HOPPER90) already at $kokkos"
    return
  fi
  patch_kokkos_for_cuda13 "$src"
  say "building Kokkos $kokkos_version with CUDA for HOPPER90 into $kokkos"
  cmake -S "$src" -B "$cache/kokkos-build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_CUDA=ON \
    -DKokkos_ARCH_HOPPER90=ON -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX="$kokkos" >"$cache/kokkos.log" 2>&1 &&
    cmake --build "$cache/kokkos-build" -j "$jobs" >>"$cache/kokkos.log" 2>&1 &&
    cmake --install "$cache/kokkos-build" >>"$cache/kokkos.log" 2>&1 ||
    { tail -n 30 "$cache/kokkos.log"; say "Kokkos failed to build (log: $cache/kokkos.log)"; exit 1; }
  touch "$kokkos/.built"
}

# ---------------------------------------------------------------- rfa against it
build_rfa() {
  local build=$cache/rfa-build
  bash "$here/scripts/fetch_gpu_headers.sh" "$build"
  say "configuring rfa (CUDA engine, cuDNN and Hopper kernels required) in $build"
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos" -DRFA_CUDA_ARCHITECTURES=90 \
    -DRFA_ENABLE_NATIVE=OFF -DRFA_ENABLE_CUDNN=ON -DRFA_ENABLE_HOPPER=ON -DRFA_ENABLE_NCCL=ON \
    -DRFA_ENABLE_FORTRAN=OFF -DRFA_ENABLE_DOCS=OFF -DRFA_ENABLE_TESTS=ON -DRFA_ENABLE_BENCHMARKS=ON \
    >"$cache/rfa-configure.log" 2>&1 || { tail -n 30 "$cache/rfa-configure.log"; exit 1; }
  grep -q "Kokkos has CUDA" "$cache/rfa-configure.log" || { say "rfa did not find a CUDA-enabled Kokkos"; exit 1; }
  local targets=()
  for p in "${programs[@]}"; do targets+=("$(basename "$p")"); done
  say "building ${targets[*]} (about 20 minutes on 2 cores: every engine file goes through nvcc)"
  cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$cache/rfa-build.log" 2>&1 ||
    { grep -E "error|Error" "$cache/rfa-build.log" | head -n 30; say "rfa failed to build (log: $cache/rfa-build.log)"; exit 1; }
  from_build=$build
}

# ---------------------------------------------------------------- the A/B baseline
# REV's kernel benchmark, built by REV's own nvcc-only Makefile from an export of REV in a scratch
# folder outside the working tree (whose checks read every file in it), kept in the cache by
# commit: built once.
build_baseline() {
  local commit dir="" d src
  commit=$(git -C "$here" rev-parse --verify --quiet "$baseline^{commit}") ||
    { say "--baseline $baseline is not a commit of this repository"; exit 1; }
  baseline=$(git -C "$here" rev-parse --short "$commit")
  baseline_bench=$cache/baseline-$baseline/rfa_cuda_kernel_bench
  if [ -x "$baseline_bench" ]; then
    say "the baseline's kernel benchmark ($baseline) already at $baseline_bench"
    return
  fi
  mkdir -p "$cache/baseline-$baseline"
  src=$(mktemp -d)
  if ! git -C "$here" archive "$commit" | tar -x -C "$src"; then
    rm -rf "$src"
    say "could not export $baseline from the repository at $here (git archive)"
    exit 1
  fi
  for d in perf/cuda kernels_cuda; do
    [ -f "$src/$d/Makefile" ] && grep -q "rfa_cuda_kernel_bench" "$src/$d/Makefile" && { dir=$d; break; }
  done
  if [ -z "$dir" ]; then
    rm -rf "$src"
    say "$baseline has no nvcc-only Makefile that builds rfa_cuda_kernel_bench (perf/cuda or kernels_cuda)"
    exit 1
  fi
  local log=$cache/baseline-$baseline/build.log
  say "building $baseline's kernel benchmark ($dir/Makefile, sm_90) into $cache/baseline-$baseline"
  if ! make -C "$src/$dir" -j "$jobs" ARCHS=90 NVCC="${NVCC:-nvcc}" build-nvcc/rfa_cuda_kernel_bench >"$log" 2>&1; then
    rm -rf "$src"
    tail -n 30 "$log"
    say "$baseline's kernel benchmark failed to build (log: $log)"
    exit 1
  fi
  cp "$src/$dir/build-nvcc/rfa_cuda_kernel_bench" "$baseline_bench"
  rm -rf "$src"
}

# ---------------------------------------------------------------- staging
# Libraries the GPU machine has itself, or must use its own of: the C and C++ runtimes, the
# CUDA driver, NCCL and cuDNN (PyTorch's), and Open MPI's (staged apart, in mpi/).
system_library() {
  case $(basename "$1") in
    ld-linux*|libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++.so*|libgcc_s.so*) return 0 ;;
    libcuda.so*|libnccl.so*|libcudnn*) return 0 ;;
    libmpi*|libopen-rte*|libopen-pal*|libhwloc*|libevent*|libpmix*|libfabric*|libucx*|libuc[ps]*|libibverbs*|librdmacm*|libnl-*|libpsm*|libmunge*|libgfortran*|libquadmath*|libudev*) return 0 ;;
  esac
  return 1
}
stage_programs() {
  rm -rf "$stage"
  mkdir -p "$stage/bin" "$stage/lib"
  local missing=() p i=0
  for p in "${programs[@]}"; do
    i=$((i + 1))
    if [ -x "$from_build/$p" ]; then
      cp "$from_build/$p" "$stage/bin/"
    elif [ -n "$dry" ] && [ $i -gt $kernel_only ]; then
      missing+=("$(basename "$p")")
    else
      say "$from_build/$p is missing"
      exit 1
    fi
  done
  [ ${#missing[@]} -eq 0 ] || say "dry run: not in $from_build (they need a CUDA-enabled Kokkos): ${missing[*]}"
  [ -z "$baseline" ] || cp "$baseline_bench" "$stage/bin/rfa_cuda_kernel_bench.baseline"
  # Each library the programs load (recursively, as ldd resolves them here) that is not the
  # GPU machine's own; one that ldd cannot find here, and the GPU machine would not provide,
  # fails the bundle now rather than the device's time.
  local lib loaded unresolved=""
  loaded=$(for p in "$stage"/bin/*; do LD_LIBRARY_PATH=$from_build/src:$from_build/capi:${LD_LIBRARY_PATH:-} ldd "$p" || true; done)
  for lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$loaded" | sort -u); do
    system_library "$lib" || cp -L "$lib" "$stage/lib/$(basename "$lib")"
  done
  for lib in $(awk '$2 == "=>" && $3 == "not" { print $1 }' <<<"$loaded" | sort -u); do
    system_library "$lib" || unresolved+=" $lib"
  done
  [ -z "$unresolved" ] || { say "the programs need libraries found neither here nor on the GPU machine:$unresolved"; exit 1; }
  strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true
  # The crash report that device_check.sh's backtrace phase preloads.
  cc -shared -fPIC -O1 -Wall -o "$stage/lib/librfa_crash_report.so" "$here/scripts/gpu/crash_report.c" -ldl -lpthread ||
    { say "could not build the crash report (scripts/gpu/crash_report.c)"; exit 1; }
}
# Debian's Open MPI 4.1 and what it loads, unpacked without installing (the GPU machine has no
# MPI); kept in the cache between builds.
mpi_packages=(openmpi-bin libopenmpi3 openmpi-common libpmix2 libhwloc15 libevent-2.1-7 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2
  libpsm-infinipath1 libgfortran5 libmunge2 libudev1)
stage_mpi() {
  local debs=$cache/mpi-debs
  mkdir -p "$debs"
  if [ "$(ls "$debs"/*.deb 2>/dev/null | wc -l)" -lt ${#mpi_packages[@]} ]; then
    say "downloading Open MPI's packages into $debs"
    # As root, a machine whose package lists are missing or stale gets them once.
    (cd "$debs" && apt-get download "${mpi_packages[@]}" >"$cache/apt-download.log" 2>&1) ||
      { [ "$(id -u)" -eq 0 ] && apt-get update -qq >>"$cache/apt-download.log" 2>&1 &&
        (cd "$debs" && apt-get download "${mpi_packages[@]}" >>"$cache/apt-download.log" 2>&1); } ||
      { cat "$cache/apt-download.log"; say "apt-get download failed"; exit 1; }
  fi
  mkdir -p "$stage/mpi"
  local deb
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$stage/mpi"; done
  # What a run does not read: documentation, manuals, headers, static libraries, the Fortran
  # and Java bindings' compilers and the compiler wrappers' data.
  rm -rf "$stage"/mpi/usr/share/{doc,man,lintian,bug} "$stage"/mpi/usr/include "$stage"/mpi/lib/systemd \
    "$stage"/mpi/lib/udev "$stage"/mpi/usr/lib/x86_64-linux-gnu/openmpi/include
  find "$stage/mpi" -name '*.a' -delete
  # Debian names the launchers through alternatives, which unpacking does not set up.
  local tool
  for tool in mpiexec mpirun; do
    [ -e "$stage/mpi/usr/bin/$tool.openmpi" ] && ln -sf "$tool.openmpi" "$stage/mpi/usr/bin/$tool"
  done
  [ -x "$stage/mpi/usr/bin/orted" ] || { say "the Open MPI runtime is incomplete (no orted)"; exit 1; }
}
write_manifest() {
  local size_mib=$1 tree_mib=$2 staged_mib=$3
  {
    echo "rfa device bundle ($( [ -n "$dry" ] && echo "dry run: staged from a build without a CUDA-enabled Kokkos" || echo complete))"
    echo "commit: $(git -C "$here" rev-parse --short HEAD)$(git -C "$here" diff --quiet HEAD 2>/dev/null || echo '+changes')"
    echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(gcc --version | head -n1), $(nvcc --version | tail -n1)"
    [ -n "${kokkos_version:-}" ] && echo "Kokkos: $kokkos_version (CUDA, HOPPER90)"
    sed -n 's/^-- rfa: \(the cuDNN block kernel\|the Hopper kernels\)/\1/p' "$cache/rfa-configure.log" 2>/dev/null || true
    echo "CUDA architectures: $(sed -n 's/^RFA_CUDA_ARCHITECTURES:[A-Z]*=//p' "$from_build/CMakeCache.txt") (sm_90a for the Hopper kernels)"
    echo "size: $size_mib MiB packed ($staged_mib MiB unpacked), the working tree beside it $tree_mib MiB (a call carries 64 MiB)"
    [ -z "$baseline" ] || echo "baseline: $baseline (its kernel benchmark: bin/rfa_cuda_kernel_bench.baseline)"
    echo "programs: $(ls "$stage/bin" | tr '\n' ' ')"
    echo "libraries: $(ls "$stage/lib" | tr '\n' ' ')"
  } >"$bundle/manifest.txt"
}

if [ -z "$dry" ]; then
  mkdir -p "$cache"
  build_kokkos
  build_rfa
fi
if [ -n "$baseline" ]; then
  mkdir -p "$cache"
  build_baseline
fi
stage=$cache/stage
say "staging the bundle in $stage"
stage_programs
stage_mpi
say "packing it into $bundle/bundle.tar.xz"
mkdir -p "$bundle"
rm -rf "${bundle:?}/bundle.tar.xz" "$bundle/manifest.txt" "$bundle/steps.txt" "${bundle:?}/bin" "${bundle:?}/lib" \
  "$bundle/mpi"
XZ_OPT=${XZ_OPT:--6 -T0} tar -cJf "$bundle/bundle.tar.xz" -C "$stage" bin lib mpi  # xz on every core
staged_mib=$(( $(du -sb "$stage" | cut -f1) / 1048576 ))
size_mib=$(( $(du -sb "$bundle" | cut -f1) / 1048576 ))
# What travels beside it: the tracked and untracked-not-ignored files of the working tree.
tree_mib=$(( $(cd "$here" && git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -n1 | cut -f1) / 1048576 ))
write_manifest "$size_mib" "$tree_mib" "$staged_mib"
bash "$here/scripts/gpu/device_check.sh" --bundle "$bundle" --list check perf million profile ab >"$bundle/steps.txt"
cat "$bundle/manifest.txt"
say "$(grep -c . "$bundle/steps.txt") steps (steps.txt); the device call: bash scripts/gpu/device_check.sh, carrying $(basename "$bundle")"
if [ $((size_mib + tree_mib)) -gt "$limit_mib" ]; then
  say "FAILED: the packed bundle ($size_mib MiB) and the working tree ($tree_mib MiB) exceed $limit_mib MiB"
  exit 1
fi
