#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The engine on a CUDA device, end to end, in one call on a lent GPU machine (which has nvcc,
# CMake and PyTorch, but no Kokkos, MPI or GoogleTest, and no network):
#
#   bash scripts/gpu_engine_check.sh prepare DEPS KOKKOS_SRC   # here, on Debian 12, with apt
#   bash scripts/gpu_engine_check.sh run DEPS [quick]           # there; DEPS carried along
#
# prepare: DEPS/kokkos-src.tar.gz (KOKKOS_SRC, a Kokkos 4.6 source tree, with the edits CUDA 13
# needs applied when missing), DEPS/debs/ (Debian's Open MPI, GoogleTest and Google Benchmark
# packages, unpacked there without installing), DEPS/_deps/cudnn-frontend/include (the cuDNN
# frontend's headers) and DEPS/cutlass-headers.tar.gz (CUTLASS's, for the Hopper kernels; both
# from scripts/fetch_gpu_headers.sh).
# run: builds Kokkos (CUDA backend, the GPU's architecture) and rfa against it, then runs the
# CUDA kernel test, the C API suite on device pointers against the float64 reference at 1-4
# ranks sharing the GPU over staged MPI and at 1 rank over NCCL, the GPU example, memcheck of
# the engine with documents and a window, and rfa_run --device cuda (full causal against a
# sliding window of S/8, zigzag, P=4), then perf/suite --device cuda --quick. With cuDNN (its
# headers and libraries from PyTorch's nvidia.cudnn package, the frontend's carried in DEPS) it
# also runs the cuDNN block kernel's test, the C API suite on cuDNN (capi_cuda_test.cudnn.*), the
# ring's overhead on both kernel choices, the error against float64 at P = 1, 2, 4, 8 on both,
# and the main job on cuDNN beside the kernel benchmark's SDPA peers; last, a million-token run
# (8 ranks sharing the GPU, sampled check against float64). Logs go to $OUT (the
# device tool's result folder) or ./gpu-engine-out; the last lines printed are a summary.
# "quick": smaller rfa_run sizes.
# Everything else goes under $GPU_CHECK_WORK (default /opt/rfa-gpu-check): the unpacked
# packages, Kokkos' source, build and install, rfa's build and the JSON of the runs.
set -uo pipefail
mode=${1:-}
deps=${2:-}
# Without both arguments: the comment above, up to the first line of code.
[ -n "$mode" ] && [ -n "$deps" ] || { awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "$mode" = prepare ]; then
  src=${3:?prepare needs the Kokkos source tree}
  instance=$src/core/src/Cuda/Kokkos_Cuda_Instance.hpp
  # CUDA 13: cudaGraphAddDependencies takes edge data; cudaMemPrefetchAsync a cudaMemLocation.
  sed -i -e 's/cudaGraphAddDependencies(graph, from, to, numDependencies)/cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies)/' \
    -e 's/cudaMemPrefetchAsync(devPtr, count, dstDevice, m_stream)/cudaMemPrefetchAsync(devPtr, count, cudaMemLocation{cudaMemLocationTypeDevice, dstDevice}, 0, m_stream)/' \
    -e 's/cudaMemPrefetchAsync(devPtr, count, dstDevice,$/cudaMemPrefetchAsync(devPtr, count, cudaMemLocation{cudaMemLocationTypeDevice, dstDevice}, 0,/' \
    -e 's/cudaMemAdvise(devPtr, count, advice, device);/cudaMemAdvise(devPtr, count, advice, cudaMemLocation{cudaMemLocationTypeDevice, device});/' \
    "$instance"
  grep -q "nullptr, numDependencies" "$instance" && grep -q "cudaMemLocation{" "$instance" \
    || { echo "could not apply the CUDA 13 edits to $instance" >&2; exit 1; }
  mkdir -p "$deps/debs"
  tar -czf "$deps/kokkos-src.tar.gz" -C "$(dirname "$src")" \
    --transform "s|^$(basename "$src")|kokkos-src|" "$(basename "$src")"
  (cd "$deps/debs" && apt-get download openmpi-bin libopenmpi3 libopenmpi-dev openmpi-common libpmix2 libhwloc15 \
    libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 \
    libnl-3-200 libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libgfortran5 libmunge2 libgtest-dev \
    libbenchmark-dev libbenchmark1debian)
  # The cuDNN frontend's headers as they are; CUTLASS's (27 MB of them) packed, to stay well
  # under what a device call carries.
  bash "$here/scripts/fetch_gpu_headers.sh" "$deps" && rm -rf "$deps/_deps/wheels"
  if [ -d "$deps/_deps/cutlass/include" ]; then
    tar -czf "$deps/cutlass-headers.tar.gz" -C "$deps/_deps" cutlass && rm -rf "$deps/_deps/cutlass"
  fi
  du -sh "$deps"
  exit 0
