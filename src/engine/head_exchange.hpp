// SPDX-License-Identifier: BSD-3-Clause
// The all-to-all between "every rank holds some rows of the sequence for all heads" and "every
// rank holds all rows of its group for H/P heads" (docs/architecture.md §8), over a
// communicator of P ranks, in both directions. Ulysses is this exchange around one local
// attention; the hybrid strategy puts the ring inside it.
//
// rows[s] gives, for every rank s, where its local rows go in the full tensor (global positions
// for Ulysses). Each direction packs the blocks for the other ranks into a send buffer, runs one
// all-to-all(v) and places the received blocks; a rank's own block moves directly between its
// local and full tensors, one copy instead of three. The caller passes the two staging buffers
// (from its Workspace), sized by staging_elems(). Each exchange's head dim is that of the tensors
// it moves (Q and K's, or V's, out's and dO's where they differ).
//
// `Space` is where the tensors and buffers live (the host, or a CUDA device: the packing runs
// on its execution space, sequence_transpose.hpp, and the all-to-all on a communicator that
// accepts that memory); every call takes the execution space instance to queue on.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/head_routing.hpp"
#include "engine/sequence_transpose.hpp"
#include "engine/workspace.hpp"

namespace rfa {
namespace engine {

template <class Space = Kokkos::HostSpace>
class HeadExchange {
 public:
  using Exec = typename Space::execution_space;
  template <class T>
  using Tensor4 = SpaceTensor4<T, Space>;
  template <class T>
  using Tensor3 = SpaceTensor3<T, Space>;

  HeadExchange(comm::Communicator& comm, const HeadRouting& routing, std::vector<PositionMap> rows, std::int64_t batch,
               std::int64_t head_dim, std::int64_t value_dim)
      : comm_(comm),
        routing_(routing),
        rows_(std::move(rows)),
        batch_(batch),
        head_dim_(head_dim),
        value_dim_(value_dim) {
    const int P = comm_.size(), me = comm_.rank();
    local_rows_ = rows_[std::size_t(me)].length();
    for (int r = 0; r < P; ++r) {
      q_first_.push_back(routing_.q_first(r));
      kv_first_.push_back(routing_.kv_first(r));
      kv_count_.push_back(routing_.kv_count(r));
      rows_length_.push_back(rows_[std::size_t(r)].length());
      full_rows_ += rows_length_.back();
    }
    std::vector<std::int64_t> kv_column;  // the local K/V head each slot holds
    for (std::int64_t j = 0; j < routing_.slots(); ++j)
      kv_column.push_back(routing_.slot_head(me, j) - routing_.kv_first(me));
    q_cols_ = ColumnMap<Space>(identity_columns(routing_.heads_per_rank()));  // one to one
    kv_cols_ = ColumnMap<Space>(kv_column);
  }

  std::int64_t batch() const { return batch_; }
  std::int64_t head_dim() const { return head_dim_; }    ///< of Q and K
  std::int64_t value_dim() const { return value_dim_; }  ///< of V, out and dO
  const HeadRouting& routing() const { return routing_; }
  /// Rows of the full tensor (the sum of all ranks' rows).
  std::int64_t full_rows() const { return full_rows_; }
  /// Elements each staging buffer needs: the larger of a query-sized and a K/V-sized exchange
  /// in either direction (batch * local rows * heads * the larger head dim at most).
  std::int64_t staging_elems(std::int64_t heads) const { return batch_ * local_rows_ * heads * widest(); }

  /// Elements of each fp32 staging buffer for dK/dV on the way back: the larger of what this
  /// rank sends (its K/V heads for all rows) and what it receives (every rank's for its rows).
  std::int64_t key_staging_elems() const {
    const int me = comm_.rank();
    std::int64_t received = 0;
    for (std::int64_t n : kv_count_) received += batch_ * local_rows_ * n * widest();
    const std::int64_t sent = batch_ * full_rows_ * kv_count_[std::size_t(me)] * widest();
    return sent > received ? sent : received;
  }

