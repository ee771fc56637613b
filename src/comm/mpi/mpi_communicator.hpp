// SPDX-License-Identifier: BSD-3-Clause
// The ring communicator over MPI with host buffers (docs/architecture.md §5).
//
// It is built from the application's communicator and this rank's ring position (computed by
// src/topology, or the identity): MPI_Comm_split(parent, 0, position) gives a private
// communicator whose rank is the ring position. That communicator uses MPI_ERRORS_RETURN, so
// every MPI failure becomes rfa::Error(RFA_ERROR_MPI) naming the call and MPI's message, and it
// gives the library its own tag space apart from the application's traffic.
//
// The library never calls MPI_Init or MPI_Finalize (docs/architecture.md §6.9): MPI must be initialized
// when a communicator is created, and one that is destroyed after MPI_Finalize does not free its
// MPI communicator (there is nothing left to free it with).
#pragma once

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "collective/deadline.hpp"
#include "comm/communicator.hpp"
#include "comm/mpi/mpi_exchange.hpp"

namespace rfa::comm {

/// Tuning knobs that only tests need to change.
struct MpiOptions {
  /// Byte counts above this go through a derived datatype instead of a plain MPI_BYTE count
  /// (see mpi/byte_datatype.hpp). Tests lower it to exercise that path with small buffers.
  std::size_t max_count_per_call = INT_MAX;
  /// Seconds every blocking operation waits for the other ranks before it fails with
  /// RFA_ERROR_TIMEOUT (mpi/deadline.hpp); 0: no deadline; negative: RFA_TIMEOUT_S or the
  /// default (collective::kDefaultTimeoutSeconds).
  double timeout_s = -1.0;
  /// Milliseconds a wait polls without pause before it naps between polls (collective::wait_spin_for);
  /// negative: decided at construction from RFA_WAIT_SPIN_MS and the node's ranks and CPUs.
  int wait_spin_ms = -1;
};

class MpiCommunicator final : public Communicator {
 public:
  /// Collective over `parent`. Every rank passes its ring position; the positions must be a
  /// permutation of 0..P-1 (P = size of parent), which is checked on every rank together:
  /// otherwise every rank throws RFA_ERROR_INVALID_USAGE with the same message. Throws
  /// RFA_ERROR_INVALID_USAGE if MPI is not initialized or already finalized,
  /// RFA_ERROR_INVALID_ARGUMENT for MPI_COMM_NULL, RFA_ERROR_MPI if an MPI call fails. While it
  /// runs, `parent`'s error handler is MPI_ERRORS_RETURN; the caller's handler is restored.
  MpiCommunicator(MPI_Comm parent, int ring_position, const MpiOptions& options = MpiOptions());
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "mpi"; }
  /// Host memory only (device buffers would need a CUDA-aware MPI; not detected yet).
  bool accepts(MemoryKind kind) const override { return kind == MemoryKind::host; }

  Exchange start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) override;
  Exchange start_uneven_shift_exchange(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                                       int hops) override;
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  Exchange start_allgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  void alltoall(const void* send, void* recv, std::size_t bytes_per_pair) override;
  void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets, void* recv,
                 const std::size_t* recv_bytes, const std::size_t* recv_offsets) override;
  void reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) override;
  void allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) override;
  void broadcast(void* buffer, std::size_t bytes, int root) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int position) override;
  /// Also starts the call's own range of tags (see tag_upper_bound()).
  void begin_call(const CallStamp& stamp) override;
  /// After any timeout (receives are cancelled, but one may already be landing; sends and
  /// collectives are abandoned to MPI).
  bool has_abandoned_transfers() const override { return !timed_out_->empty(); }

  /// The private ring communicator (rank = ring position). Owned by this object: do not free
  /// it; code that sends on it must not use tags 0..tag_upper_bound() while exchanges are
  /// in flight.
  MPI_Comm mpi_comm() const { return ring_; }
  /// The largest tag ring exchanges use. The tags 0..this are cut into kCallTagRanges ranges;
  /// call n (begin_call) tags its exchanges from range n mod kCallTagRanges, cycling within it,
  /// so messages of consecutive calls (a forward, the backward after it) never match each other.
  int tag_upper_bound() const { return tag_upper_bound_; }
  static constexpr int kCallTagRanges = 64;
  /// The deadline of blocking operations in seconds (0: none).
  double timeout_seconds() const { return options_.timeout_s; }
  /// How long this communicator's waits poll without pause (MpiOptions::wait_spin_ms, decided).
  std::chrono::milliseconds wait_spin() const { return std::chrono::milliseconds(options_.wait_spin_ms); }

 private:
  MPI_Comm ring_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int tag_upper_bound_ = 32767;         // the least MPI guarantees; raised to MPI_TAG_UB
  std::int64_t call_tag_range_ = 0;     // the range of tags of the call in progress
  std::int64_t exchanges_started_ = 0;  // in this call: the next exchange's tag within the range
  MpiOptions options_;
  // What timed out, shared with the exchanges; non-empty: every later operation is refused.
  std::shared_ptr<std::string> timed_out_ = std::make_shared<std::string>();

  /// Completes a started collective within the deadline. On timeout the request (and
  /// `parked`, when the collective works on one) are abandoned for good, the communicator is
  /// marked unusable, and RFA_ERROR_TIMEOUT names `what`.
  void complete_collective(MPI_Request& request, const char* what, collective::ParkedValues* parked = nullptr);
  /// Refuses to work after a timeout (RFA_ERROR_INVALID_USAGE).
  void require_usable(const char* what) const;
  /// The tag of the next exchange of the call in progress.
  int next_tag();
  /// Where an exchange `hops` positions each way goes, with the next tag.
  mpi::ExchangeRoute route_for(int hops);
};

/// The MPI ring communicator for `parent` with this rank at `ring_position` (see
/// MpiCommunicator); `timeout_s` as MpiOptions::timeout_s.
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm parent, int ring_position, double timeout_s = -1.0);

}  // namespace rfa::comm
