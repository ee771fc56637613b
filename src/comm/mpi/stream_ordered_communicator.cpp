// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/stream_ordered_communicator.hpp"

#include <cuda_runtime_api.h>

#include "device/cuda_error.hpp"

namespace rfa::comm {
namespace {

class StreamOrderedCommunicator final : public Communicator {
 public:
  explicit StreamOrderedCommunicator(std::unique_ptr<Communicator> mpi) : mpi_(std::move(mpi)) {}

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const char* backend_name() const override { return "mpi-cuda-aware"; }
  bool accepts(MemoryKind kind) const override { return kind == MemoryKind::device; }

  Exchange start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) override {
    drain_compute();
    return mpi_->start_shift_exchange(send, recv, bytes, hops);
  }
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override {
    drain_compute();
    mpi_->allgather(send, recv, bytes_per_rank);
  }
  void alltoall(const void* send, void* recv, std::size_t bytes_per_pair) override {
    drain_compute();
    mpi_->alltoall(send, recv, bytes_per_pair);
  }
  void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets, void* recv,
                 const std::size_t* recv_bytes, const std::size_t* recv_offsets) override {
    drain_compute();
    mpi_->alltoallv(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets);
  }
  void reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) override {
    drain_compute();
    mpi_->reduce_scatter_sum(send, recv, count_per_rank);
  }
  std::unique_ptr<Communicator> split(int color, int position) override {
    auto child = std::make_unique<StreamOrderedCommunicator>(mpi_->split(color, position));
    child->stream_ = stream_;
    return child;
  }
  void allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) override {
    mpi_->allreduce_inplace(values, count, op);  // host values
  }
  void broadcast(void* buffer, std::size_t bytes, int root) override {
    drain_compute();
    mpi_->broadcast(buffer, bytes, root);
  }
  void barrier() override { mpi_->barrier(); }
  void set_compute_stream(void* cuda_stream) override { stream_ = static_cast<cudaStream_t>(cuda_stream); }
  bool has_abandoned_transfers() const override { return mpi_->has_abandoned_transfers(); }
  void begin_call(const CallStamp& stamp) override {
    Communicator::begin_call(stamp);
    mpi_->begin_call(stamp);
  }

 private:
  void drain_compute() { device::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (compute stream)"); }

  std::unique_ptr<Communicator> mpi_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_stream_ordered_communicator(std::unique_ptr<Communicator> mpi) {
  return std::make_unique<StreamOrderedCommunicator>(std::move(mpi));
}

}  // namespace rfa::comm
