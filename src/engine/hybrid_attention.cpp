// SPDX-License-Identifier: BSD-3-Clause
// The hybrid schedule (engine/hybrid_attention.hpp): the Ulysses all-to-all inside a group
// around the ring engine across groups.
#include "engine/hybrid_attention.hpp"

#include <type_traits>

#include "comm/agreement.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/head_exchange.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/strategy_instantiation.hpp"
#include "engine/workspace.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {
namespace {

// Agreement and the grid's rules before anything is split, on every rank together.
const RingConfig& validated(comm::Communicator& comm, const RingConfig& c, int degree) {
  require_same_config(comm, c);
  comm::require_same_everywhere(comm, {{"ulysses_degree", std::int64_t(degree)}});
  comm::check_everywhere(comm, [&] { validate_strategy({StrategyKind::hybrid, degree, 1}, c, comm.size()); });
  return c;
}

/// Rows [first, first + count) of `map`, in its order: one or two segments again.
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

/// The ring's problem: this group's heads (H/Pu) and K/V slots over the whole sequence.
RingConfig ring_of_groups(const RingConfig& c, const HeadRouting& routing) {
  RingConfig r = c;
  r.heads = routing.heads_per_rank();
  r.kv_heads = routing.slots();
  return r;
}

}  // namespace

HybridAttention::HybridAttention(comm::Communicator& comm, const RingConfig& config, int ulysses_degree)
    : comm_(comm),
      config_(validated(comm, config, ulysses_degree)),
      degree_(ulysses_degree),
      routing_(config.heads, config.kv_heads, ulysses_degree) {
  const int p = comm_.rank();
  group_ = comm_.split(p / degree_, p % degree_);
  rings_ = comm_.split(p % degree_, p / degree_);
  // The ring's checks agree over all P ranks: a buffer refused in one ring group stops every
  // group before any of them computes (each group would otherwise compute its whole ring
  // before the failure reached it).
  ring_ = std::make_unique<RingAttention>(*rings_, ring_of_groups(config_, routing_), &comm_);
  local_seq_ = ring_->local_seq() / degree_;
}

HybridAttention::~HybridAttention() = default;

PositionMap HybridAttention::local_positions() const {
  return slice_rows(ring_->local_positions(), group_->rank() * local_seq_, local_seq_);
}

std::vector<PositionMap> HybridAttention::group_slices() const {
  // Rows are indexed in the group's order (the ring's local order), not by global position.
  std::vector<PositionMap> rows;
  for (int s = 0; s < degree_; ++s) rows.push_back(PositionMap::contiguous(s * local_seq_, local_seq_));
  return rows;
}

std::int64_t HybridAttention::workspace_bytes(bool backward) const {
  const RingConfig& c = config_;
  const std::int64_t E = std::int64_t(dtype_size(c.dtype));
  const std::int64_t q = c.batch * local_seq_ * c.heads * c.head_dim;
  const std::int64_t kvs = c.batch * ring_->local_seq() * routing_.slots() * c.head_dim;
  const std::int64_t kv = c.batch * local_seq_ * c.kv_heads * c.head_dim;
  const std::int64_t rows = c.batch * c.heads * local_seq_;
  const std::int64_t ring = ring_->workspace_bytes(backward);
  if (!backward) return ring + E * (2 * q + q + 2 * kvs + q) + 4 * 3 * rows;
  const std::int64_t g = HeadExchange(*group_, routing_, group_slices(), c.batch, c.head_dim).key_staging_elems();
  return ring + E * (2 * q + 3 * q + 2 * kvs + q + 2 * kvs) + 4 * (2 * g + 2 * kv + 3 * rows);
}

void HybridAttention::add_ring_timings() {
  const RingTimings& r = ring_->last_timings();
  timings_.compute += r.compute;
  timings_.wait += r.wait;
  timings_.steps_computed += r.steps_computed;
  timings_.bytes_sent += r.bytes_sent;
  last_workspace_bytes_ += ring_->last_workspace_bytes();
}

