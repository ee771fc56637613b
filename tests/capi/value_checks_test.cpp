// SPDX-License-Identifier: BSD-3-Clause
// The value checks (options.check_values, RFA_CHECK_VALUES) under mpiexec -n 1..4: a NaN or
// infinity injected into one rank's input fails every rank with RFA_ERROR_NONFINITE naming
// the tensor, the ring position and the element, before anything is written; an output that
// overflows its storage type is reported after the call; the context stays usable (the ranks
// failed together); and with the checks off nothing is looked at.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"
#include "scoped_env.hpp"

namespace {

using namespace rfa_capi_test;
using rfa::test::ScopedEnv;

rfa_options_t options(rfa_dtype_t dtype, rfa_value_checks_t checks) {
  rfa_options_t o = small_problem(RFA_LAYOUT_ZIGZAG, 16);
  o.dtype = dtype;
  o.timeout_s = 30.0;
  o.check_values = checks;
  return o;
}

/// One rank's tensors of a context in its dtype; outputs poisoned with a finite marker.
struct Tensors {
  rfa_options_t o{};
  int64_t L = 0;
  std::vector<int64_t> positions;
  Stored q, k, v, out, dout, dq, dk, dv;
  std::vector<float> lse;
  static constexpr float kMarker = 7.0f;

  explicit Tensors(rfa_context_t ctx, const rfa_options_t& options)
      : o(options),
        L(local_seq(ctx)),
        q(o.dtype, count(o.heads)),
        k(o.dtype, count(o.kv_heads)),
        v(o.dtype, count(o.kv_heads)),
        out(o.dtype, count(o.heads)),
        dout(o.dtype, count(o.heads)),
        dq(o.dtype, count(o.heads)),
        dk(o.dtype, count(o.kv_heads)),
        dv(o.dtype, count(o.kv_heads)),
        lse(std::size_t(o.batch * o.heads * L), kMarker) {
    positions.resize(std::size_t(L));
    rfa_context_get_local_positions(ctx, positions.data(), L);
    q.assign(random_values(q.size(), 1 + world_rank()));
    k.assign(random_values(k.size(), 11 + world_rank()));
    v.assign(random_values(v.size(), 21 + world_rank()));
    dout.assign(random_values(dout.size(), 31 + world_rank()));
    for (Stored* t : {&out, &dq, &dk, &dv}) fill(*t, kMarker);
  }
  std::size_t count(int64_t heads) const { return std::size_t(o.batch * L * heads * o.head_dim); }
  static int64_t local_seq(rfa_context_t ctx) {
    int64_t n = 0;
    rfa_context_get_local_seq(ctx, &n);
    return n;
  }
  static void fill(Stored& t, float x) {
    for (std::size_t i = 0; i < t.size(); ++i) t.set(i, x);
  }
  static bool all(const Stored& t, float x) {
    for (std::size_t i = 0; i < t.size(); ++i)
      if (t.get(i) != double(x)) return false;
    return true;
  }
  rfa_result_t forward(rfa_context_t ctx) {
    return rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data());
  }
  rfa_result_t backward(rfa_context_t ctx) {
    return rfa_backward(ctx, q.data(), k.data(), v.data(), out.data(), dout.data(), lse.data(), dq.data(), dk.data(),
                        dv.data());
  }
};

class ValueChecks : public ::testing::Test {
 protected:
  void TearDown() override {
    if (ctx_) {
      EXPECT_EQ(rfa_context_destroy(ctx_), RFA_SUCCESS) << rfa_get_last_error_message();
    }
  }
  rfa_context_t ctx_ = nullptr;
};

// A NaN in k on the last rank, at its local row 3, head 0, element 5 of the last batch entry
// (one entry, then two): every rank fails before anything is written, naming k, that rank's
// ring position, the entry and the row's global position (counted within its entry).
TEST_F(ValueChecks, NanInAnInputFailsEveryRankNamingIt) {
  for (const int64_t batch : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch);
    rfa_options_t o = options(RFA_DTYPE_FLOAT32, RFA_VALUE_CHECKS_ON);
    o.batch = batch;
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx_));
    Tensors t(ctx_, o);
    const int culprit = world_size() - 1;
    int me = -1;
    rfa_context_get_position(ctx_, &me);
    int64_t culprit_position = me == culprit ? t.positions[3] : 0;
    MPI_Allreduce(MPI_IN_PLACE, &culprit_position, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    const auto at = std::size_t((((batch - 1) * t.L + 3) * o.kv_heads + 0) * o.head_dim + 5);  // [b][row 3][head 0][5]
    if (me == culprit) t.k.set(at, std::numeric_limits<float>::quiet_NaN());
    const std::string where = "batch " + std::to_string(batch - 1) + ", sequence position " +
                              std::to_string(culprit_position) + ", head 0, element 5";
    EXPECT_RFA_FAILS(RFA_ERROR_NONFINITE, t.forward(ctx_), "input k",
                     ("ring position " + std::to_string(culprit)).c_str(), where.c_str(),
                     "nothing was computed or written");
    EXPECT_TRUE(Tensors::all(t.out, Tensors::kMarker)) << "a refused call wrote out";
    // The ranks failed together: the context is still usable.
    if (me == culprit) t.k.set(at, 0.5f);
    ASSERT_RFA_OK(t.forward(ctx_));
    ASSERT_RFA_OK(rfa_context_destroy(ctx_));
    ctx_ = nullptr;
  }
}