fi
[ "$mode" = run ] || { echo "mode must be prepare or run" >&2; exit 2; }
deps=$(cd "$deps" && pwd)
quick=${3:-}
results=${OUT:-$PWD/gpu-engine-out}
mkdir -p "$results"
export PATH=/usr/local/cuda/bin:$PATH
jobs=$(nproc)
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d .)
cap=${cap:-90}
declare -A kokkos_arch=([80]=AMPERE80 [86]=AMPERE86 [89]=ADA89 [90]=HOPPER90 [100]=BLACKWELL100)
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -n 2
  echo "cores: $jobs"
} | tee "$results/device.txt"

status=()
note() {  # name, rc
  case $2 in
    0) status+=("$1 ok") ;;
    77) status+=("$1 skipped") ;;
    *) status+=("$1 FAILED (rc $2)") ;;
  esac
}
# The device tool brings back only a few files: steps share logs (log=NAME before a step).
step() {  # name, then the command: output appended to $results/${log:-name}.log, its tail printed
  local name=$1
  shift
  local t0=$SECONDS file="$results/${log:-$name}.log"
  echo "== $name: $*" | tee -a "$file"
  "$@" >"$file.part" 2>&1
  local rc=$?
  cat "$file.part" >>"$file"
  note "$name ($((SECONDS - t0)) s)" $rc
  tail -n 3 "$file.part"
  rm -f "$file.part"
  return $rc
}
finish() {
  echo
  echo "== summary ($(sed -n 2p "$results/device.txt"))"
  printf '  %s\n' "${status[@]}"
  # The main job's table and verdict lines, run by run.
  [ -f "$results/rfa_run.log" ] && grep -E "^== |slowest rank|hidden|max error|TF/s|kernels|^ +[0-9]+ \|" "$results/rfa_run.log"
  [[ "${status[*]}" != *FAILED* ]]
  exit $?
}

# ---- what the machine lacks: Debian's packages unpacked into one prefix
work=${GPU_CHECK_WORK:-/opt/rfa-gpu-check}
prefix=$work/deps
mkdir -p $prefix
for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" $prefix; done
# Debian names them through alternatives, which unpacking does not set up.
for tool in mpicc mpicxx mpiexec mpirun; do
  [ -e $prefix/usr/bin/$tool.openmpi ] && ln -sf $tool.openmpi $prefix/usr/bin/$tool
done
export OPAL_PREFIX=$prefix/usr
export PATH=$prefix/usr/bin:$PATH
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# One GPU machine, no network: shared memory and the loopback only.
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none

kokkos=$work/kokkos-cuda
tar -xzf "$deps/kokkos-src.tar.gz" -C "$work"
log=build step kokkos bash -c "cmake -S $work/kokkos-src -B $work/kokkos-build -DCMAKE_BUILD_TYPE=Release \
  -DKokkos_ENABLE_CUDA=ON -DKokkos_ARCH_${kokkos_arch[$cap]:-HOPPER90}=ON -DBUILD_SHARED_LIBS=ON \
  -DCMAKE_INSTALL_PREFIX=$kokkos && cmake --build $work/kokkos-build -j$jobs && cmake --install $work/kokkos-build" \
  || finish

