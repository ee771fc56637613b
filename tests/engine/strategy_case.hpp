// SPDX-License-Identifier: BSD-3-Clause
// The cases every context-parallel strategy is checked on against the float64 reference:
// every layout, causal and not, MHA, GQA (K/V heads a multiple of P, a divisor of P, and
// neither for P = 3) and MQA. 12 heads divide by P = 1..4 and S = 120 by 2P.
#pragma once

#include <string>
#include <vector>

#include "ring_case.hpp"

namespace rfa {
namespace test {

struct StrategySpec {
  rfa_layout_t layout;
  rfa_mask_t mask;
  std::int64_t kv_heads;
  std::int64_t window = 0;
  std::vector<std::int64_t> docs = {};  ///< packed documents' boundaries (empty: none)
};

/// Packed documents over S = 120 for the engine tests: documents of length 1, one longer than
/// any rank's rows, and boundaries inside ranks' blocks for every P = 1..4 and layout.
inline std::vector<std::int64_t> packed_documents() { return {0, 1, 2, 50, 51, 97, 120}; }

inline engine::AttentionConfig strategy_config(const StrategySpec& spec, rfa_dtype_t dtype) {
  engine::AttentionConfig cfg;
  cfg.layout = spec.layout;
  cfg.mask = spec.mask;
  cfg.window = spec.window;
  cfg.doc_bounds = spec.docs;
  cfg.dtype = dtype;
  cfg.batch = 2;
  cfg.seq_total = 120;
  cfg.heads = 12;
  cfg.kv_heads = spec.kv_heads;
  cfg.head_dim = 32;
  return cfg;
}

inline std::vector<StrategySpec> strategy_specs() {
  std::vector<StrategySpec> specs;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL})
      for (std::int64_t kv_heads : {12, 4, 2, 1}) specs.push_back({layout, mask, kv_heads});
  // A sliding window (S/8), causal and not: every strategy takes it through the same params.
  for (rfa_layout_t layout : {RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) specs.push_back({layout, mask, 4, 15});
  // Packed documents, causal and not, on every layout; and with a window on top.
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) specs.push_back({layout, mask, 4, 0, packed_documents()});
  specs.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2, 15, packed_documents()});
  return specs;
}

inline std::string strategy_spec_name(const ::testing::TestParamInfo<StrategySpec>& info) {
  const StrategySpec& s = info.param;
  const std::string kv = s.kv_heads == 12 ? "mha" : s.kv_heads == 1 ? "mqa" : "gqa" + std::to_string(s.kv_heads);
  return std::string(layout::layout_name(s.layout)) + (s.mask == RFA_MASK_CAUSAL ? "_causal_" : "_full_") + kv +
         (s.window > 0 ? "_window" + std::to_string(s.window) : "") +
         (s.docs.empty() ? "" : "_docs" + std::to_string(s.docs.size() - 1));
}

}  // namespace test
}  // namespace rfa
