// SPDX-License-Identifier: BSD-3-Clause
// The "compute one block" seam on the host (docs/architecture.md §8): the portable Kokkos
// kernels of src/kernels on host Views. The ring schedule (ring_forward.cpp,
// ring_backward.cpp) is written once over this interface; block_compute_cuda.hpp is the
// device twin with the same calls.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/workspace.hpp"
#include "kernels/contiguous_ops.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace engine {

class HostBlockCompute {
 public:
  using memory_space = Kokkos::HostSpace;
  template <class T>
  using Tensor4 = kernels::Tensor4<T>;
  template <class T>
  using Tensor3 = kernels::Tensor3<T>;

  /// `arena`: the engine's host memory kept between calls (EngineState), from which every
  /// buffer of the call is carved, the kernels' copies included; null: allocated per call.
  explicit HostBlockCompute(WorkspaceArena<memory_space>* arena = nullptr) : arena_(arena) {}

  /// The buffers of a call of kind `pass` (workspace_pass()).
  Workspace<memory_space> workspace(int pass) {
    return arena_ ? Workspace<memory_space>(arena_, pass) : Workspace<memory_space>();
  }

  /// Makes, before the ranks agree that the call may go on, the buffers the forward kernel keeps
  /// across a pass: enough for a call with params `largest`, carved from `ws` (counted in it, a
  /// refusal kept by it).
  void prepare_forward(const kernels::AttentionParams& largest, rfa_dtype_t dtype, Workspace<memory_space>& ws) {
    lend(kernels::forward_workspace_buffers(forward_workspace_, largest, dtype), ws);
  }

  /// The same for the backward kernel's buffers (its copies of the local Q and dO).
  void prepare_backward(const kernels::AttentionParams& largest, rfa_dtype_t dtype, Workspace<memory_space>& ws) {
    lend(kernels::backward_workspace_buffers(backward_workspace_, largest, dtype), ws);
  }

  /// prepare_forward() for a pass whose kernel calls have the params `calls` (blocks of
  /// different key lengths and masks): each of the kernel's buffers as large as the call that
  /// needs that buffer most, which may be a different call for each buffer.
  void prepare_forward(const std::vector<kernels::AttentionParams>& calls, rfa_dtype_t dtype,
                       Workspace<memory_space>& ws) {
    lend(largest(calls,
                 [&](const kernels::AttentionParams& p) {
                   return kernels::forward_workspace_buffers(forward_workspace_, p, dtype);
                 }),
         ws);
  }
  /// The same for the backward kernel.
  void prepare_backward(const std::vector<kernels::AttentionParams>& calls, rfa_dtype_t dtype,
                        Workspace<memory_space>& ws) {
    lend(largest(calls,
                 [&](const kernels::AttentionParams& p) {
                   return kernels::backward_workspace_buffers(backward_workspace_, p, dtype);
                 }),
         ws);
  }
  /// What prepare_forward() (backward: prepare_backward()) lends for `calls`, in bytes.
  static std::int64_t workspace_bytes(const std::vector<kernels::AttentionParams>& calls, rfa_dtype_t dtype,
                                      bool backward) {
    HostBlockCompute probe;
    std::int64_t bytes = 0;
    for (const kernels::WorkspaceBuffer& b : largest(calls, [&](const kernels::AttentionParams& p) {
           return backward ? kernels::backward_workspace_buffers(probe.backward_workspace_, p, dtype)
                           : kernels::forward_workspace_buffers(probe.forward_workspace_, p, dtype);
         }))
      bytes += b.bytes;
    return bytes;
  }

