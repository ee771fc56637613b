// SPDX-License-Identifier: BSD-3-Clause
#include "comm/staged/staged_communicator.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collective/deadline.hpp"
#include "core/error.hpp"
#include "core/kept_for_process.hpp"
#include "core/polling.hpp"

namespace rfa::comm {
namespace staged {

/// Pinned buffers by size; what is released is kept for the next exchange, but for a buffer
/// released after the host transport abandoned transfers (a timeout): MPI may still read or
/// write it for a late rank, so it is set aside for the life of the process instead of reused
/// or freed.
class PinnedPool {
 public:
  explicit PinnedPool(StagingDevice& device) : device_(device) {}
  ~PinnedPool() {
    for (auto& [bytes, p] : free_) device_.free_host(p);
  }
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  void* acquire(std::size_t bytes) {
    auto it = free_.lower_bound(bytes);  // the smallest buffer that is large enough
    if (it != free_.end()) {
      void* p = it->second;
      sizes_[p] = it->first;
      free_.erase(it);
      return p;
    }
    void* p = device_.allocate_host(bytes);
    sizes_[p] = bytes;
    held_ += bytes;
    return p;
  }
  void release(void* p, bool transfers_abandoned) {
    if (!p) return;
    const std::size_t bytes = sizes_.at(p);
    sizes_.erase(p);
    if (transfers_abandoned) {
      keep_for_process(p);
      held_ -= bytes;
      return;
    }
    free_.emplace(bytes, p);
  }
  std::size_t held() const { return held_; }

 private:
  StagingDevice& device_;
  std::multimap<std::size_t, void*> free_;
  std::map<void*, std::size_t> sizes_;  // buffers handed out
  std::size_t held_ = 0;
};

class StagedExchange;

/// What the communicator and its exchanges share.
class StagingState {
 public:
  /// `copy_timeout_s`: how long a copy between the device and pinned memory may stay pending
  /// (seconds; 0: no deadline).
  StagingState(std::unique_ptr<Communicator> host, std::unique_ptr<StagingDevice> device, double copy_timeout_s)
      : host_(std::move(host)), device_(std::move(device)), pool_(*device_), copy_timeout_s_(copy_timeout_s) {}

  Communicator& host() { return *host_; }
  StagingDevice& device() { return *device_; }
  PinnedPool& pool() { return pool_; }
  /// Whether transfers that may still write somewhere were given up: by the host transport
  /// (a timeout there), or here (a copy that outlived its deadline may still land).
  bool transfers_abandoned() const { return host_->has_abandoned_transfers() || !copy_timed_out_.empty(); }
  /// Gives a pinned buffer back: to the pool, or aside where transfers that may still use it
  /// were abandoned.
  void release_pinned(void* p) { pool_.release(p, transfers_abandoned()); }

  /// When a copy queued now must have completed (never where there is no deadline).
  Clock::time_point copy_deadline() const {
    return copy_timeout_s_ > 0.0 ? deadline_after(Clock::now(), copy_timeout_s_) : Clock::time_point::max();
  }
  /// Throws RFA_ERROR_TIMEOUT where a pending copy (`what`) is past its `deadline`. A copy
  /// waits for the kernels queued before it, so one that never ends means a kernel or the device
  /// that never does: without the deadline every rank would wait for it for good. The transport
  /// is unusable afterwards, and what the copy may still write (its pinned buffer, the device
  /// buffer) is never reused (transfers_abandoned()).
  void check_copy_deadline(Clock::time_point deadline, const char* what) {
    if (Clock::now() < deadline) return;
    if (copy_timed_out_.empty())
      copy_timed_out_ = std::string(what) + " did not complete within " + collective::seconds_text(copy_timeout_s_);
    fail(RFA_ERROR_TIMEOUT, "rfa: ", copy_timed_out_,
         ": the GPU work queued before it has not finished (a kernel still running or stuck, or a device that stopped "
         "answering; options.timeout_s or RFA_TIMEOUT_S sets the deadline). The transport is unusable from now on; "
         "destroy the context");
  }
  double copy_timeout_s() const { return copy_timeout_s_; }
  /// Refuses new work after a copy timed out (RFA_ERROR_INVALID_USAGE).
  void require_usable(const char* what) const {
    if (!copy_timed_out_.empty())
      fail(RFA_ERROR_INVALID_USAGE, what, ": this staged transport is unusable since ", copy_timed_out_,
           "; only destroying it is allowed");
  }

