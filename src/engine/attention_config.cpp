// SPDX-License-Identifier: BSD-3-Clause
#include "engine/attention_config.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "comm/agreement.hpp"
#include "core/documents.hpp"
#include "core/error.hpp"
#include "core/view_limits.hpp"
#include "engine/device_support.hpp"
#include "engine/rank_positions.hpp"
#include "layout/chunk_placement.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {

void validate_local(const AttentionConfig& c, int ranks) {
  require(c.dtype == RFA_DTYPE_FLOAT32 || c.dtype == RFA_DTYPE_BFLOAT16 || c.dtype == RFA_DTYPE_FLOAT16,
          "unknown dtype value ", int(c.dtype));
  layout::validate_shape(c.layout, c.seq_total, ranks);
  kernels::AttentionParams p = kernels::make_params(c.batch, c.seq_total / ranks, c.seq_total / ranks, c.heads,
                                                    c.kv_heads, c.head_dim, c.mask, c.softmax_scale);
  apply_config(c, p);
  kernels::validate(p);
  validate_document_lists(c.doc_bounds.data(), std::int64_t(c.doc_bounds.size()), c.doc_offsets.data(),
                          std::int64_t(c.doc_offsets.size()), c.batch, c.seq_total, "document boundaries",
                          "document list offsets");
  require_device_support(c.device, c.head_dim, c.dv(), c.dtype, c.layout, c.softmax_scale, c.softcap);
  if (c.cuda_kernels == CudaKernels::cudnn && c.device != Device::cuda) {
    fail(RFA_ERROR_UNSUPPORTED, "cuDNN's block kernel runs on CUDA contexts only (the device is the host)");
  }
  // The caller's tensors are wrapped in Views: they must be able to index every element.
  const std::int64_t local = c.seq_total / ranks;
  require_view_extents("q", {c.batch, local, c.heads, c.head_dim});
  require_view_extents("out", {c.batch, local, c.heads, c.dv()});
  require_view_extents("lse", {c.batch, c.heads, local});
}

void require_same_config(comm::Communicator& comm, const AttentionConfig& c) {
  auto bits = [](float x) {
    std::int32_t b;
    static_assert(sizeof b == sizeof x, "float is 32 bits");
    std::memcpy(&b, &x, sizeof x);
    return b;
  };
  comm::require_same_everywhere(
      comm,
      {{"layout", c.layout},
       {"mask", c.mask},
       {"dtype", c.dtype},
       {"softmax_scale (bits)", bits(c.softmax_scale)},
       {"softcap (bits)", bits(c.softcap)},
       {"batch", c.batch},
       {"seq_total", c.seq_total},
       {"heads", c.heads},
       {"kv_heads", c.kv_heads},
       {"head_dim", c.head_dim},
       {"value head dim", c.dv()},
       {"device", std::int64_t(c.device)},
       {"window", c.window},
       {"cuda kernels", std::int64_t(c.cuda_kernels)},
       {"deterministic", c.deterministic ? 1 : 0},
       {"cuda kernel path", std::int64_t(c.cuda_path)},
       {"document boundaries (count)", std::int64_t(c.doc_bounds.size())},
       {"document boundaries (hash)", document_bounds_hash(c.doc_bounds.data(), std::int64_t(c.doc_bounds.size()))},
       {"document list offsets (count)", std::int64_t(c.doc_offsets.size())},
       {"document list offsets (hash)", document_bounds_hash(c.doc_offsets.data(), std::int64_t(c.doc_offsets.size()))},
       {"mask ranges (count)", c.ranges ? std::int64_t(c.ranges->entries().size()) : -1},
       {"mask ranges (hash)", c.ranges ? c.ranges->hash() : 0}});
}

void validate_collective(comm::Communicator& comm, const AttentionConfig& c) {
  // Agreement first: a rank with a different config would otherwise fail validation for a
  // reason that only confuses (or pass it and deadlock later on mismatched message sizes).
  require_same_config(comm, c);
  bool ok = true;
  rfa_result_t code = RFA_SUCCESS;
  std::string message;
  try {
    validate_local(c, comm.size());
  } catch (const Error& e) {
    ok = false;
    code = e.code();
    message = e.what();
  }
  // Every rank saw the same config, so every rank reached the same verdict; the collective
  // still runs so that a rank whose validation threw for a local reason cannot strand others.
  comm::fail_everywhere_unless(comm, ok, ok ? RFA_ERROR_INVALID_ARGUMENT : code, message);
}

kernels::MaskRule mask_rule(const AttentionConfig& c, std::int64_t entry) {
  kernels::AttentionParams p;
  p.batch = c.batch;
  p.mask = c.mask;
  apply_config(c, p);
  return p.rule(entry);
}

std::int64_t mask_rule_entries(const AttentionConfig& c) { return c.doc_offsets.empty() ? 1 : c.batch; }

void apply_config(const AttentionConfig& c, kernels::AttentionParams& p) {
  p.window = c.window;
  p.doc_bounds = c.doc_bounds.empty() ? nullptr : c.doc_bounds.data();
  p.doc_bound_count = std::int64_t(c.doc_bounds.size());
  p.doc_offsets = c.doc_offsets.empty() ? nullptr : c.doc_offsets.data();
  p.ranges = c.ranges ? c.ranges->index() : MaskRangeIndex();
  p.deterministic = c.deterministic;
  p.softcap = c.softcap;
  p.value_dim = c.value_dim;
  p.bf16_products = c.bf16_products;
}

