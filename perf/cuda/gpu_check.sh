#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One call on a lent GPU machine: build the kernels with nvcc alone, check them, time them.
#   bash perf/cuda/gpu_check.sh [quick]
# Builds for the GPU it finds (sm_90 on Hopper), runs rfa_cuda_kernel_test, compute-sanitizer
# memcheck and racecheck on a short case, then rfa_cuda_kernel_bench on the three shapes below with
# both PyTorch SDPA peers and the deterministic backward, and rfa_cuda_ring_step_bench (the
# zigzag ring's own overhead on one GPU). Logs and JSON go to $OUT (the device
# tool's result folder) or ./gpu-check-out; the last lines printed are a summary table.
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
make -C "$here" BUILD_DIR="$build" ARCHS="$arch" PTXAS_VERBOSE=1 -j"$(nproc)" >"$results/build.log" 2>&1 \
  || { tail -n 30 "$results/build.log"; exit 1; }
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
run kernel_test "$build/rfa_cuda_kernel_test"
run memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$build/rfa_cuda_kernel_test" --filter "odd, causal, d128"
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
  run "bench_$i" "$build/rfa_cuda_kernel_bench" $shape --iters "$iters" --deterministic --json "$results/bench_$i.json"
done

# The ring's own overhead: zigzag causal steps of P ranks on this one GPU.
if [ "${1:-}" = quick ]; then
  run ring_steps "$build/rfa_cuda_ring_step_bench" --ranks 2,4,8 --iters 5
else
  run ring_steps "$build/rfa_cuda_ring_step_bench" --ranks 2,4,8
fi

echo
echo "== summary ($(sed -n 2p "$results/device.txt"))"
printf '  %s\n' "${status[@]}"
for i in $(seq 1 ${#shapes[@]}); do
  echo "-- ${shapes[$((i - 1))]}"
  sed -n '/^pass /,/^ratio/p' "$results/bench_$i.log"
done
echo "-- ring steps on one GPU"
sed -n '/^single/,$p' "$results/ring_steps.log"
[[ "${status[*]}" != *FAILED* ]]