TEST_F(ValueChecks, InfinityInABackwardInputIsNamed) {
  const rfa_options_t o = options(RFA_DTYPE_BFLOAT16, RFA_VALUE_CHECKS_ON);
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx_));
  Tensors t(ctx_, o);
  ASSERT_RFA_OK(t.forward(ctx_));
  if (world_rank() == 0) t.dout.set(1, -std::numeric_limits<float>::infinity());
  EXPECT_RFA_FAILS(RFA_ERROR_NONFINITE, t.backward(ctx_), "input dout", "ring position 0", "element 1");
  EXPECT_TRUE(Tensors::all(t.dq, Tensors::kMarker) && Tensors::all(t.dv, Tensors::kMarker));
  // An lse of +inf (-inf is a row that sees no key, allowed where one can: a mask of ranges): every weight of the row
  // would be 0 and its gradients silently 0. It is named before anything is computed.
  if (world_rank() == 0) t.dout.set(1, 0.25f);
  const int culprit = world_size() - 1;
  if (world_rank() == culprit) t.lse[3] = std::numeric_limits<float>::infinity();  // batch 0, head 0, row 3
  EXPECT_RFA_FAILS(RFA_ERROR_NONFINITE, t.backward(ctx_), "input lse",
                   ("ring position " + std::to_string(culprit)).c_str(), "nothing was computed or written");
  EXPECT_TRUE(Tensors::all(t.dq, Tensors::kMarker) && Tensors::all(t.dv, Tensors::kMarker));
  // -inf too, where the mask lets every row see a key (this one's is causal): only a mask given
  // as ranges can leave a row with none.
  ASSERT_NE(o.mask, RFA_MASK_RANGES);
  if (world_rank() == culprit) t.lse[3] = -std::numeric_limits<float>::infinity();
  EXPECT_RFA_FAILS(RFA_ERROR_NONFINITE, t.backward(ctx_), "input lse",
                   ("ring position " + std::to_string(culprit)).c_str(), "nothing was computed or written");
  EXPECT_TRUE(Tensors::all(t.dq, Tensors::kMarker) && Tensors::all(t.dv, Tensors::kMarker));
}

// fp16 gradients overflow: with q = k = 0 every visible key gets the same weight, so dV of
// position 0 (seen by every query) is dout times the harmonic sum of the sequence, beyond
// fp16's 65504 for dout = 30000. The check reports it after the call.
TEST_F(ValueChecks, AnOverflowingOutputIsReportedAfterTheCall) {
  const rfa_options_t o = options(RFA_DTYPE_FLOAT16, RFA_VALUE_CHECKS_ON);
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx_));
  Tensors t(ctx_, o);
  Tensors::fill(t.q, 0.0f);
  Tensors::fill(t.k, 0.0f);
  ASSERT_RFA_OK(t.forward(ctx_));
  Tensors::fill(t.dout, 30000.0f);
  EXPECT_RFA_FAILS(RFA_ERROR_NONFINITE, t.backward(ctx_), "output dv", "sequence position 0",
                   "written but must not be trusted");
}

// Rows that see no key (a mask given as ranges may leave some) have out 0 and lse -inf: the
// checks take that lse as what it means, in the forward's output and as the backward's input,
// and such rows get no gradient.
TEST_F(ValueChecks, RowsThatSeeNoKeyPass) {
  rfa_options_t o = options(RFA_DTYPE_FLOAT32, RFA_VALUE_CHECKS_ON);
  const int64_t seen_rows = o.seq_total / 2;  // the later half of the queries sees nothing
  const rfa_mask_range_t seen = {0, seen_rows, 0, o.seq_total, 0, 0, RFA_RANGE_FULL};
  o.mask = RFA_MASK_RANGES;
  o.mask_ranges = &seen;
  o.mask_range_count = 1;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx_));
  Tensors t(ctx_, o);
  ASSERT_RFA_OK(t.forward(ctx_));
  ASSERT_RFA_OK(t.backward(ctx_));
  int unseen = 0;
  for (int64_t i = 0; i < t.L; ++i) {
    const bool sees = t.positions[std::size_t(i)] < seen_rows;
    unseen += sees ? 0 : 1;
    for (int64_t h = 0; h < o.heads; ++h) {
      const float lse = t.lse[std::size_t(h * t.L + i)];
      EXPECT_TRUE(sees ? std::isfinite(lse) : lse == -std::numeric_limits<float>::infinity())
          << "position " << t.positions[std::size_t(i)] << " head " << h << ": lse " << lse;
      for (int64_t x = 0; x < o.head_dim; ++x) {
        const std::size_t e = std::size_t((i * o.heads + h) * o.head_dim + x);
        EXPECT_TRUE(std::isfinite(t.out.get(e)) && std::isfinite(t.dq.get(e)));
        if (!sees) {
          EXPECT_TRUE(t.out.get(e) == 0.0 && t.dq.get(e) == 0.0) << "position " << t.positions[std::size_t(i)];
        }
      }
    }
  }
  EXPECT_GT(unseen, 0) << "every row of this rank sees a key: the test shows nothing here";
}

