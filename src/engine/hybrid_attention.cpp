// SPDX-License-Identifier: BSD-3-Clause
// The hybrid schedule (engine/hybrid_attention.hpp): the Ulysses all-to-all inside a group
// around the ring engine across groups; Ulysses is its grid of one group.
#include "engine/hybrid_attention.hpp"

#include <algorithm>
#include <exception>
#include <type_traits>
#include <variant>

#include "comm/agreement.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/head_exchange.hpp"
#include "engine/pass_timings.hpp"
#include "engine/rank_positions.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/workspace.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {
namespace {

// Agreement and the grid's rules before anything is split, on every rank together.
const AttentionConfig& validated(comm::Communicator& comm, const AttentionConfig& c, const StrategyChoice& choice) {
  agree_on_strategy(comm, c, choice);
  return c;
}

/// Ranks per Ulysses group: all of them for Ulysses.
int degree_of(const StrategyChoice& choice, int ranks) {
  return choice.kind == StrategyKind::ulysses ? ranks : choice.ulysses_degree;
}

/// Rows [first, first + count) of `map`, in its order: no more segments than the map has.
PositionMap slice_rows(const PositionMap& map, std::int64_t first, std::int64_t count) {
  PositionMap out;
  std::int64_t base = 0;
  for (int s = 0; s < map.count; ++s) {
    const Segment& seg = map.seg[s];
    const std::int64_t a = first > base ? first : base;
    const std::int64_t b = first + count < base + seg.length ? first + count : base + seg.length;
    if (a < b) out.seg[out.count++] = Segment{seg.start + (a - base) * seg.stride, seg.stride, b - a};
    base += seg.length;
  }
  return out;
}

/// The ring's problem: this group's heads (H/Pu) and K/V slots over the whole sequence. A ring
/// of one group holds the sequence in global order, whatever the layout.
AttentionConfig ring_of_groups(const AttentionConfig& c, const HeadRouting& routing, int rings) {
  AttentionConfig r = c;
  r.heads = routing.heads_per_rank();
  r.kv_heads = routing.slots();
  if (rings == 1) r.layout = RFA_LAYOUT_CONTIGUOUS;
  return r;
}

}  // namespace

HybridAttention::HybridAttention(comm::Communicator& comm, const AttentionConfig& config, const StrategyChoice& choice)
    : EngineState(comm, validated(comm, config, choice)),
      degree_(degree_of(choice, comm.size())),
      routing_(config.heads, config.kv_heads, degree_) {
  const int p = comm_.rank();
  // A split agrees on failure only among the ranks of one new group (an NCCL communicator that
  // cannot be made there): every rank learns of it before the next split, which all must reach.
  comm::check_everywhere(comm_, [&] { group_ = comm_.split(p / degree_, p % degree_); });
  comm::check_everywhere(comm_, [&] { rings_ = comm_.split(p % degree_, p / degree_); });
  host_workspace_.watch(group_.get());  // the all-to-alls write into this engine's workspace
#if RFA_ENGINE_CUDA
  device_cache_.watch(group_.get());
  device_cache_.watch(rings_.get());  // the inner ring's first step sends the gathered K/V kept here
#endif
  // The ring's checks agree over all P ranks: a buffer refused in one ring group stops every
  // group before any of them computes (each group would otherwise compute its whole ring
  // before the failure reached it).
  ring_ = std::make_unique<RingAttention>(*rings_, ring_of_groups(config_, routing_, rings_->size()), &comm_);
  ring_->share_host_workspace(*this);  // the ring runs only inside this engine's calls
  local_seq_ = ring_->local_seq() / degree_;
  host_exchange_ = std::make_unique<HeadExchange<Kokkos::HostSpace>>(*group_, routing_, group_slices(), config_.batch,
                                                                     config_.head_dim, config_.dv());
#if RFA_ENGINE_CUDA
  if (config_.device == Device::cuda) {
    // Agreed: a rank whose device cannot take the exchange's index lists fails every rank.
    comm::check_everywhere(comm_, [&] {
      try {
        device_exchange_ = std::make_unique<HeadExchange<Kokkos::CudaSpace>>(
            *group_, routing_, group_slices(), config_.batch, config_.head_dim, config_.dv());
      } catch (const std::exception& e) {  // Kokkos reports allocation and copy failures so
        fail(RFA_ERROR_CUDA, "copying the head exchange's index lists to the device failed: ", e.what());
      }
    });
  }
#endif
}

