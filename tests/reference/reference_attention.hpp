// SPDX-License-Identifier: BSD-3-Clause
// Naive float64 attention, forward and backward, on the full (unsharded) problem.
// Layouts as in docs/architecture.md §2: q/dq [b][sq][h][d], k/dk [b][sk][hkv][d], out/dout
// [b][sq][h][dv], v/dv [b][sk][hkv][dv] (dv = d unless value_dim is set), lse [b][h][sq]. A row that sees no key has
// out = 0, lse = -inf and zero gradients.
#pragma once

#include <cstdint>
#include <vector>

namespace rfa {
namespace reference {

/// One entry of a mask given as ranges, as the C API documents it (rfa_mask_range_t): queries
/// [q_begin, q_end) see keys [k_begin, k_end) where `kind` lets them through.
struct Range {
  enum Kind { full = 0, causal = 1, anticausal = 2, band = 3 };
  std::int64_t q_begin = 0, q_end = 0, k_begin = 0, k_end = 0;
  Kind kind = full;
  std::int64_t band_lo = 0, band_hi = 0;  ///< band only
};

struct Problem {
  std::int64_t batch = 1, seq_q = 1, seq_k = 1, heads = 1, kv_heads = 1, head_dim = 8;
  /// Head dim of V, out, dout and dV (MLA's 128 beside a 192 of Q and K); 0: head_dim.
  std::int64_t value_dim = 0;
  double scale = 0.0;       ///< 0 means 1/sqrt(head_dim)
  bool causal = false;      ///< key visible iff k_pos <= q_pos
  std::int64_t window = 0;  ///< and (if > 0) iff q_pos - k_pos < window
  /// and (if not empty) iff both positions lie in the same document [b[d], b[d+1]) of these
  /// cumulative boundaries (packed documents)
  std::vector<std::int64_t> doc_bounds;
  /// Per-sequence documents: when not empty, batch entry b's boundaries (empty: one document)
  /// in place of doc_bounds.
  std::vector<std::vector<std::int64_t>> entry_doc_bounds;
  /// and (if ranges_on) iff some entry of `ranges` lets the pair through (an empty list: none)
  bool ranges_on = false;
  std::vector<Range> ranges;
  /// Attention sinks: one logit per query head that joins every row's softmax denominator
  /// (empty: none; -inf: none for that head). The lse includes it.
  std::vector<double> sinks;
  /// Soft-capped scores: with softcap > 0 each scaled score s becomes softcap * tanh(s / softcap)
  /// before the mask and the softmax. 0: scores as they are.
  double softcap = 0.0;
  /// The query rows computed: those i with i % row_stride == row_offset (every row by default).
  /// The other rows' out, lse and dq stay 0, and dk, dv and the sinks' gradients hold the
  /// computed rows' contributions only, so that the slices of row_stride callers (one per
  /// offset) add up to the whole problem (tests/common/reference_over.hpp shares the
  /// reference across ranks that way; exact float64 only: with `round`, the slices' rounded sums need not add up
  /// to the whole's). Interleaved rows give each slice the same share of a causal mask's work.
  std::int64_t row_offset = 0, row_stride = 1;
  std::vector<std::int64_t> q_pos;  ///< global position of each query row (empty: 0..seq_q-1)
  std::vector<std::int64_t> k_pos;  ///< global position of each key row (empty: 0..seq_k-1)
  /// nullptr: exact float64. Otherwise the rounding of a plain low-precision implementation
  /// (16-bit matrix products, each result rounded to the storage type): scaled scores,
  /// probabilities, dP, dS and the outputs go through it. Tests of 16-bit kernels bound the
  /// kernel's error against float64 by a multiple of this implementation's error, which is
  /// meaningful where the exact result is 0 and a relative error is not.
  double (*round)(double) = nullptr;

  double effective_scale() const;
  /// The document boundaries of batch entry b.
  const std::vector<std::int64_t>& documents_of(std::int64_t b) const {
    return entry_doc_bounds.empty() ? doc_bounds : entry_doc_bounds[std::size_t(b)];
  }
  std::int64_t dv() const { return value_dim != 0 ? value_dim : head_dim; }
  std::int64_t q_size() const { return batch * seq_q * heads * head_dim; }
  std::int64_t kv_size() const { return batch * seq_k * kv_heads * head_dim; }
  /// Elements of out and dout, and of v and dv (value_dim wide).
  std::int64_t out_size() const { return batch * seq_q * heads * dv(); }
  std::int64_t v_size() const { return batch * seq_k * kv_heads * dv(); }
  std::int64_t lse_size() const { return batch * heads * seq_q; }
  double rounded(double x) const { return round ? round(x) : x; }
  bool computes_row(std::int64_t i) const { return i % row_stride == row_offset; }
};

/// Per-sequence documents in the library's form (options.doc_boundaries and
/// doc_boundary_offsets): the entries' boundaries back to back, and batch + 1 offsets cutting them.
struct DocumentLists {
  std::vector<std::int64_t> bounds, offsets;
};

/// `lists`, one per batch entry (an empty one: one document), packed back to back.
inline DocumentLists pack_document_lists(const std::vector<std::vector<std::int64_t>>& lists) {
  DocumentLists packed;
  packed.offsets.push_back(0);
  for (const std::vector<std::int64_t>& list : lists) {
    packed.bounds.insert(packed.bounds.end(), list.begin(), list.end());
    packed.offsets.push_back(std::int64_t(packed.bounds.size()));
  }
  return packed;
}

/// The entries' lists that `offsets` cut from `bounds` (Problem::entry_doc_bounds; none without
/// offsets).
inline std::vector<std::vector<std::int64_t>> split_document_lists(const std::vector<std::int64_t>& bounds,
                                                                   const std::vector<std::int64_t>& offsets) {
  std::vector<std::vector<std::int64_t>> lists;
  for (std::size_t e = 0; e + 1 < offsets.size(); ++e)
    lists.emplace_back(bounds.begin() + offsets[e], bounds.begin() + offsets[e + 1]);
  return lists;
}

void forward(const Problem& p, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
             std::vector<double>& out, std::vector<double>& lse);

/// dq, dk, dv, and with sinks (when `dsinks` is given) the gradient of each head's sink:
/// the softmax Jacobian's term of the sink's probability, whose value is zero.
void backward(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
              const std::vector<double>& v, const std::vector<double>& dout, std::vector<double>& dq,
              std::vector<double>& dk, std::vector<double>& dv, std::vector<double>* dsinks = nullptr);

/// forward() and backward() of the same problem and inputs at once, with the same results: each
/// (batch, head) pair's probabilities, most of either pass's time, computed once for both.
void forward_backward(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                      const std::vector<double>& v, const std::vector<double>& dout, std::vector<double>& out,
                      std::vector<double>& lse, std::vector<double>& dq, std::vector<double>& dk,
                      std::vector<double>& dv, std::vector<double>* dsinks = nullptr);

}  // namespace reference
}  // namespace rfa
