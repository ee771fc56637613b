#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs perf_suite_array.sbatch as a plain script with the fake srun beside this file: every
# array task (0-5) with the suite's --quick problems, then the main-job task again against the
# first run as its baseline (--require-baseline: each result must have been judged), then once
# more against a baseline folder that does not exist. Checks that each part wrote its results
# and figures (each part's in plots/<part>/), that the comparison ran and that a mistyped
# baseline stops the task; the verdict itself is not checked (tiny problems on a shared
# machine: timings are noise).
#   suite_array_smoke.sh TEMPLATE BUILD_DIR PYTHON
set -euo pipefail
template=$1
build=$2
python=$3
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

run_task() {  # run_task ARRAY_TASK_ID JOB_ID [baseline [suite flags]]
  PATH="$here:$PATH" RFA_BUILD="$build" RFA_SRC="$src" RFA_PYTHON="$python" RFA_SUITE_ARGS="${4:---quick}" \
    RFA_PERF_RESULTS="$work/results" RFA_PERF_BASELINE="${3:-}" SLURM_ARRAY_TASK_ID=$1 SLURM_ARRAY_JOB_ID=$2 \
    SLURM_NTASKS=2 SLURM_CPUS_PER_TASK=1 bash "$template"
}
for task in 0 1 2 3 4 5; do run_task "$task" first; done
for f in kernels.json comm-P2.json ring-P2-S256.json main-P2-fp32.json main-P2-bf16.json rfa-topo-main-P2.json \
         strategies-P2-S256.json variants-P2-bf16-softcap.json variants-P2-bf16-mla.json \
         plots/kernels/kernels_vs_peak.png plots/ring/ring_efficiency.png \
         plots/main/error_vs_p.png plots/strategies/strategies.png; do
  [ -s "results/first/$f" ] || { echo "FAIL: the array job wrote no $f" >&2; exit 1; }
done
set +e
output=$(run_task 3 second "$work/results/first" "--quick --require-baseline")
rc=$?
set -e
echo "$output"
case $rc in 0|1|3) ;; *) echo "FAIL: the suite against a baseline exited $rc" >&2; exit 1 ;; esac
grep -q "main-P2-fp32.json against $work/results/first/main-P2-fp32.json" <<<"$output" \
  || { echo "FAIL: the main job's results were not compared with the baseline" >&2; exit 1; }
[ -s results/second/verdict-main-P2-bf16.json ] || { echo "FAIL: no JSON verdict" >&2; exit 1; }
set +e
output=$(run_task 3 third "$work/results/frist" 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "no such folder" <<<"$output" \
  || { echo "FAIL: a baseline folder that does not exist gave exit $rc: $output" >&2; exit 1; }
[ ! -e results/third/main-P2-fp32.json ] || { echo "FAIL: the task ran with a mistyped baseline" >&2; exit 1; }
echo "PASS"
