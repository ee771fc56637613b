// SPDX-License-Identifier: BSD-3-Clause
// The performance model (model/performance_model.hpp) held to the engines: on 1 to 4 ranks,
// for every strategy, layout, mask, window and head grouping, the bytes it predicts for this
// rank are the bytes the engine sends (PassTimings::bytes_sent), forward and backward; and its
// times follow from its parts where the machine makes one part vanish.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "engine/attention_strategy.hpp"
#include "layout/sequence_layout.hpp"
#include "model/performance_model.hpp"
#include "mpi_test_support.hpp"

namespace rfa::model {
namespace {

using engine::StrategyChoice;
using engine::StrategyKind;

engine::AttentionConfig config(rfa_layout_t layout, rfa_mask_t mask, std::int64_t kv_heads, std::int64_t window) {
  engine::AttentionConfig c;
  c.layout = layout;
  c.mask = mask;
  c.dtype = RFA_DTYPE_FLOAT32;
  c.batch = 2;
  c.seq_total = 240;
  c.heads = 12;
  c.kv_heads = kv_heads;
  c.head_dim = 8;
  c.window = window;
  return c;
}

/// Bytes this rank's engine sends in one forward and one backward.
std::pair<std::int64_t, std::int64_t> engine_bytes(comm::Communicator& comm, const engine::AttentionConfig& c,
                                                   const StrategyChoice& choice) {
  auto attn = engine::make_strategy(comm, c, choice);
  const std::int64_t B = c.batch, L = attn->local_seq(), H = c.heads, HKV = c.kv_heads, D = c.head_dim, DV = c.dv();
  kernels::Tensor4<float> q("q", B, L, H, D), k("k", B, L, HKV, D), v("v", B, L, HKV, DV), out("out", B, L, H, DV),
      dout("dout", B, L, H, DV), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, DV);
  kernels::Tensor3<float> lse("lse", B, H, L);
  attn->forward<float>(q, k, v, out, lse);
  const std::int64_t forward = attn->last_timings().bytes_sent;
  attn->backward<float>(q, k, v, out, dout, lse, dq, dk, dv);
  return {forward, attn->last_timings().bytes_sent};
}

TEST(PerformanceModel, PredictsTheBytesEveryEngineSends) {
  auto comm = comm::make_mpi_communicator(MPI_COMM_WORLD, test::world_rank());
  const int P = comm->size(), me = comm->rank();
  std::vector<StrategyChoice> choices = {{StrategyKind::ring, 0, 1},
                                         {StrategyKind::ulysses, 0, 1},
                                         {StrategyKind::allgather, 0, 1},
                                         {StrategyKind::allgather, 0, 2}};
  for (int degree = 1; degree <= P; ++degree)
    if (P % degree == 0) choices.push_back({StrategyKind::hybrid, degree, 1});
  int compared = 0;
  for (const StrategyChoice& choice : choices)
    for (rfa_layout_t layout : {RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_STRIPE, RFA_LAYOUT_BALANCED})
      for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE})
        for (std::int64_t kv_heads : {12, 4})
          for (std::int64_t window : {0, 30})
            for (std::int64_t value_dim : {0, 24}) {  // V wider than Q and K: its own bytes
              if (value_dim != 0 && kv_heads == 12) continue;
              engine::AttentionConfig c = config(layout, mask, kv_heads, window);
              c.value_dim = value_dim;
              try {
                engine::validate_strategy(choice, c, P);
              } catch (const Error&) {
                continue;  // a grid this problem does not fit: the same verdict on every rank
              }
              SCOPED_TRACE(::testing::Message()
                           << engine::strategy_name(choice.kind) << ":" << choice.ulysses_degree << " chunk "
                           << choice.kv_heads_per_chunk << " " << layout::layout_name(layout)
                           << (mask == RFA_MASK_CAUSAL ? " causal" : "") << " kv_heads " << kv_heads << " window "
                           << window << " value dim " << value_dim << " rank " << me << " of " << P);
              const auto [forward, backward] = engine_bytes(*comm, c, choice);
              const Prediction p = predict_rank(c, choice, P, me, MachineModel{});
              EXPECT_EQ(p.forward.bytes_sent, double(forward));
              EXPECT_EQ(p.backward.bytes_sent, double(backward));
              ++compared;
            }
  EXPECT_GT(compared, 100);
}

