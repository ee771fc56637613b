// SPDX-License-Identifier: BSD-3-Clause
// The "compute one block" seam on a CUDA device (docs/architecture.md §8): kernels_cuda on
// Views in Kokkos::CudaSpace, every launch on the context's stream, nothing copied to the
// host. Same calls as HostBlockCompute, so the ring schedule is shared. Exists only when
// Kokkos has its CUDA backend (engine_backends.hpp).
#pragma once

#include "engine/engine_backends.hpp"

#if RFA_ENGINE_CUDA

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/attention_config.hpp"
#include "engine/cuda_attention_shape.hpp"
#include "engine/device_mask_data.hpp"
#include "engine/workspace.hpp"
#include "kernels/flash_attention.hpp"
#include "rfa_cuda/flash.h"

namespace rfa {
namespace engine {

/// Throws the rfa error of a kernels_cuda status (UNSUPPORTED, CUDA, else INTERNAL) with its
/// message, naming `what`; returns on RFA_CUDA_SUCCESS.
void check_cuda_kernels(rfa_cuda_status status, const char* what);

/// A block's inputs to a backward, in device memory: q, k, v and dout in the storage dtype, the
/// final lse and D = rowsum(dO * O) (rfa's kernels read D; cuDNN computes its own: may be null).
struct BlockInputs {
  const void *q, *k, *v, *dout;
  const float *lse, *delta;
};

/// kernels_cuda's backward params of a block of `shape`: its inputs, and its gradients `dq`, `dk`,
/// `dv` in `mode` (fp32 accumulated, or stored in the storage dtype); path and workspace left at
/// their defaults.
rfa_cuda_backward_params block_backward_params(const rfa_cuda_attention_shape& shape, bool deterministic,
                                               BlockInputs in, rfa_cuda_grad_mode mode, void* dq, void* dk, void* dv);

class CudaBlockCompute {
 public:
  using memory_space = Kokkos::CudaSpace;
  template <class T>
  using Tensor4 = SpaceTensor4<T, memory_space>;
  template <class T>
  using Tensor3 = SpaceTensor3<T, memory_space>;

  /// Kernels go on `stream` (nullptr: the legacy default stream); workspace from `cache`.
  /// `mask`: the context's document boundaries, per-sequence offsets and range index in device
  /// memory (the kernels read them there; AttentionParams holds the host copies the engine
  /// classifies with), nullptr where there are none.
  /// `kernel_path`: the implementation of the forward and backward kernels (AttentionConfig::cuda_path).
  CudaBlockCompute(cudaStream_t stream, WorkspaceCache<memory_space>& cache, DeviceMaskPointers mask = {},
                   CudaPath kernel_path = CudaPath::sm80)
      : stream_(stream), cache_(&cache), mask_(mask), path_(kernel_path) {}

  /// Device buffers are kept in the engine's cache between calls (see WorkspaceCache).
  /// The device buffers, kept in the cache by name whatever the call's kind.
  Workspace<memory_space> workspace(int /*pass*/) { return Workspace<memory_space>(cache_); }
  /// The CUDA kernels keep no buffers of their own (HostBlockCompute's twin: the calls are one
  /// call's params or a pass's list).
  template <class Calls>
  void prepare_forward(const Calls&, rfa_dtype_t, Workspace<memory_space>&) {}
  template <class Calls>
  void prepare_backward(const Calls&, rfa_dtype_t, Workspace<memory_space>&) {}

