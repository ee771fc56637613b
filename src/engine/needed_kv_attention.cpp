// SPDX-License-Identifier: BSD-3-Clause
// The needed-only exchange (engine/needed_kv_attention.hpp).
#include "engine/needed_kv_attention.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "comm/agreement.hpp"
#include "core/profiling_region.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/rank_positions.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/strategy_instantiation.hpp"
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

/// Where each row of a transfer sits: its owner's local row, and its row in the packed buffer
/// for batch entry 0 (entry b is `piece_rows` further per b: a piece holds [B][rows] rows).
struct PackedRows {
  std::vector<std::int64_t> local, packed, piece_rows;

  explicit PackedRows(const NeededTransfer& t, std::int64_t batch) {
    std::int64_t start = 0;  // the piece's first row in the buffer
    for (const NeededPiece& piece : t.pieces) {
      std::int64_t i = 0;
      for (const RowRun& run : piece.runs)
        for (std::int64_t row = run.begin; row < run.end; ++row, ++i) {
          local.push_back(row);
          packed.push_back(start + i);
          piece_rows.push_back(piece.rows);
        }
      start += batch * piece.rows;
    }
  }
  std::int64_t count() const { return std::int64_t(local.size()); }
};

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

/// One alltoallv with one partner each way: `send_bytes` to `to`, `receive_bytes` from `from`.
void exchange_with(comm::Communicator& comm, int to, const void* send, std::size_t send_bytes, int from, void* receive,
                   std::size_t receive_bytes) {
  std::vector<std::size_t> sb(std::size_t(comm.size()), 0), rb(sb), offsets(sb);
  sb[std::size_t(to)] = send_bytes;
  rb[std::size_t(from)] = receive_bytes;
  comm.alltoallv(send, sb.data(), offsets.data(), receive, rb.data(), offsets.data());
}

}  // namespace

NeededKvAttention::NeededKvAttention(comm::Communicator& comm, const AttentionConfig& config)
    : EngineState(comm, validated(comm, config)) {
  local_seq_ = layout::local_length(config_.layout, config_.seq_total, comm_.size());
  rounds_ = needed_rounds(config_, comm_.size(), comm_.rank());
}

PositionMap NeededKvAttention::local_positions() const { return rank_positions(config_, comm_.size(), comm_.rank()); }

kernels::AttentionParams NeededKvAttention::local_params() const {
  return block_params(config_, comm_.size(), comm_.rank(), comm_.rank());
}

kernels::AttentionParams NeededKvAttention::piece_params(const NeededPiece& piece) const {
  const AttentionConfig& c = config_;
  kernels::AttentionParams p =
      kernels::make_params(c.batch, local_seq_, piece.rows, c.heads, c.kv_heads, c.head_dim, c.mask, c.softmax_scale);
  apply_config(c, p);
  p.q_pos = local_positions();
  p.k_pos = piece.positions;
  return p;
}

kernels::AttentionParams NeededKvAttention::largest_params(bool backward) const {
  auto bytes = [&](const kernels::AttentionParams& p) {
    return backward ? kernels::flash_backward_workspace_bytes(p, config_.dtype)
                    : kernels::flash_forward_workspace_bytes(p, config_.dtype);
  };
  kernels::AttentionParams largest = local_params();
  std::int64_t most = bytes(largest);
  for (const NeededRound& r : rounds_)
    for (const NeededPiece& piece : r.receive.pieces) {
      const kernels::AttentionParams p = piece_params(piece);
      const std::int64_t b = bytes(p);
      if (b > most) {
        most = b;
        largest = p;
      }
    }
  return largest;
}

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
  const kernels::AttentionParams p = largest_params(backward);
  return backward ? kernels::flash_backward_workspace_bytes(p, config_.dtype)
                  : kernels::flash_forward_workspace_bytes(p, config_.dtype);
}

std::int64_t NeededKvAttention::workspace_bytes(bool backward) const {
  const AttentionConfig& c = config_;
  const std::int64_t E = std::int64_t(dtype_size(c.dtype)), L = local_seq_, B = c.batch, H = c.heads;
  const std::int64_t kvw = B * c.kv_heads * (c.head_dim + c.dv()), moved = (rows_in() + rows_out()) * kvw;
  const bool narrow = c.dtype != RFA_DTYPE_FLOAT32;
  std::int64_t bytes = E * moved + kernel_workspace_bytes(backward);
  if (!backward) {
    if (!rounds_.empty()) bytes += 4 * ((narrow ? 2 : 1) * B * L * H * c.dv() + B * H * L);
    return bytes;
  }
  bytes += 4 * moved + 4 * B * H * L;
  if (narrow) bytes += 4 * (B * L * H * c.head_dim + B * L * c.kv_heads * (c.head_dim + c.dv()));
  return bytes;
}

