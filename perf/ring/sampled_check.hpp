// SPDX-License-Identifier: BSD-3-Clause
// The main job's check at any length: a few rows of this rank's results against attention
// computed in float64 for those rows alone, with the keys and queries they see generated from
// the problem's hash on the fly (ring_problem.hpp), so no rank holds more than one row of the
// sequence. Its cost grows with S, not S^2: each sampled row is one pass over the positions it
// sees.
//
// Query rows: out, lse and dQ from scratch, in one pass with an online softmax (dQ = scale *
// (sum_j p_j (dO.v_j) k_j - D sum_j p_j k_j) / Z, D = dO.out, accumulated under the same
// rescaling). Key rows: dK and dV summed over every query that sees the key, in float64, from
// the run's lse and D = rowsum(dO * out) of those queries (gathered by position, 8 bytes per
// row and head); those statistics are themselves what the query rows check.
#pragma once

#include <vector>

#include "check_reductions.hpp"
#include "comm/communicator.hpp"
#include "engine/ring_attention.hpp"

namespace rfa {
namespace perf {

/// Rows of each rank's shard the sampled check looks at by default: the first, the last and
/// evenly spaced ones between, each for two heads (and, for the key rows, one K/V head).
constexpr int kSampledRowsPerRank = 8;

/// Which rows the sampled check reads.
struct SampledRows {
  /// 0: `per_rank` local rows of every rank (its first, its last, evenly spaced ones between:
  /// each shard's edges, where a ring step's boundaries fall). Otherwise this many global
  /// positions (the first, the last, evenly spaced ones between), each checked on the rank that
  /// holds it for heads chosen by the position's index alone: the same entries at any P, layout
  /// or strategy, so that errors measured at different P compare like with like.
  std::int64_t positions = 0;
  int per_rank = kSampledRowsPerRank;
};

/// Collective. Errors as check_against_single_rank(): max |got - ref| over the sampled entries
/// of every rank, relative to the largest |ref| among them (lse: absolute). `mine`: the global
/// positions of this rank's rows; `rows`: which of them to sample (at most all). With
/// `sinks` (one logit per head; empty: none) each sampled row's float64 softmax includes its
/// head's sink, and `dsinks`, the run's sink gradient, is checked against the sum over every
/// rank's rows of -exp(sink - lse) * (dout . out) on the run's own out and lse (themselves
/// checked on the sampled rows).
template <class T>
CheckErrors check_sampled_rows(comm::Communicator& ring, const engine::AttentionConfig& cfg, const PositionMap& mine,
                               engine::Tensor4<const T> out, engine::Tensor3<const float> lse,
                               engine::Tensor4<const T> dq, engine::Tensor4<const T> dk, engine::Tensor4<const T> dv,
                               SampledRows rows = {}, const std::vector<float>& sinks = {},
                               const std::vector<double>& dsinks = {});

}  // namespace perf
}  // namespace rfa
