// SPDX-License-Identifier: BSD-3-Clause
// Windows and document boundaries around every block and chunk edge, forward and backward
// against the float64 reference, on every layout and strategy at the P ranks mpiexec started;
// and a seeded sweep of random masks (window, documents, causal, layout, strategy, dtype, GQA).
//
// An edge is the distance that moves a key into the next piece of the sequence a rank holds:
// the contiguous block S/n, the zigzag chunk S/(2n), the stripe's period n, the balanced layout's
// chunk S/(8n) (wherever its placement puts it), with n the ranks the layout is applied over (P;
// for the hybrid, its P/Pu ring groups). Windows w = k * edge + d for d in -2..2 and k = 0..n
// (on the ring also past n: the zigzag's and the balanced layout's later chunks), documents
// with boundaries on chunk edges and one token either side.
// A step, tile or position that is off by one token at any edge changes some row's keys, which
// fp32 results show at once. Failures name the configuration; the random sweep also prints its
// seed (RFA_TEST_SEED reruns one).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/attention_strategy.hpp"
#include "layout/sequence_layout.hpp"
#include "ring_case.hpp"

namespace rfa {
namespace test {
namespace {

struct Sweep {
  engine::StrategyChoice choice;
  int layout_ranks;  ///< ranks (ring groups for the hybrid) the layout places pieces on
};

/// The strategies runnable on P ranks: the ring, Ulysses, the all-gather, the needed-only
/// exchange, and the hybrid with
/// every degree strictly between 1 and P that divides P (degree 1 is the ring, P is Ulysses).
std::vector<Sweep> strategies(int P) {
  std::vector<Sweep> s = {{{engine::StrategyKind::ring, 0, 1}, P},
                          {{engine::StrategyKind::ulysses, 0, 1}, P},
                          {{engine::StrategyKind::allgather, 0, 1}, P},
                          {{engine::StrategyKind::needed, 0, 1}, P}};
  for (int u = 2; u < P; ++u)
    if (P % u == 0) s.push_back({{engine::StrategyKind::hybrid, u, 1}, P / u});
  return s;
}

std::string describe(const engine::AttentionConfig& c, const engine::StrategyChoice& choice, int P) {
  std::ostringstream o;
  o << engine::strategy_name(choice.kind);
  if (choice.kind == engine::StrategyKind::hybrid) o << " Pu=" << choice.ulysses_degree;
  o << " " << layout::layout_name(c.layout) << " P=" << P << " S=" << c.seq_total << " H=" << c.heads
    << " Hkv=" << c.kv_heads << (c.mask == RFA_MASK_CAUSAL ? " causal" : " full") << " window=" << c.window
    << " dtype=" << (c.dtype == RFA_DTYPE_FLOAT32 ? "fp32" : "bf16");
  if (!c.doc_bounds.empty()) {
    o << " documents";
    for (std::int64_t b : c.doc_bounds) o << " " << b;
  }
  if (!c.doc_offsets.empty()) {
    o << " cut per entry at";
    for (std::int64_t b : c.doc_offsets) o << " " << b;
  }
  return o.str();
}

/// The configurations that failed, each described once (every rank checks its own shard).
class Failures {
 public:
  /// Records `what` unless within_tolerance<T>(e, gradient_slack) (ring_case.hpp).
  template <class T>
  void check(const AttentionErrors& e, const std::string& what, double gradient_slack = 1.0) {
    if (within_tolerance<T>(e, gradient_slack)) return;
    std::ostringstream o;
    o << what << ": error out " << e.out << " lse " << e.lse << " dq " << e.dq << " dk " << e.dk << " dv " << e.dv;
    list_.push_back(o.str());
  }
  void expect_none(int configurations) const {
    std::ostringstream o;
    for (std::size_t i = 0; i < list_.size() && i < 20; ++i) o << "\n  " << list_[i];
    EXPECT_TRUE(list_.empty()) << list_.size() << " of " << configurations << " configurations fail:" << o.str();
  }