HybridAttention::~HybridAttention() {
#if RFA_ENGINE_CUDA
  // Kernels of the last device call may still read or write the cached workspace. It is
  // released (or set aside, if the group's transfers were abandoned) while the group lives.
  if (config_.device == Device::cuda) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(cuda_stream_));
    device_cache_.release();
  }
#endif
}

void HybridAttention::set_cuda_stream(void* stream) {
  EngineState::set_cuda_stream(stream);
  ring_->set_cuda_stream(stream);
}

PositionMap HybridAttention::local_positions() const {
  if (rings_->size() == 1) return rank_positions(config_, degree_, group_->rank());
  return slice_rows(ring_->local_positions(), group_->rank() * local_seq_, local_seq_);
}

std::vector<PositionMap> HybridAttention::group_slices() const {
  std::vector<PositionMap> rows;
  for (int s = 0; s < degree_; ++s) {
    if (rings_->size() == 1) {
      rows.push_back(rank_positions(config_, degree_, s));
    } else {
      rows.push_back(PositionMap::contiguous(s * local_seq_, local_seq_));
    }
  }
  return rows;
}

std::int64_t HybridAttention::workspace_bytes(bool backward) const {
  const AttentionConfig& c = config_;
  const std::int64_t E = std::int64_t(dtype_size(c.dtype));
  // q and o: this rank's query-shaped tensors in Q's and in V's head dim; kvs: the full-rows K and
  // V of its slots together; kv: its own rows of K and V together; a staging buffer takes the
  // query-shaped exchange in the larger head dim.
  const std::int64_t q = c.batch * local_seq_ * c.heads * c.head_dim;
  const std::int64_t o = c.batch * local_seq_ * c.heads * c.dv();
  const std::int64_t stage = c.batch * local_seq_ * c.heads * std::max(c.head_dim, c.dv());
  const std::int64_t kvs = c.batch * ring_->local_seq() * routing_.slots() * (c.head_dim + c.dv());
  const std::int64_t kv = c.batch * local_seq_ * c.kv_heads * (c.head_dim + c.dv());
  const std::int64_t rows = c.batch * c.heads * local_seq_;
  const std::int64_t ring = ring_->workspace_bytes(backward, true);
  if (!backward) return ring + E * (2 * stage + q + kvs + o) + 4 * 3 * rows;
  const std::int64_t g = host_exchange_->key_staging_elems();
  return ring + E * (2 * stage + q + 2 * o + kvs) + 4 * (q + kvs + 2 * g + kv + 3 * rows);
}

void HybridAttention::add_ring_timings() {
  const PassTimings& r = ring_->last_timings();
  timings_.compute += r.compute;
  timings_.compute_cpu += r.compute_cpu;
  timings_.wait += r.wait;
  timings_.steps_computed += r.steps_computed;
  timings_.steps_on_cudnn += r.steps_on_cudnn;
  timings_.bytes_sent += r.bytes_sent;
  last_workspace_bytes_ += ring_->last_workspace_bytes();
}

