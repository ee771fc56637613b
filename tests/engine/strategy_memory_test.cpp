// SPDX-License-Identifier: BSD-3-Clause
// Every strategy's allocations, observed through Kokkos' tool hooks, against the formula its
// header documents (workspace_bytes()): exactly, at the peak, for forward and backward, and
// what each keeps between calls (expect_workspace_kept). Built through make_strategy(), as the
// C API does.
#include <memory>
#include <vector>

#include "allocation_log.hpp"
#include "core/mask_ranges.hpp"
#include "engine/attention_strategy.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

struct MemoryCase {
  engine::StrategyKind kind;
  rfa_dtype_t dtype;
  /// V's head dim in steps of 8 from head_dim (-1: 8 below; +4: 32 above, both multiples of 32
  /// as bf16's products need), so that a formula counting V in head_dim fails; 0: head_dim.
  int value_dim_steps = 0;
  /// The balanced layout under causal documents (its ranks' rows in up to eight segments, the
  /// key tiles each block's queries see counted through them) instead of zigzag.
  bool balanced = false;
  /// A mask given as ranges under which each rank's queries see only the first half of the next
  /// rank's rows (contiguous, 192 rows a rank): the kernels' calls differ in which of their
  /// buffers is largest (the local block's key table, a piece's K/V copies).
  bool ranges_elsewhere = false;
  /// The KV all-gather's K/V heads a chunk (the config has 2): 2 as CUDA contexts choose where
  /// a rank's slice is short, so that a formula counting one head fails.
  std::int64_t kv_heads_per_chunk = 1;
};

class StrategyMemoryTest : public ::testing::TestWithParam<MemoryCase> {
 protected:
  template <class T>
  void check() {
    auto comm = world_ring();
    const int P = comm->size();
    engine::StrategyChoice choice;
    choice.kind = GetParam().kind;
    if (choice.kind == engine::StrategyKind::hybrid) choice.ulysses_degree = P == 4 ? 2 : P;
    choice.kv_heads_per_chunk = GetParam().kv_heads_per_chunk;
    // GQA with kv_heads < P on 3 and 4 ranks: Ulysses and the hybrid route shared K/V heads.
    auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2}, dtype_of<T>::value);
    if (GetParam().value_dim_steps != 0) cfg.value_dim = cfg.head_dim + 8 * GetParam().value_dim_steps;
    if (GetParam().balanced) {
      cfg.layout = RFA_LAYOUT_BALANCED;
      cfg.seq_total = 192;  // 8P chunks for P = 1..4
      cfg.doc_bounds = {0, 40, 41, 150, 192};
    }
    std::vector<rfa_mask_range_t> list;
    if (GetParam().ranges_elsewhere) {
      const std::int64_t L = 192;
      cfg.layout = RFA_LAYOUT_CONTIGUOUS;
      cfg.mask = RFA_MASK_RANGES;
      cfg.seq_total = L * P;
      for (std::int64_t r = 0; r < P; ++r)
        list.push_back({r * L, (r + 1) * L, (r + 1) % P * L, (r + 1) % P * L + L / 2, 0, 0, RFA_RANGE_FULL});
      cfg.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), cfg.seq_total, "ranges");
    }
    auto attn = engine::make_strategy(*comm, cfg, choice);
    const std::int64_t L = attn->local_seq(), B = cfg.batch, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
    const std::int64_t DV = cfg.dv();
    Tensor4<T> q("q", B, L, H, D), k("k", B, L, HKV, D), v("v", B, L, HKV, DV), out("out", B, L, H, DV),
        dout("dout", B, L, H, DV), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, DV);
    Tensor3<float> lse("lse", B, H, L);
    for (bool backward : {false, true}) {
      SCOPED_TRACE(backward ? "backward" : "forward");
      expect_workspace_kept(*attn, backward, [&] {
        if (backward) {
          attn->template backward<T>(q, k, v, out, dout, lse, dq, dk, dv);
        } else {
          attn->template forward<T>(q, k, v, out, lse);
        }
      });
      EXPECT_EQ(attn->last_workspace_bytes(), attn->workspace_bytes(backward));
    }
    expect_passes_in_turn_kept(
        *attn, [&] { attn->template forward<T>(q, k, v, out, lse); },
        [&] { attn->template backward<T>(q, k, v, out, dout, lse, dq, dk, dv); });
  }
};

TEST_P(StrategyMemoryTest, MatchesFormula) {
  if (GetParam().dtype == RFA_DTYPE_FLOAT32) {
    check<float>();
  } else {
    check<bf16_t>();
  }
}

std::vector<MemoryCase> memory_cases() {
  std::vector<MemoryCase> cases;
  for (auto kind : {engine::StrategyKind::ring, engine::StrategyKind::ulysses, engine::StrategyKind::allgather,
                    engine::StrategyKind::hybrid, engine::StrategyKind::needed})
    for (rfa_dtype_t dtype : {RFA_DTYPE_FLOAT32, RFA_DTYPE_BFLOAT16}) {
      cases.push_back({kind, dtype});
      cases.push_back({kind, dtype, dtype == RFA_DTYPE_FLOAT32 ? -1 : 4});  // V narrower, or wider (bf16 products)
      cases.push_back({kind, dtype, 0, true});
    }
  for (rfa_dtype_t dtype : {RFA_DTYPE_FLOAT32, RFA_DTYPE_BFLOAT16})
    cases.push_back({engine::StrategyKind::needed, dtype, 0, false, true});
  cases.push_back({engine::StrategyKind::allgather, RFA_DTYPE_FLOAT32, -1, false, false, 2});
  cases.push_back({engine::StrategyKind::allgather, RFA_DTYPE_BFLOAT16, 4, false, false, 2});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Strategies, StrategyMemoryTest, ::testing::ValuesIn(memory_cases()),
                         [](const ::testing::TestParamInfo<MemoryCase>& info) {
                           return std::string(engine::strategy_name(info.param.kind)) +
                                  (info.param.dtype == RFA_DTYPE_FLOAT32 ? "_fp32" : "_bf16") +
                                  (info.param.value_dim_steps < 0   ? "_narrower_v"
                                   : info.param.value_dim_steps > 0 ? "_wider_v"
                                                                    : "") +
                                  (info.param.balanced ? "_balanced_documents" : "") +
                                  (info.param.ranges_elsewhere ? "_ranges_elsewhere" : "") +
                                  (info.param.kv_heads_per_chunk > 1 ? "_two_heads_a_chunk" : "");
                         });

}  // namespace
}  // namespace test
}  // namespace rfa
