// SPDX-License-Identifier: BSD-3-Clause
// The non-collective questions a caller asks a context: its options, ring position and shard.
#include <algorithm>
#include <cstring>

#include "context.hpp"
#include "core/error.hpp"
#include "firewall.hpp"
#include "options.hpp"

extern "C" {

RFA_API rfa_result_t rfa_context_get_options(rfa_context_t context, rfa_options_t* options) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    rfa::capi::require_pointer(options, "options");
    rfa::capi::check_options_size(options->struct_size, "options->struct_size");
    rfa::capi::write_options(options, options->struct_size, c.options);
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_context_get_plan(rfa_context_t context, char* text, int64_t capacity) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    rfa::capi::require_pointer(text, "text");
    if (capacity < 1) rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "capacity is ", capacity, "; it must be at least 1");
    const std::size_t n = std::min<std::size_t>(c.plan.size(), std::size_t(capacity - 1));
    std::memcpy(text, c.plan.data(), n);
    text[n] = '\0';
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_context_get_position(rfa_context_t context, int* position) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    rfa::capi::require_pointer(position, "position");
    *position = c.engine->position();
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_context_get_ranks(rfa_context_t context, int* ranks) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    rfa::capi::require_pointer(ranks, "ranks");
    *ranks = c.engine->ranks();
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_context_get_local_seq(rfa_context_t context, int64_t* local_seq) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    rfa::capi::require_pointer(local_seq, "local_seq");
    *local_seq = c.engine->local_seq();
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_context_get_local_positions(rfa_context_t context, int64_t* positions, int64_t capacity) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    rfa::capi::require_pointer(positions, "positions");
    const std::int64_t length = c.engine->local_seq();
    if (capacity < length) {
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "capacity is ", capacity, " but this rank holds ", length, " positions");
    }
    const rfa::PositionMap map = c.engine->local_positions();
    for (std::int64_t i = 0; i < length; ++i) positions[i] = map(i);
    return RFA_SUCCESS;
  });
}

}  // extern "C"
