// SPDX-License-Identifier: BSD-3-Clause
// Bad configurations fail on every rank together, with a clear message, and leave no rank
// hanging (a hang would time the test out).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/mask_ranges.hpp"
#include "ring_case.hpp"

namespace rfa {
namespace test {
namespace {

engine::AttentionConfig good_config() {
  engine::AttentionConfig cfg;
  cfg.layout = RFA_LAYOUT_ZIGZAG;
  cfg.mask = RFA_MASK_CAUSAL;
  cfg.dtype = RFA_DTYPE_FLOAT32;
  cfg.batch = 1;
  cfg.seq_total = 48;
  cfg.heads = 2;
  cfg.kv_heads = 1;
  cfg.head_dim = 16;
  return cfg;
}

Error creation_error(comm::Communicator& ring, const engine::AttentionConfig& cfg) {
  try {
    engine::RingAttention attn(ring, cfg);
  } catch (const Error& e) {
    return e;
  }
  return Error(RFA_SUCCESS, "");
}

TEST(RingValidation, GoodConfigIsAccepted) {
  auto ring = world_ring();
  EXPECT_EQ(creation_error(*ring, good_config()).code(), RFA_SUCCESS);
}

TEST(RingValidation, SequenceThatTheLayoutCannotSplitFailsEverywhere) {
  auto ring = world_ring();
  auto cfg = good_config();
  cfg.seq_total = 2 * ring->size() * 5 + 1;  // odd: no layout on P >= 2 ranks can split it evenly
  if (ring->size() == 1) cfg.seq_total = 0;
  const Error e = creation_error(*ring, cfg);
  EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT) << e.what();
  EXPECT_NE(std::string(e.what()).find("seq"), std::string::npos) << e.what();
}

TEST(RingValidation, RanksThatDisagreeFailEverywhere) {
  auto ring = world_ring();
  if (ring->size() < 2) GTEST_SKIP() << "needs two ranks";
  auto cfg = good_config();
  if (ring->rank() == ring->size() - 1) cfg.heads = 4;
  const Error e = creation_error(*ring, cfg);
  EXPECT_EQ(e.code(), RFA_ERROR_INVALID_USAGE) << e.what();
  EXPECT_NE(std::string(e.what()).find("heads"), std::string::npos) << e.what();
}

// Every field of the configuration is agreed on, not only those the C API's creation agreement
// checks first: programs that build strategies directly (rfa_run, the benchmarks) rely on the
// engine's own. The last rank changes one field to another valid value; every rank fails with
// RFA_ERROR_INVALID_USAGE naming it.
TEST(RingValidation, EveryFieldIsAgreedOn) {
  auto ring = world_ring();
  if (ring->size() < 2) GTEST_SKIP() << "needs two ranks";
  using Change = void (*)(engine::AttentionConfig&);
  const std::pair<const char*, Change> fields[] = {
      {"layout", [](engine::AttentionConfig& c) { c.layout = RFA_LAYOUT_STRIPE; }},
      {"mask", [](engine::AttentionConfig& c) { c.mask = RFA_MASK_NONE; }},
      {"dtype", [](engine::AttentionConfig& c) { c.dtype = RFA_DTYPE_BFLOAT16; }},
      {"softmax_scale", [](engine::AttentionConfig& c) { c.softmax_scale = 0.5f; }},
      {"batch", [](engine::AttentionConfig& c) { c.batch = 2; }},
      {"seq_total", [](engine::AttentionConfig& c) { c.seq_total = 96; }},
      {"heads", [](engine::AttentionConfig& c) { c.heads = 4; }},
      {"kv_heads", [](engine::AttentionConfig& c) { c.kv_heads = 2; }},
      {"head_dim", [](engine::AttentionConfig& c) { c.head_dim = 32; }},
      {"window", [](engine::AttentionConfig& c) { c.window = 5; }},
      {"deterministic", [](engine::AttentionConfig& c) { c.deterministic = true; }},
      {"document boundaries (count)",
       [](engine::AttentionConfig& c) {
         c.doc_bounds = {0, 10, 48};
       }},
  };
  for (const auto& [name, change] : fields) {
    SCOPED_TRACE(name);
    auto cfg = good_config();
    if (ring->rank() == ring->size() - 1) change(cfg);
    const Error e = creation_error(*ring, cfg);
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_USAGE) << e.what();
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
  // Documents of the same count but other boundaries: told apart by their hash.
  auto cfg = good_config();
  cfg.doc_bounds = {0, ring->rank() == ring->size() - 1 ? std::int64_t(11) : std::int64_t(10), 48};
  const Error e = creation_error(*ring, cfg);
  EXPECT_EQ(e.code(), RFA_ERROR_INVALID_USAGE) << e.what();
  EXPECT_NE(std::string(e.what()).find("document boundaries (hash)"), std::string::npos) << e.what();
  // Per-sequence documents: offsets the others do not have, and the same boundaries cut
  // otherwise between two entries, each named.
  const bool last = ring->rank() == ring->size() - 1;
  const struct {
    std::int64_t batch;
    std::vector<std::int64_t> mine;
    const char* named;
  } cuts[] = {
      {1, last ? std::vector<std::int64_t>{0, 3} : std::vector<std::int64_t>{}, "document list offsets (count)"},
      {2, last ? std::vector<std::int64_t>{0, 0, 3} : std::vector<std::int64_t>{0, 3, 3},
       "document list offsets (hash)"}};
  for (const auto& cut : cuts) {
    cfg = good_config();
    cfg.batch = cut.batch;
    cfg.doc_bounds = {0, 10, 48};
    cfg.doc_offsets = cut.mine;
    const Error cut_error = creation_error(*ring, cfg);
    EXPECT_EQ(cut_error.code(), RFA_ERROR_INVALID_USAGE) << cut_error.what();
    EXPECT_NE(std::string(cut_error.what()).find(cut.named), std::string::npos) << cut_error.what();
  }
}

// Per-sequence documents are checked entry by entry, naming the entry.
TEST(RingValidation, PerSequenceDocumentsAreCheckedEntryByEntry) {
  auto cfg = good_config();
  cfg.batch = 2;
  cfg.doc_bounds = {0, 10, 48, 0, 47};
  cfg.doc_offsets = {0, 3, 5};
  try {
    engine::validate_local(cfg, 2);
    ADD_FAILURE() << "entry 1's list does not end at seq_total";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch entry 1's list"), std::string::npos) << e.what();
  }
  cfg.doc_bounds.back() = 48;
  engine::validate_local(cfg, 2);
  cfg.doc_offsets = {0, 3};  // one offset short for two entries
  EXPECT_THROW(engine::validate_local(cfg, 2), Error);
}

// A mask given as ranges: a list of another length, and one of the same length with another
// entry, on the last rank, each named; so is a list the others do not have.
TEST(RingValidation, MaskRangesAreAgreedOn) {
  auto ring = world_ring();
  if (ring->size() < 2) GTEST_SKIP() << "needs two ranks";
  const bool last = ring->rank() == ring->size() - 1;
  const rfa_mask_range_t causal = {0, 48, 0, 48, 0, 0, RFA_RANGE_CAUSAL}, full = {0, 48, 0, 10, 0, 0, RFA_RANGE_FULL};
  const std::vector<rfa_mask_range_t> one = {causal}, two = {causal, full}, other = {full};
  const struct {
    const std::vector<rfa_mask_range_t>* mine;
    const char* named;
  } cases[] = {{last ? &two : &one, "mask ranges (count)"}, {last ? &other : &one, "mask ranges (hash)"}};
  for (const auto& c : cases) {
    auto cfg = good_config();
    cfg.mask = RFA_MASK_RANGES;
    cfg.ranges = std::make_shared<const MaskRanges>(c.mine->data(), std::int64_t(c.mine->size()), 48, "ranges");
    const Error e = creation_error(*ring, cfg);
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_USAGE) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.named), std::string::npos) << e.what();
  }
}