  /// local [B][local rows][H][D] -> full [B][full rows][H/P][D] (D: the tensors' head dim). Returns
  /// bytes sent to others.
  template <class T>
  std::int64_t queries_to_heads(const Exec& exec, Tensor4<const T> local, Tensor4<T> full, T* send, T* recv) {
    const std::int64_t d = std::int64_t(local.extent(3));
    const BlockLayout out = my_rows(same_width(routing_.heads_per_rank()), d);
    pack_heads<Exec, T>(exec, local, q_first_, out, send, me());
    const BlockLayout in = all_rows(routing_.heads_per_rank(), d);
    const std::int64_t sent = exchange(send, out, recv, in);
    place_rows<Exec, T>(exec, recv, in, rows_, q_cols_.lists(), full, me());
    place_own_rows<Exec, T>(exec, local, q_first_[std::size_t(me())], my_positions(), q_cols_.lists(), full);
    return sent;
  }

  /// K or V: rank r receives only the heads kv_first(r) .. + kv_count(r), placed in its slots.
  template <class T>
  std::int64_t keys_to_heads(const Exec& exec, Tensor4<const T> local, Tensor4<T> full, T* send, T* recv) {
    const std::int64_t d = std::int64_t(local.extent(3));
    const BlockLayout out = my_rows(kv_count_, d);
    pack_heads<Exec, T>(exec, local, kv_first_, out, send, me());
    const BlockLayout in = all_rows(kv_count_[std::size_t(me())], d);
    const std::int64_t sent = exchange(send, out, recv, in);
    place_rows<Exec, T>(exec, recv, in, rows_, kv_cols_.lists(), full, me());
    place_own_rows<Exec, T>(exec, local, kv_first_[std::size_t(me())], my_positions(), kv_cols_.lists(), full);
    return sent;
  }

  /// full [B][full rows][H/P][D] (out or dQ) -> local [B][local rows][H][D], converted to T.
  template <class TFull, class T>
  std::int64_t queries_to_rows(const Exec& exec, Tensor4<const TFull> full, Tensor4<T> local, T* send, T* recv) {
    const std::int64_t d = std::int64_t(local.extent(3));
    const BlockLayout out = all_rows(routing_.heads_per_rank(), d);
    take_rows<Exec, TFull, T>(exec, full, rows_, q_cols_.lists(), out, send, me());
    const BlockLayout in = my_rows(same_width(routing_.heads_per_rank()), d);
    const std::int64_t sent = exchange(send, out, recv, in);
    unpack_heads<Exec, T, T>(exec, recv, in, q_first_, local, false, me());
    take_own_rows<Exec, TFull, T>(exec, full, my_positions(), q_cols_.lists(), q_first_[std::size_t(me())],
                                  routing_.heads_per_rank(), local, false);
    return sent;
  }

  /// dK or dV: full [B][full rows][slots][D] -> the fp32 local [B][local rows][kv_heads][D],
  /// summing the copies of a head within a rank and the partials of ranks sharing a head.
  /// `local` is overwritten.
  std::int64_t keys_to_rows(const Exec& exec, Tensor4<const float> full, Tensor4<float> local, float* send,
                            float* recv) {
    const std::size_t mine = std::size_t(me());
    const std::int64_t d = std::int64_t(local.extent(3));
    const BlockLayout out = all_rows(kv_count_[mine], d);
    take_rows<Exec, float, float>(exec, full, rows_, kv_cols_.lists(), out, send, me());
    const BlockLayout in = my_rows(kv_count_, d);
    const std::int64_t sent = exchange(send, out, recv, in);
    // This rank's own partials first (every head it does not hold set to zero), then the
    // others' added to them.
    zero_other_heads<Exec>(exec, local, kv_first_[mine], kv_count_[mine]);
    take_own_rows<Exec, float, float>(exec, full, my_positions(), kv_cols_.lists(), kv_first_[mine], kv_count_[mine],
                                      local, false);
    unpack_heads<Exec, float, float>(exec, recv, in, kv_first_, local, true, me());
    return sent;
  }

  /// lse [B][H][local rows] -> [B][H/P][full rows].
  std::int64_t lse_to_heads(const Exec& exec, Tensor3<float> local, Tensor3<float> full, float* send, float* recv) {
    const std::int64_t hp = routing_.heads_per_rank();
    lse_heads(exec, local, send, hp, true);
    const std::int64_t sent = exchange(send, my_rows(same_width(hp), 1), recv, all_rows(hp, 1), false);
    lse_sequence(exec, full, recv, rows_, true);
    return sent;
  }

  /// lse [B][H/P][full rows] -> [B][H][local rows].
  std::int64_t lse_to_rows(const Exec& exec, Tensor3<float> full, Tensor3<float> local, float* send, float* recv) {
    const std::int64_t hp = routing_.heads_per_rank();
    lse_sequence(exec, full, send, rows_, false);
    const std::int64_t sent = exchange(send, all_rows(hp, 1), recv, my_rows(same_width(hp), 1), false);
    lse_heads(exec, local, recv, hp, false);
    return sent;
  }

