// SPDX-License-Identifier: BSD-3-Clause
// No buffer of the whole sequence: the engine's allocations, observed through Kokkos' tool
// hooks (every View allocation is reported), must match the README formula exactly, and the
// largest one must be one local block.
#include <Kokkos_Core.hpp>
#include <map>

#include "ring_case.hpp"

namespace rfa {
namespace test {
namespace {

struct AllocationLog {
  std::int64_t live = 0, peak = 0, largest = 0;
  std::map<const void*, std::int64_t> sizes;
};
AllocationLog* g_log = nullptr;

void on_allocate(Kokkos::Profiling::SpaceHandle, const char* label, const void* ptr, std::uint64_t size) {
  if (!g_log || std::string(label).rfind("rfa::", 0) != 0) return;
  g_log->sizes[ptr] = std::int64_t(size);
  g_log->live += std::int64_t(size);
  g_log->peak = std::max(g_log->peak, g_log->live);
  g_log->largest = std::max(g_log->largest, std::int64_t(size));
}
void on_deallocate(Kokkos::Profiling::SpaceHandle, const char*, const void* ptr, std::uint64_t) {
  if (!g_log) return;
  auto it = g_log->sizes.find(ptr);
  if (it == g_log->sizes.end()) return;
  g_log->live -= it->second;
  g_log->sizes.erase(it);
}

class RingMemoryTest : public ::testing::TestWithParam<rfa_dtype_t> {};

template <class T>
void check_memory(rfa_dtype_t dtype) {
  auto ring = world_ring();
  engine::RingConfig cfg;
  cfg.layout = RFA_LAYOUT_ZIGZAG;
  cfg.mask = RFA_MASK_CAUSAL;
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
    AllocationLog log;
    Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(on_deallocate);
    g_log = &log;
    if (backward) {
      attn.backward<T>(q, k, v, out, dout, lse, dq, dk, dv);
    } else {
      attn.forward<T>(q, k, v, out, lse);
    }
    g_log = nullptr;
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
    SCOPED_TRACE(backward ? "backward" : "forward");
    EXPECT_EQ(log.peak, attn.workspace_bytes(backward)) << "engine allocations differ from the documented formula";
    EXPECT_EQ(attn.last_workspace_bytes(), attn.workspace_bytes(backward));
    EXPECT_EQ(log.live, 0) << "the engine kept memory after returning";
    // The largest buffer is one fp32 local block of q's shape: never the whole sequence.
    EXPECT_LE(log.largest, B * L * H * D * 4);
    EXPECT_GT(log.peak, 0) << "no allocation observed: are Kokkos tool hooks working?";
  }
}

TEST(RingMemory, Float32MatchesFormula) { check_memory<float>(RFA_DTYPE_FLOAT32); }
TEST(RingMemory, BFloat16MatchesFormula) { check_memory<bf16_t>(RFA_DTYPE_BFLOAT16); }

}  // namespace
}  // namespace test
}  // namespace rfa
