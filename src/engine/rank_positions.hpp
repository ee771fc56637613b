// SPDX-License-Identifier: BSD-3-Clause
// Which rows each ring position holds under a config's layout: the fixed layouts' maps
// (layout/sequence_layout.hpp), or the balanced layout's, whose chunks go to ranks by the work
// the config's mask leaves in them (layout/chunk_placement.hpp). The engines, the model and the
// sharding helpers all ask here, so every one of them sees the same rows.
#pragma once

#include <cstdint>
#include <vector>

#include "core/positions.hpp"
#include "engine/attention_config.hpp"
#include "engine/placement_refinement.hpp"
#include "layout/chunk_placement.hpp"

namespace rfa {
namespace engine {

/// The global positions ring position `position` of `ranks` holds, in local row order
/// (validated as layout::validate). For the balanced layout the placement is computed once per
/// ring size and mask and shared by the config's copies (AttentionConfig::placements); the same
/// on every rank for the same config, with no communication.
PositionMap rank_positions(const AttentionConfig& c, int ranks, int position);

/// The balanced layout's placement on a ring of `ranks` (validated: S a multiple of 8 ranks),
/// from the config's cache; the same object for every copy of the config until the mask changes.
const layout::ChunkPlacement& balanced_placement(const AttentionConfig& c, int ranks);

/// The balanced layout's placement on a ring of `ranks`, solved (not cached): the chunks placed
/// by balanced_chunk_work(), then refined by the tiles of whole rank maps (refine_placement(),
/// every batch entry's rule that masks anything). `report` (optional) says what the refinement did.
layout::ChunkPlacement solve_balanced_placement(const AttentionConfig& c, int ranks,
                                                RefinementReport* report = nullptr);

/// The work of each of the balanced layout's kBalancedChunksPerRank * ranks chunks: the (query,
/// key) pairs the config's mask (causal or not, window, documents, ranges) leaves visible to the
/// chunk's queries, summed over the batch entries. Exact while every query of every rule fits a
/// budget of 2^20 counts; beyond it, estimated from equal strata of each chunk, one query each
/// (at least one per chunk and rule), so that creation takes bounded time at any S.
std::vector<double> balanced_chunk_work(const AttentionConfig& c, int ranks);

}  // namespace engine
}  // namespace rfa
