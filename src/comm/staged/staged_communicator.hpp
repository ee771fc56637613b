// SPDX-License-Identifier: BSD-3-Clause
// A ring communicator for device buffers over a host transport (MPI without CUDA support):
// every exchange is staged through pinned host buffers (docs/architecture.md §8).
//
// One exchange goes through four states:
//   copying_out  the send buffer is being copied to a pinned buffer (after the compute
//                stream's queued work, so it holds what the kernels wrote);
//   queued       the copy is done; waiting for every exchange started before it to reach the
//                host transport, because ring exchanges pair up by the order they are started
//                (communicator.hpp) and copies may finish out of order;
//   sending      the host exchange between the pinned buffers is in flight;
//   copying_in   the received bytes are being copied into the device buffer (the compute
//                stream is already ordered after that copy);
//   done         the pinned buffers are back in the pool.
// test() on any exchange advances all of them, like MPI's global progress. Pinned buffers
// come from a pool that keeps what it allocated: with K, V, dK and dV in flight the pool holds
// two buffers per exchange (double buffering), and the copies of one step overlap the
// kernels of another because they run on the staging device's own copy stream.
//
// The all-gather is such an exchange too (start_allgather: copied off the device, gathered by
// the host transport's non-blocking all-gather in start order with the ring exchanges, copied
// on), so the KV all-gather strategy's next chunk is gathered while it computes on the current
// one. The other collectives (alltoall(v), reduce-scatter, broadcast) stage through the same
// buffers and block (an all-to-all(v) writes back only the byte ranges it received);
// allreduce_inplace and barrier take host values, as the NCCL transport's do. Every collective
// and split first hands the host transport the exchanges started before it (post_started), so
// that the ranks reach MPI's collectives in the order they called them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "comm/communicator.hpp"
#include "comm/staged/staging_device.hpp"

namespace rfa::comm {

namespace staged {
class StagingState;
}

class StagedCommunicator final : public Communicator {
 public:
  /// `host` moves host memory (an MpiCommunicator); `device` copies. `timeout_s`: how long a
  /// copy between the device and pinned memory may stay pending before an operation fails with
  /// RFA_ERROR_TIMEOUT, in the convention of every internal deadline (> 0 seconds, 0 none, < 0
  /// RFA_TIMEOUT_S or its default; collective/deadline.hpp): a copy waits for the kernels queued
  /// before it, so the deadline is what keeps a stuck kernel or device from hanging the ranks.
  /// After such a timeout the transport refuses new work and reports abandoned transfers. Not
  /// collective.
  StagedCommunicator(std::unique_ptr<Communicator> host, std::unique_ptr<StagingDevice> device,
                     double timeout_s = -1.0);
  /// Completes every outstanding exchange first (their handles may still be alive).
  ~StagedCommunicator() override;

  int rank() const override;
  int size() const override;
  const char* backend_name() const override { return "mpi-staged"; }
  bool accepts(MemoryKind kind) const override { return kind == MemoryKind::device; }

  Exchange start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) override;
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  Exchange start_allgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  void alltoall(const void* send, void* recv, std::size_t bytes_per_pair) override;
  void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets, void* recv,
                 const std::size_t* recv_bytes, const std::size_t* recv_offsets) override;
  void reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) override;
  /// The host transport's split, staged through a sibling of this staging device.
  std::unique_ptr<Communicator> split(int color, int position) override;
  void allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) override;
  void broadcast(void* buffer, std::size_t bytes, int root) override;
  void barrier() override;
  void set_compute_stream(void* cuda_stream) override;
  void begin_call(const CallStamp& stamp) override;
  /// The host transport's, or a copy given up after its deadline.
  bool has_abandoned_transfers() const override;
  /// The host transport.
  Communicator& host_memory() override;

  /// Pinned bytes the pool holds (for tests and the memory report); buffers set aside after a
  /// timeout stay allocated but are no longer counted.
  std::size_t pinned_bytes() const;

 private:
  std::shared_ptr<staged::StagingState> state_;
};

}  // namespace rfa::comm