template <>
HeadExchange<Kokkos::HostSpace>& HybridAttention::exchange<Kokkos::HostSpace>() {
  return *host_exchange_;
}
template <>
Workspace<Kokkos::HostSpace> HybridAttention::workspace<Kokkos::HostSpace>(int pass) {
  return Workspace<Kokkos::HostSpace>(host_arena(), pass);
}
#if RFA_ENGINE_CUDA
template <>
HeadExchange<Kokkos::CudaSpace>& HybridAttention::exchange<Kokkos::CudaSpace>() {
  if (!device_exchange_) fail(RFA_ERROR_INVALID_USAGE, "a device pass on a context created for the host");
  return *device_exchange_;
}
template <>
Workspace<Kokkos::CudaSpace> HybridAttention::workspace<Kokkos::CudaSpace>(int /*pass*/) {
  return Workspace<Kokkos::CudaSpace>(&device_cache_);
}
#endif

template <>
Kokkos::DefaultHostExecutionSpace HybridAttention::pass_exec<Kokkos::HostSpace>() {
  return {};
}
#if RFA_ENGINE_CUDA
template <>
Kokkos::Cuda HybridAttention::pass_exec<Kokkos::CudaSpace>() {
  group_->set_compute_stream(cuda_stream_);
  return device_exec_.on(cuda_stream_);
}
#endif

void HybridAttention::forward(const AnyForwardTensors& tensors) {
  std::visit([&](const auto& t) { run_forward(t); }, tensors);
}

void HybridAttention::backward(const AnyBackwardTensors& tensors) {
  std::visit([&](const auto& t) { run_backward(t); }, tensors);
}

template <class T, class Space>
void HybridAttention::run_forward(const ForwardTensors<T, Space>& tensors) {
  const auto &q = tensors.q, &k = tensors.k, &v = tensors.v;
  const auto& out = tensors.out;
  const auto& lse = tensors.lse;
  const auto exec = pass_exec<Space>();
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch;
  const ScopedSeconds total = begin_pass();

  Workspace<Space> ws = workspace<Space>(workspace_pass(false));
  HeadExchange<Space>& x = exchange<Space>();
  HeadShardedInputs<T, Space> full(ws, x, c.heads);
  T* send = full.stage.send.data();
  T* recv = full.stage.recv.data();
  auto lse_full = ws.template tensor3<float>("rfa::hybrid_lse", B, routing_.heads_per_rank(), x.full_rows());
  Staging<float, Space> lse_stage(ws, "rfa::lse_send", "rfa::lse_recv", B * c.heads * L);
  agree_to_run(comm_, ws, [&] { check_pass_tensors(c, L, tensors); });
  // The heads move once the inner ring's buffers (its kernels' among them) are allocated and
  // agreed over all P ranks: a buffer refused on any rank fails every rank before anything
  // moves. A failure inside the ring (a timeout, say) is agreed here too: the other groups would
  // otherwise wait for it in the all-to-all.
  const auto heads_in = [&] {
    ScopedSeconds t(timings_.wait);
    timings_.bytes_sent += x.template queries_to_heads<T>(exec, q, full.q, send, recv);
    timings_.bytes_sent += x.template keys_to_heads<T>(exec, k, full.k, send, recv);
    timings_.bytes_sent += x.template keys_to_heads<T>(exec, v, full.v, send, recv);
  };
  comm::check_everywhere(comm_, [&] {
    ring_->forward(ForwardTensors<T, Space>{full.q, full.k, full.v, full.out, lse_full}, RingMode::full, heads_in);
  });
  add_ring_timings();
  ScopedSeconds t(timings_.wait);
  timings_.bytes_sent += x.template queries_to_rows<T, T>(exec, full.out, out, send, recv);
  timings_.bytes_sent += x.lse_to_rows(exec, lse_full, lse, lse_stage.send.data(), lse_stage.recv.data());
}

