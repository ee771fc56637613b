// SPDX-License-Identifier: BSD-3-Clause
#include "engine/head_routing.hpp"

#include "core/error.hpp"

namespace rfa {
namespace engine {

HeadRouting::HeadRouting(std::int64_t heads, std::int64_t kv_heads, int degree) : degree_(degree) {
  require(degree >= 1, "the Ulysses degree is ", degree, "; it must be >= 1");
  require(heads >= 1 && kv_heads >= 1 && heads % kv_heads == 0, "heads (", heads,
          ") must be a positive multiple of kv_heads (", kv_heads, ")");
  require(heads % degree == 0, "heads (", heads, ") is not a multiple of the Ulysses degree (", degree,
          "): every rank attends to heads / degree whole heads; choose a degree that divides ", heads,
          " or use the ring strategy");
  heads_per_rank_ = heads / degree;
  group_ = heads / kv_heads;
  const bool aligned = kv_heads % degree == 0 || degree % kv_heads == 0;
  one_slot_per_query_head_ = !aligned;
  slots_ = aligned ? kv_count(0) : heads_per_rank_;
}

}  // namespace engine
}  // namespace rfa
