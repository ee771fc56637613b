// rfa_forward / rfa_backward: caller pointers -> unmanaged Kokkos views -> the ring engine.
#include <string>

#include "context.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "buffer_checks.hpp"
#include "firewall.hpp"

namespace rfa {
namespace capi {
namespace {

using engine::Tensor3;
using engine::Tensor4;

/// Byte sizes of this rank's tensors.
struct LocalSizes {
  std::int64_t q, kv, lse;
};

LocalSizes local_sizes(const rfa_context_s& c) {
  const rfa_options_t& o = c.options;
  const std::int64_t L = c.engine->local_seq(), elem = std::int64_t(dtype_size(o.dtype));
  return {o.batch * L * o.heads * o.head_dim * elem, o.batch * L * o.kv_heads * o.head_dim * elem,
          o.batch * o.heads * L * std::int64_t(sizeof(float))};
}

template <class T>
Tensor4<const T> in4(const void* p, const rfa_context_s& c, std::int64_t heads) {
  return Tensor4<const T>(static_cast<const T*>(p), c.options.batch, c.engine->local_seq(), heads, c.options.head_dim);
}
template <class T>
Tensor4<T> out4(void* p, const rfa_context_s& c, std::int64_t heads) {
  return Tensor4<T>(static_cast<T*>(p), c.options.batch, c.engine->local_seq(), heads, c.options.head_dim);
}

rfa_result_t forward(rfa_context_s& c, const void* q, const void* k, const void* v, void* out, float* lse) {
  const LocalSizes s = local_sizes(c);
  agree_on_arguments(c, [&] {
    check_buffers({{"q", q, s.q}, {"k", k, s.kv}, {"v", v, s.kv}}, {{"out", out, s.q}, {"lse", lse, s.lse}});
  });
  const rfa_options_t& o = c.options;
  dispatch_dtype(o.dtype, [&](auto tag) {
    using T = decltype(tag);
    c.engine->forward<T>(in4<T>(q, c, o.heads), in4<T>(k, c, o.kv_heads), in4<T>(v, c, o.kv_heads),
                         out4<T>(out, c, o.heads),
                         Tensor3<float>(lse, o.batch, o.heads, c.engine->local_seq()));
  });
  return RFA_SUCCESS;
}

rfa_result_t backward(rfa_context_s& c, const void* q, const void* k, const void* v, const void* out,
                      const void* dout, const float* lse, void* dq, void* dk, void* dv) {
  const LocalSizes s = local_sizes(c);
  agree_on_arguments(c, [&] {
    check_buffers({{"q", q, s.q}, {"k", k, s.kv}, {"v", v, s.kv}, {"out", out, s.q}, {"dout", dout, s.q},
                   {"lse", lse, s.lse}},
                  {{"dq", dq, s.q}, {"dk", dk, s.kv}, {"dv", dv, s.kv}});
  });
  const rfa_options_t& o = c.options;
  dispatch_dtype(o.dtype, [&](auto tag) {
    using T = decltype(tag);
    c.engine->backward<T>(in4<T>(q, c, o.heads), in4<T>(k, c, o.kv_heads), in4<T>(v, c, o.kv_heads),
                          in4<T>(out, c, o.heads), in4<T>(dout, c, o.heads),
                          Tensor3<const float>(lse, o.batch, o.heads, c.engine->local_seq()),
                          out4<T>(dq, c, o.heads), out4<T>(dk, c, o.kv_heads), out4<T>(dv, c, o.kv_heads));
  });
  return RFA_SUCCESS;
}

}  // namespace
}  // namespace capi
}  // namespace rfa

extern "C" {

RFA_API rfa_result_t rfa_forward(rfa_context_t context, const void* q, const void* k, const void* v, void* out,
                                 float* lse) {
  return rfa::capi::guard(__func__, [&] {
    return rfa::capi::forward(rfa::capi::context_ref(context), q, k, v, out, lse);
  });
}

RFA_API rfa_result_t rfa_backward(rfa_context_t context, const void* q, const void* k, const void* v,
                                  const void* out, const void* dout, const float* lse, void* dq, void* dk,
                                  void* dv) {
  return rfa::capi::guard(__func__, [&] {
    return rfa::capi::backward(rfa::capi::context_ref(context), q, k, v, out, dout, lse, dq, dk, dv);
  });
}

}  // extern "C"
