// SPDX-License-Identifier: BSD-3-Clause
// What every strategy's forward and backward pass takes: this rank's tensors, one bundle per
// pass, in one memory space (host memory, or a CUDA device's in CUDA builds), and the
// benchmark's switch that leaves communication or compute out of a ring pass.
//
// AnyForwardTensors and AnyBackwardTensors are the one table of what a pass may run on: every
// storage dtype in every memory space of the build. A strategy takes the bundle whole and
// dispatches once on its memory space (std::visit), so host and CUDA calls take one path from
// the C API to the block compute.
#pragma once

#include <type_traits>
#include <variant>

#include "core/dtype.hpp"
#include "engine/engine_backends.hpp"
#include "engine/workspace.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace engine {

using kernels::Tensor3;
using kernels::Tensor4;
#if RFA_ENGINE_CUDA
/// Tensors in the CUDA device's memory (Kokkos::CudaSpace), same layouts as on the host.
template <class T>
using DeviceTensor4 = SpaceTensor4<T, Kokkos::CudaSpace>;
template <class T>
using DeviceTensor3 = SpaceTensor3<T, Kokkos::CudaSpace>;
#endif

/// A forward's tensors in memory `Space`. q, out: [b][local_seq][heads][d or dv];
/// k, v: [b][local_seq][kv_heads][d or dv]; lse: [b][heads][local_seq].
template <class T, class Space>
struct ForwardTensors {
  using value_type = T;
  using memory_space = Space;
  SpaceTensor4<const T, Space> q, k, v;
  SpaceTensor4<T, Space> out;
  SpaceTensor3<float, Space> lse;
};

/// A backward's tensors in memory `Space`: the forward's inputs and results, dO, and the
/// gradients, in `TGrad` (the storage dtype, or fp32 for a caller that sums them further).
template <class T, class Space, class TGrad = T>
struct BackwardTensors {
  using value_type = T;
  using gradient_type = TGrad;
  using memory_space = Space;
  SpaceTensor4<const T, Space> q, k, v, out, dout;
  SpaceTensor3<const float, Space> lse;
  SpaceTensor4<TGrad, Space> dq, dk, dv;
};
/// Gradients in the storage dtype, and in fp32 (the hybrid's inner ring).
template <class T, class Space>
using StorageGradients = BackwardTensors<T, Space, T>;
template <class T, class Space>
using Fp32Gradients = BackwardTensors<T, Space, float>;

/// `Bundle` for every storage dtype in every memory space of this build: the one table.
template <template <class, class> class Bundle>
using EveryDtypeAndSpace =
    std::variant<Bundle<float, Kokkos::HostSpace>, Bundle<bf16_t, Kokkos::HostSpace>, Bundle<fp16_t, Kokkos::HostSpace>
#if RFA_ENGINE_CUDA
                 ,
                 Bundle<float, Kokkos::CudaSpace>, Bundle<bf16_t, Kokkos::CudaSpace>, Bundle<fp16_t, Kokkos::CudaSpace>
#endif
                 >;
using AnyForwardTensors = EveryDtypeAndSpace<ForwardTensors>;
using AnyBackwardTensors = EveryDtypeAndSpace<StorageGradients>;
using AnyFp32GradientTensors = EveryDtypeAndSpace<Fp32Gradients>;

/// Shorthands for callers that hold host tensors (tests, benchmarks).
template <class T>
using HostForward = ForwardTensors<T, Kokkos::HostSpace>;
template <class T>
using HostBackward = BackwardTensors<T, Kokkos::HostSpace>;

/// Whether `Space` is host memory (the host block compute and execution space).
template <class Space>
constexpr bool kHostMemory = std::is_same<Space, Kokkos::HostSpace>::value;

/// Benchmark switches: the same schedule with one half left out, to measure overlap.
enum class RingMode {
  full,          ///< communicate and compute (the real thing)
  compute_only,  ///< compute every step on the local block, send nothing
  comm_only      ///< run every exchange, compute nothing (results are garbage)
};

}  // namespace engine
}  // namespace rfa
