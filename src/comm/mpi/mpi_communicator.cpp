// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/mpi_communicator.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "collective/bounded_collectives.hpp"
#include "collective/deadline.hpp"
#include "collective/mpi_error.hpp"
#include "collective/wait_spin.hpp"
#include "comm/mpi/byte_datatype.hpp"
#include "comm/mpi/group_split.hpp"
#include "comm/mpi/kept_communicators.hpp"
#include "comm/mpi/mpi_exchange.hpp"
#include "comm/mpi/mpi_pending_collective.hpp"
#include "comm/ring_positions.hpp"
#include "core/error.hpp"

namespace rfa::comm {

using mpi::ByteDatatype;

namespace {

// Makes MPI calls on the caller's communicator return errors instead of aborting, and puts
// the caller's handler back afterwards.
class ScopedErrorsReturn {
 public:
  explicit ScopedErrorsReturn(MPI_Comm comm) : comm_(comm) {
    collective::check_mpi(MPI_Comm_get_errhandler(comm_, &saved_), "MPI_Comm_get_errhandler");
    const int rc = MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    if (rc != MPI_SUCCESS) {
      MPI_Errhandler_free(&saved_);
      collective::throw_mpi_error(rc, "MPI_Comm_set_errhandler");
    }
  }
  ~ScopedErrorsReturn() {
    MPI_Comm_set_errhandler(comm_, saved_);
    MPI_Errhandler_free(&saved_);  // get_errhandler handed us a reference
  }
  ScopedErrorsReturn(const ScopedErrorsReturn&) = delete;
  ScopedErrorsReturn& operator=(const ScopedErrorsReturn&) = delete;

 private:
  MPI_Comm comm_;
  MPI_Errhandler saved_ = MPI_ERRHANDLER_NULL;
};

MPI_Op to_mpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::sum: return MPI_SUM;
  }
  fail(RFA_ERROR_INVALID_ARGUMENT, "unknown ReduceOp ", int(op));
}

void require_buffer(const void* buffer, std::size_t bytes, const char* call, const char* name) {
  require(buffer != nullptr || bytes == 0, call, ": ", name, " is null but ", bytes, " bytes were requested");
}

// Ranks times bytes, refused if it would not fit in memory addresses.
std::size_t total_bytes(std::size_t ranks, std::size_t bytes_each, const char* call) {
  require(bytes_each == 0 || ranks <= SIZE_MAX / bytes_each, call, ": ", ranks, " x ", bytes_each,
          " bytes overflows size_t");
  return ranks * bytes_each;
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm parent, int ring_position, const MpiOptions& options) : options_(options) {
  if (!collective::mpi_is_usable()) {
    fail(RFA_ERROR_INVALID_USAGE,
         "an MPI communicator needs MPI to be initialized and not finalized: "
         "call MPI_Init (or MPI_Init_thread) before creating it and destroy it before MPI_Finalize; "
         "rfa never initializes MPI itself");
  }
  require(parent != MPI_COMM_NULL, "the parent communicator is MPI_COMM_NULL");
  require(options_.max_count_per_call >= 1 && options_.max_count_per_call <= std::size_t(INT_MAX),
          "MpiOptions::max_count_per_call must be in 1..INT_MAX, is ", options_.max_count_per_call);
  options_.timeout_s = collective::resolve_timeout(options_.timeout_s);
  ScopedErrorsReturn errors_return(parent);

  int parent_size = 0;
  collective::check_mpi(MPI_Comm_size(parent, &parent_size), "MPI_Comm_size");
  // Gather every rank's position first, even a bad one: each rank then judges the same array,
  // so all fail together instead of some waiting in MPI_Comm_split for the others.
  std::vector<int> positions(std::size_t(parent_size), -1);
  // Under the deadline: once it completes every rank has arrived, and the split that follows
  // (which MPI offers only blocking) meets them all at once, but for a rank that completes it
  // more than the deadline late, after the others gave up: it waits in the split until the job
  // ends (docs/reliability.md, "Not caught").
  {
    const collective::DeadlineScope deadline(options_.timeout_s);
    collective::allgather_within(parent, &ring_position, positions.data(), 1, MPI_INT,
                                 "rfa: the ranks' ring positions (MPI_Iallgather)");
  }
  const std::string problems = describe_position_errors(positions);
  if (!problems.empty()) fail(RFA_ERROR_INVALID_USAGE, problems);
  if (options_.wait_spin_ms < 0) {
    const collective::DeadlineScope deadline(options_.timeout_s);
    options_.wait_spin_ms = int(collective::wait_spin_for(parent).count());
  }

  collective::check_mpi(MPI_Comm_split(parent, 0, ring_position, &ring_), "MPI_Comm_split");
  try {
    collective::check_mpi(MPI_Comm_set_errhandler(ring_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    collective::check_mpi(MPI_Comm_rank(ring_, &rank_), "MPI_Comm_rank");
    collective::check_mpi(MPI_Comm_size(ring_, &size_), "MPI_Comm_size");
    if (rank_ != ring_position || size_ != parent_size) {
      fail(RFA_ERROR_INTERNAL, "MPI_Comm_split gave rank ", rank_, " of ", size_, " for ring position ", ring_position,
           " of ", parent_size);
    }
    int* tag_ub = nullptr;
    int found = 0;
    collective::check_mpi(MPI_Comm_get_attr(ring_, MPI_TAG_UB, &tag_ub, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
    if (found && tag_ub != nullptr && *tag_ub > tag_upper_bound_) tag_upper_bound_ = *tag_ub;
  } catch (...) {
    MPI_Comm_free(&ring_);
    throw;
  }
}

MpiCommunicator::~MpiCommunicator() {
  // After MPI_Finalize no MPI call is allowed, not even a free: the handle is simply dropped.
  // After a timeout it is kept for good (comm/mpi/kept_communicators.hpp): abandoned
  // collectives still refer to it, and MPI's progress engine would touch a freed communicator.
  if (ring_ == MPI_COMM_NULL || !collective::mpi_is_usable()) return;
  if (timed_out_->empty()) {
    MPI_Comm_free(&ring_);
  } else {
    mpi::count_kept_communicator();
  }
}

void MpiCommunicator::require_usable(const char* what) const {
  if (!timed_out_->empty()) {
    fail(RFA_ERROR_INVALID_USAGE, what,
         ": this communicator is unusable since an earlier operation timed out or abandoned its transfers (",
         *timed_out_, "); only destroying it is allowed");
  }
}

void MpiCommunicator::begin_call(const CallStamp& stamp) {
  Communicator::begin_call(stamp);
  call_tag_range_ = stamp.sequence % kCallTagRanges;
  exchanges_started_ = 0;
}

int MpiCommunicator::next_tag() {
  const std::int64_t per_call = (std::int64_t(tag_upper_bound_) + 1) / kCallTagRanges;
  const std::int64_t tag = call_tag_range_ * per_call + exchanges_started_ % per_call;
  ++exchanges_started_;
  return int(tag);
}

void MpiCommunicator::complete_collective(MPI_Request& request, const char* what, collective::ParkedValues* parked) {
  const int rc = collective::wait_within(
      &request, 1, MPI_STATUS_IGNORE, options_.timeout_s,
      [&](const int*) {
        // A collective cannot be cancelled: its request and buffer stay with MPI for good, so a
        // late rank can still complete it without touching memory the program has reused.
        if (parked) parked->abandon();
        *timed_out_ = std::string(what) + " did not complete within " + collective::seconds_text(options_.timeout_s);
        return *timed_out_ +
               ": at least one rank has not reached it (late, stuck or gone; options.timeout_s or "
               "RFA_TIMEOUT_S sets the deadline). The communicator is unusable from now on; destroy it";
      },
      wait_spin());
  collective::check_mpi(rc, what);
}

mpi::ExchangeRoute MpiCommunicator::route_for(int hops) {
  mpi::ExchangeRoute route;
  route.comm = ring_;
  route.next = ahead(hops);
  route.prev = behind(hops);
  // Consecutive exchanges get consecutive tags, so the ones in flight together never match
  // each other's messages; the k-th exchange of a call gets the same tag on every rank.
  route.tag = next_tag();
  route.max_count = options_.max_count_per_call;
  route.timeout_s = options_.timeout_s;
  route.wait_spin = wait_spin();
  route.timed_out = timed_out_;
  return route;
}

Exchange MpiCommunicator::start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) {
  require_usable("start_shift_exchange");
  require(hops >= 1, "start_shift_exchange: hops must be at least 1, got ", hops);
  if (bytes == 0) return Exchange();
  require_buffer(send, bytes, "start_shift_exchange", "the send buffer");
  require_buffer(recv, bytes, "start_shift_exchange", "the receive buffer");
  const auto* s = static_cast<const unsigned char*>(send);
  const auto* r = static_cast<const unsigned char*>(recv);
  require(s + bytes <= r || r + bytes <= s, "start_shift_exchange: the send and receive buffers overlap");

  return Exchange(std::make_unique<mpi::MpiPendingExchange>(send, recv, bytes, route_for(hops)));
}

// Every rank takes the call's tag, also one that moves nothing either way: the tags of the
// exchanges that follow stay the same on every rank.
Exchange MpiCommunicator::start_uneven_shift_exchange(const void* send, std::size_t send_bytes, void* recv,
                                                      std::size_t recv_bytes, int hops) {
  require_usable("start_uneven_shift_exchange");
  require(hops >= 1, "start_uneven_shift_exchange: hops must be at least 1, got ", hops);
  const mpi::ExchangeRoute route = route_for(hops);
  if (send_bytes == 0 && recv_bytes == 0) return Exchange();
  if (send_bytes > 0) require_buffer(send, send_bytes, "start_uneven_shift_exchange", "the send buffer");
  if (recv_bytes > 0) require_buffer(recv, recv_bytes, "start_uneven_shift_exchange", "the receive buffer");
  const auto* s = static_cast<const unsigned char*>(send);
  const auto* r = static_cast<const unsigned char*>(recv);
  require(send_bytes == 0 || recv_bytes == 0 || s + send_bytes <= r || r + recv_bytes <= s,
          "start_uneven_shift_exchange: the send and receive buffers overlap");
  return Exchange(std::make_unique<mpi::MpiPendingExchange>(send, send_bytes, recv, recv_bytes, route));
}

// The collectives run nonblocking and are completed under the deadline. Those that write
// the caller's buffers do so in place: after a timeout the caller must not reuse the buffers
// it passed while the job runs on (documented with RFA_ERROR_TIMEOUT); the small agreement
// reductions work on a parked copy instead.
void MpiCommunicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  require_usable("allgather");
  require_buffer(send, bytes_per_rank, "allgather", "the send buffer");
  require_buffer(recv, total_bytes(std::size_t(size_), bytes_per_rank, "allgather"), "allgather", "the receive buffer");
  const ByteDatatype block(bytes_per_rank, options_.max_count_per_call);
  MPI_Request request = MPI_REQUEST_NULL;
  collective::check_mpi(
      MPI_Iallgather(send, block.count(), block.type(), recv, block.count(), block.type(), ring_, &request),
      "MPI_Iallgather");
  complete_collective(request, "allgather (MPI_Iallgather)");
}

Exchange MpiCommunicator::start_allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  require_usable("start_allgather");
  if (bytes_per_rank == 0) return Exchange();
  require_buffer(send, bytes_per_rank, "start_allgather", "the send buffer");
  require_buffer(recv, total_bytes(std::size_t(size_), bytes_per_rank, "start_allgather"), "start_allgather",
                 "the receive buffer");
  auto block = std::make_unique<ByteDatatype>(bytes_per_rank, options_.max_count_per_call);
  MPI_Request request = MPI_REQUEST_NULL;
  collective::check_mpi(
      MPI_Iallgather(send, block->count(), block->type(), recv, block->count(), block->type(), ring_, &request),
      "MPI_Iallgather");
  return Exchange(std::make_unique<mpi::MpiPendingCollective>(
      request, std::move(block), "all-gather of " + std::to_string(bytes_per_rank) + " bytes per rank",
      options_.timeout_s, wait_spin(), timed_out_));
}

void MpiCommunicator::alltoall(const void* send, void* recv, std::size_t bytes_per_pair) {
  require_usable("alltoall");
  const std::size_t total = total_bytes(std::size_t(size_), bytes_per_pair, "alltoall");
  require_buffer(send, total, "alltoall", "the send buffer");
  require_buffer(recv, total, "alltoall", "the receive buffer");
  const ByteDatatype block(bytes_per_pair, options_.max_count_per_call);
  MPI_Request request = MPI_REQUEST_NULL;
  collective::check_mpi(
      MPI_Ialltoall(send, block.count(), block.type(), recv, block.count(), block.type(), ring_, &request),
      "MPI_Ialltoall");
  complete_collective(request, "alltoall (MPI_Ialltoall)");
}

void MpiCommunicator::alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets,
                                void* recv, const std::size_t* recv_bytes, const std::size_t* recv_offsets) {
  require_usable("alltoallv");
  require(send_bytes && send_offsets && recv_bytes && recv_offsets, "alltoallv: a count or offset array is null");
  // Point to point, so that any byte count works (MPI_Alltoallv's counts and displacements are
  // int), and non-blocking + one wait, the place where a deadline can be enforced. The whole
  // call uses one tag from the ring exchanges' sequence: every rank takes it at the same
  // collective call, and between two ranks there is only one message per call.
  const int tag = next_tag();
  const auto* s = static_cast<const unsigned char*>(send);
  auto* r = static_cast<unsigned char*>(recv);
  std::vector<MPI_Request> requests;
  requests.reserve(std::size_t(2 * size_));
  // Every buffer checked and every datatype made before anything is posted: a refusal then
  // leaves nothing in flight on buffers the caller may free.
  for (int peer = 0; peer < size_; ++peer) {
    if (recv_bytes[peer] > 0) require_buffer(r, recv_bytes[peer], "alltoallv", "the receive buffer");
    if (send_bytes[peer] > 0) require_buffer(s, send_bytes[peer], "alltoallv", "the send buffer");
  }
  std::vector<std::unique_ptr<ByteDatatype>> types;  // alive until every request completes
  for (const std::size_t* bytes : {recv_bytes, send_bytes})
    for (int peer = 0; peer < size_; ++peer)
      if (bytes[peer] > 0) types.push_back(std::make_unique<ByteDatatype>(bytes[peer], options_.max_count_per_call));
  std::size_t receives_posted = 0;  // the receives come first in `requests`
  auto post = [&](bool is_recv, int peer, std::size_t bytes, std::size_t offset) {
    if (bytes == 0) return;
    const ByteDatatype& type = *types[requests.size()];
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = is_recv ? MPI_Irecv(r + offset, type.count(), type.type(), peer, tag, ring_, &request)
                           : MPI_Isend(s + offset, type.count(), type.type(), peer, tag, ring_, &request);
    if (rc != MPI_SUCCESS) {
      // As after a timeout: the receives posted are cancelled, the sends stay with MPI (a send
      // to a late peer cannot be waited for within any bound, nor cancelled under Open MPI),
      // and so do the datatypes; the communicator is unusable and reports its transfers
      // abandoned, so that the engines keep the buffers they may still read or write.
      for (std::size_t i = 0; i < requests.size(); ++i) {
        if (i < receives_posted) MPI_Cancel(&requests[i]);
        MPI_Request_free(&requests[i]);
      }
      for (auto& type : types) type.release();
      const char* call = is_recv ? "MPI_Irecv (alltoallv)" : "MPI_Isend (alltoallv)";
      *timed_out_ = std::string("alltoallv failed in ") + call + "; its transfers were abandoned";
      collective::throw_mpi_error(rc, call);
    }
    if (is_recv) ++receives_posted;
    requests.push_back(request);
  };
  for (int peer = 0; peer < size_; ++peer) post(true, peer, recv_bytes[peer], recv_offsets[peer]);
  for (int peer = 0; peer < size_; ++peer) post(false, peer, send_bytes[peer], send_offsets[peer]);
  const int receives = int(std::count_if(recv_bytes, recv_bytes + size_, [](std::size_t b) { return b > 0; }));
  const int rc = collective::wait_within(
      requests.data(), int(requests.size()), MPI_STATUSES_IGNORE, options_.timeout_s,
      [&](const int* done) {
        // Unfinished receives are cancelled; sends stay with MPI, and so do their datatypes.
        for (int i = 0; i < receives; ++i) {
          if (!done[i]) {
            MPI_Cancel(&requests[std::size_t(i)]);
            MPI_Request_free(&requests[std::size_t(i)]);
          }
        }
        for (auto& type : types) type.release();
        *timed_out_ = "alltoallv did not complete within " + collective::seconds_text(options_.timeout_s);
        return *timed_out_ +
               ": a peer has not sent or received its blocks (late, stuck or gone; options.timeout_s "
               "or RFA_TIMEOUT_S sets the deadline). The communicator is unusable from now on; destroy it";
      },
      wait_spin());
  collective::check_mpi(rc, "MPI_Waitall (alltoallv)");
}

// A ring of P-1 shift exchanges, each of one rank's block: every link carries the nominal
// (P-1)/P of the data once (Open MPI's MPI_Ireduce_scatter_block moved 2.9x those bytes at 2
// ranks over TCP links and 4.5x at 4: perf/RESULTS.md, "2026-11-28 (afternoon) — one TCP
// connection per pair of ranks").
// Step s sends the partial sum of block (me - 1 - s) and receives that of block (me - 2 - s)
// into `recv`, which is added into this rank's part of that block in `send`, the partial the
// next step sends; the last step receives block me and adds this rank's part. Block b is summed
// in ring order starting after rank b, the same order on every call, so results repeat exactly.
// Nothing is allocated: on a timeout the buffers a late neighbour may still write are the
// caller's, whose workspaces are set aside then (has_abandoned_transfers).
void MpiCommunicator::reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) {
  require_usable("reduce_scatter_sum");
  const std::size_t bytes = total_bytes(count_per_rank, sizeof(float), "reduce_scatter_sum");
  require_buffer(send, total_bytes(std::size_t(size_), bytes, "reduce_scatter_sum"), "reduce_scatter_sum",
                 "the send buffer");
  require_buffer(recv, bytes, "reduce_scatter_sum", "the receive buffer");
  if (count_per_rank == 0) return;
  const int P = size_;
  auto block = [&](int position) { return send + std::size_t((position % P + P) % P) * count_per_rank; };
  if (P == 1) {
    std::copy(send, send + count_per_rank, recv);
    return;
  }
  for (int step = 0; step < P - 1; ++step) {
    start_shift_exchange(block(rank_ - 1 - step), recv, bytes, 1).wait();
    if (step < P - 2) {
      float* partial = block(rank_ - 2 - step);
      for (std::size_t i = 0; i < count_per_rank; ++i) partial[i] += recv[i];
    } else {
      const float* own = block(rank_);
      for (std::size_t i = 0; i < count_per_rank; ++i) recv[i] += own[i];
    }
  }
}

void MpiCommunicator::allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) {
  require_usable("allreduce");
  require_buffer(values, count * sizeof(std::int64_t), "allreduce", "the value array");
  require(count <= std::size_t(INT_MAX), "allreduce of ", count, " values: at most INT_MAX at once");
  // A parked copy: the argument agreements run this before anything else of a call, so it is
  // where a late rank is usually noticed, and their arrays live on the caller's stack.
  collective::ParkedValues parked(std::vector<std::int64_t>(values, values + count));
  MPI_Request request = MPI_REQUEST_NULL;
  collective::check_mpi(
      MPI_Iallreduce(MPI_IN_PLACE, parked.data(), int(count), MPI_INT64_T, to_mpi(op), ring_, &request),
      "MPI_Iallreduce");
  complete_collective(request, "allreduce (MPI_Iallreduce)", &parked);
  std::copy(parked.values().begin(), parked.values().end(), values);
}

void MpiCommunicator::broadcast(void* buffer, std::size_t bytes, int root) {
  require_usable("broadcast");
  require_buffer(buffer, bytes, "broadcast", "the buffer");
  require(root >= 0 && root < size_, "broadcast: root ", root, " is not a ring position (0..", size_ - 1, ")");
  const ByteDatatype message(bytes, options_.max_count_per_call);
  MPI_Request request = MPI_REQUEST_NULL;
  collective::check_mpi(MPI_Ibcast(buffer, message.count(), message.type(), root, ring_, &request), "MPI_Ibcast");
  complete_collective(request, "broadcast (MPI_Ibcast)");
}

void MpiCommunicator::barrier() {
  require_usable("barrier");
  MPI_Request request = MPI_REQUEST_NULL;
  collective::check_mpi(MPI_Ibarrier(ring_, &request), "MPI_Ibarrier");
  complete_collective(request, "barrier (MPI_Ibarrier)");
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int position) {
  require_usable("split");
  return mpi::with_group(ring_, color, rank_, [&](MPI_Comm group) -> std::unique_ptr<Communicator> {
    return std::make_unique<MpiCommunicator>(group, position, options_);
  });
}

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm parent, int ring_position, double timeout_s) {
  MpiOptions options;
  options.timeout_s = timeout_s;
  return std::make_unique<MpiCommunicator>(parent, ring_position, options);
}

}  // namespace rfa::comm
