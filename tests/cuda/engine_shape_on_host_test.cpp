// SPDX-License-Identifier: BSD-3-Clause
// What the CUDA block compute hands the kernels, read the way the kernels read it, on the host:
// every ring step's params (engine::block_params, as the ring builds them) made into an
// rfa_cuda_attention_shape by the engine (src/engine/cuda_attention_shape.cpp), then into the
// kernels' mask and position maps (kernels_cuda/src/shape_mask.hpp, attention_mask.cuh compiled
// for the host). For P = 1..4 on the layouts CUDA contexts take, every (query, key) pair the
// kernels show is the pair the documented mask shows at the positions the layout documents
// (rfa.h, written out here), for every batch entry; the whole block is classified as the host
// kernels classify it; and the shape's sizes, scale, soft cap and head dims are the config's.
// Masks: none, causal, windows on and beside the chunk edges, documents, per-sequence documents,
// ranges with and without a window and documents.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/mask_ranges.hpp"
#include "documented_mask.hpp"
#include "engine/attention_config.hpp"
#include "engine/cuda_attention_shape.hpp"
#include "engine/rank_positions.hpp"
#include "kernels/tile_visibility.hpp"

// The kernels-level API's host checks.
#include "api_support.hpp"
#include "argument_checks.hpp"

// The device headers after the stand-ins for CUDA's qualifiers.
#include "device_code_on_host.hpp"

#include "shape_mask.hpp"

namespace {

using rfa::MaskRangeIndex;
using rfa::MaskRanges;
using rfa::engine::AttentionConfig;
using rfa::engine::DeviceMaskPointers;
using rfa_cuda::detail::DeviceMask;
using rfa_cuda::detail::DevicePositions;
using rfa_cuda::detail::TileKind;

constexpr std::int64_t S = 24;  // divisible by 2P for P = 1..4 (zigzag)

/// Global position of local row i of rank r of P, as rfa.h documents each layout.
std::int64_t documented_position(rfa_layout_t layout, int P, int r, std::int64_t i) {
  switch (layout) {
    case RFA_LAYOUT_CONTIGUOUS: return r * (S / P) + i;
    case RFA_LAYOUT_ZIGZAG: {
      const std::int64_t chunk = S / (2 * P);
      return i < chunk ? r * chunk + i : (2 * P - 1 - r) * chunk + (i - chunk);
    }
    case RFA_LAYOUT_STRIPE: return i * P + r;
    default: ADD_FAILURE() << "no documented positions for layout " << int(layout); return -1;
  }
}

/// Copies of the config's mask lists, standing in for the device copies copy_mask_to_device
/// makes: at addresses of their own, so that a shape carrying the params' host lists instead of
/// them is told apart (the range entries as six int64 each, as on the device).
struct MaskCopies {
  std::vector<std::int64_t> doc_bounds, doc_offsets, band_begin, band_end, band_offset, entries;

