// SPDX-License-Identifier: BSD-3-Clause
// What each place the engine runs in accepts, checked when a ring is configured (before any
// device is touched or any byte moves), so an unsupported problem fails at context creation
// with RFA_ERROR_UNSUPPORTED instead of at the first kernel launch.
#pragma once

#include <cstdint>

#include "engine/engine_backends.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace engine {

/// Throws RFA_ERROR_UNSUPPORTED, saying why, unless the engine of this build can run a ring
/// of these head dims (Q and K's, V's), dtype, layout, softmax scale (0: 1/sqrt(head_dim)) and
/// soft cap (0: none) on `device`. CUDA: kernels_cuda takes one head dim, 32, 64, 128, 192 or
/// 256, or 192 with 128 for V, bf16/fp16 storage, position maps of at most two segments (not the
/// balanced layout) and a soft cap whose ratio to the scale and its inverse are within fp32's
/// normal range (it holds both), and the build must have a CUDA-enabled Kokkos.
void require_device_support(Device device, std::int64_t head_dim, std::int64_t value_dim, rfa_dtype_t dtype,
                            rfa_layout_t layout, float softmax_scale, float softcap);

/// "host" / "cuda".
const char* device_name(Device device);

}  // namespace engine
}  // namespace rfa
