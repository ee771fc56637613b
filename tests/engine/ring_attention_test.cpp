// SPDX-License-Identifier: BSD-3-Clause
// The ring engine against the float64 reference of the whole sequence: every layout, causal
// and not, with and without a sliding window, every dtype, with and without GQA, on however
// many ranks mpiexec started.
#include <algorithm>
#include <string>
#include <vector>

#include "layout/sequence_layout.hpp"
#include "ring_case.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

struct RingSpec {
  rfa_layout_t layout;
  rfa_mask_t mask;
  std::int64_t kv_heads;
  std::int64_t window = 0;
  std::vector<std::int64_t> docs = {};
};

using RingErrors = AttentionErrors;

template <class T>
RingErrors run_ring(comm::Communicator& ring, const engine::AttentionConfig& cfg, std::uint64_t seed) {
  engine::RingAttention attn(ring, cfg);
  return run_attention<T>(attn, cfg, seed);
}

engine::AttentionConfig config_for(const RingSpec& spec, rfa_dtype_t dtype) {
  engine::AttentionConfig cfg;
  cfg.layout = spec.layout;
  cfg.mask = spec.mask;
  cfg.dtype = dtype;
  cfg.batch = 2;
  cfg.seq_total = 120;  // divisible by 2P for P = 1..4 (zigzag), local lengths 120, 60, 40, 30
  cfg.heads = 4;
  cfg.kv_heads = spec.kv_heads;
  cfg.head_dim = 32;
  cfg.window = spec.window;
  cfg.doc_bounds = spec.docs;
  return cfg;
}

class RingAttentionTest : public ::testing::TestWithParam<RingSpec> {
 protected:
  template <class T>
  void check() {
    auto ring = world_ring();
    const auto cfg = config_for(GetParam(), dtype_of<T>::value);
    expect_matches_reference<T>(run_ring<T>(*ring, cfg, 1234));
  }
};

TEST_P(RingAttentionTest, Float32) { check<float>(); }
TEST_P(RingAttentionTest, BFloat16) { check<bf16_t>(); }
TEST_P(RingAttentionTest, Float16) { check<fp16_t>(); }

std::vector<RingSpec> ring_specs() {
  std::vector<RingSpec> specs;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL})
      for (std::int64_t kv_heads : {4, 2}) specs.push_back({layout, mask, kv_heads});
  // Sliding windows: of 1 (each query sees itself), of 15 (S/8: most ring steps see nothing),
  // and longer than the sequence (the window changes nothing).
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL})
      for (std::int64_t window : {1, 15}) specs.push_back({layout, mask, 2, window});
  specs.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2, 500});
  // Packed documents (strategy_case.hpp: lengths 1 to 49, crossing ranks' blocks), causal and
  // not, on every layout; with windows of 1, 10 and more than S on top.
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) specs.push_back({layout, mask, 2, 0, packed_documents()});
  for (std::int64_t window : {1, 10, 500})
    specs.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, 2, window, packed_documents()});
  // One document per token: every query sees only itself.
  std::vector<std::int64_t> singletons;
  for (std::int64_t b = 0; b <= 120; ++b) singletons.push_back(b);
  specs.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, 2, 0, singletons});
  return specs;
}

INSTANTIATE_TEST_SUITE_P(Layouts, RingAttentionTest, ::testing::ValuesIn(ring_specs()), [](const auto& info) {
  const RingSpec& s = info.param;
  return std::string(layout::layout_name(s.layout)) + (s.mask == RFA_MASK_CAUSAL ? "_causal" : "_full") +
         (s.kv_heads == 4 ? "_mha" : "_gqa") + (s.window > 0 ? "_window" + std::to_string(s.window) : "") +
         (s.docs.empty() ? "" : "_docs" + std::to_string(s.docs.size() - 1));
});