 private:
  std::vector<std::string> list_;
};

template <class T>
AttentionErrors run_strategy(comm::Communicator& comm, const engine::AttentionConfig& cfg,
                             const engine::StrategyChoice& choice, std::uint64_t seed) {
  auto attn = engine::make_strategy(comm, cfg, choice);
  return run_attention<T>(*attn, cfg, seed);
}

// S = 24P: 2P zigzag chunks of 12 tokens, P contiguous blocks of 24, 8P balanced chunks of 3,
// and every hybrid grid's groups divide it. One head per rank (Ulysses' and every hybrid degree's divisor), fp32.
engine::AttentionConfig edge_config(int P) {
  engine::AttentionConfig c;
  c.dtype = RFA_DTYPE_FLOAT32;
  c.batch = 1;
  c.seq_total = 24 * P;
  c.heads = P;
  c.kv_heads = P;
  c.head_dim = 8;
  return c;
}

// The mask is the outer loop so that the reference (ring_case.hpp keeps the last one) is
// computed once for every layout and strategy that runs it.
TEST(MaskEdges, WindowsAroundEveryBlockAndChunkEdge) {
  auto comm = world_ring();
  const int P = comm->size();
  engine::AttentionConfig c = edge_config(P);
  // Every window any (layout, strategy) sweeps, with the pairs that sweep it.
  struct Run {
    rfa_layout_t layout;
    Sweep sweep;
  };
  std::map<std::int64_t, std::vector<Run>> by_window;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE, RFA_LAYOUT_BALANCED})
    for (const Sweep& s : strategies(P)) {
      const std::int64_t edge = edge_of(layout, c.seq_total, s.layout_ranks);
      for (std::int64_t k = 0; k <= s.layout_ranks; ++k)
        for (std::int64_t d = -2; d <= 2; ++d)
          if (k * edge + d >= 1) by_window[k * edge + d].push_back({layout, s});
      // Past the first n edges, on the ring, whose step skipping and whole-rank rejection
      // (engine/attention_config.cpp) they reach: the zigzag's 2n chunks (rank r's two chunks
      // lie 2n - 1 - 2r chunks apart, so each k reaches some rank's second chunk) and the
      // balanced layout's 8n (every 4n), a token either side.
      const std::int64_t n = s.layout_ranks;
      std::vector<std::int64_t> far;
      if (s.choice.kind == engine::StrategyKind::ring && layout == RFA_LAYOUT_ZIGZAG)
        for (std::int64_t k = n + 1; k <= 2 * n; ++k) far.push_back(k);
      if (s.choice.kind == engine::StrategyKind::ring && layout == RFA_LAYOUT_BALANCED) far = {4 * n, 8 * n};
      for (std::int64_t k : far)
        for (std::int64_t d = -1; d <= 1; ++d) by_window[k * edge + d].push_back({layout, s});
    }
  Failures failures;
  int configurations = 0;
  for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE}) {
    c.mask = mask;
    for (const auto& [window, runs] : by_window) {
      c.window = window;
      for (const Run& r : runs) {
        c.layout = r.layout;
        failures.check<float>(run_strategy<float>(*comm, c, r.sweep.choice, 31), describe(c, r.sweep.choice, P));
        ++configurations;
      }
    }
  }
  failures.expect_none(configurations);
}

TEST(MaskEdges, DocumentBoundariesOnChunkEdges) {
  auto comm = world_ring();
  const int P = comm->size();
  engine::AttentionConfig c = edge_config(P);
  const std::int64_t S = c.seq_total;
  // Boundaries one and three edges in, and one token either side, for every edge in use (a
  // one-token document among them); alone, and under a window reaching one token into the
  // previous piece. Grouped by (boundaries, window): the reference is computed once per group.
  using Key = std::pair<std::vector<std::int64_t>, std::int64_t>;
  std::map<Key, std::vector<std::pair<rfa_layout_t, Sweep>>> by_mask;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE, RFA_LAYOUT_BALANCED})
    for (const Sweep& s : strategies(P)) {
      const std::int64_t edge = edge_of(layout, S, s.layout_ranks);
      for (std::int64_t d = -1; d <= 1; ++d) {
        std::vector<std::int64_t> bounds = {0};
        for (std::int64_t b : {edge + d, 3 * edge + d, 3 * edge + d + 1})
          if (b > bounds.back() && b < S) bounds.push_back(b);
        bounds.push_back(S);
        for (std::int64_t window : {std::int64_t(0), edge + 1}) by_mask[{bounds, window}].push_back({layout, s});
      }
    }
  Failures failures;
  int configurations = 0;
  for (const auto& [key, runs] : by_mask) {
    c.doc_bounds = key.first;
    c.window = key.second;
    for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE}) {
      c.mask = mask;
      for (const auto& [layout, sweep] : runs) {
        c.layout = layout;
        failures.check<float>(run_strategy<float>(*comm, c, sweep.choice, 37), describe(c, sweep.choice, P));
        ++configurations;
      }
    }
  }
  failures.expect_none(configurations);
}