template <class T>
void NeededKvAttention::exchange_kv(const NeededRound& r, Tensor4<const T> k, Tensor4<const T> v, T* send,
                                    T* received) {
  const AttentionConfig& c = config_;
  const std::int64_t B = c.batch, L = local_seq_, wk = c.kv_heads * c.head_dim, wv = c.kv_heads * c.dv();
  {
    ScopedSeconds t(timings_.compute);
    const PackedRows rows(r.send, B);
    pack(rows, k.data(), B, L, wk, send);
    pack(rows, v.data(), B, L, wv, send + B * r.send.rows * wk);
  }
  ScopedSeconds t(timings_.wait);
  const std::size_t out = std::size_t(B * r.send.rows * (wk + wv)) * sizeof(T);
  exchange_with(comm_, r.to, send, out, r.from, received, std::size_t(B * r.receive.rows * (wk + wv)) * sizeof(T));
  timings_.bytes_sent += std::int64_t(out);
}

template <class T>
void NeededKvAttention::forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out,
                                Tensor3<float> lse) {
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, H = c.heads, DV = c.dv();
  const std::int64_t wk = c.kv_heads * c.head_dim, wv = c.kv_heads * DV;
  timings_ = PassTimings();
  ScopedSeconds total(timings_.total);
  HostBlockCompute blocks(host_arena());
  Workspace<Kokkos::HostSpace> ws = blocks.workspace(workspace_pass(false));
  RoundBuffers<T> kv(ws, "rfa::needed_received", "rfa::needed_sending", B * rows_in(), B * rows_out(), wk + wv);
  // fp32 callers' out doubles as the accumulator; without rounds the one block is written
  // straight into out.
  Tensor4<float> acc, block_out;
  Tensor3<float> block_lse;
  if (!rounds_.empty()) {
    if constexpr (std::is_same<T, float>::value)
      acc = out;
    else
      acc = ws.template tensor4<float>("rfa::out_acc", B, L, H, DV);
    block_out = ws.template tensor4<float>("rfa::block_out", B, L, H, DV);
    block_lse = ws.template tensor3<float>("rfa::block_lse", B, H, L);
  }
  blocks.prepare_forward(largest_params(false), c.dtype, ws);
  last_workspace_bytes_ = ws.bytes();
  comm::check_everywhere(comm_, [&] {
    check_forward_tensors<T>(c, L, q, k, v, out, lse);
    ws.throw_if_failed();
  });

  const kernels::ProgressHook none;
  {
    ScopedSeconds t(timings_.compute);
    const kernels::AttentionParams p = local_params();
    if (rounds_.empty()) {
      blocks.template forward_final<T>(p, q, k, v, out, lse, none);
      ++timings_.steps_computed;
      return;
    }
    blocks.template forward<T>(p, q, k, v, acc, lse, none);
    ++timings_.steps_computed;
  }
  for (const NeededRound& r : rounds_) {
    const ProfilingRegion region(ring_step_region("needed forward", r.distance));
    exchange_kv<T>(r, k, v, kv.sent_rows.data(), kv.received_rows.data());
    ScopedSeconds t(timings_.compute);
    const T* kr = kv.received_rows.data();
    const T* vr = kr + B * r.receive.rows * wk;
    for (const NeededPiece& piece : r.receive.pieces) {
      const Tensor4<const T> pk(kr, B, piece.rows, c.kv_heads, c.head_dim), pv(vr, B, piece.rows, c.kv_heads, DV);
      blocks.template forward_merged<T>(piece_params(piece), q, pk, pv, acc, lse, block_out, block_lse, none);
      kr += B * piece.rows * wk;
      vr += B * piece.rows * wv;
    }
    if (!r.receive.pieces.empty()) ++timings_.steps_computed;
  }
  if constexpr (!std::is_same<T, float>::value) {
    ScopedSeconds t(timings_.compute);
    blocks.template narrow<T>(acc, out);
  }
}

