// SPDX-License-Identifier: BSD-3-Clause
// Sharding helpers: whole-sequence tensors <-> this rank's rows, with and without a context.
#include "buffer_checks.hpp"
#include "buffer_places.hpp"
#include "collective_call.hpp"
#include "context.hpp"
#include "core/dtype.hpp"
#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "firewall.hpp"
#include "layout/distributed_gather.hpp"
#include "layout/sequence_layout.hpp"
#include "layout/shard_copy.hpp"

namespace rfa {
namespace capi {
namespace {

/// The buffers of a sharding helper `call`: present, large and aligned enough, not overlapping,
/// and host memory (these helpers copy on the host whatever the context's device).
void check_host_buffers(const char* call, const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) {
  check_buffers(inputs, outputs);
  std::vector<Buffer> all(inputs);
  all.insert(all.end(), outputs.begin(), outputs.end());
  check_host_memory(all, call);
}

/// The dims of a bshd tensor and its byte sizes.
struct BshdShape {
  layout::BshdDims dims;
  std::int64_t local_bytes, global_bytes;
};

/// The dims of a bshd tensor with `heads` heads of `dim` values in this context, and its byte
/// sizes.
BshdShape bshd_shape(const rfa_context_s& c, std::int64_t heads, std::int64_t dim) {
  if (heads < 1) fail(RFA_ERROR_INVALID_ARGUMENT, "heads is ", heads, "; it must be >= 1");
  if (dim < 1) fail(RFA_ERROR_INVALID_ARGUMENT, "head_dim is ", dim, "; it must be >= 1");
  const rfa_options_t& o = c.options;
  // The whole sequence's tensor is the larger of the two; the context's own sizes are known to
  // fit (validate_options), a caller's head count and head dim are not.
  std::int64_t global_bytes = std::int64_t(dtype_size(o.dtype));
  for (const std::int64_t factor : {o.batch, o.seq_total, heads, dim}) {
    if (__builtin_mul_overflow(global_bytes, factor, &global_bytes)) {
      fail(RFA_ERROR_INVALID_ARGUMENT, "heads is ", heads, " and head_dim ", dim,
           ": a tensor of batch x seq_total x heads x head_dim (", o.batch, " x ", o.seq_total, " x ", heads, " x ",
           dim, ") elements overflows 64-bit byte sizes, so no buffer can hold it");
    }
  }
  const std::int64_t row = heads * dim * std::int64_t(dtype_size(o.dtype));
  return {{o.batch, heads, dim}, o.batch * c.engine->local_seq() * row, global_bytes};
}

rfa_result_t scatter_bshd(const rfa_context_s& c, int64_t heads, int64_t dim, const void* global, void* local) {
  const auto shape = bshd_shape(c, heads, dim);
  const std::int64_t e = std::int64_t(dtype_size(c.options.dtype));
  check_host_buffers("rfa_scatter_bshd", {{"global", global, shape.global_bytes, e}},
                     {{"local", local, shape.local_bytes, e}});
  dispatch_dtype(c.options.dtype, [&](auto tag) {
    using T = decltype(tag);
    layout::scatter_bshd<T>(static_cast<const T*>(global), c.options.seq_total, shape.dims, c.engine->local_positions(),
                            static_cast<T*>(local));
  });
  return RFA_SUCCESS;
}

rfa_result_t gather_bshd(const rfa_context_s& c, int64_t heads, int64_t dim, const void* local, void* global) {
  const auto shape = bshd_shape(c, heads, dim);
  const std::int64_t e = std::int64_t(dtype_size(c.options.dtype));
  check_host_buffers("rfa_gather_bshd", {{"local", local, shape.local_bytes, e}},
                     {{"global", global, shape.global_bytes, e}});
  dispatch_dtype(c.options.dtype, [&](auto tag) {
    using T = decltype(tag);
    layout::gather_bshd<T>(static_cast<const T*>(local), shape.dims, c.engine->local_positions(),
                           static_cast<T*>(global), c.options.seq_total);
  });
  return RFA_SUCCESS;
}

rfa_result_t allgather_bshd(rfa_context_s& c, int64_t heads, int64_t dim, const void* local, void* global) {
  // Local problems are agreed over the ring before the all-gather, so no rank is left in it.
  BshdShape shape{};
  auto checks = [&] {
    shape = bshd_shape(c, heads, dim);
    const std::int64_t e = std::int64_t(dtype_size(c.options.dtype));
    check_host_buffers("rfa_allgather_bshd", {{"local", local, shape.local_bytes, e}},
                       {{"global", global, shape.global_bytes, e}});
  };
  run_collective_call(c, CollectiveCall::allgather_bshd, checks, [&] {
    dispatch_dtype(c.options.dtype, [&](auto tag) {
      using T = decltype(tag);
      // Host memory whatever the context's device: a CUDA context's transport moves device
      // memory, its MPI side host memory.
      layout::allgather_bshd<T>(c.comm->host_memory(), c.engine->local_positions(), static_cast<const T*>(local),
                                shape.dims, static_cast<T*>(global), c.options.seq_total);
    });
  });
  return RFA_SUCCESS;
}

/// The caller's layout, checked before it is used as an rfa_layout_t (see enum_value.hpp).
rfa_layout_t checked_layout(const rfa_layout_t& layout) {
  const int v = enum_value(layout);
  if (v != RFA_LAYOUT_CONTIGUOUS && v != RFA_LAYOUT_ZIGZAG && v != RFA_LAYOUT_STRIPE && v != RFA_LAYOUT_BALANCED)
    fail(RFA_ERROR_INVALID_ARGUMENT, "layout is ", v, ", not an rfa_layout_t value");
  return rfa_layout_t(v);
}

std::int64_t lse_local_bytes(const rfa_context_s& c) {
  return c.options.batch * c.options.heads * c.engine->local_seq() * std::int64_t(sizeof(float));
}
std::int64_t lse_global_bytes(const rfa_context_s& c) {
  return c.options.batch * c.options.heads * c.options.seq_total * std::int64_t(sizeof(float));
}

}  // namespace
}  // namespace capi
}  // namespace rfa