TEST(PerformanceModel, TimesFollowFromComputeAndTransfers) {
  engine::AttentionConfig c = config(RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, 12, 0);
  c.seq_total = 4096;
  MachineModel free_links;
  free_links.intra_node = free_links.inter_node = Link{0.0, 1e30};
  free_links.copy_bytes_per_s = 1e30;
  free_links.forward_flops_per_s = 1e9;
  free_links.backward_flops_per_s = 2e9;
  // One rank, no mask: every score of the sequence, at the kernels' rate.
  const Prediction one = predict(c, {StrategyKind::ring, 0, 1}, 1, free_links);
  const double scores = double(c.seq_total * c.seq_total * c.batch * c.heads);
  EXPECT_DOUBLE_EQ(one.forward.seconds, scores * 4 * c.head_dim / 1e9);
  EXPECT_DOUBLE_EQ(one.backward.seconds, scores * 2.5 * 4 * c.head_dim / 2e9);
  // V's own head dim: 2 (d + dv) FLOPs a score forward (Q K^T, P V), 6 d + 4 dv backward.
  engine::AttentionConfig mla = c;
  mla.value_dim = 24;
  const Prediction split = predict(mla, {StrategyKind::ring, 0, 1}, 1, free_links);
  EXPECT_DOUBLE_EQ(split.forward.seconds, scores * 2 * (8 + 24) / 1e9);
  EXPECT_DOUBLE_EQ(split.backward.seconds, scores * (6 * 8 + 4 * 24) / 2e9);
  // Free links and copies: every strategy takes its compute alone; the ring over 4 ranks a
  // quarter of it.
  for (StrategyChoice choice :
       {StrategyChoice{StrategyKind::ring, 0, 1}, StrategyChoice{StrategyKind::ulysses, 0, 1},
        StrategyChoice{StrategyKind::allgather, 0, 1}, StrategyChoice{StrategyKind::hybrid, 2, 1}}) {
    const Prediction p = predict(c, choice, 4, free_links);
    EXPECT_DOUBLE_EQ(p.forward.seconds, p.forward.compute_seconds) << engine::strategy_name(choice.kind);
    EXPECT_NEAR(p.forward.seconds, one.forward.seconds / 4, 1e-12 + 1e-9 * one.forward.seconds);
  }
  // Slow links: the ring's forward waits for its three exchanges, each latency + bytes / bandwidth.
  MachineModel slow = free_links;
  slow.ranks_per_node = 4;
  slow.intra_node = Link{1.0, 1e6};
  const Prediction p = predict(c, {StrategyKind::ring, 0, 1}, 4, slow);
  const double block = 2.0 * double(c.batch * (c.seq_total / 4) * c.kv_heads * c.head_dim) * 4.0;
  EXPECT_NEAR(p.forward.seconds, 3 * (1.0 + block / 1e6) + one.forward.seconds / 16, 1e-9);
  // Across nodes the network's figures apply.
  slow.ranks_per_node = 2;
  slow.inter_node = Link{2.0, 1e6};
  EXPECT_NEAR(predict(c, {StrategyKind::ring, 0, 1}, 4, slow).forward.seconds,
              3 * (2.0 + block / 1e6) + one.forward.seconds / 16, 1e-9);
}