template <class T>
void NeededKvAttention::backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out,
                                 Tensor4<const T> dout, Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk,
                                 Tensor4<T> dv) {
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, H = c.heads, Hkv = c.kv_heads, D = c.head_dim, DV = c.dv();
  const std::int64_t wk = Hkv * D, wv = Hkv * DV;
  timings_ = PassTimings();
  ScopedSeconds total(timings_.total);
  HostBlockCompute blocks(host_arena());
  Workspace<Kokkos::HostSpace> ws = blocks.workspace(workspace_pass(true));
  RoundBuffers<T> kv(ws, "rfa::needed_received", "rfa::needed_sending", B * rows_in(), B * rows_out(), wk + wv);
  // dK/dV of the rows received, going back, and of this rank's rows sent, coming home.
  RoundBuffers<float> grads(ws, "rfa::needed_grad_pieces", "rfa::needed_grad_home", B * rows_in(), B * rows_out(),
                            wk + wv);
  auto delta = ws.template tensor3<float>("rfa::delta", B, H, L);
  Tensor4<float> dq_acc, dk_acc, dv_acc;
  if constexpr (std::is_same<T, float>::value) {
    dq_acc = dq;
    dk_acc = dk;
    dv_acc = dv;
  } else {
    dq_acc = ws.template tensor4<float>("rfa::dq_acc", B, L, H, D);
    dk_acc = ws.template tensor4<float>("rfa::dk_acc", B, L, Hkv, D);
    dv_acc = ws.template tensor4<float>("rfa::dv_acc", B, L, Hkv, DV);
  }
  blocks.prepare_backward(largest_params(true), c.dtype, ws);
  last_workspace_bytes_ = ws.bytes();
  comm::check_everywhere(comm_, [&] {
    check_backward_tensors<T>(c, L, q, k, v, out, dout, lse, dq, dk, dv);
    ws.throw_if_failed();
  });

  const kernels::ProgressHook none;
  {
    ScopedSeconds t(timings_.compute);
    const kernels::AttentionParams p = local_params();
    blocks.template delta<T>(p, dout, out, delta);
    blocks.fill(dq_acc, 0.0f);
    blocks.fill(dk_acc, 0.0f);
    blocks.fill(dv_acc, 0.0f);
    blocks.template backward<T>(p, q, k, v, out, dout, lse, delta, dq_acc, dk_acc, dv_acc, none);
    ++timings_.steps_computed;
  }
  for (const NeededRound& r : rounds_) {
    const ProfilingRegion region(ring_step_region("needed backward", r.distance));
    exchange_kv<T>(r, k, v, kv.sent_rows.data(), kv.received_rows.data());
    {
      ScopedSeconds t(timings_.compute);
      const std::int64_t in = B * r.receive.rows;
      std::fill(grads.received_rows.data(), grads.received_rows.data() + in * (wk + wv), 0.0f);
      const T* kr = kv.received_rows.data();
      const T* vr = kr + in * wk;
      float* gk = grads.received_rows.data();
      float* gv = gk + in * wk;
      for (const NeededPiece& piece : r.receive.pieces) {
        const Tensor4<const T> pk(kr, B, piece.rows, Hkv, D), pv(vr, B, piece.rows, Hkv, DV);
        const Tensor4<float> pdk(gk, B, piece.rows, Hkv, D), pdv(gv, B, piece.rows, Hkv, DV);
        blocks.template backward<T>(piece_params(piece), q, pk, pv, out, dout, lse, delta, dq_acc, pdk, pdv, none);
        kr += B * piece.rows * wk;
        vr += B * piece.rows * wv;
        gk += B * piece.rows * wk;
        gv += B * piece.rows * wv;
      }
      if (!r.receive.pieces.empty()) ++timings_.steps_computed;
    }
    // The pieces' dK/dV go back to their owner; this rank's own rows' come back from `to`.
    {
      ScopedSeconds t(timings_.wait);
      const std::size_t back = std::size_t(B * r.receive.rows * (wk + wv)) * sizeof(float);
      exchange_with(comm_, r.from, grads.received_rows.data(), back, r.to, grads.sent_rows.data(),
                    std::size_t(B * r.send.rows * (wk + wv)) * sizeof(float));
      timings_.bytes_sent += std::int64_t(back);
    }
    ScopedSeconds t(timings_.compute);
    const PackedRows rows(r.send, B);
    add_unpacked(rows, grads.sent_rows.data(), B, L, wk, dk_acc.data());
    add_unpacked(rows, grads.sent_rows.data() + B * r.send.rows * wk, B, L, wv, dv_acc.data());
  }
  if constexpr (!std::is_same<T, float>::value) {
    ScopedSeconds t(timings_.compute);
    blocks.template narrow<T>(dq_acc, dq);
    blocks.template narrow<T>(dk_acc, dk);
    blocks.template narrow<T>(dv_acc, dv);
  }
}

RFA_INSTANTIATE_STRATEGY_PASSES(NeededKvAttention)

}  // namespace engine
}  // namespace rfa