// A window of 1 token: every query sees only itself, which its own block holds, so with the
// contiguous and zigzag layouts (blocks of consecutive positions) every other ring step is
// skipped, forward and backward. (Stripe blocks interleave, so their steps stay partial.)
TEST(RingWindow, StepsOutsideEveryWindowRunNoKernel) {
  auto ring = world_ring();
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG}) {
    SCOPED_TRACE(layout::layout_name(layout));
    const auto cfg = config_for({layout, RFA_MASK_CAUSAL, 2, 1}, RFA_DTYPE_FLOAT32);
    engine::RingAttention attn(*ring, cfg);
    expect_matches_reference<float>(run_attention<float>(attn, cfg, 7));
    EXPECT_EQ(attn.last_timings().steps_computed, 1) << "P=" << ring->size();  // the backward's
  }
}

// The steps some rank computes on, from the configuration alone: every step under a plain
// causal mask; under a window, the distances whose blocks some window reaches (zigzag: both
// neighbours of each chunk, so the steps near 0 and near P); with documents that coincide
// with the contiguous blocks, none but the rank's own.
TEST(RingSteps, OnlyTheStepsSomeRankComputesOn) {
  engine::AttentionConfig c = config_for({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2}, RFA_DTYPE_FLOAT32);
  c.seq_total = 1024;
  EXPECT_EQ(engine::ring_steps_with_work(c, 4), (std::vector<int>{0, 1, 2, 3}));
  c.window = 128;  // S/8: one zigzag chunk at P = 4, two at P = 8
  EXPECT_EQ(engine::ring_steps_with_work(c, 4), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(engine::ring_steps_with_work(c, 8), (std::vector<int>{0, 1, 2, 6, 7}));
  EXPECT_EQ(engine::ring_steps_with_work(c, 1), (std::vector<int>{0}));
  c.layout = RFA_LAYOUT_CONTIGUOUS;
  EXPECT_EQ(engine::ring_steps_with_work(c, 8), (std::vector<int>{0, 1}));
  c.mask = RFA_MASK_NONE;  // without the causal mask a window does not limit keys ahead
  EXPECT_EQ(engine::ring_steps_with_work(c, 4), (std::vector<int>{0, 1, 2, 3}));
  c.window = 0;
  c.doc_bounds = {0, 256, 512, 768, 1024};
  EXPECT_EQ(engine::ring_steps_with_work(c, 4), (std::vector<int>{0}));
  c.doc_bounds = {0, 300, 1024};
  EXPECT_EQ(engine::ring_steps_with_work(c, 4), (std::vector<int>{0, 1, 2, 3}));
}

// The steps the ring runs, against a brute force over every (query, key) pair written from the
// documented mask alone (causal: k <= q; a window w: q - k < w; documents: the same document),
// with windows around every block edge: w = k * c + d for d in -2..2, k up to P, c the
// distance that moves a key into the next block of its owner (the contiguous block, the zigzag
// chunk, P for stripe's interleaved tokens), and document boundaries on chunk edges and one
// token either side; every layout, P = 1..8, causal or not. A step selection off by one token
// at any edge (a step skipped that some rank needs) fails here. The contiguous and zigzag
// layouts must match exactly; on stripe the selection may run steps no rank needs (it judges
// a rank's interleaved tokens by their range: under a window shorter than P every step runs)
// but never skip one.
std::vector<int> brute_force_steps(const engine::AttentionConfig& c, int P) {
  const std::int64_t L = layout::local_length(c.layout, c.seq_total, P);
  auto document = [&](std::int64_t pos) {
    std::int64_t d = 0;
    while (d + 1 < std::int64_t(c.doc_bounds.size()) && c.doc_bounds[std::size_t(d + 1)] <= pos) ++d;
    return d;
  };
  auto visible = [&](std::int64_t qp, std::int64_t kp) {
    if (c.mask == RFA_MASK_CAUSAL && kp > qp) return false;
    if (c.window > 0 && qp - kp >= c.window) return false;
    return c.doc_bounds.empty() || document(qp) == document(kp);
  };
  std::vector<int> steps = {0};  // a rank's own block always runs
  for (int s = 1; s < P; ++s) {
    bool needed = false;
    for (int owner = 0; owner < P && !needed; ++owner) {
      const PositionMap q = layout::positions(c.layout, c.seq_total, P, (owner + s) % P);
      const PositionMap k = layout::positions(c.layout, c.seq_total, P, owner);
      for (std::int64_t i = 0; i < L && !needed; ++i)
        for (std::int64_t j = 0; j < L && !needed; ++j) needed = visible(q(i), k(j));
    }
    if (needed) steps.push_back(s);
  }
  return steps;
}

void expect_steps_cover(const std::vector<int>& run, const std::vector<int>& needed, rfa_layout_t layout) {
  if (layout != RFA_LAYOUT_STRIPE) {
    EXPECT_EQ(run, needed);
    return;
  }
  for (int s : needed)
    EXPECT_TRUE(std::find(run.begin(), run.end(), s) != run.end()) << "step " << s << " is needed but skipped";
}

TEST(RingSteps, MatchABruteForceAroundEveryBlockEdge) {
  int configurations = 0;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE}) {
    for (int P = 1; P <= 8; ++P) {
      engine::AttentionConfig c = config_for({layout, RFA_MASK_CAUSAL, 1}, RFA_DTYPE_FLOAT32);
      c.seq_total = 24 * P;  // 2P zigzag chunks of 12 tokens, P contiguous blocks of 24
      const std::int64_t edge = edge_of(layout, c.seq_total, P);
      for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE}) {
        c.mask = mask;
        std::vector<std::vector<std::int64_t>> document_sets = {{}};
        for (std::int64_t d : {-1, 0, 1}) {  // boundaries on the zigzag chunk edges 1 and 3, +-1
          if (12 + d > 0 && 36 + d < c.seq_total) document_sets.push_back({0, 12 + d, 36 + d, c.seq_total});
        }
        for (const auto& docs : document_sets) {
          c.doc_bounds = docs;
          for (std::int64_t k = 0; k <= P; ++k) {
            for (std::int64_t d = -2; d <= 2; ++d) {
              c.window = k * edge + d;
              if (c.window < 1) continue;
              SCOPED_TRACE(std::string(layout::layout_name(layout)) + " P=" + std::to_string(P) +
                           (mask == RFA_MASK_CAUSAL ? " causal" : " full") + " w=" + std::to_string(c.window) +
                           (docs.empty() ? "" : " documents at " + std::to_string(docs[1])));
              expect_steps_cover(engine::ring_steps_with_work(c, P), brute_force_steps(c, P), layout);
              ++configurations;
            }
          }
          c.window = 0;
          if (!docs.empty()) {
            SCOPED_TRACE("documents alone, P=" + std::to_string(P));
            expect_steps_cover(engine::ring_steps_with_work(c, P), brute_force_steps(c, P), layout);
            ++configurations;
          }
        }
      }
    }
  }
  EXPECT_GT(configurations, 2000);
}

