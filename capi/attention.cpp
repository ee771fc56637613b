// SPDX-License-Identifier: BSD-3-Clause
// rfa_forward / rfa_backward (and their _with_sinks forms): caller pointers -> unmanaged Kokkos
// views (host memory, or the CUDA device's for a RFA_DEVICE_CUDA context) -> the context's
// strategy (host or device passes); the sinks, where given, folded into its finished rows.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>

#include "buffer_checks.hpp"
#include "buffer_places.hpp"
#include "collective_call.hpp"
#include "comm/agreement.hpp"
#include "comm/host_sums.hpp"
#include "context.hpp"
#include "core/documents.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "engine/attention_sinks.hpp"
#include "engine/value_checks.hpp"
#include "firewall.hpp"
#include "kernels/nonfinite_scan.hpp"
#include "options.hpp"

#if RFA_ENGINE_CUDA
#include <cuda_runtime_api.h>

#include "device/cuda_error.hpp"
#endif

namespace rfa {
namespace capi {
namespace {

template <class T, class Space>
using Tensor4 = engine::SpaceTensor4<T, Space>;
template <class T, class Space>
using Tensor3 = engine::SpaceTensor3<T, Space>;

/// Byte sizes of this rank's tensors: q (and dq), k (and dk), v (and dv), out (and dout), lse.
struct LocalSizes {
  std::int64_t q, k, v, out, lse;
  std::int64_t element;  // bytes of one q/k/v element: their alignment
};

LocalSizes local_sizes(const rfa_context_s& c) {
  const rfa_options_t& o = c.options;
  const std::int64_t L = c.engine->local_seq(), elem = std::int64_t(dtype_size(o.dtype));
  return {o.batch * L * o.heads * o.head_dim * elem,
          o.batch * L * o.kv_heads * o.head_dim * elem,
          o.batch * L * o.kv_heads * value_head_dim_of(o) * elem,
          o.batch * L * o.heads * value_head_dim_of(o) * elem,
          o.batch * o.heads * L * std::int64_t(sizeof(float)),
          elem};
}

/// This rank's bshd tensor at `p` with `heads` heads of `dim` values (the options' head_dim for
/// q, k and their gradients, value_head_dim for v, out, dout and dv).
template <class T, class Space>
Tensor4<const T, Space> in4(const void* p, const rfa_context_s& c, std::int64_t heads, std::int64_t dim) {
  return Tensor4<const T, Space>(static_cast<const T*>(p), c.options.batch, c.engine->local_seq(), heads, dim);
}
template <class T, class Space>
Tensor4<T, Space> out4(void* p, const rfa_context_s& c, std::int64_t heads, std::int64_t dim) {
  return Tensor4<T, Space>(static_cast<T*>(p), c.options.batch, c.engine->local_seq(), heads, dim);
}
template <class T, class Space>
Tensor3<T, Space> lse3(T* p, const rfa_context_s& c) {
  return Tensor3<T, Space>(p, c.options.batch, c.options.heads, c.engine->local_seq());
}

/// The value checks' scan of a bshd tensor of the context with `heads` heads of `dim` values, in
/// memory `Space`.
template <class T, class Space>
engine::ScannedTensor scan_bshd(const char* name, const void* p, const rfa_context_s& c, std::int64_t heads,
                                std::int64_t dim) {
  const rfa_options_t& o = c.options;
  const std::int64_t L = c.engine->local_seq();
  return {name,    kernels::first_nonfinite<T, Space>(static_cast<const T*>(p), o.batch * L * heads * dim, false),
          o.batch, L,
          heads,   dim};
}

/// The same for an lse ([batch][heads][rows], fp32), where -inf is a row that sees no key.
template <class Space>
engine::ScannedTensor scan_lse(const float* p, const rfa_context_s& c) {
  const rfa_options_t& o = c.options;
  const std::int64_t L = c.engine->local_seq();
  // -inf is the lse of a row that sees no key, which only a mask given as ranges can leave;
  // under the others every query sees at least itself, and -inf is a corrupted lse (its
  // row's gradients would silently be 0).
  const bool rows_may_see_nothing = o.mask == RFA_MASK_RANGES;
  return {"lse",   kernels::first_nonfinite<float, Space>(p, o.batch * o.heads * L, rows_may_see_nothing),
          o.batch, L,
          o.heads, 0};
}

bool checks_values(const rfa_context_s& c) { return c.options.check_values == RFA_VALUE_CHECKS_ON; }

/// Before a value scan of device memory: the scans run on Kokkos' own instance, so the
/// context's stream (the caller's writes of the inputs, the engine's of the outputs) must be
/// done first. Nothing to wait for on the host.
template <class Space>
void settle_before_scan(const rfa_context_s& c) {
  if constexpr (!std::is_same<Space, Kokkos::HostSpace>::value) wait_for_context_stream(c, "before the value checks");
}

constexpr const char* kInputsUntouched = "nothing was computed or written";
constexpr const char* kOutputsWritten = "the outputs are written but must not be trusted";

/// A tensor argument of `bytes` bytes: aligned to its elements, and on a CUDA context to 16 bytes
/// (the kernels, rfa's and cuDNN's, read and write 16-byte chunks of the caller's tensors; cuDNN
/// writes and reads lse in place, where its graphs assume 16-byte aligned statistics).
Buffer tensor_buffer(const rfa_context_s& c, const char* name, const void* data, std::int64_t bytes,
                     std::int64_t element) {
  if (c.options.device == RFA_DEVICE_CUDA)
    return {name, data, bytes, 16, "a CUDA context's kernels move its tensors in 16-byte chunks"};
  return {name, data, bytes, element};
}

/// NULL and overlapping buffers, then buffers in the wrong memory for the context's device.
void check_call_buffers(const rfa_context_s& c, const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) {
  check_buffers(inputs, outputs);
  check_buffer_places(c.options.device, c.cuda_device, inputs, outputs);
}

/// Calls `run(tag, space)` with the element type of the context's dtype and its memory space
/// (Kokkos::HostSpace, or Kokkos::CudaSpace for a CUDA context).
template <class Run>
void dispatch_place(const rfa_context_s& c, Run&& run) {
  dispatch_dtype(c.options.dtype, [&](auto tag) {
    if (c.options.device == RFA_DEVICE_CUDA) {
#if RFA_ENGINE_CUDA
      run(tag, Kokkos::CudaSpace());
#else
      fail(RFA_ERROR_INTERNAL, "a CUDA context exists in a build whose engine has no CUDA backend");
#endif
    } else {
      run(tag, Kokkos::HostSpace());
    }
  });
}

/// The attention sinks of a call (rfa_forward_with_sinks, rfa_backward_with_sinks): the caller's
/// [heads] logits and the hash of their values, which the ranks agree on before any data moves.
struct CallSinks {
  bool given = false;             ///< the call is one of the _with_sinks calls
  const float* values = nullptr;  ///< the caller's, in the context's memory
  std::int64_t hash = 0;          ///< set by read_sinks()
};

#if RFA_ENGINE_CUDA
/// Copies `bytes` between the host and the device on the context's stream, ordered after the
/// caller's work there, and waits for it (the host side is the caller's stack). The caller's work
/// is waited for first, by the deadline: a copy to or from pageable memory may block behind it
/// without one.
void copy_on_stream(const rfa_context_s& c, void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind,
                    const char* what) {
  const auto stream = static_cast<cudaStream_t>(c.engine->cuda_stream());
  wait_for_context_stream(c, what);
  device::check_cuda(cudaMemcpyAsync(to, from, bytes, kind, stream), what);
  wait_for_context_stream(c, what);
}
#endif

/// The sinks' part of a call's checks: the call fits the context (sinks or not, as created),
/// and the values are readable and none is NaN or +inf (-inf: no sink). Reads them to the host
/// and hashes them.
void read_sinks(const rfa_context_s& c, CallSinks& sinks) {
  const bool context_has = c.options.attention_sinks != 0;
  if (sinks.given && !context_has) {
    fail(RFA_ERROR_INVALID_USAGE,
         "the context was created without attention sinks (options.attention_sinks 0): call rfa_forward / "
         "rfa_backward, or create it with attention_sinks set");
  }
  if (!sinks.given && context_has) {
    fail(RFA_ERROR_INVALID_USAGE,
         "the context was created with options.attention_sinks set: call rfa_forward_with_sinks / "
         "rfa_backward_with_sinks, which take the sink logits");
  }
  if (!sinks.given) return;
  const std::int64_t H = c.options.heads;
  std::vector<float> host(static_cast<std::size_t>(H));
  if (c.options.device == RFA_DEVICE_CUDA) {
#if RFA_ENGINE_CUDA
    copy_on_stream(c, host.data(), sinks.values, host.size() * sizeof(float), cudaMemcpyDeviceToHost,
                   "reading the sinks from the device");
#endif
  } else {
    std::copy(sinks.values, sinks.values + H, host.begin());
  }
  std::vector<std::int64_t> bits(host.size());
  for (std::size_t h = 0; h < host.size(); ++h) {
    require(!std::isnan(host[h]) && host[h] != INFINITY, "sinks[", h, "] is ", host[h],
            ": a sink logit must be finite or -inf (no sink)");
    // -0 and +0 are the same logit (exp(0) either way): one hashes as the other.
    const float value = host[h] == 0.0f ? 0.0f : host[h];
    std::uint32_t b;
    std::memcpy(&b, &value, sizeof b);
    bits[h] = std::int64_t(b);
  }
  sinks.hash = document_bounds_hash(bits.data(), std::int64_t(bits.size()));  // FNV-1a of any int64 list
}

/// Collective, at the start of a call's body: every rank holds the same sinks (agreed on their
/// hash; differing ones fail every rank with RFA_ERROR_INVALID_USAGE before any data moves).
void agree_on_sinks(rfa_context_s& c, const CallSinks& sinks) {
  if (sinks.given) comm::require_same_everywhere(*c.comm, {{"the sink logits (hash of the values)", sinks.hash}});
}

/// The execution space instance the sinks' loops run on: the host's, or the context's stream.
template <class Space>
typename Space::execution_space sinks_exec(rfa_context_s& c) {
  if constexpr (std::is_same<Space, Kokkos::HostSpace>::value) {
    (void)c;
    return typename Space::execution_space();
  } else {
#if RFA_ENGINE_CUDA
    return c.sinks_exec.on(c.engine->cuda_stream());
#endif
  }
}

/// Writes the sinks' gradient (float64 sums) to the caller's [heads] fp32 buffer in the
/// context's memory.
void write_sink_gradient(const rfa_context_s& c, const std::vector<double>& sums, float* dsinks) {
  const std::vector<float> values(sums.begin(), sums.end());
  if (c.options.device == RFA_DEVICE_CUDA) {
#if RFA_ENGINE_CUDA
    copy_on_stream(c, dsinks, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice,
                   "writing the sinks' gradient to the device");
#endif
  } else {
    std::copy(values.begin(), values.end(), dsinks);
  }
}

/// Marks where a CUDA context's call ends on its stream, however the call ends, so that a
/// stream the caller switches to next waits for it (device/stream_order.hpp).
class CallOnStream {
 public:
  explicit CallOnStream(rfa_context_s& c) : c_(c) {}
  ~CallOnStream() { mark_end(c_); }
  CallOnStream(const CallOnStream&) = delete;
  CallOnStream& operator=(const CallOnStream&) = delete;

