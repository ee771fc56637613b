// SPDX-License-Identifier: BSD-3-Clause
// A strategy's passes in the memory space `Space`, behind the host tensors run_attention()
// (ring_case.hpp) hands it: each pass copies its inputs into Space, runs the strategy's pass
// for Space there, waits, and copies its outputs back. device_strategies_test.cpp runs the
// device passes through it (Kokkos::CudaSpace); the engine suite runs it with HostSpace, so
// that it compiles and runs in every build, not only where a CUDA-enabled Kokkos is found.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "core/positions.hpp"
#include "engine/attention_strategy.hpp"

namespace rfa {
namespace test {

template <class Space>
class PassesInSpace {
 public:
  explicit PassesInSpace(engine::AttentionStrategy& attn) : attn_(attn) {}
  PositionMap local_positions() const { return attn_.local_positions(); }
  std::int64_t local_seq() const { return attn_.local_seq(); }
  int ranks() const { return attn_.ranks(); }

  template <class U>
  void forward(const engine::HostForward<U>& t) {
    auto out = copy_like(t.out);
    auto lse = copy_like(t.lse);
    attn_.forward(engine::ForwardTensors<U, Space>{copy_of(t.q), copy_of(t.k), copy_of(t.v), out, lse});
    Kokkos::fence();
    Kokkos::deep_copy(t.out, out);
    Kokkos::deep_copy(t.lse, lse);
  }
  template <class U>
  void backward(const engine::HostBackward<U>& t) {
    auto dq = copy_like(t.dq), dk = copy_like(t.dk), dv = copy_like(t.dv);
    attn_.backward(engine::BackwardTensors<U, Space>{copy_of(t.q), copy_of(t.k), copy_of(t.v), copy_of(t.out),
                                                     copy_of(t.dout), copy_of(t.lse), dq, dk, dv});
    Kokkos::fence();
    Kokkos::deep_copy(t.dq, dq);
    Kokkos::deep_copy(t.dk, dk);
    Kokkos::deep_copy(t.dv, dv);
  }

 private:
  /// A View of the host view's shape in Space (never the host view itself, even in HostSpace).
  template <class View>
  static auto copy_like(const View& host) {
    using InSpace = Kokkos::View<typename View::non_const_data_type, Kokkos::LayoutRight, Space>;
    return InSpace("copy_in_space", host.layout());
  }
  template <class View>
  static auto copy_of(const View& host) {
    auto copy = copy_like(host);
    Kokkos::deep_copy(copy, host);
    return copy;
  }
  engine::AttentionStrategy& attn_;
};

}  // namespace test
}  // namespace rfa
