#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/gpu_engine_check.sh's plumbing, without a GPU, Kokkos or MPI: cmake, ctest, dpkg,
# nvidia-smi, mpiexec and python3 are stand-ins that report their arguments, and the programs the
# script would build are stand-ins too. A device call is expensive, so what is checked here is
# what would waste one: the steps run in order and go on after a failed test, a failed build
# stops before the tests, the 4-rank runs use the staged MPI transport and the last one NCCL,
# the logs come back in few files (the device tool returns only a handful), and the summary
# names every step with its verdict.
#   bash gpu_engine_check_test.sh path/to/gpu_engine_check.sh
set -uo pipefail
script=${1:?usage: gpu_engine_check_test.sh path/to/gpu_engine_check.sh}
# shellcheck source=tests/scripts/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

fakes=$tmp/bin
mkdir -p "$fakes" "$tmp/deps/debs"
for tool in cmake ctest dpkg; do
  printf '#!/bin/bash\necho "%s $*"\n[ "${FAKE_FAIL:-}" = "%s $1" ] && exit 1\nexit 0\n' "$tool" "$tool" >"$fakes/$tool"
done
printf '#!/bin/bash\ncase "$*" in *compute_cap*) echo 9.0 ;; *) echo "Fake GPU, 0.0, 1 MiB" ;; esac\n' >"$fakes/nvidia-smi"
# python3 runs perf/suite (reported) and looks for PyTorch's NCCL (none here).
printf '#!/bin/bash\n[[ "$1" == */perf/suite ]] || exit 1\nshift\necho "suite $*"\n' >"$fakes/python3"
cat >"$fakes/mpiexec" <<'FAKE'
#!/bin/bash
# -n N, then the program; compute-sanitizer is only reported.
ranks=$2
shift 2
[ "$1" = compute-sanitizer ] && { echo "compute-sanitizer $*"; echo "ERROR SUMMARY: 0 errors"; exit 0; }
RANKS=$ranks exec "$@"
FAKE
chmod +x "$fakes"/*
touch "$tmp/deps/debs/openmpi-bin.deb"
tar -czf "$tmp/deps/kokkos-src.tar.gz" -C "$tmp" bin  # any tree: the fake cmake never reads it

work=$tmp/work
build=$work/rfa-cuda-build
mkdir -p "$build/tests/cuda" "$build/perf/cuda" "$build/tests/capi" "$build/perf/ring"
printf '#!/bin/bash\necho "all checks passed"\n' >"$build/tests/cuda/rfa_cuda_kernel_test"
printf '#!/bin/bash\necho "capi_cuda_test $*"\n' >"$build/tests/capi/capi_cuda_test"
cat >"$build/perf/ring/rfa_run" <<'FAKE'
#!/bin/bash
echo "rfa_run ranks=${RANKS:-1} transport=${RFA_TRANSPORT:-unset} $*"
echo "ring (slowest rank): forward 1.0 ms, backward 2.0 ms"
[ -n "${FAKE_FAIL:-}" ] && [[ " $* " == *" $FAKE_FAIL "* ]] && { echo "rfa_run: error: made to fail"; exit 2; }
while [ $# -gt 0 ]; do
  [ "$1" = --json ] && echo '{"benchmarks": []}' >"$2"
  shift
done
FAKE
chmod +x "$build"/tests/cuda/* "$build"/tests/capi/* "$build"/perf/ring/*

run_check() {  # result folder, then extra environment
  local out=$1
  shift
  rm -f "$work"/*.json
  env "$@" OUT="$out" GPU_CHECK_WORK="$work" PATH="$fakes:$PATH" bash "$script" run "$tmp/deps" >"$out.txt" 2>&1
}

# 1. Everything passes.
run_check "$tmp/out1"
rc=$?
check "all steps passing: exit code 0" [ $rc -eq 0 ]
# The NCCL run needs an NCCL the script finds on this machine (the CUDA toolkit's here).
steps=22 nccl_runs=1
grep -q "^NCCL: none" "$tmp/out1/device.txt" && steps=21 nccl_runs=0
check "all steps passing: $steps steps ok in the summary" \
  [ "$(grep -cE '^  [a-z_0-9]+ \([0-9]+ s\) ok$' "$tmp/out1.txt")" -eq $steps ]
check "few result files (the device tool returns only a handful)" [ "$(ls "$tmp/out1" | wc -l)" -le 8 ]
check "Kokkos, rfa's configure and build share one log" \
  grep -q "== configure" "$tmp/out1/build.log"
check "Kokkos is built for the GPU's architecture" grep -q "Kokkos_ARCH_HOPPER90=ON" "$tmp/out1/build.log"
check "rfa is built for it" grep -q "RFA_CUDA_ARCHITECTURES=90" "$tmp/out1/build.log"
check "the 4-rank main jobs run over staged MPI" \
  [ "$(grep -c "rfa_run ranks=4 transport=mpi --device cuda" "$tmp/out1/rfa_run.log")" -eq 9 ]
check "every other strategy runs on the GPU, checked at P = 4 and timed at P = 2 and 4" \
  [ "$(grep -cE "rfa_run ranks=[24] transport=mpi --device cuda --strategy (ulysses|allgather|hybrid)" \
    "$tmp/out1/rfa_run.log")" -eq 9 ]
check "the hybrid as a 2 x 2 grid" grep -q -- "ranks=4 .*--strategy hybrid --ulysses-degree 2" "$tmp/out1/rfa_run.log"
check "one rank over the whole sequence beside them" \
  grep -q "rfa_run ranks=1 transport=mpi --device cuda --seq 32768" "$tmp/out1/rfa_run.log"
check "the device strategies' memory test runs with the C API suite" \
  grep -q "rfa_device_strategies_test" "$tmp/out1/ctest.log"
check "NCCL's main job runs where NCCL is found" \
  [ "$(grep -c "rfa_run ranks=1 transport=nccl --device cuda" "$tmp/out1/rfa_run.log")" -eq $nccl_runs ]
check "the window run is S/8" grep -q -- "--seq 32768 .*--window 4096" "$tmp/out1/rfa_run.log"
check "every run's JSON comes back in one file" \
  [ "$(grep -c '^// rfa_run_' "$tmp/out1/rfa_run_json.txt")" -eq $((14 + nccl_runs)) ]
check "a million tokens on 8 ranks, checked on sampled rows" \
  grep -q "rfa_run ranks=8 transport=mpi --device cuda --seq 1048576 .*--sampled-check" "$tmp/out1/rfa_run.log"
check "memcheck runs the window and document cases" grep -q "documents\*:\*window" "$tmp/out1/memcheck.log"
check "the summary shows the main job's lines" grep -q "ring (slowest rank)" "$tmp/out1.txt"
check "the suite's GPU parts run last" grep -q "^suite --device cuda --quick" "$tmp/out1/rfa_run.log"

# 2. One main job fails: the others still run, and the exit code says so.
run_check "$tmp/out2" FAKE_FAIL="--window 4096"
rc=$?
check "a failing run: nonzero exit code" [ $rc -ne 0 ]
check "a failing run: named with its exit code" grep -qE "rfa_run_window \([0-9]+ s\) FAILED \(rc 2\)" "$tmp/out2.txt"
check "a failing run: the steps after it still ran" \
  [ "$(grep -cE "rfa_run_(checked|causal|nccl) \([0-9]+ s\) ok" "$tmp/out2.txt")" -eq $((2 + nccl_runs)) ]

# 3. The build fails: nothing is run against it.
run_check "$tmp/out3" FAKE_FAIL="cmake --build"
rc=$?
check "a failed build: nonzero exit code" [ $rc -ne 0 ]
check "a failed build: the first build step is named" grep -qE "kokkos \([0-9]+ s\) FAILED" "$tmp/out3.txt"
check "a failed build: no test ran" [ ! -e "$tmp/out3/kernel_test.log" ]

# 5. With cuDNN (PyTorch's nvidia.cudnn package and the carried frontend headers): the cuDNN
#    block kernel is built, tested, and measured beside rfa's kernels, in the same few files.
cudnn_pkg=$tmp/site/nvidia/cudnn
mkdir -p "$cudnn_pkg/include" "$cudnn_pkg/lib" "$tmp/deps/_deps/cudnn-frontend/include"
touch "$cudnn_pkg/include/cudnn.h" "$tmp/deps/_deps/cudnn-frontend/include/cudnn_frontend.h"
cat >"$fakes/python3" <<FAKE
#!/bin/bash
case "\$*" in
  *nvidia.cudnn*) echo "$cudnn_pkg" ;;
  */perf/suite*) shift; echo "suite \$*" ;;
  *) exit 1 ;;
