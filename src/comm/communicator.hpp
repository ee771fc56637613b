// SPDX-License-Identifier: BSD-3-Clause
// The ring communicator: the only way the engines talk to other ranks (docs/architecture.md §5).
//
// The interface names no MPI or NCCL type, so the engine is written once for every transport:
// src/comm/mpi/ implements it over MPI with host buffers; a device-memory NCCL implementation
// will sit beside it behind the same calls.
//
// Ranks and positions. rank() is this rank's *ring position* (0..size()-1), not its rank in
// the application's communicator: implementations renumber their ranks so that the two agree.
// next() and prev() are the neighbours on the ring.
//
// Collective calls. Every call below except Exchange::test()/wait() is collective over the
// ring: all ranks make it, in the same order, with the same sizes (and, for broadcast, the same
// root). Ring exchanges are matched by the order in which they are started: the k-th exchange
// a rank starts pairs with the k-th exchange started by its neighbours, so every rank must
// start its exchanges in the same order. Several exchanges may be outstanding at once (the
// engine double-buffers K and V, and dK/dV in backward: four in flight is normal); they never
// cross, even when their sizes are equal.
//
// Overlap: how the engine should drive an exchange. An MPI library moves data only while the
// application is inside an MPI call, unless it runs an asynchronous progress thread; Open MPI
// 4.1 as installed here has none ("OMPI progress: no" in ompi_info; btl_tcp_progress_thread=0).
// Small messages go eagerly and need no help: up to 4 KiB over Open MPI's shared-memory
// transport (btl_vader_eager_limit), 64 KiB over TCP. K/V blocks are far larger and use a
// rendezvous: the receiver must notice the sender's request-to-send, and the data moves only
// after that handshake, during some later MPI call of the side that does the copy.
//
// Measured on the 2-core development machine, 2 ranks, a 4 MiB exchange under 5 ms of compute,
// medians of 60 rounds (tests/comm/overlap_probe.cpp):
//   shared memory (vader, CMA): alone 570 us. No polling: wait() still takes 570 us after the
//     compute, so nothing overlapped. test() every 100 us: wait() takes 0 us, and ~560 us were
//     spent inside test() calls (the single copy runs inside the call that performs it).
//   TCP (--mca btl tcp,self): alone 1070 us; no polling 1035 us left; polling 0 us left,
//     ~1040 us inside test().
// So the engine should call test() on its outstanding exchanges between tiles, roughly every
// 100 us of compute. test() on any outstanding exchange advances all of them (MPI's progress
// engine is global), so polling one handle is enough; a completed handle's test() costs
// nothing. On shared memory and TCP the copy itself costs CPU time inside test(), so polling
// removes the stall at wait() but not the copy's cost; an RDMA network moves the data without
// the CPU once the handshake is done.
//
// Thread safety: one Communicator, and the exchanges it started, must be used by one thread
// at a time (the MPI implementation needs only MPI_THREAD_FUNNELED or SERIALIZED from the
// application); different Communicators may be used concurrently when MPI allows it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.hpp"

namespace rfa::comm {

/// Where a buffer lives. The MPI communicator accepts host memory; an NCCL one accepts device
/// memory. Engines ask accepts() before choosing where to stage their buffers.
enum class MemoryKind { host, device };

/// Reductions offered by allreduce (validation and agreement; not for tensors).
enum class ReduceOp { min, max, sum };

/// Which collective call the ranks are in. A caller that makes calls on behalf of its users
/// (the C API) stamps each one with begin_call(); every agreement (comm/agreement.hpp) then
/// carries the stamp, so ranks that make different calls fail together at their first
/// agreement instead of exchanging each other's data. The default stamp (all zero) is what a
/// communicator carries before any call.
struct CallStamp {
  std::int64_t context = 0;    ///< what the calls are made on, numbered alike on every rank
  std::int64_t operation = 0;  ///< what is called, in the caller's numbering (0: no call)
  std::int64_t sequence = 0;   ///< how many calls came before this one on the same communicator
  /// Names an operation number in messages ("rfa_forward"); may be null (numbers are shown).
  const char* (*operation_name)(std::int64_t operation) = nullptr;
};

namespace detail {
/// One started exchange, as an implementation sees it. Its destructor must complete the
/// exchange (or, if the transport is already shut down, abandon it) and must never throw.
class PendingExchange {
 public:
  virtual ~PendingExchange() = default;
  /// Makes progress; true once the exchange is complete. Throws rfa::Error on failure.
  virtual bool test() = 0;
  /// Blocks until the exchange is complete. Throws rfa::Error on failure.
  virtual void wait() = 0;
};
}  // namespace detail

/// The handle of one ring exchange (RAII, move-only).
///
/// The send buffer must not be modified and the receive buffer not read until test() returned
/// true or wait() returned. Destroying a handle whose exchange is unfinished *completes* it:
/// the destructor waits (it never cancels, because a cancelled receive would leave the
/// neighbour's message unmatched and a cancelled send may already be half delivered). So a
/// forgotten wait() neither leaks requests nor leaves a buffer in use after its owner is
/// gone. If that wait lasts long (the neighbours never started their side) the MPI
/// implementation says so on stderr every 10 s instead of hanging silently. Errors seen in the
/// destructor are printed, not thrown; call wait() to get them as exceptions.
class Exchange {
 public:
  /// An empty handle: already complete.
  Exchange() = default;
  explicit Exchange(std::unique_ptr<detail::PendingExchange> pending) : pending_(std::move(pending)) {}
  Exchange(Exchange&&) noexcept = default;
  /// Completes the exchange this handle held before taking the other one.
  Exchange& operator=(Exchange&&) noexcept = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;
  ~Exchange() = default;

