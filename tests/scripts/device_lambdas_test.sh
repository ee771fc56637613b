#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# No KOKKOS_LAMBDA (nor another __host__ __device__ lambda) in the library's headers. nvcc wraps
# such a lambda in an object that is copied, called and destroyed through function pointers
# each translation unit keeps to itself and sets where the lambda is made; a header's template
# is instantiated in several units and the linker keeps one copy of each instantiation, so a
# lambda made in one unit's copy and copied in another's calls a null pointer (Ulysses and the
# hybrid crashed so on an H200: perf/RESULTS.md, "2026-12-04 — the first GPU run of every
# path"). Headers use functors; a .cpp file's templates are instantiated in that file only.
#   bash device_lambdas_test.sh PROJECT_SOURCE_DIR
set -uo pipefail
root=${1:?usage: device_lambdas_test.sh PROJECT_SOURCE_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
found=$(cd "$root" && find src capi kernels_cuda include -name '*.hpp' -o -name '*.h' -o -name '*.cuh' |
  sort | xargs awk -f "$here/code_lines.awk" |
  grep -E 'KOKKOS_(CLASS_)?LAMBDA|\[[^]]*\][[:space:]]*(__host__[[:space:]]+__device__|__device__[[:space:]]+__host__)')
if [ -n "$found" ]; then
  echo "a __host__ __device__ lambda in a header (write a functor instead; the reason is at the top of this test):"
  echo "$found"
  exit 1
fi
echo "no __host__ __device__ lambda in the library's headers"
