// SPDX-License-Identifier: BSD-3-Clause
// The "compute one block" seam on cuDNN (docs/architecture.md §8): each ring step's block runs
// on cuDNN's fused attention (kernels_cuda's rfa_cudnn_*) when cuDNN can express its mask
// exactly, and on kernels_cuda's own kernels (CudaBlockCompute) otherwise; every other block
// operation (fills, adds, narrowing, D) is CudaBlockCompute's. Decided per step at
// prepare_forward()/prepare_backward(), which also builds cuDNN's execution plans (cached in the
// context's cuDNN state: built on the first call of a shape only) and reserves the scratch they
// need from the engine's workspace, so a refused allocation fails every rank together. Exists
// when Kokkos has its CUDA backend and the cuDNN block kernel is built.
#pragma once

#include "engine/engine_backends.hpp"
#include "rfa/rfa_config.h"

#if RFA_ENGINE_CUDA && RFA_HAVE_CUDNN
#define RFA_ENGINE_CUDNN 1
#else
#define RFA_ENGINE_CUDNN 0
#endif

#if RFA_ENGINE_CUDNN

#include <cstdint>
#include <vector>

#include "engine/block_compute_cuda.hpp"
#include "rfa_cuda/cudnn_attention.h"

namespace rfa {
namespace engine {

/// Whether a pass of the one block of `p` in `dtype` on a cuDNN context writes its 16-bit results
/// directly, without fp32 sums to merge or narrow: where cuDNN computes the block as one band over
/// the whole of it (in place, rfa_cudnn_writes_in_place), and where cuDNN does not compute it at
/// all (rfa_cudnn_expresses: rfa's kernels then do, writing directly). Not where cuDNN computes
/// it as several bands, whose results are merged in fp32. Host code, no plan built.
bool cudnn_pass_writes_directly(const kernels::AttentionParams& p, rfa_dtype_t dtype, const DeviceMaskPointers& mask);

/// A cuDNN handle and the execution plans built on it: one per context with cuDNN kernels.
class CudnnState {
 public:
  /// Throws RFA_ERROR_UNSUPPORTED with cuDNN's reason when cuDNN cannot be used here.
  CudnnState();
  ~CudnnState();
  CudnnState(const CudnnState&) = delete;
  CudnnState& operator=(const CudnnState&) = delete;
  rfa_cudnn_context* get() const { return context_; }

 private:
  rfa_cudnn_context* context_ = nullptr;
};

class CudnnBlockCompute {
 public:
  using memory_space = Kokkos::CudaSpace;
  template <class T>
  using Tensor4 = SpaceTensor4<T, memory_space>;
  template <class T>
  using Tensor3 = SpaceTensor3<T, memory_space>;

  /// `steps`: the params of every block the pass may compute (one per ring step), so that
  /// prepare_*() can plan them all before the ranks agree that the pass goes on.
  /// `kernel_path`: the implementation of rfa's kernels, for the steps cuDNN does not take.
  /// `in_place`: the forward is a pass of one block that forward_final() writes in the storage
  /// dtype (the engine's direct output, cudnn_pass_writes_directly), planned so.
  CudnnBlockCompute(cudaStream_t stream, WorkspaceCache<memory_space>& cache, DeviceMaskPointers mask,
                    CudnnState& cudnn, std::vector<kernels::AttentionParams> steps,
                    CudaPath kernel_path = CudaPath::sm80, bool in_place = false)
      : rfa_(stream, cache, mask, kernel_path), cudnn_(&cudnn), steps_(std::move(steps)), in_place_forward_(in_place) {}

  Workspace<memory_space> workspace(int pass) { return rfa_.workspace(pass); }
  /// Plans every step given at construction (the calls, one call's params or a pass's list,
  /// are those steps).
  template <class Calls>
  void prepare_forward(const Calls&, rfa_dtype_t dtype, Workspace<memory_space>& ws) {
    prepare(false, dtype, ws);
  }
  template <class Calls>
  void prepare_backward(const Calls&, rfa_dtype_t dtype, Workspace<memory_space>& ws) {
    prepare(true, dtype, ws);
  }