  void started(StagedExchange* e) {
    unposted_.push_back(e);
    live_.push_back(e);
  }
  void finished(StagedExchange* e) {
    live_.erase(std::remove(live_.begin(), live_.end(), e), live_.end());
    unposted_.erase(std::remove(unposted_.begin(), unposted_.end(), e), unposted_.end());
  }
  /// Advances every live exchange (posting to the host transport in start order).
  void progress();
  /// Whether every live exchange has been handed to the host transport.
  bool all_posted() const { return unposted_.empty(); }
  /// Hands every exchange started so far to the host transport (waiting for their copies off
  /// the device), so that a collective called now reaches it after them on every rank, as the
  /// ranks called them: an all-gather still being copied off the device would otherwise be
  /// posted after the collective on one rank and before it on another.
  void post_started();
  void complete_all() noexcept;

 private:
  std::unique_ptr<Communicator> host_;
  std::unique_ptr<StagingDevice> device_;
  PinnedPool pool_;
  double copy_timeout_s_;
  std::string copy_timed_out_;            // what timed out; empty while none has
  std::deque<StagedExchange*> unposted_;  // in start order
  std::vector<StagedExchange*> live_;
  friend class StagedExchange;
};

/// A transfer through pinned host buffers: `send_bytes` copied off the device, moved by the host
/// transport (a shift exchange, an all-gather), `recv_bytes` copied onto it.
class StagedExchange final : public detail::PendingExchange {
 public:
  enum class Phase { copying_out, queued, sending, copying_in, done };
  /// Starts the host transport's part on the pinned copies.
  using HostStart = std::function<Exchange(Communicator& host, const void* send, void* recv)>;

  StagedExchange(std::shared_ptr<StagingState> state, const void* send, std::size_t send_bytes, void* recv,
                 std::size_t recv_bytes, HostStart host_start)
      : state_(std::move(state)), recv_(recv), recv_bytes_(recv_bytes), host_start_(std::move(host_start)) {
    PinnedPool& pool = state_->pool();
    host_send_ = pool.acquire(send_bytes);
    try {
      host_recv_ = pool.acquire(recv_bytes);
      // The compute work the exchange comes after: what produced the send buffer, and what may
      // still read the receive buffer; not the kernels queued after it starts.
      started_after_ = state_->device().mark_compute();
      out_ = state_->device().copy_to_host(host_send_, send, send_bytes, *started_after_);
      copy_deadline_ = state_->copy_deadline();
    } catch (...) {
      state_->release_pinned(host_send_);
      state_->release_pinned(host_recv_);
      throw;
    }
    state_->started(this);
  }

  ~StagedExchange() override {
    // Once the host transport gave a transfer up, the others are given up at once too (their
    // host exchanges abandon themselves as they end), as the host transport's own are: waiting
    // for each would add a deadline per exchange in flight. So they are after a copy timed out.
    if (state_->transfers_abandoned()) {
      host_exchange_ = Exchange();
    } else {
      try {
        wait();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rfa: a staged ring exchange failed while its handle was destroyed: %s\n", e.what());
      }
    }
    state_->finished(this);
    state_->release_pinned(host_send_);
    state_->release_pinned(host_recv_);
  }

  bool test() override {
    state_->progress();
    return phase_ == Phase::done;
  }

  void wait() override {
    while (!test()) {
      // While the host transport is in flight and every exchange started has reached it, block
      // in it rather than spin. Blocking while a later exchange is still coming off the device
      // would keep that one off the wire until this one ends (a ring step's V behind its K).
      if (phase_ == Phase::sending && state_->all_posted())
        host_exchange_.wait();
      else
        std::this_thread::yield();
    }
  }

  Phase phase() const { return phase_; }

  /// One step of this exchange's own state machine (posting is StagingState's job). Throws
  /// RFA_ERROR_TIMEOUT where its copy has been pending past the deadline.
  void advance() {
    if (phase_ == Phase::copying_out) {
      if (!out_->done()) return state_->check_copy_deadline(copy_deadline_, "a staged exchange's copy off the device");
      out_.reset();
      phase_ = Phase::queued;
    }
    if (phase_ == Phase::sending && host_exchange_.test()) {
      in_ = state_->device().copy_to_device(recv_, host_recv_, recv_bytes_, *started_after_);
      copy_deadline_ = state_->copy_deadline();
      phase_ = Phase::copying_in;
    }
    if (phase_ == Phase::copying_in) {
      if (!in_->done()) return state_->check_copy_deadline(copy_deadline_, "a staged exchange's copy onto the device");
      in_.reset();
      phase_ = Phase::done;
    }
  }