// Ranges without RFA_MASK_RANGES and the mask without ranges are refused with what is wrong.
TEST(RingValidation, MaskRangesNeedTheirMask) {
  const std::vector<rfa_mask_range_t> one = {{0, 48, 0, 48, 0, 0, RFA_RANGE_CAUSAL}};
  const auto ranges = std::make_shared<const MaskRanges>(one.data(), 1, 48, "ranges");
  auto cfg = good_config();
  cfg.ranges = ranges;  // the mask stays causal
  EXPECT_THROW(engine::validate_local(cfg, 2), Error);
  cfg = good_config();
  cfg.mask = RFA_MASK_RANGES;  // no list
  EXPECT_THROW(engine::validate_local(cfg, 2), Error);
  cfg.ranges = ranges;
  engine::validate_local(cfg, 2);
}

TEST(RingValidation, UnsupportedHeadDimFailsEverywhere) {
  auto ring = world_ring();
  auto cfg = good_config();
  cfg.head_dim = 20;
  const Error e = creation_error(*ring, cfg);
  EXPECT_EQ(e.code(), RFA_ERROR_UNSUPPORTED) << e.what();
}

TEST(RingValidation, WrongTensorsAreRejectedBeforeAnyCommunication) {
  auto ring = world_ring();
  const auto cfg = good_config();
  engine::RingAttention attn(*ring, cfg);
  const std::int64_t L = attn.local_seq();
  Tensor4<float> q("q", 1, L, 2, 16), k("k", 1, L + 1, 1, 16), v("v", 1, L, 1, 16), out("out", 1, L, 2, 16);
  Tensor3<float> lse("lse", 1, 2, L);
  try {
    attn.forward(engine::HostForward<float>{q, k, v, out, lse});
    FAIL() << "accepted a k with the wrong local length";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("tensor 'k'"), std::string::npos) << e.what();
  }
  Tensor4<bf16_t> qb("q", 1, L, 2, 16), kb("k", 1, L, 1, 16), vb("v", 1, L, 1, 16), outb("out", 1, L, 2, 16);
  try {
    attn.forward(engine::HostForward<bf16_t>{qb, kb, vb, outb, lse});
    FAIL() << "accepted bf16 tensors on an fp32 ring";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("configured for float32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace test
}  // namespace rfa

namespace rfa {
namespace test {
namespace {

// Each tensor of a forward and of a backward in turn one row longer or shorter than the local
// length (the others right): the pass is refused before anything moves, naming that tensor.
TEST(RingValidation, EachPassTensorOffByOneRowIsRefusedByName) {
  auto ring = world_ring();
  const auto cfg = good_config();
  engine::RingAttention attn(*ring, cfg);
  const std::int64_t L = attn.local_seq();
  const std::vector<std::string> names = {"q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"};
  for (const std::int64_t delta : {-1, 1}) {
    for (const std::string& wrong : names) {
      SCOPED_TRACE(wrong + " with " + std::to_string(L + delta) + " rows");
      auto rows = [&](const std::string& name) { return name == wrong ? L + delta : L; };
      auto tensor = [&](const std::string& name, std::int64_t heads) {
        return Tensor4<float>(name, 1, rows(name), heads, 16);
      };
      const Tensor4<float> q = tensor("q", 2), k = tensor("k", 1), v = tensor("v", 1), out = tensor("out", 2),
                           dout = tensor("dout", 2), dq = tensor("dq", 2), dk = tensor("dk", 1), dv = tensor("dv", 1);
      const Tensor3<float> lse("lse", 1, 2, rows("lse"));
      const bool in_forward = wrong != "dout" && wrong != "dq" && wrong != "dk" && wrong != "dv";
      for (const bool backward : {false, true}) {
        if (!backward && !in_forward) continue;
        try {
          if (backward)
            attn.backward(engine::HostBackward<float>{q, k, v, out, dout, lse, dq, dk, dv});
          else
            attn.forward(engine::HostForward<float>{q, k, v, out, lse});
          ADD_FAILURE() << (backward ? "backward" : "forward") << " accepted it";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT) << e.what();
          EXPECT_NE(std::string(e.what()).find("tensor '" + wrong + "'"), std::string::npos) << e.what();
        }
        EXPECT_EQ(attn.last_timings().bytes_sent, 0) << "refused only after the ring had started";
      }
    }
  }
}

TEST(RingValidation, OneRankWithABadTensorFailsEveryRank) {
  auto ring = world_ring();
  const auto cfg = good_config();
  engine::RingAttention attn(*ring, cfg);
  const std::int64_t L = attn.local_seq();
  const bool bad_here = ring->rank() == ring->size() - 1;
  Tensor4<float> q("q", 1, L, 2, 16), k("k", 1, L, 1, 16), v("v", 1, L, 1, 16);
  Tensor4<float> out("out", 1, bad_here ? L + 2 : L, 2, 16);
  Tensor3<float> lse("lse", 1, 2, L);
  try {
    attn.forward(engine::HostForward<float>{q, k, v, out, lse});
    FAIL() << "rank " << ring->rank() << " returned normally although rank " << ring->size() - 1 << " passed a bad out";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT) << e.what();
    const std::string expected = bad_here ? "tensor 'out'" : "lowest failing ring position";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace test
}  // namespace rfa
