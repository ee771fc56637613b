// SPDX-License-Identifier: BSD-3-Clause
// Explicit instantiation of a strategy engine's forward and backward for the three storage
// dtypes, in the engine's .cpp (the templates are defined there, not in the header).
#pragma once

#include "core/dtype.hpp"

#define RFA_INSTANTIATE_STRATEGY_PASSES_FOR(Engine, T)                                                                \
  template void Engine::forward<T>(Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<T>, Tensor3<float>); \
  template void Engine::backward<T>(Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,           \
                                    Tensor4<const T>, Tensor3<const float>, Tensor4<T>, Tensor4<T>, Tensor4<T>);

#define RFA_INSTANTIATE_STRATEGY_PASSES(Engine)            \
  RFA_INSTANTIATE_STRATEGY_PASSES_FOR(Engine, float)       \
  RFA_INSTANTIATE_STRATEGY_PASSES_FOR(Engine, rfa::bf16_t) \
  RFA_INSTANTIATE_STRATEGY_PASSES_FOR(Engine, rfa::fp16_t)