// A host transport's processing of each byte (Link::cpu_seconds_per_byte) runs on the cores that
// compute: it adds to the compute a transfer overlaps (the ring's steps, the all-gather's next
// chunk), not to the blocking exchanges (Ulysses), whose time the bandwidth already holds.
TEST(PerformanceModel, ATransfersProcessingAddsToTheComputeItOverlaps) {
  engine::AttentionConfig c = config(RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, 12, 0);
  c.seq_total = 4096;
  MachineModel m;
  m.ranks_per_node = 4;
  m.intra_node = m.inter_node = Link{0.0, 1e30};
  m.copy_bytes_per_s = 1e30;
  m.forward_flops_per_s = 1e9;
  m.backward_flops_per_s = 2e9;
  MachineModel tcp = m;
  const double cpu = 1e-9;
  tcp.intra_node.cpu_seconds_per_byte = tcp.inter_node.cpu_seconds_per_byte = cpu;
  const StrategyChoice ring{StrategyKind::ring, 0, 1};
  const Prediction free = predict(c, ring, 4, m), busy = predict(c, ring, 4, tcp);
  // K and V of a block (fp32), and its fp32 dK and dV: the same bytes.
  const double block = 2.0 * double(c.batch * (c.seq_total / 4) * c.kv_heads * c.head_dim) * 4.0;
  // Forward: the first three of four steps send and receive a block. Backward: K/V at steps
  // 0-2, the partial dK/dV sent at steps 1 and 2 arriving during steps 2 and 3.
  EXPECT_NEAR(busy.forward.seconds - free.forward.seconds, 3 * cpu * block, 1e-9 * free.forward.seconds);
  EXPECT_NEAR(busy.backward.seconds - free.backward.seconds, 5 * cpu * block, 1e-9 * free.backward.seconds);
  EXPECT_DOUBLE_EQ(busy.forward.compute_seconds, free.forward.compute_seconds) << "the kernels alone";
  // A step whose transfer outlasts its compute and processing takes the transfer's time alone.
  MachineModel slow = tcp;
  slow.intra_node.bytes_per_s = slow.inter_node.bytes_per_s = 1e3;
  MachineModel slow_free = slow;
  slow_free.intra_node.cpu_seconds_per_byte = slow_free.inter_node.cpu_seconds_per_byte = 0;
  EXPECT_DOUBLE_EQ(predict(c, ring, 4, slow).forward.seconds, predict(c, ring, 4, slow_free).forward.seconds);
  // Ulysses' all-to-alls block: no change. The all-gather's chunks compute beside the next gather.
  const StrategyChoice ulysses{StrategyKind::ulysses, 0, 1}, allgather{StrategyKind::allgather, 0, 1};
  EXPECT_DOUBLE_EQ(predict(c, ulysses, 4, tcp).forward.seconds, predict(c, ulysses, 4, m).forward.seconds);
  EXPECT_DOUBLE_EQ(predict(c, ulysses, 4, tcp).backward.seconds, predict(c, ulysses, 4, m).backward.seconds);
  EXPECT_GT(predict(c, allgather, 4, tcp).forward.seconds, predict(c, allgather, 4, m).forward.seconds);
  // Ranks that share their node's units share the processing too: two units for four ranks
  // make it take twice as long as on units of their own.
  MachineModel shared = m, shared_tcp = tcp;
  shared.compute_units_per_node = shared_tcp.compute_units_per_node = 2;
  EXPECT_NEAR(predict(c, ring, 4, shared_tcp).forward.seconds - predict(c, ring, 4, shared).forward.seconds,
              2 * 3 * cpu * block, 1e-9 * free.forward.seconds);
}