template <class T, class Space>
void HybridAttention::run_backward(const StorageGradients<T, Space>& tensors) {
  const auto &q = tensors.q, &k = tensors.k, &v = tensors.v, &out = tensors.out, &dout = tensors.dout;
  const auto& lse = tensors.lse;
  const auto &dq = tensors.dq, &dk = tensors.dk, &dv = tensors.dv;
  const auto exec = pass_exec<Space>();
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, D = c.head_dim, DV = c.dv();
  const ScopedSeconds total = begin_pass();

  Workspace<Space> ws = workspace<Space>(workspace_pass(true));
  HeadExchange<Space>& x = exchange<Space>();
  const std::int64_t rows = x.full_rows(), hp = routing_.heads_per_rank(), slots = routing_.slots();
  HeadShardedInputs<T, Space> full(ws, x, c.heads);
  T* send = full.stage.send.data();
  T* recv = full.stage.recv.data();
  auto dout_full = ws.template tensor4<T>("rfa::hybrid_dout", B, rows, hp, DV);
  // The ring's gradients in fp32: dQ is rounded once, on its way home; dK/dV partials of a
  // K/V head shared by several ranks are summed on arrival.
  auto dq_full = ws.template tensor4<float>("rfa::hybrid_dq", B, rows, hp, D);
  auto dk_full = ws.template tensor4<float>("rfa::hybrid_dk", B, rows, slots, D);
  auto dv_full = ws.template tensor4<float>("rfa::hybrid_dv", B, rows, slots, DV);
  Staging<float, Space> grad_stage(ws, "rfa::grad_send", "rfa::grad_recv", x.key_staging_elems());
  auto dk_acc = ws.template tensor4<float>("rfa::dk_acc", B, L, c.kv_heads, D);
  auto dv_acc = ws.template tensor4<float>("rfa::dv_acc", B, L, c.kv_heads, DV);
  auto lse_full = ws.template tensor3<float>("rfa::hybrid_lse", B, hp, rows);
  Staging<float, Space> lse_stage(ws, "rfa::lse_send", "rfa::lse_recv", B * c.heads * L);
  agree_to_run(comm_, ws, [&] { check_pass_tensors(c, L, tensors); });
  const auto heads_in = [&] {  // as in forward: moved once the inner ring's buffers are agreed
    ScopedSeconds t(timings_.wait);
    timings_.bytes_sent += x.template queries_to_heads<T>(exec, q, full.q, send, recv);
    timings_.bytes_sent += x.template keys_to_heads<T>(exec, k, full.k, send, recv);
    timings_.bytes_sent += x.template keys_to_heads<T>(exec, v, full.v, send, recv);
    timings_.bytes_sent += x.template queries_to_heads<T>(exec, out, full.out, send, recv);
    timings_.bytes_sent += x.template queries_to_heads<T>(exec, dout, dout_full, send, recv);
    // lse is only read: lse_to_heads takes a non-const view type.
    SpaceTensor3<float, Space> lse_in(const_cast<float*>(lse.data()), B, c.heads, L);
    timings_.bytes_sent += x.lse_to_heads(exec, lse_in, lse_full, lse_stage.send.data(), lse_stage.recv.data());
  };
  comm::check_everywhere(comm_, [&] {  // as in forward: a group's failure reaches every group
    ring_->backward_fp32_gradients(
        Fp32Gradients<T, Space>{full.q, full.k, full.v, full.out, dout_full, lse_full, dq_full, dk_full, dv_full},
        heads_in);
  });
  add_ring_timings();
  ScopedSeconds t(timings_.wait);
  timings_.bytes_sent += x.template queries_to_rows<float, T>(exec, dq_full, dq, send, recv);
  timings_.bytes_sent += x.keys_to_rows(exec, dk_full, dk_acc, grad_stage.send.data(), grad_stage.recv.data());
  timings_.bytes_sent += x.keys_to_rows(exec, dv_full, dv_acc, grad_stage.send.data(), grad_stage.recv.data());
  convert_elements<typename Space::execution_space, T>(exec, dk_acc, dk);
  convert_elements<typename Space::execution_space, T>(exec, dv_acc, dv);
}

}  // namespace engine
}  // namespace rfa