# NCCL: the CUDA toolkit's, else the one PyTorch's wheel carries.
nccl_flags=()
nccl_lib=$(ls /usr/local/cuda/lib64/libnccl.so* /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null | head -n1)
if [ -z "$nccl_lib" ]; then
  wheel=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])' 2>/dev/null)
  nccl_lib=$(ls "$wheel"/lib/libnccl.so* 2>/dev/null | head -n1)
  [ -n "$nccl_lib" ] && nccl_flags=(-DRFA_NCCL_LIBRARY="$nccl_lib" -DRFA_NCCL_INCLUDE_DIR="$wheel/include")
  [ -n "$nccl_lib" ] && export LD_LIBRARY_PATH=$(dirname "$nccl_lib"):$LD_LIBRARY_PATH
fi
[ -n "$nccl_lib" ] || nccl_flags=(-DRFA_ENABLE_NCCL=OFF)
echo "NCCL: ${nccl_lib:-none}" | tee -a "$results/device.txt"

build=$work/rfa-cuda-build
targets=(capi_cuda_test rfa_device_strategies_test rfa_cuda_kernel_test rfa_run rfa_example_cuda_c rfa_cuda_kernel_bench
  rfa_cuda_ring_step_bench)
[ -n "$nccl_lib" ] && targets+=(comm_nccl_communicator_test)

# cuDNN: its headers and libraries from PyTorch's nvidia.cudnn package, the frontend's carried.
cudnn_flags=(-DRFA_ENABLE_CUDNN=OFF)
fe_include=$deps/_deps/cudnn-frontend/include
cudnn_dir=$(python3 -c 'import nvidia.cudnn; print(list(nvidia.cudnn.__path__)[0])' 2>/dev/null)
if [ -f "$fe_include/cudnn_frontend.h" ] && [ -n "$cudnn_dir" ] && [ -f "$cudnn_dir/include/cudnn.h" ]; then
  cudnn_flags=(-DRFA_ENABLE_CUDNN=ON -DCUDNN_FRONTEND_INCLUDE_DIR="$fe_include" -DCUDNN_INCLUDE_DIR="$cudnn_dir/include")
  export LD_LIBRARY_PATH=$cudnn_dir/lib:$LD_LIBRARY_PATH  # libcudnn.so.9, loaded at run time
  targets+=(rfa_cudnn_attention_test)
else
  cudnn_dir=""
fi
echo "cuDNN: ${cudnn_dir:-none}" | tee -a "$results/device.txt"
# The Hopper kernels: CUTLASS's headers, carried packed, on a 9.x GPU.
hopper_flags=(-DRFA_ENABLE_HOPPER=OFF)
hopper=""
if [ -f "$deps/cutlass-headers.tar.gz" ] && [ "$cap" = 90 ]; then
  tar -xzf "$deps/cutlass-headers.tar.gz" -C "$work"
  hopper_flags=(-DRFA_ENABLE_HOPPER=ON -DCUTLASS_INCLUDE_DIR="$work/cutlass/include")
  hopper=yes
fi
echo "Hopper kernels: ${hopper:-no}" | tee -a "$results/device.txt"
log=build step configure cmake -S "$here" -B $build -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT=$kokkos \
  -DCMAKE_PREFIX_PATH=$prefix/usr -DMPI_C_COMPILER=$prefix/usr/bin/mpicc -DMPI_CXX_COMPILER=$prefix/usr/bin/mpicxx \
  -DMPIEXEC_EXECUTABLE=$prefix/usr/bin/mpiexec -DRFA_CUDA_ARCHITECTURES="$cap" -DRFA_ENABLE_HWLOC=OFF \
  -DRFA_ENABLE_FORTRAN=OFF -DRFA_ENABLE_DOCS=OFF "${nccl_flags[@]}" "${cudnn_flags[@]}" "${hopper_flags[@]}" \
  || finish
