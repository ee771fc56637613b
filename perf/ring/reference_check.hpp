// SPDX-License-Identifier: BSD-3-Clause
// The main job's correctness check: this rank's shard of the results against the single-rank
// kernels run in fp32 on the full sequence. Each rank computes only what its own rows need
// (its queries against all keys, all queries against its keys), using the kernels' global
// position maps, so the check costs about 2/P of one single-rank run per rank.
#pragma once

#include <vector>

#include "check_reductions.hpp"
#include "comm/communicator.hpp"
#include "engine/ring_attention.hpp"

namespace rfa {
namespace perf {

/// Collective. Errors are max|got - ref| / max|ref| over all ranks (lse: absolute). `mine`:
/// the global positions of this rank's rows (the strategy's local_positions()). With `sinks`
/// (one logit per head; empty: none) the reference folds them into its rows as
/// engine/attention_sinks.hpp defines them, and `dsinks`, the run's sink gradient, is checked.
template <class T>
CheckErrors check_against_single_rank(comm::Communicator& ring, const engine::AttentionConfig& cfg,
                                      const PositionMap& mine, engine::Tensor4<const T> out,
                                      engine::Tensor3<const float> lse, engine::Tensor4<const T> dq,
                                      engine::Tensor4<const T> dk, engine::Tensor4<const T> dv,
                                      const std::vector<float>& sinks = {}, const std::vector<double>& dsinks = {});

}  // namespace perf
}  // namespace rfa