// The host kernels' tiles inside one ring step: 200 rows a rank (contiguous blocks of 200,
// zigzag chunks of 100), so a step's block spans query tiles of up to 192 rows and key tiles of
// 96 (forward; the backward's the other way round), with windows and document boundaries 95-97
// and 191-193 tokens in: a tile edge on either side of the mask's. The ring over fp32.
TEST(MaskEdges, KernelTileEdgesInsideOneStep) {
  auto comm = world_ring();
  const int P = comm->size();
  engine::AttentionConfig c = edge_config(P);
  c.seq_total = 200 * P;
  c.heads = c.kv_heads = 1;
  const engine::StrategyChoice ring{engine::StrategyKind::ring, 0, 1};
  Failures failures;
  int configurations = 0;
  for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE}) {
    c.mask = mask;
    for (std::int64_t window : {0, 95, 96, 97, 191, 192, 193})
      for (int documents = 0; documents < 2; ++documents) {
        c.window = window;
        c.doc_bounds.clear();
        if (documents) {  // in every block: boundaries 95 and 192 tokens in, one a window may cross
          for (std::int64_t b = 0; b < c.seq_total; b += 200)
            c.doc_bounds.insert(c.doc_bounds.end(), {b, b + 95, b + 192});
          c.doc_bounds.push_back(c.seq_total);
        }
        for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG}) {
          c.layout = layout;
          failures.check<float>(run_strategy<float>(*comm, c, ring, 41), describe(c, ring, P));
          ++configurations;
        }
      }
  }
  failures.expect_none(configurations);
}

// The shortest sequences a layout takes: one token a rank (S = P: contiguous, stripe) and two
// (S = 2P: contiguous, stripe and the zigzag's one-token chunks), so that travelling blocks,
// the Ulysses transposes, the needed-only pieces and the hybrid's groups hold one or two rows;
// windows of 1 and 2, one-token documents, every strategy.
TEST(MaskEdges, OneAndTwoTokensARank) {
  auto comm = world_ring();
  const int P = comm->size();
  engine::AttentionConfig c = edge_config(P);
  Failures failures;
  int configurations = 0;
  for (std::int64_t per_rank : {1, 2}) {
    c.seq_total = per_rank * P;
    const std::int64_t S = c.seq_total;
    std::vector<std::int64_t> one_token = {0};
    for (std::int64_t b = 1; b <= S; ++b) one_token.push_back(b);
    const std::vector<std::vector<std::int64_t>> document_sets = {{}, one_token, {0, 1, S}};
    for (const std::vector<std::int64_t>& docs : document_sets)
      for (std::int64_t window : {0, 1, 2}) {
        c.doc_bounds = docs;
        c.window = window;
        for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE}) {
          c.mask = mask;
          for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_STRIPE, RFA_LAYOUT_ZIGZAG}) {
            if (layout == RFA_LAYOUT_ZIGZAG && per_rank == 1) continue;  // its chunks are S / 2P tokens
            c.layout = layout;
            for (const Sweep& s : strategies(P)) {
              // One-token documents and windows leave rows with one visible key, whose dQ and dK
              // vanish in exact arithmetic and are fp32 noise (see the random sweep below).
              failures.check<float>(run_strategy<float>(*comm, c, s.choice, 43), describe(c, s.choice, P), 4.0);
              ++configurations;
            }
          }
        }
      }
  }
  failures.expect_none(configurations);
}

/// The seed of the random sweep: RFA_TEST_SEED when set (to rerun a failure), else fixed.
std::uint64_t sweep_seed() {
  const char* s = std::getenv("RFA_TEST_SEED");
  return s != nullptr && *s != '\0' ? std::strtoull(s, nullptr, 10) : 20261128;
}

