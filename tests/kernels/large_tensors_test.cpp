// SPDX-License-Identifier: BSD-3-Clause
// The host kernels on K/V tensors just past 2^32 elements (one rank, H = 1, d = 64): every
// offset into them must be computed in 64 bits. The tensors are address space without memory
// behind it (tests/common/unbacked_memory.hpp): only the rows the test writes, and those the
// kernels read or write, ever become pages. A causal position map hides every key row but the
// last 96, which straddle element 2^32, so the kernels skip all other tiles (and the test
// takes seconds, not hours); the hidden rows are never read, and the float64 reference is the
// attention over the 96 visible rows.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernel_case.hpp"
#include "kernels/league_chunks.hpp"
#include "unbacked_memory.hpp"

namespace rfa {
namespace test {
namespace {

constexpr std::int64_t kDim = 64, kVisible = 96, kQueries = 16;
constexpr std::int64_t kKeyRows = (std::int64_t(1) << 26) + 64;  // kKeyRows * kDim = 2^32 + 4096
constexpr std::int64_t kFirstVisible = kKeyRows - kVisible;      // element offset 2^32 - 2048

template <class T>
Tensor4<T> over(const Unbacked& memory, std::int64_t rows) {
  return Tensor4<T>(static_cast<T*>(memory.data()), 1, rows, 1, kDim);
}

// Row r of a [1][rows][1][64] tensor as doubles.
template <class View>
std::vector<double> rows_of(const View& t, std::int64_t first, std::int64_t count) {
  std::vector<double> out;
  for (std::int64_t r = first; r < first + count; ++r)
    for (std::int64_t x = 0; x < kDim; ++x) out.push_back(double(to_float(t(0, r, 0, x))));
  return out;
}

template <class T>
void fill_rows(const Tensor4<T>& t, std::int64_t first, std::int64_t count, std::mt19937_64& rng,
               std::vector<double>& exact) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (std::int64_t r = first; r < first + count; ++r)
    for (std::int64_t x = 0; x < kDim; ++x) {
      t(0, r, 0, x) = from_float<T>(float(dist(rng)));
      exact.push_back(double(to_float(t(0, r, 0, x))));
    }
}

struct LargeKeys {
  Unbacked k_memory{std::size_t(kKeyRows * kDim) * sizeof(float)},
      v_memory{std::size_t(kKeyRows * kDim) * sizeof(float)};
  Unbacked dk_memory{std::size_t(kKeyRows * kDim) * sizeof(float)},
      dv_memory{std::size_t(kKeyRows * kDim) * sizeof(float)};

  bool mapped() const { return k_memory.data() && v_memory.data() && dk_memory.data() && dv_memory.data(); }

