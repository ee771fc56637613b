#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs an sbatch template as a plain script with the fake srun beside this file, and checks
# that the default program (rfa_ring_edges) ran on every task and that rank 0 wrote the
# RFA_TOPO_DUMP provenance file; then runs it with a program of the caller's and three cores a
# task, which every task must see as its threads (OMP_NUM_THREADS).
#   smoke_test.sh TEMPLATE BUILD_DIR
set -euo pipefail
template=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

output=$(PATH="$here:$PATH" RFA_BUILD="$build" SLURM_JOB_ID=smoke SLURM_NTASKS_PER_NODE=2 \
         SLURM_CPUS_PER_TASK=1 bash "$template")
echo "$output"
grep -q '^# this job: 2 ranks' <<<"$output" || { echo "FAIL: the job did not report 2 ranks" >&2; exit 1; }
grep -q '^chosen(topology)' <<<"$output" || { echo "FAIL: no topology order was chosen" >&2; exit 1; }
grep -q '"policy": "topology"' rfa-topo-smoke.json || { echo "FAIL: no RFA_TOPO_DUMP file" >&2; exit 1; }
threads=$(PATH="$here:$PATH" RFA_BUILD="$build" SLURM_JOB_ID=smoke SLURM_NTASKS_PER_NODE=2 \
          SLURM_CPUS_PER_TASK=3 bash "$template" sh -c 'echo "threads=$OMP_NUM_THREADS"')
echo "$threads"
[ "$(grep -c '^threads=3$' <<<"$threads")" = 2 ] ||
  { echo "FAIL: the tasks did not get the job's 3 cores a task as their threads" >&2; exit 1; }
echo "PASS"