  explicit MaskCopies(const AttentionConfig& c) : doc_bounds(c.doc_bounds), doc_offsets(c.doc_offsets) {
    if (!c.ranges) return;
    const MaskRangeIndex x = c.ranges->index();
    if (x.band_count == 0) return;  // no band: the kernels read nothing
    band_begin.assign(x.band_begin, x.band_begin + x.band_count);
    band_end.assign(x.band_end, x.band_end + x.band_count);
    band_offset.assign(x.band_offset, x.band_offset + x.band_count + 1);
    const std::int64_t* e = reinterpret_cast<const std::int64_t*>(x.entries);
    entries.assign(e, e + 6 * x.band_offset[x.band_count]);
  }
  DeviceMaskPointers pointers() const {
    auto at = [](const std::vector<std::int64_t>& v) { return v.empty() ? nullptr : v.data(); };
    return DeviceMaskPointers{at(doc_bounds), at(doc_offsets), at(band_begin),
                              at(band_end),   at(band_offset), at(entries)};
  }
};

/// The rows a position map of the kernels covers (flash_api.cu refuses a map whose lengths do not
/// add up to the sequence).
std::int64_t rows_covered(const rfa_cuda_position_map& m) {
  std::int64_t rows = 0;
  for (int i = 0; i < m.count; ++i) rows += m.seg[i].length;
  return rows;
}

/// Batch entry e's document boundaries as the config documents them (none: one document).
std::vector<std::int64_t> entry_documents(const AttentionConfig& c, std::int64_t e) {
  if (c.doc_offsets.empty()) return c.doc_bounds;
  return std::vector<std::int64_t>(c.doc_bounds.begin() + c.doc_offsets[std::size_t(e)],
                                   c.doc_bounds.begin() + c.doc_offsets[std::size_t(e + 1)]);
}

/// Every ring step of P = 1..4 on `layout`; returns the pairs checked, stopping at a config's
/// first disagreement (reported).
std::int64_t check_every_step(AttentionConfig c, rfa_layout_t layout, const std::string& name) {
  c.layout = layout;
  std::int64_t pairs = 0;
  const MaskCopies copies(c);
  const DeviceMaskPointers pointers = copies.pointers();
  for (int P = 1; P <= 4; ++P)
    for (int me = 0; me < P; ++me)
      for (int owner = 0; owner < P; ++owner) {
        const rfa::kernels::AttentionParams p = rfa::engine::block_params(c, P, me, owner);
        const rfa_cuda_attention_shape s = rfa::engine::cuda_attention_shape(p, RFA_CUDA_BF16, pointers);
        std::ostringstream where_stream;
        where_stream << name << ", layout " << int(layout) << ", P " << P << ", queries of rank " << me
                     << ", keys of rank " << owner << ": ";
        const std::string where = where_stream.str();
        const std::int64_t L = S / P;
        EXPECT_EQ(s.batch, c.batch) << where;
        EXPECT_EQ(s.seq_q, L) << where;
        EXPECT_EQ(s.seq_k, L) << where;
        EXPECT_EQ(s.heads, c.heads) << where;
        EXPECT_EQ(s.kv_heads, c.kv_heads) << where;
        EXPECT_EQ(s.head_dim, c.head_dim) << where;
        EXPECT_EQ(s.value_head_dim, c.value_dim == c.head_dim ? 0 : c.value_dim) << where;
        const double scale = c.softmax_scale != 0.f ? c.softmax_scale : 1.0 / std::sqrt(double(c.head_dim));
        EXPECT_FLOAT_EQ(s.scale, float(scale)) << where;
        EXPECT_EQ(s.softcap, c.softcap) << where;
        EXPECT_EQ(s.dtype, RFA_CUDA_BF16) << where;
        EXPECT_EQ(rows_covered(s.q_positions), L) << where;
        EXPECT_EQ(rows_covered(s.k_positions), L) << where;
        // The device copies, never the params' host lists.
        EXPECT_EQ(s.doc_bounds, c.doc_bounds.size() > 0 ? pointers.doc_bounds : nullptr) << where;
        EXPECT_EQ(s.doc_offsets, c.doc_bounds.size() > 0 ? pointers.doc_offsets : nullptr) << where;
        // Nothing the kernels-level API would refuse before looking at the device.
        EXPECT_EQ(rfa_cuda::detail::check_common_shape(s), RFA_CUDA_SUCCESS)
            << where << rfa_cuda::detail::last_message();
        if (s.ranges != 0) {
          EXPECT_EQ(s.range_band_begin, pointers.range_band_begin) << where;
          EXPECT_EQ(s.range_band_end, pointers.range_band_end) << where;
          EXPECT_EQ(s.range_band_offset, pointers.range_band_offset) << where;
          EXPECT_EQ(s.range_entries, pointers.range_entries) << where;
        }

        const DeviceMask mask = rfa_cuda::detail::device_mask(s);
        const DevicePositions qp = rfa_cuda::detail::device_positions(s.q_positions);
        const DevicePositions kp = rfa_cuda::detail::device_positions(s.k_positions);
        const int seq_q = int(s.seq_q), seq_k = int(s.seq_k);
        for (std::int64_t e = 0; e < c.batch; ++e) {
          const DeviceMask entry = mask.for_entry(int(e));
          const std::vector<std::int64_t> docs = entry_documents(c, e);
          const rfa_test::DocumentedMask truth{c.mask == RFA_MASK_CAUSAL, c.window, &docs,
                                               c.ranges ? &c.ranges->entries() : nullptr};
          bool any = false, all = true;
          for (int i = 0; i < seq_q; ++i)
            for (int j = 0; j < seq_k; ++j) {
              const std::int64_t q = documented_position(layout, P, me, i),
                                 k = documented_position(layout, P, owner, j);
              const bool want = truth(q, k);
              any = any || want;
              all = all && want;
              ++pairs;
              using rfa_cuda::detail::masked_index;
              if (rfa_cuda::detail::visible_pair(entry, masked_index(entry, qp, i, seq_q),
                                                 masked_index(entry, kp, j, seq_k)) != want) {
                ADD_FAILURE() << where << "entry " << e << ": the kernels show query " << q << " key " << k << " as "
                              << !want << ", the documented mask as " << want;
                return pairs;
              }
            }
          const TileKind block = rfa_cuda::detail::classify_tile(entry, qp, kp, 0, seq_q, seq_q, 0, seq_k, seq_k);
          const rfa::kernels::TileVisibility host =
              rfa::kernels::classify_tile(p.rule(e), p.q_pos, 0, seq_q, p.k_pos, 0, seq_k);
          const TileKind expected = host == rfa::kernels::TileVisibility::hidden ? TileKind::kSkip
                                    : host == rfa::kernels::TileVisibility::full ? TileKind::kFull
                                                                                 : TileKind::kPartial;
          EXPECT_EQ(int(block), int(expected))
              << where << "entry " << e << ": the whole block (skip 0, partial 1, full 2)";
          EXPECT_FALSE(block == TileKind::kSkip && any)
              << where << "entry " << e << ": a block with a visible pair skipped";
          EXPECT_FALSE(block == TileKind::kFull && !all)
              << where << "entry " << e << ": a block with a hidden pair full";
        }
      }
  return pairs;
}

/// The ring's config for the case's mask; bf16 on two batch entries with GQA.
AttentionConfig base_config(rfa_mask_t mask, std::int64_t window) {
  AttentionConfig c;
  c.mask = mask;
  c.window = window;
  c.dtype = RFA_DTYPE_BFLOAT16;
  c.batch = 2;
  c.seq_total = S;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 64;
  return c;
}

const rfa_layout_t kCudaLayouts[] = {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE};

TEST(EngineShapeOnHost, CausalAndWindowsOnEveryStep) {
  std::int64_t pairs = 0;
  for (rfa_layout_t layout : kCudaLayouts)
    for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL})
      // Windows on and beside the edges of zigzag's chunks at P = 4 (3) and of a rank's block (6).
      for (std::int64_t window : {0, 1, 2, 3, 4, 5, 6, 7, 11, 12, 13}) {
        std::ostringstream name;
        name << (mask == RFA_MASK_CAUSAL ? "causal" : "no mask") << ", window " << window;
        pairs += check_every_step(base_config(mask, window), layout, name.str());
      }
  EXPECT_GT(pairs, 100000);
}

