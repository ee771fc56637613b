// SPDX-License-Identifier: BSD-3-Clause
// Portable flash-attention kernels (Kokkos, host execution space). One call handles one
// (Q block, K/V block) pair of the ring: masks are applied on global positions, so the
// same call serves every layout and every ring step (docs/architecture.md §3-§4).
//
// Layouts: q, dq: [batch][seq_q][heads][head_dim]; k, dk: [batch][seq_k][kv_heads][head_dim];
// out, dout: [batch][seq_q][heads][dv]; v, dv: [batch][seq_k][kv_heads][dv], dv the value head
// dim (AttentionParams::dv(), head_dim unless set); lse, delta: [batch][heads][seq_q], fp32,
// natural log.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.hpp"
#include "core/positions.hpp"
#include "kernels/tile_visibility.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace kernels {

using HostSpace = Kokkos::HostSpace;
template <class T>
using Tensor4 = Kokkos::View<T****, Kokkos::LayoutRight, HostSpace>;
template <class T>
using Tensor3 = Kokkos::View<T***, Kokkos::LayoutRight, HostSpace>;

/// The hardware bf16 products the host's bf16 kernels run on (kernels/bf16_products.hpp).
enum class Bf16Products : int;

/// Everything about one local attention call except the tensors.
struct AttentionParams {
  std::int64_t batch = 0;
  std::int64_t seq_q = 0;
  std::int64_t seq_k = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  /// Head dim of V, out, dout and dV where it differs from that of Q and K (MLA's 128 beside
  /// 192). 0: head_dim. Read it through dv().
  std::int64_t value_dim = 0;
  /// Multiplies QK^T before the softmax. 0 means the default, 1/sqrt(head_dim).
  float softmax_scale = 0.0f;
  /// Soft-capped scores: with softcap > 0 each scaled score s becomes softcap * tanh(s / softcap)
  /// before the mask and the softmax (the backward multiplies dS by 1 - tanh^2). 0: no cap.
  float softcap = 0.0f;
  rfa_mask_t mask = RFA_MASK_NONE;
  /// Sliding window on global positions: a key is visible only if q_pos - k_pos < window
  /// (with or without the causal mask). 0: no window.
  std::int64_t window = 0;
  /// Packed documents (MaskRule::doc_bounds): a key is visible only in its query's document.
  /// Host memory that outlives the call; null / 0: one document.
  const std::int64_t* doc_bounds = nullptr;
  std::int64_t doc_bound_count = 0;
  /// Per-sequence documents: batch + 1 offsets into doc_bounds, batch entry e's list being
  /// doc_bounds[doc_offsets[e] .. doc_offsets[e + 1]) (0 values: one document). Host memory that
  /// outlives the call; null: doc_bounds serves every entry.
  const std::int64_t* doc_offsets = nullptr;
  /// A mask given as ranges (mask RFA_MASK_RANGES): the index of its entries, host memory that
  /// outlives the call (core/mask_ranges.hpp).
  MaskRangeIndex ranges;
  /// Global positions of the query rows and of the key rows (length seq_q and seq_k).
  PositionMap q_pos;
  PositionMap k_pos;
  /// The backward sums every dQ row in one fixed order (bitwise reproducible): the key tiles
  /// of a head are not split across threads, which would add their dQ shares atomically.
  bool deterministic = false;
  /// How many teams share the key tiles of one (batch, kv head) unit in the backward, adding
  /// their dQ shares atomically (not with deterministic). 0: chosen from the host threads
  /// (league_chunks.hpp: one on one thread). The tests set it to run the split on any build.
  int key_tile_splits = 0;
  /// An fp32 output from 16-bit inputs (a ring's partial) as accurate as fp32: the bf16 product
  /// kernels then enter P into P V as two bf16 terms (hi + lo, twice the products). false: P is
  /// rounded to bf16 once, as for a 16-bit output and in GPU kernels; for partials whose merged
  /// result is stored in 16 bits, where that rounding's error stays below the output's own.
  bool fp32_accurate_partials = true;
  /// The bf16 products the switches (RFA_HOST_AMX, RFA_HOST_BF16_DOT) and the CPU allowed where
  /// the context was created (allowed_bf16_products()): a switch set later changes nothing, and
  /// no call reads the environment. Unset: read at the call (the kernels' direct callers).
  std::optional<Bf16Products> bf16_products;