  /// Makes progress on this (and every other outstanding) transfer; true once this exchange is
  /// complete, after which the buffers are free. Cheap on a completed handle.
  bool test() {
    if (pending_ && pending_->test()) pending_.reset();
    return !pending_;
  }
  /// Blocks until the exchange is complete.
  void wait() {
    if (pending_) {
      pending_->wait();
      pending_.reset();
    }
  }
  /// True once the exchange is known to be complete (no MPI call is made).
  bool done() const { return !pending_; }

 private:
  std::unique_ptr<detail::PendingExchange> pending_;
};

/// The ring: see the file comment for the collective and ordering rules.
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This rank's ring position, 0..size()-1.
  virtual int rank() const = 0;
  /// The number of ranks on the ring, P >= 1.
  virtual int size() const = 0;
  /// The rank this one sends to in a ring exchange.
  int next() const { return ahead(1); }
  /// The rank this one receives from in a ring exchange.
  int prev() const { return behind(1); }
  /// The rank `hops` >= 0 positions ahead of this one on the ring, and the one `hops` behind.
  int ahead(int hops) const { return int((std::int64_t(rank()) + hops) % size()); }
  int behind(int hops) const { return int((std::int64_t(rank()) + size() - hops % size()) % size()); }

  /// A short name of the transport ("mpi"), for messages and provenance.
  virtual const char* backend_name() const = 0;
  /// Whether buffers of this kind may be passed to the calls below.
  virtual bool accepts(MemoryKind kind) const = 0;