TEST(EngineShapeOnHost, DocumentsOnEveryStep) {
  AttentionConfig shared = base_config(RFA_MASK_CAUSAL, 0);
  shared.doc_bounds = {0, 5, 12, 12, 24};  // an empty document among them
  AttentionConfig own = base_config(RFA_MASK_CAUSAL, 9);
  own.doc_bounds = {0, 7, 24, 0, 3, 17, 24};  // entry 0's list, then entry 1's
  own.doc_offsets = {0, 3, 7};
  AttentionConfig every_list_empty = base_config(RFA_MASK_CAUSAL, 0);
  every_list_empty.doc_offsets = {0, 0, 0};
  for (rfa_layout_t layout : kCudaLayouts) {
    check_every_step(shared, layout, "causal, documents shared by the batch");
    check_every_step(own, layout, "causal, window 9, per-sequence documents");
    check_every_step(every_list_empty, layout, "causal, per-sequence documents, every list empty");
  }
}

TEST(EngineShapeOnHost, RangesOnEveryStep) {
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 12; ++trial) {
    AttentionConfig c = base_config(RFA_MASK_RANGES, trial % 3 == 1 ? 5 : 0);
    if (trial % 4 == 2) c.doc_bounds = {0, 9, 24};
    const std::vector<rfa_mask_range_t> list = rfa_test::random_mask_ranges(rng, S, 1 + trial % 5, {0, 3, 6, 9, 12});
    c.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), S, "ranges");
    for (rfa_layout_t layout : kCudaLayouts) check_every_step(c, layout, "ranges, trial " + std::to_string(trial));
  }
}

TEST(EngineShapeOnHost, HeadDimsScaleAndSoftCap) {
  AttentionConfig c = base_config(RFA_MASK_CAUSAL, 0);
  c.head_dim = 192;
  c.value_dim = 128;
  c.softmax_scale = 0.1f;
  c.softcap = 30.f;
  check_every_step(c, RFA_LAYOUT_ZIGZAG, "MLA head dims, scale 0.1, soft cap 30");
  c.value_dim = 192;  // a value head dim equal to head_dim is no value head dim of its own
  check_every_step(c, RFA_LAYOUT_ZIGZAG, "value head dim equal to head_dim");
}

TEST(EngineShapeOnHost, MoreThanTwoSegmentsAreRefused) {
  rfa::kernels::AttentionParams p = rfa::kernels::make_params(1, 9, 9, 1, 1, 64, RFA_MASK_NONE);
  p.q_pos.count = 3;
  for (int s = 0; s < 3; ++s) p.q_pos.seg[s] = rfa::Segment{8 * s, 1, 3};
  try {
    rfa::engine::cuda_attention_shape(p, RFA_CUDA_BF16, DeviceMaskPointers{});
    ADD_FAILURE() << "a map of three segments reached the kernels";
  } catch (const rfa::Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INTERNAL);
  }
}

TEST(EngineShapeOnHost, DocumentsWithoutTheirDeviceCopyAreRefused) {
  AttentionConfig c = base_config(RFA_MASK_CAUSAL, 0);
  c.doc_bounds = {0, 5, 24};
  const rfa::kernels::AttentionParams p = rfa::engine::block_params(c, 2, 0, 1);
  try {
    rfa::engine::cuda_attention_shape(p, RFA_CUDA_BF16, DeviceMaskPointers{});
    ADD_FAILURE() << "documents reached the kernels without their device copy";
  } catch (const rfa::Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INTERNAL);
  }
}

}  // namespace