// A link shaped by a token bucket (Link::burst_bytes) passes up to its burst at once after it has
// stood idle, refilled at its rate meanwhile: the model credits that to what is sent after the
// kernels left the link idle (Ulysses' and the hybrid's all-to-alls home, the all-gather's
// reduce-scatters, the ring's last dK/dV home), never to a pass's first transfer or to the
// transfers the ring's steps overlap.
TEST(PerformanceModel, ALinksBurstCreditsTheTransfersAfterTheKernelsLeftItIdle) {
  engine::AttentionConfig c = config(RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, 12, 0);
  c.seq_total = 4096;
  MachineModel m;
  m.ranks_per_node = 1;  // every rank on a node of its own: the network throughout
  const double rate = 1e7;
  m.intra_node = m.inter_node = Link{0.0, rate};
  m.copy_bytes_per_s = 1e30;
  m.forward_flops_per_s = 1e9;
  m.backward_flops_per_s = 2e9;
  auto with_burst = [&](double bytes) {
    MachineModel b = m;
    b.intra_node.burst_bytes = b.inter_node.burst_bytes = bytes;
    return b;
  };
  const double burst = 1e5;
  const StrategyChoice ulysses{StrategyKind::ulysses, 0, 1}, allgather{StrategyKind::allgather, 0, 1},
      ring{StrategyKind::ring, 0, 1}, hybrid{StrategyKind::hybrid, 2, 1};
  // Ulysses: the way home (out and lse; dQ, dK and dV) after the whole sequence's kernels, which
  // last far longer than the bucket takes to refill: the burst at once, forward and backward.
  const Prediction plain = predict(c, ulysses, 4, m), bursting = predict(c, ulysses, 4, with_burst(burst));
  EXPECT_NEAR(plain.forward.seconds - bursting.forward.seconds, burst / rate, 1e-12);
  EXPECT_NEAR(plain.backward.seconds - bursting.backward.seconds, burst / rate, 1e-12);
  // A burst larger than the way home credits the way home: forward, out (dv values) and lse of
  // the 3 query heads this rank keeps for the 3 other ranks' 1024 rows each, sent to them.
  const double rows = 1024, home = c.batch * rows * 9 * 4.0 * c.dv() + 4.0 * c.batch * 3 * rows * 3;
  EXPECT_NEAR(plain.forward.seconds - predict(c, ulysses, 4, with_burst(1e12)).forward.seconds, home / rate, 1e-12);
  // Kernels shorter than the bucket's refill: what the link's rate refilled meanwhile.
  MachineModel fast = with_burst(1e12);
  fast.forward_flops_per_s = 1e12;
  MachineModel fast_plain = m;
  fast_plain.forward_flops_per_s = 1e12;
  const Prediction quick = predict(c, ulysses, 4, fast_plain);
  ASSERT_LT(quick.forward.compute_seconds * rate, home);
  EXPECT_NEAR(quick.forward.seconds - predict(c, ulysses, 4, fast).forward.seconds, quick.forward.compute_seconds,
              1e-12);
  // The all-gather: each of the 12 chunks' reduce-scatter follows its kernels, during which the
  // next chunk's gather ends long before them; its forward gains nothing (the gathers overlap
  // the kernels but the first, which starts the pass).
  const Prediction gather = predict(c, allgather, 4, m), gather_burst = predict(c, allgather, 4, with_burst(burst));
  EXPECT_DOUBLE_EQ(gather_burst.forward.seconds, gather.forward.seconds);
  EXPECT_NEAR(gather.backward.seconds - gather_burst.backward.seconds, 12 * burst / rate, 1e-9);
  // The ring: its steps' transfers overlap the kernels and are not credited, but the backward's
  // last dK/dV home, after the last step's kernels outlast what it sends.
  EXPECT_DOUBLE_EQ(predict(c, ring, 4, with_burst(burst)).forward.seconds, predict(c, ring, 4, m).forward.seconds);
  EXPECT_NEAR(predict(c, ring, 4, m).backward.seconds - predict(c, ring, 4, with_burst(burst)).backward.seconds,
              burst / rate, 1e-12);
  // The hybrid (2 x 2): its ring's last forward step sends nothing, so the way home gets the
  // burst; in the backward its ring's last dK/dV home take it, just before the way home on the
  // same link, which gets nothing.
  const Prediction grid = predict(c, hybrid, 4, m), grid_burst = predict(c, hybrid, 4, with_burst(burst));
  EXPECT_NEAR(grid.forward.seconds - grid_burst.forward.seconds, burst / rate, 1e-12);
  EXPECT_NEAR(grid.backward.seconds - grid_burst.backward.seconds, burst / rate, 1e-12);
  // With each Ulysses group inside a node its all-to-alls' link idles through the whole ring:
  // the way home gets the burst of its own link too.
  MachineModel paired = m, paired_burst = with_burst(burst);
  paired.ranks_per_node = paired_burst.ranks_per_node = 2;
  const Prediction inside = predict(c, hybrid, 4, paired), inside_burst = predict(c, hybrid, 4, paired_burst);
  EXPECT_NEAR(inside.forward.seconds - inside_burst.forward.seconds, burst / rate, 1e-12);
  EXPECT_NEAR(inside.backward.seconds - inside_burst.backward.seconds, 2 * burst / rate, 1e-12);
  // A negative burst is refused.
  EXPECT_THROW(predict(c, ring, 4, with_burst(-1)), Error);
}