  // Key rows before the visible ones sit at positions no query reaches (causal: hidden).
  static kernels::AttentionParams params() {
    auto p = kernels::make_params(1, kQueries, kKeyRows, 1, 1, kDim, RFA_MASK_CAUSAL, 0.0f);
    p.q_pos = PositionMap::contiguous(1000, kQueries);
    p.k_pos = PositionMap::two(Segment{std::int64_t(1) << 40, 1, kFirstVisible}, Segment{0, 1, kVisible});
    return p;
  }
  static reference::Problem visible_problem() {
    reference::Problem r;
    r.seq_q = kQueries;
    r.seq_k = kVisible;
    r.head_dim = kDim;
    return r;  // every visible key is visible to every query: no mask
  }
};

template <class T>
void forward_past_2to32() {
  LargeKeys big;
  ASSERT_TRUE(big.mapped()) << "cannot map 64 GiB of address space";
  std::mt19937_64 rng(7);
  std::vector<double> q64, k64, v64;
  auto q = random_tensor<T>("q", 1, kQueries, 1, kDim, rng, q64, 2.0);
  const Tensor4<T> k = over<T>(big.k_memory, kKeyRows), v = over<T>(big.v_memory, kKeyRows);
  fill_rows(k, kFirstVisible, kVisible, rng, k64);
  fill_rows(v, kFirstVisible, kVisible, rng, v64);
  Tensor4<T> out("out", 1, kQueries, 1, kDim);
  Tensor3<float> lse("lse", 1, 1, kQueries);
  poison(out);
  poison(lse);

  kernels::flash_forward<T, T>(LargeKeys::params(), q, k, v, out, lse);

  std::vector<double> out_ref, lse_ref;
  reference::forward(LargeKeys::visible_problem(), q64, k64, v64, out_ref, lse_ref);
  RFA_EXPECT_CLOSE(to_doubles(out), out_ref, tolerance<T>(), "out");
  RFA_EXPECT_CLOSE(to_doubles(lse), lse_ref, 2e-5, "lse");
}

template <class T>
void backward_past_2to32() {
  LargeKeys big;
  ASSERT_TRUE(big.mapped()) << "cannot map 64 GiB of address space";
  std::mt19937_64 rng(8);
  std::vector<double> q64, k64, v64, dout64;
  auto q = random_tensor<T>("q", 1, kQueries, 1, kDim, rng, q64, 2.0);
  auto dout = random_tensor<T>("dout", 1, kQueries, 1, kDim, rng, dout64);
  const Tensor4<T> k = over<T>(big.k_memory, kKeyRows), v = over<T>(big.v_memory, kKeyRows);
  fill_rows(k, kFirstVisible, kVisible, rng, k64);
  fill_rows(v, kFirstVisible, kVisible, rng, v64);
  // fp32 accumulators: zero pages until the kernel adds into the visible rows.
  const Tensor4<float> dk = over<float>(big.dk_memory, kKeyRows), dv = over<float>(big.dv_memory, kKeyRows);
  Tensor4<float> dq("dq", 1, kQueries, 1, kDim);
  Tensor4<T> out("out", 1, kQueries, 1, kDim);
  Tensor3<float> lse("lse", 1, 1, kQueries), delta("delta", 1, 1, kQueries);

  const auto p = LargeKeys::params();
  kernels::flash_forward<T, T>(p, q, k, v, out, lse);
  kernels::compute_delta<T, T>(p, dout, out, delta);
  kernels::flash_backward_accumulate<T>(p, q, k, v, dout, lse, delta, dq, dk, dv);

  std::vector<double> dq_ref, dk_ref, dv_ref;
  reference::backward(LargeKeys::visible_problem(), q64, k64, v64, dout64, dq_ref, dk_ref, dv_ref);
  const double tol = std::is_same<T, float>::value ? 1e-4 : 5e-2;
  RFA_EXPECT_CLOSE(to_doubles(dq), dq_ref, tol, "dq");
  RFA_EXPECT_CLOSE(rows_of(dk, kFirstVisible, kVisible), dk_ref, tol, "dk");
  RFA_EXPECT_CLOSE(rows_of(dv, kFirstVisible, kVisible), dv_ref, tol, "dv");
  // A row index wrapped at 2^32 elements would have landed at the front of dk/dv.
  const std::vector<double> zeros(std::size_t(kVisible * kDim), 0.0);
  EXPECT_EQ(rows_of(dk, 0, kVisible), zeros) << "dk written at a wrapped offset";
  EXPECT_EQ(rows_of(dv, 0, kVisible), zeros) << "dv written at a wrapped offset";
}

TEST(LargeTensors, ForwardFloat32KeysPast2To32Elements) { forward_past_2to32<float>(); }
TEST(LargeTensors, ForwardBFloat16KeysPast2To32Elements) { forward_past_2to32<bf16_t>(); }
TEST(LargeTensors, BackwardFloat32KeysPast2To32Elements) { backward_past_2to32<float>(); }
TEST(LargeTensors, BackwardBFloat16KeysPast2To32Elements) { backward_past_2to32<bf16_t>(); }

// Leagues past INT_MAX teams run as several launches; each team index must come once.
struct CountTeams {
  using Policy = Kokkos::TeamPolicy<Kokkos::DefaultHostExecutionSpace>;
  Kokkos::View<int*, Kokkos::HostSpace> seen;
  std::int64_t first_item = 0;
  void operator()(const Policy::member_type& team) const { seen(first_item + team.league_rank()) += 1; }
};

TEST(LeagueChunks, EveryTeamOnceAcrossLaunches) {
  CountTeams f;
  f.seen = Kokkos::View<int*, Kokkos::HostSpace>("seen", 10);
  int launches = 0;
  kernels::for_each_league_chunk<CountTeams::Policy>(
      "count", 10, f, [&](CountTeams::Policy&) { ++launches; }, 3);
  Kokkos::fence();
  EXPECT_EQ(launches, 4);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(f.seen(i), 1) << "team " << i;
}

}  // namespace
}  // namespace test
}  // namespace rfa