  /// The progress hook is not needed: launches return at once, so the engine's thread is
  /// back in the transport (wait/test) while the kernels run.
  template <class T>
  void forward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
               Tensor4<float> out, Tensor3<float> lse, const kernels::ProgressHook& progress);
  /// forward_final() writes the storage dtype: a pass of one step needs no fp32 accumulator.
  static constexpr bool kWritesStorageOutput = true;
  /// A pass of one step accumulates its gradients in fp32 and narrows them (backward_store()
  /// serves CudnnBlockCompute's in-place passes only).
  static constexpr bool kWritesStorageGradients = false;
  /// The only block of a pass of one step: its normalized out in the storage dtype, and lse.
  template <class T>
  void forward_final(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                     Tensor4<T> out, Tensor3<float> lse, const kernels::ProgressHook& progress);
  /// The forward kernel merges in its epilogue (rfa_cuda_forward_params.merge): no scratch.
  static constexpr bool kMergesInKernel = true;
  /// One more block merged into the running normalized out and lse; block_out/block_lse unused.
  template <class T>
  void forward_merged(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                      Tensor4<float> out, Tensor3<float> lse, Tensor4<float> block_out, Tensor3<float> block_lse,
                      const kernels::ProgressHook& progress);
  template <class T>
  void delta(const kernels::AttentionParams& p, Tensor4<const T> dout, Tensor4<const T> out, Tensor3<float> d);
  /// `out` is unused: these kernels take D (delta()) instead.
  template <class T>
  void backward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                Tensor4<const T> out, Tensor4<const T> dout, Tensor3<const float> lse, Tensor3<const float> d,
                Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv, const kernels::ProgressHook& progress);
  /// The block's gradients written over dq, dk and dv in the storage dtype (the kernels' grad
  /// mode store); `workspace`: store_workspace_bytes() bytes, 16-byte aligned.
  template <class T>
  void backward_store(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                      Tensor4<const T> dout, Tensor3<const float> lse, Tensor3<const float> d, Tensor4<T> dq,
                      Tensor4<T> dk, Tensor4<T> dv, void* workspace);
  /// backward_store()'s scratch for the block of `p` in `dtype` (an fp32 dQ, unless deterministic).
  std::size_t store_workspace_bytes(const kernels::AttentionParams& p, rfa_dtype_t dtype) const;
  /// A step's dK/dV contribution goes into the fp32 buffer the ring gives backward().
  static constexpr bool kHoldsKeyGradients = false;
  /// backward_storing_key_gradients() writes a step's dK/dV over its buffer (the kernels' grad
  /// mode RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32), which the ring then need not zero.
  static constexpr bool kStoresKeyGradients = true;
  /// backward(), dQ added to `dq`, dK and dV written over `dk` and `dv` (fp32).
  template <class T>
  void backward_storing_key_gradients(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                      Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                                      Tensor3<const float> lse, Tensor3<const float> d, Tensor4<float> dq,
                                      Tensor4<float> dk, Tensor4<float> dv);
  void add(Tensor4<float> into, Tensor4<const float> from);
  void fill(Tensor4<float> view, float value) { fill_raw(view.data(), view.size(), value); }
  void fill(Tensor3<float> view, float value) { fill_raw(view.data(), view.size(), value); }
  void copy(Tensor4<float> to, Tensor4<const float> from);
  template <class T>
  void narrow(Tensor4<const float> from, Tensor4<T> to);

  cudaStream_t stream() const { return stream_; }

  /// The kernels' problem: p's shape and mask, with the document boundaries on the device
  /// (cuda_attention_shape).
  template <class T>
  rfa_cuda_attention_shape shape(const kernels::AttentionParams& p) const;
  /// The same in the storage dtype `dtype`.
  rfa_cuda_attention_shape shape(const kernels::AttentionParams& p, rfa_dtype_t dtype) const {
    return cuda_attention_shape(p, cuda_dtype(dtype), mask_);
  }

 private:
  void fill_raw(float* data, std::size_t count, float value);
  /// The kernels' backward into fp32 gradients in `mode` (accumulate, or dQ accumulated and dK,
  /// dV written over).
  template <class T>
  void backward_fp32(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                     Tensor4<const T> dout, Tensor3<const float> lse, Tensor3<const float> d, Tensor4<float> dq,
                     Tensor4<float> dk, Tensor4<float> dv, rfa_cuda_grad_mode mode);

  cudaStream_t stream_;
  WorkspaceCache<memory_space>* cache_;
  DeviceMaskPointers mask_;
  CudaPath path_;
};

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDA
