// SPDX-License-Identifier: BSD-3-Clause
#include "comm/nccl/nccl_communicator.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <climits>

#include "collective/agree_on_failure.hpp"
#include "comm/mpi/group_split.hpp"
#include "comm/nccl/nccl_comm_state.hpp"
#include "comm/nccl/nccl_error.hpp"
#include "comm/nccl/nccl_operation.hpp"
#include "comm/nccl/nccl_timeout.hpp"
#include "core/error.hpp"
#include "device/cuda_error.hpp"
#include "device/current_device.hpp"

namespace rfa::comm {

using device::check_cuda;

namespace {

void require_device_buffer(const void* buffer, std::size_t bytes, const char* call, const char* name) {
  if (bytes == 0) return;
  require(buffer != nullptr, call, ": ", name, " is null but ", bytes, " bytes were requested");
  require(device::is_device_memory(buffer), call, ": ", name,
          " is not device memory; the NCCL communicator takes device (or managed) buffers only");
}

std::size_t total_bytes(std::size_t ranks, std::size_t bytes_each, const char* call) {
  require(bytes_each == 0 || ranks <= SIZE_MAX / bytes_each, call, ": ", ranks, " x ", bytes_each,
          " bytes overflows size_t");
  return ranks * bytes_each;
}

/// The calls of one NCCL group: each result kept, the group always ended, and only then the
/// first failure reported (which aborts the communicator). NCCL counts each thread's open
/// groups: one left open by a failure would hold back every later NCCL call of the thread (the
/// next communicator's initialization among them) and hand the operations queued on this
/// communicator, aborted by then, to the next group's end.
class NcclGroup {
 public:
  explicit NcclGroup(nccl::NcclCommState& state) : state_(state) {
    state_.check_call(ncclGroupStart(), "ncclGroupStart");
  }
  ~NcclGroup() {
    if (!ended_) ncclGroupEnd();  // left by an exception: its failure is the one reported
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  /// Keeps the first failing result of the group's calls.
  void add(ncclResult_t rc, const char* call) {
    if (failed_call_ == nullptr && rc != ncclSuccess && rc != ncclInProgress) {
      failed_ = rc;
      failed_call_ = call;
    }
  }
  /// Ends the group, then throws the first failure of its calls or of its end.
  void end() {
    ended_ = true;
    const ncclResult_t rc = ncclGroupEnd();
    if (failed_call_ != nullptr) state_.check_call(failed_, failed_call_);
    state_.check_call(rc, "ncclGroupEnd");
  }

 private:
  nccl::NcclCommState& state_;
  ncclResult_t failed_ = ncclSuccess;
  const char* failed_call_ = nullptr;
  bool ended_ = false;
};

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm parent, int ring_position, const NcclOptions& options)
    : mpi_(std::make_unique<MpiCommunicator>(parent, ring_position, MpiOptions{INT_MAX, options.timeout_seconds})) {
  // Each local step's failure becomes every rank's failure (same code and message), so no
  // rank goes on into a collective call that a failing one never makes.
  const MPI_Comm ring = mpi_->mpi_comm();
  double timeout = 0;
  collective::agree_on_failure(ring, [&] {
    timeout = nccl::resolve_timeout_seconds(options.timeout_seconds);
    state_ = std::make_shared<nccl::NcclCommState>(device::require_current_device(), timeout);
  });

  ncclUniqueId id{};
  collective::agree_on_failure(ring, [&] {
    if (rank() == 0) nccl::check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr);
  });
  mpi_->broadcast(&id, sizeof id, 0);

  // A rank whose init fails at once waits in the agreement below while the others wait for
  // their init to complete or time out; either way every rank leaves with the same verdict.
  try {
    collective::agree_on_failure(ring, [&] { state_->init(size(), id, rank()); });
  } catch (...) {
    state_->abort("creation failed");  // do not finalize a communicator the peers gave up on
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() = default;  // NcclCommState finalizes, never throws

void* NcclCommunicator::communication_stream() const { return state_->stream(); }
int NcclCommunicator::device() const { return state_->device(); }
double NcclCommunicator::timeout_seconds() const { return state_->timeout_seconds(); }

template <class Enqueue>
std::unique_ptr<detail::PendingExchange> NcclCommunicator::launch(const std::string& what, Enqueue&& enqueue) {
  state_->require_usable(what);
  device::ScopedDevice on_device(state_->device());
  const Clock::time_point started = Clock::now();
  const auto compute = static_cast<cudaStream_t>(compute_stream_);
  const cudaStream_t stream = state_->stream();
  try {
    check_cuda(cudaEventRecord(state_->compute_ready_event(), compute), "cudaEventRecord (compute ready)");
    check_cuda(cudaStreamWaitEvent(stream, state_->compute_ready_event(), 0),
               "cudaStreamWaitEvent (communication after compute)");
    enqueue(stream);
    // Nonblocking NCCL may still be issuing the group; nothing else may be called before.
    state_->wait_until_settled(what, deadline_after(started, state_->timeout_seconds()));
    auto done = std::make_unique<device::CudaEvent>();
    check_cuda(cudaEventRecord(done->get(), stream), "cudaEventRecord (communication done)");
    return std::make_unique<nccl::NcclPendingOperation>(state_, std::move(done), compute, what, started);
  } catch (const Error& e) {
    // Part of the operation may be queued on this rank and not on its peers: the
    // communicator cannot be used safely any more.
    state_->abort(e.what());
    throw;
  }
}

Exchange NcclCommunicator::start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) {
  require(hops >= 1, "start_shift_exchange: hops must be at least 1, got ", hops);
  if (bytes == 0) return Exchange();
  require_device_buffer(send, bytes, "start_shift_exchange", "the send buffer");
  require_device_buffer(recv, bytes, "start_shift_exchange", "the receive buffer");
  const auto* s = static_cast<const unsigned char*>(send);
  const auto* r = static_cast<const unsigned char*>(recv);
  require(s + bytes <= r || r + bytes <= s, "start_shift_exchange: the send and receive buffers overlap");

  const int to = ahead(hops), from = behind(hops);
  const std::string what = "ring exchange #" + std::to_string(exchanges_started_) + " (" + std::to_string(bytes) +
                           " bytes to ring position " + std::to_string(to) + ", from " + std::to_string(from) + ")";
  ++exchanges_started_;
  auto pending = launch(what, [&](cudaStream_t stream) {
    if (to == rank()) {
      check_cuda(cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDeviceToDevice, stream),
                 "cudaMemcpyAsync (self exchange)");
      return;
    }
    ncclComm_t comm = state_->comm();
    // One group: NCCL posts both sides together, so the ring cannot deadlock on the order of
    // sends and receives, and P = 2 (to == from) is one bidirectional transfer.
    NcclGroup group(*state_);
    group.add(ncclSend(send, bytes, ncclUint8, to, comm, stream), "ncclSend");
    group.add(ncclRecv(recv, bytes, ncclUint8, from, comm, stream), "ncclRecv");
    group.end();
  });
  return Exchange(std::move(pending));
}

void NcclCommunicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  start_allgather(send, recv, bytes_per_rank).wait();
}

Exchange NcclCommunicator::start_allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return Exchange();
  require_device_buffer(send, bytes_per_rank, "allgather", "the send buffer");
  const std::size_t total = total_bytes(std::size_t(size()), bytes_per_rank, "allgather");
  require_device_buffer(recv, total, "allgather", "the receive buffer");
  return Exchange(
      launch("allgather of " + std::to_string(bytes_per_rank) + " bytes per rank", [&](cudaStream_t stream) {
        if (size() == 1) {
          if (send != recv) {
            check_cuda(cudaMemcpyAsync(recv, send, bytes_per_rank, cudaMemcpyDeviceToDevice, stream),
                       "cudaMemcpyAsync");
          }
          return;
        }
        state_->check_call(ncclAllGather(send, recv, bytes_per_rank, ncclUint8, state_->comm(), stream),
                           "ncclAllGather");
      }));
}

void NcclCommunicator::alltoall(const void* send, void* recv, std::size_t bytes_per_pair) {
  if (bytes_per_pair == 0) return;
  const std::size_t total = total_bytes(std::size_t(size()), bytes_per_pair, "alltoall");
  require_device_buffer(send, total, "alltoall", "the send buffer");
  require_device_buffer(recv, total, "alltoall", "the receive buffer");
  const auto* s = static_cast<const unsigned char*>(send);
  auto* r = static_cast<unsigned char*>(recv);
  require(s + total <= r || r + total <= s, "alltoall: the send and receive buffers overlap");
  launch("alltoall of " + std::to_string(bytes_per_pair) + " bytes per pair", [&](cudaStream_t stream) {
    const std::size_t own = std::size_t(rank()) * bytes_per_pair;
    // Our own block is a local copy; NCCL moves only what crosses ranks.
    check_cuda(cudaMemcpyAsync(r + own, s + own, bytes_per_pair, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
    if (size() == 1) return;
    ncclComm_t comm = state_->comm();
    NcclGroup group(*state_);
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == rank()) continue;
      const std::size_t offset = std::size_t(peer) * bytes_per_pair;
      group.add(ncclSend(s + offset, bytes_per_pair, ncclUint8, peer, comm, stream), "ncclSend");
      group.add(ncclRecv(r + offset, bytes_per_pair, ncclUint8, peer, comm, stream), "ncclRecv");
    }
    group.end();
  })->wait();
}

