// SPDX-License-Identifier: BSD-3-Clause
#include "engine/device_support.hpp"

#include <cfloat>
#include <cmath>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace rfa {
namespace engine {

const char* device_name(Device device) { return device == Device::cuda ? "cuda" : "host"; }

void require_device_support(Device device, std::int64_t head_dim, std::int64_t value_dim, rfa_dtype_t dtype,
                            rfa_layout_t layout, float softmax_scale, float softcap) {
  if (device == Device::host) return;
  // The kernels' limits come first: they hold for every build, so a program learns them
  // (and the tests check them) even where no CUDA engine is built.
  // Where this build has no CUDA engine each of those refusals says so too: a shape the kernels
  // take would still not run.
  const char* const no_engine =
      engine_supports(device)
          ? ""
          : "; besides, this build of rfa cannot run on CUDA devices (its Kokkos has no CUDA backend)";
  const bool one_head_dim = value_dim == head_dim;
  if (one_head_dim && head_dim != 32 && head_dim != 64 && head_dim != 128 && head_dim != 192 && head_dim != 256) {
    fail(RFA_ERROR_UNSUPPORTED, "head_dim ", head_dim,
         " is not supported on CUDA devices: the CUDA kernels take head_dim 32, 64, 128, 192 or 256, and 192 with "
         "a value head dim of 128 (the host device takes every multiple of 8 up to 256)",
         no_engine);
  }
  if (!one_head_dim && !(head_dim == 192 && value_dim == 128)) {
    fail(RFA_ERROR_UNSUPPORTED, "a value head dim (", value_dim, ") beside head_dim ", head_dim,
         " is not supported on CUDA devices: the CUDA kernels take one head dim, 32, 64, 128, 192 or 256, for Q, K and "
         "V, "
         "or head_dim 192 with value head dim 128 (the host device takes any two multiples of 8 up to 256)",
         no_engine);
  }
  if (softcap > 0.0f) {
    const float scale = softmax_scale != 0.0f ? softmax_scale : float(1.0 / std::sqrt(double(head_dim)));
    const double ratio = double(softcap) / double(scale);
    if (!(ratio >= FLT_MIN && ratio <= 1.0 / FLT_MIN)) {
      fail(RFA_ERROR_UNSUPPORTED, "a soft cap of ", softcap, " with a softmax scale of ", scale,
           " is not supported on CUDA devices: the CUDA kernels hold softcap / scale (", ratio,
           ") and its inverse in fp32, which needs the ratio within ", FLT_MIN, " .. ", 1.0 / FLT_MIN,
           " (the host device takes it)", no_engine);
    }
  }
  if (dtype != RFA_DTYPE_BFLOAT16 && dtype != RFA_DTYPE_FLOAT16) {
    fail(RFA_ERROR_UNSUPPORTED, "dtype ", dtype_name(dtype),
         " is not supported on CUDA devices: the CUDA kernels store bf16 or fp16 (and accumulate in fp32)", no_engine);
  }
  if (layout == RFA_LAYOUT_BALANCED) {
    fail(RFA_ERROR_UNSUPPORTED,
         "the balanced layout is not supported on CUDA devices: the CUDA kernels take a rank's rows as one or "
         "two affine segments (the contiguous, zigzag and stripe layouts), the balanced layout gives up to eight",
         no_engine);
  }
  if (!engine_supports(device)) {
    fail(RFA_ERROR_UNSUPPORTED,
         "this build of rfa cannot run on CUDA devices: its Kokkos has no CUDA backend (rebuild rfa against a "
         "CUDA-enabled Kokkos, see docs/gpus.md, 'Building for GPUs')");
  }
}

}  // namespace engine
}  // namespace rfa
