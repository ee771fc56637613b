#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/gpu/device_check.sh without a GPU: the bundle's programs, nvidia-smi, mpiexec and
# compute-sanitizer are stand-ins that report their arguments and the kernel choice they were
# given. A device call is scarce, so what is checked here is what would waste one: every suite
# pinned to its kernel choice, verdicts appended as each step ends (a killed call keeps them),
# few result files, valid JSON, a refused or missing sanitizer "not available" and not a failure
# (one that finds errors a failure), a test that skips for want of a GPU a failure (and the GPU
# suites told to fail instead of skipping), a hung step cut at its phase's budget "not finished"
# with the rest "not run", and the million-token run sized to the card.
#   bash device_check_test.sh path/to/device_check.sh
set -uo pipefail
script=${1:?usage: device_check_test.sh path/to/device_check.sh}
# shellcheck source=tests/scripts/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

fakes=$tmp/tools
bundle=$tmp/bundle
mkdir -p "$fakes" "$bundle/bin" "$bundle/mpi/usr/bin"
cat >"$fakes/nvidia-smi" <<'FAKE'
#!/bin/bash
case "$*" in
  *compute_cap*) echo 9.0 ;;
  *memory.total*nounits*) echo "${FAKE_MEMORY_MIB:-81559}" ;;
  *) echo "Fake H100, 580.00, 81559 MiB, 1980 MHz" ;;
esac
FAKE
cat >"$fakes/mpiexec" <<'FAKE'
#!/bin/bash
# mpiexec -n N PROGRAM...: one process standing for N ranks.
RANKS=$2 exec "${@:3}"
FAKE
cat >"$fakes/compute-sanitizer" <<'FAKE'
#!/bin/bash
[ "${FAKE_SANITIZER:-}" = refuse ] && { echo "========= Error: Device not supported"; exit 1; }
[ "${FAKE_SANITIZER:-}" = errors ] && { echo "========= ERROR SUMMARY: 3 errors"; exit 1; }
while [[ "$1" == --* ]]; do case $1 in --tool|--error-exitcode) shift ;; esac; shift; done
echo "compute-sanitizer over:"
"$@"
FAKE
# Every program of the bundle: reports what it was asked, writes its --json, fails or hangs
# when FAKE_FAIL / FAKE_HANG name it.
cat >"$tmp/program" <<'FAKE'
#!/bin/bash
me=$(basename "$0")
echo "$me ranks=${RANKS:-1} kernels=${RFA_CUDA_KERNELS:-unset} path=${RFA_CUDA_KERNEL_PATH:-unset} transport=${RFA_TRANSPORT:-unset} $*"
echo "require_device=${RFA_TEST_REQUIRE_DEVICE:-unset} ($me)"
[ "${FAKE_HANG:-}" = "$me" ] && sleep 60
[ "${FAKE_FAIL:-}" = "$me" ] && exit "${FAKE_RC:-1}"
# The kernel benchmarks write rows the ab phase's comparison reads: the baseline in the early
# benchmark's format, the current one in perf/'s (forward full 2.0 ms then, 1.6 ms now).
while [ $# -gt 0 ]; do
  if [ "$1" = --json ]; then
    case $me in
      rfa_cuda_kernel_bench.baseline)
        echo '{"results": [{"pass": "forward", "causal": false, "ms": 2.0}]}' >"$2" ;;
      rfa_cuda_kernel_bench)
        echo '{"program": "rfa_cuda_kernel_bench", "benchmarks": [{"run_type": "aggregate", "pass": "forward", "mask": "none", "path": "sm80", "real_time": 1.6}]}' >"$2" ;;
      rfa_run)  # the main job's medians, which the ab phase's variant costs read (forward 2 ms, backward 5)
        echo '{"program": "rfa_run", "benchmarks": [{"name": "main_job/fwd/contiguous_median", "run_type": "aggregate", "aggregate_name": "median", "real_time": 2.0, "tflops": 100}, {"name": "main_job/bwd/contiguous_median", "run_type": "aggregate", "aggregate_name": "median", "real_time": 5.0, "tflops": 80}]}' >"$2" ;;
      *) echo "{\"program\": \"$me\"}" >"$2" ;;
    esac
  fi
  shift
