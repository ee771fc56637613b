// SPDX-License-Identifier: BSD-3-Clause
// The reference's row slices (Problem::row_offset, row_stride) add up to the whole problem, which
// is how the distributed suites share its float64 work (tests/common/reference_over.hpp):
// out, lse and dq row by row, dk, dv and the sinks' gradients as sums of the slices'
// contributions; and a slice leaves the other rows' out, lse and dq at zero. forward_backward(),
// which those suites call, gives forward()'s and backward()'s results exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "reference_attention.hpp"

namespace rfa {
namespace reference {
namespace {

std::vector<double> random_vector(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::vector<double> v(std::size_t(n), 0.0);
  for (double& x : v) x = dist(rng);
  return v;
}

struct Results {
  std::vector<double> out, lse, dq, dk, dv, dsinks;
};
constexpr std::vector<double> Results::*kFields[] = {&Results::out, &Results::lse, &Results::dq,
                                                     &Results::dk,  &Results::dv,  &Results::dsinks};

Results run(const Problem& p, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
            const std::vector<double>& dout) {
  Results r;
  forward(p, q, k, v, r.out, r.lse);
  backward(p, q, k, v, dout, r.dq, r.dk, r.dv, &r.dsinks);
  return r;
}

// A problem where every row kind occurs: a causal window, packed documents (one of one token),
// GQA, sinks (one head's -inf: none), a value head dim of its own; 11 rows, so that strides 2, 3
// and 4 leave slices of different sizes, stride 11 one row each, 10 one slice of two rows, and 12
// and 13 slices with no row at all.
Problem mixed_problem() {
  Problem p;
  p.batch = 2;
  p.seq_q = p.seq_k = 11;
  p.heads = 4;
  p.kv_heads = 2;
  p.head_dim = 8;
  p.value_dim = 4;
  p.causal = true;
  p.window = 5;
  p.doc_bounds = {0, 3, 4, 11};
  p.sinks = {0.5, -1.0, -INFINITY, 2.0};
  return p;
}

TEST(ReferenceSlices, AddUpToTheWholeProblem) {
  const Problem whole = mixed_problem();
  const auto q = random_vector(whole.q_size(), 1), k = random_vector(whole.kv_size(), 2),
             v = random_vector(whole.v_size(), 3), dout = random_vector(whole.out_size(), 4);
  const Results expected = run(whole, q, k, v, dout);
  for (std::int64_t stride : {2, 3, 4, 10, 11, 12, 13}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    Results sum;
    for (auto field : kFields) sum.*field = std::vector<double>((expected.*field).size(), 0.0);
    for (std::int64_t offset = 0; offset < stride; ++offset) {
      Problem slice = whole;
      slice.row_offset = offset;
      slice.row_stride = stride;
      const Results part = run(slice, q, k, v, dout);
      // Rows outside the slice: zero out, lse and dq.
      for (std::int64_t b = 0; b < whole.batch; ++b)
        for (std::int64_t i = 0; i < whole.seq_q; ++i) {
          if (i % stride == offset) continue;
          for (std::int64_t h = 0; h < whole.heads; ++h) {
            EXPECT_EQ(part.lse[std::size_t((b * whole.heads + h) * whole.seq_q + i)], 0.0);
            for (std::int64_t d = 0; d < whole.dv(); ++d)
              EXPECT_EQ(part.out[std::size_t(((b * whole.seq_q + i) * whole.heads + h) * whole.dv() + d)], 0.0);
            for (std::int64_t d = 0; d < whole.head_dim; ++d)
              EXPECT_EQ(part.dq[std::size_t(((b * whole.seq_q + i) * whole.heads + h) * whole.head_dim + d)], 0.0);
          }
        }
      for (auto field : kFields)
        for (std::size_t i = 0; i < (sum.*field).size(); ++i) (sum.*field)[i] += (part.*field)[i];
    }
    for (auto field : kFields) {
      const std::vector<double>*got = &(sum.*field), *want = &(expected.*field);
      for (std::size_t i = 0; i < want->size(); ++i) {
        if (std::isinf((*want)[i]))
          EXPECT_EQ((*got)[i], (*want)[i]) << "element " << i;
        else
          EXPECT_NEAR((*got)[i], (*want)[i], 1e-12 * (1.0 + std::abs((*want)[i]))) << "element " << i;
      }
    }
  }
}

// The passes at once: bit for bit the passes one after the other, whole and sliced, with the
// mixed problem's mask and sinks, a soft cap, and ranges with a rounding to bf16-like precision.
TEST(ReferenceForwardBackward, TheSameAsTheTwoPasses) {
  Problem capped = mixed_problem();
  capped.softcap = 1.5;
  Problem ranged = mixed_problem();
  ranged.causal = false;
  ranged.window = 0;
  ranged.ranges_on = true;
  ranged.ranges = {{0, 6, 0, 6, Range::causal}, {5, 11, 2, 9, Range::full}, {8, 11, 0, 11, Range::band, -3, 1}};
  ranged.round = [](double x) { return double(float(x)); };
  Problem sliced = mixed_problem();
  sliced.row_offset = 1;
  sliced.row_stride = 3;
  for (const Problem& p : {mixed_problem(), capped, ranged, sliced}) {
    const auto q = random_vector(p.q_size(), 5), k = random_vector(p.kv_size(), 6), v = random_vector(p.v_size(), 7),
               dout = random_vector(p.out_size(), 8);
    const Results apart = run(p, q, k, v, dout);
    Results together;
    forward_backward(p, q, k, v, dout, together.out, together.lse, together.dq, together.dk, together.dv,
                     &together.dsinks);
    for (auto field : kFields) EXPECT_EQ(together.*field, apart.*field);
  }
}

}  // namespace
}  // namespace reference
}  // namespace rfa
