// SPDX-License-Identifier: BSD-3-Clause
// What the bf16 kernels on Intel AMX tiles share: whether they may run, the one tile shape they
// use, and a blocked product on the tiles (their operands' form: kernels/bf16_pairs.hpp).
// Everything but host_amx_bf16_enabled() exists only where the build targets AMX-BF16
// (-march=native on a Sapphire Rapids or later CPU); elsewhere the portable kernels run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/bf16_pairs.hpp"

#if RFA_HOST_BF16_PAIRS && defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__) && \
    defined(__linux__)
#define RFA_HOST_AMX 1
#include <immintrin.h>
#else
#define RFA_HOST_AMX 0
#endif

namespace rfa {
namespace kernels {

/// Whether bf16 work would run on AMX tiles now: the build targets them, Linux granted the
/// tile state to this process (asked once), and the environment does not say RFA_HOST_AMX=0
/// (read on every call, so a test can compare both kernels in one process).
bool host_amx_bf16_enabled();

#if RFA_HOST_AMX
namespace amx {

constexpr int kBlock = 16;  // rows and columns of a C tile (16 x 16 fp32)
constexpr int kChunk = 32;  // bf16 values along the reduction in a row of an A tile

/// Every tile as 16 rows of 64 bytes: C 16 x 16 fp32, A 16 x 32 bf16, B 16 pairs x 16 columns.
/// The configuration belongs to the thread: a kernel sets it at the start of each team.
void configure_tiles();

using pairs::interleave_rows;
using pairs::PairsB;
using pairs::round_bf16;
using pairs::RowsA;
using pairs::split_bf16;
using pairs::widen_bf16;

/// C[M][N] (+)= (A_hi + A_lo) (B_hi + B_lo) without the lo x lo term (at most one of the two
/// has a lo part), in 32 x 32 blocks of C held in four tiles while K streams past. M, N and K
/// are multiples of 32; C is fp32 with rows ldc floats apart.
void gemm(int M, int N, int K, RowsA a, PairsB b, float* c, std::size_t ldc, bool accumulate);

}  // namespace amx
#endif

}  // namespace kernels
}  // namespace rfa