step build cmake --build $build -j"$jobs" --target "${targets[@]}" || finish

cd $build || finish
step kernel_test ./tests/cuda/rfa_cuda_kernel_test
[ -n "$cudnn_dir" ] && log=kernel_test step cudnn_test ./tests/cuda/rfa_cudnn_attention_test
step ctest ctest --output-on-failure --timeout 90 \
  -R "^(capi_cuda_test|rfa_device_strategies_test|example_cuda_c|comm_nccl_communicator_test)"
# The engine with documents and a window under memcheck: the device copy of the boundaries,
# the kernels reading them, the ring's skipped steps.
step memcheck env RFA_TRANSPORT=mpi mpiexec -n 1 compute-sanitizer --tool memcheck --error-exitcode 1 \
  ./tests/capi/capi_cuda_test --gtest_filter='*documents*:*window*'

# The main job on the GPU: full causal against a window of S/8, zigzag, P=4 ranks
# sharing the GPU over staged MPI; one checked run at a smaller size first.
seq=32768
[ "$quick" = quick ] && seq=8192
run_job() {  # name, ranks, then rfa_run flags
  local name=$1 ranks=$2
  shift 2
  log=rfa_run step "$name" env RFA_TRANSPORT=mpi mpiexec -n "$ranks" ./perf/ring/rfa_run --device cuda "$@" \
    --json "$work/$name.json"
}
run_job rfa_run_checked 4 --seq 4096 --heads 8 --head-dim 128 --dtype bf16 --layout zigzag --causal --window 300 --check
run_job rfa_run_causal 4 --seq $seq --heads 16 --head-dim 128 --dtype bf16 --layout zigzag --causal --no-check --repeat 5
run_job rfa_run_window 4 --seq $seq --heads 16 --head-dim 128 --dtype bf16 --layout zigzag --causal \
  --window $((seq / 8)) --no-check --repeat 5
if [ -n "$hopper" ]; then
  run_job rfa_run_checked_sm90 4 --kernel-path sm90 --seq 4096 --heads 8 --head-dim 128 --dtype bf16 --layout zigzag \
    --causal --window 300 --check
  run_job rfa_run_causal_sm90 4 --kernel-path sm90 --seq $seq --heads 16 --head-dim 128 --dtype bf16 --layout zigzag \
    --causal --no-check --repeat 5
fi
# Every other strategy on the GPU (ranks sharing it over staged MPI): checked against the fp32
# kernels at P = 4, then timed at P = 2 and 4 beside one rank over the whole sequence (per-rank
# compute, bytes sent and workspace in the JSON: their sum of compute against one attention).
for strategy in ulysses allgather hybrid; do
  degree=()
  [ $strategy = hybrid ] && degree=(--ulysses-degree 2)
  run_job "rfa_run_${strategy}_checked" 4 --strategy $strategy "${degree[@]}" --seq 4096 --heads 8 --head-dim 128 \
    --dtype bf16 --layout zigzag --causal --check --repeat 1 --no-overlap
  for ranks in 2 4; do
    run_job "rfa_run_${strategy}_p$ranks" $ranks --strategy $strategy "${degree[@]}" --seq $seq --heads 16 \
      --head-dim 128 --dtype bf16 --layout zigzag --causal --no-check --repeat 5 --no-overlap
  done
done
run_job rfa_run_whole_p1 1 --seq $seq --heads 16 --head-dim 128 --dtype bf16 --layout zigzag --causal --no-check \
  --repeat 5 --no-overlap
[ -n "$nccl_lib" ] && log=rfa_run step rfa_run_nccl env RFA_TRANSPORT=nccl ./perf/ring/rfa_run --device cuda --seq 8192 \
  --heads 16 --head-dim 128 --dtype bf16 --layout zigzag --causal --check --json $work/rfa_run_nccl.json