// A round of the needed-only exchange receives from the rank s upstream and sends to the rank s
// downstream at once: it pays the link between nodes when either neighbour is on another node.
// Contiguous and causal with a window of 20 over 4 ranks of 60 rows, two ranks a node: rank 1
// receives rank 0's tail inside node 0 and sends its own to rank 2 on node 1, so its forward
// waits for the network's second of latency; with the four ranks on one node it does not.
TEST(PerformanceModel, NeededRoundsAcrossANodeBoundaryPayTheNetwork) {
  const engine::AttentionConfig c = config(RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, 12, 20);
  MachineModel m;
  m.intra_node = Link{0.0, 1e30};
  m.inter_node = Link{1.0, 1e30};
  m.copy_bytes_per_s = 1e30;
  m.forward_flops_per_s = m.backward_flops_per_s = 1e30;
  const StrategyChoice needed{StrategyKind::needed, 0, 1};
  m.ranks_per_node = 2;
  const Prediction across = predict_rank(c, needed, 4, 1, m);
  EXPECT_GE(across.forward.seconds, 1.0);
  EXPECT_GE(across.backward.seconds, 1.0);
  m.ranks_per_node = 4;
  const Prediction inside = predict_rank(c, needed, 4, 1, m);
  EXPECT_LT(inside.forward.seconds, 1e-3);
  EXPECT_LT(inside.backward.seconds, 1e-3);
}

// Each ring step computes the block that came from upstream (the block of ring position
// rank - s). With transfers longer than any block's compute, a rank waits for its three exchanges
// and then computes its last step's block alone: on the contiguous causal layout that block is
// the next rank's, hidden from ranks 0 to 2, while rank 3 sees all of block 0.
TEST(PerformanceModel, EachRingStepComputesTheBlockFromUpstream) {
  engine::AttentionConfig c = config(RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, 12, 0);
  c.seq_total = 4096;
  MachineModel slow;
  slow.ranks_per_node = 4;
  slow.intra_node = Link{1.0, 1e6};
  slow.copy_bytes_per_s = 1e30;
  slow.forward_flops_per_s = 1e9;
  const std::int64_t L = c.seq_total / 4;
  const double exchange = 1.0 + 2.0 * double(c.batch * L * c.kv_heads * c.head_dim) * 4.0 / 1e6;
  const double whole_block = double(c.batch * c.heads * L * L) * 4 * double(c.head_dim) / 1e9;
  ASSERT_LT(whole_block, exchange);
  for (int rank = 0; rank < 4; ++rank) {
    const Prediction p = predict_rank(c, {StrategyKind::ring, 0, 1}, 4, rank, slow);
    EXPECT_NEAR(p.forward.seconds, 3 * exchange + (rank == 3 ? whole_block : 0.0), 1e-9) << "rank " << rank;
  }
}

