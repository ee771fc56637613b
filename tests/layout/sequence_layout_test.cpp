// SPDX-License-Identifier: BSD-3-Clause
// Position maps of the three layouts: exact maps, full coverage without duplicates, the
// validation messages, and the causal work balance the layouts are chosen for.
#include "layout/sequence_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace rfa::layout {
namespace {

const rfa_layout_t kLayouts[] = {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE};

void expect_segment(const Segment& s, std::int64_t start, std::int64_t stride, std::int64_t length) {
  EXPECT_EQ(s.start, start);
  EXPECT_EQ(s.stride, stride);
  EXPECT_EQ(s.length, length);
}

std::vector<std::int64_t> expand(const PositionMap& m) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < m.length(); ++i) v.push_back(m(i));
  return v;
}

TEST(SequenceLayout, ExactMaps) {
  PositionMap m = positions(RFA_LAYOUT_CONTIGUOUS, 12, 3, 1);
  ASSERT_EQ(m.count, 1);
  expect_segment(m.seg[0], 4, 1, 4);

  m = positions(RFA_LAYOUT_ZIGZAG, 12, 3, 0);
  ASSERT_EQ(m.count, 2);
  expect_segment(m.seg[0], 0, 1, 2);
  expect_segment(m.seg[1], 10, 1, 2);
  EXPECT_EQ(expand(positions(RFA_LAYOUT_ZIGZAG, 12, 3, 2)), (std::vector<std::int64_t>{4, 5, 6, 7}));

  m = positions(RFA_LAYOUT_STRIPE, 12, 3, 2);
  ASSERT_EQ(m.count, 1);
  expect_segment(m.seg[0], 2, 3, 4);
  EXPECT_EQ(expand(m), (std::vector<std::int64_t>{2, 5, 8, 11}));
}

// Every valid (layout, P, S): each rank holds local_length() tokens, each segment increases,
// and the ranks together hold every position exactly once.
TEST(SequenceLayout, RanksCoverTheSequenceExactlyOnce) {
  for (rfa_layout_t layout : kLayouts) {
    for (int p = 1; p <= 5; ++p) {
      const std::int64_t unit = layout == RFA_LAYOUT_ZIGZAG ? 2 * p : p;
      for (std::int64_t s : {unit, 2 * unit, 3 * unit, 7 * unit}) {
        SCOPED_TRACE(std::string(layout_name(layout)) + " P=" + std::to_string(p) + " S=" + std::to_string(s));
        std::vector<int> owners(std::size_t(s), 0);
        for (int r = 0; r < p; ++r) {
          const PositionMap m = positions(layout, s, p, r);
          ASSERT_EQ(m.length(), local_length(layout, s, p));
          ASSERT_EQ(m.length() * p, s);
          validate_position_map(m, m.length(), "test");
          for (std::int64_t pos : expand(m)) {
            ASSERT_GE(pos, 0);
            ASSERT_LT(pos, s);
            ++owners[std::size_t(pos)];
          }
        }
        for (std::int64_t t = 0; t < s; ++t) ASSERT_EQ(owners[std::size_t(t)], 1) << "position " << t;
      }
    }
  }
}

