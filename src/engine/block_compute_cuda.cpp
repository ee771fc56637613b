// SPDX-License-Identifier: BSD-3-Clause
// CudaBlockCompute: the engine's block operations as kernels_cuda launches on one stream.
#include "engine/block_compute_cuda.hpp"

#if RFA_ENGINE_CUDA

#include <type_traits>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "rfa_cuda/flash.h"

namespace rfa {
namespace engine {

void check_cuda_kernels(rfa_cuda_status status, const char* what) {
  if (status == RFA_CUDA_SUCCESS) return;
  const rfa_result_t code = status == RFA_CUDA_ERROR_UNSUPPORTED ? RFA_ERROR_UNSUPPORTED
                            : status == RFA_CUDA_ERROR_CUDA      ? RFA_ERROR_CUDA
                                                                 : RFA_ERROR_INTERNAL;
  fail(code, what, " failed: ", rfa_cuda_last_error_message());
}

namespace {

void check(rfa_cuda_status status, const char* what) { check_cuda_kernels(status, what); }

template <class T>
rfa_cuda_dtype cuda_dtype() {
  if (std::is_same<T, bf16_t>::value) return RFA_CUDA_BF16;
  if (std::is_same<T, fp16_t>::value) return RFA_CUDA_FP16;
  return RFA_CUDA_FP32;
}

/// The kernels_cuda path of a block's pass (the forward, or the backward): the context's
/// (hopper_pass), except that a block the Hopper kernels do not take (rfa_cuda_sm90_takes: a
/// head dim other than 64 and 128 or a value head dim of its own, a soft cap, per-sequence
/// documents, a mask given as ranges) runs on the sm_80 kernels.
rfa_cuda_path block_path(CudaPath path, bool forward, const rfa_cuda_attention_shape& shape) {
  return hopper_pass(path, forward) && rfa_cuda_sm90_takes(&shape) ? RFA_CUDA_PATH_SM90 : RFA_CUDA_PATH_SM80;
}

/// `TOut` float: the ring partial, normalized, in fp32 (merged into out/lse when `merge`);
/// otherwise the normalized result in the storage dtype.
template <class T, class TOut>
void launch_forward(const rfa_cuda_attention_shape& shape, const T* q, const T* k, const T* v, TOut* out, float* lse,
                    bool merge, CudaPath path, cudaStream_t stream) {
  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape = shape;
  f.path = block_path(path, true, shape);
  f.q = q;
  f.k = k;
  f.v = v;
  f.out = out;
  f.out_dtype = cuda_dtype<TOut>();
  f.lse = lse;
  f.merge = merge ? 1 : 0;
  check(rfa_cuda_flash_forward(&f, stream), "rfa_cuda_flash_forward");
}

}  // namespace

template <class T>
rfa_cuda_attention_shape CudaBlockCompute::shape(const kernels::AttentionParams& p) const {
  return cuda_attention_shape(p, cuda_dtype<T>(), mask_);
}

template <class T>
void CudaBlockCompute::forward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                               Tensor4<const T> v, Tensor4<float> out, Tensor3<float> lse,
                               const kernels::ProgressHook&) {
  launch_forward<T, float>(shape<T>(p), q.data(), k.data(), v.data(), out.data(), lse.data(), false, path_, stream_);
}

template <class T>
void CudaBlockCompute::forward_final(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                     Tensor4<const T> v, Tensor4<T> out, Tensor3<float> lse,
                                     const kernels::ProgressHook&) {
  launch_forward<T, T>(shape<T>(p), q.data(), k.data(), v.data(), out.data(), lse.data(), false, path_, stream_);
}

template <class T>
void CudaBlockCompute::forward_merged(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                      Tensor4<const T> v, Tensor4<float> out, Tensor3<float> lse, Tensor4<float>,
                                      Tensor3<float>, const kernels::ProgressHook&) {
  launch_forward<T, float>(shape<T>(p), q.data(), k.data(), v.data(), out.data(), lse.data(), true, path_, stream_);
}

template <class T>
void CudaBlockCompute::delta(const kernels::AttentionParams& p, Tensor4<const T> dout, Tensor4<const T> out,
                             Tensor3<float> d) {
  rfa_cuda_delta_params g{};
  g.batch = p.batch;
  g.seq = p.seq_q;
  g.heads = p.heads;
  g.head_dim = p.dv();  // out and dout are value_head_dim wide
  g.out = out.data();
  g.out_dtype = cuda_dtype<T>();
  g.dout = dout.data();
  g.dout_dtype = cuda_dtype<T>();
  g.delta = d.data();
  check(rfa_cuda_attention_delta(&g, stream_), "rfa_cuda_attention_delta");
}

rfa_cuda_backward_params block_backward_params(const rfa_cuda_attention_shape& shape, bool deterministic,
                                               BlockInputs in, rfa_cuda_grad_mode mode, void* dq, void* dk, void* dv) {
  rfa_cuda_backward_params b;
  rfa_cuda_backward_params_init(&b);
  b.shape = shape;
  b.q = in.q;
  b.k = in.k;
  b.v = in.v;
  b.dout = in.dout;
  b.lse = in.lse;
  b.delta = in.delta;
  b.grad_mode = mode;
  b.dq = dq;
  b.dk = dk;
  b.dv = dv;
  b.deterministic = deterministic ? 1 : 0;
  return b;
}

template <class T>
void CudaBlockCompute::backward_fp32(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                     Tensor4<const T> v, Tensor4<const T> dout, Tensor3<const float> lse,
                                     Tensor3<const float> d, Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv,
                                     rfa_cuda_grad_mode mode) {
  rfa_cuda_backward_params b = block_backward_params(shape<T>(p), p.deterministic,
                                                     {q.data(), k.data(), v.data(), dout.data(), lse.data(), d.data()},
                                                     mode, dq.data(), dk.data(), dv.data());
  b.path = block_path(path_, false, b.shape);
  check(rfa_cuda_flash_backward(&b, stream_), "rfa_cuda_flash_backward");
}

template <class T>
void CudaBlockCompute::backward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                Tensor4<const T> v, Tensor4<const T>, Tensor4<const T> dout, Tensor3<const float> lse,
                                Tensor3<const float> d, Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv,
                                const kernels::ProgressHook&) {
  // The ring adds every block's share.
  backward_fp32<T>(p, q, k, v, dout, lse, d, dq, dk, dv, RFA_CUDA_GRAD_ACCUMULATE_FP32);
}

