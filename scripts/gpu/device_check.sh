#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# shellcheck disable=SC2046,SC2086  # word lists (ranks, choice_env, run_flags, sizes) split on purpose
# Checks and measures rfa on a lent GPU machine from the bundle that scripts/gpu/build_bundle.sh
# made on a build machine (docs/gpus.md, "Checking on a lent GPU"). Nothing is compiled here.
#
#   bash scripts/gpu/device_check.sh [--bundle DIR] [PHASE...]   # on the GPU machine
#   bash scripts/gpu/device_check.sh --list [PHASE...]           # anywhere: the steps, no runs
#   ... --only REGEX ...                                           # only the steps whose name matches
#
# PHASE is check (correctness: the kernel tests on both paths, the cuDNN test, the C API and engine
# suites on each kernel choice pinned explicitly, every strategy, np 1-4 over staged MPI and np 1
# over NCCL, memcheck), perf (the speed and error measurements beside PyTorch's SDPA peers) or
# million (a million tokens, checked) or profile (racecheck and Nsight Compute on the kernels)
# or ab (a paired A/B of rfa's sm_80 kernels against the bundle's baseline revision, and each
# attention variant's cost: see below) or compute (each strategy's compute on one GPU: every
# rank's attention calls one after another against one attention over the whole sequence, at
# P = 2 and 4, Ulysses on each kernel choice and the KV all-gather on rfa's kernels in its
# device chunks and in one K/V head a chunk)
# or backtrace (the commands RFA_BACKTRACE names, each with a crash report: see below);
# default: check perf, what one call of a 15-minute lease holds (docs/gpus.md, "Checking on a
# lent GPU", says how a lease is spent). Each phase has a budget of device seconds
# (RFA_BUDGET_CHECK 330, RFA_BUDGET_PERF 250, RFA_BUDGET_MILLION 300, RFA_BUDGET_PROFILE 240,
# RFA_BUDGET_AB 260, RFA_BUDGET_COMPUTE 120):
# no step may outlast what is left of it, nor outlast RFA_BUDGET_CALL (570) seconds from the
# start of the script, so that one call ends inside the device tool's 10 minutes. A step's own
# limit is generous; one whose limit had to be cut to what is left is reported "not finished"
# if it reaches that end, and steps that no longer fit at all "not run". --only REGEX (an
# extended regular expression, matched against the whole step name as --list prints it) runs
# and records only the steps it names, e.g. those a fix was for, after a call that ran the rest.
# Every step has its own timeout and appends "name<TAB>verdict<TAB>seconds" to $OUT/summary.tsv
# as it ends (summary.json is rewritten each time), so a killed call still returns every verdict
# so far. Verdicts: ok, FAILED (with the reason), TIMEOUT (its own limit), "not available" (a
# sanitizer or profiler that the machine lacks or refuses), "not finished" and "not run" (the
# budget's end). A test that skips because it sees no GPU (the GPU suites run with
# RFA_TEST_REQUIRE_DEVICE=1, which makes them fail instead), or a kernel path or library asked
# for and missing, is FAILED. Exit code: 0 when every step ran and passed, 1 when one failed or
# timed out, 3 when none failed but some did not finish or run.
# ab runs the baseline's kernel benchmark (build_bundle.sh --baseline REV) and the current one in
# turns, three times each, at B=2 H=16 S=8192 d=128 bf16 (the current one on its sm_80 kernels,
# no peers), then scripts/gpu/ab_compare.py's ratio per row over the pairs: a report, never a
# failure for a speed. A bundle without a baseline fails that part saying so. Then the main job
# once per variant (variant_costs below) and scripts/gpu/variant_costs.py's ratios.
# backtrace runs, for a crash seen in an earlier call, each command of RFA_BACKTRACE (separated
# by ';', each "RANKS PROGRAM ARGS...", PROGRAM one of the bundle's, e.g. "2 rfa_run --device
# cuda --strategy ulysses --seq 1024") with the bundle's crash report preloaded
# (scripts/gpu/crash_report.c): a crashing rank prints its faulting instruction and the return
# addresses on its stack as library+offset, which addr2line resolves on the build machine
# against the unstripped build. Verdicts as for a test: ok when the command passed.
# What comes back ($OUT, or ./device-check-out): device.txt, summary.tsv, summary.json, one log
# per phase run (check.log, perf.log, million.log, profile.log, ab.log, compute.log, backtrace.log) and results.json
# (each measurement's JSON by step): at most 8 files.
set -uo pipefail
# ranks, choice_env and run_flags print lists of words, split on purpose where they are used.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundle=$here/.device-bundle
list=""
only=""
phases=()
while [ $# -gt 0 ]; do
  case $1 in
    --bundle) bundle=$(cd "${2:?--bundle needs a folder}" && pwd); shift ;;
    --list) list=yes ;;
    --only)
      [ $# -ge 2 ] || { echo "device_check: --only needs a regular expression of step names" >&2; exit 2; }
      only=$2
      [[ "" =~ ^($only)$ ]]
      [ $? -eq 2 ] && { echo "device_check: --only '$only' is not an extended regular expression" >&2; exit 2; }
      shift ;;
    check|perf|million|profile|ab|compute|backtrace) phases+=("$1") ;;
    -h|--help) awk 'NR > 3 && !/^#/ { exit } NR > 3 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "device_check: unknown argument '$1' (phases: check, perf, million, profile, ab, compute, backtrace; --list, --only REGEX, --bundle DIR)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#phases[@]} -eq 0 ] && phases=(check perf)