  void post() {
    host_exchange_ = host_start_(state_->host(), host_send_, host_recv_);
    phase_ = Phase::sending;
  }

 private:
  std::shared_ptr<StagingState> state_;
  void* recv_;
  std::size_t recv_bytes_;
  HostStart host_start_;
  void* host_send_ = nullptr;
  void* host_recv_ = nullptr;
  std::unique_ptr<ComputeMark> started_after_;
  std::unique_ptr<CopyTicket> out_, in_;
  Clock::time_point copy_deadline_;  // of the pending copy (out_ or in_)
  Exchange host_exchange_;
  Phase phase_ = Phase::copying_out;
};

void StagingState::progress() {
  // Copies may complete in any order; the host transport must see the exchanges in start order.
  for (StagedExchange* e : live_) e->advance();
  while (!unposted_.empty() && unposted_.front()->phase() == StagedExchange::Phase::queued) {
    unposted_.front()->post();
    unposted_.pop_front();
  }
  for (StagedExchange* e : live_) e->advance();
}

void StagingState::post_started() {
  for (progress(); !unposted_.empty(); progress()) std::this_thread::yield();
}

void StagingState::complete_all() noexcept {
  if (transfers_abandoned()) return;  // each exchange gives itself up as it ends
  for (StagedExchange* e : std::vector<StagedExchange*>(live_)) {
    try {
      e->wait();
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "rfa: a staged ring exchange failed at shutdown: %s\n", ex.what());
    }
  }
}

/// A blocking round trip through pinned memory for the collectives.
class StagedBuffer {
 public:
  /// Its copies come after the compute work queued when it is made: the collective's start (a
  /// blocking collective queues no kernel between its copies).
  StagedBuffer(StagingState& s, std::size_t bytes)
      : s_(s), after_(s.device().mark_compute()), p_(s.pool().acquire(bytes)) {}
  ~StagedBuffer() { s_.release_pinned(p_); }
  StagedBuffer(const StagedBuffer&) = delete;
  StagedBuffer& operator=(const StagedBuffer&) = delete;
  void* get() const { return p_; }

  /// `bytes` between the device and this buffer, at byte `at` of the buffer.
  void from_device(const void* src, std::size_t bytes, std::size_t at = 0) {
    finish(s_.device().copy_to_host(static_cast<unsigned char*>(p_) + at, src, bytes, *after_),
           "a staged collective's copy off the device");
  }
  void to_device(void* dst, std::size_t bytes, std::size_t at = 0) {
    finish(s_.device().copy_to_device(dst, static_cast<unsigned char*>(p_) + at, bytes, *after_),
           "a staged collective's copy onto the device");
  }

 private:
  void finish(std::unique_ptr<CopyTicket> t, const char* what) {
    const Clock::time_point deadline = s_.copy_deadline();
    while (!t->done()) {
      s_.check_copy_deadline(deadline, what);
      std::this_thread::yield();
    }
  }
  StagingState& s_;
  std::unique_ptr<ComputeMark> after_;  // taken before the pinned buffer, which nothing would release if it threw
  void* p_;
};

}  // namespace staged

StagedCommunicator::StagedCommunicator(std::unique_ptr<Communicator> host, std::unique_ptr<StagingDevice> device,
                                       double timeout_s)
    : state_(std::make_shared<staged::StagingState>(std::move(host), std::move(device),
                                                    collective::resolve_timeout(timeout_s))) {}

StagedCommunicator::~StagedCommunicator() { state_->complete_all(); }

int StagedCommunicator::rank() const { return state_->host().rank(); }
int StagedCommunicator::size() const { return state_->host().size(); }

Exchange StagedCommunicator::start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) {
  state_->require_usable("start_shift_exchange");
  require(hops >= 1, "start_shift_exchange: hops must be at least 1, got ", hops);
  if (bytes == 0) return Exchange();
  require(send && recv, "start_shift_exchange: null buffer");
  auto e = std::make_unique<staged::StagedExchange>(state_, send, bytes, recv, bytes,
                                                    [bytes, hops](Communicator& host, const void* s, void* r) {
                                                      return host.start_shift_exchange(s, r, bytes, hops);
                                                    });
  state_->progress();
  return Exchange(std::move(e));
}