template <class T>
void CudaBlockCompute::backward_storing_key_gradients(const kernels::AttentionParams& p, Tensor4<const T> q,
                                                      Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T>,
                                                      Tensor4<const T> dout, Tensor3<const float> lse,
                                                      Tensor3<const float> d, Tensor4<float> dq, Tensor4<float> dk,
                                                      Tensor4<float> dv) {
  backward_fp32<T>(p, q, k, v, dout, lse, d, dq, dk, dv, RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32);
}

template <class T>
void CudaBlockCompute::backward_store(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                      Tensor4<const T> v, Tensor4<const T> dout, Tensor3<const float> lse,
                                      Tensor3<const float> d, Tensor4<T> dq, Tensor4<T> dk, Tensor4<T> dv,
                                      void* workspace) {
  rfa_cuda_backward_params b = block_backward_params(shape<T>(p), p.deterministic,
                                                     {q.data(), k.data(), v.data(), dout.data(), lse.data(), d.data()},
                                                     RFA_CUDA_GRAD_STORE, dq.data(), dk.data(), dv.data());
  b.workspace = workspace;
  b.path = block_path(path_, false, b.shape);
  check(rfa_cuda_flash_backward(&b, stream_), "rfa_cuda_flash_backward");
}

std::size_t CudaBlockCompute::store_workspace_bytes(const kernels::AttentionParams& p, rfa_dtype_t dtype) const {
  rfa_cuda_backward_params b;
  rfa_cuda_backward_params_init(&b);
  b.shape = shape(p, dtype);
  b.grad_mode = RFA_CUDA_GRAD_STORE;
  b.deterministic = p.deterministic ? 1 : 0;
  return rfa_cuda_backward_workspace_size(&b);
}