done
exit 0
FAKE
chmod +x "$fakes"/* "$tmp/program"
for p in rfa_cuda_kernel_test rfa_cudnn_attention_test rfa_hopper_fragment_views_test rfa_cuda_kernel_bench \
         rfa_cuda_ring_step_bench capi_cuda_test rfa_device_strategies_test comm_nccl_communicator_test \
         rfa_example_cuda_c rfa_run; do
  cp "$tmp/program" "$bundle/bin/$p"
done
echo "commit: abc1234" >"$bundle/manifest.txt"

run_check() {  # result folder, then VAR=VALUE... and phases
  local out=$1
  shift
  env RFA_DEVICE_WORK="$tmp/work-$(basename "$out")" OUT="$out" PATH="$fakes:$PATH" "$@" >"$out.txt" 2>&1
}
verdict() { awk -F'\t' -v n="$2" '$2 == n { print $3 }' "$1/summary.tsv"; }

# 1. Everything passes.
run_check "$tmp/out1" bash "$script" --bundle "$bundle"
rc=$?
steps=$(bash "$script" --bundle "$bundle" --list | wc -l)
check "all passing: exit code 0" [ $rc -eq 0 ]
check "all passing: every listed step ($steps) has a verdict, all ok" \
  [ "$(grep -c $'\tok\t' "$tmp/out1/summary.tsv")" -eq "$steps" ]
check "at most 8 files come back" [ "$(find "$tmp/out1" -type f | wc -l)" -le 8 ]
check "summary.json is JSON with every step" \
  python3 -c "import json,sys; d=json.load(open('$tmp/out1/summary.json')); sys.exit(len(d['steps']) != $steps)"
check "results.json holds each measurement by step" \
  python3 -c "import json,sys; d=json.load(open('$tmp/out1/results.json')); sys.exit(d['kernels.b2h16s8192']['program'] != 'rfa_cuda_kernel_bench' or 'strategies.ring.p2' not in d)"
check "the default phases are check and perf" sh -c "[ -e '$tmp/out1/perf.log' ] && [ ! -e '$tmp/out1/million.log' ]"
check "the GPU suites fail instead of skipping without a device" \
  [ "$(grep -cE "^require_device=1 [(](capi_cuda_test|rfa_device_strategies_test|comm_nccl_communicator_test)[)]$" "$tmp/out1/check.log")" -eq 25 ]
check "the kernel test requires the Hopper path" grep -q "rfa_cuda_kernel_test .* --require-path sm90" "$tmp/out1/check.log"
check "the C API suite on rfa's sm_80 kernels, np 1-4 and NCCL, pinned" \
  [ "$(grep -cE "^capi_cuda_test ranks=[1-4] kernels=rfa path=sm80 transport=(mpi|nccl) --gtest_brief=1$" "$tmp/out1/check.log")" -eq 5 ]
check "the C API suite on the Hopper kernels, pinned" \
  [ "$(grep -cE "^capi_cuda_test ranks=[1-4] kernels=rfa path=sm90 transport=(mpi|nccl) --gtest_brief=1$" "$tmp/out1/check.log")" -eq 5 ]
check "the C API suite on cuDNN, pinned" \
  [ "$(grep -cE "^capi_cuda_test ranks=[1-4] kernels=cudnn path=sm80 transport=(mpi|nccl) --gtest_brief=1$" "$tmp/out1/check.log")" -eq 5 ]
check "the engine suite on each choice" \
  [ "$(grep -cE "^rfa_device_strategies_test ranks=[1-4] kernels=(rfa|cudnn) path=sm(80|90)" "$tmp/out1/check.log")" -eq 8 ]
check "every strategy through the main job, checked at P = 4" \
  [ "$(grep -cE "^rfa_run ranks=4 .*--device cuda .*--check" "$tmp/out1/check.log")" -eq 8 ]
check "the automatic choices checked, the ring's and the all-gather's" \
  [ "$(grep -cE "^rfa_run ranks=4 .*--kernels auto --kernel-path auto .*--check" "$tmp/out1/check.log")" -eq 2 ]
check "no other run leaves the kernel choice to auto" \
  sh -c "! grep -E '^rfa_run ' '$tmp/out1/check.log' '$tmp/out1/perf.log' | grep -v -- '--kernels \(rfa\|cudnn\) --kernel-path sm\(80\|90\)' | grep -v -- '--kernels auto --kernel-path auto .*--check'"
check "memcheck runs the engine's window and document cases" grep -q "compute-sanitizer over:" "$tmp/out1/check.log"
check "the kernels beside PyTorch's SDPA" grep -q "rfa_cuda_kernel_bench .*--torch-script .*sdpa_peer.py" "$tmp/out1/perf.log"
check "the sm80 forward timed in both its layouts at d = 128, 64 and 192 / 128" \
  [ "$(grep -cE "^rfa_cuda_kernel_bench .*--rows-per-warp both " "$tmp/out1/perf.log")" -eq 4 ]
check "the sm80 backward timed in both its key tiles at d = 128 and 64" \
  [ "$(grep -cE "^rfa_cuda_kernel_bench .*--backward-key-tile both " "$tmp/out1/perf.log")" -eq 3 ]
check "rfa on cuDNN at one rank: the sequence in one piece, as the peer has it" \
  [ "$(grep -cE "^rfa_run ranks=1 kernels=.* --kernels cudnn .*--seq 8192 .*--layout contiguous " "$tmp/out1/perf.log")" -eq 2 ]
check "the error at P = 1, 2, 4, 8 on each choice against float64" \
  [ "$(grep -cE "^rfa_run ranks=[1248] .*--sampled-positions 64" "$tmp/out1/perf.log")" -eq 12 ]
run_check "$tmp/out1m" bash "$script" --bundle "$bundle" million
check "an 80 GB card: the million tokens with 4 K/V heads" grep -q "seq 1048576 .*--kv-heads 4 " "$tmp/out1m/million.log"
check "the summary table ends the output" grep -q "== summary (Fake H100" "$tmp/out1.txt"

# 2. A machine that refuses the sanitizer: "not available", not a failure.
run_check "$tmp/out2" FAKE_SANITIZER=refuse bash "$script" --bundle "$bundle" check
rc=$?
check "sanitizer refused: exit code 0" [ $rc -eq 0 ]
check "sanitizer refused: memcheck not available" [ "$(verdict "$tmp/out2" memcheck.engine)" = "not available" ]
check "check alone: no perf steps" [ ! -e "$tmp/out2/perf.log" ]

# 2b. A sanitizer that runs and finds errors: FAILED, and the check fails (its step alone).
run_check "$tmp/out2b" FAKE_SANITIZER=errors bash "$script" --bundle "$bundle" --only 'memcheck\.engine' check
rc=$?
check "sanitizer errors: nonzero exit code" [ $rc -ne 0 ]
check "sanitizer errors: memcheck FAILED" [ "$(verdict "$tmp/out2b" memcheck.engine)" = "FAILED (rc 1)" ]

# 2c. A machine without the sanitizer or the profiler: their steps "not available", nothing run.
if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  echo "skipped: this machine has a compute-sanitizer, which the device check would find"
else
  mkdir -p "$tmp/no-sanitizer"
  cp "$fakes/nvidia-smi" "$fakes/mpiexec" "$tmp/no-sanitizer/"
  env RFA_DEVICE_WORK="$tmp/work-out2c" OUT="$tmp/out2c" PATH="$tmp/no-sanitizer:$PATH" \
    bash "$script" --bundle "$bundle" check profile >"$tmp/out2c.txt" 2>&1
  rc=$?
  check "no sanitizer: exit code 0" [ $rc -eq 0 ]
  check "no sanitizer: memcheck and racecheck not available, saying why" \
    [ "$(grep -cE $'\t(memcheck.engine|memcheck.kernels|racecheck)\tnot available [(]no compute-sanitizer on this machine[)]' "$tmp/out2c/summary.tsv")" -eq 3 ]
  check "no profiler: Nsight Compute not available" \
    grep -qE $'\tncu.kernels\tnot available [(]no ncu on this machine[)]' "$tmp/out2c/summary.tsv"
fi

# 3. A test that skips for want of a GPU (77) fails, and the steps after it still run (it and
#    a later one alone).
run_check "$tmp/out3" FAKE_FAIL=rfa_cudnn_attention_test FAKE_RC=77 bash "$script" --bundle "$bundle" \
  --only 'cudnn_test|example_c' check
rc=$?
check "a skipping test: nonzero exit code" [ $rc -ne 0 ]
check "a skipping test: FAILED, saying why" \
  sh -c "verdict=\$(awk -F'\t' '\$2 == \"cudnn_test\" { print \$3 }' '$tmp/out3/summary.tsv'); [ \"\${verdict#FAILED (skipped}\" != \"\$verdict\" ]"
check "a skipping test: the steps after it ran" [ "$(verdict "$tmp/out3" example_c)" = ok ]

# 4. A step that hangs is cut at what is left of its phase's budget ("not finished": not a
#    failure, but the call says it did not complete); the rest are "not run", every verdict is
#    on disk, and the call ends within the budget.
start=$SECONDS
run_check "$tmp/out4" FAKE_HANG=rfa_cuda_kernel_test RFA_BUDGET_CHECK=8 bash "$script" --bundle "$bundle" check
rc=$?
check "a hung step: exit code 3 (incomplete, nothing failed)" [ $rc -eq 3 ]
check "a hung step: not finished, cut at the budget's end" \
  sh -c "awk -F'\t' '\$2 == \"kernel_test\"' '$tmp/out4/summary.tsv' | grep -q 'not finished (cut to [0-9]* s'"
check "a hung step: the steps after it not run" [ "$(grep -c $'\tnot run' "$tmp/out4/summary.tsv")" -gt 10 ]
check "a hung step: the call ended within the budget and the kill margin" [ $((SECONDS - start)) -lt 30 ]

# 4b. The whole call's budget: what no longer fits in it is "not run", whatever the phases'.
run_check "$tmp/out4b" FAKE_HANG=rfa_cuda_kernel_test RFA_BUDGET_CALL=8 bash "$script" --bundle "$bundle" check perf
check "the call's budget: the hung step cut at it" \
  sh -c "awk -F'\t' '\$2 == \"kernel_test\"' '$tmp/out4b/summary.tsv' | grep -q 'not finished'"
check "the call's budget: every perf step not run" \
  [ "$(awk -F'\t' '$1 == "perf"' "$tmp/out4b/summary.tsv" | grep -c "not run (the call's 8 s")" -eq \
    "$(awk -F'\t' '$1 == "perf"' "$tmp/out4b/summary.tsv" | wc -l)" ]
check "the call's budget: perf steps there to count" [ "$(grep -c '^perf' "$tmp/out4b/summary.tsv")" -gt 20 ]

# 5. An H200 (8 K/V heads: 16 would leave it too little margin), the bundle packed as
# build_bundle.sh packs it; a card with room for 16 K/V heads.
mkdir -p "$tmp/packed"
tar -cJf "$tmp/packed/bundle.tar.xz" -C "$bundle" bin mpi
cp "$bundle/manifest.txt" "$tmp/packed/"
run_check "$tmp/out5" FAKE_MEMORY_MIB=143771 bash "$script" --bundle "$tmp/packed" million
check "a packed bundle: unpacked and run" [ "$(verdict "$tmp/out5" million.kv8)" = ok ]
check "a 141 GB card: the million tokens with 8 K/V heads" grep -q "seq 1048576 .*--kv-heads 8 " "$tmp/out5/million.log"
run_check "$tmp/out5e" FAKE_MEMORY_MIB=122880 bash "$script" --bundle "$bundle" million
check "a 120 GiB card (the lower edge): the million tokens with 8 K/V heads" \
  grep -q "seq 1048576 .*--kv-heads 8 " "$tmp/out5e/million.log"
run_check "$tmp/out5b" FAKE_MEMORY_MIB=163840 bash "$script" --bundle "$bundle" million
check "a 160 GiB card: the million tokens with 16 K/V heads" \
  grep -q "seq 1048576 .*--kv-heads 16 " "$tmp/out5b/million.log"

# 5c. --only: the steps it names (whole names; steps of a launched group, a sanitizer's step)
# run and are recorded, no other; a malformed expression is refused.
run_check "$tmp/out5c" bash "$script" --bundle "$bundle" \
  --only 'kernel_test|capi\.sm90\.np[12]|memcheck\.kernels' check perf
rc=$?
check "--only: exit code 0" [ $rc -eq 0 ]
check "--only: exactly the steps named, in order" \
  [ "$(cut -f2 "$tmp/out5c/summary.tsv" | tr '\n' ' ')" = "kernel_test capi.sm90.np1 capi.sm90.np2 memcheck.kernels " ]
listed=$(bash "$script" --bundle "$bundle" --list --only kernel check perf)
rc=$?
check "--only: the names match whole ('kernel' names no step; the listing itself succeeds)" \
  [ "$rc" -eq 0 -a -z "$listed" ]
check "--only with --list: the same steps" \
  [ "$(bash "$script" --bundle "$bundle" --list --only 'kernel_test|capi\.sm90\.np[12]|memcheck\.kernels' check perf | awk '{print $2}' | tr '\n' ' ')" = "kernel_test capi.sm90.np1 capi.sm90.np2 memcheck.kernels " ]
bash "$script" --bundle "$bundle" --only 'capi.(' check >"$tmp/out5d.txt" 2>&1
rc=$?
check "--only with a malformed expression: exit code 2 and why" \
  sh -c "[ $rc -eq 2 ] && grep -q 'not an extended regular expression' '$tmp/out5d.txt'"

# 5f. The backtrace phase: each RFA_BACKTRACE command on its ranks with the crash report
# preloaded, a failing one FAILED; without commands, or with a malformed one, exit code 2.
run_check "$tmp/out5f" FAKE_FAIL=capi_cuda_test \
  RFA_BACKTRACE="2 rfa_run --device cuda --strategy ulysses; 4 capi_cuda_test --gtest_filter=*hybrid*" \
  bash "$script" --bundle "$bundle" backtrace
rc=$?
check "backtrace: a crashing command makes exit code 1" [ $rc -eq 1 ]
check "backtrace: a step per command, the one that passed ok, the other FAILED" \
  [ "$(verdict "$tmp/out5f" backtrace.1) $(verdict "$tmp/out5f" backtrace.2)" = "ok FAILED (rc 1)" ]
check "backtrace: the command's ranks and arguments" \
  grep -q "rfa_run ranks=2 .* --device cuda --strategy ulysses" "$tmp/out5f/backtrace.log"
check "backtrace: the second command's own ranks and arguments" \
  grep -q "capi_cuda_test ranks=4 .* --gtest_filter=\*hybrid\*" "$tmp/out5f/backtrace.log"
check "backtrace: the crash report preloaded and Open MPI's handler off" \
  grep -q "LD_PRELOAD=$bundle/lib/librfa_crash_report.so OMPI_MCA_opal_signal= " "$tmp/out5f/backtrace.log"
run_check "$tmp/out5g" bash "$script" --bundle "$bundle" backtrace
rc=$?
check "backtrace without commands: exit code 2 and why" sh -c "[ $rc -eq 2 ] && grep -q RFA_BACKTRACE '$tmp/out5g.txt'"
run_check "$tmp/out5h" RFA_BACKTRACE="two rfa_run" bash "$script" --bundle "$bundle" backtrace
rc=$?
check "backtrace with a malformed command: exit code 2 and why" \
  sh -c "[ $rc -eq 2 ] && grep -q \"entry 'two rfa_run'\" '$tmp/out5h.txt'"
run_check "$tmp/out5i" RFA_BACKTRACE="1 no_such_program" bash "$script" --bundle "$bundle" backtrace
rc=$?
check "backtrace with a program not in the bundle: exit code 2" [ $rc -eq 2 ]

# 5i2. The compute phase: each strategy's compute on one GPU, Ulysses on both kernel choices, the
# all-gather on rfa's kernels in its chunks and in one head a chunk, at P = 2 and 4.
run_check "$tmp/out5i2" bash "$script" --bundle "$bundle" compute
rc=$?
check "compute: exit code 0" [ $rc -eq 0 ]
check "compute: its four steps, in order" \
  [ "$(cut -f2 "$tmp/out5i2/summary.tsv" | tr '\n' ' ')" = "compute.ulysses.rfa compute.ulysses.cudnn compute.allgather.rfa compute.allgather.rfa.chunk1 " ]
check "compute: the strategy benchmark at P = 2 and 4" \
  [ "$(grep -cE '^rfa_cuda_ring_step_bench ranks=1 .*--strategy (ulysses|allgather) --kernels (rfa|cudnn) --ranks 2,4 ' "$tmp/out5i2/compute.log")" -eq 4 ]
check "compute: the all-gather once in one K/V head a chunk" \
  [ "$(grep -cE '^rfa_cuda_ring_step_bench ranks=1 .*--strategy allgather .*--kv-heads-per-chunk 1 ' "$tmp/out5i2/compute.log")" -eq 1 ]

# 5j. The ab phase: the baseline's benchmark and the current one in turns, three times, then
# their comparison (a report: the ratio per row); a bundle without a baseline fails it, saying so.
cp "$tmp/program" "$bundle/bin/rfa_cuda_kernel_bench.baseline"
run_check "$tmp/out5j" bash "$script" --bundle "$bundle" ab
rc=$?
check "ab: exit code 0" [ $rc -eq 0 ]
check "ab: in turns, then the comparison, then each variant and theirs" \
  [ "$(cut -f2 "$tmp/out5j/summary.tsv" | tr '\n' ' ')" = "ab.baseline.1 ab.current.1 ab.baseline.2 ab.current.2 ab.baseline.3 ab.current.3 ab.compare variants.plain variants.sinks variants.softcap variants.documents variants.ranges variants.d192 variants.mla variants.plain_end variants.compare " ]
check "ab: every variant on rfa's sm_80 kernels at one rank, the shape of the plain run" \
  [ "$(grep -cE "^rfa_run ranks=1 kernels=unset path=unset transport=mpi --device cuda --kernels rfa --kernel-path sm80 --batch 2 --seq 8192 --heads 16 --dtype bf16 --layout contiguous --head-dim (128|192) .*--no-check .*--json" "$tmp/out5j/ab.log")" -eq 8 ]
check "ab: the variants whose visible scores are the plain run's (one document per sequence, the causal mask as one range)" \
  sh -c "grep -q -- '--causal --documents 8192/8192 ' '$tmp/out5j/ab.log' && grep -q -- '--mask ranges:.*causal.ranges ' '$tmp/out5j/ab.log' && grep -q -- '--causal --sinks ' '$tmp/out5j/ab.log' && grep -q -- '--causal --softcap 30 ' '$tmp/out5j/ab.log'"
check "ab: the range it gives is the whole causal mask" [ "$(cat "$tmp/work-out5j/causal.ranges")" = "0 8192 0 8192 causal" ]
check "ab: each variant beside its base (MLA beside 192 / 192)" \
  sh -c "grep -qE '^sinks +plain +forward +2.000 +2.000 +1.000 +1.000$' '$tmp/out5j/ab.log' && grep -qE '^mla +d192 +backward ' '$tmp/out5j/ab.log'"
check "ab: the same shape on both sides, the current one on its sm_80 kernels, no peers" \
  sh -c "grep -q '^rfa_cuda_kernel_bench.baseline ranks=1 .*--batch 2 --heads 16 --seq 8192 --dim 128 --dtype bf16 .*--no-torch --json' '$tmp/out5j/ab.log' &&
         grep -q '^rfa_cuda_kernel_bench ranks=1 .*--batch 2 --heads 16 --seq 8192 --dim 128 --dtype bf16 .*--no-torch --path sm80 --json' '$tmp/out5j/ab.log'"
check "ab: the ratio per row in the log (forward full, 2.0 / 1.6 ms)" \
  grep -qE "^forward +full +2.000 +1.600 +1.250 " "$tmp/out5j/ab.log"
check "ab: the comparison in results.json" \
  python3 -c "import json,sys; d=json.load(open('$tmp/out5j/results.json')); sys.exit(d['ab.compare']['rows'][0]['ratio_median'] != 1.25)"
rm "$bundle/bin/rfa_cuda_kernel_bench.baseline"
run_check "$tmp/out5k" bash "$script" --bundle "$bundle" ab
rc=$?
check "ab without a baseline: exit code 1, saying so" \
  sh -c "[ $rc -eq 1 ] && grep -q 'no baseline in the bundle: build_bundle.sh --baseline REV' '$tmp/out5k/summary.tsv'"
check "ab without a baseline: the variants' costs still measured" \
  grep -qE $'\tvariants.compare\tok\t' "$tmp/out5k/summary.tsv"

# 6. No bundle, or an unknown phase: exit code 2 and why.
mkdir -p "$tmp/empty"
run_check "$tmp/out6" bash "$script" --bundle "$tmp/empty"
rc=$?
check "no bundle: exit code 2 and why" sh -c "[ $rc -eq 2 ] && grep -q 'build_bundle.sh' '$tmp/out6.txt'"
bash "$script" --bundle "$bundle" --list everything >"$tmp/out7.txt" 2>&1
rc=$?
check "an unknown phase: exit code 2" [ $rc -eq 2 ]

checks_done "$tmp/out1.txt"
