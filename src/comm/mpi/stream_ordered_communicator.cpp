// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/stream_ordered_communicator.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "collective/deadline.hpp"
#include "core/error.hpp"
#include "device/cuda_error.hpp"
#include "device/stream_wait.hpp"

namespace rfa::comm {
namespace {

class StreamOrderedCommunicator final : public Communicator {
 public:
  /// `timeout_s`: resolved (> 0 the deadline, 0 none).
  StreamOrderedCommunicator(std::unique_ptr<Communicator> mpi, double timeout_s)
      : mpi_(std::move(mpi)), timeout_s_(timeout_s) {}

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const char* backend_name() const override { return "mpi-cuda-aware"; }
  bool accepts(MemoryKind kind) const override { return kind == MemoryKind::device; }

  Exchange start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) override {
    drain_compute();
    return mpi_->start_shift_exchange(send, recv, bytes, hops);
  }
  // The collectives on device memory go point to point (MpiCommunicator::alltoallv, under the
  // deadline like every call): Open MPI's CUDA support covers point-to-point and the blocking
  // collectives, not every nonblocking one, which the host transport's collectives are.
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override {
    blocks_to_every_rank(send, false, recv, bytes_per_rank, "allgather");
  }
  void alltoall(const void* send, void* recv, std::size_t bytes_per_pair) override {
    blocks_to_every_rank(send, true, recv, bytes_per_pair, "alltoall");
  }
  void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets, void* recv,
                 const std::size_t* recv_bytes, const std::size_t* recv_offsets) override {
    drain_compute();
    mpi_->alltoallv(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets);
  }
  // MpiCommunicator's reduce-scatter adds the partial sums on the host, so the blocks go
  // through host copies: `send` is left as it was. On a timeout the copies stay with MPI,
  // never freed (a late neighbour may still write into them).
  void reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) override {
    const std::size_t P = std::size_t(size());
    require(count_per_rank <= SIZE_MAX / sizeof(float) / (P + 1), "reduce_scatter_sum: ", P, " blocks of ",
            count_per_rank, " floats overflow size_t");
    if (count_per_rank == 0) return;
    const std::size_t total = P * count_per_rank;
    collective::Parked<float> host(std::vector<float>(total + count_per_rank));
    copy(host.data(), send, total * sizeof(float), cudaMemcpyDeviceToHost);
    try {
      mpi_->reduce_scatter_sum(host.data(), host.data() + total, count_per_rank);
    } catch (...) {
      if (mpi_->has_abandoned_transfers()) host.abandon();
      throw;
    }
    copy(recv, host.data() + total, count_per_rank * sizeof(float), cudaMemcpyHostToDevice);
  }
  std::unique_ptr<Communicator> split(int color, int position) override {
    auto child = std::make_unique<StreamOrderedCommunicator>(mpi_->split(color, position), timeout_s_);
    child->stream_ = stream_;
    return child;
  }
  void allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) override {
    mpi_->allreduce_inplace(values, count, op);  // host values
  }
  void broadcast(void* buffer, std::size_t bytes, int root) override {
    require(root >= 0 && root < size(), "broadcast: root ", root, " is not a ring position (0..", size() - 1, ")");
    const std::size_t P = std::size_t(size()), me = std::size_t(rank());
    std::vector<std::size_t> send_bytes(P, 0), recv_bytes(P, 0), at(P, 0);
    if (me == std::size_t(root)) {
      for (std::size_t r = 0; r < P; ++r) send_bytes[r] = r == me ? 0 : bytes;
    } else {
      recv_bytes[std::size_t(root)] = bytes;
    }
    alltoallv(buffer, send_bytes.data(), at.data(), buffer, recv_bytes.data(), at.data());
  }
  void barrier() override { mpi_->barrier(); }
  void set_compute_stream(void* cuda_stream) override { stream_ = static_cast<cudaStream_t>(cuda_stream); }
  bool has_abandoned_transfers() const override { return stream_stuck_ || mpi_->has_abandoned_transfers(); }
  Communicator& host_memory() override { return *mpi_; }
  void begin_call(const CallStamp& stamp) override {
    Communicator::begin_call(stamp);
    mpi_->begin_call(stamp);
  }

 private:
  /// Waits for the kernels queued on the compute stream, by the deadline. After a timeout they
  /// may still write the engine's buffers: reported as abandoned transfers from then on.
  void drain_compute() {
    on_timeout(
        [&] {
          device::wait_for_stream(stream_, timeout_s_, "the CUDA-aware MPI transport's wait for the compute stream");
        },
        [&](const Error&) { stream_stuck_ = true; });
  }
  /// `bytes` to and from every rank, block r of `recv` from rank r: `send`'s block r to rank r
  /// (`per_rank`, an all-to-all), or all of `send` to every rank (an all-gather).
  void blocks_to_every_rank(const void* send, bool per_rank, void* recv, std::size_t bytes, const char* call) {
    const std::size_t P = std::size_t(size());
    require(bytes <= SIZE_MAX / P, call, ": ", P, " x ", bytes, " bytes overflows size_t");
    std::vector<std::size_t> counts(P, bytes), from(P, 0), to(P);
    for (std::size_t r = 0; r < P; ++r) {
      to[r] = r * bytes;
      if (per_rank) from[r] = to[r];
    }
    alltoallv(send, counts.data(), from.data(), recv, counts.data(), to.data());
  }
  /// On the compute stream, waited for: the kernels queued next see the bytes, and the host
  /// copy may go once this returns (a plain cudaMemcpy from pageable memory may return before
  /// the bytes land, on the legacy stream a non-blocking compute stream does not wait for).
  /// The stream is drained first, by the deadline: a copy to or from pageable memory may block
  /// until the work queued before it is done, without one.
  void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) {
    drain_compute();
    device::check_cuda(cudaMemcpyAsync(to, from, bytes, kind, stream_),
                       "cudaMemcpyAsync (staging a reduce-scatter on the host)");
    drain_compute();
  }

  std::unique_ptr<Communicator> mpi_;
  double timeout_s_;
  cudaStream_t stream_ = nullptr;
  bool stream_stuck_ = false;  // a wait for the compute stream timed out
};

}  // namespace

std::unique_ptr<Communicator> make_stream_ordered_communicator(std::unique_ptr<Communicator> mpi, double timeout_s) {
  return std::make_unique<StreamOrderedCommunicator>(std::move(mpi), collective::resolve_timeout(timeout_s));
}

}  // namespace rfa::comm