void CudaBlockCompute::add(Tensor4<float> into, Tensor4<const float> from) {
  check(rfa_cuda_add_fp32(into.data(), from.data(), into.size(), stream_), "rfa_cuda_add_fp32");
}

void CudaBlockCompute::fill_raw(float* data, std::size_t count, float value) {
  check(rfa_cuda_fill_fp32(data, value, count, stream_), "rfa_cuda_fill_fp32");
}

void CudaBlockCompute::copy(Tensor4<float> to, Tensor4<const float> from) {
  const cudaError_t e =
      cudaMemcpyAsync(to.data(), from.data(), to.size() * sizeof(float), cudaMemcpyDeviceToDevice, stream_);
  if (e != cudaSuccess) fail(RFA_ERROR_CUDA, "cudaMemcpyAsync (device to device) failed: ", cudaGetErrorString(e));
}

template <class T>
void CudaBlockCompute::narrow(Tensor4<const float> from, Tensor4<T> to) {
  rfa_cuda_convert_params c{};
  c.batch = std::int64_t(from.extent(0));
  c.seq = std::int64_t(from.extent(1));
  c.heads = std::int64_t(from.extent(2));
  c.head_dim = std::int64_t(from.extent(3));
  c.src = from.data();
  c.dst = to.data();
  c.dst_dtype = cuda_dtype<T>();
  check(rfa_cuda_convert_from_fp32(&c, stream_), "rfa_cuda_convert_from_fp32");
}

#define RFA_INSTANTIATE_CUDA_BLOCK_COMPUTE(T)                                                                        \
  template void CudaBlockCompute::forward<T>(const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>,    \
                                             Tensor4<const T>, Tensor4<float>, Tensor3<float>,                       \
                                             const kernels::ProgressHook&);                                          \
  template void CudaBlockCompute::forward_final<T>(const kernels::AttentionParams&, Tensor4<const T>,                \
                                                   Tensor4<const T>, Tensor4<const T>, Tensor4<T>, Tensor3<float>,   \
                                                   const kernels::ProgressHook&);                                    \
  template void CudaBlockCompute::forward_merged<T>(                                                                 \
      const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<float>,         \
      Tensor3<float>, Tensor4<float>, Tensor3<float>, const kernels::ProgressHook&);                                 \
  template void CudaBlockCompute::delta<T>(const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>,      \
                                           Tensor3<float>);                                                          \
  template void CudaBlockCompute::backward<T>(const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>,   \
                                              Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,                  \
                                              Tensor3<const float>, Tensor3<const float>, Tensor4<float>,            \
                                              Tensor4<float>, Tensor4<float>, const kernels::ProgressHook&);         \
  template void CudaBlockCompute::backward_storing_key_gradients<T>(                                                 \
      const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,       \
      Tensor4<const T>, Tensor3<const float>, Tensor3<const float>, Tensor4<float>, Tensor4<float>, Tensor4<float>); \
  template void CudaBlockCompute::backward_store<T>(                                                                 \
      const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,       \
      Tensor3<const float>, Tensor3<const float>, Tensor4<T>, Tensor4<T>, Tensor4<T>, void*);                        \
  template void CudaBlockCompute::narrow<T>(Tensor4<const float>, Tensor4<T>);                                       \
  template rfa_cuda_attention_shape CudaBlockCompute::shape<T>(const kernels::AttentionParams&) const;

RFA_INSTANTIATE_CUDA_BLOCK_COMPUTE(float)
RFA_INSTANTIATE_CUDA_BLOCK_COMPUTE(bf16_t)
RFA_INSTANTIATE_CUDA_BLOCK_COMPUTE(fp16_t)

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDA
