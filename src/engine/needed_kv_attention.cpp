// SPDX-License-Identifier: BSD-3-Clause
// The needed-only exchange (engine/needed_kv_attention.hpp).
#include "engine/needed_kv_attention.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <variant>

#include "comm/agreement.hpp"
#include "core/profiling_region.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/pass_timings.hpp"
#include "engine/rank_positions.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/workspace.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {
namespace {

using HostRows = Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<std::int64_t>>;

const AttentionConfig& validated(comm::Communicator& comm, const AttentionConfig& c) {
  StrategyChoice choice;
  choice.kind = StrategyKind::needed;
  agree_on_strategy(comm, c, choice);
  return c;
}

/// to[packed row] = from[b][local row] for every row of `rows` and batch entry: `width` values
/// a row ([L][width] per batch entry in `from`, L rows).
template <class T>
void pack(const PackedRows& rows, const T* from, std::int64_t batch, std::int64_t L, std::int64_t width, T* to) {
  const std::int64_t n = rows.count();
  const std::int64_t *local = rows.local.data(), *packed = rows.packed.data(), *piece = rows.piece_rows.data();
  Kokkos::parallel_for("rfa::needed_pack", HostRows(0, batch * n), [=](std::int64_t x) {
    const std::int64_t b = x / n, j = x % n;
    std::memcpy(to + (packed[j] + b * piece[j]) * width, from + (b * L + local[j]) * width,
                std::size_t(width) * sizeof(T));
  });
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// into[b][local row] += from[packed row]: `pack` in reverse, adding (the dK/dV of the rows this
/// rank sent, back from their receiver).
void add_unpacked(const PackedRows& rows, const float* from, std::int64_t batch, std::int64_t L, std::int64_t width,
                  float* into) {
  const std::int64_t n = rows.count();
  const std::int64_t *local = rows.local.data(), *packed = rows.packed.data(), *piece = rows.piece_rows.data();
  // Each (b, local row) occurs once in a transfer: no two iterations write the same row.
  Kokkos::parallel_for("rfa::needed_add", HostRows(0, batch * n), [=](std::int64_t x) {
    const std::int64_t b = x / n, j = x % n;
    const float* src = from + (packed[j] + b * piece[j]) * width;
    float* dst = into + (b * L + local[j]) * width;
    for (std::int64_t d = 0; d < width; ++d) dst[d] += src[d];
  });
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// A pass's buffers for the values of one round's rows: of the rows this rank receives and of
/// those it sends (B rows of `width` values for each row of the round, as many as the round
/// that moves the most).
template <class V>
struct RoundBuffers {
  RoundBuffers(Workspace<Kokkos::HostSpace>& ws, const char* received_name, const char* sent_name,
               std::int64_t received, std::int64_t sent, std::int64_t width)
      : received_rows(ws.template buffer<V>(received_name, received * width)),
        sent_rows(ws.template buffer<V>(sent_name, sent * width)) {}
  Kokkos::View<V*, Kokkos::HostSpace> received_rows, sent_rows;
};

/// The names of the buffers of rounds i % 2: K/V received and sent, dK/dV of those.
constexpr const char* kBuffered[2][4] = {
    {"rfa::needed_received0", "rfa::needed_sent0", "rfa::needed_grads_received0", "rfa::needed_grads_sent0"},
    {"rfa::needed_received1", "rfa::needed_sent1", "rfa::needed_grads_received1", "rfa::needed_grads_sent1"}};

}  // namespace

NeededKvAttention::NeededKvAttention(comm::Communicator& comm, const AttentionConfig& config)
    : EngineState(comm, validated(comm, config)) {
  local_seq_ = layout::local_length(config_.layout, config_.seq_total, comm_.size());
  rounds_ = needed_rounds(config_, comm_.size(), comm_.rank());
  for (const NeededRound& r : rounds_) sent_.emplace_back(r.send, config_.batch);
  calls_.push_back(block_params(config_, comm_.size(), comm_.rank(), comm_.rank()));
  for (const NeededRound& r : rounds_)
    for (const NeededPiece& piece : r.receive.pieces) {
      kernels::AttentionParams p =
          kernels::make_params(config_.batch, local_seq_, piece.rows, config_.heads, config_.kv_heads, config_.head_dim,
                               config_.mask, config_.softmax_scale);
      apply_config(config_, p);
      p.q_pos = calls_.front().q_pos;
      p.k_pos = piece.positions;
      calls_.push_back(p);
    }
}

PositionMap NeededKvAttention::local_positions() const { return rank_positions(config_, comm_.size(), comm_.rank()); }

std::int64_t NeededKvAttention::rows_in() const {
  std::int64_t n = 0;
  for (const NeededRound& r : rounds_) n = std::max(n, r.receive.rows);
  return n;
}

std::int64_t NeededKvAttention::rows_out() const {
  std::int64_t n = 0;
  for (const NeededRound& r : rounds_) n = std::max(n, r.send.rows);
  return n;
}

std::int64_t NeededKvAttention::kernel_workspace_bytes(bool backward) const {
  return HostBlockCompute::workspace_bytes(calls_, config_.dtype, backward);
}

std::int64_t NeededKvAttention::workspace_bytes(bool backward) const {
  const AttentionConfig& c = config_;
  const std::int64_t E = std::int64_t(dtype_size(c.dtype)), L = local_seq_, B = c.batch, H = c.heads;
  const std::int64_t kvw = B * c.kv_heads * (c.head_dim + c.dv()), moved = (rows_in() + rows_out()) * kvw;
  const bool narrow = c.dtype != RFA_DTYPE_FLOAT32;
  const std::int64_t copies = buffered_rounds();
  std::int64_t bytes = copies * E * moved + kernel_workspace_bytes(backward);
  if (!backward) {
    if (!rounds_.empty()) bytes += 4 * ((narrow ? 2 : 1) * B * L * H * c.dv() + B * H * L);
    return bytes;
  }
  bytes += copies * 4 * moved + 4 * B * H * L;
  if (narrow) bytes += 4 * (B * L * H * c.head_dim + B * L * c.kv_heads * (c.head_dim + c.dv()));
  return bytes;
}

template <class T>
comm::Exchange NeededKvAttention::start_kv(std::size_t i, Tensor4<const T> k, Tensor4<const T> v, T* send,
                                           T* received) {
  const AttentionConfig& c = config_;
  const NeededRound& r = rounds_[i];
  const std::int64_t B = c.batch, L = local_seq_, wk = c.kv_heads * c.head_dim, wv = c.kv_heads * c.dv();
  {
    ScopedCompute t(timings_);
    pack(sent_[i], k.data(), B, L, wk, send);
    pack(sent_[i], v.data(), B, L, wv, send + B * r.send.rows * wk);
  }
  const std::size_t out = std::size_t(B * r.send.rows * (wk + wv)) * sizeof(T);
  timings_.bytes_sent += std::int64_t(out);
  return comm_.start_uneven_shift_exchange(send, out, received, std::size_t(B * r.receive.rows * (wk + wv)) * sizeof(T),
                                           r.distance);
}

template <class AnyTensors, class Run>
void NeededKvAttention::on_host(const AnyTensors& tensors, Run&& run) {
  std::visit(
      [&](const auto& t) {
        if constexpr (kHostMemory<typename std::decay_t<decltype(t)>::memory_space>) {
          run(t);
        } else {
          fail(RFA_ERROR_UNSUPPORTED, "the needed strategy runs on host contexts only");
        }
      },
      tensors);
}

void NeededKvAttention::forward(const AnyForwardTensors& tensors) {
  on_host(tensors, [&](const auto& t) { run_forward(t); });
}

void NeededKvAttention::backward(const AnyBackwardTensors& tensors) {
  on_host(tensors, [&](const auto& t) { run_backward(t); });
}

template <class T>
void NeededKvAttention::run_forward(const HostForward<T>& tensors) {
  const auto &q = tensors.q, &k = tensors.k, &v = tensors.v;
  const auto& out = tensors.out;
  const auto& lse = tensors.lse;
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, H = c.heads, DV = c.dv();
  const std::int64_t wk = c.kv_heads * c.head_dim, wv = c.kv_heads * DV;
  const ScopedSeconds total = begin_pass();
  HostBlockCompute blocks(host_arena());
  Workspace<Kokkos::HostSpace> ws = blocks.workspace(workspace_pass(false));
  std::vector<RoundBuffers<T>> kv;
  for (int i = 0; i < buffered_rounds(); ++i)
    kv.emplace_back(ws, kBuffered[i][0], kBuffered[i][1], B * rows_in(), B * rows_out(), wk + wv);
  // fp32 callers' out doubles as the accumulator; without rounds the one block is written
  // straight into out.
  Tensor4<float> acc, block_out;
  Tensor3<float> block_lse;
  if (!rounds_.empty()) {
    acc = fp32_sum(ws, "rfa::out_acc", out, B, L, H, DV);
    block_out = ws.template tensor4<float>("rfa::block_out", B, L, H, DV);
    block_lse = ws.template tensor3<float>("rfa::block_lse", B, H, L);
  }
  blocks.prepare_forward(calls_, c.dtype, ws);
  agree_to_run(comm_, ws, [&] { check_pass_tensors(c, L, tensors); });

  // Round i's rows travel in buffers i % 2 while round i - 1 computes (declared after the
  // buffers: an exchange still in flight when an error unwinds completes before they go).
  comm::Exchange pending[2];
  ExchangePoller poller;
  auto start = [&](std::size_t i) {
    pending[i % 2] = start_kv<T>(i, k, v, kv[i % 2].sent_rows.data(), kv[i % 2].received_rows.data());
  };
  if (!rounds_.empty()) start(0);
  computing([&] {
    const kernels::AttentionParams& p = calls_.front();
    poller.watch(&pending[0]);
    if (rounds_.empty())
      blocks.template forward_final<T>(p, q, k, v, out, lse, poller.hook());
    else
      blocks.template forward<T>(p, q, k, v, acc, lse, poller.hook());
  });
  ++timings_.steps_computed;
  poller.rethrow_if_failed();
  std::size_t call = 1;  // calls_[call]: the next piece's
  for (std::size_t i = 0; i < rounds_.size(); ++i) {
    const NeededRound& r = rounds_[i];
    const ProfilingRegion region(ring_step_region("needed forward", r.distance));
    waiting([&] { pending[i % 2].wait(); });
    if (i + 1 < rounds_.size()) start(i + 1);
    computing([&] {
      poller.watch(&pending[(i + 1) % 2]);
      const T* kr = kv[i % 2].received_rows.data();
      const T* vr = kr + B * r.receive.rows * wk;
      for (const NeededPiece& piece : r.receive.pieces) {
        const std::int64_t at = B * piece.first_row;
        const Tensor4<const T> pk(kr + at * wk, B, piece.rows, c.kv_heads, c.head_dim),
            pv(vr + at * wv, B, piece.rows, c.kv_heads, DV);
        blocks.template forward_merged<T>(calls_[call++], q, pk, pv, acc, lse, block_out, block_lse, poller.hook());
      }
    });
    if (!r.receive.pieces.empty()) ++timings_.steps_computed;
    poller.rethrow_if_failed();
  }
  if constexpr (!std::is_same<T, float>::value) {
    if (!rounds_.empty()) computing([&] { blocks.template narrow<T>(acc, out); });
  }
}

template <class T>
void NeededKvAttention::run_backward(const HostBackward<T>& tensors) {
  const auto &q = tensors.q, &k = tensors.k, &v = tensors.v, &out = tensors.out, &dout = tensors.dout;
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, H = c.heads, Hkv = c.kv_heads, D = c.head_dim, DV = c.dv();
  const std::int64_t wk = Hkv * D, wv = Hkv * DV;
  const ScopedSeconds total = begin_pass();
  HostBlockCompute blocks(host_arena());
  Workspace<Kokkos::HostSpace> ws = blocks.workspace(workspace_pass(true));
  // K/V of the rows received and sent; dK/dV of the rows received, going back, and of this
  // rank's rows sent, coming home.
  std::vector<RoundBuffers<T>> kv;
  std::vector<RoundBuffers<float>> grads;
  for (int i = 0; i < buffered_rounds(); ++i) {
    kv.emplace_back(ws, kBuffered[i][0], kBuffered[i][1], B * rows_in(), B * rows_out(), wk + wv);
    grads.emplace_back(ws, kBuffered[i][2], kBuffered[i][3], B * rows_in(), B * rows_out(), wk + wv);
  }
  auto delta = ws.template tensor3<float>("rfa::delta", B, H, L);
  auto dq_acc = fp32_sum(ws, "rfa::dq_acc", tensors.dq, B, L, H, D);
  auto dk_acc = fp32_sum(ws, "rfa::dk_acc", tensors.dk, B, L, Hkv, D);
  auto dv_acc = fp32_sum(ws, "rfa::dv_acc", tensors.dv, B, L, Hkv, DV);
  blocks.prepare_backward(calls_, c.dtype, ws);
  agree_to_run(comm_, ws, [&] { check_pass_tensors(c, L, tensors); });

  // Round i's K/V, and its dK/dV on their way back, in buffers i % 2: the next round's K/V and
  // the previous round's gradients travel while a round computes.
  comm::Exchange pending_kv[2], pending_grads[2];
  ExchangePoller poller;
  auto start = [&](std::size_t i) {
    pending_kv[i % 2] = start_kv<T>(i, k, v, kv[i % 2].sent_rows.data(), kv[i % 2].received_rows.data());
  };
  // Waits for round i's gradients of this rank's rows and adds them in.
  auto bring_home = [&](std::size_t i) {
    waiting([&] { pending_grads[i % 2].wait(); });
    computing([&] {
      const float* home = grads[i % 2].sent_rows.data();
      add_unpacked(sent_[i], home, B, L, wk, dk_acc.data());
      add_unpacked(sent_[i], home + B * rounds_[i].send.rows * wk, B, L, wv, dv_acc.data());
    });
  };
  if (!rounds_.empty()) start(0);
  computing([&] {
    const kernels::AttentionParams& p = calls_.front();
    blocks.template delta<T>(p, dout, out, delta);
    blocks.fill(dq_acc, 0.0f);
    blocks.fill(dk_acc, 0.0f);
    blocks.fill(dv_acc, 0.0f);
    poller.watch(&pending_kv[0]);
    blocks.template backward<T>(p, q, k, v, out, dout, tensors.lse, delta, dq_acc, dk_acc, dv_acc, poller.hook());
  });
  ++timings_.steps_computed;
  poller.rethrow_if_failed();
  std::size_t call = 1;  // calls_[call]: the next piece's
  for (std::size_t i = 0; i < rounds_.size(); ++i) {
    const NeededRound& r = rounds_[i];
    const ProfilingRegion region(ring_step_region("needed backward", r.distance));
    waiting([&] { pending_kv[i % 2].wait(); });
    if (i + 1 < rounds_.size()) start(i + 1);
    if (i >= 2) bring_home(i - 2);  // frees buffers i % 2 for this round's gradients
    computing([&] {
      poller.watch(&pending_kv[(i + 1) % 2], &pending_grads[(i + 1) % 2]);
      const std::int64_t in = B * r.receive.rows;
      blocks.fill(Kokkos::subview(grads[i % 2].received_rows, std::make_pair(std::int64_t(0), in * (wk + wv))), 0.0f);
      float* gk = grads[i % 2].received_rows.data();
      float* gv = gk + in * wk;
      const T* kr = kv[i % 2].received_rows.data();
      const T* vr = kr + in * wk;
      for (const NeededPiece& piece : r.receive.pieces) {
        const std::int64_t at = B * piece.first_row;
        const Tensor4<const T> pk(kr + at * wk, B, piece.rows, Hkv, D), pv(vr + at * wv, B, piece.rows, Hkv, DV);
        const Tensor4<float> pdk(gk + at * wk, B, piece.rows, Hkv, D), pdv(gv + at * wv, B, piece.rows, Hkv, DV);
        blocks.template backward<T>(calls_[call++], q, pk, pv, out, dout, tensors.lse, delta, dq_acc, pdk, pdv,
                                    poller.hook());
      }
    });
    if (!r.receive.pieces.empty()) ++timings_.steps_computed;
    poller.rethrow_if_failed();
    // The pieces' dK/dV go back to their owner (`from`, P - s ahead); this rank's rows' come
    // from `to`.
    const std::size_t back = std::size_t(B * r.receive.rows * (wk + wv)) * sizeof(float);
    pending_grads[i % 2] = comm_.start_uneven_shift_exchange(
        grads[i % 2].received_rows.data(), back, grads[i % 2].sent_rows.data(),
        std::size_t(B * r.send.rows * (wk + wv)) * sizeof(float), ranks() - r.distance);
    timings_.bytes_sent += std::int64_t(back);
  }
  for (std::size_t i = rounds_.size() >= 2 ? rounds_.size() - 2 : 0; i < rounds_.size(); ++i) bring_home(i);
  if constexpr (!std::is_same<T, float>::value) {
    computing([&] {
      blocks.template narrow<T>(dq_acc, tensors.dq);
      blocks.template narrow<T>(dk_acc, tensors.dk);
      blocks.template narrow<T>(dv_acc, tensors.dv);
    });
  }
}

}  // namespace engine
}  // namespace rfa
