// SPDX-License-Identifier: BSD-3-Clause
// No buffer of the whole sequence: the engine's allocations, observed through Kokkos' tool
// hooks (every View allocation is reported), must match the engine's workspace_bytes() (the
// formula docs/memory.md writes out) exactly, and the
// largest one must be one local block; what the engine keeps between calls is its largest call.
#include <memory>
#include <vector>

#include "allocation_log.hpp"
#include "core/mask_ranges.hpp"
#include "ring_case.hpp"

namespace rfa {
namespace test {
namespace {

class RingMemoryTest : public ::testing::TestWithParam<rfa_dtype_t> {};

// With `next_block_only`, a mask given as ranges under which each rank's queries see only the
// next rank's keys (contiguous layout): the diagonal block hides everything, so the kernels'
// buffers must be sized for the other blocks (RingAttention::kernel_calls()).
template <class T>
void check_memory(rfa_dtype_t dtype, bool next_block_only = false) {
  auto ring = world_ring();
  engine::AttentionConfig cfg;
  cfg.layout = RFA_LAYOUT_ZIGZAG;
  cfg.mask = RFA_MASK_CAUSAL;
  if (next_block_only) {
    const int P = ring->size();
    const std::int64_t chunk = 96 * 8 / P;
    std::vector<rfa_mask_range_t> list;
    for (int r = 0; r < P; ++r)
      list.push_back(
          {r * chunk, (r + 1) * chunk, ((r + 1) % P) * chunk, ((r + 1) % P + 1) * chunk, 0, 0, RFA_RANGE_FULL});
    cfg.layout = RFA_LAYOUT_CONTIGUOUS;
    cfg.mask = RFA_MASK_RANGES;
    cfg.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), 96 * 8, "ranges");
  }
  cfg.dtype = dtype;
  cfg.batch = 1;
  cfg.seq_total = 96 * 8;
  cfg.heads = 4;
  cfg.kv_heads = 2;
  cfg.head_dim = 32;
  engine::RingAttention attn(*ring, cfg);
  const std::int64_t L = attn.local_seq(), B = 1, H = 4, HKV = 2, D = 32;
  Tensor4<T> q("q", B, L, H, D), k("k", B, L, HKV, D), v("v", B, L, HKV, D), out("out", B, L, H, D),
      dout("dout", B, L, H, D), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, D);
  Tensor3<float> lse("lse", B, H, L);
  for (bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    auto pass = [&] {
      if (backward) {
        attn.backward(engine::HostBackward<T>{q, k, v, out, dout, lse, dq, dk, dv});
      } else {
        attn.forward(engine::HostForward<T>{q, k, v, out, lse});
      }
    };
    expect_workspace_kept(attn, backward, pass);
    EXPECT_EQ(attn.last_workspace_bytes(), attn.workspace_bytes(backward));
    // The largest buffer is one fp32 local block of q's shape, never the whole sequence: the
    // backward kernel's copy of Q, whose rows are padded to D + 16 floats and to 96-row tiles.
    attn.release_workspace();
    const AllocationLog log = log_allocations(pass);
    EXPECT_LE(log.largest, B * H * ((L + 95) / 96 * 96) * (D + 16) * 4);
  }
  expect_passes_in_turn_kept(
      attn,
      [&] {
        attn.forward(engine::HostForward<T>{q, k, v, out, lse});
      },
      [&] {
        attn.backward(engine::HostBackward<T>{q, k, v, out, dout, lse, dq, dk, dv});
      });
}

TEST(RingMemory, Float32MatchesFormula) { check_memory<float>(RFA_DTYPE_FLOAT32); }
TEST(RingMemory, BFloat16MatchesFormula) { check_memory<bf16_t>(RFA_DTYPE_BFLOAT16); }
TEST(RingMemory, MaskRangesSeeingAnotherBlockMatchFormula) { check_memory<float>(RFA_DTYPE_FLOAT32, true); }

}  // namespace
}  // namespace test
}  // namespace rfa