// The ring runs only those steps and its buffers go no further than needed: a window of 1 needs
// no block but the rank's own (nothing sent, forward or backward); a window of one block's length
// on the contiguous layout needs the previous block (one exchange of K/V; the gradient partial,
// which starts at the rank after the owner, goes straight home); the zigzag layout with a window
// of S/8 needs the neighbours' chunks at steps 1 and P - 1, so the blocks jump over the steps
// between (two exchanges of K/V, two of the gradients: as many as of K/V). That the results stay exact is what the
// window cases of RingAttentionTest check (the same configs and schedule).
TEST(RingWindow, SendsOnlyTheExchangesSomeRankNeeds) {
  auto ring = world_ring();
  const int P = ring->size();
  struct Expect {
    rfa_layout_t layout;
    std::int64_t window, kv_exchanges;
  };
  const Expect cases[] = {{RFA_LAYOUT_CONTIGUOUS, 1, 0},
                          {RFA_LAYOUT_ZIGZAG, 1, 0},
                          {RFA_LAYOUT_CONTIGUOUS, 120 / P, std::min(P - 1, 1)},
                          {RFA_LAYOUT_ZIGZAG, 15, std::min(P - 1, 2)}};
  for (const Expect& e : cases) {
    SCOPED_TRACE(std::string(layout::layout_name(e.layout)) + " window " + std::to_string(e.window));
    const auto cfg = config_for({e.layout, RFA_MASK_CAUSAL, 2, e.window}, RFA_DTYPE_FLOAT32);
    engine::RingAttention attn(*ring, cfg);
    const std::int64_t L = attn.local_seq(), B = cfg.batch, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
    kernels::Tensor4<float> q("q", B, L, H, D), k("k", B, L, HKV, D), v("v", B, L, HKV, D), out("out", B, L, H, D),
        dout("dout", B, L, H, D), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, D);
    kernels::Tensor3<float> lse("lse", B, H, L);
    const std::int64_t block_bytes = 2 * B * L * HKV * D * std::int64_t(sizeof(float));  // K and V, or dK and dV
    attn.forward(engine::HostForward<float>{q, k, v, out, lse});
    EXPECT_EQ(attn.last_timings().bytes_sent, e.kv_exchanges * block_bytes) << "P=" << P;
    attn.backward(engine::HostBackward<float>{q, k, v, out, dout, lse, dq, dk, dv});
    EXPECT_EQ(attn.last_timings().bytes_sent, 2 * e.kv_exchanges * block_bytes) << "P=" << P;
  }
}