// The all-gather's calls over one packed K/V head run at their measured multiple of the rate;
// nothing else changes, and no other strategy's time.
TEST(PerformanceModel, ThePackedHeadSpeedupScalesTheAllGathersKernelsOnly) {
  engine::AttentionConfig c = config(RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 12, 0);
  c.seq_total = 4096;
  MachineModel plain;
  MachineModel packed = plain;
  packed.packed_head_forward_speedup = 2.0;
  packed.packed_head_backward_speedup = 4.0;
  const StrategyChoice allgather{StrategyKind::allgather, 0, 1};
  const Prediction a = predict(c, allgather, 4, plain), b = predict(c, allgather, 4, packed);
  EXPECT_DOUBLE_EQ(b.forward.compute_seconds, a.forward.compute_seconds / 2);
  EXPECT_DOUBLE_EQ(b.backward.compute_seconds, a.backward.compute_seconds / 4);
  EXPECT_EQ(b.backward.bytes_sent, a.backward.bytes_sent);
  for (StrategyChoice other : {StrategyChoice{StrategyKind::ring, 0, 1}, StrategyChoice{StrategyKind::ulysses, 0, 1},
                               StrategyChoice{StrategyKind::hybrid, 2, 1}}) {
    EXPECT_DOUBLE_EQ(predict(c, other, 4, packed).forward.seconds, predict(c, other, 4, plain).forward.seconds)
        << engine::strategy_name(other.kind);
    EXPECT_DOUBLE_EQ(predict(c, other, 4, packed).backward.seconds, predict(c, other, 4, plain).backward.seconds)
        << engine::strategy_name(other.kind);
  }
  packed.packed_head_forward_speedup = 0;
  EXPECT_THROW(predict(c, allgather, 4, packed), Error);
}

// Each kernel call pays for its query rows and key rows beside its scores: the ring's blocks
// (L rows against L keys, P of them: the sequence's rows once), Ulysses' one call over the
// whole sequence for its heads, and the all-gather's calls of L rows against the whole
// sequence's keys.
TEST(PerformanceModel, EachCallPaysForItsQueryAndKeyRows) {
  engine::AttentionConfig c = config(RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, 12, 0);
  c.seq_total = 4096;
  MachineModel plain;
  MachineModel rows = plain;
  rows.forward_row_seconds = 1e-6;
  rows.backward_row_seconds = 3e-6;
  const double B = double(c.batch), H = double(c.heads), S = double(c.seq_total), L = S / 4;
  auto added = [&](const StrategyChoice& choice, int ranks, bool backward) {
    const Prediction a = predict_rank(c, choice, ranks, 0, plain), b = predict_rank(c, choice, ranks, 0, rows);
    return backward ? b.backward.compute_seconds - a.backward.compute_seconds
                    : b.forward.compute_seconds - a.forward.compute_seconds;
  };
  for (int P : {1, 4}) {
    EXPECT_NEAR(added({StrategyKind::ring, 0, 1}, P, false), 1e-6 * B * H * S, 1e-12) << P;
    EXPECT_NEAR(added({StrategyKind::ring, 0, 1}, P, true), 3e-6 * B * H * S, 1e-12) << P;
  }
  EXPECT_NEAR(added({StrategyKind::ulysses, 0, 1}, 4, false), 1e-6 * B * (H / 4) * S, 1e-12);
  EXPECT_NEAR(added({StrategyKind::allgather, 0, 1}, 4, true), 3e-6 * B * H * (L + S) / 2, 1e-12);
  rows.forward_row_seconds = -1;
  EXPECT_THROW(predict(c, {StrategyKind::ring, 0, 1}, 4, rows), Error);
}

