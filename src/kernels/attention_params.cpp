// SPDX-License-Identifier: BSD-3-Clause
#include <cmath>
#include <limits>

#include "core/documents.hpp"
#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {

float AttentionParams::scale() const {
  return softmax_scale != 0.0f ? softmax_scale : 1.0f / std::sqrt(float(head_dim));
}

AttentionParams make_params(std::int64_t batch, std::int64_t seq_q, std::int64_t seq_k, std::int64_t heads,
                            std::int64_t kv_heads, std::int64_t head_dim, rfa_mask_t mask, float softmax_scale) {
  AttentionParams p;
  p.batch = batch;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.mask = mask;
  p.softmax_scale = softmax_scale;
  p.q_pos = PositionMap::contiguous(0, seq_q);
  p.k_pos = PositionMap::contiguous(0, seq_k);
  return p;
}

void validate(const AttentionParams& p) {
  require(p.batch >= 1, "batch must be >= 1, got ", p.batch);
  require(p.seq_q >= 1, "seq_q must be >= 1, got ", p.seq_q);
  require(p.seq_k >= 1, "seq_k must be >= 1, got ", p.seq_k);
  require(p.heads >= 1, "heads must be >= 1, got ", p.heads);
  require(p.kv_heads >= 1, "kv_heads must be >= 1, got ", p.kv_heads);
  require(p.heads % p.kv_heads == 0, "heads (", p.heads, ") must be a multiple of kv_heads (", p.kv_heads, ")");
  // Q and K's head dim, then V's (0: the same).
  const auto supported = [](std::int64_t d) { return d >= 8 && d <= kMaxHeadDim && d % 8 == 0; };
  if (!supported(p.head_dim)) {
    fail(RFA_ERROR_UNSUPPORTED, "head_dim ", p.head_dim, " is not supported: it must be a multiple of 8 between 8 and ",
         kMaxHeadDim);
  }
  if (p.value_dim != 0 && !supported(p.value_dim)) {
    fail(RFA_ERROR_UNSUPPORTED, "value head dim ", p.value_dim,
         " is not supported: it must be a multiple of 8 between 8 and ", kMaxHeadDim, " (0: head_dim)");
  }
  require(std::isfinite(p.softmax_scale) && p.softmax_scale >= 0.0f,
          "softmax_scale must be finite and >= 0 (0 selects 1/sqrt(head_dim)), got ", p.softmax_scale);
  require(std::isfinite(p.softcap) && p.softcap >= 0.0f, "softcap must be finite and >= 0 (0: scores not capped), got ",
          p.softcap);
  // The kernels work in the log2 domain, in fp32: scale * log2(e) and softcap * log2(e) must be
  // finite there, and so must scale / softcap, the capped kernels' factor (beyond, the scores
  // became infinite and every row read as seeing no key, silently).
  const double log2e = 1.4426950408889634, most = double(std::numeric_limits<float>::max());
  const double scale = double(p.scale());
  if (scale * log2e > most) {
    fail(RFA_ERROR_INVALID_ARGUMENT, "softmax_scale ", scale,
         " is too large: the kernels take scale * log2(e) in fp32, ", "which needs scale <= ", most / log2e);
  }
  if (p.softcap > 0.0f && (double(p.softcap) * log2e > most || scale / double(p.softcap) > most)) {
    fail(RFA_ERROR_INVALID_ARGUMENT, "softcap ", p.softcap, " with softmax_scale ", scale,
         " is out of the kernels' range: they take softcap * log2(e) and scale / softcap in fp32, which needs softcap "
         "<= ",
         most / log2e, " and softcap >= scale / ", most);
  }
  const int mask = enum_value(p.mask);
  require(mask == RFA_MASK_NONE || mask == RFA_MASK_CAUSAL || mask == RFA_MASK_RANGES, "unknown mask value ", mask);
  require((mask == RFA_MASK_RANGES) == p.ranges.on,
          mask == RFA_MASK_RANGES ? "the mask is RFA_MASK_RANGES but no range index was given"
                                  : "a range index was given but the mask is not RFA_MASK_RANGES");
  require(p.window >= 0, "window must be >= 0 (0: no sliding window), got ", p.window);
  // With per-sequence documents, doc_offsets holds batch + 1 values (batch >= 1 here; the
  // largest batch has no room for them).
  const bool one_more = p.batch < std::numeric_limits<std::int64_t>::max();
  validate_document_lists(p.doc_bounds, p.doc_bound_count, p.doc_offsets,
                          p.doc_offsets == nullptr ? 0
                          : one_more               ? p.batch + 1
                                                   : -1,
                          p.batch, -1, "document boundaries", "document list offsets");
  validate_position_map(p.q_pos, p.seq_q, "query");
  validate_position_map(p.k_pos, p.seq_k, "key");
}

}  // namespace kernels
}  // namespace rfa