using rfa::capi::Buffer;
using rfa::capi::check_buffers;

extern "C" {

RFA_API rfa_result_t rfa_scatter_bshd(rfa_context_t context, int64_t heads, const void* global, void* local) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    return rfa::capi::scatter_bshd(c, heads, c.options.head_dim, global, local);
  });
}

RFA_API rfa_result_t rfa_scatter_bshd_dim(rfa_context_t context, int64_t heads, int64_t head_dim, const void* global,
                                          void* local) {
  return rfa::capi::guard(__func__, [&] {
    return rfa::capi::scatter_bshd(rfa::capi::context_ref(context), heads, head_dim, global, local);
  });
}

RFA_API rfa_result_t rfa_gather_bshd(rfa_context_t context, int64_t heads, const void* local, void* global) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    return rfa::capi::gather_bshd(c, heads, c.options.head_dim, local, global);
  });
}

RFA_API rfa_result_t rfa_gather_bshd_dim(rfa_context_t context, int64_t heads, int64_t head_dim, const void* local,
                                         void* global) {
  return rfa::capi::guard(__func__, [&] {
    return rfa::capi::gather_bshd(rfa::capi::context_ref(context), heads, head_dim, local, global);
  });
}

RFA_API rfa_result_t rfa_allgather_bshd(rfa_context_t context, int64_t heads, const void* local, void* global) {
  return rfa::capi::guard(__func__, [&] {
    rfa_context_s& c = rfa::capi::context_ref(context);
    return rfa::capi::allgather_bshd(c, heads, c.options.head_dim, local, global);
  });
}

RFA_API rfa_result_t rfa_allgather_bshd_dim(rfa_context_t context, int64_t heads, int64_t head_dim, const void* local,
                                            void* global) {
  return rfa::capi::guard(__func__, [&] {
    return rfa::capi::allgather_bshd(rfa::capi::context_ref(context), heads, head_dim, local, global);
  });
}

RFA_API rfa_result_t rfa_scatter_lse(rfa_context_t context, const float* global, float* local) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    rfa::capi::check_host_buffers("rfa_scatter_lse", {{"global", global, rfa::capi::lse_global_bytes(c), 4}},
                                  {{"local", local, rfa::capi::lse_local_bytes(c), 4}});
    rfa::layout::scatter_bhs(global, c.options.seq_total, c.options.batch, c.options.heads, c.engine->local_positions(),
                             local);
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_gather_lse(rfa_context_t context, const float* local, float* global) {
  return rfa::capi::guard(__func__, [&] {
    const rfa_context_s& c = rfa::capi::context_ref(context);
    rfa::capi::check_host_buffers("rfa_gather_lse", {{"local", local, rfa::capi::lse_local_bytes(c), 4}},
                                  {{"global", global, rfa::capi::lse_global_bytes(c), 4}});
    rfa::layout::gather_bhs(local, c.options.batch, c.options.heads, c.engine->local_positions(), global,
                            c.options.seq_total);
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_layout_local_seq(rfa_layout_t layout, int64_t seq_total, int ranks, int64_t* local_seq) {
  return rfa::capi::guard(__func__, [&] {
    rfa::capi::require_pointer(local_seq, "local_seq");
    *local_seq = rfa::layout::local_length(rfa::capi::checked_layout(layout), seq_total, ranks);
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_layout_positions(rfa_layout_t layout, int64_t seq_total, int ranks, int position,
                                          int64_t* positions, int64_t capacity) {
  return rfa::capi::guard(__func__, [&] {
    rfa::capi::require_pointer(positions, "positions");
    const rfa::PositionMap map = rfa::layout::positions(rfa::capi::checked_layout(layout), seq_total, ranks, position);
    if (capacity < map.length()) {
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "capacity is ", capacity, " but ring position ", position, " holds ",
                map.length(), " positions");
    }
    for (std::int64_t i = 0; i < map.length(); ++i) positions[i] = map(i);
    return RFA_SUCCESS;
  });
}

}  // extern "C"