  /// Starts sending `bytes` bytes from `send` to ahead(hops) and receiving `bytes` bytes from
  /// behind(hops) into `recv`; returns at once. Collective; all ranks pass the same `bytes` and
  /// `hops` (>= 1). The buffers must not overlap. Where `hops` is a multiple of P (P = 1, say)
  /// the rank exchanges with itself (a copy). Any byte count works, including more than
  /// INT_MAX; zero gives a completed handle. The engines skip ring steps no rank computes on
  /// with hops > 1, and send gradients home in one exchange.
  virtual Exchange start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) = 0;
  /// start_shift_exchange() with sizes that differ from rank to rank: `send_bytes` bytes from
  /// `send` to ahead(hops), `recv_bytes` bytes from behind(hops) into `recv`. Collective; every
  /// rank passes the same `hops`, and a rank's `send_bytes` must equal the `recv_bytes` of the
  /// rank it sends to (either may be zero; nothing moves on a side of zero bytes). The
  /// needed-only exchange moves each round's rows with it. The default runs alltoallv() and
  /// returns a completed handle (correct, no overlap); MPI starts it non-blocking.
  virtual Exchange start_uneven_shift_exchange(const void* send, std::size_t send_bytes, void* recv,
                                               std::size_t recv_bytes, int hops) {
    require(hops >= 1, "start_uneven_shift_exchange: hops must be at least 1, got ", hops);
    std::vector<std::size_t> sb(std::size_t(size()), 0), rb(sb), offsets(sb);
    sb[std::size_t(ahead(hops))] = send_bytes;
    rb[std::size_t(behind(hops))] = recv_bytes;
    alltoallv(send, sb.data(), offsets.data(), recv, rb.data(), offsets.data());
    return Exchange();
  }
  /// start_shift_exchange() by one hop: send to next(), receive from prev().
  Exchange start_ring_exchange(const void* send, void* recv, std::size_t bytes) {
    return start_shift_exchange(send, recv, bytes, 1);
  }

  /// Every rank contributes `bytes_per_rank` bytes; `recv` (size() * bytes_per_rank bytes)
  /// receives rank r's contribution at offset r * bytes_per_rank, on every rank. Blocking.
  virtual void allgather(const void* send, void* recv, std::size_t bytes_per_rank) = 0;

  /// allgather(), started: returns at once; the buffers are in use until the handle completes.
  /// Collective and ordered like the other calls. The KV all-gather strategy gathers the next
  /// K/V chunk with it while it computes on the current one.
  /// The default runs the blocking allgather() and returns a completed handle (correct, no
  /// overlap); MPI, NCCL and the staged transport start a non-blocking collective.
  virtual Exchange start_allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
    allgather(send, recv, bytes_per_rank);
    return Exchange();
  }

  /// Block r of `send` (offset r * bytes_per_pair) goes to rank r; block r of `recv` comes
  /// from rank r. Both buffers hold size() * bytes_per_pair bytes. Blocking.
  virtual void alltoall(const void* send, void* recv, std::size_t bytes_per_pair) = 0;

  /// The irregular all-to-all: `send_bytes[r]` bytes at `send_offsets[r]` of `send` go to rank
  /// r; `recv_bytes[r]` bytes from rank r land at `recv_offsets[r]` of `recv` (all arrays have
  /// size() entries, offsets in bytes). Rank r's recv_bytes[s] must equal rank s's
  /// send_bytes[r]. The Ulysses strategy uses it to send each rank exactly the K/V heads its
  /// query heads need. Blocking.
  /// MPI and NCCL implement it; other transports throw RFA_ERROR_UNSUPPORTED.
  virtual void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets, void* recv,
                         const std::size_t* recv_bytes, const std::size_t* recv_offsets) {
    (void)send, (void)send_bytes, (void)send_offsets, (void)recv, (void)recv_bytes, (void)recv_offsets;
    unsupported("alltoallv");
  }

  /// Sums `size() * count_per_rank` fp32 values elementwise over all ranks and leaves block r
  /// (values r * count_per_rank ...) on rank r, in `recv` (count_per_rank values). `send` is
  /// also the transport's scratch: its values are unspecified afterwards. The KV all-gather
  /// backward returns dK/dV partials with it. Blocking.
  /// MPI and NCCL implement it; other transports throw RFA_ERROR_UNSUPPORTED.
  virtual void reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) {
    (void)send, (void)recv, (void)count_per_rank;
    unsupported("reduce_scatter_sum");
  }

  /// Reduces `count` int64 values elementwise over all ranks, in place. Blocking.
  virtual void allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) = 0;

  /// The reduction of one value over all ranks. Blocking.
  std::int64_t allreduce(std::int64_t value, ReduceOp op) {
    allreduce_inplace(&value, 1, op);
    return value;
  }

  /// Copies `bytes` bytes from `root`'s buffer into every rank's buffer. Blocking.
  virtual void broadcast(void* buffer, std::size_t bytes, int root) = 0;

  /// Returns once every rank has entered the barrier.
  virtual void barrier() = 0;

  /// A collective call begins: later agreements carry `stamp`, and transports that tag their
  /// messages give the call's messages tags of their own, so no message of one call is
  /// received by another. Not collective (the agreements that follow compare the stamps).
  /// Implementations that wrap another communicator pass the stamp on.
  virtual void begin_call(const CallStamp& stamp) { stamp_ = stamp; }
  /// The stamp of the call in progress (the last begin_call()).
  const CallStamp& call_stamp() const { return stamp_; }

  /// Transports of device memory: the CUDA stream (a cudaStream_t; nullptr is the legacy
  /// default stream) that is made to wait for the data an exchange delivers, and whose work
  /// queued before an exchange starts (or a collective is called) the exchange's reads of its
  /// send buffer and writes of its receive buffer are ordered after. Work queued there after
  /// the start may run beside the exchange, so it must touch neither buffer until the exchange
  /// is waited. Host transports ignore it.
  virtual void set_compute_stream(void* cuda_stream) { (void)cuda_stream; }
  /// Collective. The ranks that pass the same `color` form a new communicator of the same
  /// transport, in which this rank's position is `position` (the positions of one color must
  /// be 0..n-1, checked on every rank of the group). The hybrid strategy builds its Ulysses
  /// groups and its ring of groups with it. The new communicator is independent of this one.
  /// MPI and NCCL implement it; other transports throw RFA_ERROR_UNSUPPORTED.
  virtual std::unique_ptr<Communicator> split(int color, int position) {
    (void)color, (void)position;
    unsupported("split");
  }
  /// True once an operation timed out and left transfers with the transport that may still
  /// complete (a late rank can finish an abandoned collective, and a cancelled receive may
  /// already be landing): the buffers those transfers were given must never be freed or reused,
  /// so an engine sets its call's workspace aside for good instead (WorkspaceArena). NCCL's
  /// abort stops NCCL's transfers but not the copies the transport queued on its communication
  /// stream, so an aborted NCCL communicator says true too.
  virtual bool has_abandoned_transfers() const { return false; }
  /// The communicator of the same ring positions that moves host memory: this one for a host
  /// transport, a device transport's MPI side (the C API's all-gather of host tensors runs on
  /// it).
  virtual Communicator& host_memory() { return *this; }

 protected:
  Communicator() = default;

 private:
  CallStamp stamp_;
  [[noreturn]] void unsupported(const char* call) const {
    fail(RFA_ERROR_UNSUPPORTED, "the ", backend_name(), " transport does not offer ", call,
         " (the Ulysses, all-gather and hybrid strategies need it): use the MPI or NCCL transport");
  }
};

/// The transports whose transfers write into a set of buffers (an engine's workspace), each of
/// which must outlive the question: whether any of them abandoned transfers that may still
/// write there (has_abandoned_transfers), so that the buffers must be kept, not freed.
class WatchedTransports {
 public:
  void watch(const Communicator* transport) { transports_.push_back(transport); }
  bool abandoned() const {
    for (const Communicator* c : transports_)
      if (c->has_abandoned_transfers()) return true;
    return false;
  }

 private:
  std::vector<const Communicator*> transports_;
};

}  // namespace rfa::comm