std::string rejection(rfa_layout_t layout, std::int64_t s, int p, int position) {
  try {
    positions(layout, s, p, position);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  ADD_FAILURE() << layout_name(layout) << " S=" << s << " P=" << p << " r=" << position << " was accepted";
  return "";
}

TEST(SequenceLayout, RejectsInvalidShapesWithAdvice) {
  for (rfa_layout_t layout : kLayouts) {
    EXPECT_NE(rejection(layout, 0, 2, 0).find("at least 1, got 0"), std::string::npos);
    EXPECT_NE(rejection(layout, 8, 0, 0).find("at least 1, got 0"), std::string::npos);
    EXPECT_NE(rejection(layout, 8, 2, -1).find("ring position -1 is outside 0..1"), std::string::npos);
    EXPECT_NE(rejection(layout, 8, 2, 2).find("ring position 2 is outside 0..1"), std::string::npos);
  }
  std::string m = rejection(RFA_LAYOUT_CONTIGUOUS, 10, 3, 0);
  EXPECT_NE(m.find("multiple of P = 3"), std::string::npos) << m;
  EXPECT_NE(m.find("S = 10 and P = 3"), std::string::npos) << m;
  EXPECT_NE(m.find("Pad the end of the sequence to S = 12"), std::string::npos) << m;
  // The hint names the two ways padding changes no real token's output.
  EXPECT_NE(m.find("under the causal mask tokens appended at the end change no earlier token's output"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("padding in a document of its own (options.doc_boundaries)"), std::string::npos) << m;
  EXPECT_EQ(m.find("masking the padding"), std::string::npos) << m;
  m = rejection(RFA_LAYOUT_STRIPE, 7, 2, 1);
  EXPECT_NE(m.find("stripe layout needs"), std::string::npos) << m;
  EXPECT_NE(m.find("Pad the end of the sequence to S = 8"), std::string::npos) << m;
  // Divisible by P but not by 2P: contiguous accepts, zigzag refuses.
  EXPECT_EQ(positions(RFA_LAYOUT_CONTIGUOUS, 6, 2, 1).length(), 3);
  m = rejection(RFA_LAYOUT_ZIGZAG, 6, 2, 0);
  EXPECT_NE(m.find("multiple of 2 * P = 4"), std::string::npos) << m;
  EXPECT_NE(m.find("Pad the end of the sequence to S = 8"), std::string::npos) << m;
  EXPECT_NE(m.find("makes 2 * P divide S"), std::string::npos) << m;
  // S just below 2^63 has no next multiple to pad to: no suggestion, no overflow (found by
  // the fuzzer: the padded length was computed in int64 and overflowed).
  m = rejection(RFA_LAYOUT_ZIGZAG, std::numeric_limits<std::int64_t>::max(), 3, 0);
  EXPECT_EQ(m.find("Pad the end"), std::string::npos) << m;
  EXPECT_NE(m.find("Choose a rank count P that makes 2 * P divide S"), std::string::npos) << m;
  m = rejection(rfa_layout_t(7), 8, 2, 0);
  EXPECT_NE(m.find("unknown sequence layout value 7"), std::string::npos) << m;
  EXPECT_THROW(local_length(RFA_LAYOUT_ZIGZAG, 10, 3), Error);
  EXPECT_STREQ(layout_name(rfa_layout_t(7)), "unknown layout");
}

// Causally visible (q, k) pairs (k <= q) between the queries of `q_rank` and the keys of
// `k_rank`: the work of one ring step.
std::int64_t visible_pairs(const PositionMap& q, const PositionMap& k) {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < q.length(); ++i) {
    for (std::int64_t j = 0; j < k.length(); ++j) n += k(j) <= q(i) ? 1 : 0;
  }
  return n;
}

// What each layout promises for causal attention, exactly, for every step (q rank r, key
// block from rank s) and in total:
//   zigzag: every off-diagonal step has 2c^2 visible pairs, every diagonal step 2c^2 + c
//           (c = S/2P), so ranks are perfectly balanced at every step;
//   stripe: n(n+1)/2 pairs when s <= r, n(n-1)/2 when s > r (n = S/P): per-step work differs
//           by at most n, and totals by n per rank position;
//   contiguous: r*c^2 + c(c+1)/2 in total (c = S/P): the last rank does ~2P-1 times the first's.
TEST(SequenceLayout, CausalWorkBalance) {
  for (int p = 1; p <= 5; ++p) {
    for (std::int64_t units : {1, 3}) {
      SCOPED_TRACE("P=" + std::to_string(p) + " S=" + std::to_string(2 * p * units));
      const std::int64_t s = 2 * p * units;  // valid for every layout
      for (int r = 0; r < p; ++r) {
        std::int64_t totals[3] = {0, 0, 0};
        for (int src = 0; src < p; ++src) {
          const std::int64_t c = s / (2 * p);
          const std::int64_t zz =
              visible_pairs(positions(RFA_LAYOUT_ZIGZAG, s, p, r), positions(RFA_LAYOUT_ZIGZAG, s, p, src));
          EXPECT_EQ(zz, src == r ? 2 * c * c + c : 2 * c * c) << "zigzag r=" << r << " src=" << src;
          const std::int64_t n = s / p;
          const std::int64_t st =
              visible_pairs(positions(RFA_LAYOUT_STRIPE, s, p, r), positions(RFA_LAYOUT_STRIPE, s, p, src));
          EXPECT_EQ(st, src <= r ? n * (n + 1) / 2 : n * (n - 1) / 2) << "stripe r=" << r << " src=" << src;
          totals[0] +=
              visible_pairs(positions(RFA_LAYOUT_CONTIGUOUS, s, p, r), positions(RFA_LAYOUT_CONTIGUOUS, s, p, src));
          totals[1] += zz;
          totals[2] += st;
        }
        const std::int64_t c = s / p, n = s / p, half = s / (2 * p);
        EXPECT_EQ(totals[0], r * c * c + c * (c + 1) / 2) << "contiguous r=" << r;
        EXPECT_EQ(totals[1], p * 2 * half * half + half) << "zigzag r=" << r;
        EXPECT_EQ(totals[2], n * (r + 1) + std::int64_t(p) * n * (n - 1) / 2) << "stripe r=" << r;
      }
    }
  }
}

}  // namespace
}  // namespace rfa::layout
