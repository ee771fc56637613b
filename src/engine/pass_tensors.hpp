// SPDX-License-Identifier: BSD-3-Clause
// What every strategy's forward and backward pass takes: this rank's tensors in host memory
// (kernels::Tensor4, Tensor3) or in a CUDA device's (DeviceTensor4, DeviceTensor3), and the
// benchmark's switch that leaves communication or compute out of a ring pass.
#pragma once

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

/// Benchmark switches: the same schedule with one half left out, to measure overlap.
enum class RingMode {
  full,          ///< communicate and compute (the real thing)
  compute_only,  ///< compute every step on the local block, send nothing
  comm_only      ///< run every exchange, compute nothing (results are garbage)
};

}  // namespace engine
}  // namespace rfa