  /// forward_final() writes the storage dtype: a pass of one step needs no fp32 accumulator where
  /// cuDNN computes its block as one band over the whole of it or does not compute it (else the
  /// engine keeps one: the engine's direct_output()).
  static constexpr bool kWritesStorageOutput = true;
  /// cuDNN's path merges into out/lse itself, and so does kernels_cuda's forward: no scratch.
  static constexpr bool kMergesInKernel = true;
  /// backward_final() writes 16-bit gradients in place, where the engine asks
  /// (set_gradients_in_place(): a pass of one block cuDNN computes as one band over the whole,
  /// or does not compute, which rfa's kernels then store).
  static constexpr bool kWritesStorageGradients = true;
  /// Whether the next prepare_backward() plans its block's gradients in place; set before it.
  void set_gradients_in_place(bool in_place) { in_place_backward_ = in_place; }
  /// Whether the backward of p's block reads D = rowsum(dO * O) (rfa's kernels take it); cuDNN
  /// computes its own from out.
  bool reads_delta(const kernels::AttentionParams& p) const { return !on_cudnn(p); }
  /// The first block: the engine has set out = 0 and lse = -inf, so merging into them is the
  /// same as writing them.
  template <class T>
  void forward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
               Tensor4<float> out, Tensor3<float> lse, const kernels::ProgressHook& progress);
  template <class T>
  void forward_merged(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                      Tensor4<float> out, Tensor3<float> lse, Tensor4<float> block_out, Tensor3<float> block_lse,
                      const kernels::ProgressHook& progress);
  /// The one block of a pass, written in place: out in the storage dtype and lse (cuDNN where it
  /// took the block, rfa's kernels otherwise).
  template <class T>
  void forward_final(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                     Tensor4<T> out, Tensor3<float> lse, const kernels::ProgressHook& progress);
  template <class T>
  void delta(const kernels::AttentionParams& p, Tensor4<const T> dout, Tensor4<const T> out, Tensor3<float> d) {
    rfa_.delta<T>(p, dout, out, d);
  }
  template <class T>
  void backward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                Tensor4<const T> out, Tensor4<const T> dout, Tensor3<const float> lse, Tensor3<const float> d,
                Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv, const kernels::ProgressHook& progress);
  /// The one block of a pass, its gradients written over dq, dk and dv in the storage dtype
  /// (cuDNN where it took the block, rfa's kernels otherwise, which read D from `d`).
  template <class T>
  void backward_final(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                      Tensor4<const T> out, Tensor4<const T> dout, Tensor3<const float> lse, Tensor3<const float> d,
                      Tensor4<T> dq, Tensor4<T> dk, Tensor4<T> dv, const kernels::ProgressHook& progress);
  /// A step's dK and dV may wait in cuDNN's own output until the ring's partial of the block
  /// arrives, and then be added to it once (rfa_cudnn_backward_holding_key_gradients): no fp32
  /// contribution buffer to zero, add to and add again.
  static constexpr bool kHoldsKeyGradients = true;
  /// Whether backward_holding_key_gradients() takes p's block: cuDNN computes it, as one band, in
  /// the last prepared backward (not in place).
  bool holds_key_gradients(const kernels::AttentionParams& p) const;
  /// backward(), dQ added to `dq`, dK and dV held in the scratch until add_held_key_gradients();
  /// nothing else may compute in between. Only where holds_key_gradients(p).
  template <class T>
  void backward_holding_key_gradients(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                      Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                                      Tensor3<const float> lse, Tensor4<float> dq);
  /// backward_storing_key_gradients(): dK and dV written over `dk` and `dv` (rfa's kernels'
  /// grad mode for the blocks they compute; zeroed and then accumulated into on cuDNN).
  static constexpr bool kStoresKeyGradients = true;
  template <class T>
  void backward_storing_key_gradients(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k,
                                      Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                                      Tensor3<const float> lse, Tensor3<const float> d, Tensor4<float> dq,
                                      Tensor4<float> dk, Tensor4<float> dv);
  /// Adds the held dK and dV to dk and dv (fp32), after the backward on the stream.
  void add_held_key_gradients(Tensor4<float> dk, Tensor4<float> dv);
  void add(Tensor4<float> into, Tensor4<const float> from) { rfa_.add(into, from); }
  void fill(Tensor4<float> view, float value) { rfa_.fill(view, value); }
  void fill(Tensor3<float> view, float value) { rfa_.fill(view, value); }
  void copy(Tensor4<float> to, Tensor4<const float> from) { rfa_.copy(to, from); }
  template <class T>
  void narrow(Tensor4<const float> from, Tensor4<T> to) {
    rfa_.narrow<T>(from, to);
  }

  /// Steps of the last prepared pass that run on cuDNN, and the others its mask leaves visible,
  /// which run on rfa's kernels (a step the mask hides whole is neither).
  int cudnn_steps() const;
  int rfa_steps() const { return visible_steps_ - cudnn_steps(); }

 private:
  /// Plans every step (cuDNN where it expresses the block) and reserves the largest scratch.
  void prepare(bool backward, rfa_dtype_t dtype, Workspace<memory_space>& ws);
  /// The entry of steps_ that is p's block (by its position maps), steps_.size() if none.
  std::size_t step_of(const kernels::AttentionParams& p) const;
  /// Whether the block of `p` runs on cuDNN.
  bool on_cudnn(const kernels::AttentionParams& p) const;
  /// The scratch, aligned to 256 bytes.
  void* scratch() const;
  /// The forward of p's block on cuDNN: merged into the fp32 running `out` and `lse`, or (not
  /// `merge`) written over them, out in the storage dtype.
  template <class T>
  void forward_on_cudnn(const kernels::AttentionParams& p, const T* q, const T* k, const T* v, void* out, float* lse,
                        bool merge);
  /// The backward of p's block on cuDNN, its gradients in `mode` (accumulated in fp32, or stored
  /// in the storage dtype); cuDNN computes D itself from `out`.
  template <class T>
  void backward_on_cudnn(const kernels::AttentionParams& p, BlockInputs in, const T* out, rfa_cuda_grad_mode mode,
                         void* dq, void* dk, void* dv);

  CudaBlockCompute rfa_;
  CudnnState* cudnn_;
  std::vector<kernels::AttentionParams> steps_;
  bool in_place_forward_ = false;    // the forward's plans write the block in place
  bool in_place_backward_ = false;   // and the backward's (set_gradients_in_place)
  std::vector<bool> on_cudnn_;       // per entry of steps_
  std::vector<bool> holds_;          // per entry of steps_: holds_key_gradients
  rfa_cuda_backward_params held_{};  // the backward whose dK and dV are held (its block and dtype)
  const std::int64_t* held_docs_ = nullptr;
  int visible_steps_ = 0;  // entries of steps_ whose mask leaves some pair visible
  Kokkos::View<unsigned char*, memory_space> scratch_;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDNN
