// SPDX-License-Identifier: BSD-3-Clause
// The K/V blocks as they travel around the ring, shared by the forward and the backward:
// at step s the rank computes on the block it holds while that block is already on its way
// to the next rank and the following one arrives from the previous rank, double-buffered.
#pragma once

#include <cstdint>

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
  /// receive buffers come from `ws`, sized by the context (the caller's k and v are checked
  /// against it only after the workspace is allocated). The blocks move between the `steps`
  /// steps of the pass (0: as many as ranks), not after the last.
  TravellingKV(Workspace<Space>& ws, comm::Communicator& comm, const RingConfig& c, std::int64_t local_seq, Block k,
               Block v, bool communicate, int steps = 0)
      : comm_(comm),
        k_(k),
        v_(v),
        communicate_(communicate),
        steps_(steps > 0 ? steps : comm.size()),
        bytes_(std::size_t(c.batch * local_seq * c.kv_heads * c.head_dim) * sizeof(T)) {
    for (int i = 0; i < 2; ++i) {
      k_recv_[i] =
          ws.template tensor4<T>(i == 0 ? "rfa::k_recv0" : "rfa::k_recv1", c.batch, local_seq, c.kv_heads, c.head_dim);
      v_recv_[i] =
          ws.template tensor4<T>(i == 0 ? "rfa::v_recv0" : "rfa::v_recv1", c.batch, local_seq, c.kv_heads, c.head_dim);
    }
  }

  /// Step s begins: unless this is the last step, send the held block on and start receiving
  /// the next one. Returns the bytes put on the wire.
  std::int64_t start(int step) {
    if (!moves_after(step)) return 0;
    send_k_ = comm_.start_ring_exchange(k_.data(), k_recv_[step % 2].data(), bytes_);
    send_v_ = comm_.start_ring_exchange(v_.data(), v_recv_[step % 2].data(), bytes_);
    return std::int64_t(2 * bytes_);
  }

  /// Step s ends: wait for the next block and hold it.
  void finish(int step) {
    if (!moves_after(step)) return;
    send_k_.wait();
    send_v_.wait();
    k_ = k_recv_[step % 2];
    v_ = v_recv_[step % 2];
  }

  Block k() const { return k_; }
  Block v() const { return v_; }
  comm::Exchange* pending_k() { return &send_k_; }
  comm::Exchange* pending_v() { return &send_v_; }

 private:
  bool moves_after(int step) const { return communicate_ && step + 1 < steps_; }

  comm::Communicator& comm_;
  Block k_, v_;
  SpaceTensor4<T, Space> k_recv_[2], v_recv_[2];
  comm::Exchange send_k_, send_v_;
  bool communicate_;
  int steps_;
  std::size_t bytes_;
};

}  // namespace engine
}  // namespace rfa