void NcclCommunicator::alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets,
                                 void* recv, const std::size_t* recv_bytes, const std::size_t* recv_offsets) {
  require(send_bytes && send_offsets && recv_bytes && recv_offsets, "alltoallv: a count or offset array is null");
  const auto* s = static_cast<const unsigned char*>(send);
  auto* r = static_cast<unsigned char*>(recv);
  for (int peer = 0; peer < size(); ++peer) {
    if (send_bytes[peer] > 0)
      require_device_buffer(s + send_offsets[peer], send_bytes[peer], "alltoallv", "the send buffer");
    if (recv_bytes[peer] > 0)
      require_device_buffer(r + recv_offsets[peer], recv_bytes[peer], "alltoallv", "the receive buffer");
  }
  const int me = rank();
  require(send_bytes[me] == recv_bytes[me], "alltoallv: this rank sends itself ", send_bytes[me], " bytes but expects ",
          recv_bytes[me]);
  launch("alltoallv", [&](cudaStream_t stream) {
    if (send_bytes[me] > 0) {
      check_cuda(
          cudaMemcpyAsync(r + recv_offsets[me], s + send_offsets[me], send_bytes[me], cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync");
    }
    if (size() == 1) return;
    ncclComm_t comm = state_->comm();
    NcclGroup group(*state_);
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == me) continue;
      if (send_bytes[peer] > 0)
        group.add(ncclSend(s + send_offsets[peer], send_bytes[peer], ncclUint8, peer, comm, stream), "ncclSend");
      if (recv_bytes[peer] > 0)
        group.add(ncclRecv(r + recv_offsets[peer], recv_bytes[peer], ncclUint8, peer, comm, stream), "ncclRecv");
    }
    group.end();
  })->wait();
}

void NcclCommunicator::reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) {
  if (count_per_rank == 0) return;
  const std::size_t bytes = count_per_rank * sizeof(float);
  require_device_buffer(send, total_bytes(std::size_t(size()), bytes, "reduce_scatter_sum"), "reduce_scatter_sum",
                        "the send buffer");
  require_device_buffer(recv, bytes, "reduce_scatter_sum", "the receive buffer");
  launch("reduce_scatter_sum of " + std::to_string(count_per_rank) + " floats per rank", [&](cudaStream_t stream) {
    state_->check_call(ncclReduceScatter(send, recv, count_per_rank, ncclFloat32, ncclSum, state_->comm(), stream),
                       "ncclReduceScatter");
  })->wait();
}

bool NcclCommunicator::has_abandoned_transfers() const { return state_->aborted() || mpi_->has_abandoned_transfers(); }

void NcclCommunicator::allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) {
  mpi_->allreduce_inplace(values, count, op);
}

void NcclCommunicator::broadcast(void* buffer, std::size_t bytes, int root) {
  require(root >= 0 && root < size(), "broadcast: root ", root, " is not a ring position (0..", size() - 1, ")");
  if (bytes == 0 || size() == 1) return;
  require_device_buffer(buffer, bytes, "broadcast", "the buffer");
  launch("broadcast of " + std::to_string(bytes) + " bytes from ring position " + std::to_string(root),
         [&](cudaStream_t stream) {
           state_->check_call(ncclBroadcast(buffer, buffer, bytes, ncclUint8, root, state_->comm(), stream),
                              "ncclBroadcast");
         })
      ->wait();
}

void NcclCommunicator::barrier() { mpi_->barrier(); }

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm parent, int ring_position, const NcclOptions& options) {
  return std::make_unique<NcclCommunicator>(parent, ring_position, options);
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int position) {
  NcclOptions options;
  options.timeout_seconds = state_->timeout_seconds();
  return mpi::with_group(mpi_->mpi_comm(), color, rank(), [&](MPI_Comm group) -> std::unique_ptr<Communicator> {
    return std::make_unique<NcclCommunicator>(group, position, options);
  });
}

}  // namespace rfa::comm
