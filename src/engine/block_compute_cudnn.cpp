// SPDX-License-Identifier: BSD-3-Clause
// CudnnBlockCompute: ring blocks on cuDNN where it expresses them, on kernels_cuda elsewhere.
#include "engine/block_compute_cudnn.hpp"

#if RFA_ENGINE_CUDNN

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace engine {
namespace {

void check(rfa_cuda_status status, const char* what) { check_cuda_kernels(status, what); }

constexpr std::size_t kScratchAlign = 256;

}  // namespace

bool cudnn_pass_writes_directly(const kernels::AttentionParams& p, rfa_dtype_t dtype, const DeviceMaskPointers& mask) {
  const rfa_cuda_attention_shape shape = cuda_attention_shape(p, cuda_dtype(dtype), mask);
  return rfa_cudnn_writes_in_place(&shape, p.doc_bounds) != 0 || rfa_cudnn_expresses(&shape, p.doc_bounds) == 0;
}

CudnnState::CudnnState() { check(rfa_cudnn_create(&context_), "rfa_cudnn_create"); }

CudnnState::~CudnnState() { rfa_cudnn_destroy(context_); }

std::size_t CudnnBlockCompute::step_of(const kernels::AttentionParams& p) const {
  for (std::size_t i = 0; i < steps_.size(); ++i)
    if (same_positions(steps_[i].q_pos, p.q_pos) && same_positions(steps_[i].k_pos, p.k_pos)) return i;
  return steps_.size();
}

bool CudnnBlockCompute::on_cudnn(const kernels::AttentionParams& p) const {
  const std::size_t i = step_of(p);
  return i < on_cudnn_.size() && on_cudnn_[i];  // a block the pass was not prepared for: rfa's kernels take it
}

bool CudnnBlockCompute::holds_key_gradients(const kernels::AttentionParams& p) const {
  const std::size_t i = step_of(p);
  return i < holds_.size() && holds_[i];
}

int CudnnBlockCompute::cudnn_steps() const { return int(std::count(on_cudnn_.begin(), on_cudnn_.end(), true)); }

void* CudnnBlockCompute::scratch() const {
  auto address = reinterpret_cast<std::uintptr_t>(scratch_.data());
  address = (address + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
  return reinterpret_cast<void*>(address);
}

void CudnnBlockCompute::prepare(bool backward, rfa_dtype_t dtype, Workspace<memory_space>& ws) {
  const bool in_place = backward ? in_place_backward_ : in_place_forward_;
  on_cudnn_.assign(steps_.size(), false);
  holds_.assign(steps_.size(), false);
  visible_steps_ = 0;
  std::size_t most = 0;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const kernels::AttentionParams& p = steps_[i];
    // A block the mask hides whole has nothing for cuDNN to compute (its plan has no bands):
    // left to rfa's kernels (which skip it, or write out = 0 and lse = -inf in a pass that
    // writes its output directly, and zero gradients through their fp32 dQ in one that stores
    // them), it is not counted as a cuDNN step.
    if (kernels::classify_blocks_every_entry(p, p.q_pos, p.k_pos) == kernels::TileVisibility::hidden) {
      if (backward && in_place) most = std::max(most, rfa_.store_workspace_bytes(p, dtype));
      continue;
    }
    ++visible_steps_;
    rfa_cuda_status status = RFA_CUDA_ERROR_UNSUPPORTED;
    std::size_t bytes = 0;
    bool holds = false;
    // A deterministic backward runs on rfa's kernels: cuDNN's deterministic backward on Hopper
    // takes a workspace quadratic in the block's rows (tens of GiB at 32k rows), rfa's none.
    if (!(backward && p.deterministic)) {
      const rfa_cuda_attention_shape shape = rfa_.shape(p, dtype);  // fp32: refused by the plan, rfa's kernels
      if (!backward) {
        rfa_cuda_forward_params f;
        rfa_cuda_forward_params_init(&f);
        f.shape = shape;
        f.out_dtype = in_place ? shape.dtype : RFA_CUDA_FP32;
        f.merge = in_place ? 0 : 1;
        status = rfa_cudnn_plan_forward(cudnn_->get(), &f, p.doc_bounds, &bytes);
      } else {
        rfa_cuda_backward_params b;
        rfa_cuda_backward_params_init(&b);
        b.shape = shape;
        b.grad_mode = in_place ? RFA_CUDA_GRAD_STORE : RFA_CUDA_GRAD_ACCUMULATE_FP32;
        status = rfa_cudnn_plan_backward(cudnn_->get(), &b, rfa_cuda_strides{}, p.doc_bounds, &bytes);
        holds = !in_place && rfa_cudnn_holds_key_gradients(&shape, p.doc_bounds) != 0;
      }
    }
    // cuDNN declines a block it cannot express or plan (UNSUPPORTED): rfa's kernels take it,
    // in place with their own scratch (an fp32 dQ). Anything else is a failure of this rank,
    // raised at the pass's agreement below.
    if (status == RFA_CUDA_SUCCESS) {
      on_cudnn_[i] = true;
      holds_[i] = holds;
      most = std::max(most, bytes);
    } else if (status != RFA_CUDA_ERROR_UNSUPPORTED) {
      ws.adopt(0, [&] { check(status, backward ? "rfa_cudnn_plan_backward" : "rfa_cudnn_plan_forward"); });
    } else if (backward && in_place) {
      most = std::max(most, rfa_.store_workspace_bytes(p, dtype));
    }
  }
  scratch_bytes_ = most;
  scratch_ = most > 0 ? ws.buffer<unsigned char>("rfa::cudnn_scratch", std::int64_t(most + kScratchAlign))
                      : Kokkos::View<unsigned char*, memory_space>();
}

template <class T>
void CudnnBlockCompute::forward_on_cudnn(const kernels::AttentionParams& p, const T* q, const T* k, const T* v,
                                         void* out, float* lse, bool merge) {
  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape = rfa_.shape<T>(p);
  f.q = q;
  f.k = k;
  f.v = v;
  f.out = out;
  f.out_dtype = merge ? RFA_CUDA_FP32 : f.shape.dtype;
  f.lse = lse;
  f.merge = merge ? 1 : 0;
  check(rfa_cudnn_forward(cudnn_->get(), &f, p.doc_bounds, scratch(), scratch_bytes_, rfa_.stream()),
        "rfa_cudnn_forward");
}

template <class T>
void CudnnBlockCompute::forward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                Tensor4<const T> v, Tensor4<float> out, Tensor3<float> lse,
                                const kernels::ProgressHook& progress) {
  if (!on_cudnn(p)) {
    rfa_.forward<T>(p, q, k, v, out, lse, progress);
    return;
  }
  forward_merged<T>(p, q, k, v, out, lse, Tensor4<float>(), Tensor3<float>(), progress);
}