// Ranks that share their node's compute units: where every rank computes alike (no mask) each
// takes units / ranks of one; where the causal contiguous ring leaves ranks idle, a step lasts
// as long as its busy ranks need with the idle ones' units taken by them: each busy rank on one
// of a whole number of units (three busy ranks on two: two share one), or a fraction of units
// shared among all.
TEST(PerformanceModel, RanksSharingUnitsDivideThemAmongTheBusyOnes) {
  MachineModel alone;
  alone.intra_node = alone.inter_node = Link{0.0, 1e30};
  alone.copy_bytes_per_s = 1e30;
  alone.ranks_per_node = 4;
  MachineModel shared = alone;
  shared.compute_units_per_node = 2;
  MachineModel enough = alone;
  enough.compute_units_per_node = 4;
  engine::AttentionConfig c = config(RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, 12, 0);
  c.seq_total = 4096;
  for (StrategyChoice choice : {StrategyChoice{StrategyKind::ring, 0, 1}, StrategyChoice{StrategyKind::ulysses, 0, 1},
                                StrategyChoice{StrategyKind::allgather, 0, 1}}) {
    SCOPED_TRACE(engine::strategy_name(choice.kind));
    const Prediction a = predict(c, choice, 4, alone), b = predict(c, choice, 4, shared);
    EXPECT_NEAR(b.forward.seconds, 2 * a.forward.seconds, 1e-9 * a.forward.seconds);
    EXPECT_NEAR(b.backward.seconds, 2 * a.backward.seconds, 1e-9 * a.backward.seconds);
    EXPECT_DOUBLE_EQ(predict(c, choice, 4, enough).forward.seconds, a.forward.seconds);
  }
  // Three ranks computing alike on two units: two of them share one, at half speed; on 2.5
  // units shared by all, each at 2.5 / 3.
  {
    MachineModel three = alone, two_units = alone, fraction = alone;
    three.ranks_per_node = two_units.ranks_per_node = fraction.ranks_per_node = 3;
    two_units.compute_units_per_node = 2;
    fraction.compute_units_per_node = 2.5;
    const StrategyChoice ulysses{StrategyKind::ulysses, 0, 1};
    engine::AttentionConfig c3 = c;
    c3.seq_total = 4104;  // zigzag over 3 ranks: 6 chunks
    const double own = predict(c3, ulysses, 3, three).forward.seconds;
    EXPECT_NEAR(predict(c3, ulysses, 3, two_units).forward.seconds, 2 * own, 1e-9 * own);
    EXPECT_NEAR(predict(c3, ulysses, 3, fraction).forward.seconds, own * 3 / 2.5, 1e-9 * own);
  }
  // Contiguous, causal: position r computes its diagonal block at step 0 and full blocks at
  // steps 1..r. On 2 units: 4 diagonals (two a unit), then 3 full blocks (two on one unit), 2
  // and 1; on 1.5 units shared among the busy ranks: 4 diagonals, 3 full blocks and 2 at 1.5 / busy
  // of a unit each, then 1 full block on a unit of its own.
  c.layout = RFA_LAYOUT_CONTIGUOUS;
  c.mask = RFA_MASK_CAUSAL;
  engine::AttentionConfig block = c;
  block.seq_total = c.seq_total / 4;
  const double diagonal = predict(block, {StrategyKind::ring, 0, 1}, 1, alone).forward.seconds;
  block.mask = RFA_MASK_NONE;
  const double full = predict(block, {StrategyKind::ring, 0, 1}, 1, alone).forward.seconds;
  const Prediction p = predict(c, {StrategyKind::ring, 0, 1}, 4, shared);
  EXPECT_NEAR(p.forward.seconds, 4 * diagonal / 2 + 2 * full + full + full, 1e-9 * p.forward.seconds);
  MachineModel fraction = alone;
  fraction.compute_units_per_node = 1.5;
  EXPECT_NEAR(predict(c, {StrategyKind::ring, 0, 1}, 4, fraction).forward.seconds,
              4 * diagonal / 1.5 + 3 * full / 1.5 + 2 * full / 1.5 + full, 1e-9 * p.forward.seconds);
  EXPECT_NEAR(predict(c, {StrategyKind::ring, 0, 1}, 4, alone).forward.seconds, diagonal + 3 * full,
              1e-9 * p.forward.seconds);
  shared.compute_units_per_node = -1;
  EXPECT_THROW(predict(c, {StrategyKind::ring, 0, 1}, 4, shared), Error);
}

