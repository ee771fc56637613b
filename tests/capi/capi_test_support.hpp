// SPDX-License-Identifier: BSD-3-Clause
// Helpers for the C API tests: world rank/size, random tensors stored in any rfa dtype, and
// checking a call's code together with its message.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi_test_support.hpp"
#include "random_values.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"  // header-only conversions; the tests otherwise use the C API only
#include "rfa/rfa.h"

namespace rfa_capi_test {

using rfa::test::world_rank;
using rfa::test::world_size;

using rfa::test::random_values;  // uniform in [-1, 1) from a seed: the same on every rank

/// A tensor in an rfa storage dtype, as raw bytes, with conversions through fp32.
class Stored {
 public:
  Stored(rfa_dtype_t dtype, std::size_t count) : dtype_(dtype), bytes_(count * rfa::dtype_size(dtype)), count_(count) {}
  /// Rounds `values` to the dtype; returns what the stored values are, in double.
  std::vector<double> assign(const std::vector<double>& values) {
    std::vector<double> rounded(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      set(i, float(values[i]));
      rounded[i] = get(i);
    }
    return rounded;
  }
  /// NaN everywhere: an element the library forgets to write fails every comparison.
  void poison() {
    for (std::size_t i = 0; i < count_; ++i) set(i, std::numeric_limits<float>::quiet_NaN());
  }
  double get(std::size_t i) const {
    switch (dtype_) {
      case RFA_DTYPE_FLOAT32: return load<float>(i);
      case RFA_DTYPE_BFLOAT16: return rfa::to_float(load<rfa::bf16_t>(i));
      case RFA_DTYPE_FLOAT16: return rfa::to_float(load<rfa::fp16_t>(i));
    }
    return 0.0;
  }
  void set(std::size_t i, float x) {
    switch (dtype_) {
      case RFA_DTYPE_FLOAT32: store(i, x); break;
      case RFA_DTYPE_BFLOAT16: store(i, rfa::from_float<rfa::bf16_t>(x)); break;
      case RFA_DTYPE_FLOAT16: store(i, rfa::from_float<rfa::fp16_t>(x)); break;
    }
  }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  std::size_t size() const { return count_; }

 private:
  template <class T>
  T load(std::size_t i) const {
    T t;
    std::memcpy(&t, bytes_.data() + i * sizeof(T), sizeof(T));
    return t;
  }
  template <class T>
  void store(std::size_t i, T t) {
    std::memcpy(bytes_.data() + i * sizeof(T), &t, sizeof(T));
  }
  rfa_dtype_t dtype_;
  std::vector<unsigned char> bytes_;
  std::size_t count_;
};

/// max |local - global| over this rank's rows: local is a [B][L][heads][D] shard, global the
/// [B][S][heads][D] reference, positions[i] the global row of local row i; NaN counts as infinite.
inline double max_error_bshd(const Stored& local, const std::vector<double>& global,
                             const std::vector<int64_t>& positions, int64_t B, int64_t S, int64_t heads, int64_t D) {
  const int64_t L = int64_t(positions.size());
  double worst = 0.0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t e = 0; e < heads * D; ++e) {
        const double err = std::fabs(local.get(std::size_t((b * L + i) * heads * D + e)) -
                                     global[std::size_t((b * S + positions[i]) * heads * D + e)]);
        worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(worst, err);
      }
  return worst;
}

/// max |local - global| of an lse: local is this rank's [B][H][L], global the [B][H][S]
/// reference, positions[i] the global row of local row i; NaN counts as infinite, and equal
/// values (a row that sees no key: -inf in both) as exact.
inline double max_error_lse(const std::vector<float>& local, const std::vector<double>& global,
                            const std::vector<int64_t>& positions, int64_t B, int64_t H, int64_t S) {
  const int64_t L = int64_t(positions.size());
  double worst = 0.0;
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < L; ++i) {
      const double mine = local[std::size_t(bh * L + i)], want = global[std::size_t(bh * S + positions[i])];
      const double err = mine == want ? 0.0 : std::fabs(mine - want);
      worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(worst, err);
    }
  return worst;
}

/// A small fp32 causal problem the C API suites run over MPI_COMM_WORLD: identity ring order,
/// 2 query heads over 1 K/V head of dimension 8, `tokens_per_rank` tokens on every rank.
inline rfa_options_t small_problem(rfa_layout_t layout, int64_t tokens_per_rank) {
  rfa_options_t o;
  rfa_options_init(&o);
  o.layout = layout;
  o.mask = RFA_MASK_CAUSAL;
  o.dtype = RFA_DTYPE_FLOAT32;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.batch = 1;
  o.seq_total = tokens_per_rank * world_size();
  o.heads = 2;
  o.kv_heads = 1;
  o.head_dim = 8;
  return o;
}

