// SPDX-License-Identifier: BSD-3-Clause
// The main job's sampled check (perf/ring/sampled_check.hpp): on runs small enough for the
// full-sequence check it agrees with it, and it fails a result that is wrong in a sampled row
// of any output (out, lse, dQ, dK, dV), on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <limits>
#include <memory>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "engine/attention_strategy.hpp"
#include "reference_check.hpp"
#include "ring_problem.hpp"
#include "sampled_check.hpp"

namespace rfa::perf {
namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

struct SmallRun {
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<engine::AttentionStrategy> attn;
  std::unique_ptr<LocalProblem<float>> lp;

  /// `doc_bounds`: packed documents, as fractions of the sequence (none: one document).
  explicit SmallRun(RunOptions o, const std::vector<double>& doc_bounds = {}) {
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    o.seq = o.seq * ranks;
    o.dtype = RFA_DTYPE_FLOAT32;
    comm = comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank());
    engine::AttentionConfig cfg = attention_config(o);
    for (double f : doc_bounds) cfg.doc_bounds.push_back(std::int64_t(f * double(o.seq)));
    attn = engine::make_strategy(*comm, cfg, o.strategy);
    lp = std::make_unique<LocalProblem<float>>(*attn);
    lp->forward(*attn);
    lp->backward(*attn);
  }
  CheckErrors sampled(SampledRows rows = {}) {
    return check_sampled_rows<float>(*comm, attn->config(), attn->local_positions(), lp->out, lp->lse, lp->dq, lp->dk,
                                     lp->dv, rows);
  }
  /// This rank's local row at global position `p`, or -1 where another rank holds it.
  std::int64_t local_row_of(std::int64_t p) const {
    const PositionMap mine = attn->local_positions();
    for (std::int64_t i = 0; i < mine.length(); ++i)
      if (mine(i) == p) return i;
    return -1;
  }
  CheckErrors full() {
    return check_against_single_rank<float>(*comm, attn->config(), attn->local_positions(), lp->out, lp->lse, lp->dq,
                                            lp->dk, lp->dv);
  }
};

void expect_close(const CheckErrors& e, double tol) {
  EXPECT_LT(e.out, tol);
  EXPECT_LT(e.lse, tol);
  EXPECT_LT(e.dq, tol);
  EXPECT_LT(e.dk, tol);
  EXPECT_LT(e.dv, tol);
}

RunOptions options(std::int64_t seq_per_rank, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim) {
  RunOptions o;
  o.seq = seq_per_rank;
  o.heads = heads;
  o.kv_heads = kv_heads;
  o.head_dim = dim;
  return o;
}

TEST(SampledCheck, AgreesWithTheFullCheckOnEveryMaskAndLayout) {
  for (rfa_layout_t layout : {RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE})
      // A window of 37; of 1, where each query sees one key, so that dQ and dK are exactly 0 (the
      // check's scale is then the terms' size, not the gradients'); and the longest a caller may
      // give (it hides nothing; k + window leaves int64).
      for (std::int64_t window :
           {std::int64_t(0), std::int64_t(1), std::int64_t(37), std::numeric_limits<std::int64_t>::max()}) {
        SCOPED_TRACE(::testing::Message() << "layout " << layout << " mask " << mask << " window " << window);
        RunOptions o = options(64, 4, 2, 16);
        o.layout = layout;
        o.mask = mask;
        o.window = window;
        SmallRun run(o);
        expect_close(run.sampled(), 2e-5);
        expect_close(run.full(), 2e-5);
      }
}

// The full check knows no documents; the sampled one takes the mask rule whole.
TEST(SampledCheck, FollowsPackedDocuments) {
  for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE}) {
    RunOptions o = options(64, 2, 1, 16);
    o.mask = mask;
    o.window = mask == RFA_MASK_CAUSAL ? 20 : 0;
    SmallRun run(o, {0.0, 0.3, 0.3, 0.71, 1.0});  // an empty document too
    expect_close(run.sampled(), 2e-5);
  }
}

TEST(SampledCheck, CoversEveryStrategy) {
  RunOptions o = options(64, 4, 1, 16);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (engine::StrategyKind kind : {engine::StrategyKind::ulysses, engine::StrategyKind::allgather}) {
    if (kind == engine::StrategyKind::ulysses && o.heads % ranks != 0) continue;
    o.strategy.kind = kind;
    SmallRun run(o);
    expect_close(run.sampled(), 2e-5);
  }
}

// A wrong value in a sampled row of any output fails the check on every rank. The first local
// row is always sampled: its first pick reads head `rank % H` of batch 0 (query rows) and K/V
// head `rank % H_kv` (key rows).
TEST(SampledCheck, FailsAWrongSampledRowOfEveryOutput) {
  const int me = world_rank();
  RunOptions o = options(64, 4, 2, 16);
  for (int round = 0; round < 10; ++round) {
    // A window of 50, then of 1 (every query sees one key: dQ and dK exactly 0).
    const int which = round % 5;
    o.window = round < 5 ? 50 : 1;
    SCOPED_TRACE(::testing::Message() << "output " << which << " window " << o.window);
    SmallRun run(o);
    LocalProblem<float>& lp = *run.lp;
    const std::int64_t h = me % 4, g = me % 2;
    if (which == 0) lp.out(0, 0, h, 3) += 0.5f;
    if (which == 1) lp.lse(0, h, 0) += 0.01f;
    if (which == 2) lp.dq(0, 0, h, 5) += 1.0f;
    if (which == 3) lp.dk(0, 0, g, 7) += 1.0f;
    if (which == 4) lp.dv(0, 0, g, 1) -= 1.0f;
    const CheckErrors e = run.sampled();
    const double got[5] = {e.out, e.lse, e.dq, e.dk, e.dv};
    for (int k = 0; k < 5; ++k) {
      if (k == which) {
        EXPECT_GT(got[k], 1e-3);
      } else if (k < 3 || which > 1) {  // the key rows' reference reads the run's lse and out
        EXPECT_LT(got[k], 2e-5);
      }
    }
  }
}

