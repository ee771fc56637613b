// SPDX-License-Identifier: BSD-3-Clause
// bf16 matrix products on AVX512-BF16 dot-product instructions (vdpbf16ps: per fp32 lane, the
// two products of a bf16 pair added to it), for CPUs that have them but no AMX tiles (AMD Zen 4
// and later, Intel Cooper Lake). Same operands and contract as the AMX product
// (kernels/bf16_pairs.hpp), so one kernel body serves both. Everything but
// host_bf16_dot_enabled() exists only where the build targets AVX512-BF16.
#pragma once

#include <cstddef>

#include "kernels/bf16_pairs.hpp"

namespace rfa {
namespace kernels {

/// Whether bf16 work may run on AVX512-BF16 dot products now: the build targets them and the
/// environment does not say RFA_HOST_BF16_DOT=0 (read on every call, so a test can compare
/// kernels in one process). Where AMX tiles are enabled too, they are preferred.
bool host_bf16_dot_enabled();

#if RFA_HOST_BF16_PAIRS
namespace dot {

/// C[M][N] (+)= (A_hi + A_lo) (B_hi + B_lo) without the lo x lo term (at most one of the two
/// has a lo part). M, N and K are multiples of 32 (the AMX product's rule: the kernels pad to
/// it for both); C is fp32 with rows ldc floats apart.
void gemm(int M, int N, int K, pairs::RowsA a, pairs::PairsB b, float* c, std::size_t ldc, bool accumulate);

}  // namespace dot
#endif

}  // namespace kernels
}  // namespace rfa