if [ -n "$cudnn_dir" ]; then
  # The ring's own overhead on one GPU (S=32768, H=16, causal, zigzag), both kernel choices.
  for kernels in rfa cudnn; do
    log=rfa_run step "ring_steps_$kernels" ./perf/cuda/rfa_cuda_ring_step_bench --kernels $kernels --ranks 2,4,8 \
      --json "$work/ring_steps_$kernels.json"
  done
  # The kernels against PyTorch's SDPA (flash and cuDNN backends) in the same run: the peers.
  log=rfa_run step kernel_bench ./perf/cuda/rfa_cuda_kernel_bench --json "$work/kernel_bench.json"
  # Error against float64 at P = 1 (NCCL), 2, 4, 8 (staged MPI), both kernel choices.
  for kernels in rfa cudnn; do
    for ranks in 2 4 8; do
      run_job "rfa_run_error_${kernels}_p$ranks" "$ranks" --kernels $kernels --seq 4096 --heads 8 --head-dim 128 \
        --dtype bf16 --layout zigzag --causal --check --repeat 1 --no-overlap
    done
    [ -n "$nccl_lib" ] && log=rfa_run step "rfa_run_error_${kernels}_p1" env RFA_TRANSPORT=nccl ./perf/ring/rfa_run \
      --device cuda --kernels $kernels --seq 4096 --heads 8 --head-dim 128 --dtype bf16 --layout zigzag --causal \
      --check --repeat 1 --json "$work/rfa_run_error_${kernels}_p1.json"
    # One rank at the shapes of the kernel benchmark, full and causal: rfa_forward / rfa_backward.
    [ -n "$nccl_lib" ] && for mask in --causal --no-causal; do
      log=rfa_run step "rfa_run_1rank_${kernels}${mask}" env RFA_TRANSPORT=nccl ./perf/ring/rfa_run --device cuda \
        --kernels $kernels --batch 2 --seq 8192 --heads 16 --head-dim 128 --dtype bf16 $mask --no-check --repeat 10 \
        --json "$work/rfa_run_1rank_${kernels}${mask}.json"
    done
  done
fi
# A million tokens: 8 ranks sharing the GPU over staged MPI (H=16, d=128, bf16, causal, zigzag),
# forward and backward once, checked on sampled rows against float64; its time and the GPU's
# memory in the log. Bounded so that it cannot eat the rest of the device time.
if [ "$quick" != quick ]; then
  log=rfa_run step rfa_run_million env RFA_TRANSPORT=mpi timeout 300 mpiexec -n 8 ./perf/ring/rfa_run --device cuda \
    --seq 1048576 --heads 16 --head-dim 128 --dtype bf16 --layout zigzag --causal --sampled-check --warmup 0 \
    --repeat 1 --no-overlap --json "$work/rfa_run_million.json"
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv >>"$results/rfa_run.log" 2>&1 || true
fi
for name in rfa_run_checked rfa_run_causal rfa_run_window rfa_run_checked_sm90 rfa_run_causal_sm90 rfa_run_nccl rfa_run_million \
            $(cd "$work" && ls rfa_run_error_* rfa_run_1rank_* rfa_run_ulysses_* rfa_run_allgather_* rfa_run_hybrid_* \
              rfa_run_whole_p1.json ring_steps_* kernel_bench.json 2>/dev/null | sed 's/\.json$//'); do
  [ -f "$work/$name.json" ] && { echo "// $name"; cat "$work/$name.json"; }
done >"$results/rfa_run_json.txt"
# The regression suite's GPU parts on tiny problems (its result files and figures, not timings).
log=rfa_run step suite env RFA_TRANSPORT=mpi RFA_MPIEXEC=mpiexec python3 "$here/perf/suite" --device cuda --quick \
  --ranks 2 --build "$build" --out "$work/suite"
finish