// A rank done with its step's kernels takes MachineModel::waiting_rank_share of its unit while
// the others there compute. The contiguous causal ring over 4 ranks on 2 units: step 1's three
// full blocks take a unit two and one, rank 0 waiting beside the lone one, which still ends
// first; at step 2 each unit holds a full block and a waiting rank, so each computes at 1 - w
// of a unit; at step 3 the waiting ranks wait on the idle unit and leave the last block alone.
// A share larger than even turns would leave gets those turns (half a unit each).
TEST(PerformanceModel, WaitingRanksTakeTheirShareOfTheUnitsTheyShare) {
  MachineModel shared;
  shared.intra_node = shared.inter_node = Link{0.0, 1e30};
  shared.copy_bytes_per_s = 1e30;
  shared.ranks_per_node = 4;
  shared.compute_units_per_node = 2;
  engine::AttentionConfig c = config(RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, 12, 0);
  c.seq_total = 4096;
  engine::AttentionConfig block = c;
  block.seq_total = c.seq_total / 4;
  MachineModel alone = shared;
  alone.compute_units_per_node = 0;
  alone.ranks_per_node = 1;
  const double diagonal = predict(block, {StrategyKind::ring, 0, 1}, 1, alone).forward.seconds;
  block.mask = RFA_MASK_NONE;
  const double full = predict(block, {StrategyKind::ring, 0, 1}, 1, alone).forward.seconds;
  const StrategyChoice ring{StrategyKind::ring, 0, 1};
  for (double w : {0.0, 0.1, 0.3}) {
    SCOPED_TRACE(w);
    shared.waiting_rank_share = w;
    const Prediction p = predict(c, ring, 4, shared);
    EXPECT_NEAR(p.forward.seconds, 2 * diagonal + 2 * full + full / (1 - w) + full, 1e-9 * p.forward.seconds);
  }
  // From a share of one half on (the floor's edge; 1, the largest accepted), even turns bind.
  for (double w : {0.5, 0.9, 1.0}) {
    SCOPED_TRACE(w);
    shared.waiting_rank_share = w;
    EXPECT_NEAR(predict(c, ring, 4, shared).forward.seconds, 2 * diagonal + 2 * full + 2 * full + full, 1e-9 * full);
  }
  // A fraction of units shared among all: the running ranks divide what the waiting ones leave,
  // at least even turns among all four, at most a whole unit each (2.5 units: the last block
  // alone on one).
  MachineModel fraction = shared;
  fraction.waiting_rank_share = 0.3;
  fraction.compute_units_per_node = 1.5;
  EXPECT_NEAR(predict(c, ring, 4, fraction).forward.seconds,
              diagonal / (1.5 / 4) + full / ((1.5 - 0.3) / 3) + full / ((1.5 - 0.6) / 2) + full / (1.5 - 0.9),
              1e-9 * full);
  fraction.compute_units_per_node = 2.5;
  EXPECT_NEAR(predict(c, ring, 4, fraction).forward.seconds,
              diagonal / (2.5 / 4) + full / ((2.5 - 0.3) / 3) + full / ((2.5 - 0.6) / 2) + full, 1e-9 * full);
  // A share outside 0..1 is refused.
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    fraction.waiting_rank_share = bad;
    EXPECT_THROW(predict(c, ring, 4, fraction), Error);
  }
  // Ranks with units of their own take nothing from one another.
  MachineModel own = shared, own_waiting = shared;
  own.compute_units_per_node = own_waiting.compute_units_per_node = 0;
  own.waiting_rank_share = 0;
  EXPECT_DOUBLE_EQ(predict(c, ring, 4, own_waiting).forward.seconds, predict(c, ring, 4, own).forward.seconds);
}

}  // namespace
}  // namespace rfa::model
