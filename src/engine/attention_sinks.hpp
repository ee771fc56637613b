// SPDX-License-Identifier: BSD-3-Clause
// Attention sinks: a learned logit per query head that joins every row's softmax denominator
// once, with no value of its own (the probability mass it takes is attention paid to nothing).
// With lse the log-sum-exp of a row's visible scores and s the sink of its head, the row's
// denominator becomes exp(lse) + exp(s), so
//   lse' = log(exp(lse) + exp(s)),   out' = out * exp(lse - lse').
// Both are applied once, to the finished rows every strategy returns: the ring's steps, the
// Ulysses exchange and the all-gather never see the sink, so it is counted once whatever the
// strategy, layout or number of ranks. The backward needs nothing new for q, k and v: with out'
// and lse' the kernels' probabilities exp(score - lse') and their row term D = sum(dout * out')
// are those of the softmax that includes the sink (its value is zero, so its dP is zero). The
// sink's own gradient is dLoss/ds = -sum over rows of exp(s - lse') * D.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/workspace.hpp"

namespace rfa {
namespace engine {

/// Rows one team of the sink gradient's kernel sums: a device gets heads x ceil(rows / this)
/// teams, enough to keep every multiprocessor's loads in flight (16 heads of one team each would
/// keep 16 of an H100's 132 SMs busy, and a team of 1024 rows read them a few at a time).
inline constexpr std::int64_t kSinkRowsPerTeam = 128;

/// Folds `sinks` ([heads] fp32, in `Space`) into a finished forward's `out` [batch][rows][heads][dim]
/// and `lse` [batch][heads][rows], in place. A sink of -inf changes nothing. Queued on `exec`
/// (the host's runs before it returns). Each thread scales `values_per_thread` values of one row
/// (0: the space's choice, a whole row on the host and 8 on a device, where a warp's threads
/// then read 256 contiguous values at once).
template <class T, class Space>
void apply_sinks(const typename Space::execution_space& exec, const float* sinks, SpaceTensor4<T, Space> out,
                 SpaceTensor3<float, Space> lse, std::int64_t values_per_thread = 0);

/// This rank's part of each head's sink gradient: -sum over its rows (every batch entry) of
/// exp(sinks[h] - lse) * sum_d dout * out, with out and lse the forward's results (the sink
/// included). Returns [heads] values in float64, on the host: `wait_for_kernel`, called once the
/// kernel is queued, waits for `exec` (a device context's under its deadline: a blocking wait or a
/// copy to pageable host memory behind a kernel that never ends would hang); none: exec.fence().
/// Each team sums `rows_per_team` rows (>= 1) of one head; the host adds a head's teams in
/// order, so the result depends on the shape and rows_per_team only.
template <class T, class Space>
std::vector<double> sink_gradient_part(const typename Space::execution_space& exec, const float* sinks,
                                       SpaceTensor4<const T, Space> out, SpaceTensor4<const T, Space> dout,
                                       SpaceTensor3<const float, Space> lse,
                                       const std::function<void()>& wait_for_kernel = {},
                                       std::int64_t rows_per_team = kSinkRowsPerTeam);

}  // namespace engine
}  // namespace rfa
