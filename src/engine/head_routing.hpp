// SPDX-License-Identifier: BSD-3-Clause
// Which heads each rank of a Ulysses group attends to, and which K/V heads it therefore needs
// (docs/architecture.md §8).
//
// With P ranks and H query heads, rank r takes the query heads [r*H/P, (r+1)*H/P). Query head h
// reads K/V head h / g, g = H / kv_heads (GQA; MQA is kv_heads = 1), so rank r needs the K/V
// heads kv_first(r) .. kv_first(r) + kv_count(r) - 1 and nothing else: that is all the
// all-to-all brings it, even when kv_heads < P (then several ranks receive the same K/V head and
// their dK/dV partials are summed on the way back).
//
// On the receiving rank the K/V heads sit in `slots` columns that the local kernel reads with
// its usual rule (local query head i reads slot i / (H/P / slots)). When the query heads of every
// rank cover whole groups (kv_heads % P == 0) or lie inside one group (P % kv_heads == 0), the
// slots are exactly the received heads. Otherwise (e.g. H = 12, kv_heads = 4, P = 3: rank 0 has
// query heads 0-3 over K/V heads 0,0,0,1) no such rule exists, and each query head gets its own
// slot holding a copy of its K/V head: the copy is made on the receiving rank, the wire still
// carries each needed head once.
#pragma once

#include <cstdint>

namespace rfa {
namespace engine {

class HeadRouting {
 public:
  /// Throws RFA_ERROR_INVALID_ARGUMENT, saying what to change, unless heads is a multiple of
  /// `degree` and of kv_heads.
  HeadRouting(std::int64_t heads, std::int64_t kv_heads, int degree);

  int degree() const { return degree_; }
  /// Query heads per rank, H / P.
  std::int64_t heads_per_rank() const { return heads_per_rank_; }
  std::int64_t q_first(int r) const { return r * heads_per_rank_; }
  /// The first K/V head rank r needs, and how many.
  std::int64_t kv_first(int r) const { return q_first(r) / group_; }
  std::int64_t kv_count(int r) const { return (q_first(r) + heads_per_rank_ - 1) / group_ - kv_first(r) + 1; }
  /// The sum of kv_count(r) over all ranks: the K/V heads one rank sends in one all-to-all.
  std::int64_t kv_count_total() const {
    std::int64_t n = 0;
    for (int r = 0; r < degree_; ++r) n += kv_count(r);
    return n;
  }
  /// K/V columns of the local kernel on every rank.
  std::int64_t slots() const { return slots_; }
  /// The global K/V head held in slot j (0 <= j < slots()) on rank r.
  std::int64_t slot_head(int r, std::int64_t j) const {
    return one_slot_per_query_head_ ? (q_first(r) + j) / group_ : kv_first(r) + j;
  }

 private:
  int degree_;
  std::int64_t heads_per_rank_;
  std::int64_t group_;  ///< query heads per K/V head
  std::int64_t slots_;
  bool one_slot_per_query_head_;
};

}  // namespace engine
}  // namespace rfa
