#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One call on a lent GPU machine: build the kernels with nvcc alone, check them, time them.
#   bash perf/cuda/gpu_check.sh [quick]
# Builds for the GPU it finds (sm_90 on Hopper), with the Hopper kernels when CUTLASS's headers
# are at $RFA_CUTLASS_INCLUDE or build/_deps/cutlass/include (scripts/fetch_gpu_headers.sh
# build; carry build/_deps/cutlass to the GPU machine). Runs the Hopper fragment test, rfa_cuda_kernel_test
# (every forward and backward on each path the GPU runs), compute-sanitizer memcheck and
# racecheck on short cases, then rfa_cuda_kernel_bench on the three shapes below with both
# PyTorch SDPA peers, every kernel path and the deterministic backward, Nsight Compute on each
# forward and backward kernel (one launch each, full and causal), and rfa_cuda_ring_step_bench
# (the zigzag ring's own overhead on one GPU, on each forward path). Logs and JSON go to $OUT
# (the device tool's result folder) or ./gpu-check-out; the last lines printed are a summary
# table.
# "quick": one benchmark shape, fewer iterations.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
results=${OUT:-$PWD/gpu-check-out}
mkdir -p "$results"
export PATH=/usr/local/cuda/bin:$PATH
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d .)
arch=${RFA_CUDA_ARCHS:-${cap:-90}}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -n 2
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} | tee "$results/device.txt"

build=/tmp/rfa-kernels-build
cutlass=${RFA_CUTLASS_INCLUDE:-$here/../../build/_deps/cutlass/include}
[ -f "$cutlass/cute/tensor.hpp" ] || cutlass=""
echo "CUTLASS: ${cutlass:-none (no Hopper kernels)}" | tee -a "$results/device.txt"
make -C "$here" BUILD_DIR="$build" ARCHS="$arch" CUTLASS="$cutlass" PTXAS_VERBOSE=1 -j"$(nproc)" \
  >"$results/build.log" 2>&1 || { tail -n 30 "$results/build.log"; exit 1; }
grep -E "spill|Used" "$results/build.log" | sort | uniq -c >"$results/ptxas.txt"

status=()
run() {  # name, then the command; keeps going after a failure
  local name=$1
  shift
  echo "== $name: $*"
  "$@" >"$results/$name.log" 2>&1
  local rc=$?
  case $rc in
    0) status+=("$name ok") ;;
    77) status+=("$name skipped (no usable GPU)") ;;
    *) status+=("$name FAILED (rc $rc)") ;;
  esac
  tail -n 3 "$results/$name.log"
}
[ -n "$cutlass" ] && run fragment_views "$build/rfa_hopper_fragment_views_test"
run kernel_test "$build/rfa_cuda_kernel_test"
run memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$build/rfa_cuda_kernel_test" --filter "odd, causal, d128"
run memcheck_strided compute-sanitizer --tool memcheck --error-exitcode 1 "$build/rfa_cuda_kernel_test" --filter "strided"
run memcheck_merge compute-sanitizer --tool memcheck --error-exitcode 1 "$build/rfa_cuda_kernel_test" --filter "merge, stripe"
run racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$build/rfa_cuda_kernel_test" --filter "zigzag q(rank 1)"

iters=30
shapes=("--batch 2 --heads 16 --seq 8192 --dim 128" "--batch 2 --heads 32 --seq 8192 --dim 64"
        "--batch 1 --heads 16 --kv-heads 4 --seq 16384 --dim 128")
[ "${1:-}" = quick ] && { iters=10; shapes=("${shapes[0]}"); }
i=0
for shape in "${shapes[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086  # shape is a list of flags
  run "bench_$i" "$build/rfa_cuda_kernel_bench" $shape --iters "$iters" --deterministic --path all \
    --json "$results/bench_$i.json"
done

# Nsight Compute: one launch of each forward and backward kernel (sm80 and sm90; full, then
# causal) on the first shape, the sections that say what bounds it.
# shellcheck disable=SC2086  # shape is a list of flags
run ncu_kernels ncu --kernel-name regex:'flash_forward_kernel|forward_sm90_kernel|flash_backward_kernel|backward_sm90_kernel' \
  --launch-skip 0 --launch-count 8 \
  --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section WarpStateStats "$build/rfa_cuda_kernel_bench" ${shapes[0]} --warmup 0 --iters 1 --no-torch --path all

# The ring's own overhead: zigzag causal steps of P ranks on this one GPU.
ring_iters=()
[ "${1:-}" = quick ] && ring_iters=(--iters 5)
run ring_steps "$build/rfa_cuda_ring_step_bench" --ranks 2,4,8 "${ring_iters[@]}" --json "$results/ring_steps.json"
[ -n "$cutlass" ] && run ring_steps_sm90 "$build/rfa_cuda_ring_step_bench" --ranks 2,4,8 --kernels rfa-sm90 \
  "${ring_iters[@]}" --json "$results/ring_steps_sm90.json"

echo
echo "== summary ($(sed -n 2p "$results/device.txt"))"
printf '  %s\n' "${status[@]}"
for i in $(seq 1 ${#shapes[@]}); do
  echo "-- ${shapes[$((i - 1))]}"
  sed -n '/^pass /,/^ratio/p' "$results/bench_$i.log"
done
for steps in ring_steps ring_steps_sm90; do
  [ -f "$results/$steps.log" ] || continue
  echo "-- $steps: the ring on one GPU"
  sed -n '/^single/,$p' "$results/$steps.log"
done
[[ "${status[*]}" != *FAILED* ]]
