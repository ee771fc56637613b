// SPDX-License-Identifier: BSD-3-Clause
// The KV all-gather schedule (engine/allgather_attention.hpp).
#include "engine/allgather_attention.hpp"

#include <algorithm>
#include <exception>
#include <type_traits>
#include <variant>

#include "comm/agreement.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/block_compute_cuda.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/device_mask_data.hpp"
#include "engine/pass_timings.hpp"
#include "engine/rank_positions.hpp"
#include "engine/sequence_transpose.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/workspace.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {
namespace {

// Agreement and the strategy's rules (validate_strategy) before anything is allocated.
const AttentionConfig& validated(comm::Communicator& comm, const AttentionConfig& c, std::int64_t chunk) {
  StrategyChoice choice;
  choice.kind = StrategyKind::allgather;
  choice.kv_heads_per_chunk = chunk;
  agree_on_strategy(comm, c, choice);
  return c;
}

/// The K/V chunks as they are gathered: chunk c is packed into its send buffer and its gather
/// started one chunk ahead; both sides are double-buffered by chunk parity. `Space` is where
/// the tensors live; the packing runs on `exec`.
template <class T, class Space>
class GatheredKV {
 public:
  using Exec = typename Space::execution_space;
  using Tensor = SpaceTensor4<T, Space>;
  using Input = SpaceTensor4<const T, Space>;

  /// Buffers sized by the context (batch, local_seq, the head dims of K and V), not by k and v:
  /// the caller's tensors are checked only after the workspace is allocated.
  /// `identity`: the identity columns of one chunk, in `Space` (every rank's rows hold the
  /// chunk's heads in order); it must outlive this.
  GatheredKV(Workspace<Space>& ws, comm::Communicator& comm, const Exec& exec, const AttentionConfig& c,
             std::int64_t local_seq, Input k, Input v, std::int64_t chunk, const ColumnMap<Space>& identity)
      : comm_(comm), exec_(exec), k_(k), v_(v), chunk_(chunk), identity_(identity) {
    const std::int64_t B = c.batch, L = local_seq, D = c.head_dim, DV = c.dv(), P = comm.size();
    const std::int64_t seq_total = c.seq_total;
    const char* names[2][4] = {{"rfa::k_send0", "rfa::v_send0", "rfa::k_gather0", "rfa::v_gather0"},
                               {"rfa::k_send1", "rfa::v_send1", "rfa::k_gather1", "rfa::v_gather1"}};
    for (int i = 0; i < 2; ++i) {
      send_[i][0] = ws.template tensor4<T>(names[i][0], B, L, chunk, D);
      send_[i][1] = ws.template tensor4<T>(names[i][1], B, L, chunk, DV);
      gathered_[i][0] = ws.template tensor4<T>(names[i][2], P * B, L, chunk, D);
      gathered_[i][1] = ws.template tensor4<T>(names[i][3], P * B, L, chunk, DV);
    }
    full_[0] = ws.template tensor4<T>("rfa::k_full", B, seq_total, chunk, D);
    full_[1] = ws.template tensor4<T>("rfa::v_full", B, seq_total, chunk, DV);
  }

  /// Packs chunk c's heads and starts gathering them. Returns the bytes sent to other ranks.
  std::int64_t start(std::int64_t c) {
    const int i = int(c % 2);
    std::int64_t bytes = 0;
    for (int t = 0; t < 2; ++t) {  // K, then V (each its own head dim)
      const Input& from = t == 0 ? k_ : v_;
      const BlockLayout one(std::int64_t(from.extent(0)), std::int64_t(from.extent(3)), {std::int64_t(from.extent(1))},
                            {chunk_});
      const std::size_t n = send_[i][t].size() * sizeof(T);
      pack_heads<Exec, T>(exec_, from, {c * chunk_}, one, send_[i][t].data());
      pending_[i][t] = comm_.start_allgather(send_[i][t].data(), gathered_[i][t].data(), n);
      bytes += std::int64_t(n);
    }
    return bytes * (comm_.size() - 1);
  }

  /// Waits for chunk c and places every rank's rows at their global positions.
  void finish(std::int64_t c, const std::vector<PositionMap>& rows) {
    const int i = int(c % 2);
    pending_[i][0].wait();
    pending_[i][1].wait();
    for (int t = 0; t < 2; ++t) {
      const std::int64_t B = full_[t].extent(0), L = k_.extent(1), D = full_[t].extent(3);
      const BlockLayout blocks(B, D, std::vector<std::int64_t>(rows.size(), L),
                               std::vector<std::int64_t>(rows.size(), chunk_));
      place_rows<Exec, T>(exec_, gathered_[i][t].data(), blocks, rows, identity_.lists(), full_[t]);
    }
  }