  float scale() const;
  /// The head dim of V, out, dout and dV.
  std::int64_t dv() const { return value_dim != 0 ? value_dim : head_dim; }
  /// The mask, the window, the documents and the ranges of batch entry `entry`, as the kernels
  /// test them.
  MaskRule rule(std::int64_t entry) const {
    if (doc_offsets == nullptr) return MaskRule{mask == RFA_MASK_CAUSAL, window, doc_bounds, doc_bound_count, ranges};
    const std::int64_t first = doc_offsets[entry], count = doc_offsets[entry + 1] - first;
    return MaskRule{mask == RFA_MASK_CAUSAL, window, count > 0 ? doc_bounds + first : nullptr, count, ranges};
  }
  /// The entries whose rules may differ, 0 .. rule_entries() - 1: every entry with per-sequence
  /// documents, else entry 0 alone (its rule is every entry's).
  std::int64_t rule_entries() const { return doc_offsets != nullptr ? batch : 1; }
};

/// How much of the key positions `k_pos` the query positions `q_pos` see, over every batch
/// entry's rule (classify_blocks for each): hidden only where every entry hides the pair of
/// blocks, full only where every entry sees all of it. A ring step is skipped where this is
/// hidden.
inline TileVisibility classify_blocks_every_entry(const AttentionParams& p, const PositionMap& q_pos,
                                                  const PositionMap& k_pos) {
  bool any_visible = false, all_full = true;
  for (std::int64_t e = 0; e < p.rule_entries() && (all_full || !any_visible); ++e) {
    const TileVisibility v = classify_blocks(p.rule(e), q_pos, k_pos);
    any_visible = any_visible || v != TileVisibility::hidden;
    all_full = all_full && v == TileVisibility::full;
  }
  if (!any_visible) return TileVisibility::hidden;
  return all_full ? TileVisibility::full : TileVisibility::partial;
}

/// Called by the kernels between tiles so a transport that only progresses inside its own
/// calls (MPI without a progress thread) keeps moving the next ring step's data. It is called
/// only when the host execution space runs one thread, since MPI may be called only from the
/// application's thread; the engine then polls its outstanding exchanges here.
struct ProgressHook {
  void (*poll)(void* context) = nullptr;
  void* context = nullptr;
};

/// Largest head dimension the portable kernels accept, for Q and K and for V; each must be a
/// multiple of 8.
constexpr std::int64_t kMaxHeadDim = 256;

/// Makes a params struct for the common single-sequence case: queries and keys both start at
/// global position 0 and are contiguous.
AttentionParams make_params(std::int64_t batch, std::int64_t seq_q, std::int64_t seq_k, std::int64_t heads,
                            std::int64_t kv_heads, std::int64_t head_dim, rfa_mask_t mask, float softmax_scale = 0.0f);

/// Throws rfa::Error (RFA_ERROR_INVALID_ARGUMENT / RFA_ERROR_UNSUPPORTED) with a clear message
/// unless the params are usable.
void validate(const AttentionParams& p);

/// Buffers flash_forward may keep between calls: on the portable path its fp32 head-major copy
/// of K and V, on bf16 products K and V packed for them (flash_forward_workspace_bytes). A
/// caller that makes several calls (the ring's steps, a benchmark's repetitions) passes one
/// object to all of them, so the copy's pages are faulted in once rather than by every call.
/// The views own what a call allocates for them, freed with the object, or point at memory the
/// caller lends (forward_workspace_buffers()). One call at a time.
struct ForwardWorkspace {
  Kokkos::View<unsigned char*, HostSpace> slots, k, v;
};

/// Forward: out = softmax(scale * Q K^T + mask) V per head, lse = log-sum-exp of each row.
/// TOut is T (the final output) or float (an fp32 partial for the ring merge). Rows that see
/// no key get out = 0 and lse = -inf. Without a workspace the call allocates and frees its own.
template <class T, class TOut>
void flash_forward(const AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                   Tensor4<TOut> out, Tensor3<float> lse, const ProgressHook& progress = ProgressHook(),
                   ForwardWorkspace* workspace = nullptr);