// Random masks: a window (none, short, around an edge, longer than S, the longest int64 holds), random documents
// (empty ones, one-token ones, boundaries anywhere; one list, or one per batch entry), causal or
// not, on a random layout,
// strategy, dtype and K/V head count, with S a random multiple of 2P. Every rank draws the
// same configurations from the same seed.
TEST(MaskEdges, RandomMasksMatchTheReference) {
  auto comm = world_ring();
  const int P = comm->size();
  // Every other configuration on a ring whose positions are not the MPI ranks (neighbours'
  // positions swapped in pairs), where a send meant for a position reaching the rank of that
  // number, or a rank's shard taken by its MPI rank, fails.
  const int swapped_position = (world_rank() ^ 1) < P ? (world_rank() ^ 1) : world_rank();
  auto permuted = comm::make_mpi_communicator(MPI_COMM_WORLD, swapped_position);
  const std::uint64_t seed = sweep_seed();
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::vector<Sweep> all = strategies(P);
  Failures failures;
  const int kConfigurations = 24;
  for (int i = 0; i < kConfigurations; ++i) {
    engine::AttentionConfig c;
    c.layout = std::array<rfa_layout_t, 4>{RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE,
                                           RFA_LAYOUT_BALANCED}[uniform(0, 3)];
    c.seq_total = c.layout == RFA_LAYOUT_BALANCED ? 8 * P * uniform(1, 4) : 2 * P * uniform(1, 16);
    const std::int64_t S = c.seq_total;
    c.mask = uniform(0, 1) ? RFA_MASK_CAUSAL : RFA_MASK_NONE;
    const Sweep& sweep = all[std::size_t(uniform(0, std::int64_t(all.size()) - 1))];
    c.batch = uniform(1, 2);
    c.heads = P * uniform(1, 2);
    // K/V heads: a divisor of the heads (MHA, GQA, MQA).
    std::vector<std::int64_t> divisors;
    for (std::int64_t h = 1; h <= c.heads; ++h)
      if (c.heads % h == 0) divisors.push_back(h);
    c.kv_heads = divisors[std::size_t(uniform(0, std::int64_t(divisors.size()) - 1))];
    c.head_dim = 8 * uniform(1, 3);
    c.dtype = uniform(0, 3) == 0 ? RFA_DTYPE_BFLOAT16 : RFA_DTYPE_FLOAT32;
    const std::int64_t edge = edge_of(c.layout, S, sweep.layout_ranks);
    switch (uniform(0, 5)) {
      case 0: c.window = 0; break;
      case 1: c.window = uniform(1, 4); break;
      case 2: c.window = std::max<std::int64_t>(1, uniform(0, sweep.layout_ranks) * edge + uniform(-2, 2)); break;
      case 3: c.window = uniform(1, S); break;
      case 4: c.window = S + uniform(0, 8); break;
      default: c.window = std::numeric_limits<std::int64_t>::max(); break;  // the longest a caller may give
    }
    // Documents: none, one list, or (with two entries) one list per entry, an entry's list
    // sometimes empty (one document).
    auto random_documents = [&] {
      std::vector<std::int64_t> b = {0};
      const std::int64_t cuts = uniform(1, 6);
      std::vector<std::int64_t> inner;
      for (std::int64_t j = 0; j < cuts; ++j) inner.push_back(uniform(0, S));
      std::sort(inner.begin(), inner.end());
      b.insert(b.end(), inner.begin(), inner.end());
      b.push_back(S);
      return b;
    };
    const std::int64_t documents = uniform(0, 2);
    if (documents == 1) c.doc_bounds = random_documents();
    if (documents == 2 && c.batch == 2) {
      std::vector<std::vector<std::int64_t>> lists(2);
      for (std::vector<std::int64_t>& list : lists)
        if (uniform(0, 3) > 0) list = random_documents();
      const reference::DocumentLists packed = reference::pack_document_lists(lists);
      c.doc_bounds = packed.bounds;
      c.doc_offsets = packed.offsets;
    }
    comm::Communicator& ring = i % 2 == 1 ? *permuted : *comm;
    const std::string what = "seed " + std::to_string(seed) + " #" + std::to_string(i) + ": " +
                             describe(c, sweep.choice, P) + (i % 2 == 1 ? " positions swapped in pairs" : "");
    // Windows of a few tokens and one-token documents leave rows whose dQ and dK vanish in exact
    // arithmetic (one visible key: dP - D = 0) and are fp32 cancellation noise here, a few 1e-7
    // against the error's floor of 1e-2: the gradients get 4 times the usual fp32 tolerance. A
    // key missed or added at an edge is off by far more (1e-3 and up at these lengths).
    if (c.dtype == RFA_DTYPE_FLOAT32)
      failures.check<float>(run_strategy<float>(ring, c, sweep.choice, seed + i), what, 4.0);
    else
      failures.check<bf16_t>(run_strategy<bf16_t>(ring, c, sweep.choice, seed + i), what);
  }
  failures.expect_none(kConfigurations);
}

}  // namespace
}  // namespace test
}  // namespace rfa