 private:
  static void mark_end(rfa_context_s& c) noexcept {
#if RFA_ENGINE_CUDA
    // Not in a fork of the creating process, whose calls were refused before touching the device.
    if (c.options.device == RFA_DEVICE_CUDA && !forked_since_creation(c))
      c.stream_order.call_queued_on(c.engine->cuda_stream());
#else
    (void)c;  // host calls end when they return
#endif
  }
  rfa_context_s& c_;
};

rfa_result_t forward(rfa_context_s& c, const void* q, const void* k, const void* v, CallSinks sinks, void* out,
                     float* lse) {
  const CallOnStream call(c);
  const LocalSizes s = local_sizes(c);
  const rfa_options_t& o = c.options;
  auto checks = [&] {
    const std::int64_t e = s.element, f = std::int64_t(sizeof(float));
    std::vector<Buffer> inputs = {tensor_buffer(c, "q", q, s.q, e), tensor_buffer(c, "k", k, s.k, e),
                                  tensor_buffer(c, "v", v, s.v, e)};
    if (sinks.given) inputs.push_back({"sinks", sinks.values, o.heads * f, f});
    check_call_buffers(c, inputs, {tensor_buffer(c, "out", out, s.out, e), tensor_buffer(c, "lse", lse, s.lse, f)});
    read_sinks(c, sinks);
  };
  run_collective_call(c, CollectiveCall::forward, checks, [&] {
    agree_on_sinks(c, sinks);
    dispatch_place(c, [&](auto tag, auto space) {
      using T = decltype(tag);
      using S = decltype(space);
      const PositionMap rows = c.engine->local_positions();
      if (checks_values(c)) {
        settle_before_scan<S>(c);
        engine::report_nonfinite_everywhere(
            *c.comm, rows,
            {scan_bshd<T, S>("q", q, c, o.heads, o.head_dim), scan_bshd<T, S>("k", k, c, o.kv_heads, o.head_dim),
             scan_bshd<T, S>("v", v, c, o.kv_heads, value_head_dim_of(o))},
            "input", kInputsUntouched);
      }
      const engine::ForwardTensors<T, S> tensors{
          in4<T, S>(q, c, o.heads, o.head_dim), in4<T, S>(k, c, o.kv_heads, o.head_dim),
          in4<T, S>(v, c, o.kv_heads, value_head_dim_of(o)), out4<T, S>(out, c, o.heads, value_head_dim_of(o)),
          lse3<float, S>(lse, c)};
      c.engine->forward(tensors);
      // The sink joins each finished row once (engine/attention_sinks.hpp).
      if (sinks.given) engine::apply_sinks<T, S>(sinks_exec<S>(c), sinks.values, tensors.out, tensors.lse);
      if (checks_values(c)) {
        settle_before_scan<S>(c);
        engine::report_nonfinite_everywhere(
            *c.comm, rows, {scan_bshd<T, S>("out", out, c, o.heads, value_head_dim_of(o)), scan_lse<S>(lse, c)},
            "output", kOutputsWritten);
      }
    });
  });
  return RFA_SUCCESS;
}

rfa_result_t backward(rfa_context_s& c, const void* q, const void* k, const void* v, const void* out, const void* dout,
                      const float* lse, CallSinks sinks, void* dq, void* dk, void* dv, float* dsinks) {
  const CallOnStream call(c);
  const LocalSizes s = local_sizes(c);
  const rfa_options_t& o = c.options;
  auto checks = [&] {
    const std::int64_t e = s.element, f = std::int64_t(sizeof(float));
    std::vector<Buffer> inputs = {tensor_buffer(c, "q", q, s.q, e),         tensor_buffer(c, "k", k, s.k, e),
                                  tensor_buffer(c, "v", v, s.v, e),         tensor_buffer(c, "out", out, s.out, e),
                                  tensor_buffer(c, "dout", dout, s.out, e), tensor_buffer(c, "lse", lse, s.lse, f)},
                        outputs = {tensor_buffer(c, "dq", dq, s.q, e), tensor_buffer(c, "dk", dk, s.k, e),
                                   tensor_buffer(c, "dv", dv, s.v, e)};
    if (sinks.given) {
      inputs.push_back({"sinks", sinks.values, o.heads * f, f});
      outputs.push_back({"dsinks", dsinks, o.heads * f, f});
    }
    check_call_buffers(c, inputs, outputs);
    read_sinks(c, sinks);
  };
  run_collective_call(c, CollectiveCall::backward, checks, [&] {
    agree_on_sinks(c, sinks);
    dispatch_place(c, [&](auto tag, auto space) {
      using T = decltype(tag);
      using S = decltype(space);
      const PositionMap rows = c.engine->local_positions();
      if (checks_values(c)) {
        settle_before_scan<S>(c);
        engine::report_nonfinite_everywhere(
            *c.comm, rows,
            {scan_bshd<T, S>("q", q, c, o.heads, o.head_dim), scan_bshd<T, S>("k", k, c, o.kv_heads, o.head_dim),
             scan_bshd<T, S>("v", v, c, o.kv_heads, value_head_dim_of(o)),
             scan_bshd<T, S>("out", out, c, o.heads, value_head_dim_of(o)),
             scan_bshd<T, S>("dout", dout, c, o.heads, value_head_dim_of(o)), scan_lse<S>(lse, c)},
            "input", kInputsUntouched);
      }
      const engine::StorageGradients<T, S> tensors{in4<T, S>(q, c, o.heads, o.head_dim),
                                                   in4<T, S>(k, c, o.kv_heads, o.head_dim),
                                                   in4<T, S>(v, c, o.kv_heads, value_head_dim_of(o)),
                                                   in4<T, S>(out, c, o.heads, value_head_dim_of(o)),
                                                   in4<T, S>(dout, c, o.heads, value_head_dim_of(o)),
                                                   lse3<const float, S>(lse, c),
                                                   out4<T, S>(dq, c, o.heads, o.head_dim),
                                                   out4<T, S>(dk, c, o.kv_heads, o.head_dim),
                                                   out4<T, S>(dv, c, o.kv_heads, value_head_dim_of(o))};
      // The sinks' gradient from this rank's rows, before the strategy runs (its inputs only).
      std::vector<double> sink_part;
      if (sinks.given) {
        std::function<void()> wait;  // a device's stream under the deadline; the host's fenced
        if constexpr (!std::is_same<S, Kokkos::HostSpace>::value)
          wait = [&] { wait_for_context_stream(c, "the sinks' gradient"); };
        sink_part = engine::sink_gradient_part<T, S>(sinks_exec<S>(c), sinks.values, tensors.out, tensors.dout,
                                                     tensors.lse, wait);
      }
      c.engine->backward(tensors);
      if (sinks.given) write_sink_gradient(c, comm::sum_in_rank_order(*c.comm, sink_part), dsinks);
      if (checks_values(c)) {
        settle_before_scan<S>(c);
        engine::report_nonfinite_everywhere(
            *c.comm, rows,
            {scan_bshd<T, S>("dq", dq, c, o.heads, o.head_dim), scan_bshd<T, S>("dk", dk, c, o.kv_heads, o.head_dim),
             scan_bshd<T, S>("dv", dv, c, o.kv_heads, value_head_dim_of(o))},
            "output", kOutputsWritten);
      }
    });
  });
  return RFA_SUCCESS;
}

}  // namespace
}  // namespace capi
}  // namespace rfa