Exchange StagedCommunicator::start_allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  state_->require_usable("start_allgather");
  if (bytes_per_rank == 0) return Exchange();
  require(send && recv, "start_allgather: null buffer");
  auto e =
      std::make_unique<staged::StagedExchange>(state_, send, bytes_per_rank, recv, bytes_per_rank * std::size_t(size()),
                                               [bytes_per_rank](Communicator& host, const void* s, void* r) {
                                                 return host.start_allgather(s, r, bytes_per_rank);
                                               });
  state_->progress();
  return Exchange(std::move(e));
}

void StagedCommunicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  start_allgather(send, recv, bytes_per_rank).wait();
}

void StagedCommunicator::alltoall(const void* send, void* recv, std::size_t bytes_per_pair) {
  state_->require_usable("alltoall");
  state_->post_started();
  const std::size_t total = bytes_per_pair * std::size_t(size());
  staged::StagedBuffer in(*state_, total), out(*state_, total);
  in.from_device(send, total);
  state_->host().alltoall(in.get(), out.get(), bytes_per_pair);
  out.to_device(recv, total);
}

void StagedCommunicator::alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets,
                                   void* recv, const std::size_t* recv_bytes, const std::size_t* recv_offsets) {
  state_->require_usable("alltoallv");
  require(send_bytes && send_offsets && recv_bytes && recv_offsets, "alltoallv: a count or offset array is null");
  state_->post_started();
  const std::size_t P = std::size_t(size());
  // One pinned buffer each way, as long as the furthest range; the offsets keep their meaning.
  std::size_t send_end = 0, recv_end = 0;
  for (std::size_t r = 0; r < P; ++r) {
    if (send_bytes[r] > 0) send_end = std::max(send_end, send_offsets[r] + send_bytes[r]);
    if (recv_bytes[r] > 0) recv_end = std::max(recv_end, recv_offsets[r] + recv_bytes[r]);
  }
  staged::StagedBuffer in(*state_, std::max<std::size_t>(send_end, 1)),
      out(*state_, std::max<std::size_t>(recv_end, 1));
  const auto* s = static_cast<const unsigned char*>(send);
  for (std::size_t r = 0; r < P; ++r)
    if (send_bytes[r] > 0) in.from_device(s + send_offsets[r], send_bytes[r], send_offsets[r]);
  state_->host().alltoallv(in.get(), send_bytes, send_offsets, out.get(), recv_bytes, recv_offsets);
  auto* d = static_cast<unsigned char*>(recv);
  for (std::size_t r = 0; r < P; ++r)
    if (recv_bytes[r] > 0) out.to_device(d + recv_offsets[r], recv_bytes[r], recv_offsets[r]);
}

void StagedCommunicator::reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) {
  state_->require_usable("reduce_scatter_sum");
  state_->post_started();
  const std::size_t bytes = count_per_rank * sizeof(float), total = bytes * std::size_t(size());
  if (bytes == 0) return;
  staged::StagedBuffer in(*state_, total), out(*state_, bytes);
  in.from_device(send, total);
  state_->host().reduce_scatter_sum(static_cast<float*>(in.get()), static_cast<float*>(out.get()), count_per_rank);
  out.to_device(recv, bytes);
}

std::unique_ptr<Communicator> StagedCommunicator::split(int color, int position) {
  state_->require_usable("split");
  state_->post_started();  // MPI_Comm_split is a collective of the host communicator
  return std::make_unique<StagedCommunicator>(state_->host().split(color, position), state_->device().make_sibling(),
                                              state_->copy_timeout_s());
}

void StagedCommunicator::allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) {
  state_->require_usable("allreduce_inplace");
  state_->post_started();
  state_->host().allreduce_inplace(values, count, op);
}

void StagedCommunicator::broadcast(void* buffer, std::size_t bytes, int root) {
  state_->require_usable("broadcast");
  state_->post_started();
  staged::StagedBuffer b(*state_, bytes);
  if (rank() == root) b.from_device(buffer, bytes);
  state_->host().broadcast(b.get(), bytes, root);
  b.to_device(buffer, bytes);
}

void StagedCommunicator::barrier() {
  state_->require_usable("barrier");
  state_->post_started();
  state_->host().barrier();
}

bool StagedCommunicator::has_abandoned_transfers() const { return state_->transfers_abandoned(); }

Communicator& StagedCommunicator::host_memory() { return state_->host(); }

void StagedCommunicator::set_compute_stream(void* cuda_stream) { state_->device().set_compute_stream(cuda_stream); }

void StagedCommunicator::begin_call(const CallStamp& stamp) {
  Communicator::begin_call(stamp);
  state_->host().begin_call(stamp);
}

std::size_t StagedCommunicator::pinned_bytes() const { return state_->pool().held(); }

}  // namespace rfa::comm