// Documents that coincide with the contiguous layout's blocks: a rank's queries share a
// document only with its own block, so every other ring step runs no kernel, causal or not,
// forward and backward.
TEST(RingDocuments, StepsSharingNoDocumentRunNoKernel) {
  auto ring = world_ring();
  const std::int64_t P = ring->size(), L = 120 / P;
  std::vector<std::int64_t> blocks;
  for (std::int64_t r = 0; r <= P; ++r) blocks.push_back(r * L);
  for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
    const auto cfg = config_for({RFA_LAYOUT_CONTIGUOUS, mask, 2, 0, blocks}, RFA_DTYPE_FLOAT32);
    engine::RingAttention attn(*ring, cfg);
    expect_matches_reference<float>(run_attention<float>(attn, cfg, 11));
    EXPECT_EQ(attn.last_timings().steps_computed, 1) << "P=" << P;  // the backward's
  }
}

// The partials stay fp32 across ring steps, so splitting the sequence over more ranks must not
// make bf16 results worse: compare this run's error with the same problem on one rank.
TEST(RingPrecision, Bf16ErrorDoesNotGrowWithRanks) {
  auto ring = world_ring();
  if (ring->size() == 1) GTEST_SKIP() << "one rank: the run would be compared with itself";
  const RingSpec spec{RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2};
  const auto cfg = config_for(spec, RFA_DTYPE_BFLOAT16);
  const RingErrors many = run_ring<bf16_t>(*ring, cfg, 99);
  auto alone = comm::make_mpi_communicator(MPI_COMM_SELF, 0);
  const RingErrors one = run_ring<bf16_t>(*alone, cfg, 99);
  const double slack = 1.5;
  EXPECT_LE(many.out, slack * one.out + 1e-3) << "P=" << ring->size() << " vs P=1";
  EXPECT_LE(many.dq, slack * one.dq + 1e-3);
  EXPECT_LE(many.dk, slack * one.dk + 1e-3);
  EXPECT_LE(many.dv, slack * one.dv + 1e-3);
  RecordProperty("out_error_P", std::to_string(many.out));
  RecordProperty("out_error_1", std::to_string(one.out));
}

}  // namespace
}  // namespace test
}  // namespace rfa