template <class T>
void HybridAttention::forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out,
                              Tensor3<float> lse) {
  const RingConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, D = c.head_dim;
  timings_ = RingTimings();
  ScopedSeconds total(timings_.total);

  Workspace<> ws;
  HeadExchange x(*group_, routing_, group_slices(), B, D);
  HeadShardedInputs<T> full(ws, x, c.heads);
  T* send = full.stage.send.data();
  T* recv = full.stage.recv.data();
  Tensor3<float> lse_full = ws.tensor3<float>("rfa::hybrid_lse", B, routing_.heads_per_rank(), x.full_rows());
  Staging<float> lse_stage(ws, "rfa::lse_send", "rfa::lse_recv", B * c.heads * L);
  last_workspace_bytes_ = ws.bytes();
  comm::check_everywhere(comm_, [&] {
    check_forward_tensors<T>(c, L, q, k, v, out, lse);
    ws.throw_if_failed();
  });
  {
    ScopedSeconds t(timings_.wait);
    timings_.bytes_sent += x.queries_to_heads<T>(q, full.q, send, recv);
    timings_.bytes_sent += x.keys_to_heads<T>(k, full.k, send, recv);
    timings_.bytes_sent += x.keys_to_heads<T>(v, full.v, send, recv);
  }
  // The inner ring agrees only within its ring group; a failure there (a refused allocation,
  // say) must reach the other groups too, which would otherwise wait for it in the all-to-all.
  comm::check_everywhere(comm_, [&] { ring_->forward<T>(full.q, full.k, full.v, full.out, lse_full); });
  add_ring_timings();
  ScopedSeconds t(timings_.wait);
  timings_.bytes_sent += x.queries_to_rows<T, T>(full.out, out, send, recv);
  timings_.bytes_sent += x.lse_to_rows(lse_full, lse, lse_stage.send.data(), lse_stage.recv.data());
}

template <class T>
void HybridAttention::backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out,
                               Tensor4<const T> dout, Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk,
                               Tensor4<T> dv) {
  const RingConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, D = c.head_dim;
  timings_ = RingTimings();
  ScopedSeconds total(timings_.total);

  Workspace<> ws;
  HeadExchange x(*group_, routing_, group_slices(), B, D);
  const std::int64_t rows = x.full_rows(), hp = routing_.heads_per_rank(), slots = routing_.slots();
  HeadShardedInputs<T> full(ws, x, c.heads);
  T* send = full.stage.send.data();
  T* recv = full.stage.recv.data();
  Tensor4<T> dout_full = ws.tensor4<T>("rfa::hybrid_dout", B, rows, hp, D);
  Tensor4<T> dq_full = ws.tensor4<T>("rfa::hybrid_dq", B, rows, hp, D);
  Tensor4<T> dk_full = ws.tensor4<T>("rfa::hybrid_dk", B, rows, slots, D);
  Tensor4<T> dv_full = ws.tensor4<T>("rfa::hybrid_dv", B, rows, slots, D);
  Staging<float> grad_stage(ws, "rfa::grad_send", "rfa::grad_recv", x.key_staging_elems());
  Tensor4<float> dk_acc = ws.tensor4<float>("rfa::dk_acc", B, L, c.kv_heads, D);
  Tensor4<float> dv_acc = ws.tensor4<float>("rfa::dv_acc", B, L, c.kv_heads, D);
  Tensor3<float> lse_full = ws.tensor3<float>("rfa::hybrid_lse", B, hp, rows);
  Staging<float> lse_stage(ws, "rfa::lse_send", "rfa::lse_recv", B * c.heads * L);
  last_workspace_bytes_ = ws.bytes();
  comm::check_everywhere(comm_, [&] {
    check_backward_tensors<T>(c, L, q, k, v, out, dout, lse, dq, dk, dv);
    ws.throw_if_failed();
  });
  {
    ScopedSeconds t(timings_.wait);
    timings_.bytes_sent += x.queries_to_heads<T>(q, full.q, send, recv);
    timings_.bytes_sent += x.keys_to_heads<T>(k, full.k, send, recv);
    timings_.bytes_sent += x.keys_to_heads<T>(v, full.v, send, recv);
    timings_.bytes_sent += x.queries_to_heads<T>(out, full.out, send, recv);
    timings_.bytes_sent += x.queries_to_heads<T>(dout, dout_full, send, recv);
    // lse is only read: lse_to_heads takes a non-const view type.
    Tensor3<float> lse_in(const_cast<float*>(lse.data()), B, c.heads, L);
    timings_.bytes_sent += x.lse_to_heads(lse_in, lse_full, lse_stage.send.data(), lse_stage.recv.data());
  }
  comm::check_everywhere(comm_, [&] {  // as in forward: a group's failure reaches every group
    ring_->backward<T>(full.q, full.k, full.v, full.out, dout_full, lse_full, dq_full, dk_full, dv_full);
  });
  add_ring_timings();
  ScopedSeconds t(timings_.wait);
  timings_.bytes_sent += x.queries_to_rows<T, T>(dq_full, dq, send, recv);
  timings_.bytes_sent += x.keys_to_rows<T>(dk_full, dk_acc, grad_stage.send.data(), grad_stage.recv.data());
  timings_.bytes_sent += x.keys_to_rows<T>(dv_full, dv_acc, grad_stage.send.data(), grad_stage.recv.data());
  kernels::narrow<T>(dk_acc, dk);
  kernels::narrow<T>(dv_acc, dv);
}

RFA_INSTANTIATE_STRATEGY_PASSES(HybridAttention)

}  // namespace engine
}  // namespace rfa