esac
FAKE
chmod +x "$fakes/python3"
printf '#!/bin/bash\necho "rfa_cudnn_attention_test $*"\n' >"$build/tests/cuda/rfa_cudnn_attention_test"
for prog in rfa_cuda_ring_step_bench rfa_cuda_kernel_bench; do
  printf '#!/bin/bash\necho "%s $*"\n' "$prog" >"$build/perf/cuda/$prog"
done
chmod +x "$build"/tests/cuda/* "$build"/perf/cuda/*
run_check "$tmp/out5"
rc=$?
check "with cuDNN: exit code 0" [ $rc -eq 0 ]
check "with cuDNN: rfa is configured with it" grep -q "RFA_ENABLE_CUDNN=ON" "$tmp/out5/build.log"
check "with cuDNN: its test runs" grep -qE "cudnn_test \([0-9]+ s\) ok" "$tmp/out5.txt"
check "with cuDNN: the ring's overhead on both kernel choices" \
  [ "$(grep -cE "ring_steps_(rfa|cudnn) \([0-9]+ s\) ok" "$tmp/out5.txt")" -eq 2 ]
check "with cuDNN: the error at P = 2, 4, 8 on both kernel choices" \
  [ "$(grep -c "rfa_run ranks=[248] transport=mpi --device cuda --kernels" "$tmp/out5/rfa_run.log")" -eq 6 ]
check "with cuDNN: still few result files" [ "$(ls "$tmp/out5" | wc -l)" -le 8 ]
check "without cuDNN (case 1): none of its steps" [ "$(grep -c "cudnn_test\|ring_steps_" "$tmp/out1.txt")" -eq 0 ]

# 6. With CUTLASS's headers carried (packed) on a 9.0 GPU: the Hopper kernels are built and the
#    main job runs on it, checked, then timed.
mkdir -p "$tmp/cutlass-src/cutlass/include/cute"
touch "$tmp/cutlass-src/cutlass/include/cute/tensor.hpp"
tar -czf "$tmp/deps/cutlass-headers.tar.gz" -C "$tmp/cutlass-src" cutlass
run_check "$tmp/out6"
rc=$?
check "with CUTLASS: exit code 0" [ $rc -eq 0 ]
check "with CUTLASS: rfa is configured with the Hopper kernels" \
  grep -q "RFA_ENABLE_HOPPER=ON -DCUTLASS_INCLUDE_DIR=$work/cutlass/include" "$tmp/out6/build.log"
check "with CUTLASS: the main job runs on it, checked and timed" \
  [ "$(grep -c "rfa_run ranks=4 transport=mpi --device cuda --kernel-path sm90" "$tmp/out6/rfa_run.log")" -eq 2 ]
check "with CUTLASS: its runs' JSON comes back" [ "$(grep -c '^// rfa_run_.*_sm90' "$tmp/out6/rfa_run_json.txt")" -eq 2 ]
check "without CUTLASS (case 1): built without it, no sm90 run" \
  sh -c "grep -q RFA_ENABLE_HOPPER=OFF '$tmp/out1/build.log' && ! grep -q sm90 '$tmp/out1/rfa_run.log'"
rm "$tmp/deps/cutlass-headers.tar.gz"

# 4. No arguments: the usage, exit code 2.
bash "$script" >"$tmp/usage.txt" 2>&1
rc=$?
check "no arguments: exit code 2" [ $rc -eq 2 ]
check "no arguments: the usage text" grep -q "gpu_engine_check.sh run DEPS" "$tmp/usage.txt"

checks_done "$tmp/out1.txt"