/// Bytes flash_forward allocates for itself on a call with these params and storage dtype, so
/// the engine's memory formulas can count them: where bf16 runs on bf16 products, K and V in
/// the products' forms, 2 * batch * kv_heads * 128 * (head_dim + dv) per 128-key tile that some
/// query sees (kernels/seen_key_tiles.hpp; every tile without a mask) in two buffers, and
/// 8 * ceil(seq_k / 128) for two tables; elsewhere fp32 copies of K and V head by head,
/// 4 * batch * kv_heads * 96 * (head_dim + dv + 32) per 96-key tile that some query sees in two
/// buffers, and 8 * ceil(seq_k / 96) for two tables.
std::int64_t flash_forward_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype);

/// One buffer of a kernel's workspace: its label, the bytes a call needs, and the View that
/// holds them.
struct WorkspaceBuffer {
  const char* label;
  std::int64_t bytes;
  Kokkos::View<unsigned char*, HostSpace>* view;
};

/// The buffers flash_forward grows in `workspace` for a call with these params and dtype. A
/// caller points them at memory of its own, at least `bytes` each, so that such calls, and
/// calls whose queries see fewer key tiles, allocate nothing: the engines lend them from their
/// workspace before their ranks agree that a call may go on (docs/architecture.md §6.7), so a
/// refusal fails every rank together instead of one rank inside a kernel while its neighbours
/// wait.
std::vector<WorkspaceBuffer> forward_workspace_buffers(ForwardWorkspace& workspace, const AttentionParams& p,
                                                       rfa_dtype_t dtype);

/// Grows each of `buffers` to its bytes (a View large enough, lent or kept, is left as it is):
/// what a kernel call does with its workspace before using it. Throws RFA_ERROR_OUT_OF_MEMORY
/// naming the buffer when the allocator refuses.
void grow_workspace(const std::vector<WorkspaceBuffer>& buffers);

/// Buffers flash_backward_accumulate may keep between calls: on the portable path fp32
/// head-major copies of Q and dO, on bf16 products Q^T and dO^T packed for them in `q`
/// (flash_backward_workspace_bytes), shared by the calls a caller passes it to as
/// ForwardWorkspace is. One call at a time.
struct BackwardWorkspace {
  Kokkos::View<unsigned char*, HostSpace> q, dout;
};

/// The same for flash_backward_accumulate: where bf16 runs on bf16 products, Q^T and dO^T of
/// every head, 2 * batch * heads * roundup(seq_q, 128) * (head_dim + dv) in one buffer;
/// elsewhere fp32 copies of Q and dO head by head, 4 * batch * heads * roundup(seq_q, 96) *
/// (head_dim + dv + 32) in two buffers.
std::int64_t flash_backward_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype);

/// forward_workspace_buffers() for flash_backward_accumulate.
std::vector<WorkspaceBuffer> backward_workspace_buffers(BackwardWorkspace& workspace, const AttentionParams& p,
                                                        rfa_dtype_t dtype);

/// Merges one block's fp32 partial into the running result (docs/architecture.md §3):
///   out <- out - sigmoid(block_lse - lse) (out - block_out),  lse <- lse - logsigmoid(lse - block_lse)
/// Rows whose block saw no key (block_lse = -inf) are left untouched.
void merge_partial(Tensor4<float> out, Tensor3<float> lse, Tensor4<const float> block_out,
                   Tensor3<const float> block_lse);

/// to[i] = from[i] rounded to T (element counts must match).
template <class T>
void narrow(Tensor4<const float> from, Tensor4<T> to);

/// delta[b][h][i] = sum_d dout[b][i][h][d] * out[b][i][h][d], in fp32 (docs/architecture.md §3).
template <class T, class TOut>
void compute_delta(const AttentionParams& p, Tensor4<const T> dout, Tensor4<const TOut> out, Tensor3<float> delta);

/// Backward, accumulating: dq += dQ, dk += dK, dv += dV for this (Q, K/V) block pair, all fp32.
/// lse and delta are the final (whole-sequence) values for the query rows.
template <class T>
void flash_backward_accumulate(const AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                               Tensor4<const T> dout, Tensor3<const float> lse, Tensor3<const float> delta,
                               Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv,
                               const ProgressHook& progress = ProgressHook(), BackwardWorkspace* workspace = nullptr);

/// Backward for one self-contained attention: computes delta, then writes dq, dk, dv in T.
template <class T>
void flash_backward(const AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                    Tensor4<const T> out, Tensor4<const T> dout, Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk,
                    Tensor4<T> dv, BackwardWorkspace* workspace = nullptr);

}  // namespace kernels
}  // namespace rfa
