// SPDX-License-Identifier: BSD-3-Clause
// The performance model (docs/performance-model.md): the time a forward and a backward take on
// each rank, predicted from the problem (shape, dtype, mask, layout), the strategy and the
// machine (kernel rates, links, ranks per node), following each engine's schedule: which steps
// run, what each sends, and which transfers overlap which compute.
//
// Compute is the scores in the tiles the kernels compute (kernels/tile_work.hpp), counted as the
// kernels count them, at the rate a kernel benchmark measured on whole tiles; a masked tile
// costs what its size and its visible scores say (MachineModel). A transfer costs latency + bytes / bandwidth on
// the link it crosses (inside a node or between nodes). Bytes are the engines' own
// (PassTimings::bytes_sent), which the tests hold the model to.
#pragma once

#include <cstdint>
#include <string>

#include "engine/attention_config.hpp"
#include "engine/attention_strategy.hpp"
#include "kernels/tile_work.hpp"

namespace rfa {
namespace model {

/// One kind of link: a transfer of b bytes takes latency_s + b / bytes_per_s, and costs the
/// cores of the ranks at its two ends b * cpu_seconds_per_byte together (half at each end): a
/// host TCP stack's processing, which runs on the cores that compute; 0 where a NIC (RDMA) or
/// the GPUs move the bytes, and for shared memory, whose copies the bandwidth already counts.
/// The CPU cost matters where a transfer overlaps compute (the ring, the all-gather's next
/// chunk, the needed-only exchange's next round): it adds to that compute.
///
/// A link shaped by a token bucket (tc's tbf, a cloud NIC's bandwidth credits) passes up to
/// burst_bytes beyond its rate at once after it has stood idle: the bucket refills at the rate
/// while nothing is sent. The model credits that to the transfers a collective sends after its
/// kernels left the link idle (Ulysses' and the hybrid's all-to-alls home, the all-gather's
/// reduce-scatters, the ring's last dK/dV home); 0, a link that carries nothing above its rate,
/// credits nothing.
struct Link {
  double latency_s = 5e-6;
  double bytes_per_s = 10e9;
  double cpu_seconds_per_byte = 0.0;
  double burst_bytes = 0.0;
};

/// What the model knows of the machine. Ranks are placed ranks_per_node to a node, in ring
/// order (as rfa's topology ordering places them).
struct MachineModel {
  int ranks_per_node = 1;
  /// What the ranks of a node compute on: cores (divided by the threads of a rank) or GPUs.
  /// Fewer than ranks_per_node: ranks share them. A whole number of units: each busy rank stays
  /// on one unit (placed longest work first on the least loaded) and shares it evenly with the
  /// others there, as processes on cores and ranks on a GPU do; a fraction: each rank busy at a
  /// moment gets units / busy of one. Either way a rank whose neighbours idle runs faster. 0:
  /// one per rank, nothing shared.
  double compute_units_per_node = 0;
  /// Where ranks share units: the share of its unit a rank takes while it waits beside ranks
  /// that compute (rfa's wait: a short spin that yields, then polls of MPI between naps, and the
  /// progress they make), which the computing ranks there lose; 0 to 1. 0 on GPUs, whose
  /// waiting ranks leave the device alone, and where nothing is shared. rfa_model_check measures
  /// it over waits as long as a calibration block's forward and backward, the spin included.
  double waiting_rank_share = 0;
  Link intra_node;  ///< between ranks of one node (shared memory, NVLink)
  Link inter_node;  ///< between nodes (the network)
  /// One rank's kernel rate on whole tiles, in FLOP/s by FlashAttention's count (forward
  /// 4*d per score and head, backward 2.5 times that), as the kernel benchmarks report it for
  /// the device and dtype, on a compute unit of its own (compute_units_per_node says how
  /// ranks that share one divide it).
  double forward_flops_per_s = 100e9;
  double backward_flops_per_s = 100e9;
  /// What a kernel call costs beyond its scores, per head, for each query row it computes and
  /// each key row it reads (the rows of the tiles with visible scores), in seconds on a unit of
  /// its own: loading and packing the rows, finishing the softmax and writing or merging the
  /// output; the backward's row sums, dQ, dK and dV. It makes a small block (a large P, a
  /// narrow window) slower per score than a large one. rfa_model_check calibrates it from
  /// square blocks of two lengths, which cannot tell a query row's cost from a key row's: the
  /// model counts the same for both.
  double forward_row_seconds = 0.0, backward_row_seconds = 0.0;
  /// One rank's local copies (packing around the all-to-alls and gathers), bytes per second.
  double copy_bytes_per_s = 5e9;
  /// The kernels' tiles (query rows x key rows, and where the query tiles start) in the
  /// forward and the backward.
  kernels::TileShape forward_tile = kernels::kHostForwardTile, backward_tile = kernels::kHostBackwardTile;
  /// What a tile the mask cuts costs, relative to a score of a whole tile: `masked_tile_cost`
  /// per score of the tile plus `masked_visible_cost` per score the mask lets through. The CUDA
  /// kernels compute such a tile whole and then mask it (1, 0); the host kernels skip the
  /// register blocks the mask hides and pay for the masking (calibrated by rfa_model_check).
  double forward_masked_tile_cost = 1.0, forward_masked_visible_cost = 0.0;
  double backward_masked_tile_cost = 1.0, backward_masked_visible_cost = 0.0;
  /// The KV all-gather calls the kernels once per K/V head (chunk) on packed rows, the other
  /// engines once per block over every head, whose rows interleave the heads; the former run at
  /// this multiple of the rate above (one head's rows stay in cache). 1: no difference;
  /// rfa_model_check measures it on whole tiles.
  double packed_head_forward_speedup = 1.0, packed_head_backward_speedup = 1.0;
};

/// One pass on one rank.
struct PassPrediction {
  double seconds = 0;          ///< the whole pass
  double compute_seconds = 0;  ///< its kernels alone
  double bytes_sent = 0;       ///< to other ranks, as the engine counts them
  /// How long the link the pass sends on stands idle before the pass ends (what refills a
  /// bucket's burst for a transfer that follows it: Link::burst_bytes), on this rank
  /// (predict_rank); 0 where the model does not follow it (the needed-only exchange) and in
  /// predict(), which takes the slowest rank's times over ranks.
  double idle_link_seconds_at_end = 0;
};

struct Prediction {
  PassPrediction forward, backward;
};

/// The prediction for ring position `rank` of `ranks`. Throws RFA_ERROR_INVALID_ARGUMENT where
/// the strategy cannot run the problem (engine::validate_strategy).
Prediction predict_rank(const engine::AttentionConfig& config, const engine::StrategyChoice& choice, int ranks,
                        int rank, const MachineModel& machine);

/// The slowest rank's times and the largest bytes over the ranks (at most 64 of them looked at,
/// evenly spread, when there are more).
Prediction predict(const engine::AttentionConfig& config, const engine::StrategyChoice& choice, int ranks,
                   const MachineModel& machine);

}  // namespace model
}  // namespace rfa
