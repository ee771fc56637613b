// SPDX-License-Identifier: BSD-3-Clause
// What every rank must agree on before any tensor moves, whatever the strategy: the problem (shapes,
// dtype, layout, mask), where it runs, and the kernels that compute its blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "comm/communicator.hpp"
#include "core/mask_ranges.hpp"
#include "core/positions.hpp"
#include "engine/engine_backends.hpp"
#include "kernels/flash_attention.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace engine {

/// Which kernels compute a CUDA context's ring steps (host contexts: always rfa's host kernels).
enum class CudaKernels {
  rfa,   ///< kernels_cuda for every step
  cudnn  ///< cuDNN's fused attention for every step it expresses exactly, kernels_cuda for the rest
};

/// The implementation of kernels_cuda's forward and backward that CUDA contexts run (rfa_cuda_path).
enum class CudaPath {
  sm80,         ///< mma.sync, every device of compute capability 8.0 or newer
  sm90,         ///< wgmma and TMA, compute capability 9.x, builds with the Hopper kernels
  sm90_forward  ///< the Hopper forward and the sm_80 backward (the automatic choice on 9.x)
};

/// Whether a pass (the forward, or the backward) of a context on `path` runs on the Hopper
/// kernels, where they take the block (rfa_cuda_sm90_takes).
inline bool hopper_pass(CudaPath path, bool forward) {
  return path == CudaPath::sm90 || (forward && path == CudaPath::sm90_forward);
}

class PlacementCache;  // engine/rank_positions.cpp
/// A new, empty cache of balanced placements (every AttentionConfig starts with one).
std::shared_ptr<PlacementCache> new_placement_cache();

struct AttentionConfig {
  rfa_layout_t layout = RFA_LAYOUT_ZIGZAG;
  rfa_mask_t mask = RFA_MASK_CAUSAL;
  rfa_dtype_t dtype = RFA_DTYPE_BFLOAT16;
  float softmax_scale = 0.0f;  ///< 0: 1/sqrt(head_dim)
  /// Soft-capped scores: scaled scores s become softcap * tanh(s / softcap) before the mask and
  /// the softmax; 0: none (kernels::AttentionParams::softcap).
  float softcap = 0.0f;
  std::int64_t batch = 1;
  std::int64_t seq_total = 0;  ///< S: the whole sequence, over all ranks
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;
  std::int64_t head_dim = 64;  ///< of Q and K
  /// Head dim of V, out, dout and dV where it differs from head_dim (MLA); 0: head_dim. Read it
  /// through dv().
  std::int64_t value_dim = 0;
  Device device = Device::host;  ///< where tensors live and blocks are computed
  std::int64_t window = 0;       ///< sliding window on global positions (q - k < window); 0: none
  /// Packed documents: cumulative boundaries 0 = b[0] <= ... <= b[n] = seq_total (document d
  /// holds positions [b[d], b[d+1])); empty: one document. core/documents.hpp.
  std::vector<std::int64_t> doc_bounds;
  /// Per-sequence documents: batch + 1 offsets into doc_bounds, entry e's list being
  /// doc_bounds[doc_offsets[e] .. doc_offsets[e + 1]) (no values: one document); empty:
  /// doc_bounds serves every entry. core/documents.hpp.
  std::vector<std::int64_t> doc_offsets;
  /// A mask given as ranges (mask RFA_MASK_RANGES): the validated entries and their index,
  /// shared by the config's copies; null for the other masks.
  std::shared_ptr<const MaskRanges> ranges;
  CudaKernels cuda_kernels = CudaKernels::rfa;  ///< Device::cuda only
  CudaPath cuda_path = CudaPath::sm80;          ///< Device::cuda only: rfa's kernels' implementation
  bool deterministic = false;                   ///< the backward's gradients are bitwise reproducible
  /// The host's bf16 products as the switches and the CPU allowed at the context's creation
  /// (kernels::allowed_bf16_products(), set by setup::set_up_attention); unset: read at each
  /// call.
  std::optional<kernels::Bf16Products> bf16_products;
  /// The balanced layout's placements, computed on first use per ring size and mask and shared
  /// by the config's copies (engine/rank_positions.hpp).
  std::shared_ptr<PlacementCache> placements = new_placement_cache();

  /// The head dim of V, out, dout and dV.
  std::int64_t dv() const { return value_dim != 0 ? value_dim : head_dim; }
};

/// Sets the fields of kernel params that every block call of the config shares besides the
/// shapes make_params takes: the mask's window, documents and ranges (pointing into `c`, which
/// must outlive the params), the deterministic switch, the soft cap and the value head dim.
void apply_config(const AttentionConfig& c, kernels::AttentionParams& p);

/// The mask, the window, the documents and the ranges of batch entry `entry` of the config, as
/// the kernels test them (pointing into `c`, which must outlive the rule).
kernels::MaskRule mask_rule(const AttentionConfig& c, std::int64_t entry);

/// The entries whose rules may differ, 0 .. mask_rule_entries(c) - 1: every entry with
/// per-sequence documents, else entry 0 alone (its rule is every entry's).
std::int64_t mask_rule_entries(const AttentionConfig& c);

/// Throws RFA_ERROR_INVALID_ARGUMENT / RFA_ERROR_UNSUPPORTED unless the config is usable on a
/// ring of `ranks` ranks (shapes, head dim, dtype, layout divisibility, what the device's
/// kernels accept).
void validate_local(const AttentionConfig& c, int ranks);

/// Collective: every rank passed the same config, or every rank throws RFA_ERROR_INVALID_USAGE
/// naming the field.
void require_same_config(comm::Communicator& comm, const AttentionConfig& c);

/// Collective: validates on every rank and checks that every rank passed the same config.
/// Fails on every rank together (RFA_ERROR_INVALID_USAGE naming the field when ranks
/// disagree; the local error's code where one rank's config is invalid), never hangs.
void validate_collective(comm::Communicator& comm, const AttentionConfig& c);

/// The kernel params for this rank's queries against the K/V block that started on
/// ring position `block_owner`.
kernels::AttentionParams block_params(const AttentionConfig& c, int ranks, int position, int block_owner);

/// The ring steps some rank computes on: the distances s (ascending, 0 <= s < P, 0 always) at
/// which some rank's queries see the block that started s positions upstream; every step
/// without a window or documents. The engines run only these steps: a block jumps over the
/// others in one exchange, and the backward's gradients go home from the last one in one
/// exchange. The same on every rank for the same config (no communication).
std::vector<int> ring_steps_with_work(const AttentionConfig& c, int ranks);

}  // namespace engine
}  // namespace rfa
