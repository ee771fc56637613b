#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/gpu/build_bundle.sh --dry-run on a stand-in build tree: the programs that need only
# the CUDA kernels (the first five of its list) must be there, and one missing fails the dry run
# naming it; the others (they need a CUDA-enabled Kokkos) may be missing, and the dry run lists
# them and goes on to stage Open MPI (here a stand-in apt-get that fails, so the run ends
# there, having passed the programs' check). A library a program needs that is found neither
# here nor among those the GPU machine provides (its CUDA driver, say) fails the bundle. CI's
# own dry run stages everything for real.
#   bash build_bundle_test.sh path/to/build_bundle.sh
set -uo pipefail
script=${1:?build_bundle.sh}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/scripts/checks.sh
source "$here/checks.sh"

fakes=$tmp/fakes
mkdir -p "$fakes"
printf '#!/bin/sh\necho "stand-in apt-get: no network here" >&2\nexit 100\n' >"$fakes/apt-get"
chmod +x "$fakes/apt-get"
build=$tmp/build
kernel_programs=(tests/cuda/rfa_cuda_kernel_test tests/cuda/rfa_cudnn_attention_test
  tests/cuda/rfa_hopper_fragment_views_test perf/cuda/rfa_cuda_kernel_bench perf/cuda/rfa_cuda_ring_step_bench)
make_programs() {
  rm -rf "$build"
  local p
  for p in "$@"; do
    mkdir -p "$build/$(dirname "$p")"
    printf '#!/bin/sh\nexit 0\n' >"$build/$p"
    chmod +x "$build/$p"
  done
}
dry_run() {
  PATH="$fakes:$PATH" bash "$script" --dry-run --from-build "$build" --bundle "$tmp/bundle" --cache "$tmp/cache" \
    >"$tmp/out" 2>&1
}

# 1. The fifth kernel program missing: refused, named.
make_programs "${kernel_programs[@]:0:4}"
dry_run
check "a kernel program missing: exit code 1" [ $? -eq 1 ]
check "... naming it" grep -q "rfa_cuda_ring_step_bench is missing" "$tmp/out"
cp "$tmp/out" "$tmp/log"

# 2. The five kernel programs there, the engine's missing: listed, and the run goes on to Open MPI.
make_programs "${kernel_programs[@]}"
dry_run
check "the engine's programs missing: listed as needing a CUDA-enabled Kokkos" \
  grep -q "need a CUDA-enabled Kokkos): capi_cuda_test rfa_device_strategies_test comm_nccl_communicator_test rfa_example_cuda_c rfa_run" "$tmp/out"
check "... no program refused" sh -c "! grep -q 'is missing' '$tmp/out'"
check "... and the run went on to stage Open MPI" grep -q "apt-get download failed" "$tmp/out"
cat "$tmp/out" >>"$tmp/log"

# 3. A kernel program linked against a library that is gone: refused, naming it; one that
#    needs only what the GPU machine has (libcuda.so.1, the driver) goes on.
linked_against() {  # program path, the soname of a library made for it and then removed
  local dir=$tmp/link
  mkdir -p "$dir"
  printf 'int rfa_stand_in(void) { return 0; }\n' >"$dir/lib.c"
  printf 'int rfa_stand_in(void);\nint main(void) { return rfa_stand_in(); }\n' >"$dir/main.c"
  cc -shared -fPIC -Wl,-soname,"$2" -o "$dir/$2" "$dir/lib.c" &&
    cc -o "$build/$1" "$dir/main.c" "$dir/$2" && rm -f "$dir/$2"
}
if ! command -v cc >/dev/null; then
  echo "skipped: no C compiler to make a program that needs a missing library"