template <class T>
void CudnnBlockCompute::forward_merged(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                       Tensor4<const T> v, Tensor4<float> out, Tensor3<float> lse,
                                       Tensor4<float> block_out, Tensor3<float> block_lse,
                                       const kernels::ProgressHook& progress) {
  if (!on_cudnn(p)) {
    rfa_.forward_merged<T>(p, q, k, v, out, lse, block_out, block_lse, progress);
    return;
  }
  forward_on_cudnn<T>(p, q.data(), k.data(), v.data(), out.data(), lse.data(), true);
}

template <class T>
void CudnnBlockCompute::forward_final(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                      Tensor4<const T> v, Tensor4<T> out, Tensor3<float> lse,
                                      const kernels::ProgressHook& progress) {
  if (!on_cudnn(p)) {
    rfa_.forward_final<T>(p, q, k, v, out, lse, progress);
    return;
  }
  forward_on_cudnn<T>(p, q.data(), k.data(), v.data(), out.data(), lse.data(), false);
}

template <class T>
void CudnnBlockCompute::backward_on_cudnn(const kernels::AttentionParams& p, BlockInputs in, const T* out,
                                          rfa_cuda_grad_mode mode, void* dq, void* dk, void* dv) {
  const rfa_cuda_backward_params b = block_backward_params(rfa_.shape<T>(p), p.deterministic, in, mode, dq, dk, dv);
  check(rfa_cudnn_backward(cudnn_->get(), &b, out, rfa_cuda_strides{}, p.doc_bounds, scratch(), scratch_bytes_,
                           rfa_.stream()),
        "rfa_cudnn_backward");
}

template <class T>
void CudnnBlockCompute::backward_final(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                       Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                                       Tensor3<const float> lse, Tensor3<const float> d, Tensor4<T> dq, Tensor4<T> dk,
                                       Tensor4<T> dv, const kernels::ProgressHook&) {
  if (!on_cudnn(p)) {
    rfa_.backward_store<T>(p, q, k, v, dout, lse, d, dq, dk, dv, scratch());
    return;
  }
  backward_on_cudnn<T>(p, {q.data(), k.data(), v.data(), dout.data(), lse.data(), nullptr}, out.data(),
                       RFA_CUDA_GRAD_STORE, dq.data(), dk.data(), dv.data());
}

