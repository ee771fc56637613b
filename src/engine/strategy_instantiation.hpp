// SPDX-License-Identifier: BSD-3-Clause
// Explicit instantiation of a strategy engine's forward and backward (and, in CUDA builds, its
// device passes) for the three storage dtypes, in the engine's .cpp (the templates are defined
// there, not in the header).
#pragma once

#include "core/dtype.hpp"
#include "engine/engine_backends.hpp"

#define RFA_INSTANTIATE_STRATEGY_PASSES_FOR(Engine, T)                                                                \
  template void Engine::forward<T>(Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<T>, Tensor3<float>); \
  template void Engine::backward<T>(Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,           \
                                    Tensor4<const T>, Tensor3<const float>, Tensor4<T>, Tensor4<T>, Tensor4<T>);

#define RFA_INSTANTIATE_STRATEGY_PASSES(Engine)            \
  RFA_INSTANTIATE_STRATEGY_PASSES_FOR(Engine, float)       \
  RFA_INSTANTIATE_STRATEGY_PASSES_FOR(Engine, rfa::bf16_t) \
  RFA_INSTANTIATE_STRATEGY_PASSES_FOR(Engine, rfa::fp16_t)

#if RFA_ENGINE_CUDA
#define RFA_INSTANTIATE_DEVICE_PASSES_FOR(Engine, T)                                                                   \
  template void Engine::forward_device<T>(DeviceTensor4<const T>, DeviceTensor4<const T>, DeviceTensor4<const T>,      \
                                          DeviceTensor4<T>, DeviceTensor3<float>);                                     \
  template void Engine::backward_device<T>(DeviceTensor4<const T>, DeviceTensor4<const T>, DeviceTensor4<const T>,     \
                                           DeviceTensor4<const T>, DeviceTensor4<const T>, DeviceTensor3<const float>, \
                                           DeviceTensor4<T>, DeviceTensor4<T>, DeviceTensor4<T>);
#define RFA_INSTANTIATE_DEVICE_PASSES(Engine)            \
  RFA_INSTANTIATE_DEVICE_PASSES_FOR(Engine, float)       \
  RFA_INSTANTIATE_DEVICE_PASSES_FOR(Engine, rfa::bf16_t) \
  RFA_INSTANTIATE_DEVICE_PASSES_FOR(Engine, rfa::fp16_t)
#else
#define RFA_INSTANTIATE_DEVICE_PASSES(Engine)
#endif
