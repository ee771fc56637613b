// SPDX-License-Identifier: BSD-3-Clause
// The K/V blocks as they travel around the ring, shared by the forward and the backward:
// at each step the rank computes on the block it holds while that block is already on its way
// to the rank of the next step and the following one arrives, double-buffered. Steps no rank
// computes on (ring_steps_with_work()) are jumped over: the block goes straight to the rank
// that needs it next, in one exchange of as many hops.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/ring_attention.hpp"
#include "engine/workspace.hpp"

namespace rfa {
namespace engine {

/// `Space` is where the blocks live: the backend's memory space (docs/architecture.md §8).
template <class T, class Space = Kokkos::HostSpace>
class TravellingKV {
 public:
  using Block = SpaceTensor4<const T, Space>;

  /// k and v are this rank's own block (step 0), `local_seq` rows of the context `c`; the two
  /// receive buffers (none for a pass of one step) come from `ws`, sized by the context (the caller's k and v are
  /// checked against it only after the workspace is allocated). The blocks move between the pass's `steps` (ring
  /// distances, ascending, from 0), not after the last; `steps` must outlive this.
  TravellingKV(Workspace<Space>& ws, comm::Communicator& comm, const AttentionConfig& c, std::int64_t local_seq,
               Block k, Block v, bool communicate, const std::vector<int>& steps)
      : comm_(comm),
        k_(k),
        v_(v),
        communicate_(communicate),
        steps_(steps),
        k_bytes_(std::size_t(c.batch * local_seq * c.kv_heads * c.head_dim) * sizeof(T)),
        v_bytes_(std::size_t(c.batch * local_seq * c.kv_heads * c.dv()) * sizeof(T)) {
    // A pass of one step (one rank, or a window within the local block) moves nothing.
    if (steps.size() < 2) return;
    for (int i = 0; i < 2; ++i) {
      k_recv_[i] =
          ws.template tensor4<T>(i == 0 ? "rfa::k_recv0" : "rfa::k_recv1", c.batch, local_seq, c.kv_heads, c.head_dim);
      v_recv_[i] =
          ws.template tensor4<T>(i == 0 ? "rfa::v_recv0" : "rfa::v_recv1", c.batch, local_seq, c.kv_heads, c.dv());
    }
  }

  /// The i-th step of the pass begins: unless it is the last, send the held block on to the
  /// rank of the next step and start receiving the next one. Returns the bytes put on the wire.
  std::int64_t start(std::size_t i) {
    if (!moves_after(i)) return 0;
    const int hops = steps_[i + 1] - steps_[i];
    send_k_ = comm_.start_shift_exchange(k_.data(), k_recv_[i % 2].data(), k_bytes_, hops);
    send_v_ = comm_.start_shift_exchange(v_.data(), v_recv_[i % 2].data(), v_bytes_, hops);
    return std::int64_t(k_bytes_ + v_bytes_);
  }

  /// The i-th step ends: wait for the next block and hold it.
  void finish(std::size_t i) {
    if (!moves_after(i)) return;
    send_k_.wait();
    send_v_.wait();
    k_ = k_recv_[i % 2];
    v_ = v_recv_[i % 2];
  }

  Block k() const { return k_; }
  Block v() const { return v_; }
  comm::Exchange* pending_k() { return &send_k_; }
  comm::Exchange* pending_v() { return &send_v_; }

 private:
  bool moves_after(std::size_t i) const { return communicate_ && i + 1 < steps_.size(); }

  comm::Communicator& comm_;
  Block k_, v_;
  SpaceTensor4<T, Space> k_recv_[2], v_recv_[2];
  comm::Exchange send_k_, send_v_;
  bool communicate_;
  const std::vector<int>& steps_;
  std::size_t k_bytes_, v_bytes_;
};

}  // namespace engine
}  // namespace rfa
