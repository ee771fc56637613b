#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Mutation check: does the test suite notice small faults in the code that decides what is
computed? Each mutation below is one plausible slip (a comparison off by one, a swapped sign, a
field left out of the agreement) in the step selection, tile visibility, merge, position maps,
gradient routing, agreement, attention-sink, soft-cap, head-routing, argument-checking and CUDA
mask code, the CUDA block compute's shapes, the ring order, the deadlines of collectives, the
sharding helpers, the backward's split key tiles, the performance model, the value checks, the
staged transport's pinned pool, the workspace arena, Kokkos' lifetime, the Fortran bindings, the
main job's check, and in the MPI test main. The script copies the working tree to a scratch folder,
builds it once (CPU only: no CUDA, benchmarks or docs), checks that the chosen tests pass there,
then for each mutation applies it to the copy, rebuilds, runs the tests meant to catch it and
restores the file. Your working tree is never modified. A mutation whose tests this build does
not make (the CUDA host tests need CUDA's headers) is skipped and said so. A mutation the tests
do not notice is MISSED and the script exits with status 1; docs/testing.md ("Edges, random
masks and the mutation check") holds the list and the last result. Run it before changing that
code, and add a mutation when you find a slip the suite let through.

usage: python3 scripts/mutate.py [--work DIR] [--only NAME,...] [--full] [--jobs N]
       python3 scripts/mutate.py --check-list [--tests-in BUILD]
                                (each mutation's text occurs once; no build; with --tests-in,
                                 each mutation's tests are among BUILD's, a build of every part)
       python3 scripts/mutate.py --list
  --work DIR   scratch folder (default: build-mutate in the repository; kept between runs, so a
               second run rebuilds only what changed)
  --only       the mutations to run, by name
  --full       run the whole suite (less the multinode label) for every mutation instead of
               each mutation's own tests
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The tests that check results against the float64 reference, step selection and layout.
ENGINE = r"^rfa_engine_test[.]np[24]$|^rfa_mask_edges_test[.]np[1-5]$"
KERNELS = r"^rfa_kernels_test$"
LAYOUT = r"^layout_test$"
FORTRAN = r"^fortran_api_test[.]np2$"
SAMPLED = r"^rfa_sampled_check_test[.]np[12]$"


@dataclass
class Mutation:
    name: str
    area: str
    path: str
    old: str
    new: str
    tests: str  # ctest -R regular expression
    why: str


MUTATIONS = [
    Mutation("step-window-range", "step selection", "src/engine/attention_config.cpp",
             "if (rule.window > 0 && lo[q] - hi[k] >= rule.window) continue;",
             "if (rule.window > 0 && lo[q] - hi[k] >= rule.window - 2) continue;",
             ENGINE, "a step whose nearest key is window - 2 tokens back is skipped"),
    Mutation("step-shared-document", "step selection", "src/engine/attention_config.cpp",
             "if (rule.documents() && (dhi[k] < dlo[q] || dhi[q] < dlo[k])) continue;",
             "if (rule.documents() && (dhi[k] <= dlo[q] || dhi[q] < dlo[k])) continue;",
             ENGINE, "a step is skipped when its block's last document is the queries' first"),
    Mutation("tile-window-hidden", "tile visibility", "src/kernels/tile_visibility.hpp",
             "if (rule.window > 0 && q_lo - k_hi >= rule.window) return TileVisibility::hidden;",
             "if (rule.window > 0 && q_lo - k_hi >= rule.window - 1) return TileVisibility::hidden;",
             KERNELS + "|" + ENGINE, "a tile whose nearest pair is window - 1 apart is skipped"),
    Mutation("tile-window-full", "tile visibility", "src/kernels/tile_visibility.hpp",
             "const bool window_full = rule.window <= 0 || q_hi - k_lo < rule.window;",
             "const bool window_full = rule.window <= 0 || q_hi - k_lo <= rule.window;",
             KERNELS + "|" + ENGINE, "a tile with one pair exactly a window apart is computed unmasked"),
    Mutation("tile-causal-full", "tile visibility", "src/kernels/tile_visibility.hpp",
             "const bool causal_full = !rule.causal || k_hi <= q_lo;",
             "const bool causal_full = !rule.causal || k_hi <= q_lo + 1;",
             KERNELS + "|" + ENGINE, "a diagonal tile with one key after its first query is computed unmasked"),
    Mutation("document-of-boundary", "tile visibility", "src/kernels/tile_visibility.hpp",
             "if (doc_bounds[mid] <= position)", "if (doc_bounds[mid] < position)",
             KERNELS + "|" + ENGINE, "a document's first token is counted in the document before"),
    Mutation("position-range-short", "position maps", "src/core/positions.hpp",
             "const std::int64_t last = seg[s].start + (b - 1 - base) * seg[s].stride;",
             "const std::int64_t last = seg[s].start + (b - 2 - base) * seg[s].stride;",
             KERNELS + "|" + ENGINE, "a row range ends one row early, so tiles it reaches look hidden"),
    Mutation("zigzag-second-chunk", "position maps", "src/layout/sequence_layout.cpp",
             "Segment{(2 * p - 1 - r) * chunk, 1, chunk}", "Segment{(p + r) * chunk, 1, chunk}",
             LAYOUT + "|" + r"^capi_forward_backward_test[.]np2$",
             "ranks hold chunks r and P + r: a consistent layout, but not the documented zigzag"),
    Mutation("merge-lse-sign", "merge", "src/kernels/merge_partial.cpp",
             "lse(b, h, i) = log_add_exp(l, bl);", "lse(b, h, i) = log_add_exp(l, l);",
             ENGINE, "the merged log-sum-exp counts the running partial twice and the block's not at all"),
    Mutation("merge-weight-sign", "merge", "src/kernels/merge_partial.cpp",
             "  return sigmoid(bl - l);", "  return sigmoid(l - bl);",
             ENGINE, "the merged output takes the other partial's weight"),
    Mutation("gradient-last-hop", "gradient routing", "src/engine/travelling_gradients.hpp",
             "const int hops = i_ + 1 < n ? steps_[i_ + 1] - s : P - s;",
             "const int hops = i_ + 1 < n ? steps_[i_ + 1] - s : P - s - 1;",
             ENGINE, "the last dK/dV partial stops one rank short of its owner"),
    Mutation("gradient-held-not-added", "gradient routing", "src/engine/travelling_gradients.hpp",
             "        blocks_.add_held_key_gradients(dk_block_, dv_block_);\n        return;",
             "        return;",
             r"^rfa_engine_test[.]np4$", "a step's dK/dV held by the backend never joins the travelling partial"),
    Mutation("gradient-written-over-not-added", "gradient routing", "src/engine/travelling_gradients.hpp",
             "    if (!arriving()) return {dk_block_, dv_block_};\n    apart_ = true;\n    return {dk_step_, dv_step_};\n  }\n\n"
             "  /// Instead of contribution()",
             "    if (!arriving()) return {dk_block_, dv_block_};\n    return {dk_step_, dv_step_};\n  }\n\n"
             "  /// Instead of contribution()",
             r"^rfa_engine_test[.]np4$",
             "a step's dK/dV written over a buffer of its own never joins the travelling partial"),
    Mutation("agreement-window", "agreement", "src/engine/attention_config.cpp",
             '{"window", c.window},\n', "",
             r"^rfa_engine_test[.]np2$|^capi_options_agreement_test[.]np[23]$",
             "ranks with different windows are not told apart"),
    Mutation("agreement-compare", "agreement", "src/comm/agreement.cpp",
             "if (r.value_low[i] != r.value_high[i]) {", "if (r.value_low[i] > r.value_high[i]) {",
             r"^comm_agreement_test[.]np[23]$|^capi_options_agreement_test[.]np2$",
             "no value is ever found to differ between ranks"),
    Mutation("document-hash", "agreement", "src/core/documents.cpp",
             "for (std::int64_t i = 0; i < count; ++i) fnv1a_append(h, bounds[i]);",
             "for (std::int64_t i = 0; i < count && i < 2; ++i) fnv1a_append(h, bounds[i]);",
             r"^capi_options_agreement_test[.]np[23]$|^core_documents_test$",
             "the documents' hash reads only the first two boundaries"),
    Mutation("sink-rescale", "sinks", "src/engine/attention_sinks.cpp",
             "const float factor = kept_share(before, s);",
             "const float factor = 1.0f / kept_share(before, s);",
             r"^capi_attention_sinks_test[.]np1$",
             "a row is scaled up by the sink's share instead of down"),
    Mutation("sink-share-from-rounded-lse", "sinks", "src/engine/attention_sinks.cpp",
             "const float factor = kept_share(before, s);",
             "const float factor = ::expf(before - lse_with_sink(before, s));",
             r"^rfa_attention_sinks_test$",
             "a row's share beside its sink comes from the rounded lse with the sink: 1 for 1/2 at lses of 1e8"),
    Mutation("sink-team-last-row", "sinks", "src/engine/attention_sinks.cpp",
             "return {first, first + per_team < rows ? first + per_team : rows};",
             "return {first, first + per_team < rows ? first + per_team : rows - 1};",
             r"^rfa_attention_sinks_test$",
             "the sinks' gradient leaves out the last row of the last team"),
    Mutation("apply-sinks-thread-piece", "sinks", "src/engine/attention_sinks.cpp",
             "const std::int64_t r = t / parts, first = (t % parts) * part;",
             "const std::int64_t r = t / parts, first = t % parts;",
             r"^rfa_attention_sinks_test$",
             "a thread of apply_sinks starts its piece of the row at the piece's index, not its first value: values are scaled twice or not at all"),
    Mutation("apply-sinks-block-end", "sinks", "src/engine/attention_sinks.cpp",
             "const std::int64_t last = first + part < D ? first + part : D;",
             "const std::int64_t last = first + part;",
             r"^rfa_attention_sinks_test$",
             "a thread of apply_sinks whose piece is longer than the row's rest scales the next row's first values too: they are scaled twice"),
    Mutation("sink-gradient-team-head", "sinks", "src/engine/attention_sinks.cpp",
             "const TeamRows mine = team_rows(team.league_rank() % chunks, rows_per_team, rows);",
             "const TeamRows mine = team_rows(team.league_rank() / H, rows_per_team, rows);",
             r"^rfa_attention_sinks_test$",
             "a gradient team's chunk of rows is read from its rank as if the teams ran head by head fastest"),
    Mutation("apply-sinks-lse", "sinks", "src/engine/attention_sinks.cpp",
             "if (s != -INFINITY) lse(b, h, i) = lse_with_sink(lse(b, h, i), s);",
             "if (s != -INFINITY) lse(b, h, i) = lse(b, h, i);",
             r"^rfa_attention_sinks_test$|^capi_attention_sinks_test[.]np1$",
             "apply_sinks scales the values but leaves every lse without the sink"),
    Mutation("sink-sum-ranks", "sinks", "src/comm/host_sums.cpp",
             "sum[i] += v;", "sum[i] = v;",
             r"^capi_attention_sinks_test[.]np[23]$",
             "the sinks' gradient keeps the last rank's rows only"),
    Mutation("sink-agreement", "sinks", "capi/attention.cpp",
             "if (sinks.given) comm::require_same_everywhere(", "if (!sinks.given) comm::require_same_everywhere(",
             r"^capi_attention_sinks_test[.]np2$",
             "ranks with different sinks are not told apart"),
    Mutation("softcap-slope", "softcap", "src/kernels/flash_backward.cpp",
             "* slope * vscale", "* vscale",
             r"^rfa_kernels_test$|^capi_softcap_test[.]np2$",
             "the backward leaves out the cap's slope 1 - tanh^2"),
    Mutation("softcap-forward", "softcap", "src/kernels/flash_forward.cpp",
             "if (capped) {\n        const float c = p.softcap * kLog2e;",
             "if (!capped) {\n        const float c = p.softcap * kLog2e;",
             r"^rfa_kernels_test$|^capi_softcap_test[.]np2$",
             "the forward leaves the scores uncapped"),
    Mutation("softcap-bf16-forward", "softcap", "src/kernels/flash_forward_bf16.cpp",
             "if (capped) simd::cap_rows(", "if (!capped) simd::cap_rows(",
             r"^rfa_kernels_test$",
             "the forward on hardware bf16 products leaves capped scores uncapped (and caps uncapped ones)"),
    Mutation("softcap-bf16-slope", "softcap", "src/kernels/flash_backward_bf16.cpp",
             "ds_scale = slope * vscale;", "ds_scale = vscale;",
             r"^rfa_kernels_test$",
             "the backward on hardware bf16 products leaves out the cap's slope 1 - tanh^2"),
    Mutation("softcap-slope-rounds-to-zero", "softcap", "src/kernels/simd.hpp",
             "slope = (e * q) * q;",
             "slope = splat<V>(1.0f) - (splat<V>(1.0f) - q) * (splat<V>(1.0f) - q);",
             r"^rfa_kernels_test$",
             "the cap's slope taken as 1 - t^2, which is 0 where t rounds to 1: gradients past the cap lost"),
    Mutation("cuda-merge-weight-from-rounded-lse", "CUDA kernels", "kernels_cuda/src/row_epilogue.cuh",
             "e.running = block_larger ? t * r : r;", "e.running = expf(running_lse - e.lse);",
             r"^rfa_cuda_row_epilogue_on_host_test$",
             "the CUDA forward's fused merge weighs the running row from the rounded merged lse: weights summing to 2 at lses of 1e8"),
    Mutation("cuda-nan-row-seen-no-key", "CUDA kernels", "kernels_cuda/src/row_epilogue.cuh",
             "const float block_lse = sum == 0.f ? -INFINITY : row_max_log2 * kLn2 + logf(sum);",
             "const float block_lse = !(sum > 0.f) ? -INFINITY : row_max_log2 * kLn2 + logf(sum);",
             r"^rfa_cuda_row_epilogue_on_host_test$",
             "a CUDA forward row whose sum is NaN (a NaN score) reads as having seen no key: lse -inf"),
    Mutation("cuda-softcap-slope-rounds-to-zero", "CUDA kernels", "kernels_cuda/src/score_cap.cuh",
             "slope = is_near ? fmaf(-near, near, 1.f) : 4.f * e * r * r;",
             "slope = 1.f - (is_near ? near : 1.f - 2.f * e * r) * (is_near ? near : 1.f - 2.f * e * r);",
             r"^rfa_cuda_row_epilogue_on_host_test$",
             "the CUDA kernels' cap slope taken as 1 - t^2, which is 0 where t rounds to 1"),
    Mutation("softcap-bf16-masked", "softcap", "src/kernels/flash_backward_bf16.cpp",
             "pr = simd::select_below(sr, -std::numeric_limits<float>::max(), simd::splat<V>(0.0f),\n                                    simd::exp2_probability(capped));",
             "pr = simd::exp2_probability(capped);",
             r"^rfa_kernels_test$",
             "the capped backward on hardware bf16 products gives masked scores a probability: tanh(-inf) is -1"),
    Mutation("ranges-covered-corner", "mask ranges", "src/core/mask_ranges.hpp",
             "k_hi - qa <= r.diag_hi", "k_hi - qb <= r.diag_hi",
             KERNELS + "|" + r"^capi_mask_ranges_test[.]np2$",
             "a tile an entry covers only in part is computed unmasked"),
    Mutation("ranges-causal-diagonal", "mask ranges", "src/core/mask_ranges.cpp",
             "case RFA_RANGE_CAUSAL: e.diag_hi = r.k_end - r.q_end;",
             "case RFA_RANGE_CAUSAL: e.diag_hi = r.k_end - r.q_end + 1;",
             KERNELS + "|" + r"^capi_mask_ranges_test[.]np[12]$",
             "a causal entry lets each query see one key past the diagonal"),
    Mutation("ranges-band-keys", "mask ranges", "src/core/mask_ranges.cpp",
             "in_band.k_end = std::min(e.k_end, in_band.q_end + e.diag_hi);",
             "in_band.k_end = std::min(e.k_end, in_band.q_end + e.diag_hi - 1);",
             KERNELS + "|" + r"^capi_mask_ranges_test[.]np2$",
             "an entry's keys in a band of queries end one key early"),
    Mutation("scan-causal-visible-diagonal", "tile count", "src/kernels/key_tile_scan.cpp",
             "return key_lo(kt) > q_hi; }));", "return key_lo(kt) >= q_hi; }));",
             r"^rfa_kernels_tile_work_test$", "the tile count skips a key tile whose first key is the last query's own position"),
    Mutation("scan-causal-full-edge", "tile count", "src/kernels/key_tile_scan.cpp",
             "return key_hi(kt) > q_lo; }));", "return key_hi(kt) > q_lo + 1; }));",
             r"^rfa_kernels_tile_work_test$", "the tile count takes a key tile reaching one key past the first query as whole"),
    Mutation("scan-window-visible-edge", "tile count", "src/kernels/key_tile_scan.cpp",
             "return q_lo - key_hi(kt) < rule.window; }));", "return q_lo - key_hi(kt) < rule.window - 1; }));",
             r"^rfa_kernels_tile_work_test$", "the tile count skips a key tile whose nearest key is window - 1 back from the first query"),
    Mutation("scan-window-full-edge", "tile count", "src/kernels/key_tile_scan.cpp",
             "return q_hi - key_lo(kt) < rule.window; }));", "return q_hi - key_lo(kt) <= rule.window; }));",
             r"^rfa_kernels_tile_work_test$", "the tile count takes a key tile with one key exactly a window back from the last query as whole"),
    Mutation("scan-documents-two-full", "tile count", "src/kernels/key_tile_scan.cpp",
             "if (dq_lo != dq_hi) {", "if (dq_lo != dq_hi && false) {",
             r"^rfa_kernels_tile_work_test$", "the tile count takes a tile of the first document as whole for query rows in two documents"),
    Mutation("scan-full-empty-kept", "tile count", "src/kernels/key_tile_scan.cpp",
             "if (full_a >= full_b) full_a = full_b = t1;", "if (full_a > full_b + 1) full_a = full_b = t1;",
             r"^rfa_kernels_tile_work_test$", "an empty run of whole tiles splits the cut ones so that the tile count takes a tile twice"),
    Mutation("scan-last-tile-short", "tile count", "src/kernels/key_tile_scan.cpp",
             "t1 = end == Lk_ ? nk_ : end / tile_k_;", "t1 = end / tile_k_;",
             r"^rfa_kernels_tile_work_test$", "the tile count never visits the keys' last, short tile"),
    Mutation("scan-straddle-aligned", "tile count", "src/kernels/key_tile_scan.cpp",
             "if (end < Lk_ && end % tile_k_ != 0 &&", "if (end < Lk_ &&",
             r"^rfa_kernels_tile_work_test$", "the tile count visits a tile starting where a key segment ends twice"),
    Mutation("scan-ranges-band-last-row", "tile count", "src/kernels/key_tile_scan.cpp",
             "x.band_begin[b] <= pieces[i].hi;", "x.band_begin[b] < pieces[i].hi;",
             r"^rfa_kernels_tile_work_test$", "the tile count misses a band starting at a tile's last row"),
    Mutation("scan-ranges-last-key", "tile count", "src/kernels/key_tile_scan.cpp",
             "return key_lo(kt) > reach_hi; });", "return key_lo(kt) >= reach_hi; });",
             r"^rfa_kernels_tile_work_test$", "the tile count skips a key tile whose first key is the last a band reaches"),
    Mutation("scan-ranges-first-key", "tile count", "src/kernels/key_tile_scan.cpp",
             "return key_hi(kt) >= reach_lo; });", "return key_hi(kt) > reach_lo; });",
             r"^rfa_kernels_tile_work_test$", "the tile count skips a key tile whose last key is the first a band reaches"),
    Mutation("ring-forward-owner-direction", "step selection", "src/engine/ring_forward.cpp",
             "const int owner = (me - s + P) % P;", "const int owner = (me + s) % P;",
             ENGINE, "the forward masks a step's block as the one s ranks downstream instead of upstream"),
    Mutation("ring-forward-direct-hidden", "step selection", "src/engine/ring_forward.cpp",
             "if (visible || direct) {", "if (visible) {",
             ENGINE + r"|^capi_mask_ranges_test[.]np[1-8]$|^capi_forward_backward_test",
             "a one-step pass whose block the mask hides whole never writes its output"),
    Mutation("ring-forward-output-unzeroed", "merge", "src/engine/ring_forward.cpp",
             "if (!direct) blocks.fill(acc, 0.0f);", "if (false) blocks.fill(acc, 0.0f);",
             ENGINE + r"|^capi_mask_ranges_test[.]np[1-8]$",
             "a rank whose queries see no key keeps whatever its output held"),
    Mutation("mpi-uneven-empty-skips-tag", "ring exchange", "src/comm/mpi/mpi_communicator.cpp",
             """  const mpi::ExchangeRoute route = route_for(hops);
  if (send_bytes == 0 && recv_bytes == 0) return Exchange();""",
             """  if (send_bytes == 0 && recv_bytes == 0) return Exchange();
  const mpi::ExchangeRoute route = route_for(hops);""",
             r"^comm_mpi_communicator_test[.]np[2-4]$",
             "a rank that moves nothing in an uneven exchange skips its tag: its later exchanges match other messages"),
    Mutation("mpi-reduce-scatter-block", "ring exchange", "src/comm/mpi/mpi_communicator.cpp",
             "float* partial = block(rank_ - 2 - step);", "float* partial = block(rank_ - 1 - step);",
             r"^comm_mpi_communicator_test[.]np[2-4]$", "the reduce-scatter adds a received partial into the block it just sent"),
    Mutation("shard-copy-past-end", "sharding", "src/layout/shard_copy.cpp",
             "require(last < blocks.global_seq, what,", "require(last <= blocks.global_seq, what,",
             LAYOUT + r"|^capi_invalid_calls_test[.]np[12]$", "a position map reaching one row past the global tensor is copied"),
    Mutation("tma-stride-limit-unchecked", "CUDA arguments", "kernels_cuda/src/api_support.cpp",
             "  if (t.batch >= limit || t.seq >= limit || t.head >= limit)", "  if (false)",
             r"^rfa_cuda_tma_input_on_host_test$", "a stride of 2^40 bytes or more reaches a Hopper kernel's TMA descriptor"),
    Mutation("tma-one-index-stride-kept", "CUDA arguments", "kernels_cuda/src/api_support.cpp",
             "if (t.batch == 0 || batch == 1) t.batch", "if (t.batch == 0) t.batch",
             r"^rfa_cuda_tma_input_on_host_test$", "a batch of one keeps its stride, which addresses nothing, in the TMA descriptor"),
    Mutation("needed-pack-batch-stride", "needed-only exchange", "src/engine/needed_kv_attention.cpp",
             "std::memcpy(to + (packed[j] + b * piece[j]) * width,", "std::memcpy(to + (packed[j] * batch + b) * width,",
             r"^rfa_needed_kv_attention_test[.]np[234]$|^rfa_mask_edges_test[.]np[2-5]$", "a batch entry's rows are packed interleaved with the other entries' instead of after them"),
    Mutation("needed-last-round-home", "needed-only exchange", "src/engine/needed_kv_attention.cpp",
             "for (std::size_t i = rounds_.size() >= 2 ? rounds_.size() - 2 : 0; i < rounds_.size(); ++i) bring_home(i);",
             "for (std::size_t i = rounds_.size() >= 2 ? rounds_.size() - 1 : 0; i < rounds_.size(); ++i) bring_home(i);",
             r"^rfa_needed_kv_attention_test[.]np[234]$|^rfa_mask_edges_test[.]np[2-5]$", "the last round but one's dK/dV never come home"),
    Mutation("needed-round-gradients-unzeroed", "needed-only exchange", "src/engine/needed_kv_attention.cpp",
             "      blocks.fill(Kokkos::subview(grads[i % 2].received_rows,",
             "      if (i < 2) blocks.fill(Kokkos::subview(grads[i % 2].received_rows,",
             r"^rfa_needed_kv_attention_test[.]np[234]$|^rfa_mask_edges_test[.]np[2-5]$", "a round's dK/dV buffer keeps the sums of the round two before it"),
    Mutation("needed-gradients-back-distance", "needed-only exchange", "src/engine/needed_kv_attention.cpp",
             "std::size_t(B * r.send.rows * (wk + wv)) * sizeof(float), ranks() - r.distance);",
             "std::size_t(B * r.send.rows * (wk + wv)) * sizeof(float), r.distance);",
             r"^rfa_needed_kv_attention_test[.]np[234]$|^rfa_mask_edges_test[.]np[2-5]$", "the received rows' dK/dV travel on to the next rank instead of back to their owner"),
    Mutation("hybrid-slices-one-ring", "head routing", "src/engine/hybrid_attention.cpp",
             "  if (rings_->size() == 1) return rank_positions(config_, degree_, group_->rank());",
             "  if (rings_->size() >= 1) return rank_positions(config_, degree_, group_->rank());",
             ENGINE + r"|^perf[.]rfa_run_hybrid[.]np4$", "a hybrid rank with several rings reports the positions of a one-ring layout"),
    Mutation("ranges-spans-gap", "mask ranges", "src/kernels/range_tile_spans.hpp",
             "for (; j < first_[i][s]; ++j) hide(j);", "for (; j + 1 < first_[i][s]; ++j) hide(j);",
             KERNELS + "|" + r"^capi_mask_ranges_test[.]np2$",
             "the key just before each span of a row's visible keys is left unmasked"),
    Mutation("entry-documents-steps", "per-sequence documents", "src/engine/attention_config.cpp",
             "for (std::int64_t e = 0; e < mask_rule_entries(c); ++e) {",
             "for (std::int64_t e = 0; e < 1; ++e) {",
             r"^capi_sequence_documents_test[.]np[23]$",
             "the ring's steps are chosen by the first batch entry's documents alone"),
    Mutation("entry-documents-blocks", "per-sequence documents", "src/kernels/flash_attention.hpp",
             "for (std::int64_t e = 0; e < p.rule_entries() && (all_full || !any_visible); ++e) {",
             "for (std::int64_t e = 0; e < 1 && (all_full || !any_visible); ++e) {",
             r"^capi_sequence_documents_test[.]np[23]$",
             "a step's block is computed only if the first entry's queries see it"),
    Mutation("entry-documents-key-tiles", "per-sequence documents", "src/kernels/seen_key_tiles.hpp",
             "for (std::int64_t e = 0; e < p.rule_entries() && !any; ++e) {",
             "for (std::int64_t e = 0; e < 1 && !any; ++e) {",
             KERNELS, "the forward copies only the key tiles the first entry's queries see"),
    Mutation("entry-documents-rule", "per-sequence documents", "src/kernels/flash_attention.hpp",
             "const std::int64_t first = doc_offsets[entry], count = doc_offsets[entry + 1] - first;",
             "const std::int64_t first = doc_offsets[0], count = doc_offsets[1] - first;",
             KERNELS + "|" + r"^capi_sequence_documents_test[.]np2$",
             "every batch entry takes the first entry's documents"),
    Mutation("softcap-log2-range-unchecked", "soft cap", "src/kernels/attention_params.cpp",
             "if (p.softcap > 0.0f && (double(p.softcap) * log2e > most || scale / double(p.softcap) > most)) {",
             "if (false) {",
             r"^capi_softcap_test[.]np1$",
             "a soft cap whose log2-domain factor leaves fp32 is taken: every row reads as seeing no key"),
    Mutation("softcap-config", "softcap", "src/engine/attention_config.cpp",
             "p.softcap = c.softcap;", "p.softcap = 0.0f;",
             r"^capi_softcap_test[.]np[12]$",
             "the cap never reaches the block kernels"),
    Mutation("softcap-cuda-ratio-default-scale", "softcap", "src/engine/device_support.cpp",
             "const float scale = softmax_scale != 0.0f ? softmax_scale : float(1.0 / std::sqrt(double(head_dim)));",
             "const float scale = softmax_scale;",
             r"^capi_invalid_calls_test[.]np1$",
             "a CUDA context's check of softcap / scale takes the default scale as 0: every soft cap is refused"),
    Mutation("device-lambda-in-header", "sequence transposes", "src/engine/sequence_transpose.hpp",
             "Kokkos::parallel_for(name, Range(exec, 0, rows * width), EachElement<Op>{op, width});",
             "Kokkos::parallel_for(\n        name, Range(exec, 0, rows * width), KOKKOS_LAMBDA(std::int64_t i) {\n"
             "          op(i / width, i % width, i % width + 1);\n        });",
             r"^scripts[.]device_lambdas_in_headers$",
             "a KOKKOS_LAMBDA in a header's template: nvcc's wrapper of it calls a null pointer where the "
             "linker keeps another unit's copy (a crash on a GPU only)"),
    Mutation("auto-cudnn-for-allgather", "kernel choice", "src/engine/cuda_kernel_choice.cpp",
             "const bool rfa_only = kind == StrategyKind::allgather || kind == StrategyKind::needed;",
             "const bool rfa_only = kind == StrategyKind::needed;",
             r"^rfa_engine_test[.]np1$",
             "an automatic choice of cuDNN stays for the KV all-gather, which refuses it: creation fails"),
    Mutation("auto-path-hopper-backward", "kernel choice", "src/engine/attention_config.hpp",
             "return path == CudaPath::sm90 || (forward && path == CudaPath::sm90_forward);",
             "return path == CudaPath::sm90 || path == CudaPath::sm90_forward;",
             r"^rfa_engine_test[.]np1$",
             "the automatic path runs the backward on the Hopper kernels too, the slower of the two there"),
    Mutation("value-dim-config", "value head dims", "src/engine/attention_config.cpp",
             "p.value_dim = c.value_dim;", "p.value_dim = 0;",
             r"^capi_value_head_dim_test[.]np[12]$",
             "the block kernels are not told V's head dim"),
    Mutation("value-dim-ring-bytes", "value head dims", "src/engine/travelling_kv.hpp",
             "send_v_ = comm_.start_shift_exchange(v_.data(), v_recv_[i % 2].data(), v_bytes_, hops);",
             "send_v_ = comm_.start_shift_exchange(v_.data(), v_recv_[i % 2].data(), k_bytes_, hops);",
             r"^capi_value_head_dim_test[.]np[23]$",
             "the ring sends V in K's size"),
    Mutation("value-dim-exchange-home", "value head dims", "src/engine/head_exchange.hpp",
             "    const std::size_t mine = std::size_t(me());\n    const std::int64_t d = std::int64_t(local.extent(3));",
             "    const std::size_t mine = std::size_t(me());\n    const std::int64_t d = head_dim_;",
             r"^capi_value_head_dim_test[.]np[23]$",
             "Ulysses and the hybrid send dV home in Q and K's head dim"),
    Mutation("value-dim-bf16-dout-tail", "value head dims", "src/kernels/flash_backward_bf16.cpp",
             "      dout_ld = std::size_t(dim_v);", "      dout_ld = std::size_t(d);",
             KERNELS, "the bf16 backward reads a last query tile's dO rows in Q's head dim"),
    Mutation("value-dim-portable-output", "value head dims", "src/kernels/flash_forward.cpp",
             "for (int x = 0; x < dim_v; ++x) from_float(s.o[i * ldv + x] * inv, dst[x]);",
             "for (int x = 0; x < dim_v; ++x) from_float(s.o[i * ld + x] * inv, dst[x]);",
             KERNELS, "the portable forward reads its output rows at Q's pitch"),
    Mutation("balanced-map-range", "balanced layout", "src/core/positions.hpp",
             "    std::int64_t base = 0;\n    for (int s = 0; s < count; ++s) {",
             "    std::int64_t base = 0;\n    for (int s = 0; s < count && s < 2; ++s) {",
             r"^capi_balanced_layout_test[.]np[23]$|^rfa_kernels_tile_work_test$",
             "a position map's range ignores every segment after the second (the balanced layout's chunks): the "
             "key tiles' bounds that the query tiles' plan and the work counts read"),
    Mutation("balanced-work-causal", "balanced layout", "src/kernels/tile_visibility.hpp",
             "if (causal && q_hi < hi) hi = q_hi;", "if (false && q_hi < hi) hi = q_hi;",
             r"^capi_balanced_layout_test[.]np[23]$|^rfa_rank_positions_test$",
             "the causal mask no longer bounds the keys a query range reaches (the balanced layout's work)"),
    Mutation("balanced-steps-hull", "balanced layout", "src/engine/attention_config.cpp",
             "for (std::int64_t y = lo / len; y <= hi / len && open > 0; ++y) {",
             "for (std::int64_t y = lo / len; y < hi / len && open > 0; ++y) {",
             r"^rfa_rank_positions_test$|^rfa_mask_edges_test[.]np[2-4]$",
             "the balanced layout's step search leaves out the last key chunk a query chunk may see"),
    Mutation("tile-piece-short", "tile visibility", "src/kernels/tile_visibility.hpp",
             "hi = g.start + (i1 - 1) * g.stride;", "hi = g.start + (i1 - 2) * g.stride;",
             KERNELS + "|" + ENGINE, "a tile's piece of rows in one segment ends one row early, so a tile whose "
             "only visible pair is in its last row or column looks hidden"),
    Mutation("refine-column-update", "balanced layout", "src/engine/placement_refinement.cpp",
             "m.forward += s.col_a[0][i] + s.col_b[0][i] - at(0, r, s.a) - at(0, r, s.b);",
             "m.forward += s.col_a[0][i] + s.col_b[0][i] - at(0, r, s.a);",
             r"^rfa_placement_refinement_test$",
             "a swap's refinement forgets that the other ranks' blocks against the second rank's keys change"),
    Mutation("refine-pairs-bound", "balanced layout", "src/engine/placement_refinement.cpp",
             "candidate.pairs <= std::max(kPairsShareBound, start.pairs)",
             "candidate.pairs <= 2 * std::max(kPairsShareBound, start.pairs)",
             r"^rfa_rank_positions_test$",
             "evening the tiles may leave a rank 10% over the mean's visible pairs"),
    Mutation("forward-fixed-query-tiles", "query tiles", "src/kernels/flash_forward.cpp",
             "const ForwardTilePlan tiles(p, kHostForwardTile);",
             "const ForwardTilePlan tiles(p, {kHostForwardTile.q, kHostForwardTile.k, false});",
             r"^rfa_kernels_tile_work_test$",
             "the fp32 forward tiles its queries every 192 rows, not where the count and the model say"),
    Mutation("tile-work-window-unbounded", "query tiles", "src/kernels/tile_work.cpp",
             "std::int64_t bounded_window(const MaskRule& rule) { return std::min(rule.window, kUnbounded); }",
             "std::int64_t bounded_window(const MaskRule& rule) { return rule.window; }",
             r"^rfa_kernels_tile_work_test$",
             "the work counts take a window as long as int64 holds as it is: positions less it wrap"),
    Mutation("query-tile-cut-test", "query tiles", "src/kernels/query_tiles.cpp",
             "padded(end - b) * second < padded(end - r0)", "padded(end - b) * second > padded(end - r0)",
             r"^rfa_kernels_tile_work_test$",
             "a query tile is cut at a chunk boundary where that computes more, not fewer, scores"),
    Mutation("needed-last-seen-row", "needed-only exchange", "src/engine/needed_kv_plan.cpp",
             "const RowRun run{base + from, base + to + 1};", "const RowRun run{base + from, base + to};",
             r"^rfa_needed_kv_plan_test$|^rfa_needed_kv_attention_test[.]np[23]$",
             "the last row of each span a receiver sees is left out of what its owner sends"),
    Mutation("needed-gap-budget", "needed-only exchange", "src/engine/needed_kv_plan.cpp",
             "std::int64_t budget = seen / 20;", "std::int64_t budget = seen / 2;",
             r"^rfa_needed_kv_plan_test$|^perf[.]mask_balance$",
             "gaps are filled up to half the seen rows: a scattered set moves 1.5x what is seen"),
    Mutation("needed-dv-home", "needed-only exchange", "src/engine/needed_kv_attention.cpp",
             "add_unpacked(sent_[i], home + B * rounds_[i].send.rows * wk, B, L, wv, dv_acc.data());",
             "add_unpacked(sent_[i], home, B, L, wv, dv_acc.data());",
             r"^rfa_needed_kv_attention_test[.]np[23]$|^rfa_mask_edges_test[.]np[23]$",
             "the dV rows a receiver returns are added from where its dK rows are"),
    Mutation("bf16-key-tile-slot", "query tiles", "src/kernels/flash_forward_bf16.cpp",
             "kt_units[unit] + std::size_t(slot_of[kt]) * kCols * d;",
             "kt_units[unit] + std::size_t(kt) * kCols * d;",
             KERNELS, "the bf16 forward reads a key tile at its index, not at the slot its packed copy is in"),
    Mutation("gqa-forward-head", "heads", "src/kernels/flash_forward.cpp",
             "const int hk = int(h / (p.heads / p.kv_heads));",
             "const int hk = int(h % p.kv_heads);",
             KERNELS + "|" + ENGINE, "a GQA query head reads K/V head h mod kv_heads instead of its group's"),
    Mutation("scale-value-dim", "variants", "src/kernels/attention_params.cpp",
             "return softmax_scale != 0.0f ? softmax_scale : 1.0f / std::sqrt(float(head_dim));",
             "return softmax_scale != 0.0f ? softmax_scale : 1.0f / std::sqrt(float(dv()));",
             KERNELS + r"|^capi_value_head_dim_test[.]np[12]$",
             "the default softmax scale takes V's head dim where Q and K's differs (MLA)"),
    Mutation("ulysses-slot-head", "heads", "src/engine/head_routing.hpp",
             "return one_slot_per_query_head_ ? (q_first(r) + j) / group_ : kv_first(r) + j;",
             "return one_slot_per_query_head_ ? kv_first(r) + j / group_ : kv_first(r) + j;",
             r"^rfa_engine_test[.]np[234]$",
             "a Ulysses rank whose query heads straddle K/V groups counts its slots' groups from its first"),
    Mutation("hybrid-local-rows", "strategies", "src/engine/hybrid_attention.cpp",
             "return slice_rows(ring_->local_positions(), group_->rank() * local_seq_, local_seq_);",
             "return slice_rows(ring_->local_positions(), rings_->rank() * local_seq_, local_seq_);",
             r"^rfa_engine_test[.]np3$|^capi_forward_backward_test[.]np4$",
             "a hybrid rank reports the rows of its ring's index, not its group's, as its own"),
    Mutation("window-negative", "argument checks", "capi/options.cpp",
             "require(o.window >= 0,", "require(o.window >= -1,",
             r"^capi_invalid_calls_test[.]np[12]$", "a window of -1 is taken"),
    Mutation("ranges-end-bound", "argument checks", "src/core/mask_ranges.cpp",
             "require(end >= begin && end <= seq_total,", "require(end >= begin && end <= seq_total + 1,",
             r"^capi_mask_ranges_test[.]np[12]$|^capi_invalid_calls_test[.]np[12]$",
             "a range ending one token past the sequence is taken"),
    Mutation("documents-decreasing", "argument checks", "src/core/documents.cpp",
             "if (bounds[i] < bounds[i - 1]) {", "if (bounds[i] < bounds[i - 1] - 1) {",
             r"^capi_invalid_calls_test[.]np[12]$|^capi_sequence_documents_test[.]np[12]$|^core_documents_test$",
             "a boundary one token before the previous one is taken"),
    Mutation("cuda-causal-skip", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "if (mask.causal && k_lo > q_hi) return TileKind::kSkip;",
             "if (mask.causal && k_lo >= q_hi) return TileKind::kSkip;",
             r"^rfa_cuda_mask_on_host_test$", "the CUDA kernels skip a tile whose first key is its last query"),
    Mutation("cuda-segment-split", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "const bool q_split = q_first < qpos.length0 && q_last >= qpos.length0;",
             "const bool q_split = q_first < qpos.length0 && q_last > qpos.length0;",
             r"^rfa_cuda_mask_on_host_test$",
             "a tile whose last row is the second segment's first is judged as one piece, across the gap"),
    Mutation("cuda-walk-ends-short", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '  if (hi != INT64_MAX) span.end = static_cast<int>((rows_through(hi, p, seq) + tile_rows - 1) / tile_rows);',
             '  if (hi != INT64_MAX) span.end = static_cast<int>(rows_through(hi, p, seq) / tile_rows);',
             r"^rfa_cuda_mask_on_host_test$",
             'a bounded walk ends one tile early where its last visible row opens a tile: the kernels drop that row'),
    Mutation("cuda-walk-full-across-documents", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '  if (mask.document_of(p_lo) != mask.document_of(p_hi)) {',
             '  if (false) {',
             r"^rfa_cuda_mask_on_host_test$",
             "a block whose positions span two documents takes the first one's tiles as full: pairs across the documents show"),
    Mutation("cuda-walk-begin-partial-tile", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    span.begin = first < seq ? static_cast<int>(first / tile_rows) : tiles;',
             '    span.begin = static_cast<int>(first / tile_rows);',
             r"^rfa_cuda_mask_on_host_test$",
             "a key tile after every query begins the backward's walk at the last, partial query tile: a tile it need not visit"),
    Mutation("cuda-walk-full-from-row", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '  const int begin = static_cast<int>((a + tile_rows - 1) / tile_rows), end = static_cast<int>(b / tile_rows);',
             '  const int begin = static_cast<int>(a / tile_rows), end = static_cast<int>(b / tile_rows);',
             r"^rfa_cuda_mask_on_host_test$",
             "a walk takes as full the tile that holds its first full row, rows of which the mask hides: they see what they must not"),
    Mutation("cuda-key-walk-full-window-short", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    if (mask.window > 0) full_lo = window_reach_before(q_hi, mask.window);',
             '    if (mask.window > 0) full_lo = window_reach_before(q_hi, mask.window) + 1;',
             r"^rfa_cuda_mask_on_host_test$",
             "a windowed walk over key tiles classifies the full tile whose first key lies exactly a window before the last query"),
    Mutation("cuda-query-walk-full-window-past", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    if (mask.window > 0) full_hi = window_reach_after(k_lo, mask.window);',
             '    if (mask.window > 0) full_hi = window_reach_after(k_lo, mask.window) + 1;',
             r"^rfa_cuda_mask_on_host_test$",
             "a windowed walk over query tiles takes as full a tile whose last query is a window after the first key: that pair shows"),
    Mutation("cuda-key-walk-window-begins-late", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '  if (mask.window > 0) lo = window_reach_before(q_lo, mask.window);',
             '  if (mask.window > 0) lo = window_reach_before(q_lo, mask.window) + 1;',
             r"^rfa_cuda_mask_on_host_test$",
             'a windowed walk over key tiles begins one key late: where that key opens a tile, the kernels drop it'),
    Mutation("cuda-query-walk-window-ends-short", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '  if (mask.window > 0) hi = window_reach_after(k_hi, mask.window);',
             '  if (mask.window > 0) hi = window_reach_after(k_hi, mask.window) - 1;',
             r"^rfa_cuda_mask_on_host_test$",
             'a windowed walk over query tiles ends one query early: where that query opens a tile, the backward drops its gradients'),
    Mutation("cuda-walk-documents-begin-late", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    lo = first == 0 ? INT64_MIN : __ldg(doc_bounds + first);',
             '    lo = first == 0 ? INT64_MIN : __ldg(doc_bounds + first) + 1;',
             r"^rfa_cuda_mask_on_host_test$",
             "a walk under documents begins one position into the first document: where that key or query opens a tile, the kernels drop it"),
    Mutation("cuda-walk-documents-end-late", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    hi = last + 2 >= doc_bound_count ? INT64_MAX : __ldg(doc_bounds + last + 1) - 1;',
             '    hi = last + 2 >= doc_bound_count ? INT64_MAX : __ldg(doc_bounds + last + 1);',
             r"^rfa_cuda_mask_on_host_test$",
             "a walk under documents goes one position into the next document: a tile it need not visit"),
    Mutation("cuda-key-walk-ranges-reach-late", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '        const std::int64_t reach_lo = qa + __ldg(r + 4), reach_hi = qb + __ldg(r + 5);',
             '        const std::int64_t reach_lo = qa + __ldg(r + 4) + 1, reach_hi = qb + __ldg(r + 5);',
             r"^rfa_cuda_mask_on_host_test$",
             "a walk over key tiles under ranges begins one key past the lowest diagonal an entry reaches: the kernels drop that key"),
    Mutation("cuda-query-walk-ranges-reach-late", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '        const std::int64_t reach_lo = ka - __ldg(r + 5), reach_hi = kz - __ldg(r + 4);',
             '        const std::int64_t reach_lo = ka - __ldg(r + 5) + 1, reach_hi = kz - __ldg(r + 4);',
             r"^rfa_cuda_mask_on_host_test$",
             "a walk over query tiles under ranges begins one query past the lowest an entry lets see the keys: the backward drops its gradients"),
    Mutation("cuda-query-walk-ranges-past-limit", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    if (band_count > 0 && __ldg(band_offset + band_count) > kQuerySpanEntries) return false;',
             '    if (band_count > 0 && __ldg(band_offset + band_count) > 1000 * kQuerySpanEntries) return false;',
             r"^rfa_cuda_mask_on_host_test$",
             "a list of ranges past the backwards' limit is still read in full for each tile of keys"),
    Mutation("cuda-query-walk-ranges-limit-one-short", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    if (band_count > 0 && __ldg(band_offset + band_count) > kQuerySpanEntries) return false;',
             '    if (band_count > 0 && __ldg(band_offset + band_count) >= kQuerySpanEntries) return false;',
             r"^rfa_cuda_mask_on_host_test$",
             "a list of exactly the backwards' limit of ranges leaves their walks unbounded"),
    Mutation("cuda-query-span-reads-empty-index", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    if (band_count > 0 && __ldg(band_offset + band_count) > kQuerySpanEntries) return false;',
             '    if (__ldg(band_offset + band_count) > kQuerySpanEntries) return false;',
             r"^rfa_cuda_mask_on_host_test$",
             "the backward's walk reads the band offsets of ranges that have no bands (no arrays on a device)"),
    Mutation("cuda-window-reach-after-overflows", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '  return position > INT64_MAX - (w - 1) ? INT64_MAX : position + (w - 1);',
             '  return position + (w - 1);',
             r"^rfa_cuda_mask_on_host_test$",
             "a window longer than int64 can reach wraps the backward's walk to nothing"),
    Mutation("cuda-window-reach-before-overflows", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '  return position < INT64_MIN + (w - 1) ? INT64_MIN : position - (w - 1);',
             '  return position - (w - 1);',
             r"^rfa_cuda_mask_on_host_test$",
             "a window longer than int64 can reach wraps the forward's walk"),
    Mutation("cuda-rows-before-far-reach", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '  if (start < 0 && position > INT64_MAX + start) return rows;\n',
             '',
             r"^rfa_cuda_mask_on_host_test$",
             "a window's reach further from a negative start than int64 spans counts rows past the wrap"),
    Mutation("cuda-key-walk-ranges-unbounded", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             '    mask.ranges.key_span(q_lo, q_hi, part_lo, part_hi);\n    intersect_span(lo, hi, part_lo, part_hi);',
             '    mask.ranges.key_span(q_lo, q_hi, part_lo, part_hi);',
             r"^rfa_cuda_mask_on_host_test$",
             "the ranges no longer bound a walk over key tiles: every tile outside their reach is classified one by one"),
    Mutation("cuda-range-covered", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "covered = covered || (kb <= k_lo && k_hi < ke &&", "covered = covered || (kb <= k_lo && k_hi <= ke &&",
             r"^rfa_cuda_mask_on_host_test$", "a tile whose last key is just past an entry's keys is called full"),
    Mutation("cuda-entry-documents", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "m.doc_bound_count = __ldg(doc_offsets + b + 1) - first;",
             "m.doc_bound_count = __ldg(doc_offsets + b + 1) - first - 1;",
             r"^rfa_cuda_mask_on_host_test$", "a batch entry's mask leaves out its last document boundary"),
    Mutation("cuda-pair-past-end", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "MaskedIndex m{0, 0, i < seq};", "MaskedIndex m{0, 0, i <= seq};",
             r"^rfa_cuda_mask_on_host_test$",
             "a partial tile's row or column one past its sequence's end counts as inside it"),
    Mutation("cuda-pair-documents", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "mask.in_causal_window(q.position, k.position) && q.document == k.document &&",
             "mask.in_causal_window(q.position, k.position) &&",
             r"^rfa_cuda_mask_on_host_test$",
             "a partial tile's pairs ignore the documents (every kernel's per-element test)"),
    Mutation("cuda-fragment-columns", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "first_col + 8 * nb + 2 * (lane % 4) + c, col_seq);", "first_col + 8 * nb + 2 * (lane % 4), col_seq);",
             r"^rfa_cuda_mask_on_host_test$",
             "a partial tile's second column of each pair a lane holds is masked as its first"),
    Mutation("hopper-dq-unswizzled", "Hopper kernels", "kernels_cuda/src/hopper/backward_sm90_traits.hpp",
             "dq_swizzle(int t) { return static_cast<std::uint32_t>(t % 32 / 4) << 4; }",
             "dq_swizzle(int t) { return static_cast<std::uint32_t>(t % 32 / 4) << 0; }",
             r"^rfa_hopper_fragment_views_test$",
             "the Hopper backward writes its dQ pairs without the swizzle its TMA reduce-add reads"),
    Mutation("hopper-dq-atoms-across", "Hopper kernels", "kernels_cuda/src/hopper/backward_sm90_traits.hpp",
             "return e1 * 256 + j / 4 * (kBlockM / 8) * 256 + 8 * (j % 4);",
             "return e1 * 256 + j / 4 * 256 + 8 * (j % 4);",
             r"^rfa_hopper_fragment_views_test$",
             "the Hopper backward's dQ pairs take the swizzle atoms across the columns first"),
    Mutation("hopper-ds-unswizzled", "Hopper kernels", "kernels_cuda/src/hopper/backward_sm90_traits.hpp",
             "ds_swizzle(int t) { return static_cast<std::uint32_t>(t % 32 / 4) << 4; }",
             "ds_swizzle(int t) { return static_cast<std::uint32_t>(t % 32 / 4) << 7; }",
             r"^rfa_hopper_fragment_views_test$",
             "the Hopper backward writes its dS^T pairs without the swizzle dQ's product reads"),
    Mutation("hopper-ds-keys-along-row", "Hopper kernels", "kernels_cuda/src/hopper/backward_sm90_traits.hpp",
             "return 1024 * e1 + 16 * j; }", "return 128 * e1 + 16 * j; }",
             r"^rfa_hopper_fragment_views_test$",
             "the Hopper backward's dS^T pairs of a thread's second key go to the next row of the atom"),
    Mutation("cuda-fragment-roles", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             ": visible_pair(mask, col, rows[half]);", ": visible_pair(mask, rows[half], col);",
             r"^rfa_cuda_mask_on_host_test$",
             "the backward's partial tiles take its key rows for queries and its query columns for keys"),
    Mutation("cuda-fragment-bits", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "if (seen) bits |= std::uint64_t{1} << (4 * nb + 2 * half + c);",
             "if (seen) bits |= std::uint64_t{1} << (4 * nb + 2 * c + half);",
             r"^rfa_cuda_mask_on_host_test$",
             "a partial tile's visible elements are numbered with rows and columns swapped in a thread's bits"),
    Mutation("cuda-quad-outgoing", "CUDA dQ reduction", "kernels_cuda/src/accumulator_row_quads.cuh",
             "const bool keeps_lower_row = lane % 2 == 1;  // odd lanes", "const bool keeps_lower_row = lane % 2 == 0;  // odd lanes",
             r"^rfa_cuda_accumulator_quads_on_host_test$",
             "each lane hands its partner the row it keeps: the backward's Hopper dQ adds one row's pair twice, the other's never"),
    Mutation("cuda-quad-partner", "CUDA dQ reduction", "kernels_cuda/src/accumulator_row_quads.cuh",
             "inline constexpr int kRowQuadPartnerMask = 1;", "inline constexpr int kRowQuadPartnerMask = 2;",
             r"^rfa_cuda_accumulator_quads_on_host_test$",
             "lanes trade with the lane two along, the other half of their group: pairs land in the wrong columns"),
    Mutation("cuda-quad-columns", "CUDA dQ reduction", "kernels_cuda/src/accumulator_row_quads.cuh",
             "q.col = 4 * (quad / 2);", "q.col = 2 * (quad / 2);",
             r"^rfa_cuda_accumulator_quads_on_host_test$",
             "a lane's row quad is added two columns left of its place (and misaligned for a 16-byte reduction)"),
    Mutation("cuda-window-element", "CUDA mask", "kernels_cuda/src/attention_mask.cuh",
             "return (!causal || k <= q) && (window <= 0 || q - k < window);",
             "return (!causal || k <= q) && (window <= 0 || q - k <= window);",
             r"^rfa_cuda_mask_on_host_test$",
             "the CUDA kernels' per-element test (the Hopper kernels' too) shows a key one past the window"),
    Mutation("cuda-shape-entry-documents", "CUDA block shape", "src/engine/cuda_attention_shape.cpp",
             "    s.doc_offsets = mask.doc_offsets;\n", "",
             r"^rfa_cuda_engine_shape_on_host_test$",
             "the CUDA block compute leaves out per-sequence documents: every batch entry gets one list"),
    Mutation("cuda-shape-second-segment", "CUDA block shape", "kernels_cuda/src/shape_mask.hpp",
             "const rfa_cuda_segment& b = map.seg[map.count == 2 ? 1 : 0];",
             "const rfa_cuda_segment& b = map.seg[0];",
             r"^rfa_cuda_engine_shape_on_host_test$",
             "the kernels read a zigzag rank's second chunk at its first chunk's positions"),
    Mutation("grid-count-closed-form", "argument checks", "src/core/mask_range_builders.cpp",
             "__builtin_mul_overflow(m, 2 * n - m - 1, &off_diagonal)",
             "__builtin_mul_overflow(m, 2 * n - m, &off_diagonal)",
             r"^capi_mask_range_builders_test$",
             "the grid neighbourhood's count, in closed form, is not the number of entries its builder makes"),
    Mutation("ring-node-rank-inverse", "topology", "src/topology/ring_order.cpp",
             "for (std::size_t i = 0; i < nodes.size(); ++i) node_rank[nodes[i]] = static_cast<int>(i);",
             "for (std::size_t i = 0; i < nodes.size(); ++i) node_rank[i] = nodes[i];",
             r"^rfa_topology_tests$",
             "nodes are ranked by the inverse of their sorted order: the same for two nodes, wrong from three"),
    Mutation("order-file-duplicate", "topology", "src/topology/order_policy.cpp",
             "    line_of_rank[rank] = number;\n", "",
             r"^rfa_topology_tests$",
             "a ring order file that lists a rank twice is taken"),
    Mutation("agree-failure-message-root", "collectives", "src/collective/agree_on_failure.cpp",
             "broadcast_string(comm, message, first_failing);", "broadcast_string(comm, message, 0);",
             r"^rfa_topology_mpi_tests[.]np2$",
             "every rank reports rank 0's message, not the failing rank's"),
    Mutation("deadline-scope-restore", "collectives", "src/collective/deadline.cpp",
             "  scope_set = had_previous_;", "  scope_set = false;",
             r"^comm_deadline_test[.]np2$",
             "an inner deadline scope's end drops the outer scope's deadline"),
    Mutation("parked-buffer-abandon", "collectives", "src/collective/bounded_collectives.cpp",
             "    for (ParkedBytes* p : parked) p->abandon();\n", "",
             r"^comm_deadline_test[.]np2$",
             "a timed-out collective's copies are freed while a late rank may still complete into them"),
    Mutation("staged-pinned-reuse", "collectives", "src/comm/staged/staged_communicator.cpp",
             "pool_.release(p, transfers_abandoned());", "pool_.release(p, false);",
             r"^comm_staged_communicator_test[.]np2$",
             "the staged transport frees the pinned buffers of a timed-out transfer, which a late rank may still write"),
    Mutation("exchange-wait-spin-ignored", "collectives", "src/comm/mpi/mpi_exchange.cpp",
             "wait_spin_(route.wait_spin),", "wait_spin_(std::chrono::milliseconds(50)),",
             r"^comm_wait_spin_test[.]np2$",
             "a ring exchange's wait polls for the default time whatever its communicator was told"),
    Mutation("shared-cores-spin-long", "collectives", "src/collective/wait_spin.cpp",
             "node.ranks > node.cpus ? kSharedCoresWaitSpinMs : kDefaultWaitSpinMs", "kDefaultWaitSpinMs",
             r"^comm_wait_spin_test[.]np2$",
             "ranks that share a node's CPUs poll for the full spin while others compute"),
    Mutation("measured-plan-fastest-rank", "model", "src/setup/measured_plan.cpp",
             "nanoseconds.size(), comm::ReduceOp::max)", "nanoseconds.size(), comm::ReduceOp::min)",
             r"^rfa_measured_plan_test[.]np2$",
             "the measured plan takes a round's fastest rank instead of its slowest"),
    Mutation("plan-links-zero-bandwidth", "model", "src/model/plan.cpp",
             "[&](std::size_t i) { return link_bounds[i % per_link]; }", "[&](std::size_t i) { return link_bounds[1]; }",
             r"^rfa_model_plan_test$",
             "RFA_PLAN_LINKS takes a bandwidth of 0 along with the latencies and CPU costs"),
    Mutation("plan-kernel-rate-unbounded", "model", "src/model/plan.cpp",
             "constexpr Bounds kRateGflops{1e-3, 1e9};", "constexpr Bounds kRateGflops{1e-3, 1e300};",
             r"^rfa_model_plan_test$",
             "RFA_PLAN_KERNEL_RATE takes a rate beyond 1 EFLOP/s, which no rank computes at"),
    Mutation("measured-plan-budget-edge", "model", "src/setup/measured_plan.cpp",
             "if (j > 0 && m.spent_seconds >= budget_seconds) {", "if (j > 0 && m.spent_seconds > budget_seconds) {",
             r"^rfa_measured_plan_test[.]np2$",
             "a plan starts when measuring has taken exactly its budget"),
    Mutation("measured-plan-default-counts-hosts-wrong", "model", "src/topology/ring_order.cpp",
             "return std::max<int>(1, int(host_representatives(order.keys, node_of).size()));", "return 1;",
             r"^rfa_measured_plan_test[.]np2$",
             "the host count is always one, so ranks across hosts never measure by default"),
    Mutation("model-shared-units-pooled", "model", "src/model/performance_model.cpp",
             "if (!whole_units(units)) {", "if (units > 0.0) {",
             r"^rfa_model_test[.]np1$",
             "ranks that share a whole number of units share them all instead of each staying on one"),
    Mutation("model-alike-ranks-pooled", "model", "src/model/performance_model.cpp",
             "whole_units(units) ? 1.0 / std::ceil(ranks / units) : units / ranks;", "units / ranks;",
             r"^rfa_model_test[.]np1$",
             "ranks computing alike on a whole number of units each get units / ranks, as if they moved"),
    Mutation("model-waiting-ranks-free", "model", "src/model/performance_model.cpp",
             "std::max((units - waiting_share * done) / busy", "std::max(units / busy",
             r"^rfa_model_test[.]np1$",
             "ranks done with their step take nothing from the ranks that compute on their unit"),
    Mutation("model-waiting-ranks-not-spread", "model", "src/model/performance_model.cpp",
             "(load[u] == load[unit] && on_unit[u].size() < on_unit[unit].size())", "false",
             r"^rfa_model_test[.]np1$",
             "ranks with nothing to do all wait on the first of the least loaded units"),
    Mutation("model-transfer-processing-free", "model", "src/model/performance_model.cpp",
             "step_compute(s, false, link.cpu_seconds_per_byte * kv)", "step_compute(s, false, 0.0)",
             r"^rfa_model_test[.]np1$",
             "the model's ring forward leaves a host transport's processing out of the compute it overlaps"),
    Mutation("calibration-unpaired", "model", "perf/plan/kernel_calibration.cpp",
             "ratios.push_back(times[i][r][k] / times[0][r][k]);",
             "ratios.push_back(times[i][r][k] / times[0][rounds - 1 - r][k]);",
             r"^rfa_kernel_calibration_test$",
             "the calibration's blocks are taken over the whole block of another round, not their own"),
    Mutation("calibration-rows-take-everything", "model", "perf/plan/kernel_calibration.cpp",
             "if (!(row > 0) || !(t1 - heads * L * row > 0)) row = 0;", "if (!(row > 0)) row = 0;",
             r"^rfa_kernel_calibration_test$",
             "a half block at half the whole one's time gives the rows all of it and the scores none"),
    Mutation("calibration-window-whole-block", "model", "perf/plan/kernel_calibration.cpp",
             "std::min<std::int64_t>(window, plain.seq_total - 1)",
             "std::min<std::int64_t>(window, plain.seq_total)",
             r"^rfa_kernel_calibration_test$",
             "a windowed calibration block's window reaches a whole block, masking nothing beyond the causal one"),
    Mutation("calibration-visible-cost-negative", "model", "perf/plan/kernel_calibration.cpp",
             "if (tile >= 0 && seen >= 0) return {tile, seen};", "if (tile >= 0) return {tile, seen};",
             r"^rfa_kernel_calibration_test$",
             "a fit that costs a cut tile's visible scores below 0 is kept"),
    Mutation("calibration-visible-cost-unfitted", "model", "perf/plan/kernel_calibration.cpp",
             "if (det > kApart * xx * zz) {", "if (false) {",
             r"^rfa_kernel_calibration_test$",
             "a cut tile's cost per visible score is left at 0, its cost per score fitted alone"),
    Mutation("calibration-ill-posed-kept", "model", "perf/plan/kernel_calibration.cpp",
             "if (det > kApart * xx * zz) {", "if (det > 0) {",
             r"^rfa_kernel_calibration_test$",
             "equations that cannot tell a cut tile's two costs apart are solved for both"),
    Mutation("calibration-fit-unweighted", "model", "perf/plan/kernel_calibration.cpp",
             "const double w = 1.0 / (whole[e] * whole[e]), x = cut[e]", "const double w = 1.0, x = cut[e]",
             r"^rfa_kernel_calibration_test$",
             "the masked blocks' equations weigh their cut tiles' cost in scores, not relative to their times"),
    Mutation("calibration-turns-slowest-rank", "model", "perf/plan/kernel_calibration.cpp",
             "if (whole_time == WholeBlockTime::every_rank) {", "if (false) {",
             r"^rfa_kernel_calibration_test$",
             "ranks in turns on shared cores take the whole block's time from the slowest rank's median"),
    Mutation("plan-preset-rows-free", "model", "src/model/plan.cpp",
             "constexpr double kForwardRowFlopsPerValue = 460, kBackwardRowFlopsPerValue = 660;",
             "constexpr double kForwardRowFlopsPerValue = 0, kBackwardRowFlopsPerValue = 0;",
             r"^rfa_model_plan_test$",
             "the automatic strategy's host preset charges nothing per row of a call"),
    Mutation("plan-preset-bf16-rows-sped-up", "model", "src/model/plan.cpp",
             "m.forward_row_seconds = kForwardRowFlopsPerValue * dims * forward_speedup / m.forward_flops_per_s;",
             "m.forward_row_seconds = kForwardRowFlopsPerValue * dims / m.forward_flops_per_s;",
             r"^rfa_model_plan_test$",
             "the bf16 products' speed-up applies to a call's rows as well as its scores"),
    Mutation("model-burst-never-refills", "model", "src/model/performance_model.cpp",
             "const double held = std::min(link.burst_bytes, std::max(0.0, idle) * link.bytes_per_s);",
             "const double held = link.burst_bytes;",
             r"^rfa_model_test[.]np1$",
             "a link's burst is whole after any pause, however short, not refilled at its rate"),
    Mutation("model-burst-after-the-last-gradients", "model", "src/model/performance_model.cpp",
             "if (grads_in_flight > 0) p.backward.idle_link_seconds_at_end = 0;", "",
             r"^rfa_model_test[.]np1$",
             "the ring backward's link counts as idle at its end while the last dK/dV travel home"),
    Mutation("model-burst-reduce-scatter-uncredited", "model", "src/model/performance_model.cpp",
             "+ take + rs - burst_saving(link, idle, scatter);", "+ take + rs;",
             r"^rfa_model_test[.]np1$",
             "the all-gather's reduce-scatters after its chunks' kernels get no credit from a link's burst"),
    Mutation("device-cache-freed-after-timeout", "collectives", "src/engine/workspace.hpp",
             "if (buffers_.empty() || !watched_.abandoned()) return;", "return;",
             r"^rfa_workspace_cache_test$",
             "a device engine frees its kept buffers after its transport abandoned transfers into them"),
    Mutation("staged-timed-out-waited-again", "collectives", "src/comm/staged/staged_communicator.cpp",
             "    if (state_->transfers_abandoned()) {\n      host_exchange_ = Exchange();",
             "    if (false) {\n      host_exchange_ = Exchange();",
             r"^comm_staged_communicator_test[.]np2$",
             "a staged exchange dropped after a timeout waits for its host exchange again"),
    Mutation("lse-scatter-kv-heads", "sharding", "capi/sharding.cpp",
             "rfa::layout::scatter_bhs(global, c.options.seq_total, c.options.batch, c.options.heads,",
             "rfa::layout::scatter_bhs(global, c.options.seq_total, c.options.batch, c.options.kv_heads,",
             r"^capi_forward_backward_test[.]np2$",
             "rfa_scatter_lse takes the K/V head count for lse's heads"),
    Mutation("placement-room-off-by-one", "balanced layout", "src/layout/chunk_placement.cpp",
             "if (std::int64_t(p.chunks[i].size()) < per_rank && (best < 0 || load[i] < load[std::size_t(best)])) "
             "best = r;",
             "if (std::int64_t(p.chunks[i].size()) <= per_rank && (best < 0 || load[i] < load[std::size_t(best)])) "
             "best = r;",
             r"^rfa_rank_positions_test$|^rfa_placement_refinement_test$|^capi_balanced_layout_test[.]np[23]$",
             "a rank that holds its share of chunks still takes one more"),
    Mutation("gqa-backward-head", "heads", "src/kernels/flash_backward.cpp",
             "const int h = hk * group + tile.g;", "const int h = tile.g * int(p.kv_heads) + hk;",
             KERNELS,
             "the backward groups query heads by stride (h mod kv_heads), not in consecutive runs"),
    Mutation("backward-chunk-remainder", "backward key tiles", "src/kernels/flash_backward.cpp",
             "const int kt_end = int(std::int64_t(chunk + 1) * n_ktiles / n_chunks);",
             "const int kt_end = kt_begin + n_ktiles / n_chunks;",
             KERNELS,
             "where a head's key tiles are split among teams, the tiles past an even share get no gradients"),
    Mutation("allgather-lse-head-offset", "strategies", "src/engine/allgather_attention.cpp",
             "slice_heads(exec, lse, ch * qh, lse_chunk, false);",
             "slice_heads(exec, lse, ch * chunk_, lse_chunk, false);",
             r"^rfa_engine_test[.]np2$",
             "the all-gather writes a chunk's lse at its K/V head offset, not its query head offset"),
    Mutation("ulysses-shared-slot-sum", "heads", "src/engine/sequence_transpose.hpp",
             "if (i1 - i0 == 1 && !accumulate) {", "if (i1 - i0 >= 1 && !accumulate) {",
             r"^rfa_engine_test[.]np3$",
             "where several slots hold one K/V head (Ulysses' degree not aligned with the groups), dK/dV keep "
             "the first slot's share instead of the sum"),
    Mutation("kv-jump-one-hop", "step selection", "src/engine/travelling_kv.hpp",
             "const int hops = steps_[i + 1] - steps_[i];", "const int hops = 1;",
             ENGINE,
             "K/V move one rank a step even where the step selection jumps over steps"),
    Mutation("ring-backward-owner-direction", "gradient routing", "src/engine/ring_backward.cpp",
             "const kernels::AttentionParams p = block_params(c, P, me, (me - s + P) % P);",
             "const kernels::AttentionParams p = block_params(c, P, me, (me + s) % P);",
             r"^rfa_engine_test[.]np4$",
             "the backward takes the held block for the downstream rank's (the same at P = 2)"),
    Mutation("model-ring-owner-direction", "model", "src/model/performance_model.cpp",
             "const PositionMap block = engine::rank_positions(c, ranks, (position - s + ranks) % ranks);",
             "const PositionMap block = engine::rank_positions(c, ranks, (position + s) % ranks);",
             r"^rfa_model_test[.]np1$",
             "the model prices each ring step's kernels on the downstream rank's block"),
    Mutation("buffer-adjacent-overlap", "argument checks", "capi/buffer_checks.hpp",
             "a0 < b0 + std::uintptr_t(b.bytes)", "a0 <= b0 + std::uintptr_t(b.bytes)",
             r"^capi_invalid_calls_test[.]np1$",
             "an output that starts right after an input's last byte is refused as overlapping it"),
    Mutation("sharding-dim-overflow", "argument checks", "capi/sharding.cpp",
             "for (const std::int64_t factor : {o.batch, o.seq_total, heads, dim}) {",
             "for (const std::int64_t factor : {o.batch, o.seq_total, heads}) {",
             r"^capi_invalid_calls_test[.]np1$",
             "the _dim sharding helpers take a head dim whose tensor overflows 64-bit sizes"),
    Mutation("ranges-band-offset-limit", "argument checks", "src/core/mask_ranges.cpp",
             "require(r.band_lo > -limit && r.band_hi < limit,", "require(r.band_lo > -limit || r.band_hi < limit,",
             KERNELS,
             "a band offset written as the type's limit ('unbounded') is taken and overflows the diagonals"),
    Mutation("ranges-hash-band-lo", "agreement", "src/core/mask_ranges.cpp",
             "band ? r.band_lo : 0, band ? r.band_hi : 0", "std::int64_t(0), band ? r.band_hi : 0",
             KERNELS,
             "ranks whose band entries differ only in band_lo are not told apart"),
    Mutation("value-checks-minus-inf-lse-everywhere", "value checks", "capi/attention.cpp",
             "const bool rows_may_see_nothing = o.mask == RFA_MASK_RANGES;",
             "const bool rows_may_see_nothing = true;",
             r"^capi_value_checks_test[.]np1$",
             "with the value checks on, an lse of -inf passes under a causal mask, where every row sees a key: "
             "its gradients are silently 0"),
    Mutation("value-checks-unseen-row-lse", "value checks", "capi/attention.cpp",
             "const bool rows_may_see_nothing = o.mask == RFA_MASK_RANGES;",
             "const bool rows_may_see_nothing = false;",
             r"^capi_value_checks_test[.]np1$",
             "with the value checks on, a row that sees no key (lse -inf) fails the call as non-finite"),
    Mutation("sink-unseen-row-logaddexp", "sinks", "src/engine/attention_sinks.cpp",
             "const float high = before > s ? before : s, low = before > s ? s : before;",
             "const float high = before, low = s;",
             r"^capi_attention_sinks_test[.]np2$",
             "the sink's log-add-exp takes the row's lse as the larger term: a row that sees no key gets NaN"),
    Mutation("sink-gradient-unseen-row", "sinks", "src/engine/attention_sinks.cpp",
             "        if (s != -INFINITY) {  // no sink: no mass, no gradient", "        if (true) {",
             r"^capi_attention_sinks_test[.]np2$",
             "a head without a sink gets a NaN sink gradient from rows that see no key"),
    Mutation("staged-copy-timeout-kept-buffers", "staged transport", "src/comm/staged/staged_communicator.cpp",
             "return host_->has_abandoned_transfers() || !copy_timed_out_.empty(); }",
             "return host_->has_abandoned_transfers(); }",
             r"^comm_staged_communicator_test[.]np2$",
             "after a device copy timed out, the pinned buffers it may still write go back to the pool and the "
             "engines are told no transfer was abandoned"),
    Mutation("poll-no-deadline-is-immediate", "deadlines", "src/core/polling.hpp",
             "timeout_s > 0.0 ? deadline_after(since, timeout_s) : Clock::time_point::max();",
             "timeout_s >= 0.0 ? deadline_after(since, timeout_s) : Clock::time_point::max();",
             r"^core_polling_test$",
             "a wait on device work given no deadline (0) gives up at once"),
    Mutation("poll-deadline-ignored", "deadlines", "src/core/polling.hpp",
             "    if (Clock::now() >= deadline) return ready();",
             "    if (false) return ready();",
             r"^core_polling_test$",
             "a wait on device work (NCCL, a staged copy, a CUDA stream) never gives up"),
    Mutation("staged-copy-timeout-still-usable", "staged transport", "src/comm/staged/staged_communicator.cpp",
             "    if (!copy_timed_out_.empty())\n      fail(RFA_ERROR_INVALID_USAGE,",
             "    if (false)\n      fail(RFA_ERROR_INVALID_USAGE,",
             r"^comm_staged_communicator_test[.]np2$",
             "a staged transport whose device copy timed out takes new exchanges and collectives"),
    Mutation("staged-pool-smallest-free", "staged transport", "src/comm/staged/staged_communicator.cpp",
             "auto it = free_.lower_bound(bytes);", "auto it = free_.begin();",
             r"^comm_staged_communicator_test[.]np2$",
             "the pinned pool hands out its smallest free buffer whether or not it is large enough"),
    Mutation("staged-copy-in-after-later-kernels", "staged transport", "src/comm/staged/staged_communicator.cpp",
             "copy_to_device(recv_, host_recv_, recv_bytes_, *started_after_);",
             "copy_to_device(recv_, host_recv_, recv_bytes_, *state_->device().mark_compute());",
             r"^comm_staged_communicator_test[.]np2$",
             "a staged exchange's copy onto the device waits for the kernels queued after the exchange started"),
    Mutation("staged-wait-holds-later-exchanges", "staged transport", "src/comm/staged/staged_communicator.cpp",
             "if (phase_ == Phase::sending && state_->all_posted())", "if (phase_ == Phase::sending)",
             r"^comm_staged_communicator_test[.]np2$",
             "a wait on a staged exchange on the wire keeps the exchanges started after it off the wire"),
    Mutation("staged-allgather-run-to-end", "staged transport", "src/comm/staged/staged_communicator.cpp",
             "  state_->progress();\n  return Exchange(std::move(e));\n}\n\nvoid StagedCommunicator::allgather(",
             "  state_->progress();\n  Exchange x(std::move(e));\n  x.wait();\n  return Exchange();\n}\n\n"
             "void StagedCommunicator::allgather(",
             r"^comm_staged_communicator_test[.]np2$",
             "the staged transport's start_allgather runs the gather to its end before it returns: no overlap"),
    Mutation("staged-collective-before-started-allgather", "staged transport",
             "src/comm/staged/staged_communicator.cpp",
             "std::size_t bytes_per_pair) {\n  state_->require_usable(\"alltoall\");\n  state_->post_started();\n",
             "std::size_t bytes_per_pair) {\n  state_->require_usable(\"alltoall\");\n",
             r"^comm_staged_communicator_test[.]np2$",
             "a staged all-to-all reaches MPI before an all-gather started earlier that is still being copied off "
             "the device"),
    Mutation("staged-agreement-before-started-allgather", "staged transport",
             "src/comm/staged/staged_communicator.cpp",
             "ReduceOp op) {\n  state_->require_usable(\"allreduce_inplace\");\n  state_->post_started();\n",
             "ReduceOp op) {\n  state_->require_usable(\"allreduce_inplace\");\n",
             r"^comm_staged_communicator_test[.]np2$",
             "a staged allreduce (the agreements') reaches MPI before an all-gather started earlier that is still "
             "being copied off the device"),
    Mutation("arena-size-rounded-down", "workspace", "src/engine/workspace_arena.hpp",
             "const std::int64_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;",
             "const std::int64_t size = bytes / kAlignment * kAlignment;",
             ENGINE,
             "a workspace buffer's size is rounded down to the alignment: the next buffer overlaps its tail"),
    Mutation("creation-timeout-default", "collectives", "capi/creation_agreement.cpp",
             "std::isfinite(options.timeout_s) && options.timeout_s != 0.0)",
             "std::isfinite(options.timeout_s))",
             r"^capi_timeout_test[.]np2$",
             "options.timeout_s = 0 (RFA_TIMEOUT_S's deadline) gives creation none: a late rank hangs it"),
    Mutation("hybrid-group-rows-divide", "strategies", "src/engine/strategy_factory.cpp",
             "require(group_rows % degree == 0,", "require(c.seq_total % degree == 0,",
             r"^rfa_engine_test[.]np4$",
             "the hybrid checks that the sequence, not each ring group's rows, divides among its Ulysses ranks"),
    Mutation("finalize-one-live-context", "lifetime", "capi/kokkos_lifetime.cpp",
             "  if (live_contexts > 0) {\n", "  if (live_contexts > 1) {\n",
             r"^capi_c_api_test[.]np2$",
             "rfa_finalize() finalizes Kokkos under a context still alive when it is the only one"),
    Mutation("fortran-plan-past-nul", "Fortran bindings", "fortran/rfa.f90.in",
             "      if (buffer(i) == c_null_char) exit\n", "",
             FORTRAN,
             "rfa_context_get_plan copies the NUL and what follows it into a text longer than the plan"),
    Mutation("fortran-dtype-unchecked", "Fortran bindings", "fortran/rfa.f90.in",
             "    if (o%dtype == RFA_DTYPE_FLOAT32 .eqv. bytes == 4) return\n", "    return\n",
             FORTRAN,
             "the Fortran calls take arrays of either kind whatever the context's dtype: C reads and writes them at "
             "the dtype's size"),
    Mutation("fortran-sharding-global-unchecked", "Fortran bindings", "fortran/rfa.f90.in",
             "    if (any(global /= want_global)) then\n",
             "    if (.false.) then\n",
             FORTRAN,
             "the sharding wrappers pass a global array shorter than the context's tokens to C, which reads past its end"),
    Mutation("fortran-lse-sharding-unchecked", "Fortran bindings", "fortran/rfa.f90.in",
             "    why = shape_problem(context, 'local', local, 3)\n    if (len(why) == 0) why",
             "    why = ''\n    if (size(local) < 0 .or. len(why) == 0) why",
             FORTRAN,
             "the lse sharding wrappers pass a local array short of a batch entry to C, which writes past its end"),
    Mutation("fortran-window-causal-flag", "Fortran bindings", "fortran/rfa.f90.in",
             "c = merge(1_c_int32_t, 0_c_int32_t, causal)\n"
             "    ierr = c_mask_ranges_sliding_window(seq_total, window, c, c_null_ptr, 0_c_int64_t, n)",
             "c = merge(0_c_int32_t, 1_c_int32_t, causal)\n"
             "    ierr = c_mask_ranges_sliding_window(seq_total, window, c, c_null_ptr, 0_c_int64_t, n)",
             FORTRAN,
             "rfa_mask_ranges_sliding_window builds the two-sided window for causal = .true., the causal one for .false."),
    Mutation("fortran-documents-count", "Fortran bindings", "fortran/rfa.f90.in",
             "count = size(bounds, kind=c_int64_t)", "count = size(bounds, kind=c_int64_t) - 1",
             FORTRAN,
             "rfa_mask_ranges_documents passes the document count, not the boundary count: the last document is lost"),
    Mutation("fortran-gather-lse-order", "Fortran bindings", "fortran/rfa.f90.in",
             "ierr = c_gather_lse(context%handle, c_loc(local), c_loc(global))",
             "ierr = c_gather_lse(context%handle, c_loc(global), c_loc(local))",
             FORTRAN,
             "rfa_gather_lse passes its arrays in rfa_scatter_lse's order"),
    Mutation("fortran-i16-backward-dk-dv", "Fortran bindings", "fortran/rfa.f90.in",
             "                      c_loc(dq), c_loc(dk), c_loc(dv))\n  end function\n\n"
             "  !> Collective. As forward_f32 on addresses",
             "                      c_loc(dq), c_loc(dv), c_loc(dk))\n  end function\n\n"
             "  !> Collective. As forward_f32 on addresses",
             FORTRAN,
             "the 16-bit backward hands dK's array to dV and dV's to dK (the same shape without a value head dim)"),
    Mutation("plan-capacity-one", "argument checks", "capi/context_query.cpp",
             "if (capacity < 1) rfa::fail(", "if (capacity < 2) rfa::fail(",
             r"^capi_auto_strategy_test[.]np1$",
             "rfa_context_get_plan refuses room for the NUL alone, which must give an empty text"),
    Mutation("check-nan-passes", "main job's check", "perf/ring/check_reductions.hpp",
             "err = std::max(err, std::isnan(got) ? INFINITY : std::abs(got - ref));",
             "err = std::max(err, std::abs(got - ref));",
             SAMPLED,
             "a NaN result is lost in std::max (NaN compares false), so rfa_run --check passes NaN outputs"),
    Mutation("check-infinite-result-passes", "main job's check", "perf/ring/check_reductions.hpp",
             "if (got != ref) err = INFINITY;", "if (std::isinf(ref) && got != ref) err = INFINITY;",
             SAMPLED,
             "only an infinite reference must be matched exactly: an infinite result passes"),
    Mutation("sampled-check-scale-ignores-terms", "main job's check", "perf/ring/check_reductions.hpp",
             "scale = std::max(scale, std::max(std::abs(ref), magnitude));", "scale = std::max(scale, std::abs(ref));",
             SAMPLED,
             "the sampled check scales its errors by the gradients alone: a correct run whose dQ is 0 by "
             "cancellation fails"),
    Mutation("sampled-rows-miss-last", "main job's check", "perf/ring/sampled_check.cpp",
             "r.push_back(n == 1 ? 0 : k * (length - 1) / (n - 1));", "r.push_back(n == 1 ? 0 : k * (length - 1) / n);",
             SAMPLED,
             "the sampled rows stop short of the last local row"),
    Mutation("sampled-positions-per-rank", "main job's check", "perf/ring/sampled_check.cpp",
             "if (rows.positions <= 0) {", "if (true) {",
             SAMPLED,
             "the check by global position samples each rank's own rows: errors at different P compare "
             "different rows"),
    Mutation("grid-band-unheld", "mask range builders", "src/core/mask_range_builders.cpp",
             "const std::int64_t reach = std::min(radius, nx - 1);",
             "const std::int64_t reach = radius;",
             r"^capi_mask_range_builders_test$",
             "a grid neighbourhood's bands take the radius as it is: past +-2^61 a context refuses the list"),
    Mutation("documents-lengths-wrap", "main job's flags", "perf/common/document_spec.cpp",
             "require(length <= seq - b.back(), ",
             "require(b.back() + length <= seq, ",
             r"^rfa_perf_measure_test$",
             "rfa_run's --documents lengths are summed before the check: a huge one wraps to a negative boundary"),
    Mutation("sampled-window-wraps", "main job's check", "perf/ring/sampled_check.cpp",
             "const std::int64_t hi = rule.window > 0 && rule.window - 1 < S - 1 - k ? k + rule.window - 1 : S - 1;",
             "const std::int64_t hi = rule.window > 0 ? std::min<std::int64_t>(S - 1, k + rule.window - 1) : S - 1;",
             SAMPLED,
             "the sampled check's queries that see a key end at k + window - 1 unheld: the longest window wraps it"),
    Mutation("cudnn-band-window-longest", "cuDNN band plan", "kernels_cuda/src/cudnn/band_plan.cpp",
             "has_left = shape.window > 0 && shape.window <= longest;",
             "has_left = shape.window > 0;",
             r"^rfa_cudnn_band_plan_test$",
             "a window longer than a block's longest distance enters the band's left bound, where window - delta wraps"),
    Mutation("cudnn-in-place-some-keys", "cuDNN band plan", "kernels_cuda/src/cudnn/band_plan.hpp",
             "b.k_begin == 0 && b.k_rows == seq_k;", "b.k_begin == 0;",
             r"^rfa_cudnn_band_plan_test$",
             "a band over every query row but not every key counts as the whole block: cuDNN would leave the "
             "in-place dK and dV of the keys outside it unwritten"),
    Mutation("cudnn-band-plan-always-joined", "cuDNN band plan", "kernels_cuda/src/cudnn/band_plan.cpp",
             "if (covers_whole_block(joined, shape.seq_q, shape.seq_k)) return joined;", "return joined;",
             r"^rfa_cudnn_band_plan_test$",
             "continuing segments are always joined: a window over the joined piece is taller than cuDNN takes, "
             "and those steps leave cuDNN for rfa's kernels"),
    Mutation("cudnn-diagonal-any-order", "cuDNN band plan", "kernels_cuda/src/cudnn/band_plan.cpp",
             "if (g.start <= last) return false;", "",
             r"^rfa_cudnn_band_plan_test$",
             "a diagonal block whose positions do not increase is taken as one causal band over its local rows: "
             "it shows keys the causal mask hides and hides keys it shows"),
    Mutation("cudnn-diagonal-with-window", "cuDNN band plan", "kernels_cuda/src/cudnn/band_plan.cpp",
             "shape.mask == RFA_CUDA_MASK_CAUSAL && shape.window <= 0 &&", "shape.mask == RFA_CUDA_MASK_CAUSAL &&",
             r"^rfa_cudnn_band_plan_test$",
             "a diagonal block under a window is one causal band: every key the window hides shows"),
    Mutation("cudnn-join-unequal-sides", "cuDNN band plan", "kernels_cuda/src/cudnn/band_plan.cpp",
             "if (a.k_begin == b.k_begin && a.k_rows == b.k_rows &&", "if (a.k_begin == b.k_begin &&",
             r"^rfa_cudnn_band_plan_test$",
             "two full bands with the same first key but different key rows are joined: the joined call shows "
             "the keys one of them did not have"),
    Mutation("builders-count-documents-by-building", "argument checks", "capi/mask_range_builders.cpp",
             "[&] { return rfa::document_count(doc_boundaries, boundary_count); }",
             "[&] { return std::int64_t(rfa::document_ranges(doc_boundaries, boundary_count, causal != 0).size()); }",
             r"^capi_mask_range_builders_test$",
             "the documents' count-only query builds the list it counts (up to 2^26 entries, 3.5 GiB)"),
    Mutation("setup-plan-names-requested-chunk", "creation", "src/setup/attention_setup.cpp",
             "  e.plan = model::Plan{e.strategy, config.layout", "  e.plan = model::Plan{r.strategy, config.layout",
             r"^rfa_attention_setup_test[.]np1$",
             "the plan text of a named all-gather is the request's (one K/V head a chunk), not the chunk a CUDA "
             "context runs"),
    Mutation("allgather-bytes-one-head-reduction", "workspace", "src/engine/allgather_chunk_rule.hpp",
             "  const std::int64_t w = s.batch * L * chunk * std::max", "  const std::int64_t w = s.batch * L * std::max",
             r"^rfa_engine_test[.]np2$",
             "the all-gather's formula sizes the gradients' reduction buffers for one K/V head whatever the chunk"),
    Mutation("allgather-chunk-bytes-unbounded", "strategies", "src/engine/allgather_chunk_rule.hpp",
             "    if (allgather_buffer_bytes(s, d, true) - one_head > kAllGatherChunkExtraBytes) break;", "",
             r"^rfa_allgather_chunk_test$",
             "the device chunk takes as many K/V heads as the tiles want, however many gigabytes their gathered "
             "chunk costs"),
    Mutation("sm80-key-tile-default-limit", "CUDA block shape", "kernels_cuda/src/sm80_layout_settings.cpp",
             "return head_dim + value_dim <= kWideBackwardDefaultColumns ? 128 : 64;",
             "return head_dim + value_dim < kWideBackwardDefaultColumns ? 128 : 64;",
             r"^rfa_cuda_layout_settings_on_host_test$",
             "the sm80 backward's default key tile is 64 at 128 Q/K + V columns (head dim 64), where 128 keys are "
             "the default"),
    Mutation("sm80-other-key-tile-past-limit", "CUDA block shape", "kernels_cuda/src/sm80_layout_settings.cpp",
             "return other == 128 && !wide_backward_takes(head_dim + value_dim) ? 0 : other;",
             "return other;",
             r"^rfa_cuda_layout_settings_on_host_test$",
             "the tile beside the default is 128 keys past 256 Q/K + V columns, which the variable refuses: the "
             "kernel test and benchmark would ask for a tile the kernels do not take"),
    Mutation("sm80-forward-rows-default-limit", "CUDA block shape", "kernels_cuda/src/sm80_layout_settings.cpp",
             "compute_major >= kWideForwardDefaultComputeMajor && head_dim <= kWideForwardDefaultHeadDimMax &&",
             "compute_major >= kWideForwardDefaultComputeMajor && head_dim < kWideForwardDefaultHeadDimMax &&",
             r"^rfa_cuda_layout_settings_on_host_test$",
             "the sm80 forward's default is 16 rows a warp at head dim 128, where 32 was measured faster"),
    Mutation("sm80-forward-rows-default-any-device", "CUDA block shape", "kernels_cuda/src/sm80_layout_settings.cpp",
             "compute_major >= kWideForwardDefaultComputeMajor && head_dim <= kWideForwardDefaultHeadDimMax &&",
             "compute_major >= 8 && head_dim <= kWideForwardDefaultHeadDimMax &&",
             r"^rfa_cuda_layout_settings_on_host_test$",
             "the sm80 forward's default is 32 rows a warp on compute capability 8.x too, measured only on an H100"),
    Mutation("sm80-other-forward-rows-past-limit", "CUDA block shape", "kernels_cuda/src/sm80_layout_settings.cpp",
             "return other == 32 && value_dim > kWideForwardValueDimMax ? 0 : other;",
             "return other;",
             r"^rfa_cuda_layout_settings_on_host_test$",
             "the layout beside the default is 32 rows a warp past a value head dim of 128, which the variable "
             "refuses: the kernel test and benchmark would ask for a layout the kernels do not take"),
    Mutation("fortran-options-fields-swapped", "Fortran bindings", "fortran/rfa.f90.in",
             "    integer(c_int) :: layout = RFA_LAYOUT_ZIGZAG  !< RFA_LAYOUT_*\n"
             "    integer(c_int) :: mask = RFA_MASK_CAUSAL  !< RFA_MASK_*\n",
             "    integer(c_int) :: mask = RFA_MASK_CAUSAL  !< RFA_MASK_*\n"
             "    integer(c_int) :: layout = RFA_LAYOUT_ZIGZAG  !< RFA_LAYOUT_*\n",
             r"^fortran_api_test[.]np2$",
             "two fields of one size swapped in the Fortran rfa_options (layout and mask): the sizes still match and "
             "each option lands in the other's place"),
    Mutation("fortran-backward-by-address-dk-dv", "Fortran bindings", "fortran/rfa.f90.in",
             "    ierr = c_backward(context%handle, q, k, v, out, dout, lse, dq, dk, dv)",
             "    ierr = c_backward(context%handle, q, k, v, out, dout, lse, dq, dv, dk)",
             r"^fortran_api_test[.]np2$",
             "the Fortran backward by address hands dK's address for dV and dV's for dK"),
    Mutation("create-timeout-env-unagreed", "creation", "capi/context_create.cpp",
             "if (options.timeout_s == 0.0) collective::timeout_from_environment();", "",
             r"^capi_timeout_test[.]np2$",
             "a malformed RFA_TIMEOUT_S is read after the creation's agreement: its rank fails alone and the "
             "others wait in the creation's collectives until their deadline"),
    Mutation("create-handle-left-on-early-failure", "creation", "capi/context_create.cpp",
             "  if (out) *out = nullptr;  // on every failure, the earliest (MPI unusable) among them\n",
             "",
             r"^capi_invalid_calls_test[.]np1$|^capi_mpi_uninitialized_test$",
             "a creation that fails because MPI is unusable (not initialized, MPI_COMM_NULL) leaves the caller's "
             "handle as it was, where rfa_mpi.h promises NULL"),
    Mutation("ab-ratio-inverted", "GPU check plumbing", "scripts/gpu/ab_compare.py",
             "ratios = [x / y for x, y in zip(base, cur)]", "ratios = [y / x for x, y in zip(base, cur)]",
             r"^scripts[.]ab_compare$",
             "the A/B report's ratio is current / baseline: a slowdown reads as a speed-up"),
    Mutation("plan-two-documents-dense", "model", "src/model/plan.cpp",
             "config.doc_bounds.size() > 2", "config.doc_bounds.size() > 3",
             r"^rfa_model_plan_test$",
             "two packed documents count as one: the needed-only exchange and the balanced layout are not offered"),
    Mutation("placement-key-window", "balanced layout", "src/engine/rank_positions.cpp",
             "          c.window,\n", "          std::int64_t(0),\n",
             r"^rfa_rank_positions_test$",
             "the placements' cache key leaves out the window: a copy given another window gets a stale placement"),
    Mutation("value-checks-v-head-dim", "value checks", "capi/attention.cpp",
             'scan_bshd<T, S>("v", v, c, o.kv_heads, value_head_dim_of(o))},\n            "input", kInputsUntouched);',
             'scan_bshd<T, S>("v", v, c, o.kv_heads, o.head_dim)},\n            "input", kInputsUntouched);',
             r"^capi_value_checks_test[.]np1$",
             "the forward's scan reads v in Q and K's head dim"),
    Mutation("timeout-negative-none", "collectives", "capi/context_create.cpp",
             "return options.timeout_s < 0.0 ? 0.0 : options.timeout_s;",
             "return options.timeout_s < 0.0 ? -1.0 : options.timeout_s;",
             r"^capi_timeout_test[.]np2$",
             "options.timeout_s < 0 (none) reaches MPI as -1 (RFA_TIMEOUT_S or the default)"),
    Mutation("fortran-i16-sinks-backward-dk-dv", "Fortran bindings", "fortran/rfa.f90.in",
             "c_loc(sinks), c_loc(dq), c_loc(dk), c_loc(dv), c_loc(dsinks))\n  end function\n\n"
             "  !> Collective. As backward_sinks_f32 on addresses",
             "c_loc(sinks), c_loc(dq), c_loc(dv), c_loc(dk), c_loc(dsinks))\n  end function\n\n"
             "  !> Collective. As backward_sinks_f32 on addresses",
             FORTRAN,
             "the 16-bit backward with sinks hands dK's array to dV and dV's to dK"),
    Mutation("fortran-i16-gather-everywhere", "Fortran bindings", "fortran/rfa.f90.in",
             "    ierr = c_gather_bshd(context%handle, size(local, 2, kind=c_int64_t), size(local, 1, kind=c_int64_t), &\n"
             "                         c_loc(local), c_loc(global))\n  end function\n\n"
             "  !> Collective: the whole global",
             "    ierr = c_allgather_bshd(context%handle, size(local, 2, kind=c_int64_t), size(local, 1, kind=c_int64_t), &\n"
             "                         c_loc(local), c_loc(global))\n  end function\n\n"
             "  !> Collective: the whole global",
             FORTRAN,
             "the 16-bit rfa_gather_bshd writes every rank's rows, the other ranks' rows it must leave alone"),
    Mutation("fortran-i16-allgather-own-rows", "Fortran bindings", "fortran/rfa.f90.in",
             "    ierr = c_allgather_bshd(context%handle, size(local, 2, kind=c_int64_t), size(local, 1, kind=c_int64_t), &\n"
             "                            c_loc(local), c_loc(global))\n  end function\n\n"
             "  !> local(L, H, B)",
             "    ierr = c_gather_bshd(context%handle, size(local, 2, kind=c_int64_t), size(local, 1, kind=c_int64_t), &\n"
             "                            c_loc(local), c_loc(global))\n  end function\n\n"
             "  !> local(L, H, B)",
             FORTRAN,
             "the 16-bit rfa_allgather_bshd writes this rank's rows only"),
    Mutation("plan-links-swapped", "performance model", "src/model/plan.cpp",
             "m.intra_node = link(0), m.inter_node = link(per_link);",
             "m.intra_node = link(per_link), m.inter_node = link(0);",
             r"^rfa_model_plan_test$|^capi_auto_strategy_test[.]np[12]$",
             "RFA_PLAN_LINKS's figures for the links inside a node and between nodes are swapped"),
    Mutation("model-needed-link-one-side", "performance model", "src/model/performance_model.cpp",
             "on_node(from) == on_node(rank) && on_node(to) == on_node(rank) ? m.intra_node : m.inter_node;",
             "on_node(from) == on_node(rank) || on_node(to) == on_node(rank) ? m.intra_node : m.inter_node;",
             r"^rfa_model_test[.]np[1-4]$|^rfa_model_plan_test$",
             "a needed-only round that sends across a node boundary but receives inside the node is priced at the fast link"),
    Mutation("slurm-cpu-threads-fixed", "Slurm templates", "perf/slurm/cpu_single_node.sbatch",
             "export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}\n", "export OMP_NUM_THREADS=1\n",
             r"^topology[.]slurm_",
             "the CPU job runs one thread per rank whatever cores Slurm gave it"),
    Mutation("last-error-shared", "argument checks", "capi/error_handling.cpp",
             "thread_local std::string last_error_message;", "std::string last_error_message;",
             r"^capi_invalid_calls_test|^capi_c_api_test[.]np[12]$",
             "the last error message is shared by the threads, not one per thread as rfa.h promises"),
    Mutation("check-error-min-over-ranks", "main job's check", "perf/ring/check_reductions.cpp",
             "ring.allreduce_inplace(bits, 2, comm::ReduceOp::max);",
             "ring.allreduce_inplace(bits, 2, comm::ReduceOp::min);",
             r"^rfa_sampled_check_test[.]np[123]$|^perf[.]rfa_run",
             "rfa_run's check reports the smallest error over the ranks: one wrong rank still passes"),
    Mutation("deterministic-negative-off", "argument checks", "capi/options.cpp",
             "o.deterministic = o.deterministic != 0 ? 1 : 0;", "o.deterministic = o.deterministic > 0 ? 1 : 0;",
             r"^capi_kernel_choice_test[.]np[12]$",
             "options.deterministic = -1 (a C or Fortran true) turns the deterministic backward off"),
    Mutation("allgather-pack-chunk-offset", "strategies", "src/engine/allgather_attention.cpp",
             "pack_heads<Exec, T>(exec_, from, {c * chunk_}, one, send_[i][t].data());",
             "pack_heads<Exec, T>(exec_, from, {c}, one, send_[i][t].data());",
             ENGINE,
             "the all-gather in chunks of several K/V heads gathers chunk c from head c, not c times the chunk"),
    Mutation("fortran-prefix-lm-whole-sequence", "Fortran bindings", "fortran/rfa.f90.in",
             "ierr = c_mask_ranges_prefix_lm(seq_total, prefix, c_loc(ranges(1)), size(ranges, kind=c_int64_t), n)",
             "ierr = c_mask_ranges_prefix_lm(seq_total, seq_total, c_loc(ranges(1)), size(ranges, kind=c_int64_t), n)",
             FORTRAN,
             "the Fortran prefix-LM builder makes the whole sequence the prefix: every query sees every key"),
    Mutation("deadline-huge-timeout", "collectives", "src/collective/deadline.cpp",
             "if (!(timeout_s > 0.0) || timeout_s > 1e9) return MPI_Waitall(count, requests, statuses);",
             "if (!(timeout_s > 0.0)) return MPI_Waitall(count, requests, statuses);",
             r"^capi_timeout_test[.]np2$|^comm_deadline_test[.]np2$",
             "a timeout of 1e10 s or more overflows the deadline's nanoseconds: every wait times out at once"),
    Mutation("run-flops-batch", "main job's figures", "perf/common/attention_work.hpp",
             "if (!per_entry) return double(batch) * visible_scores(mask_of(std::int64_t(0)));",
             "if (!per_entry) return visible_scores(mask_of(std::int64_t(0)));",
             r"^rfa_perf_measure_test$|^perf[.]rfa_run",
             "the FLOP count over a batch (rfa_run's, rfa_kernel_bench's) leaves out the batch: its GFLOP/s and "
             "fraction of peak are B times too low"),
    Mutation("merge-log-sigmoid-naive", "merge", "src/kernels/merge_partial.cpp",
             "  return lo < hi - 128.0f ? hi : hi + std::log1p(std::exp(lo - hi));",
             "  return std::log(std::exp(hi) + std::exp(lo));",
             KERNELS + "|" + ENGINE,
             "the merge forms e^lse of each partial: from an lse of 88.7 on it overflows, lse inf, gradients zero"),
    Mutation("value-checks-row-batch", "value checks", "src/engine/value_checks.cpp",
             "const std::int64_t row = s.head_dim > 0 ? (s.first / (s.heads * s.head_dim)) % s.rows : s.first % s.rows;",
             "const std::int64_t row = s.head_dim > 0 ? s.first / (s.heads * s.head_dim) : s.first % s.rows;",
             r"^capi_value_checks_test[.]np[1-4]$",
             "a non-finite value in batch entry 1 or later is reported at a sequence position past this rank's rows"),
    Mutation("compare-error-flag-ignored", "perf tools", "perf/compare",
             'if entry.get("error_occurred") or entry.get("correct", 1) in (0, False):',
             'if entry.get("correct", 1) in (0, False):',
             r"^perf[.]compare_synthetic$",
             "a benchmark case that errored (error_occurred) is no regression for the comparator"),
    Mutation("compare-too-few-hides-regression", "perf tools", "perf/compare",
             '    if "regression" in verdicts:\n        overall, code = "regression", 1\n',
             '    if "too-few" in verdicts:\n        overall, code = "inconclusive", 3\n'
             '    elif "regression" in verdicts:\n        overall, code = "regression", 1\n',
             r"^perf[.]compare_synthetic$",
             "one case with too few repetitions turns a regression elsewhere into 'inconclusive'"),
    Mutation("compare-communicator-not-machine-key", "perf tools", "perf/compare",
             '"kokkos_backends", "device",\n                "communicator")',
             '"kokkos_backends", "device")',
             r"^perf[.]compare_synthetic$",
             "a run over NCCL is timed against an MPI baseline instead of starting a new one"),
    Mutation("device-check-tool-failure-not-available", "GPU check plumbing", "scripts/gpu/device_check.sh",
             '[ "$rc" != 0 ] && grep -qiE', '[ "$rc" != 0 ] && ! grep -qiE',
             r"^scripts[.]device_check_plumbing$",
             "a sanitizer step that finds errors is reported 'not available', and the check passes"),
    Mutation("bundle-unresolved-library-tolerated", "GPU check plumbing", "scripts/gpu/build_bundle.sh",
             '    system_library "$lib" || unresolved+=" $lib"\n', "    true\n",
             r"^scripts[.]build_bundle_programs$",
             "a library the programs need that neither machine has is left for the device run to find missing"),
    Mutation("device-check-suites-may-skip", "GPU check plumbing", "scripts/gpu/device_check.sh",
             "  export RFA_TEST_REQUIRE_DEVICE=1\n", "",
             r"^scripts[.]device_check_plumbing$",
             "the GPU suites skip where they see no device, which the check reports as passed"),
    Mutation("device-check-cut-step-times-out", "GPU check plumbing", "scripts/gpu/device_check.sh",
             "{ limit=$left; cut=cut; }", "limit=$left",
             r"^scripts[.]device_check_plumbing$",
             "a step cut to the budget's end that reaches it is a TIMEOUT, failing a check that did not fail"),
    Mutation("device-check-missing-tool-fails", "GPU check plumbing", "scripts/gpu/device_check.sh",
             'tool_present() { [ -n "$list" ] || command -v "$1" >/dev/null; }', 'tool_present() { true; }',
             r"^scripts[.]device_check_plumbing$",
             "a machine without compute-sanitizer fails the memcheck steps instead of saying 'not available'"),
    Mutation("perf-suite-failed-run-with-result-passes", "perf tools", "perf/suite",
             "        if rc != 0 or not os.path.isfile(result):",
             "        if rc != 0 and not os.path.isfile(result):",
             r"^perf[.]suite_",
             "a program that writes its result and then fails its check (rfa_run --check) counts as a success"),
    Mutation("context-handle-is-address", "C API", "capi/context_registry.cpp",
             "  r.last_token += 16;", "  r.last_token = reinterpret_cast<std::uintptr_t>(context);",
             r"^capi_invalid_calls_test[.]np[123]$",
             "a destroyed context's handle reaches the next context the allocator puts at its address"),
    Mutation("kept-communicator-uncounted", "C API", "src/comm/mpi/mpi_communicator.cpp",
             "    mpi::count_kept_communicator();\n", "",
             r"^capi_kept_communicators_test[.]np[23]$",
             "communicators of timed-out calls go uncounted: creations go on until one rank's split fails and "
             "the others block in theirs"),
    Mutation("kept-communicators-one-past-the-limit", "C API", "src/comm/mpi/kept_communicators.cpp",
             "  if (now < most) return;", "  if (now <= most) return;",
             r"^capi_kept_communicators_test[.]np[23]$",
             "a process that keeps RFA_MAX_KEPT_COMMUNICATORS communicators creates one more context"),
    Mutation("creation-failure-reason-unshared", "C API", "capi/creation_agreement.cpp",
             "    collective::broadcast_string(comm, reason, failing.front());\n", "",
             r"^capi_kept_communicators_test[.]np[23]$",
             "the ranks whose creation did not fail learn only that another rank's did, not why"),
    Mutation("mpi-thread-main-unchecked", "C API", "capi/mpi_thread_turn.cpp",
             "  if (level < MPI_THREAD_SERIALIZED) {", "  if (false) {",
             r"^capi_thread_level_(single|funneled)_test[.]np2$",
             "under MPI_THREAD_SINGLE or FUNNELED a thread other than MPI's main one calls into MPI"),
    Mutation("mpi-thread-turn-never-taken", "C API", "capi/mpi_thread_turn.cpp",
             "  if (MPI_Query_thread(&level) != MPI_SUCCESS || level >= MPI_THREAD_MULTIPLE) return Refusal::none;",
             "  return Refusal::none;",
             r"^capi_thread_level_serialized_test[.]np2$",
             "under MPI_THREAD_SERIALIZED two threads are inside MPI at once"),
    Mutation("destroy-thread-turn-untaken", "C API", "capi/context_create.cpp",
             '    const rfa::capi::MpiThreadTurn turn("rfa_context_destroy");\n', "",
             r"^capi_thread_level_(single|funneled)_test[.]np2$",
             "rfa_context_destroy from a thread MPI's level does not allow goes into MPI"),
    Mutation("backward-probability-above-one", "host kernels", "src/kernels/flash_backward.cpp",
             "const V pj = simd::exp2_probability(simd::load_as<V>(prow + j) * vc - vl);",
             "const V pj = simd::exp2(simd::load_as<V>(prow + j) * vc - vl);",
             r"^capi_forward_backward_test[.]np[1-4]$",
             "the fp32 backward recomputes probabilities above 1 at scores of 1e6 and more: dV beyond its bound, "
             "inf and NaN gradients"),
    Mutation("backward-bf16-probability-above-one", "host kernels", "src/kernels/flash_backward_bf16.cpp",
             "pr = simd::exp2_probability(sr * c - simd::splat<V>(s.lse2[i + r]));",
             "pr = simd::exp2(sr * c - simd::splat<V>(s.lse2[i + r]));",
             r"^capi_forward_backward_test[.]np[1-4]$",
             "the bf16 products' backward recomputes probabilities above 1 at large scores"),
    Mutation("cpu-refusal-guard-skipped", "C API", "capi/firewall.hpp",
             "  if (const char* refusal = build_isa_refusal()) return refuse_this_cpu(function, refusal);\n", "",
             r"^capi_cpu_refusal_emulated$",
             "a librfa built with -march=native stops at an illegal instruction on a CPU without AVX-512 instead "
             "of refusing"),
    Mutation("subproject-taken-for-top-level", "packaging", "CMakeLists.txt",
             "  set(RFA_IS_TOP_LEVEL OFF)\n", "  set(RFA_IS_TOP_LEVEL ON)\n",
             r"^consumer_subproject_test$",
             "rfa taken in with add_subdirectory builds its tests, benchmarks and docs, and fails where their "
             "tools are missing"),
    Mutation("subproject-forces-release", "packaging", "CMakeLists.txt",
             "  if(RFA_IS_TOP_LEVEL)\n    set(CMAKE_BUILD_TYPE Release", "  if(TRUE)\n    set(CMAKE_BUILD_TYPE Release",
             r"^consumer_subproject_test$",
             "an outer project with no build type is made Release by rfa: its own code loses its asserts"),
    Mutation("subproject-untyped-asserts-kept", "packaging", "cmake/RfaCompilerFlags.cmake",
             "if(RFA_OPTIMIZE_UNTYPED_BUILD)\n", "if(FALSE)\n",
             r"^consumer_subproject_test$",
             "rfa's code inside an outer project with no build type is compiled with its asserts, unlike Release"),
    Mutation("subproject-builds-perf", "packaging", "CMakeLists.txt",
             "if(RFA_IS_TOP_LEVEL OR RFA_ENABLE_BENCHMARKS OR RFA_ENABLE_TESTS)\n", "if(TRUE)\n",
             r"^consumer_subproject_test$",
             "rfa taken in with add_subdirectory builds perf/'s programs into the outer project's all"),
    Mutation("subproject-refuses-older-cxx", "packaging", "cmake/RfaDependencies.cmake",
             "CMAKE_CXX_STANDARD LESS _rfa_cxx AND NOT RFA_IS_TOP_LEVEL)", "CMAKE_CXX_STANDARD LESS _rfa_cxx AND FALSE)",
             r"^consumer_subproject_test$",
             "an outer project whose CMAKE_CXX_STANDARD is below rfa's cannot take rfa in"),
    Mutation("c99-feature-unstated", "packaging", "capi/CMakeLists.txt",
             "target_compile_features(rfa INTERFACE c_std_99)\n", "",
             r"^consumer_subproject_test$",
             "a C consumer built as C90 fails at rfa.h's static inline"),
    Mutation("pc-absolute-dirs-relativized", "packaging", "CMakeLists.txt",
             'if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")', "if(FALSE)",
             r"^consumer_subproject_test$",
             "with absolute install folders (Nix) the .pc files put them under a prefix found from their own place"),
    Mutation("fortran-compiler-mismatch-unchecked", "packaging", "cmake/rfaConfig.cmake.in",
             "if(RFA_HAVE_FORTRAN AND _rfa_at GREATER -1 AND NOT _rfa_fortran_mismatch\n",
             "if(RFA_HAVE_FORTRAN AND _rfa_at GREATER -1\n",
             r"^consumer_find_package_test$",
             "a project of another Fortran compiler finds rfa::rfa_fortran and fails later at `use rfa`"),
    Mutation("refused-rank-silent", "C API", "capi/context_create.cpp",
             "    rfa::capi::take_part_refused(comm, options, refusal);\n", "",
             r"^capi_cpu_refusal_mixed_emulated[.]np3$",
             "a rank on a CPU the build refuses leaves the others to wait out the creation's deadline and time out "
             "without its reason"),
    Mutation("refused-rank-silent-fortran", "C API", "capi/context_create.cpp",
             "      if (!rfa::capi::is_null_pointer(c)) rfa::capi::take_part_refused(c, options, refusal);\n", "",
             r"^capi_cpu_refusal_mixed_emulated[.]np3$",
             "rfa_context_create_fint on a CPU the build refuses leaves the others to wait out the deadline"),
    Mutation("refused-rank-takes-intercommunicator", "C API", "capi/refused_creation.cpp",
             "if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return;",
             "if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return;",
             r"^capi_cpu_refusal_intercomm_emulated[.]np3$",
             "a refused rank posts the agreement's all-gather on an intercommunicator, which the others refuse "
             "before any collective: its receive buffer holds the wrong group's records"),
    Mutation("lzcnt-bit-misread", "C API", "src/core/build_isa.cpp",
             '{"lzcnt", cpuid_bit(0x80000001u, 0, 2, 5)}', '{"lzcnt", cpuid_bit(0x80000001u, 0, 2, 6)}',
             r"^capi_cpu_refusal_lzcnt_(missing|present)_emulated$",
             "the CPU's LZCNT is read from another CPUID bit: a CPU without it (lzcnt runs as bsr there) is let "
             "through, or one with it refused"),
    Mutation("hwloc-display-plugins-kept", "topology", "src/topology/hwloc_probe.cpp",
             "      hwloc_topology_set_components(topology_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);",
             "      (void)name;",
             r"^topology_hwloc_plugins_test$",
             "rfa's hwloc load enables the gl plugin, which probes X displays (seconds where localhost does not "
             "resolve locally)"),
    Mutation("numa-node-by-intersection", "topology", "src/topology/hwloc_probe.cpp",
             "  placement.numa_node = local_numa_node(topology, binding.get());",
             "  placement.numa_node = only_intersecting(topology, HWLOC_OBJ_NUMANODE, binding.get());",
             r"^rfa_topology_tests$", "a core beside an HBM or CXL node has no NUMA node: every rank's is unknown"),
    Mutation("numa-node-hbm-as-plain", "topology", "src/topology/hwloc_probe.cpp",
             "      const bool plain = plain_memory(numa);", "      const bool plain = true;",
             r"^rfa_topology_tests$", "a core's NUMA node is its HBM node where that one has the lower index"),
    Mutation("host-dispatch-unlocked", "threads", "src/kernels/host_dispatch_lock.hpp",
             "KOKKOS_VERSION < 40000 && std::is_same<Exec, Kokkos::DefaultHostExecutionSpace>::value;",
             "false && std::is_same<Exec, Kokkos::DefaultHostExecutionSpace>::value;",
             r"^capi_concurrent_contexts_test[.]np2$",
             "two threads' kernels share Kokkos 3's one host scratch buffer: concurrent contexts' results differ"),
    Mutation("cuda-shape-empty-document-offsets", "CUDA block compute", "src/engine/cuda_attention_shape.cpp",
             "if (p.doc_offsets != nullptr && p.doc_bound_count > 0) {", "if (p.doc_offsets != nullptr) {",
             r"^rfa_cuda_engine_shape_on_host_test$",
             "per-sequence documents whose every list is empty reach the kernels as offsets into no boundaries, "
             "which they refuse"),
    Mutation("cudnn-shape-unchecked", "CUDA arguments", "kernels_cuda/src/cudnn/cudnn_attention.cpp",
             "  RFA_CUDA_TRY(detail::check_common_shape(s));\n", "",
             r"^rfa_cuda_argument_checks_test$",
             "cuDNN's host query takes position maps and shapes the flash path refuses (a stride of 0 divides by zero)"),
    Mutation("compare-run-keys-ignored", "perf tools", "perf/compare",
             "    for k in RUN_KEYS:", "    for k in ():",
             r"^perf[.]compare_synthetic$", "a run on cuDNN's kernels is timed against a baseline on rfa's"),
    Mutation("compare-newer-schema-accepted", "perf tools", "perf/compare",
             '    if not re.fullmatch(r"[0-9]+", schema) or int(schema) > RESULT_SCHEMA:', "    if False:",
             r"^perf[.]compare_synthetic$", "a result file of a newer format is read as this one"),
    Mutation("results-node-count-unrecorded", "perf tools", "perf/common/mpi_program.hpp",
             "  set_node_count(count_nodes(MPI_COMM_WORLD));", "",
             r"^perf[.]multinode_scale_check_smoke$", "runs across nodes record one node: the comparator times "
             "them against a one-node baseline"),
    Mutation("compare-lost-case-passes", "perf tools", "perf/compare",
             '    elif "missing" in verdicts and not machine_diff:', "    elif False:",
             r"^perf[.]compare_synthetic$", "a new run that lost a case of its baseline passes"),
    Mutation("suite-missing-baseline-folder", "perf tools", "perf/suite",
             "    if args.baseline is not None and not os.path.isdir(args.baseline):", "    if False:",
             r"^perf[.]suite_synthetic$|^perf[.]slurm_suite_array_smoke$",
             "a mistyped baseline folder runs the suite, every result a new baseline"),
    Mutation("suite-stale-result-counts", "perf tools", "perf/suite",
             "        if os.path.exists(result):  # an earlier run's", "        if False:  # an earlier run's",
             r"^perf[.]suite_synthetic$", "a program that writes nothing counts an earlier run's result as its own"),
    Mutation("suite-uncompared-unlisted", "perf tools", "perf/suite",
             '            if judged.get("verdict") == "new-baseline":', "            if False:",
             r"^perf[.]suite_synthetic$", "a result from another machine is not listed as compared with nothing"),
    Mutation("softcap-tile-max-uncapped", "soft cap", "src/kernels/flash_forward.cpp",
             "        if (max_from_registers) simd::cap_rows(s.tile_max, 0, 1, rows_padded, c, into_tanh);\n", "",
             KERNELS + r"|^capi_softcap_test[.]np[1-4]$",
             "a whole unmasked key tile keeps its uncapped max: scores far above the cap give out 0, lse -inf"),
    Mutation("softcap-partial-tile-uncapped", "soft cap", "src/kernels/flash_forward.cpp",
             "        simd::cap_rows(s.st, kScorePitch, cols_padded, rows_padded, c, into_tanh);\n",
             "        if (max_from_registers) simd::cap_rows(s.st, kScorePitch, cols_padded, rows_padded, c, into_tanh);\n",
             r"^capi_softcap_test[.]np[1-4]$",
             "a key tile that ends inside a micro-tile (blocks of 11 or 13 keys) keeps its scores uncapped"),
    Mutation("exp2-minus-infinity-unmasked", "kernels", "src/kernels/simd.hpp",
             "const __m512 reduced = _mm512_maskz_sub_ps(in_range, xs, n);",
             "const __m512 reduced = _mm512_sub_ps(xs, n);",
             KERNELS,
             "the 16-lane exp2 subtracts -inf from -inf for a masked score: SIGFPE where invalid is trapped "
             "(gfortran -ffpe-trap=invalid)"),
    Mutation("exp2-eight-lanes-rounded-by-mode", "kernels", "src/kernels/simd.hpp",
             "const __m256 rounded = _mm256_round_ps(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);",
             "const __m256 rounded = _mm256_sub_ps(_mm256_add_ps(c, _mm256_set1_ps(kExp2Shift)), "
             "_mm256_set1_ps(kExp2Shift));",
             KERNELS,
             "the 8-lane exp2 rounds its argument as the thread's rounding mode says: 1.7e-4 off under a directed mode"),
    Mutation("merge-weight-overflows", "kernels", "src/kernels/merge_partial.cpp",
             "  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));",
             "  if (x >= -1e30f) return 1.0f / (1.0f + std::exp(-x));",
             KERNELS,
             "the ring's merge forms e^100 for a block far below the running result: SIGFPE where overflow is trapped"),
    Mutation("caller-fp-environment-used", "C API", "capi/firewall.hpp",
             "  const HeldFloatingPointEnvironment environment;\n", "",
             r"^capi_floating_point_environment_test[.]np[12]$",
             "a call runs in the program's floating-point environment: its traps, its rounding mode (results "
             "differ), and rfa's exception flags left raised"),
    Mutation("forked-context-callable", "C API", "capi/collective_call.cpp",
             "  if (!forked_since_creation(c)) return;", "  return;",
             r"^capi_fork_test[.]np[12]$",
             "a fork's copy of a context runs a forward over the parent's MPI communicator"),
    Mutation("fork-finalizes-parents-kokkos", "C API", "capi/kokkos_lifetime.cpp",
             "  if (ownership != Ownership::owned || owner != getpid()) return;",
             "  if (ownership != Ownership::owned) return;",
             r"^capi_fork_finalize_test[.]np2$",
             "rfa_finalize in a child of fork() finalizes the parent's Kokkos (or refuses while the child's copies of "
             "the contexts are alive)"),
    Mutation("fork-handlers-not-installed", "C API", "capi/kokkos_lifetime.cpp",
             "  install_fork_handlers();  // before this process first takes one of their mutexes\n", "",
             r"^capi_fork_test[.]np[12]$",
             "a child forked while another thread holds the registry's mutex waits forever in its first rfa call"),
    Mutation("other-mpi-family-taken", "C API", "capi/mpi_family_check.cpp",
             "    if (ours == MpiFamily::unknown || theirs == MpiFamily::unknown || ours == theirs) return;",
             "    return;",
             r"^consumer_other_mpi_test$",
             "a program built with MPICH's mpi.h creates a context over a librfa on Open MPI: MPICH aborts the job in "
             "the first collective"),
    Mutation("mpi-family-by-mpich-name-only", "C API", "capi/mpi_family_check.cpp",
             'for (const char* mark : {"MPICH", "Intel(R) MPI", "MVAPICH"})', 'for (const char* mark : {"MPICH"})',
             r"^capi_mpi_family_check_test[.]np1$",
             "Intel MPI and MVAPICH, MPIs on MPICH's ABI, are not seen as MPICH's family: a librfa on Open MPI takes them"),
    Mutation("backward-bf16-dv-overwritten", "host kernels", "src/kernels/flash_backward_bf16.cpp",
             "        dvrow[x] += s.dvt[std::size_t(x) * kCols + j];", "        dvrow[x] = s.dvt[std::size_t(x) * kCols + j];",
             r"^rfa_kernels_test$",
             "the backward on hardware bf16 products writes a key block's dV over what the buffer held instead of adding to it"),
    Mutation("kokkos-initialized-under-lifetime-mutex", "C API", "capi/kokkos_lifetime.cpp",
             "    changing = getpid();\n    lock_.unlock();\n  }\n  ~ChangingKokkos() {\n    lock_.lock();\n",
             "    changing = getpid();\n  }\n  ~ChangingKokkos() {\n",
             r"^capi_fork_in_kokkos_test[.]np2$",
             "Kokkos initializes and finalizes under rfa's lifetime mutex: a Kokkos Tools callback that forks leaves the "
             "thread waiting on itself in the fork handler"),
    Mutation("launcher-local-rank-ignored", "collectives", "src/collective/node_rank.cpp",
             "{Env::ompi_local_rank, Env::mpich_local_rank, Env::slurm_localid}", "{Env::slurm_localid}",
             r"^rfa_topology_tests$",
             "before MPI_Init, ranks an mpiexec started inside a Slurm job all read the step's SLURM_LOCALID: every "
             "rank of a node on device 0"),
    Mutation("topo-dump-program-locale", "topology", "src/topology/topo_json.cpp",
             '  TextStream os;\n  os << "[";', '  std::ostringstream os;\n  os << "[";',
             r"^rfa_topology_tests$",
             "under a program's global locale that groups thousands the topology dump writes rank 1.000 and a host hash "
             "8cf.370.7b5"),
    Mutation("error-message-program-locale", "C API", "src/core/error.hpp",
             "  TextStream os;\n  detail::append(os, parts...);", "  std::ostringstream os;\n  detail::append(os, parts...);",
             r"^core_text_stream_test$",
             "error messages follow the program's global locale: rank 0 passes 4.096"),
    Mutation("bf16-switches-read-per-call", "kernels", "src/kernels/bf16_products.cpp",
             "  return p.bf16_products ? *p.bf16_products : allowed_bf16_products();",
             "  return allowed_bf16_products();",
             r"^capi_host_bf16_switches_test[.]np[12]$",
             "RFA_HOST_AMX or RFA_HOST_BF16_DOT set after a context's creation changes its next call's kernels"),
    Mutation("fp16-ties-round-down", "dtype conversions", "src/core/dtype.hpp",
             "r += 0xfffu + ((r >> 13) & 1u);", "r += 0xfffu;",
             KERNELS,
             "a float halfway between two fp16 values rounds down, not to even"),
    Mutation("timeout-env-trailing-text", "collectives", "src/core/environment.cpp",
             "if (end == text || *end != '\\0' || errno == ERANGE) return false;",
             "if (end == text || errno == ERANGE) return false;",
             r"^core_environment_numbers_test$|^comm_deadline_test[.]np2$|^capi_timeout_test[.]np2$",
             "RFA_TIMEOUT_S=30s is read as 30 seconds instead of refused"),
    Mutation("decimal-read-in-program-locale", "collectives", "src/core/environment.cpp",
             "c_numeric ? strtod_l(text, &end, c_numeric) : std::strtod(text, &end);",
             "std::strtod(text, &end);",
             r"^core_environment_numbers_test$",
             "under a locale with a decimal comma RFA_TIMEOUT_S=0.5 is refused as trailing text and 0,5 taken"),
    Mutation("whole-number-takes-sign", "collectives", "src/core/environment.cpp",
             "if (text == nullptr || *text < '0' || *text > '9') return false;",
             "if (text == nullptr || *text == '\\0') return false;",
             r"^core_environment_numbers_test$|^comm_wait_spin_test[.]np[1-3]$|^rfa_topology_tests$|"
             r"^capi_kept_communicators_test[.]np[23]$",
             "RFA_WAIT_SPIN_MS, SLURM_LOCALID or RFA_MAX_KEPT_COMMUNICATORS with leading blanks or a sign is taken"),
    Mutation("value-checks-backward-lse-unscanned", "value checks", "capi/attention.cpp",
             'scan_bshd<T, S>("dout", dout, c, o.heads, value_head_dim_of(o)), scan_lse<S>(lse, c)},',
             'scan_bshd<T, S>("dout", dout, c, o.heads, value_head_dim_of(o))},',
             r"^capi_value_checks_test[.]np[1-4]$",
             "the backward's value checks skip lse: an infinite lse gives zero gradients and success"),
    Mutation("auto-layout-not-reported", "strategies", "capi/context_create.cpp",
             "    context->options.layout = ring.config.layout;\n", "",
             r"^capi_auto_strategy_test[.]np[1-4]$",
             "rfa_context_get_options reports the caller's layout where the automatic strategy chose another"),
    Mutation("softmax-scale-underflow-taken", "argument checks", "capi/options.cpp",
             "require(o.softmax_scale == 0.0 || (scale_fp32 > 0.0f && std::isfinite(scale_fp32)),",
             "require(o.softmax_scale == 0.0 || (scale_fp32 >= 0.0f && std::isfinite(scale_fp32)),",
             r"^capi_invalid_calls_test[.]np[1-3]$",
             "a softmax scale that rounds to 0 in fp32 is taken, and the kernels read 0 as the default scale"),
    Mutation("multinode-fault-watchers-survive", "multinode harness", "scripts/multinode/nodes.sh",
             '  for w in "${watchers[@]}"; do kill "$w" 2>/dev/null; done\n', "",
             r"^multinode[.]harness$",
             "a fault watcher outlives a program that failed before its mark: the harness never returns"),
    Mutation("multinode-exec-unchecked", "multinode harness", "scripts/multinode/nodes.sh",
             '  err=$(ip netns exec "$1" true 2>&1) || skip "ip netns exec: ${err:-exit status $?}"\n', "",
             r"^multinode[.]harness$",
             "where a program cannot run inside a namespace (a chroot whose / is not a mount point) every "
             "multinode test fails instead of skipping"),
    Mutation("documents-offsets-last-entry", "documents", "src/core/documents.cpp",
             "  for (std::int64_t e = 0; e < batch; ++e) {\n    if (offsets[e + 1] < offsets[e]) {",
             "  for (std::int64_t e = 0; e + 1 < batch; ++e) {\n    if (offsets[e + 1] < offsets[e]) {",
             r"^core_documents_test$|^capi_sequence_documents_test[.]np[12]$",
             "per-sequence offsets that fall at the last entry are not refused: an entry's list reads past the boundaries"),
    Mutation("position-map-negative-start", "argument checks", "src/core/positions.cpp",
             "require(map.seg[s].start >= 0,", "require(map.seg[s].start >= -1,",
             r"^layout_test$|^rfa_kernels_test$",
             "a position map starting at -1 is taken: the shard copies touch the row before the global tensor"),
    Mutation("position-map-negative-length", "argument checks", "src/core/positions.cpp",
             "require(map.seg[s].length >= 0,", "require(map.seg[s].length >= -1,",
             r"^layout_test$|^rfa_kernels_test$",
             "a position map segment of length -1 is taken, its rows mapped to the wrong positions"),
    Mutation("run-grid-third-extent", "main job's options", "perf/ring/run_options.cpp",
             "g.nz = extents.size() == 3 ? extents[2] : 1;", "g.nz = extents.size() == 3 ? extents[1] : 1;",
             r"^rfa_perf_measure_test$|^perf[.]rfa_run_mask_grid",
             "rfa_run --mask grid:NXxNYxNZ:R takes NY for NZ: another problem than the one asked for"),
    Mutation("run-default-seq-balanced-multiple", "main job's options", "perf/ring/run_options.cpp",
             "o.layout == RFA_LAYOUT_BALANCED ? 8 : 1", "o.layout == RFA_LAYOUT_BALANCED ? 2 : 1",
             r"^rfa_perf_measure_test$|^perf[.]rfa_run_default_seq",
             "rfa_run's default sequence for the balanced layout is rounded to 2P, not 8P: the run is refused"),
    Mutation("order-file-crlf-tabs", "ring order", "src/topology/order_policy.cpp",
             'const char* space = " \\t\\r\\n";', 'const char* space = " \\n";',
             r"^rfa_topology_tests$|^rfa_topology_mpi_tests[.]np[12]$",
             "a ring order file with CRLF line ends or tabs is refused"),
    Mutation("ring-order-file-naming-unchecked", "ring order", "src/topology/choose_ring_order.cpp",
             "if (low[1] != high[1]) {", "if (false && low[1] != high[1]) {",
             r"^rfa_topology_mpi_tests[.]np[24]$",
             "ranks that disagree on naming a ring order file run different collectives instead of failing together"),
    Mutation("bundle-dry-run-tolerates-kernel-program", "GPU check plumbing", "scripts/gpu/build_bundle.sh",
             "[ $i -gt $kernel_only ]", "[ $i -ge $kernel_only ]",
             r"^scripts[.]build_bundle_programs$",
             "the dry run lets the last program that needs only the CUDA kernels be missing: the bundle lacks it"),
    Mutation("quickstart-one-rank-on-two-cores", "quick start", "scripts/quickstart.sh",
             "cores > 2 ? cores : 2", "cores > 2 ? cores : 1",
             r"^quickstart_run_test$",
             "quickstart.sh run starts one rank on a machine of 2 cores or fewer: no ring"),
    Mutation("fatal-failure-abort", "test harness", "tests/common/test_main_mpi.cpp",
             "    MPI_Abort(MPI_COMM_WORLD, 1);\n", "",
             r"^rfa_fatal_failure_aborts_test[.]np2$",
             "a fatal failure on one rank no longer aborts the others, which wait for its calls"),
    Mutation("slurm-suite-step-spread", "Slurm templates", "perf/slurm/perf_suite_array.sbatch",
             "srun --mpi=pmix --nodes={N} --ntasks={P}", "srun --mpi=pmix --ntasks={P}",
             r"^perf[.]slurm_multinode_smoke$",
             "the suite's array job gives srun the ranks alone: P = 2 in a 2-node allocation runs across both nodes"),
    Mutation("suite-nodes-rounded-down", "perf tools", "perf/suite",
             'filled.replace("{N}", str(-(-ranks // ranks_per_node)))', 'filled.replace("{N}", str(ranks // ranks_per_node))',
             r"^perf[.]suite_synthetic$",
             "the launcher's {N} is P over the ranks per node rounded down: 5 ranks at 4 a node get one node"),
    Mutation("fortran-refusal-hides-collective-failure", "Fortran", "fortran/rfa.f90.in",
             "    if (c_result == RFA_ERROR_INVALID_ARGUMENT .or. c_result == RFA_SUCCESS) then\n", "    if (.true.) then\n",
             r"^fortran_api_test[.]np2$",
             "arrays that do not fit an unusable context get the binding's shape message, not the call's INVALID_USAGE: "
             "the caller mends its arrays and calls a dead context again"),
    Mutation("fortran-destroy-refused-forgets-context", "Fortran", "fortran/rfa.f90.in",
             "    if (ierr /= RFA_ERROR_INVALID_USAGE) context%handle = c_null_ptr\n", "    context%handle = c_null_ptr\n",
             r"^fortran_destroy_refused_test[.]np2$",
             "a destroy MPI's thread level refused resets the Fortran handle: the context can never be destroyed"),
    Mutation("list-count-zero-taken", "argument checks", "capi/options.cpp",
             "require(o.doc_boundaries == nullptr || o.doc_boundary_count != 0,",
             "require(o.doc_boundaries == o.doc_boundaries || o.doc_boundary_count != 0,",
             r"^capi_sequence_documents_test[.]np2$",
             "document boundaries given with a count of 0 are taken as none: attention crosses the documents"),
    Mutation("range-count-zero-taken", "argument checks", "capi/options.cpp",
             "require(o.mask_ranges == nullptr || o.mask_range_count != 0,",
             "require(o.mask_ranges == o.mask_ranges || o.mask_range_count != 0,",
             r"^capi_mask_ranges_test[.]np2$",
             "mask ranges given with a count of 0 are taken: every key hidden, success returned"),
    Mutation("documents-builder-empty-sequence", "argument checks", "src/core/mask_range_builders.cpp",
             "require(bounds[count - 1] >= 1,", "require(bounds[count - 1] >= 0,",
             r"^capi_mask_range_builders_test$",
             "the documents' builder takes boundaries ending at 0, a sequence of no token"),
    Mutation("alltoallv-post-failure-waits", "collectives", "src/comm/mpi/mpi_communicator.cpp",
             "        if (i < receives_posted) MPI_Cancel(&requests[i]);\n        MPI_Request_free(&requests[i]);",
             "        MPI_Cancel(&requests[i]);\n        MPI_Wait(&requests[i], MPI_STATUS_IGNORE);",
             r"^comm_alltoallv_post_failure_test[.]np3$",
             "a send MPI refuses in the all-to-all makes the rank wait for the sends it had posted, until a late "
             "peer receives them"),
    Mutation("forward-far-scores-unseen", "kernels", "src/kernels/flash_forward.cpp",
             "m_new[lane] == -std::numeric_limits<float>::infinity() ? 0.0f : m_new[lane]",
             "m_new[lane] < -3.0e38f ? 0.0f : m_new[lane]",
             r"^rfa_kernels_test$",
             "a row whose best score is below -2e38 is taken for one that sees no key: out 0, lse -inf"),
    Mutation("merge-lse-difference-overflows", "merge", "src/kernels/merge_partial.cpp",
             "  if (bl > l + 128.0f) return 1.0f;\n  if (l > bl + 128.0f) return 0.0f;\n", "",
             r"^rfa_kernels_test$",
             "the merge forms the difference of lses 2e38 apart, which overflows (the flag a program may trap)"),
    Mutation("softcap-queries-prescaled", "soft cap", "src/kernels/flash_forward.cpp",
             "const float q_scale = capped ? 1.0f : p.scale() * kLog2e;\n"
             "    const float into_tanh = capped ? p.scale() / p.softcap : 0.0f;",
             "const float q_scale = p.scale() * kLog2e;\n"
             "    const float into_tanh = capped ? 1.0f / (p.softcap * kLog2e) : 0.0f;",
             r"^rfa_kernels_test$",
             "capped scores take scale * log2 e in the queries (and 1 / c in tanh): past fp32's range they overflow "
             "there, not in tanh"),
    Mutation("options-newer-field-ignored", "argument checks", "capi/options.cpp",
             "    if (bytes[i] != 0) {\n      fail(RFA_ERROR_UNSUPPORTED,",
             "    if (bytes[i] != 0 && false) {\n      fail(RFA_ERROR_UNSUPPORTED,",
             r"^capi_options_struct_size_test[.]np2$",
             "a field a newer header appends, set, is ignored by this library: the program runs without it"),
    Mutation("abandoned-transfers-context-usable", "agreement", "capi/collective_call.hpp",
             "    const bool transport_failed = e.code() == RFA_ERROR_MPI || e.code() == RFA_ERROR_NCCL;\n"
             "    if (e.code() == RFA_ERROR_TIMEOUT || transport_failed || (c.engine && c.engine->transfers_abandoned()))",
             "    if (e.code() == RFA_ERROR_TIMEOUT)",
             r"^capi_refused_send_test[.]np2$",
             "a call that MPI failed, its exchange giving up transfers, leaves the context usable: the next call "
             "runs into that exchange again on one rank and waits a deadline"),
    Mutation("fortran-have-macros-inverted", "Fortran", "fortran/CMakeLists.txt",
             "  if(RFA_HAVE_${_c})\n    set(RFA_FORTRAN_HAVE_${_c} .true.)",
             "  if(NOT RFA_HAVE_${_c})\n    set(RFA_FORTRAN_HAVE_${_c} .true.)",
             r"^fortran_api_test[.]np2$",
             "the module's RFA_HAVE_* logicals say the opposite of rfa_config.h: a Fortran code picks a device "
             "the build lacks"),
    Mutation("ranges-entry-documents-shared", "documents", "src/kernels/flash_attention.hpp",
             "const std::int64_t first = doc_offsets[entry], count = doc_offsets[entry + 1] - first;",
             "const std::int64_t e = ranges.on ? 0 : entry, first = doc_offsets[e], count = doc_offsets[e + 1] - first;",
             r"^rfa_kernels_test$",
             "under mask ranges, every batch entry takes the first entry's documents"),
    Mutation("mask-builder-count-in-list", "argument checks", "capi/mask_range_builders.cpp",
             "require(!overlap(counted, {\"ranges\"", "require(true || !overlap(counted, {\"ranges\"",
             r"^capi_mask_range_builders_test$",
             "a mask builder's count pointing into the list's room is taken: the list's copy overwrites it"),
]


def log(msg):
    print(msg, flush=True)


def listed_tests(build, regex=None):
    """The tests of `build` (those matching `regex`, if given) as ctest's JSON lists them; exits
    where `build` is not a configured build or ctest cannot list it."""
    if not os.path.isfile(os.path.join(build, "CTestTestfile.cmake")):
        sys.exit(f"mutate: {build} is not a configured build (no CTestTestfile.cmake)")
    listed = subprocess.run(["ctest", "--show-only=json-v1"] + (["-R", regex] if regex else []), cwd=build,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        sys.exit(f"mutate: ctest could not list the tests of {build}: {listed.stderr.strip()}")
    return json.loads(listed.stdout).get("tests", [])


def tests_matching_none(build):
    """The mutations whose ctest -R expression matches no test of `build`: their tests would be
    reported skipped in every run, the fault never tried."""
    tests = [t["name"] for t in listed_tests(build)]
    return [m for m in MUTATIONS if not any(re.search(m.tests, t) for t in tests)]


def documented_mutations():
    """The names in docs/testing.md's table of mutations (the table under the header
    "| mutation | area | the fault | caught by |", to its first line that is not a row)."""
    with open(os.path.join(ROOT, "docs", "testing.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    header = "| mutation | area | the fault | caught by |"
    if header not in lines:
        return set()
    names = set()
    for line in lines[lines.index(header) + 2:]:
        row = re.match(r"^\| `([^`]+)` \|", line)
        if not line.startswith("|"):
            break
        if row:
            names.add(row.group(1))
    return names


def check_list(tests_in=None):
    """Every mutation's text occurs exactly once in its file, names are unique, and each has its
    row in docs/testing.md's table; with `tests_in` (a build of every part), every mutation's
    tests are among that build's."""
    bad = []
    names = [m.name for m in MUTATIONS]
    if len(set(names)) != len(names):
        bad.append("duplicate mutation names")
    rows = documented_mutations()
    for name in names:
        if name not in rows:
            bad.append(f"{name}: no row in docs/testing.md's table of mutations")
    for name in sorted(rows - set(names)):
        bad.append(f"{name}: a row in docs/testing.md's table of mutations that mutate.py does not have")
    for m in MUTATIONS:
        with open(os.path.join(ROOT, m.path), encoding="utf-8") as f:
            n = f.read().count(m.old)
        if n != 1:
            bad.append(f"{m.name}: its text occurs {n} times in {m.path}, not once")
        if m.old == m.new:
            bad.append(f"{m.name}: changes nothing")
    if tests_in:
        for m in tests_matching_none(tests_in):
            bad.append(f"{m.name}: '{m.tests}' names no test of {tests_in}")
    for b in bad:
        print("mutate: " + b, file=sys.stderr)
    return not bad


def tracked_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"], check=True,
                         capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p]


def sync_copy(dest):
    """Copies the working tree into dest, leaving unchanged files (and their times) alone so the
    scratch build stays incremental. A changed file gets the time of its copy, not its own: a
    file older than the scratch build's objects (another checkout's, an older commit's) must
    still be rebuilt. A file the working tree no longer has is removed from dest (which holds the
    copy alone: the build is beside it), or a moved header's old copy would still be found by
    the includes of its old neighbours."""
    copied = 0
    files = [rel for rel in tracked_files() if os.path.isfile(os.path.join(ROOT, rel))]
    keep = set(files)
    for folder, _, names in os.walk(dest):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.relpath(path, dest) not in keep:
                os.remove(path)
                copied += 1
    for rel in files:
        src = os.path.join(ROOT, rel)
        dst = os.path.join(dest, rel)
        with open(src, "rb") as f:
            data = f.read()
        if os.path.isfile(dst):
            with open(dst, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)
        copied += 1
    return copied


# Files a mutation of which takes effect when the build is configured.
CMAKE_INPUTS = ("CMakeLists.txt", ".cmake", ".cmake.in", ".pc.in")


def run(cmd, logfile, **kw):
    with open(logfile, "a", encoding="utf-8") as f:
        f.write("\n$ " + " ".join(cmd) + "\n")
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False, **kw).returncode


def test_targets(build, regex):
    """The tests matching `regex` in this build and the executables (CMake targets) they run or
    require (REQUIRED_FILES: a script's program, or a library lib<target>.so such as librfa
    that a script builds a program against): only those are rebuilt. None matching: the tests
    are not in this build; matching but no executable: scripts, nothing to rebuild."""
    tests = listed_tests(build, regex)
    targets = set()
    for test in tests:
        files = list(test.get("command", []))
        for prop in test.get("properties", []):
            if prop.get("name") == "REQUIRED_FILES":
                files += prop.get("value", [])
        for arg in files:
            if not (arg.startswith(build) and os.path.isfile(arg)):
                continue
            library = re.fullmatch(r"lib(.+?)[.]so([.][0-9]+)*", os.path.basename(arg))
            if library:
                targets.add(library.group(1))
            elif os.access(arg, os.X_OK):
                targets.add(os.path.basename(arg))
    return len(tests), sorted(targets)


def failed_tests(logfile, start):
    """The tests ctest reported failed in the log from byte `start` on."""
    with open(logfile, "rb") as f:
        f.seek(start)
        text = f.read().decode("utf-8", errors="replace")
    return sorted(set(re.findall(r"^\s*\d+ - (\S+) \(", text, re.M)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=os.path.join(ROOT, "build-mutate"))
    ap.add_argument("--only", default="")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--check-list", action="store_true")
    ap.add_argument("--tests-in", default=None)
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()

    if a.list:
        for m in MUTATIONS:
            print(f"{m.name:22} {m.area:17} {m.path}: {m.why}")
        return 0
    if not check_list(a.tests_in):
        return 2
    if a.check_list:
        found = f", each one's tests in {a.tests_in}" if a.tests_in else ""
        print(f"mutate: {len(MUTATIONS)} mutations, each text found once{found}")
        return 0
    chosen = MUTATIONS
    if a.only:
        names = a.only.split(",")
        unknown = [n for n in names if n not in {m.name for m in MUTATIONS}]
        if unknown:
            print("mutate: unknown mutation(s): " + ", ".join(unknown), file=sys.stderr)
            return 2
        chosen = [m for m in MUTATIONS if m.name in names]

    src, build = os.path.join(a.work, "src"), os.path.join(a.work, "build")
    os.makedirs(build, exist_ok=True)
    logfile = os.path.join(a.work, "mutate.log")
    open(logfile, "w").close()
    log(f"mutate: copying the working tree to {src} ({sync_copy(src)} files changed); log in {logfile}")
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        rc = run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DRFA_ENABLE_TESTS=ON",
                  "-DRFA_ENABLE_CUDA=OFF", "-DRFA_ENABLE_BENCHMARKS=OFF", "-DRFA_ENABLE_DOCS=OFF"], logfile)
        if rc != 0:
            print("mutate: configuring the scratch build failed (see the log)", file=sys.stderr)
            return 2
    full = r"." if a.full else None
    exclude = ["-LE", "multinode"] if a.full else []
    build_cmd = ["cmake", "--build", build, "-j", str(a.jobs)]
    ctest = ["ctest", "--test-dir", build, "-j", str(a.jobs), "--output-on-failure"] + exclude

    t0 = time.time()
    if run(build_cmd, logfile) != 0:  # everything once: ctest must know every test
        print("mutate: the unmutated copy does not build (see the log)", file=sys.stderr)
        return 2
    baseline = full or "|".join(sorted({m.tests for m in chosen}))
    if run(ctest + ["-R", baseline], logfile) != 0:
        print("mutate: the chosen tests fail without any mutation (see the log)", file=sys.stderr)
        return 2
    log(f"mutate: baseline built and passing ({time.time() - t0:.0f} s)")

    results = []
    for m in chosen:
        t = time.time()
        matched, targets = (1, []) if full else test_targets(build, m.tests)
        if not matched:
            # Its tests are not in this build (the CUDA host tests need CUDA's headers).
            results.append((m, "skipped: its tests are not built here", [], 0.0))
            log(f"mutate: {m.name}: skipped, no test matching {m.tests} in this build")
            continue
        path = os.path.join(src, m.path)
        with open(path, encoding="utf-8") as f:
            original = f.read()
        # A CMake input is read when the build is configured (the package files, which the
        # consumer tests install, are made then): configure again, mutated and restored.
        reconfigure = m.path.endswith(CMAKE_INPUTS)
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(original.replace(m.old, m.new, 1))
            rebuild = full or bool(targets)  # tests that only run scripts need no build
            if reconfigure and run(["cmake", build], logfile) != 0:
                verdict, caught_by = "does not configure", []
            elif rebuild and run(build_cmd + ([] if full else ["--target"] + targets), logfile) != 0:
                verdict, caught_by = "does not build", []
            else:
                start = os.path.getsize(logfile)
                rc = run(ctest + ["--stop-on-failure", "-R", full or m.tests], logfile)
                caught_by = failed_tests(logfile, start)
                verdict = "caught" if rc != 0 else "MISSED"
        finally:
            with open(path, "w", encoding="utf-8") as f:
                f.write(original)
        if reconfigure and run(["cmake", build], logfile) != 0:
            print(f"mutate: the scratch build does not configure with {m.path} restored (see the log)", file=sys.stderr)
            return 2
        results.append((m, verdict, caught_by, time.time() - t))
        log(f"mutate: {m.name}: {verdict}" + (f" by {', '.join(caught_by)}" if caught_by else "") +
            f" ({time.time() - t:.0f} s)")

    print("\n| mutation | area | verdict | failing tests |\n|---|---|---|---|")
    for m, verdict, caught_by, _ in results:
        print(f"| `{m.name}` | {m.area} | {verdict} | {', '.join(caught_by) or '-'} |")
    skipped = [r for r in results if r[1].startswith("skipped")]
    bad = [r for r in results if r[1] != "caught" and r not in skipped]
    print(f"\nmutate: {len(results) - len(bad) - len(skipped)} of {len(results) - len(skipped)} caught in "
          f"{time.time() - t0:.0f} s" + (f" ({len(skipped)} skipped: their tests are not built here)" if skipped else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