namespace {

/// ring_steps_with_work() for the balanced layout, chunk by chunk: a rank's rows are up to eight
/// chunks spread over the sequence, so the ranks' position ranges overlap and reject nothing,
/// and P^2 classifications of 64 segment pairs would take minutes at P = 4096. Each query
/// chunk is classified only against the key chunks of its MaskRule::key_bounds(), and the pair's step
/// (from the chunks' owners) is marked once one of them is visible.
std::vector<int> balanced_steps_with_work(const AttentionConfig& c, int ranks) {
  const std::int64_t S = c.seq_total, chunks = std::int64_t(layout::kBalancedChunksPerRank) * ranks, len = S / chunks;
  std::vector<int> owner(static_cast<std::size_t>(chunks), -1);
  const layout::ChunkPlacement& placement = balanced_placement(c, ranks);
  for (int r = 0; r < ranks; ++r)
    for (const std::int64_t x : placement.chunks[std::size_t(r)]) owner[std::size_t(x)] = r;
  std::vector<char> needed(std::size_t(ranks), 0);
  needed[0] = 1;         // a rank's own block (see ring_steps_with_work)
  int open = ranks - 1;  // steps not yet known to be needed
  for (std::int64_t e = 0; e < mask_rule_entries(c) && open > 0; ++e) {
    const kernels::MaskRule rule = mask_rule(c, e);
    for (std::int64_t x = 0; x < chunks && open > 0; ++x) {
      std::int64_t lo = 0, hi = 0;
      rule.key_bounds(x * len, (x + 1) * len - 1, S, lo, hi);
      if (lo > hi) continue;
      const PositionMap q = PositionMap::contiguous(x * len, len);
      for (std::int64_t y = lo / len; y <= hi / len && open > 0; ++y) {
        const std::size_t s = std::size_t((owner[std::size_t(x)] - owner[std::size_t(y)] + ranks) % ranks);
        if (needed[s]) continue;
        const PositionMap k = PositionMap::contiguous(y * len, len);
        if (kernels::classify_tile(rule, q, 0, len, k, 0, len) != kernels::TileVisibility::hidden) {
          needed[s] = 1;
          --open;
        }
      }
    }
  }
  std::vector<int> steps;
  for (int s = 0; s < ranks; ++s)
    if (needed[std::size_t(s)]) steps.push_back(s);
  return steps;
}

}  // namespace

std::vector<int> ring_steps_with_work(const AttentionConfig& c, int ranks) {
  std::vector<int> steps;
  if (c.window <= 0 && c.doc_bounds.size() <= 2 && !c.ranges) {  // causal alone: zigzag needs every step
    for (int s = 0; s < ranks; ++s) steps.push_back(s);
    return steps;
  }
  if (c.layout == RFA_LAYOUT_BALANCED) return balanced_steps_with_work(c, ranks);
  // Each (owner, step) pair is looked at until its step is known to be needed, at most P^2 of
  // them per entry's rule: each rank's map and position range are computed once, its document
  // range once per rule, and the ranges reject most pairs before the full segment-by-segment
  // classification. With per-sequence documents a step is needed where any entry needs it.
  const std::int64_t L = layout::local_length(c.layout, c.seq_total, ranks);
  std::vector<PositionMap> maps(static_cast<std::size_t>(ranks));
  std::vector<std::int64_t> lo(maps.size()), hi(maps.size()), dlo(maps.size()), dhi(maps.size());
  for (int r = 0; r < ranks; ++r) {
    const std::size_t i = std::size_t(r);
    maps[i] = rank_positions(c, ranks, r);
    maps[i].range(0, L, lo[i], hi[i]);
  }
  std::vector<char> needed(std::size_t(ranks), 0);
  needed[0] = 1;  // a rank's own block: its queries' diagonal (the backward starts its gradients there)
  for (std::int64_t e = 0; e < mask_rule_entries(c); ++e) {
    const kernels::MaskRule rule = mask_rule(c, e);
    for (std::size_t i = 0; i < maps.size(); ++i) {
      dlo[i] = rule.document_of(lo[i]);
      dhi[i] = rule.document_of(hi[i]);
    }
    for (int owner = 0; owner < ranks; ++owner) {
      const std::size_t k = std::size_t(owner);
      for (int s = 1; s < ranks; ++s) {
        if (needed[std::size_t(s)]) continue;
        const std::size_t q = std::size_t((owner + s) % ranks);
        if (rule.documents() && (dhi[k] < dlo[q] || dhi[q] < dlo[k])) continue;
        if (rule.causal && lo[k] > hi[q]) continue;
        if (rule.window > 0 && lo[q] - hi[k] >= rule.window) continue;
        if (kernels::classify_blocks(rule, maps[q], maps[k]) != kernels::TileVisibility::hidden)
          needed[std::size_t(s)] = 1;
      }
    }
  }
  for (int s = 0; s < ranks; ++s)
    if (needed[std::size_t(s)]) steps.push_back(s);
  return steps;
}

kernels::AttentionParams block_params(const AttentionConfig& c, int ranks, int position, int block_owner) {
  const std::int64_t local = layout::local_length(c.layout, c.seq_total, ranks);
  kernels::AttentionParams p =
      kernels::make_params(c.batch, local, local, c.heads, c.kv_heads, c.head_dim, c.mask, c.softmax_scale);
  apply_config(c, p);
  p.q_pos = rank_positions(c, ranks, position);
  p.k_pos = rank_positions(c, ranks, block_owner);
  // The merged out is stored in the context's dtype: with 16 bits, fp32-accurate partials would
  // double the bf16 kernels' P V products for an accuracy the final rounding takes away
  // (perf/RESULTS.md, "2026-11-27 (later) — the ring's bf16 partials rounded once").
  p.fp32_accurate_partials = c.dtype == RFA_DTYPE_FLOAT32;
  return p;
}

}  // namespace engine
}  // namespace rfa