template <class T>
void CudnnBlockCompute::backward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                 Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                                 Tensor3<const float> lse, Tensor3<const float> d, Tensor4<float> dq, Tensor4<float> dk,
                                 Tensor4<float> dv, const kernels::ProgressHook& progress) {
  if (!on_cudnn(p)) {
    rfa_.backward<T>(p, q, k, v, out, dout, lse, d, dq, dk, dv, progress);
    return;
  }
  backward_on_cudnn<T>(p, {q.data(), k.data(), v.data(), dout.data(), lse.data(), nullptr}, out.data(),
                       RFA_CUDA_GRAD_ACCUMULATE_FP32, dq.data(), dk.data(), dv.data());
}

template <class T>
void CudnnBlockCompute::backward_storing_key_gradients(const kernels::AttentionParams& p, Tensor4<const T> q,
                                                       Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out,
                                                       Tensor4<const T> dout, Tensor3<const float> lse,
                                                       Tensor3<const float> d, Tensor4<float> dq, Tensor4<float> dk,
                                                       Tensor4<float> dv) {
  if (!on_cudnn(p)) {
    rfa_.backward_storing_key_gradients<T>(p, q, k, v, out, dout, lse, d, dq, dk, dv);
    return;
  }
  // cuDNN's gradients are accumulated into fp32 (several bands may add to the same rows).
  fill(dk, 0.0f);
  fill(dv, 0.0f);
  backward<T>(p, q, k, v, out, dout, lse, d, dq, dk, dv, kernels::ProgressHook());
}

template <class T>
void CudnnBlockCompute::backward_holding_key_gradients(const kernels::AttentionParams& p, Tensor4<const T> q,
                                                       Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out,
                                                       Tensor4<const T> dout, Tensor3<const float> lse,
                                                       Tensor4<float> dq) {
  held_ = block_backward_params(rfa_.shape<T>(p), p.deterministic,
                                {q.data(), k.data(), v.data(), dout.data(), lse.data(), nullptr},
                                RFA_CUDA_GRAD_ACCUMULATE_FP32, dq.data(), nullptr, nullptr);
  held_docs_ = p.doc_bounds;
  check(rfa_cudnn_backward_holding_key_gradients(cudnn_->get(), &held_, out.data(), rfa_cuda_strides{}, held_docs_,
                                                 scratch(), scratch_bytes_, rfa_.stream()),
        "rfa_cudnn_backward_holding_key_gradients");
}

void CudnnBlockCompute::add_held_key_gradients(Tensor4<float> dk, Tensor4<float> dv) {
  rfa_cuda_backward_params b = held_;
  b.dk = dk.data();
  b.dv = dv.data();
  check(rfa_cudnn_add_held_key_gradients(cudnn_->get(), &b, held_docs_, scratch(), rfa_.stream()),
        "rfa_cudnn_add_held_key_gradients");
}

#define RFA_INSTANTIATE_CUDNN_BLOCK_COMPUTE(T)                                                                       \
  template void CudnnBlockCompute::forward<T>(const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>,   \
                                              Tensor4<const T>, Tensor4<float>, Tensor3<float>,                      \
                                              const kernels::ProgressHook&);                                         \
  template void CudnnBlockCompute::forward_merged<T>(                                                                \
      const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<float>,         \
      Tensor3<float>, Tensor4<float>, Tensor3<float>, const kernels::ProgressHook&);                                 \
  template void CudnnBlockCompute::forward_final<T>(const kernels::AttentionParams&, Tensor4<const T>,               \
                                                    Tensor4<const T>, Tensor4<const T>, Tensor4<T>, Tensor3<float>,  \
                                                    const kernels::ProgressHook&);                                   \
  template void CudnnBlockCompute::backward_final<T>(                                                                \
      const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,       \
      Tensor4<const T>, Tensor3<const float>, Tensor3<const float>, Tensor4<T>, Tensor4<T>, Tensor4<T>,              \
      const kernels::ProgressHook&);                                                                                 \
  template void CudnnBlockCompute::backward<T>(const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>,  \
                                               Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,                 \
                                               Tensor3<const float>, Tensor3<const float>, Tensor4<float>,           \
                                               Tensor4<float>, Tensor4<float>, const kernels::ProgressHook&);        \
  template void CudnnBlockCompute::backward_storing_key_gradients<T>(                                                \
      const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,       \
      Tensor4<const T>, Tensor3<const float>, Tensor3<const float>, Tensor4<float>, Tensor4<float>, Tensor4<float>); \
  template void CudnnBlockCompute::backward_holding_key_gradients<T>(                                                \
      const kernels::AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,       \
      Tensor4<const T>, Tensor3<const float>, Tensor4<float>);

RFA_INSTANTIATE_CUDNN_BLOCK_COMPUTE(float)
RFA_INSTANTIATE_CUDNN_BLOCK_COMPUTE(bf16_t)
RFA_INSTANTIATE_CUDNN_BLOCK_COMPUTE(fp16_t)

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDNN
