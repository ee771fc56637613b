#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The Slurm templates' multi-node path across "nodes" made on this machine (docs/testing.md, "Many
# nodes on one machine"): the templates run as plain scripts with the stand-in srun of nodes/,
# which places their tasks into network namespaces with host names of their own, as on an
# allocation of 2 nodes x 2 tasks:
#   - gpu_multi_node.sbatch with its default program (rfa_ring_edges --show-order): the ring
#     order over the allocation crosses between the nodes twice, and rank 0's RFA_TOPO_DUMP
#     names both nodes;
#   - perf_suite_array.sbatch, the regression suite's multi-node job, parts ring (task 2) and main
#     (task 3) with --quick: every run at P = 2 and 4 across the nodes writes its results, the
#     main job's checks pass, and its topology dumps (one per P) are written, P = 4's naming
#     both nodes and P = 2's one (the stand-in srun spreads a step over the allocation's nodes
#     unless told how many, as srun does).
#   multinode_smoke.sh TEMPLATES_DIR BUILD_DIR PYTHON
# Root only: exits 77 with the harness's reason where namespaces cannot be made.
set -euo pipefail
templates=$1
build=$2
python=$3
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
if ! probe=$(bash "$src/scripts/multinode/nodes.sh" --probe 2>&1); then
  echo "$probe"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
allocation=(SLURM_JOB_NUM_NODES=2 SLURM_NNODES=2 SLURM_NTASKS_PER_NODE=2 SLURM_CPUS_PER_TASK=1)

output=$(env PATH="$here/nodes:$PATH" "${allocation[@]}" RFA_BUILD="$build" SLURM_JOB_ID=mn \
  bash "$templates/gpu_multi_node.sbatch")
echo "$output"
grep -q '^# this job: 4 ranks' <<<"$output" || fail "the multi-node template did not report 4 ranks"
grep -q '"inter_node": 2' rfa-topo-mn.json || fail "the ring order does not cross between the nodes exactly twice"
names_both_nodes() { grep -q '"node0"' "$1" && grep -q '"node1"' "$1"; }
names_both_nodes rfa-topo-mn.json || fail "the topology dump does not name both nodes"

for task in 2 3; do
  env PATH="$here/nodes:$PATH" "${allocation[@]}" SLURM_NTASKS=4 RFA_BUILD="$build" RFA_SRC="$src" \
    RFA_PYTHON="$python" RFA_SUITE_ARGS=--quick RFA_PERF_RESULTS="$work/results" SLURM_ARRAY_TASK_ID=$task \
    SLURM_ARRAY_JOB_ID=mn bash "$templates/perf_suite_array.sbatch" || fail "array task $task exited $?"
done
for f in ring-P2-S256.json ring-P4-S256.json main-P2-fp32.json main-P4-fp32.json main-P4-bf16.json \
  rfa-topo-main-P2.json rfa-topo-main-P4.json; do
  [ -s "results/mn/$f" ] || fail "the array job wrote no $f"
done
names_both_nodes results/mn/rfa-topo-main-P4.json || fail "the main job's topology dump at P = 4 does not name both nodes"
# P = 2 fills one node: srun told the nodes it needs, not left to spread the step over both.
if grep -q '"node1"' results/mn/rfa-topo-main-P2.json; then
  fail "the main job at P = 2 ran across both nodes (the launcher did not give srun --nodes)"
fi
echo "PASS"
