// SPDX-License-Identifier: BSD-3-Clause
// The attention sinks' two kernels (engine/attention_sinks.hpp) on the host, against float64
// sums of the same stored values: sink_gradient_part with its rows cut into teams of 1 row, a few
// rows, one short of the rows, all of them, one past and more than all (so a head's last team
// holds a partial chunk, a whole one, or every row), heads with and without a sink; and
// apply_sinks with a thread's share of a row cut many ways (each value scaled once, head dims
// that end inside a block of 8 or on it), a row that saw no key among them, rows whose lse is far
// from 0. The C API's suites hold both to the float64 attention with sinks.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "engine/attention_sinks.hpp"

namespace rfa::engine {
namespace {

using Host = Kokkos::HostSpace;

template <class T>
struct SinkCase {
  std::int64_t B, L, H, D;
  SpaceTensor4<T, Host> out, dout;
  SpaceTensor3<float, Host> lse;
  std::vector<float> sinks;

  SinkCase(std::int64_t b, std::int64_t l, std::int64_t h, std::int64_t d, unsigned seed)
      : B(b), L(l), H(h), D(d), out("out", b, l, h, d), dout("dout", b, l, h, d), lse("lse", b, h, l) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> value(-2.f, 2.f), log_sum(-1.f, 3.f);
    for (std::int64_t i = 0; i < b; ++i)
      for (std::int64_t r = 0; r < l; ++r)
        for (std::int64_t k = 0; k < h; ++k) {
          for (std::int64_t x = 0; x < d; ++x) {
            out(i, r, k, x) = from_float<T>(value(gen));
            dout(i, r, k, x) = from_float<T>(value(gen));
          }
          lse(i, k, r) = log_sum(gen);
        }
    // Every head has a sink but the second (-inf: none).
    for (std::int64_t k = 0; k < h; ++k) sinks.push_back(k == 1 ? -INFINITY : 0.25f * float(k) - 0.5f);
  }

  /// -sum over rows of exp(s - lse) * sum_d dout * out, in float64 over the stored values.
  std::vector<double> gradient() const {
    std::vector<double> g(std::size_t(H), 0.0);
    for (std::int64_t k = 0; k < H; ++k) {
      if (sinks[std::size_t(k)] == -INFINITY) continue;
      for (std::int64_t i = 0; i < B; ++i)
        for (std::int64_t r = 0; r < L; ++r) {
          double delta = 0.0;
          for (std::int64_t x = 0; x < D; ++x)
            delta += double(to_float(dout(i, r, k, x))) * double(to_float(out(i, r, k, x)));
          g[std::size_t(k)] -= std::exp(double(sinks[std::size_t(k)]) - double(lse(i, k, r))) * delta;
        }
    }
    return g;
  }
};

template <class T>
void check_gradient_in_teams(std::int64_t B, std::int64_t L) {
  const SinkCase<T> c(B, L, 3, 8, 7u + unsigned(L));
  const std::vector<double> want = c.gradient();
  const std::int64_t rows = B * L;
  for (std::int64_t per_team : {std::int64_t(1), std::int64_t(3), rows - 1, rows, rows + 1, std::int64_t(1024)}) {
    if (per_team < 1) continue;
    const std::vector<double> got = sink_gradient_part<T, Host>(Kokkos::DefaultHostExecutionSpace(), c.sinks.data(),
                                                                c.out, c.dout, c.lse, {}, per_team);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      if (k == 1) {
        EXPECT_EQ(got[k], 0.0) << "a head without a sink has no gradient (" << per_team << " rows a team)";
        continue;
      }
      EXPECT_NEAR(got[k], want[k], 1e-12 * (1.0 + std::fabs(want[k])))
          << "head " << k << ", " << rows << " rows, " << per_team << " rows a team";
    }
  }
}

TEST(SinkGradient, EveryCutOfTheRowsIntoTeamsSumsEveryRowOnce) {
  check_gradient_in_teams<float>(2, 37);  // 74 rows
  check_gradient_in_teams<bf16_t>(1, 5);
  check_gradient_in_teams<fp16_t>(3, 1);
  check_gradient_in_teams<bf16_t>(1, 1);  // one row: every cut is one team
}

TEST(SinkGradient, NoRowsGiveZeroAndNoTeamOfNoRowsIsTaken) {
  const SinkCase<float> empty(2, 0, 3, 8, 1u);
  const std::vector<double> got = sink_gradient_part<float, Host>(
      Kokkos::DefaultHostExecutionSpace(), empty.sinks.data(), empty.out, empty.dout, empty.lse, {}, 4);
  EXPECT_EQ(got, std::vector<double>(3, 0.0));

  const SinkCase<float> c(1, 4, 3, 8, 2u);
  try {
    sink_gradient_part<float, Host>(Kokkos::DefaultHostExecutionSpace(), c.sinks.data(), c.out, c.dout, c.lse, {}, 0);
    ADD_FAILURE() << "teams of 0 rows were taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INTERNAL);
  }
}