else
  make_programs "${kernel_programs[@]}"
  linked_against "${kernel_programs[0]}" librfa_gone.so.1
  dry_run
  check "a library found nowhere: exit code 1" [ $? -eq 1 ]
  check "... naming it" grep -q "found neither here nor on the GPU machine: librfa_gone.so.1" "$tmp/out"
  cat "$tmp/out" >>"$tmp/log"
  make_programs "${kernel_programs[@]}"
  linked_against "${kernel_programs[0]}" libcuda.so.1
  dry_run
  check "the driver's library missing here: the GPU machine's own, the run goes on" \
    grep -q "apt-get download failed" "$tmp/out"
  cat "$tmp/out" >>"$tmp/log"
fi
# 4. --baseline REV: REV's own nvcc-only Makefile builds its kernel benchmark for sm_90 (a
#    stand-in nvcc that records its arguments and makes empty objects and programs), staged as
#    bin/rfa_cuda_kernel_bench.baseline; a revision that is no commit is refused.
#    Skipped where the script is no file of a repository's commit (a copy of the tree inside
#    another repository's ignored folder, as scripts/mutate.py's scratch copy, has no commit of
#    its own to export).
if ! command -v cc >/dev/null ||
  ! git -C "$(dirname "$script")" ls-files --error-unmatch "$(basename "$script")" >/dev/null 2>&1 ||
  ! git -C "$(dirname "$script")" rev-parse --verify --quiet HEAD >/dev/null; then
  echo "skipped: no C compiler, or the script is not a file of a git repository with a commit"
else
  cat >"$fakes/nvcc" <<'FAKE'
#!/bin/bash
echo "nvcc $*" >>"$NVCC_LOG"
out=""; compile=""
while [ $# -gt 0 ]; do
  case $1 in -o) out=$2; shift ;; -c) compile=yes ;; esac
  shift
done
if [ -n "$compile" ]; then cc -c -x c /dev/null -o "$out"; else printf '#!/bin/sh\nexit 0\n' >"$out"; chmod +x "$out"; fi
FAKE
  chmod +x "$fakes/nvcc"
  make_programs "${kernel_programs[@]}"
  head=$(git -C "$(dirname "$script")" rev-parse --short HEAD)
  NVCC=$fakes/nvcc NVCC_LOG=$tmp/nvcc.log PATH="$fakes:$PATH" bash "$script" --dry-run --from-build "$build" --bundle "$tmp/bundle" \
    --cache "$tmp/cache" --baseline HEAD >"$tmp/out" 2>&1
  check "--baseline HEAD: built by its own Makefile" grep -q "building $head's kernel benchmark (perf/cuda/Makefile, sm_90)" "$tmp/out"
  check "... for sm_90 only" sh -c "grep -q 'arch=compute_90,code=sm_90' '$tmp/nvcc.log' && ! grep -q 'compute_80' '$tmp/nvcc.log'"
  check "... staged as the baseline benchmark" [ -x "$tmp/cache/stage/bin/rfa_cuda_kernel_bench.baseline" ]
  check "... and the run went on to stage Open MPI" grep -q "apt-get download failed" "$tmp/out"
  cat "$tmp/out" >>"$tmp/log"
  NVCC=$fakes/nvcc NVCC_LOG=$tmp/nvcc.log PATH="$fakes:$PATH" bash "$script" --dry-run --from-build "$build" --bundle "$tmp/bundle" \
    --cache "$tmp/cache" --baseline HEAD >"$tmp/out" 2>&1
  check "--baseline again: the benchmark built before is taken" grep -q "kernel benchmark ($head) already at" "$tmp/out"
  NVCC=$fakes/nvcc NVCC_LOG=$tmp/nvcc.log PATH="$fakes:$PATH" bash "$script" --dry-run --from-build "$build" --bundle "$tmp/bundle" \
    --cache "$tmp/cache" --baseline no-such-revision >"$tmp/out" 2>&1
  check "--baseline of no commit: exit code 1, saying so" \
    sh -c "[ $? -eq 1 ] && grep -q 'no-such-revision is not a commit' '$tmp/out'"
  cat "$tmp/out" >>"$tmp/log"
fi
checks_done "$tmp/log"