  /// Runs compute(ch, hook) for every chunk ch with that chunk's K/V in k() and v(), while
  /// the next chunk's gather is in flight; compute passes `hook` to its kernel, which polls it.
  template <class Compute>
  void for_each_chunk(std::int64_t chunks, const std::vector<PositionMap>& rows, PassTimings& timings,
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

  Input k() const { return full_[0]; }
  Input v() const { return full_[1]; }
  const ColumnMap<Space>& identity() const { return identity_; }

 private:
  comm::Communicator& comm_;
  Exec exec_;
  Input k_, v_;
  std::int64_t chunk_;
  const ColumnMap<Space>& identity_;
  Tensor send_[2][2], gathered_[2][2], full_[2];
  comm::Exchange pending_[2][2];
};

/// `part` [B][L][h][D] as the one block of a BlockLayout.
template <class View>
BlockLayout one_block(const View& part) {
  return BlockLayout(std::int64_t(part.extent(0)), std::int64_t(part.extent(3)), {std::int64_t(part.extent(1))},
                     {std::int64_t(part.extent(2))});
}

/// part = whole's heads [first, first + part's heads).
template <class Exec, class T>
void take_heads(const Exec& exec, SpaceTensor4<const T, typename Exec::memory_space> whole, std::int64_t first,
                SpaceTensor4<T, typename Exec::memory_space> part) {
  pack_heads<Exec, T>(exec, whole, {first}, one_block(part), part.data());
}

/// whole's heads [first, first + part's heads) = part, converted.
template <class Exec, class TPart, class T>
void put_heads(const Exec& exec, SpaceTensor4<TPart, typename Exec::memory_space> part, std::int64_t first,
               SpaceTensor4<T, typename Exec::memory_space> whole) {
  unpack_heads<Exec, TPart, T>(exec, part.data(), one_block(part), {first}, whole, false);
}

}  // namespace

AllGatherAttention::AllGatherAttention(comm::Communicator& comm, const AttentionConfig& config,
                                       std::int64_t kv_heads_per_chunk)
    : EngineState(comm, validated(comm, config, kv_heads_per_chunk)), chunk_(kv_heads_per_chunk) {
  local_seq_ = layout::local_length(config_.layout, config_.seq_total, comm_.size());
  host_identity_ = ColumnMap<Kokkos::HostSpace>(identity_columns(chunk_));
#if RFA_ENGINE_CUDA
  if (config_.device == Device::cuda) {
    device_mask_ = copy_mask_to_device(comm_, config_);
    // Agreed: a rank whose device cannot take the chunk's columns fails every rank.
    comm::check_everywhere(comm_, [&] {
      try {
        device_identity_ = ColumnMap<Kokkos::CudaSpace>(identity_columns(chunk_));
      } catch (const std::exception& e) {  // Kokkos reports allocation and copy failures so
        fail(RFA_ERROR_CUDA, "copying the all-gather's chunk columns to the device failed: ", e.what());
      }
    });
  }
#endif
}

template <>
const ColumnMap<Kokkos::HostSpace>& AllGatherAttention::identity<Kokkos::HostSpace>() const {
  return host_identity_;
}
#if RFA_ENGINE_CUDA
template <>
const ColumnMap<Kokkos::CudaSpace>& AllGatherAttention::identity<Kokkos::CudaSpace>() const {
  return device_identity_;
}
#endif

AllGatherAttention::~AllGatherAttention() {
#if RFA_ENGINE_CUDA
  // Kernels of the last device call may still read or write the cached workspace.
  if (config_.device == Device::cuda) cudaStreamSynchronize(static_cast<cudaStream_t>(cuda_stream_));
#endif
}

PositionMap AllGatherAttention::local_positions() const { return rank_positions(config_, comm_.size(), comm_.rank()); }

std::vector<PositionMap> AllGatherAttention::all_positions() const {
  std::vector<PositionMap> rows;
  for (int r = 0; r < comm_.size(); ++r) rows.push_back(rank_positions(config_, comm_.size(), r));
  return rows;
}

kernels::AttentionParams AllGatherAttention::chunk_params() const {
  const AttentionConfig& c = config_;
  const std::int64_t group = c.heads / c.kv_heads;
  kernels::AttentionParams p = kernels::make_params(c.batch, local_seq_, c.seq_total, chunk_ * group, chunk_,
                                                    c.head_dim, c.mask, c.softmax_scale);
  apply_config(c, p);
  p.q_pos = local_positions();
  p.k_pos = PositionMap::contiguous(0, c.seq_total);
  return p;
}

std::int64_t AllGatherAttention::workspace_bytes(bool backward) const {
  return allgather_buffer_bytes(allgather_shape(config_, comm_.size()), chunk_, backward) +
         kernel_workspace_bytes(backward);
}

std::int64_t AllGatherAttention::kernel_workspace_bytes(bool backward) const {
  if (config_.device != Device::host) return 0;  // the CUDA kernels allocate nothing
  const kernels::AttentionParams p = chunk_params();
  return backward ? kernels::flash_backward_workspace_bytes(p, config_.dtype)
                  : kernels::flash_forward_workspace_bytes(p, config_.dtype);
}

template <class Space, class Run>
void AllGatherAttention::with_block_compute(Run&& run) {
  if constexpr (kHostMemory<Space>) {
    HostBlockCompute blocks(host_arena());
    run(blocks, Kokkos::DefaultHostExecutionSpace());
  } else {
#if RFA_ENGINE_CUDA
    comm_.set_compute_stream(cuda_stream_);
    CudaBlockCompute blocks(static_cast<cudaStream_t>(cuda_stream_), device_cache_, device_mask_.pointers(),
                            config_.cuda_path);
    run(blocks, device_exec_.on(cuda_stream_));
#endif
  }
}

void AllGatherAttention::forward(const AnyForwardTensors& tensors) {
  std::visit(
      [&](const auto& t) {
        with_block_compute<typename std::decay_t<decltype(t)>::memory_space>(
            [&](auto& blocks, const auto& exec) { run_forward(blocks, exec, t); });
      },
      tensors);
}

void AllGatherAttention::backward(const AnyBackwardTensors& tensors) {
  std::visit(
      [&](const auto& t) {
        with_block_compute<typename std::decay_t<decltype(t)>::memory_space>(
            [&](auto& blocks, const auto& exec) { run_backward(blocks, exec, t); });
      },
      tensors);
}

template <class Compute, class Exec, class T>
void AllGatherAttention::run_forward(Compute& blocks, const Exec& exec,
                                     const ForwardTensors<T, typename Compute::memory_space>& tensors) {
  using Space = typename Compute::memory_space;
  const auto &q = tensors.q, &k = tensors.k, &v = tensors.v;
  const auto& out = tensors.out;
  const auto& lse = tensors.lse;
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, D = c.head_dim;
  const ScopedSeconds total = begin_pass();
  const kernels::AttentionParams p = chunk_params();
  const std::int64_t chunks = c.kv_heads / chunk_, qh = p.heads;
  const std::vector<PositionMap> rows = all_positions();

  Workspace<Space> ws = blocks.workspace(workspace_pass(false));
  GatheredKV<T, Space> kv(ws, comm_, exec, c, L, k, v, chunk_, identity<Space>());
  auto q_chunk = ws.template tensor4<T>("rfa::q_chunk", B, L, qh, D);
  auto out_chunk = ws.template tensor4<T>("rfa::out_chunk", B, L, qh, c.dv());
  auto lse_chunk = ws.template tensor3<float>("rfa::lse_chunk", B, qh, L);
  blocks.prepare_forward(p, c.dtype, ws);  // one for every chunk's call, made before the agreement
  agree_to_run(comm_, ws, [&] { check_pass_tensors(c, L, tensors); });

  kv.for_each_chunk(chunks, rows, timings_, [&](std::int64_t ch, const kernels::ProgressHook& hook) {
    ScopedCompute t(timings_);
    take_heads<Exec, T>(exec, q, ch * qh, q_chunk);
    blocks.template forward_final<T>(p, q_chunk, kv.k(), kv.v(), out_chunk, lse_chunk, hook);
    put_heads<Exec, T, T>(exec, out_chunk, ch * qh, out);
    slice_heads(exec, lse, ch * qh, lse_chunk, false);
    ++timings_.steps_computed;
  });
}

template <class Compute, class Exec, class T>
void AllGatherAttention::run_backward(Compute& blocks, const Exec& exec,
                                      const StorageGradients<T, typename Compute::memory_space>& tensors) {
  using Space = typename Compute::memory_space;
  const auto &q = tensors.q, &k = tensors.k, &v = tensors.v, &out = tensors.out, &dout = tensors.dout;
  const auto& lse = tensors.lse;
  const auto &dq = tensors.dq, &dk = tensors.dk, &dv = tensors.dv;
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, D = c.head_dim, DV = c.dv(), S = c.seq_total;
  const ScopedSeconds total = begin_pass();
  const kernels::AttentionParams p = chunk_params();
  const std::int64_t chunks = c.kv_heads / chunk_, qh = p.heads, P = comm_.size();
  const std::vector<PositionMap> rows = all_positions();

  Workspace<Space> ws = blocks.workspace(workspace_pass(true));
  GatheredKV<T, Space> kv(ws, comm_, exec, c, L, k, v, chunk_, identity<Space>());
  auto q_chunk = ws.template tensor4<T>("rfa::q_chunk", B, L, qh, D);
  auto dout_chunk = ws.template tensor4<T>("rfa::dout_chunk", B, L, qh, DV);
  auto lse_chunk = ws.template tensor3<float>("rfa::lse_chunk", B, qh, L);
  auto delta_chunk = ws.template tensor3<float>("rfa::delta_chunk", B, qh, L);
  auto delta = ws.template tensor3<float>("rfa::delta", B, c.heads, L);
  auto dq_chunk = ws.template tensor4<float>("rfa::dq_chunk", B, L, qh, D);
  auto dk_full = ws.template tensor4<float>("rfa::dk_full", B, S, chunk_, D);
  auto dv_full = ws.template tensor4<float>("rfa::dv_full", B, S, chunk_, DV);
  // The reduction's buffers serve dK and dV in turn: the larger head dim.
  const std::int64_t widest = std::max(D, DV);
  auto grad_send = ws.template buffer<float>("rfa::grad_send", P * B * L * chunk_ * widest);
  auto grad_mine = ws.template buffer<float>("rfa::grad_mine", B * L * chunk_ * widest);
  blocks.prepare_backward(p, c.dtype, ws);  // one for every chunk's call, made before the agreement
  agree_to_run(comm_, ws, [&] { check_pass_tensors(c, L, tensors); });

  {
    ScopedCompute t(timings_);
    kernels::AttentionParams whole = kernels::make_params(B, L, L, c.heads, c.kv_heads, D, c.mask, c.softmax_scale);
    apply_config(c, whole);
    blocks.template delta<T>(whole, dout, out, delta);
  }
  SpaceTensor3<float, Space> lse_in(const_cast<float*>(lse.data()), B, c.heads, L);  // only read below
  // Returns chunk ch's dK or dV: each rank's rows out of the full sequence, summed over ranks.
  auto reduce_home = [&](SpaceTensor4<float, Space> full, SpaceTensor4<T, Space> into, std::int64_t ch) {
    const std::int64_t d = std::int64_t(full.extent(3));
    const BlockLayout per_rank(B, d, std::vector<std::int64_t>(std::size_t(P), L),
                               std::vector<std::int64_t>(std::size_t(P), chunk_));
    const SpaceTensor4<float, Space> mine(grad_mine.data(), B, L, chunk_, d);
    take_rows<Exec, float, float>(exec, full, rows, kv.identity().lists(), per_rank, grad_send.data());
    comm_.reduce_scatter_sum(grad_send.data(), mine.data(), mine.size());
    timings_.bytes_sent += std::int64_t(mine.size() * sizeof(float)) * (P - 1);
    put_heads<Exec, float, T>(exec, mine, ch * chunk_, into);
  };

  kv.for_each_chunk(chunks, rows, timings_, [&](std::int64_t ch, const kernels::ProgressHook& hook) {
    {
      ScopedCompute t(timings_);
      take_heads<Exec, T>(exec, q, ch * qh, q_chunk);
      take_heads<Exec, T>(exec, dout, ch * qh, dout_chunk);
      slice_heads(exec, lse_in, ch * qh, lse_chunk, true);
      slice_heads(exec, delta, ch * qh, delta_chunk, true);
      blocks.fill(dq_chunk, 0.0f);
      blocks.fill(dk_full, 0.0f);
      blocks.fill(dv_full, 0.0f);
      // The chunk's out is not needed: these kernels take D (delta_chunk).
      blocks.template backward<T>(p, q_chunk, kv.k(), kv.v(), typename Compute::template Tensor4<const T>(), dout_chunk,
                                  lse_chunk, delta_chunk, dq_chunk, dk_full, dv_full, hook);
      put_heads<Exec, float, T>(exec, dq_chunk, ch * qh, dq);
      ++timings_.steps_computed;
    }
    ScopedSeconds t(timings_.wait);
    reduce_home(dk_full, dk, ch);
    reduce_home(dv_full, dv, ch);
  });
}

}  // namespace engine
}  // namespace rfa