out=${OUT:-$PWD/device-check-out}
work=${RFA_DEVICE_WORK:-/tmp/rfa-device-check}
manifest=$bundle/manifest.txt
# The bundle travels packed (bundle.tar.xz) and is unpacked into the scratch folder here.
if [ -z "$list" ] && [ -f "$bundle/bundle.tar.xz" ]; then
  rm -rf "$work/bundle"
  mkdir -p "$work/bundle"
  if command -v xz >/dev/null; then
    tar -xJf "$bundle/bundle.tar.xz" -C "$work/bundle"
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle/bundle.tar.xz" "$work/bundle"
  fi || { echo "device_check: could not unpack $bundle/bundle.tar.xz" >&2; exit 2; }
  bundle=$work/bundle
fi
bin=$bundle/bin

# ---------------------------------------------------------------- steps and their verdicts
plain_library_path=${LD_LIBRARY_PATH:-}  # as given, before the bundle's libraries join it
plain_python() { LD_LIBRARY_PATH=$plain_library_path python3 "$@"; }
phase=""
phase_start=0
phase_budget=0
call_budget=${RFA_BUDGET_CALL:-570}  # seconds since the start: a device command may run 600
pending=()
summary_json() {  # summary.tsv as JSON: the device line and every step so far
  local first=1 name verdict seconds ph
  {
    printf '{\n  "device": "%s",\n  "bundle": "%s",\n  "steps": [' \
      "$(sed -n 2p "$out/device.txt" 2>/dev/null | sed 's/["\\]/ /g')" \
      "$(sed -n 's/^commit: //p' "$manifest" 2>/dev/null | sed 's/["\\]/ /g')"
    while IFS=$'\t' read -r ph name verdict seconds; do
      [ $first -eq 1 ] || printf ','
      first=0
      printf '\n    {"phase": "%s", "name": "%s", "verdict": "%s", "seconds": %s}' "$ph" "$name" \
        "${verdict//\"/\'}" "${seconds:-0}"
    done <"$out/summary.tsv"
    printf '\n  ]\n}\n'
  } >"$out/summary.json.part" && mv "$out/summary.json.part" "$out/summary.json"
}
record() {  # name, its limit, kind (test or tool), verdict override ("" to judge the exit code),
  # whether the limit was cut to the budget's end ("cut" or "")
  local name=$1 limit=$2 kind=$3 verdict=$4 cut=${5:-} rc seconds file="$work/steps/$1"
  read -r rc seconds <"$file.rc" 2>/dev/null || { rc=255; seconds=0; }
  if [ -z "$verdict" ]; then
    case $rc in
      0) verdict=ok ;;
      124|137) if [ -n "$cut" ]; then verdict="not finished (cut to ${limit} s: the budget's end)"; else verdict="TIMEOUT (${limit} s)"; fi ;;
      77) verdict="FAILED (skipped: it saw no usable GPU, library or kernel path)" ;;
      *) verdict="FAILED (rc $rc)" ;;
    esac
    # A sanitizer or profiler the machine refuses (gVisor: "Device not supported"; no counters).
    if [ "$kind" = tool ] && [ "$rc" != 0 ] && grep -qiE \
      "device not supported|not supported on this|LibraryNotLoaded|ERR_NVGPUCTRPERM|failed to initialize the profiler" \
      "$file.out"; then
      verdict="not available"
    fi
  fi
  {
    echo "== $name: $verdict (${seconds} s)"
    cat "$file.cmd" 2>/dev/null
    cat "$file.out" 2>/dev/null
  } >>"$out/$phase.log"
  printf '%s\t%s\t%s\t%s\n' "$phase" "$name" "$verdict" "$seconds" >>"$out/summary.tsv"
  summary_json
  printf '  %-34s %s (%s s)\n' "$name" "$verdict" "$seconds"
  case $verdict in ok|"not available"*|"not run"*) ;; *) tail -n 4 "$file.out" 2>/dev/null | sed 's/^/    | /' ;; esac
}
selected() { [ -z "$only" ] || [[ "$1" =~ ^($only)$ ]]; }  # whether --only names step $1
# launch NAME SECONDS KIND [VAR=VALUE...] -- COMMAND...: starts a step in the background (settle
# waits for it); its output goes to the phase's log, its JSON (written to $work/json/NAME.json by
# the command) to results.json.
launch() {
  local name=$1 limit=$2 kind=$3
  shift 3
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  selected "$name" || return 0
  if [ -n "$list" ]; then
    printf '%-8s %-34s %4s s  %s%s\n' "$phase" "$name" "$limit" "${env[*]:+${env[*]} }" "$*"
    return
  fi
  local left=$((phase_budget - (SECONDS - phase_start))) call_left=$((call_budget - SECONDS))
  if [ $left -lt 5 ]; then
    pending+=("$name|$limit|$kind|not run (the $phase phase's ${phase_budget} s are spent)")
    return
  fi
  [ $call_left -lt $left ] && left=$call_left
  if [ $left -lt 5 ]; then
    pending+=("$name|$limit|$kind|not run (the call's ${call_budget} s are spent)")
    return
  fi
  local cut=""
  [ "$limit" -gt $left ] && { limit=$left; cut=cut; }
  local file="$work/steps/$name"
  printf '$ %s%s\n' "${env[*]:+${env[*]} }" "$*" >"$file.cmd"
  (
    t0=$SECONDS
    env "${env[@]}" timeout -k 10 "$limit" "$@" >"$file.out" 2>&1 </dev/null
    echo "$? $((SECONDS - t0))" >"$file.rc"
  ) &
  pending+=("$name|$limit|$kind||$cut")
}
# A step of a tool the machine lacks (a sanitizer, a profiler): "not available", nothing run.
unavailable() {  # name, limit, the tool
  [ -n "$list" ] && return
  selected "$1" || return 0
  pending+=("$1|$2|tool|not available (no $3 on this machine)")
}
tool_present() { [ -n "$list" ] || command -v "$1" >/dev/null; }
settle() {  # waits for the launched steps; records them in launch order
  [ -n "$list" ] && return
  wait
  local p name limit kind verdict cut
  for p in "${pending[@]}"; do
    IFS='|' read -r name limit kind verdict cut <<<"$p"
    record "$name" "$limit" "$kind" "$verdict" "$cut"
    [ -f "$work/json/$name.json" ] && add_result "$name" "$work/json/$name.json"
  done
  pending=()
}
step() { launch "$@"; settle; }
add_result() {  # name, JSON file: results.json gains {name: the file's JSON}
  plain_python - "$out/results.json" "$1" "$2" <<'PY' || echo "  (results.json: could not add $1)"
import json, os, sys
path, name, source = sys.argv[1:4]
results = json.load(open(path)) if os.path.exists(path) else {}
try:
    results[name] = json.load(open(source))
except ValueError:
    results[name] = {"unparsed": open(source).read()[-4000:]}
json.dump(results, open(path + ".part", "w"), indent=1)
os.replace(path + ".part", path)
PY
}
begin_phase() {  # name, budget in seconds
  phase=$1
  phase_budget=$2
  phase_start=$SECONDS
  [ -n "$list" ] || echo "== phase $phase (at most $phase_budget s)"
}
json() { echo "$work/json/$1.json"; }  # where step NAME writes its JSON

