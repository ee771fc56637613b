// SPDX-License-Identifier: BSD-3-Clause
// The KV all-gather schedule (engine/allgather_attention.hpp).
#include "engine/allgather_attention.hpp"

#include <type_traits>

#include "engine/sequence_transpose.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/strategy_instantiation.hpp"
#include "engine/workspace.hpp"
#include "kernels/contiguous_ops.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {
namespace {

const RingConfig& validated(comm::Communicator& comm, const RingConfig& c, std::int64_t chunk) {
  validate_collective(comm, c);
  // The config is the same everywhere (just agreed), so this verdict is too.
  require(chunk >= 1 && c.kv_heads % chunk == 0, "kv_heads_per_chunk (", chunk, ") must divide kv_heads (", c.kv_heads,
          "): choose 1 (least memory) up to kv_heads (fewest, largest gathers)");
  return c;
}

/// The K/V chunks as they are gathered: chunk c is packed into its send buffer and its gather
/// started one chunk ahead; both sides are double-buffered by chunk parity.
template <class T>
class GatheredKV {
 public:
  /// Buffers sized by the context (batch, local_seq, head_dim), not by k: the caller's tensors
  /// are checked only after the workspace is allocated.
  GatheredKV(Workspace<>& ws, comm::Communicator& comm, const RingConfig& c, std::int64_t local_seq, Tensor4<const T> k,
             Tensor4<const T> v, std::int64_t chunk)
      : comm_(comm), k_(k), v_(v), chunk_(chunk) {
    const std::int64_t B = c.batch, L = local_seq, D = c.head_dim, P = comm.size(), seq_total = c.seq_total;
    const char* names[2][4] = {{"rfa::k_send0", "rfa::v_send0", "rfa::k_gather0", "rfa::v_gather0"},
                               {"rfa::k_send1", "rfa::v_send1", "rfa::k_gather1", "rfa::v_gather1"}};
    for (int i = 0; i < 2; ++i) {
      send_[i][0] = ws.tensor4<T>(names[i][0], B, L, chunk, D);
      send_[i][1] = ws.tensor4<T>(names[i][1], B, L, chunk, D);
      gathered_[i][0] = ws.tensor4<T>(names[i][2], P * B, L, chunk, D);
      gathered_[i][1] = ws.tensor4<T>(names[i][3], P * B, L, chunk, D);
    }
    full_[0] = ws.tensor4<T>("rfa::k_full", B, seq_total, chunk, D);
    full_[1] = ws.tensor4<T>("rfa::v_full", B, seq_total, chunk, D);
  }

  /// Packs chunk c's heads and starts gathering them. Returns the bytes sent to other ranks.
  std::int64_t start(std::int64_t c) {
    const int i = int(c % 2);
    const std::int64_t B = k_.extent(0), L = k_.extent(1), D = k_.extent(3);
    const BlockLayout one(B, D, {L}, {chunk_});
    const std::size_t bytes = send_[i][0].size() * sizeof(T);
    pack_heads(k_, {c * chunk_}, one, send_[i][0].data());
    pack_heads(v_, {c * chunk_}, one, send_[i][1].data());
    pending_[i][0] = comm_.start_allgather(send_[i][0].data(), gathered_[i][0].data(), bytes);
    pending_[i][1] = comm_.start_allgather(send_[i][1].data(), gathered_[i][1].data(), bytes);
    return 2 * std::int64_t(bytes) * (comm_.size() - 1);
  }

  /// Waits for chunk c and places every rank's rows at their global positions.
  void finish(std::int64_t c, const std::vector<PositionMap>& rows) {
    const int i = int(c % 2);
    pending_[i][0].wait();
    pending_[i][1].wait();
    const std::int64_t B = k_.extent(0), L = k_.extent(1), D = k_.extent(3);
    const BlockLayout blocks(B, D, std::vector<std::int64_t>(rows.size(), L),
                             std::vector<std::int64_t>(rows.size(), chunk_));
    std::vector<std::int64_t> identity;
    for (std::int64_t j = 0; j < chunk_; ++j) identity.push_back(j);
    place_rows<T>(gathered_[i][0].data(), blocks, rows, identity, full_[0]);
    place_rows<T>(gathered_[i][1].data(), blocks, rows, identity, full_[1]);
  }

  /// Runs compute(ch, hook) for every chunk ch with that chunk's K/V in k() and v(), while
  /// the next chunk's gather is in flight; compute passes `hook` to its kernel, which polls it.
  template <class Compute>
  void for_each_chunk(std::int64_t chunks, const std::vector<PositionMap>& rows, RingTimings& timings,
                      Compute&& compute) {
    ExchangePoller poller;
    timings.bytes_sent += start(0);
    for (std::int64_t ch = 0; ch < chunks; ++ch) {
      {
        ScopedSeconds t(timings.wait);
        finish(ch, rows);
      }
      if (ch + 1 < chunks) timings.bytes_sent += start(ch + 1);
      poller.watch(&pending_[(ch + 1) % 2][0], &pending_[(ch + 1) % 2][1]);
      compute(ch, poller.hook());
      poller.rethrow_if_failed();
    }
  }

  Tensor4<const T> k() const { return full_[0]; }
  Tensor4<const T> v() const { return full_[1]; }

 private:
  comm::Communicator& comm_;
  Tensor4<const T> k_, v_;
  std::int64_t chunk_;
  Tensor4<T> send_[2][2], gathered_[2][2], full_[2];
  comm::Exchange pending_[2][2];
};

/// `part` [B][L][h][D] as the one block of a BlockLayout.
template <class View>
BlockLayout one_block(const View& part) {
  return BlockLayout(std::int64_t(part.extent(0)), std::int64_t(part.extent(3)), {std::int64_t(part.extent(1))},
                     {std::int64_t(part.extent(2))});
}

template <class T>
void take_heads(Tensor4<const T> whole, std::int64_t first, Tensor4<T> part) {
  pack_heads(whole, {first}, one_block(part), part.data());
}

template <class TPart, class T>
void put_heads(Tensor4<const TPart> part, std::int64_t first, Tensor4<T> whole) {
  unpack_heads(part.data(), one_block(part), {first}, whole, false);
}

}  // namespace

AllGatherAttention::AllGatherAttention(comm::Communicator& comm, const RingConfig& config,
                                       std::int64_t kv_heads_per_chunk)
    : comm_(comm), config_(validated(comm, config, kv_heads_per_chunk)), chunk_(kv_heads_per_chunk) {
  local_seq_ = layout::local_length(config_.layout, config_.seq_total, comm_.size());
}

PositionMap AllGatherAttention::local_positions() const {
  return layout::positions(config_.layout, config_.seq_total, comm_.size(), comm_.rank());
}

kernels::AttentionParams AllGatherAttention::chunk_params() const {
  const RingConfig& c = config_;
  const std::int64_t group = c.heads / c.kv_heads;
  kernels::AttentionParams p = kernels::make_params(c.batch, local_seq_, c.seq_total, chunk_ * group, chunk_,
                                                    c.head_dim, c.mask, c.softmax_scale);
  apply_mask(c, p);
  p.q_pos = local_positions();
  p.k_pos = PositionMap::contiguous(0, c.seq_total);
  return p;
}

std::int64_t AllGatherAttention::workspace_bytes(bool backward) const {
  const RingConfig& c = config_;
  const std::int64_t E = std::int64_t(dtype_size(c.dtype)), P = comm_.size();
  const std::int64_t qh = chunk_ * (c.heads / c.kv_heads);
  const std::int64_t k = c.batch * local_seq_ * chunk_ * c.head_dim, K = P * k;
  const std::int64_t qc = c.batch * local_seq_ * qh * c.head_dim, r = c.batch * local_seq_ * qh;
  const std::int64_t common = E * (4 * k + 4 * K + 2 * K + 2 * qc);
  if (!backward) return common + 4 * r + kernel_workspace_bytes(false);
  return common + 4 * (2 * r + c.batch * c.heads * local_seq_ + qc + 2 * K + K + k) + kernel_workspace_bytes(true);
}

std::int64_t AllGatherAttention::kernel_workspace_bytes(bool backward) const {
  const kernels::AttentionParams p = chunk_params();
  return backward ? kernels::flash_backward_workspace_bytes(p, config_.dtype)
                  : kernels::flash_forward_workspace_bytes(p, config_.dtype);
}

template <class T>
void AllGatherAttention::forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out,
                                 Tensor3<float> lse) {
  const RingConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, D = c.head_dim;
  timings_ = RingTimings();
  ScopedSeconds total(timings_.total);
  const kernels::AttentionParams p = chunk_params();
  const std::int64_t chunks = c.kv_heads / chunk_, qh = p.heads;
  std::vector<PositionMap> rows;
  for (int r = 0; r < comm_.size(); ++r) rows.push_back(layout::positions(c.layout, c.seq_total, comm_.size(), r));

  Workspace<> ws;
  GatheredKV<T> kv(ws, comm_, c, L, k, v, chunk_);
  Tensor4<T> q_chunk = ws.tensor4<T>("rfa::q_chunk", B, L, qh, D);
  Tensor4<T> out_chunk = ws.tensor4<T>("rfa::out_chunk", B, L, qh, D);
  Tensor3<float> lse_chunk = ws.tensor3<float>("rfa::lse_chunk", B, qh, L);
  kernels::ForwardWorkspace kernel_ws;  // one for every chunk's call, made before the agreement
  ws.adopt(kernel_workspace_bytes(false), [&] { kernels::reserve_forward_workspace(kernel_ws, p, c.dtype); });
  last_workspace_bytes_ = ws.bytes();
  comm::check_everywhere(comm_, [&] {
    check_forward_tensors<T>(c, L, q, k, v, out, lse);
    ws.throw_if_failed();
  });

  kv.for_each_chunk(chunks, rows, timings_, [&](std::int64_t ch, const kernels::ProgressHook& hook) {
    ScopedSeconds t(timings_.compute);
    take_heads(q, ch * qh, q_chunk);
    kernels::flash_forward<T, T>(p, q_chunk, kv.k(), kv.v(), out_chunk, lse_chunk, hook, &kernel_ws);
    put_heads<T, T>(out_chunk, ch * qh, out);
    slice_heads(lse, ch * qh, lse_chunk, false);
    ++timings_.steps_computed;
  });
}

template <class T>
void AllGatherAttention::backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out,
                                  Tensor4<const T> dout, Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk,
                                  Tensor4<T> dv) {
  const RingConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, D = c.head_dim, S = c.seq_total;
  timings_ = RingTimings();
  ScopedSeconds total(timings_.total);
  const kernels::AttentionParams p = chunk_params();
  const std::int64_t chunks = c.kv_heads / chunk_, qh = p.heads, P = comm_.size();
  std::vector<PositionMap> rows;
  for (int r = 0; r < P; ++r) rows.push_back(layout::positions(c.layout, S, int(P), r));

  Workspace<> ws;
  GatheredKV<T> kv(ws, comm_, c, L, k, v, chunk_);
  Tensor4<T> q_chunk = ws.tensor4<T>("rfa::q_chunk", B, L, qh, D);
  Tensor4<T> dout_chunk = ws.tensor4<T>("rfa::dout_chunk", B, L, qh, D);
  Tensor3<float> lse_chunk = ws.tensor3<float>("rfa::lse_chunk", B, qh, L);
  Tensor3<float> delta_chunk = ws.tensor3<float>("rfa::delta_chunk", B, qh, L);
  Tensor3<float> delta = ws.tensor3<float>("rfa::delta", B, c.heads, L);
  Tensor4<float> dq_chunk = ws.tensor4<float>("rfa::dq_chunk", B, L, qh, D);
  Tensor4<float> dk_full = ws.tensor4<float>("rfa::dk_full", B, S, chunk_, D);
  Tensor4<float> dv_full = ws.tensor4<float>("rfa::dv_full", B, S, chunk_, D);
  Tensor4<float> grad_send = ws.tensor4<float>("rfa::grad_send", P * B, L, chunk_, D);
  Tensor4<float> grad_mine = ws.tensor4<float>("rfa::grad_mine", B, L, chunk_, D);
  kernels::BackwardWorkspace kernel_ws;  // one for every chunk's call, made before the agreement
  ws.adopt(kernel_workspace_bytes(true), [&] { kernels::reserve_backward_workspace(kernel_ws, p, c.dtype); });
  last_workspace_bytes_ = ws.bytes();
  comm::check_everywhere(comm_, [&] {
    check_backward_tensors<T>(c, L, q, k, v, out, dout, lse, dq, dk, dv);
    ws.throw_if_failed();
  });

  {
    ScopedSeconds t(timings_.compute);
    kernels::AttentionParams whole = kernels::make_params(B, L, L, c.heads, c.kv_heads, D, c.mask, c.softmax_scale);
    kernels::compute_delta<T, T>(whole, dout, out, delta);
  }
  Tensor3<float> lse_in(const_cast<float*>(lse.data()), B, c.heads, L);  // only read below
  const BlockLayout per_rank(B, D, std::vector<std::int64_t>(std::size_t(P), L),
                             std::vector<std::int64_t>(std::size_t(P), chunk_));
  std::vector<std::int64_t> identity;
  for (std::int64_t j = 0; j < chunk_; ++j) identity.push_back(j);
  // Returns chunk ch's dK or dV: each rank's rows out of the full sequence, summed over ranks.
  auto reduce_home = [&](Tensor4<float> full, Tensor4<T> into, std::int64_t ch) {
    take_rows<float, float>(full, rows, identity, per_rank, grad_send.data());
    comm_.reduce_scatter_sum(grad_send.data(), grad_mine.data(), grad_mine.size());
    timings_.bytes_sent += std::int64_t(grad_mine.size() * sizeof(float)) * (P - 1);
    put_heads<float, T>(grad_mine, ch * chunk_, into);
  };

  kv.for_each_chunk(chunks, rows, timings_, [&](std::int64_t ch, const kernels::ProgressHook& hook) {
    {
      ScopedSeconds t(timings_.compute);
      take_heads(q, ch * qh, q_chunk);
      take_heads(dout, ch * qh, dout_chunk);
      slice_heads(lse_in, ch * qh, lse_chunk, true);
      slice_heads(delta, ch * qh, delta_chunk, true);
      kernels::fill_elements(dq_chunk, 0.0f);
      kernels::fill_elements(dk_full, 0.0f);
      kernels::fill_elements(dv_full, 0.0f);
      kernels::flash_backward_accumulate<T>(p, q_chunk, kv.k(), kv.v(), dout_chunk, lse_chunk, delta_chunk, dq_chunk,
                                            dk_full, dv_full, hook, &kernel_ws);
      put_heads<float, T>(dq_chunk, ch * qh, dq);
      ++timings_.steps_computed;
    }
    ScopedSeconds t(timings_.wait);
    reduce_home(dk_full, dk, ch);
    reduce_home(dv_full, dv, ch);
  });
}

RFA_INSTANTIATE_STRATEGY_PASSES(AllGatherAttention)

}  // namespace engine
}  // namespace rfa