 private:
  /// Blocks of this rank's rows (what it sends or receives in the sequence-sharded view):
  /// widths[r] heads each.
  BlockLayout my_rows(std::vector<std::int64_t> widths, std::int64_t head_dim) const {
    const std::vector<std::int64_t> rows(widths.size(), local_rows_);
    return BlockLayout(batch_, head_dim, rows, std::move(widths));
  }
  /// Blocks of every rank's rows, `width` heads each (the head-sharded view).
  BlockLayout all_rows(std::int64_t width, std::int64_t head_dim) const {
    return BlockLayout(batch_, head_dim, rows_length_, std::vector<std::int64_t>(rows_.size(), width));
  }
  std::vector<std::int64_t> same_width(std::int64_t width) const {
    return std::vector<std::int64_t>(rows_.size(), width);
  }

  int me() const { return comm_.rank(); }
  /// The larger head dim: the staging buffers take tensors of either in turn.
  std::int64_t widest() const { return head_dim_ > value_dim_ ? head_dim_ : value_dim_; }

  const PositionMap& my_positions() const { return rows_[std::size_t(me())]; }

  /// The all-to-all(v) of the packed blocks. With `own_moved`, this rank's own block does not go
  /// through it (the caller moves it directly between the local and the full tensor).
  template <class T>
  std::int64_t exchange(const T* send, const BlockLayout& out, T* recv, const BlockLayout& in, bool own_moved = true) {
    out.bytes(sizeof(T), send_bytes_, send_offsets_);
    in.bytes(sizeof(T), recv_bytes_, recv_offsets_);
    if (own_moved) send_bytes_[std::size_t(me())] = recv_bytes_[std::size_t(me())] = 0;
    comm_.alltoallv(send, send_bytes_.data(), send_offsets_.data(), recv, recv_bytes_.data(), recv_offsets_.data());
    std::int64_t sent = 0;
    for (int r = 0; r < comm_.size(); ++r)
      if (r != comm_.rank()) sent += std::int64_t(send_bytes_[std::size_t(r)]);
    return sent;
  }

  comm::Communicator& comm_;
  const HeadRouting& routing_;
  std::vector<PositionMap> rows_;
  std::vector<std::int64_t> rows_length_;
  std::int64_t batch_, head_dim_, value_dim_, local_rows_ = 0, full_rows_ = 0;
  std::vector<std::int64_t> q_first_, kv_first_, kv_count_;
  ColumnMap<Space> q_cols_, kv_cols_;
  std::vector<std::size_t> send_bytes_, send_offsets_, recv_bytes_, recv_offsets_;
};

/// Staging buffers, sized for the largest exchange, viewed as the 1-D arrays the exchanges use.
template <class T, class Space = Kokkos::HostSpace>
struct Staging {
  Kokkos::View<T*, Space> send, recv;
  Staging(Workspace<Space>& ws, const char* send_name, const char* recv_name, std::int64_t elems)
      : send(ws.template buffer<T>(send_name, elems)), recv(ws.template buffer<T>(recv_name, elems)) {}
};

/// What both passes hold head-sharded: the staging pair and the full-rows q, k, v, out of this
/// rank's heads (k and v in its K/V slots).
template <class T, class Space = Kokkos::HostSpace>
struct HeadShardedInputs {
  Staging<T, Space> stage;
  SpaceTensor4<T, Space> q, k, v, out;
  HeadShardedInputs(Workspace<Space>& ws, const HeadExchange<Space>& x, std::int64_t heads)
      : stage(ws, "rfa::a2a_send", "rfa::a2a_recv", x.staging_elems(heads)),
        q(ws.template tensor4<T>("rfa::ulysses_q", x.batch(), x.full_rows(), x.routing().heads_per_rank(),
                                 x.head_dim())),
        k(ws.template tensor4<T>("rfa::ulysses_k", x.batch(), x.full_rows(), x.routing().slots(), x.head_dim())),
        v(ws.template tensor4<T>("rfa::ulysses_v", x.batch(), x.full_rows(), x.routing().slots(), x.value_dim())),
        out(ws.template tensor4<T>("rfa::ulysses_out", x.batch(), x.full_rows(), x.routing().heads_per_rank(),
                                   x.value_dim())) {}
};

}  // namespace engine
}  // namespace rfa