extern "C" {

RFA_API rfa_result_t rfa_forward(rfa_context_t context, const void* q, const void* k, const void* v, void* out,
                                 float* lse) {
  return rfa::capi::guard(__func__,
                          [&] { return rfa::capi::forward(rfa::capi::context_ref(context), q, k, v, {}, out, lse); });
}

RFA_API rfa_result_t rfa_forward_with_sinks(rfa_context_t context, const void* q, const void* k, const void* v,
                                            const float* sinks, void* out, float* lse) {
  return rfa::capi::guard(__func__, [&] {
    return rfa::capi::forward(rfa::capi::context_ref(context), q, k, v, {true, sinks, 0}, out, lse);
  });
}

RFA_API rfa_result_t rfa_backward(rfa_context_t context, const void* q, const void* k, const void* v, const void* out,
                                  const void* dout, const float* lse, void* dq, void* dk, void* dv) {
  return rfa::capi::guard(__func__, [&] {
    return rfa::capi::backward(rfa::capi::context_ref(context), q, k, v, out, dout, lse, {}, dq, dk, dv, nullptr);
  });
}

RFA_API rfa_result_t rfa_backward_with_sinks(rfa_context_t context, const void* q, const void* k, const void* v,
                                             const void* out, const void* dout, const float* lse, const float* sinks,
                                             void* dq, void* dk, void* dv, float* dsinks) {
  return rfa::capi::guard(__func__, [&] {
    return rfa::capi::backward(rfa::capi::context_ref(context), q, k, v, out, dout, lse, {true, sinks, 0}, dq, dk, dv,
                               dsinks);
  });
}

}  // extern "C"