# ---------------------------------------------------------------- the machine and the bundle
memory_gib=80  # what nvidia-smi says, else an 80 GB card's
nccl_dir="" cudnn_dir=""
if [ -z "$list" ]; then
  [ -x "$bin/rfa_run" ] || { echo "device_check: no bundle at $bundle (make it with scripts/gpu/build_bundle.sh on a build machine and carry it)" >&2; exit 2; }
  rm -rf "$work/steps" "$work/json"  # nothing of an earlier call on this machine is reported again
  mkdir -p "$out" "$work/steps" "$work/json"
  rm -f "$out/summary.tsv" "$out/results.json" "$out"/*.log
  touch "$out/summary.tsv"
  export PATH=$PATH:/usr/local/cuda/bin  # nvcc, compute-sanitizer, ncu where nothing earlier has them
  memory_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -n1)
  [[ "$memory_mib" =~ ^[0-9]+$ ]] && memory_gib=$((memory_mib / 1024))
  # NCCL and cuDNN are the machine's (PyTorch's wheels carry both); nothing here links cuDNN: it
  # is loaded at run time, from the file RFA_CUDNN_LIBRARY names (PyTorch's, which the peers
  # load too), and loads NVRTC and cuBLASLt itself (the runtime-compiled engines), found in
  # PyTorch's CUDA wheels or the toolkit.
  py_dir() { python3 -c "import $1 as m; print(list(m.__path__)[0])" 2>/dev/null; }
  for d in /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu "$(py_dir nvidia.nccl)/lib"; do
    ls "$d"/libnccl.so.2* >/dev/null 2>&1 && { nccl_dir=$d; break; }
  done
  for d in "$(py_dir nvidia.cudnn)/lib" /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu; do
    ls "$d"/libcudnn.so.9* >/dev/null 2>&1 && { cudnn_dir=$d; break; }
  done
  [ -e "$cudnn_dir/libcudnn.so.9" ] && export RFA_CUDNN_LIBRARY=$cudnn_dir/libcudnn.so.9
  cudnn_needs=""
  for d in "$(py_dir nvidia.cu13)/lib" "$(py_dir nvidia.cuda_nvrtc)/lib" "$(py_dir nvidia.cublas)/lib" /usr/local/cuda/lib64; do
    ls "$d"/libnvrtc.so* "$d"/libcublasLt.so* >/dev/null 2>&1 && cudnn_needs+=$d:
  done
  # Python (the peers, PyTorch; this script's own) runs with the library path it was given, not
  # the bundle's; a peer still running after 45 s (PyTorch's import, cuDNN's compilation) is cut,
  # so that the benchmark prints and writes rfa's figures within its step.
  export RFA_PEER_PYTHON="timeout 45 env -u CUDNN_FRONTEND_CUDART_LIB_NAME LD_LIBRARY_PATH=$(printf %q "$plain_library_path") python3"
  mpi=$bundle/mpi/usr
  export OPAL_PREFIX=$mpi PATH=$mpi/bin:$PATH
  # NCCL's warnings (a failed init, an abort) into the steps' logs.
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  # The cuDNN frontend opens a CUDA runtime of its own and tries libcudart.so.12 first: the
  # toolkit's 13, which rfa is built with, wherever a 12 is also found (not for PyTorch, whose
  # runtime is its own: the peers' command unsets it).
  export CUDNN_FRONTEND_CUDART_LIB_NAME=${CUDNN_FRONTEND_CUDART_LIB_NAME:-libcudart.so.13}
  # cuDNN's folder before NCCL's: a toolkit folder that holds NCCL may hold another cuDNN.
  export LD_LIBRARY_PATH=$bundle/lib:$mpi/lib/x86_64-linux-gnu:$mpi/lib/x86_64-linux-gnu/openmpi/lib:${cudnn_dir:+$cudnn_dir:}${nccl_dir:+$nccl_dir:}$cudnn_needs${LD_LIBRARY_PATH:-}
  # One machine, no network: shared memory and the loopback; ranks of concurrent jobs unbound,
  # and yielding while they wait (up to 25 ranks share 16 cores in the check's largest group).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_mca_base_component_show_load_errors=0
  export OMPI_MCA_mpi_yield_when_idle=1
  # Open MPI's shared-memory segments go to /dev/shm, which a container may keep at 64 MiB:
  # where it has less than 1 GiB free, to the scratch folder instead.
  shm_free_mib=$(df -Pm /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
  if ! [[ "$shm_free_mib" =~ ^[0-9]+$ ]] || [ "$shm_free_mib" -lt 1024 ]; then
    mkdir -p "$work/shm"
    export OMPI_MCA_btl_vader_backing_directory=$work/shm
  fi
  # What a failure of the suites would come back to: skipping for want of a device is one.
  export RFA_TEST_REQUIRE_DEVICE=1
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    nvcc --version 2>/dev/null | tail -n 1
    plain_python -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1
    echo "NCCL: ${nccl_dir:-not found}"
    echo "cuDNN: ${RFA_CUDNN_LIBRARY:-not found}; NVRTC and cuBLASLt from ${cudnn_needs:-the loader's cache only}"
    echo "/dev/shm: ${shm_free_mib:-?} MiB free${OMPI_MCA_btl_vader_backing_directory:+; Open MPI's segments in $work/shm}"
    echo "cores: $(nproc)"
    cat "$manifest" 2>/dev/null
  } >"$out/device.txt"
  cat "$out/device.txt"
fi
ranks() { echo mpiexec -n "$1"; }  # the launcher of N ranks, as words for launch
# The kernel choices every suite runs on, each pinned: rfa's sm_80 kernels, rfa's Hopper
# kernels, cuDNN (the automatic choice is never what a check relies on).
choice_env() {
  case $1 in
    rfa) echo RFA_CUDA_KERNELS=rfa RFA_CUDA_KERNEL_PATH=sm80 ;;
    sm90) echo RFA_CUDA_KERNELS=rfa RFA_CUDA_KERNEL_PATH=sm90 ;;
    cudnn) echo RFA_CUDA_KERNELS=cudnn RFA_CUDA_KERNEL_PATH=sm80 ;;
  esac
}
run_flags() {  # rfa_run's flags for a choice
  case $1 in
    rfa) echo --kernels rfa --kernel-path sm80 ;;
    sm90) echo --kernels rfa --kernel-path sm90 ;;
    cudnn) echo --kernels cudnn --kernel-path sm80 ;;
  esac
}
peer=$here/perf/cuda/sdpa_peer.py

# ---------------------------------------------------------------- check
check_phase() {
  begin_phase check "${RFA_BUDGET_CHECK:-330}"
  # Every library each program needs resolves here (cuDNN is loaded at run time and checked by
  # the cuDNN steps).
  step libraries 30 test -- bash -c "! for p in $bin/*; do ldd \$p | sed \"s|^|\$(basename \$p): |\"; done | grep 'not found'"
  step hopper_fragments 60 test -- "$bin/rfa_hopper_fragment_views_test"
  launch kernel_test 150 test -- "$bin/rfa_cuda_kernel_test" --require-path sm90
  launch cudnn_test 150 test -- "$bin/rfa_cudnn_attention_test"
  settle
  local choice n
  # The C API on device pointers against float64 (layouts, masks, GQA/MQA, windows, documents,
  # every strategy), one kernel choice at a time, np 1-4 concurrently on the one GPU.
  for choice in rfa sm90 cudnn; do
    for n in 1 2 3 4; do
      launch "capi.$choice.np$n" 180 test $(choice_env $choice) RFA_TRANSPORT=mpi -- $(ranks $n) \
        "$bin/capi_cuda_test" --gtest_brief=1
    done
    launch "capi.$choice.nccl" 180 test $(choice_env $choice) RFA_TRANSPORT=nccl -- "$bin/capi_cuda_test" --gtest_brief=1
    settle
  done
  # The engine's interface: every strategy against float64 and its device memory against the
  # formula (the formula on rfa's kernels).
  for choice in rfa sm90 cudnn; do
    for n in 1 2 3 4; do
      [ $choice != rfa ] && [ $n = 1 ] && continue
      [ $choice != rfa ] && [ $n = 3 ] && continue
      launch "strategies.$choice.np$n" 180 test $(choice_env $choice) -- $(ranks $n) \
        "$bin/rfa_device_strategies_test" --gtest_brief=1
    done
  done
  launch nccl_communicator 120 test -- "$bin/comm_nccl_communicator_test" --gtest_brief=1
  launch example_c 60 test RFA_TRANSPORT=mpi -- $(ranks 2) "$bin/rfa_example_cuda_c"
  settle
  # The main job, checked against the fp32 kernels: the ring on each choice with a window,
  # then every other strategy; P = 4 ranks sharing the GPU over staged MPI.
  local size="--seq 4096 --heads 8 --head-dim 128 --dtype bf16 --layout zigzag --causal --check --repeat 1"
  for choice in rfa sm90 cudnn; do
    launch "main.ring.$choice" 120 test RFA_TRANSPORT=mpi -- $(ranks 4) "$bin/rfa_run" --device cuda \
      $(run_flags $choice) $size --window 300 --json "$(json "main.ring.$choice")"
  done
  # The automatic choices themselves, the only runs that leave them to rfa (cuDNN where it
  # loads, the Hopper forward on 9.x; the all-gather on rfa's kernels): the header line says
  # what ran.
  launch main.ring.auto 120 test RFA_TRANSPORT=mpi -- $(ranks 4) "$bin/rfa_run" --device cuda --kernels auto \
    --kernel-path auto $size --window 300 --json "$(json main.ring.auto)"
  launch main.allgather.auto 120 test RFA_TRANSPORT=mpi -- $(ranks 4) "$bin/rfa_run" --device cuda --kernels auto \
    --kernel-path auto --strategy allgather $size --no-overlap --json "$(json main.allgather.auto)"
  settle
  for strategy in ulysses allgather hybrid; do
    local degree=""
    [ $strategy = hybrid ] && degree="--ulysses-degree 2"
    launch "main.$strategy" 120 test RFA_TRANSPORT=mpi -- $(ranks 4) "$bin/rfa_run" --device cuda \
      $(run_flags rfa) --strategy $strategy $degree $size --no-overlap --json "$(json "main.$strategy")"
  done
  # The automatic strategy timing the model's plans on the device (RFA_PLAN_MEASURE: synthetic
  # inputs in device memory, each pass waited for on the engine's stream), then checked.
  launch main.auto.measured 120 test RFA_TRANSPORT=mpi RFA_PLAN_MEASURE=1000 -- $(ranks 2) "$bin/rfa_run" \
    --device cuda $(run_flags rfa) --strategy auto $size --no-overlap --json "$(json main.auto.measured)"
  settle
  # The sanitizer on the engine with documents and windows (every kernel choice's step
  # skipping and device boundaries), on both kernel paths' masked cases, and on every head dim
  # but 64 and 128 (their window and documents cases: the query fragments in shared memory, the
  # two-pass backward).
  if tool_present compute-sanitizer; then
    step memcheck.engine 150 tool RFA_TRANSPORT=mpi $(choice_env rfa) -- $(ranks 1) compute-sanitizer \
      --tool memcheck --error-exitcode 1 "$bin/capi_cuda_test" --gtest_brief=1 --gtest_filter='*documents*:*window*'
    step memcheck.kernels 120 tool -- compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$bin/rfa_cuda_kernel_test" --require-path sm90 --filter "documents + window|window 37 + documents"
  else
    unavailable memcheck.engine 150 compute-sanitizer
    unavailable memcheck.kernels 120 compute-sanitizer
    settle
  fi
}

# ---------------------------------------------------------------- perf
perf_phase() {
  begin_phase perf "${RFA_BUDGET_PERF:-250}"
  # The kernels beside PyTorch's SDPA (flash and cuDNN backends) on both paths, the sm80 forward
  # in both its layouts (16 and 32 query rows a warp: rows "forward" at the default, "fwd-w16"
  # beside it) and the sm80 backward in both its key tiles (64 and 128 keys a block: rows
  # "backward" at the default, "bwd-k128" beside it): B=2 H=16 S=8192 d=128 bf16, full and
  # causal, then GQA 16:4 at S=16384, then head dim 64 (the sm80 kernels, whose defaults there,
  # 32 rows and 128 keys, follow d 128's measurement and FlashAttention-2's layout).
  step kernels.b2h16s8192 100 test -- "$bin/rfa_cuda_kernel_bench" --batch 2 --heads 16 --seq 8192 --dim 128 \
    --path all --rows-per-warp both --backward-key-tile both --iters 20 --torch-script "$peer" \
    --json "$(json kernels.b2h16s8192)"
  step kernels.gqa16x4s16384 70 test -- "$bin/rfa_cuda_kernel_bench" --batch 1 --heads 16 --kv-heads 4 --seq 16384 \
    --dim 128 --path all --rows-per-warp both --backward-key-tile both --iters 10 --torch-script "$peer" \
    --json "$(json kernels.gqa16x4s16384)"
  step kernels.b2h16s8192d64 40 test -- "$bin/rfa_cuda_kernel_bench" --batch 2 --heads 16 --seq 8192 --dim 64 \
    --path sm80 --rows-per-warp both --backward-key-tile both --iters 10 --torch-script "$peer" \
    --json "$(json kernels.b2h16s8192d64)"
  # rfa on cuDNN at one rank (the whole engine: rfa_forward / rfa_backward) at the same shape,
  # the sequence in one piece as the peer has it (zigzag would cut it in two: three or four
  # cuDNN calls on half-length blocks, merged).
  local mask
  for mask in causal no-causal; do
    step "one_rank.cudnn.$mask" 40 test RFA_TRANSPORT=nccl -- "$bin/rfa_run" --device cuda $(run_flags cudnn) \
      --batch 2 --seq 8192 --heads 16 --head-dim 128 --dtype bf16 --layout contiguous --"$mask" --no-check \
      --warmup 2 --repeat 10 \
      --json "$(json "one_rank.cudnn.$mask")"
  done
  # The ring's own overhead on one GPU: zigzag, causal, S=32768, P = 2, 4, 8, each choice.
  local kernels
  for kernels in rfa rfa-sm90 cudnn; do
    step "ring_steps.$kernels" 60 test -- "$bin/rfa_cuda_ring_step_bench" --kernels $kernels --ranks 2,4,8 \
      --json "$(json "ring_steps.$kernels")"
  done
  # The bf16 error against float64 at P = 1 (NCCL), 2, 4, 8 (staged MPI), each choice, on the
  # same 64 positions and heads at every P (--sampled-positions: rows sampled per rank would
  # differ with P, and so would the error); the runs of one choice together, before the
  # strategies' timings (sequential, the longest part of the phase).
  local choice
  for choice in rfa sm90 cudnn; do
    local checked="--seq 8192 --heads 8 --head-dim 128 --dtype bf16 --layout zigzag --causal --sampled-positions 64 --repeat 1 --no-overlap"
    launch "error.$choice.p1" 60 test RFA_TRANSPORT=nccl -- "$bin/rfa_run" --device cuda $(run_flags $choice) \
      $checked --json "$(json "error.$choice.p1")"
    for n in 2 4 8; do
      launch "error.$choice.p$n" 60 test RFA_TRANSPORT=mpi -- $(ranks $n) "$bin/rfa_run" --device cuda \
        $(run_flags $choice) $checked --json "$(json "error.$choice.p$n")"
    done
    settle
  done
  # Every strategy's compute at P = 2 and 4 ranks sharing the GPU against one attention over the
  # whole sequence (per-rank compute in the JSON).
  local timed="--seq 32768 --heads 16 --head-dim 128 --dtype bf16 --layout zigzag --causal --no-check --repeat 3 --no-overlap"
  step strategies.whole 40 test RFA_TRANSPORT=nccl -- "$bin/rfa_run" --device cuda $(run_flags rfa) $timed \
    --json "$(json strategies.whole)"
  local strategy n
  for n in 2 4; do
    for strategy in ring ulysses allgather hybrid; do
      [ $strategy = hybrid ] && [ $n = 2 ] && continue
      local degree=""
      [ $strategy = hybrid ] && degree="--ulysses-degree 2"
      step "strategies.$strategy.p$n" 40 test RFA_TRANSPORT=mpi -- $(ranks $n) "$bin/rfa_run" --device cuda \
        $(run_flags rfa) --strategy $strategy $degree $timed --json "$(json "strategies.$strategy.p$n")"
    done
  done
  # Head dim 256 and MLA's 192 / 128 beside the peers (the sm80 kernels: the Hopper path takes
  # one head dim, 64 or 128), last, so that they are what a short budget drops.
  step kernels.b1h16s8192d256 60 test -- "$bin/rfa_cuda_kernel_bench" --batch 1 --heads 16 --seq 8192 --dim 256 \
    --path sm80 --iters 10 --torch-script "$peer" --json "$(json kernels.b1h16s8192d256)"
  step kernels.b1h16s8192d192v128 60 test -- "$bin/rfa_cuda_kernel_bench" --batch 1 --heads 16 --seq 8192 \
    --dim 192 --value-dim 128 --path sm80 --rows-per-warp both --iters 10 --torch-script "$peer" \
    --json "$(json kernels.b1h16s8192d192v128)"
}

# ---------------------------------------------------------------- compute
compute_phase() {
  begin_phase compute "${RFA_BUDGET_COMPUTE:-120}"
  # The strategies' compute efficiency on one GPU (rfa_cuda_ring_step_bench --strategy): zigzag
  # causal, B=1 H=16 S=32768 d=128 bf16, P = 2 and 4, every rank's calls one after another over
  # one attention of the whole sequence (the transposes, gathers and reduce-scatters are the
  # transport's, which ranks sharing one GPU cannot measure). The all-gather in the engine's
  # device chunks and, beside it, in one K/V head a chunk.
  local kernels
  for kernels in rfa cudnn; do
    step "compute.ulysses.$kernels" 45 test -- "$bin/rfa_cuda_ring_step_bench" --strategy ulysses \
      --kernels $kernels --ranks 2,4 --json "$(json "compute.ulysses.$kernels")"
  done
  step compute.allgather.rfa 45 test -- "$bin/rfa_cuda_ring_step_bench" --strategy allgather --kernels rfa \
    --ranks 2,4 --json "$(json compute.allgather.rfa)"
  step compute.allgather.rfa.chunk1 45 test -- "$bin/rfa_cuda_ring_step_bench" --strategy allgather --kernels rfa \
    --ranks 2,4 --kv-heads-per-chunk 1 --json "$(json compute.allgather.rfa.chunk1)"
}

# ---------------------------------------------------------------- million
million_phase() {
  begin_phase million "${RFA_BUDGET_MILLION:-300}"
  # S = 1,048,576, causal, bf16, zigzag, 8 ranks sharing the GPU over staged MPI, forward and
  # backward once, sampled rows against float64. 16 query heads; by docs/memory.md's formula a
  # rank's device memory is 16 bytes per query element and 48 per K/V element (131,072 rows each:
  # 16 GiB at 16 K/V heads, 10 at 8, 7 at 4), times 8 ranks plus their CUDA contexts; each rank
  # also holds its tensors and the staged transport's pinned buffers in host memory (the pool
  # keeps up to six of K's size and six of fp32 dK's while an exchange replaces the one before:
  # about 5 GiB at 4 K/V heads, 8 at 8, 13 at 16). 16 K/V heads (132 GiB) would leave an H200
  # (140 GiB) and the machine's 128 GiB of memory too little margin: a card under 160 GiB runs 8
  # (GQA 16:8, 84 GiB), one under 120 GiB (an 80 GB H100) 4 (GQA 16:4, 60 GiB).
  local kv=16
  [ "$memory_gib" -lt 160 ] && kv=8
  [ "$memory_gib" -lt 120 ] && kv=4
  step "million.kv$kv" 280 test RFA_TRANSPORT=mpi -- $(ranks 8) "$bin/rfa_run" --device cuda $(run_flags rfa) \
    --seq 1048576 --heads 16 --kv-heads $kv --head-dim 128 --dtype bf16 --layout zigzag --causal --sampled-check \
    --warmup 0 --repeat 1 --no-overlap --json "$(json "million.kv$kv")"
}

# ---------------------------------------------------------------- profile
profile_phase() {
  begin_phase profile "${RFA_BUDGET_PROFILE:-240}"
  # Races in the kernels (both paths, the sm80 forward in both layouts, and the sm80 kernels'
  # other head dims), then Nsight Compute on one launch of each forward and backward kernel
  # (sm80, its forward at 16 and 32 rows a warp, and sm90; full, then causal): the sections that
  # say what bounds it.
  if tool_present compute-sanitizer; then
    step racecheck 120 tool -- compute-sanitizer --tool racecheck --error-exitcode 1 "$bin/rfa_cuda_kernel_test" \
      --require-path sm90 --filter "zigzag q(rank 1)|window 37 + documents"
  else
    unavailable racecheck 120 compute-sanitizer
    settle
  fi
  tool_present ncu || { unavailable ncu.kernels 200 ncu; settle; return; }
  step ncu.kernels 200 tool -- ncu --clock-control none \
    --kernel-name regex:'flash_forward_kernel|forward_sm90_kernel|flash_backward_kernel|backward_sm90_kernel' \
    --launch-skip 0 --launch-count 12 --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats "$bin/rfa_cuda_kernel_bench" --batch 2 --heads 16 \
    --seq 8192 --dim 128 --warmup 0 --iters 1 --no-torch --path all --rows-per-warp both --backward-key-tile both
}

# ---------------------------------------------------------------- ab
ab_phase() {
  begin_phase ab "${RFA_BUDGET_AB:-260}"
  local baseline=$bin/rfa_cuda_kernel_bench.baseline r pairs=()
  local shape=(--batch 2 --heads 16 --seq 8192 --dim 128 --dtype bf16 --warmup 5 --iters 20 --no-torch)
  if [ -z "$list" ] && [ ! -x "$baseline" ]; then
    selected ab.baseline.1 && pending+=("ab.baseline.1|0|test|FAILED (no baseline in the bundle: build_bundle.sh --baseline REV)")
    settle
  else
    # In turns, so that a drift of the clocks or the temperature falls on both sides alike.
    for r in 1 2 3; do
      step "ab.baseline.$r" 60 test -- "$baseline" "${shape[@]}" --json "$(json "ab.baseline.$r")"
      step "ab.current.$r" 60 test -- "$bin/rfa_cuda_kernel_bench" "${shape[@]}" --path sm80 \
        --json "$(json "ab.current.$r")"
      pairs+=(--pair "$(json "ab.baseline.$r")" "$(json "ab.current.$r")")
    done
    step ab.compare 30 test LD_LIBRARY_PATH="$plain_library_path" -- python3 "$here/scripts/gpu/ab_compare.py" \
      "${pairs[@]}" --json "$(json ab.compare)"
  fi
  variant_costs
}

# What each variant costs: the main job at one rank on rfa's sm_80 kernels (B=2 H=16 S=8192
# bf16, causal, the sequence in one piece), once per variant that leaves the plain run's visible
# scores as they are (sinks; a soft cap; one document per sequence, given per sequence; the causal
# mask given as one range), and MLA's 192 / 128 beside 192 / 192; the plain run again last, for
# the drift. scripts/gpu/variant_costs.py sets each beside its base.
variant_flags() {
  case $1 in
    plain | plain_end) echo --head-dim 128 --causal ;;
    sinks) echo --head-dim 128 --causal --sinks ;;
    softcap) echo --head-dim 128 --causal --softcap 30 ;;
    documents) echo --head-dim 128 --causal --documents 8192/8192 ;;
    ranges) echo --head-dim 128 --mask "ranges:$work/causal.ranges" ;;
    d192) echo --head-dim 192 --causal ;;
    mla) echo --head-dim 192 --value-head-dim 128 --causal ;;
  esac
}
variant_costs() {
  local v costs=()
  [ -n "$list" ] || printf '0 8192 0 8192 causal\n' >"$work/causal.ranges"
  for v in plain sinks softcap documents ranges d192 mla plain_end; do
    # shellcheck disable=SC2046 # the flags are words
    step "variants.$v" 40 test RFA_TRANSPORT=mpi -- $(ranks 1) "$bin/rfa_run" --device cuda $(run_flags rfa) \
      --batch 2 --seq 8192 --heads 16 --dtype bf16 --layout contiguous $(variant_flags $v) --no-check --no-overlap \
      --warmup 2 --repeat 10 --json "$(json "variants.$v")"
  done
  for v in plain d192; do costs+=(--run "$v" "$(json "variants.$v")"); done
  for v in sinks softcap documents ranges plain_end; do costs+=(--variant "$v" "$(json "variants.$v")" plain); done
  costs+=(--variant mla "$(json variants.mla)" d192)
  step variants.compare 30 test LD_LIBRARY_PATH="$plain_library_path" -- python3 \
    "$here/scripts/gpu/variant_costs.py" "${costs[@]}" --json "$(json variants.compare)"
}

# ---------------------------------------------------------------- backtrace
backtrace_phase() {
  begin_phase backtrace "${RFA_BUDGET_BACKTRACE:-240}"
  if [ -z "${RFA_BACKTRACE:-}" ]; then
    [ -n "$list" ] && return
    echo "device_check: the backtrace phase runs the commands RFA_BACKTRACE names (\"RANKS PROGRAM ARGS...; ...\")" >&2
    exit 2
  fi
  local entries entry words i=0 n program
  IFS=';' read -r -a entries <<<"$RFA_BACKTRACE"
  for entry in "${entries[@]}"; do
    read -r -a words <<<"$entry"  # split on blanks, never globbed (a --gtest_filter=*x* stays)
    [ ${#words[@]} -gt 0 ] || continue
    n=${words[0]} program=${words[1]:-}
    i=$((i + 1))
    if [ -z "$list" ] && { ! [[ "$n" =~ ^[1-9][0-9]*$ ]] || [ ! -x "$bin/$program" ]; }; then
      echo "device_check: RFA_BACKTRACE entry '$entry' is not \"RANKS PROGRAM ARGS\" with a program of the bundle" >&2
      exit 2
    fi
    # Open MPI's own handler, which prints only the frames it can unwind, is switched off.
    step "backtrace.$i" 120 test LD_PRELOAD="$bundle/lib/librfa_crash_report.so" OMPI_MCA_opal_signal= -- \
      $(ranks "$n") "$bin/$program" "${words[@]:2}"
  done
}

for p in "${phases[@]}"; do "${p}_phase"; done
[ -n "$list" ] && exit 0
echo
echo "== summary ($(sed -n 2p "$out/device.txt"))"
awk -F'\t' '{ printf "  %-8s %-34s %s (%s s)\n", $1, $2, $3, $4 }' "$out/summary.tsv"
cut -f3 "$out/summary.tsv" | grep -qE '^(FAILED|TIMEOUT)' && exit 1
cut -f3 "$out/summary.tsv" | grep -qE '^not (finished|run)' && exit 3
exit 0