// With V's own head dim, wider than Q and K's, v, out, dout and dv are scanned in it: a NaN in
// the last element of v, or of dout, is found and named before anything is written.
TEST_F(ValueChecks, AWiderValueHeadDimIsScannedWhole) {
  rfa_options_t o = options(RFA_DTYPE_FLOAT32, RFA_VALUE_CHECKS_ON);
  o.value_head_dim = 2 * o.head_dim;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx_));
  const int64_t L = Tensors::local_seq(ctx_), D = o.head_dim, DV = o.value_head_dim;
  auto values = [](int64_t n, int seed) {
    const std::vector<double> x = random_values(std::size_t(n), std::uint64_t(seed));
    return std::vector<float>(x.begin(), x.end());
  };
  std::vector<float> q = values(o.batch * L * o.heads * D, 1 + world_rank()),
                     k = values(o.batch * L * o.kv_heads * D, 11 + world_rank()),
                     v = values(o.batch * L * o.kv_heads * DV, 21 + world_rank()),
                     dout = values(o.batch * L * o.heads * DV, 31 + world_rank()), out(dout.size(), Tensors::kMarker),
                     lse(std::size_t(o.batch * o.heads * L)), dq(q.size(), Tensors::kMarker), dk(k.size()),
                     dv(v.size(), Tensors::kMarker);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const bool culprit = world_rank() == 0;
  if (culprit) v.back() = nan;
  EXPECT_RFA_FAILS(RFA_ERROR_NONFINITE, rfa_forward(ctx_, q.data(), k.data(), v.data(), out.data(), lse.data()),
                   "input v");
  EXPECT_EQ(out.back(), Tensors::kMarker) << "out was written";
  if (culprit) v.back() = 0.5f;
  ASSERT_RFA_OK(rfa_forward(ctx_, q.data(), k.data(), v.data(), out.data(), lse.data()));
  if (culprit) dout.back() = nan;
  EXPECT_RFA_FAILS(RFA_ERROR_NONFINITE,
                   rfa_backward(ctx_, q.data(), k.data(), v.data(), out.data(), dout.data(), lse.data(), dq.data(),
                                dk.data(), dv.data()),
                   "input dout");
  EXPECT_EQ(dv.back(), Tensors::kMarker) << "dv was written";
}

TEST_F(ValueChecks, OffLooksAtNothing) {
  const rfa_options_t o = options(RFA_DTYPE_FLOAT32, RFA_VALUE_CHECKS_OFF);
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx_));
  Tensors t(ctx_, o);
  t.q.set(0, std::numeric_limits<float>::quiet_NaN());
  ASSERT_RFA_OK(t.forward(ctx_));
}

// DEFAULT takes RFA_CHECK_VALUES at creation; the context reports what it resolved to.
TEST_F(ValueChecks, TheEnvironmentDecidesTheDefault) {
  const rfa_options_t o = options(RFA_DTYPE_FLOAT32, RFA_VALUE_CHECKS_DEFAULT);
  ScopedEnv on("RFA_CHECK_VALUES", "1");
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx_));
  rfa_options_t got;
  rfa_options_init(&got);
  ASSERT_RFA_OK(rfa_context_get_options(ctx_, &got));
  EXPECT_EQ(int(got.check_values), int(RFA_VALUE_CHECKS_ON));
  Tensors t(ctx_, o);
  t.v.set(0, std::numeric_limits<float>::infinity());
  EXPECT_RFA_FAILS(RFA_ERROR_NONFINITE, t.forward(ctx_), "input v");
}

TEST_F(ValueChecks, AMalformedEnvironmentValueIsRefused) {
  const rfa_options_t o = options(RFA_DTYPE_FLOAT32, RFA_VALUE_CHECKS_DEFAULT);
  ScopedEnv bad("RFA_CHECK_VALUES", "yes");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx_),
                   "RFA_CHECK_VALUES is 'yes'");
  EXPECT_EQ(ctx_, nullptr);
}

}  // namespace