  /// One block's normalized fp32 partial out and its lse.
  template <class T>
  void forward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
               Tensor4<float> out, Tensor3<float> lse, const kernels::ProgressHook& progress) {
    kernels::flash_forward<T, float>(p, q, k, v, out, lse, progress, &forward_workspace_);
  }
  /// forward_final() writes the storage dtype: a pass of one step needs no fp32 accumulator.
  static constexpr bool kWritesStorageOutput = true;
  /// A pass of one step accumulates its gradients in fp32 and narrows them.
  static constexpr bool kWritesStorageGradients = false;
  /// The only block of a pass of one step: its normalized out straight into the caller's
  /// tensor, in the storage dtype, and its lse.
  template <class T>
  void forward_final(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                     Tensor4<T> out, Tensor3<float> lse, const kernels::ProgressHook& progress) {
    kernels::flash_forward<T, T>(p, q, k, v, out, lse, progress, &forward_workspace_);
  }
  /// The host kernels merge in a pass of their own, through the block_out/block_lse scratch.
  static constexpr bool kMergesInKernel = false;
  /// One more block merged into the running normalized out and lse (online softmax).
  template <class T>
  void forward_merged(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                      Tensor4<float> out, Tensor3<float> lse, Tensor4<float> block_out, Tensor3<float> block_lse,
                      const kernels::ProgressHook& progress) {
    kernels::flash_forward<T, float>(p, q, k, v, block_out, block_lse, progress, &forward_workspace_);
    kernels::merge_partial(out, lse, block_out, block_lse);
  }
  template <class T>
  void delta(const kernels::AttentionParams& p, Tensor4<const T> dout, Tensor4<const T> out, Tensor3<float> d) {
    kernels::compute_delta<T, T>(p, dout, out, d);
  }
  /// `out` (the final output) is for kernels that rebuild D themselves; these use `d`.
  template <class T>
  void backward(const kernels::AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                Tensor4<const T> /*out*/, Tensor4<const T> dout, Tensor3<const float> lse, Tensor3<const float> d,
                Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv, const kernels::ProgressHook& progress) {
    kernels::flash_backward_accumulate<T>(p, q, k, v, dout, lse, d, dq, dk, dv, progress, &backward_workspace_);
  }
  /// A step's dK/dV contribution goes into the fp32 buffer the ring gives backward(), which
  /// adds to it.
  static constexpr bool kHoldsKeyGradients = false;
  static constexpr bool kStoresKeyGradients = false;
  /// into += from, elementwise.
  void add(Tensor4<float> into, Tensor4<const float> from) {
    float* dst = into.data();
    const float* src = from.data();
    Kokkos::parallel_for("rfa::add_gradient",
                         Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                             0, std::int64_t(into.size())),
                         [=](std::int64_t i) { dst[i] += src[i]; });
    Kokkos::DefaultHostExecutionSpace().fence();
  }
  template <class View>
  void fill(const View& view, float value) {
    kernels::fill_elements(view, value);
  }
  void copy(Tensor4<float> to, Tensor4<const float> from) { kernels::copy_elements(to, from); }
  /// The fp32 accumulator rounded into the caller's 16-bit tensor.
  template <class T>
  void narrow(Tensor4<const float> from, Tensor4<T> to) {
    kernels::narrow<T>(from, to);
  }

 private:
  /// Every buffer `buffers_of` names for some call, by label, at the most bytes any call needs.
  template <class BuffersOf>
  static std::vector<kernels::WorkspaceBuffer> largest(const std::vector<kernels::AttentionParams>& calls,
                                                       BuffersOf&& buffers_of) {
    std::vector<kernels::WorkspaceBuffer> most;
    for (const kernels::AttentionParams& p : calls)
      for (const kernels::WorkspaceBuffer& b : buffers_of(p)) {
        auto same = std::find_if(most.begin(), most.end(),
                                 [&](const kernels::WorkspaceBuffer& m) { return std::string(m.label) == b.label; });
        if (same == most.end())
          most.push_back(b);
        else
          same->bytes = std::max(same->bytes, b.bytes);
      }
    return most;
  }
  /// Points the kernel's buffers at memory of `ws`.
  static void lend(const std::vector<kernels::WorkspaceBuffer>& buffers, Workspace<memory_space>& ws) {
    for (const kernels::WorkspaceBuffer& b : buffers) *b.view = ws.template buffer<unsigned char>(b.label, b.bytes);
  }

  WorkspaceArena<memory_space>* arena_;
  // The kernels' copies (K/V forward, Q/dO backward: fp32 head-major, or packed for the bf16
  // products), shared by the ring's steps (this object lives as long as the call) in memory
  // lent by the call's workspace;
  // flash_forward_workspace_bytes() and flash_backward_workspace_bytes() count them in the
  // engine's formulas.
  kernels::ForwardWorkspace forward_workspace_;
  kernels::BackwardWorkspace backward_workspace_;
};

}  // namespace engine
}  // namespace rfa