template <class T>
void check_sinks_applied(std::int64_t B, std::int64_t L, std::int64_t D) {
  const SinkCase<T> before(B, L, 3, D, 3u + unsigned(L));
  // The space's choice (a whole row here), one value a thread, pieces that end inside a row's
  // block of 8 or on it, the row, one past it, and two blocks.
  for (std::int64_t per_thread :
       {std::int64_t(0), std::int64_t(1), std::int64_t(3), std::int64_t(8), D - 1, D, D + 1, std::int64_t(16)}) {
    if (per_thread < 0) continue;
    SinkCase<T> c(B, L, 3, D, 3u + unsigned(L));
    if (L > 2) c.lse(B - 1, 0, 2) = -INFINITY;  // a row that saw no key: its lse becomes the sink's, its out 0
    apply_sinks<T, Host>(Kokkos::DefaultHostExecutionSpace(), c.sinks.data(), c.out, c.lse, per_thread);
    for (std::int64_t i = 0; i < B; ++i)
      for (std::int64_t k = 0; k < c.H; ++k)
        for (std::int64_t r = 0; r < L; ++r) {
          const double s = c.sinks[std::size_t(k)];
          const double old = (L > 2 && i == B - 1 && k == 0 && r == 2) ? -INFINITY : double(before.lse(i, k, r));
          const double want = s == -INFINITY ? old : std::log(std::exp(old) + std::exp(s));
          ASSERT_NEAR(c.lse(i, k, r), want, 1e-5 * (1.0 + std::fabs(want)))
              << "lse of entry " << i << ", head " << k << ", row " << r << "; " << per_thread << " values a thread";
          const double factor = s == -INFINITY ? 1.0 : std::exp(old - want);
          for (std::int64_t x = 0; x < c.D; ++x) {
            const double got = to_float(c.out(i, r, k, x)), was = to_float(before.out(i, r, k, x));
            // Scaled once, in fp32, then stored in T: within one rounding of T.
            const double tolerance = std::is_same<T, float>::value ? 1e-5 : 1e-2 * (std::fabs(was) + 1e-3);
            ASSERT_NEAR(got, was * factor, tolerance) << "out of entry " << i << ", row " << r << ", head " << k
                                                      << ", column " << x << "; " << per_thread << " values a thread";
          }
        }
  }
}

TEST(ApplySinks, FoldsTheSinkIntoEveryRowOnceWhateverTheShareOfAThread) {
  check_sinks_applied<float>(2, 5, 4);  // 30 rows, one of which saw no key
  check_sinks_applied<float>(1, 3, 9);  // a head dim one past a block of 8
  check_sinks_applied<bf16_t>(1, 7, 4);
  check_sinks_applied<bf16_t>(2, 3, 20);
  check_sinks_applied<fp16_t>(1, 1, 4);  // 3 rows
}

// Rows whose lse is far from 0: the keys keep exp(before) / (exp(before) + exp(s)) of the row,
// formed from before - s (taken from the rounded lse with the sink, the share would be 1 for 1/2
// where lse and sink are equal at 1e8, and up to 3% off at 1e6). float64 over the stored values.
TEST(ApplySinks, RowsFarFromZeroKeepTheirShare) {
  for (const float size : {1e6f, 3e7f, 1e8f, -1e8f}) {
    SinkCase<float> c(1, 4, 3, 8, 5u);
    const SinkCase<float> before(1, 4, 3, 8, 5u);
    // Head 0's sink equals every lse, head 2's lies 8 above them (below at -1e8; 8 is a whole
    // number of ulps at each size), head 1 has none.
    c.sinks = {size, -INFINITY, size > 0 ? size + 8.0f : size - 8.0f};
    for (std::int64_t k = 0; k < 3; ++k)
      for (std::int64_t r = 0; r < 4; ++r) c.lse(0, k, r) = size;
    apply_sinks<float, Host>(Kokkos::DefaultHostExecutionSpace(), c.sinks.data(), c.out, c.lse, 0);
    for (std::int64_t k = 0; k < 3; ++k) {
      const double s = c.sinks[std::size_t(k)];
      const double share = s == -INFINITY ? 1.0 : 1.0 / (1.0 + std::exp(s - double(size)));
      for (std::int64_t r = 0; r < 4; ++r)
        for (std::int64_t x = 0; x < 8; ++x) {
          const double was = before.out(0, r, k, x);
          ASSERT_NEAR(c.out(0, r, k, x), was * share, 1e-6 * std::fabs(was))
              << "lses of " << size << ", head " << k << ", row " << r << ", column " << x;
        }
    }
  }
}

TEST(ApplySinks, NoRowsChangeNothingAndANegativeShareIsRefused) {
  SinkCase<float> empty(2, 0, 3, 4, 1u);
  apply_sinks<float, Host>(Kokkos::DefaultHostExecutionSpace(), empty.sinks.data(), empty.out, empty.lse, 4);
  SinkCase<float> c(1, 4, 3, 4, 2u);
  try {
    apply_sinks<float, Host>(Kokkos::DefaultHostExecutionSpace(), c.sinks.data(), c.out, c.lse, -1);
    ADD_FAILURE() << "a negative number of values a thread was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INTERNAL);
  }
}

}  // namespace
}  // namespace rfa::engine
