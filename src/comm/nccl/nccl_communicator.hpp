// SPDX-License-Identifier: BSD-3-Clause
// The ring communicator over NCCL, for device buffers (docs/architecture.md §5).
//
// Creation. Collective over the parent MPI communicator: an MpiCommunicator is built first
// (MPI_Comm_split by ring position, so NCCL rank = MPI rank = ring position, and the same
// position checks as the MPI transport); rank 0 makes the NCCL unique id and broadcasts it
// over that MPI communicator; every rank then joins a nonblocking NCCL communicator
// (ncclCommInitRankConfig, blocking = 0) on the caller's current CUDA device. The MPI
// communicator stays: allreduce_inplace() and barrier() use it (validation traffic stays on
// MPI, with host values). Every failure during creation fails on all ranks together; a rank
// without a usable device makes every rank throw RFA_ERROR_CUDA. A rank whose NCCL init fails
// at once leaves the others waiting for theirs until the timeout at most.
//
// Streams. The library creates one communication stream (cudaStreamNonBlocking, so it never
// synchronizes implicitly with the legacy default stream). Each operation is ordered after
// all work queued so far on the *compute stream* (an event recorded there, waited on by the
// communication stream) and records its completion in an event. The compute stream is the
// legacy default stream (0) until set_compute_stream() names another; the engine passes its
// own. Ring exchanges run one after another on the communication stream in the order they
// were started, which is what keeps several outstanding exchanges from crossing: NCCL
// matches point-to-point messages between two ranks in issue order.
//
// Waiting. Exchange::test() and Exchange::wait() answer on the HOST: test() polls whether
// the exchange has completed on the device; wait() BLOCKS THE CALLING THREAD until it has
// (by polling, never in a blocking CUDA call, so a hang becomes RFA_ERROR_TIMEOUT after the
// timeout). When either reports completion it has also made the compute stream wait on the
// exchange's event, so later kernels on the compute stream are ordered after the data
// arrived on the device as well. An engine that wants device-only ordering without blocking
// should call test() on its outstanding exchanges between kernel launches instead of wait().
// allgather, alltoall and broadcast are blocking in the same sense: they return once the
// operation completed on the device. Errors and timeouts abort the NCCL communicator
// (ncclCommAbort) and throw RFA_ERROR_NCCL / RFA_ERROR_TIMEOUT; after that every call fails.
//
// Buffers given to start_ring_exchange, allgather, alltoall and broadcast must be device (or
// managed) memory, of the communicator's device: that they are device memory is checked
// (RFA_ERROR_INVALID_ARGUMENT for host memory), which device is not.
//
// Thread safety as in communicator.hpp. Every call makes the communicator's device current
// for its duration and restores the caller's device.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/mpi/mpi_communicator.hpp"

namespace rfa::comm {

namespace nccl {
class NcclCommState;
}

struct NcclOptions {
  /// Seconds any wait (creation, an exchange from its start, a collective, destruction) may
  /// take before the communicator is aborted: as MpiOptions::timeout_s, 0 no deadline and
  /// negative RFA_NCCL_TIMEOUT_S from the environment, else 300 (nccl_timeout.hpp). Its MPI
  /// side (agreements, barriers, the split) takes the same value as MpiOptions::timeout_s
  /// (negative: RFA_TIMEOUT_S); a split's, the deadline its parent resolved.
  double timeout_seconds = -1.0;
};

class NcclCommunicator final : public Communicator {
 public:
  /// Collective over `parent` (see the file comment). Throws RFA_ERROR_INVALID_USAGE for bad
  /// positions (as MpiCommunicator), RFA_ERROR_CUDA when a rank has no usable device,
  /// RFA_ERROR_NCCL or RFA_ERROR_TIMEOUT when NCCL fails, RFA_ERROR_INVALID_ARGUMENT for a
  /// malformed RFA_NCCL_TIMEOUT_S; always on every rank, with the code and message of the
  /// lowest failing rank (collective::agree_on_failure).
  NcclCommunicator(MPI_Comm parent, int ring_position, const NcclOptions& options = NcclOptions());
  /// Finalizes and destroys the NCCL communicator (aborts it if it failed); never throws.
  ~NcclCommunicator() override;

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const char* backend_name() const override { return "nccl"; }
  /// Device memory only.
  bool accepts(MemoryKind kind) const override { return kind == MemoryKind::device; }

  Exchange start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) override;
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  Exchange start_allgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  void alltoall(const void* send, void* recv, std::size_t bytes_per_pair) override;
  void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets, void* recv,
                 const std::size_t* recv_bytes, const std::size_t* recv_offsets) override;
  void reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) override;
  /// Host values, over MPI.
  void allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) override;
  void broadcast(void* buffer, std::size_t bytes, int root) override;
  /// Over MPI: host-side only, it does not wait for queued device work.
  void barrier() override;
  /// Its MPI side.
  Communicator& host_memory() override { return *mpi_; }
  /// Its MPI side's (agreements, barriers), and true once the NCCL communicator was aborted: the
  /// abort stops NCCL's transfers, not the copies queued on the communication stream behind
  /// the compute stream's work (a one-rank exchange, a collective's own block), which may still
  /// write their destinations.
  bool has_abandoned_transfers() const override;
  std::unique_ptr<Communicator> split(int color, int position) override;

  /// The stream (a cudaStream_t) that operations are ordered after and that is made to wait
  /// for their results; nullptr means the legacy default stream. It must belong to this
  /// communicator's device and outlive the operations started while it is set.
  void set_compute_stream(void* cuda_stream) override { compute_stream_ = cuda_stream; }
  /// NCCL matches messages in issue order; the MPI communicator beside it gets the stamp too.
  void begin_call(const CallStamp& stamp) override {
    Communicator::begin_call(stamp);
    mpi_->begin_call(stamp);
  }
  void* compute_stream() const { return compute_stream_; }
  /// The library's communication stream (a cudaStream_t), for profiling and tests.
  void* communication_stream() const;
  /// The CUDA device the communicator was created on.
  int device() const;
  /// The seconds after which a wait gives up and aborts.
  double timeout_seconds() const;
  /// The MPI communicator beside it (rank = ring position).
  MpiCommunicator& mpi() { return *mpi_; }

 private:
  // Queues `enqueue` (NCCL calls or copies on the communication stream) after the compute
  // stream's work and returns its pending completion. `what` names it in messages.
  template <class Enqueue>
  std::unique_ptr<detail::PendingExchange> launch(const std::string& what, Enqueue&& enqueue);

  std::unique_ptr<MpiCommunicator> mpi_;
  std::shared_ptr<nccl::NcclCommState> state_;
  void* compute_stream_ = nullptr;
  std::int64_t exchanges_started_ = 0;  // for messages only
};

/// The NCCL ring communicator for `parent` with this rank at `ring_position`.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm parent, int ring_position,
                                                     const NcclOptions& options = NcclOptions());

}  // namespace rfa::comm