// Sampled by global position, the check reads the same rows at any P and layout: the first and
// last positions of the sequence and those evenly spaced between, wherever they are held. A
// wrong value there fails it (on every rank); the same fault at a position not among them (the
// first local row of a rank, say, which the per-rank sampling always reads) passes.
TEST(SampledCheck, ByPositionReadsTheSameRowsAtAnyLayout) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (rfa_layout_t layout : {RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_STRIPE}) {
    RunOptions o = options(64, 4, 2, 16);
    o.layout = layout;
    o.window = 50;
    const std::int64_t S = o.seq * ranks;
    // Three positions: 0, (S-1)/2 and S-1. Position 0 reads query heads 0 and 2, K/V head 0;
    // S-1 (index 2) query heads 2 and 0, K/V head 0.
    const SampledRows three{3};
    for (std::int64_t fault : {std::int64_t(0), S - 1, std::int64_t(5)}) {
      SCOPED_TRACE(::testing::Message() << "layout " << layout << " fault at position " << fault);
      SmallRun run(o);
      expect_close(run.sampled(three), 2e-5);
      const std::int64_t i = run.local_row_of(fault);
      if (i >= 0) {
        run.lp->out(0, i, 2, 3) += 0.5f;
        run.lp->dk(0, i, 0, 1) += 1.0f;
      }
      const CheckErrors e = run.sampled(three);
      if (fault == 5) {
        expect_close(e, 2e-5);
      } else {
        EXPECT_GT(e.out, 1e-3);
        EXPECT_GT(e.dk, 1e-3);
      }
    }
  }
}

// Asked for more positions than the sequence has, it reads every row, and agrees with the full
// check there.
TEST(SampledCheck, ByPositionCoversEveryRowWhenAskedForMore) {
  RunOptions o = options(32, 2, 1, 16);
  o.window = 20;
  SmallRun run(o);
  expect_close(run.sampled(SampledRows{1 << 20}), 2e-5);
  const std::int64_t last = std::int64_t(run.lp->out.extent(1)) - 1;
  run.lp->dq(0, last / 2, 1, 4) += 1.0f;  // a middle row of every rank
  EXPECT_GT(run.sampled(SampledRows{1 << 20}).dq, 1e-3);
}

// Results no difference measures fail too: NaN and infinite values (an lse of -inf for a row
// that sees keys); and errors in the last local row, which the sampled rows include. The
// full-sequence check says the same.
TEST(SampledCheck, FailsNonFiniteResultsAndErrorsInTheLastRow) {
  RunOptions o = options(64, 4, 2, 16);
  o.window = 50;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int which = 0; which < 7; ++which) {
    SCOPED_TRACE(::testing::Message() << "fault " << which);
    SmallRun run(o);
    LocalProblem<float>& lp = *run.lp;
    const std::int64_t last = std::int64_t(lp.out.extent(1)) - 1;
    for (std::int64_t h = 0; h < 4; ++h) {
      if (which == 0) lp.out(0, 0, h, 3) = nan;
      if (which == 1) lp.out(0, 0, h, 3) = inf;
      if (which == 2) lp.lse(0, h, 0) = -inf;
      if (which == 3) lp.out(0, last, h, 2) += 0.5f;
      if (which == 4) lp.dq(0, last, h, 2) += 1.0f;
    }
    for (std::int64_t g = 0; g < 2; ++g) {
      if (which == 5) lp.dk(0, last, g, 2) += 1.0f;
      if (which == 6) lp.dv(0, last, g, 2) += 1.0f;
    }
    for (const bool full : {false, true}) {
      const CheckErrors e = full ? run.full() : run.sampled();
      const double got[7] = {e.out, e.out, e.lse, e.out, e.dq, e.dk, e.dv};
      EXPECT_GT(got[which], 1e-3) << (full ? "the full check" : "the sampled check");  // NaN fails too
    }
  }
}

// A fault on one rank fails the check on every rank: the errors are the largest over the ranks.
// Only the last rank's first local row is wrong (out, or dQ), and both checks say so everywhere.
TEST(SampledCheck, AWrongRankFailsTheCheckOnEveryRank) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int me = world_rank();
  RunOptions o = options(64, 4, 2, 16);
  o.window = 50;
  for (int which = 0; which < 2; ++which) {
    SCOPED_TRACE(::testing::Message() << (which == 0 ? "out" : "dq") << " wrong on rank " << ranks - 1);
    SmallRun run(o);
    LocalProblem<float>& lp = *run.lp;
    if (me == ranks - 1) {
      for (std::int64_t h = 0; h < 4; ++h) {
        if (which == 0) lp.out(0, 0, h, 3) += 0.5f;
        if (which == 1) lp.dq(0, 0, h, 5) += 1.0f;
      }
    }
    for (const bool full : {false, true}) {
      const CheckErrors e = full ? run.full() : run.sampled();
      EXPECT_GT(which == 0 ? e.out : e.dq, 1e-3) << (full ? "the full check" : "the sampled check");
      EXPECT_LT(e.lse, 2e-5);
      if (which == 1) {
        EXPECT_LT(e.out, 2e-5);
      }
    }
  }
}

}  // namespace
}  // namespace rfa::perf
