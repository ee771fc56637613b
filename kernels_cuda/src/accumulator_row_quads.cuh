// SPDX-License-Identifier: BSD-3-Clause
// An mma m16n8k16 fp32 accumulator tile (16 rows x 8 columns) regrouped so that each lane holds
// four adjacent columns of one row, for one 16-byte store or reduction per lane where the
// layout gives two 8-byte pairs in two rows. In the accumulator, lane 4g + t holds rows g and
// g + 8 at columns 2t and 2t + 1 (acc[0..1] row g, acc[2..3] row g + 8). Lanes t and t ^ 1 of
// a group trade one pair: the even lane keeps row g and takes its partner's row-g pair, the
// odd lane keeps row g + 8 and takes its partner's row-(g + 8) pair; both then hold columns
// 4 (t / 2) to 4 (t / 2) + 3. The backward adds its dQ this way, a float4 reduction per lane
// on Hopper (flash_backward.cu). Plain integer and float logic, so that
// rfa_cuda_accumulator_quads_on_host_test checks it on the host (device_code_on_host.hpp).
#pragma once

namespace rfa_cuda {
namespace detail {

// Four adjacent columns of one accumulator row: row in 0..15, col in {0, 4}.
struct AccumulatorRowQuad {
  int row, col;
  float v[4];
};

// The lane a lane trades with, the other of its pair in the group (t and t ^ 1): lane ^ the mask
// (the mask as __shfl_xor_sync takes it, a constant, which a lane index in a register is not).
inline constexpr int kRowQuadPartnerMask = 1;
__host__ __device__ __forceinline__ int row_quad_partner(int lane) { return lane ^ kRowQuadPartnerMask; }

// The pair a lane hands its partner (row_quad_partner): the row it does not keep.
__host__ __device__ __forceinline__ void row_quad_outgoing(const float (&acc)[4], int lane, float (&sent)[2]) {
  const bool keeps_lower_row = lane % 2 == 1;  // odd lanes keep row g + 8 and give row g away
  sent[0] = keeps_lower_row ? acc[0] : acc[2];
  sent[1] = keeps_lower_row ? acc[1] : acc[3];
}

// The lane's row quad, given the pair its partner handed it (row_quad_outgoing of the partner).
__host__ __device__ __forceinline__ AccumulatorRowQuad row_quad(const float (&acc)[4], const float (&received)[2],
                                                                int lane) {
  const int group = lane / 4, quad = lane % 4;
  const bool keeps_lower_row = quad % 2 == 1;
  AccumulatorRowQuad q;
  q.row = group + (keeps_lower_row ? 8 : 0);
  q.col = 4 * (quad / 2);
  // The even lane's own pair is the quad's first half (columns 2t, 2t + 1 with t = 2 (t / 2)),
  // the odd lane's its second half.
  q.v[0] = keeps_lower_row ? received[0] : acc[0];
  q.v[1] = keeps_lower_row ? received[1] : acc[1];
  q.v[2] = keeps_lower_row ? acc[2] : received[0];
  q.v[3] = keeps_lower_row ? acc[3] : received[1];
  return q;
}

}  // namespace detail
}  // namespace rfa_cuda