/// Query heads of the variants' suites on P ranks: they divide among P Ulysses ranks and over
/// the suites' 2 K/V heads.
inline int64_t variant_heads(int P) { return std::max<int64_t>(4, 2 * P); }

/// The sequence variant_options() gives: 2P chunks of `chunk` tokens, rounded up to a multiple
/// of 8P for the balanced layout (8 chunks a rank).
inline int64_t variant_seq(rfa_layout_t layout, int64_t chunk) {
  const int64_t P = world_size(), S = 2 * P * chunk;
  return layout == RFA_LAYOUT_BALANCED ? (S + 8 * P - 1) / (8 * P) * (8 * P) : S;
}

/// The variants' suites' problem over MPI_COMM_WORLD: `strategy` (the hybrid as a grid of
/// Ulysses pairs wherever P has one, 2 x 2, 2 x 3, 2 x 4, else one group), identity ring order,
/// variant_heads(P) query heads over 2 K/V heads of `head_dim` values, `batch` entries of
/// variant_seq(layout, chunk) tokens (2P chunks of `chunk`, the zigzag layout's, where not balanced).
inline rfa_options_t variant_options(rfa_strategy_t strategy, rfa_layout_t layout, rfa_dtype_t dtype, rfa_mask_t mask,
                                     int64_t chunk, int64_t head_dim, int64_t batch = 2) {
  const int P = world_size();
  rfa_options_t o;
  rfa_options_init(&o);
  o.layout = layout;
  o.mask = mask;
  o.dtype = dtype;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.batch = batch;
  o.seq_total = variant_seq(layout, chunk);
  o.heads = variant_heads(P);
  o.kv_heads = 2;
  o.head_dim = head_dim;
  o.strategy = strategy;
  o.ulysses_degree = strategy == RFA_STRATEGY_HYBRID ? (P % 2 == 0 && P > 2 ? 2 : P) : 0;
  return o;
}

/// Asserts the code of an rfa call and that its message contains every given fragment.
inline void expect_failure(rfa_result_t got, rfa_result_t want, std::initializer_list<const char*> fragments,
                           const char* call) {
  const std::string message = rfa_get_last_error_message();
  EXPECT_EQ(int(got), int(want)) << call << ": " << message;
  for (const char* f : fragments)
    EXPECT_NE(message.find(f), std::string::npos) << call << ": message \"" << message << "\" lacks \"" << f << "\"";
}

/// "ring_zigzag_fp32_causal": a test name's part for a strategy, layout, dtype and mask.
inline std::string case_label(rfa_strategy_t strategy, rfa_layout_t layout, rfa_dtype_t dtype, rfa_mask_t mask) {
  const char* strategies[] = {"ring", "ulysses", "allgather", "hybrid", "auto", "needed"};
  const char* layouts[] = {"contiguous", "zigzag", "stripe", "balanced"};
  const char* dtypes[] = {"fp32", "bf16", "fp16"};
  return std::string(strategies[strategy]) + "_" + layouts[layout] + "_" + dtypes[dtype] +
         (mask == RFA_MASK_CAUSAL ? "_causal" : "_full");
}

/// |error| bounds, for values of order one, of the variants' suites on the host kernels: fp32
/// to round-off; 16-bit outputs rounded by the strategy and once more by a variant's pass.
inline double variant_tolerance(rfa_dtype_t t) {
  return t == RFA_DTYPE_FLOAT32 ? 2e-6 : t == RFA_DTYPE_BFLOAT16 ? 1.6e-2 : 2e-3;
}

}  // namespace rfa_capi_test

/// EXPECT that `call` returns `code` and leaves a message containing each fragment.
#define EXPECT_RFA_FAILS(code, call, ...) ::rfa_capi_test::expect_failure((call), (code), {__VA_ARGS__}, #call)
/// ASSERT that an rfa call succeeds, printing the message if it does not.
#define ASSERT_RFA_OK(call)                                                                            \
  do {                                                                                                 \
    const rfa_result_t rfa_ok_result_ = (call);                                                        \
    ASSERT_EQ(int(rfa_ok_result_), int(RFA_SUCCESS)) << #call << ": " << rfa_get_last_error_message(); \
  } while (0)
