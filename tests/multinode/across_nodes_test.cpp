// SPDX-License-Identifier: BSD-3-Clause
// rfa across "nodes" (scripts/multinode/nodes.sh: network namespaces, TCP between them, shared
// memory inside one): the ring order that the host names give, the hybrid's groups inside a node,
// the automatic strategy measuring its plans by default, and forward and backward of every
// strategy against the float64 reference, on each rank's shard.
// Run by tests/multinode/CMakeLists.txt as N nodes x R ranks with the ranks placed round robin
// over the nodes (--map-by node), so that MPI_COMM_WORLD's order crosses a link at every step and
// only the topology order can keep a node's ranks together.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "capi_reference.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

int nodes() {
  const char* n = std::getenv("RFA_MULTINODE_NODES");
  return n ? std::atoi(n) : 1;
}

int ranks_per_node() {
  const char* r = std::getenv("RFA_MULTINODE_RANKS_PER_NODE");
  return r ? std::atoi(r) : world_size();
}

std::string my_host() {
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  return name;
}

/// Every rank's host name, indexed by ring position on the context.
std::vector<std::string> hosts_by_position(rfa_context_t ctx) {
  int position = -1;
  EXPECT_EQ(rfa_context_get_position(ctx, &position), RFA_SUCCESS);
  char mine[64] = {0};
  std::snprintf(mine, sizeof mine, "%s", my_host().c_str());
  std::vector<char> all(64 * static_cast<std::size_t>(world_size()));
  std::vector<int> positions(static_cast<std::size_t>(world_size()));
  MPI_Allgather(mine, 64, MPI_CHAR, all.data(), 64, MPI_CHAR, MPI_COMM_WORLD);
  MPI_Allgather(&position, 1, MPI_INT, positions.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<std::string> by_position(static_cast<std::size_t>(world_size()));
  for (int r = 0; r < world_size(); ++r)
    by_position.at(std::size_t(positions[std::size_t(r)])) = &all[64 * std::size_t(r)];
  return by_position;
}

/// Ring steps (position p to p+1, the last back to the first) that cross from one node to another.
int inter_node_hops(const std::vector<std::string>& hosts) {
  int hops = 0;
  for (std::size_t p = 0; p < hosts.size(); ++p) hops += hosts[p] != hosts[(p + 1) % hosts.size()];
  return hops;
}

rfa_context_t small_context(rfa_ring_order_t order, rfa_strategy_t strategy = RFA_STRATEGY_RING, int32_t degree = 0) {
  rfa_options_t o;
  rfa_options_init(&o);
  o.ring_order = order;
  o.seq_total = 8 * world_size();
  o.heads = 8;
  o.head_dim = 8;
  o.strategy = strategy;
  o.ulysses_degree = degree;
  rfa_context_t ctx = nullptr;
  EXPECT_EQ(rfa_context_create(MPI_COMM_WORLD, &o, &ctx), RFA_SUCCESS) << rfa_get_last_error_message();
  return ctx;
}

TEST(AcrossNodes, TopologyOrderCrossesEachLinkOnce) {
  const int N = nodes();
  rfa_context_t topo = small_context(RFA_RING_ORDER_TOPOLOGY);
  ASSERT_NE(topo, nullptr);
  const auto hosts = hosts_by_position(topo);
  if (world_rank() == 0) {
    std::printf("  ring order (topology):");
    for (std::size_t p = 0; p < hosts.size(); ++p) std::printf(" %zu:%s", p, hosts[p].c_str());
    std::printf("; inter-node hops %d over %d node(s)\n", inter_node_hops(hosts), N);
  }
  // Each node's ranks sit next to each other: the ring leaves a node once per node.
  EXPECT_EQ(inter_node_hops(hosts), N > 1 ? N : 0);
  EXPECT_EQ(rfa_context_destroy(topo), RFA_SUCCESS);

  // World order, as placed round robin: every step crosses a link (the test means something).
  rfa_context_t identity = small_context(RFA_RING_ORDER_IDENTITY);
  ASSERT_NE(identity, nullptr);
  const auto world_hosts = hosts_by_position(identity);
  if (world_rank() == 0) std::printf("  identity order: inter-node hops %d\n", inter_node_hops(world_hosts));
  if (N > 1 && ranks_per_node() > 1) {
    EXPECT_EQ(inter_node_hops(world_hosts), world_size());
  }
  EXPECT_EQ(rfa_context_destroy(identity), RFA_SUCCESS);
}

TEST(AcrossNodes, HybridUlyssesGroupsStayInsideANode) {
  const int R = ranks_per_node();
  if (R < 2 || nodes() < 2) GTEST_SKIP() << "needs 2 or more ranks on each of 2 or more nodes";
  // The hybrid's Ulysses groups are runs of `degree` consecutive ring positions
  // (docs/strategies.md): with the topology order and a degree dividing the ranks per node, each
  // group is one node's ranks, and the all-to-all stays off the links.
  rfa_context_t ctx = small_context(RFA_RING_ORDER_TOPOLOGY, RFA_STRATEGY_HYBRID, R);
  ASSERT_NE(ctx, nullptr);
  const auto hosts = hosts_by_position(ctx);
  for (std::size_t g = 0; g < hosts.size(); g += std::size_t(R))
    for (std::size_t p = g; p < g + std::size_t(R); ++p)
      EXPECT_EQ(hosts[p], hosts[g]) << "ring position " << p << " is in the Ulysses group of position " << g;
  EXPECT_EQ(rfa_context_destroy(ctx), RFA_SUCCESS);
}

TEST(AcrossNodes, TheAutomaticStrategyMeasuresAcrossNodesByDefault) {
  if (nodes() < 2) GTEST_SKIP() << "needs 2 or more nodes";
  ASSERT_EQ(std::getenv("RFA_PLAN_MEASURE"), nullptr) << "the default is under test";
  // Unmasked, the ring's layouts are predicted alike: the model has plans within 15% to time.
  rfa_options_t o;
  ASSERT_RFA_OK(rfa_options_init(&o));
  o.mask = RFA_MASK_NONE;
  o.seq_total = 8 * world_size();
  o.heads = 8;
  o.head_dim = 8;
  o.strategy = RFA_STRATEGY_AUTO;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  char plan[2048] = {0};
  ASSERT_RFA_OK(rfa_context_get_plan(ctx, plan, sizeof plan));
  const std::string text = plan;
  if (world_rank() == 0) std::printf("  %s\n", text.c_str());
  EXPECT_NE(text.find(": measured "), std::string::npos) << text;
  EXPECT_NE(text.find("RFA_PLAN_MEASURE unset: the default where the ranks span " + std::to_string(nodes()) + " hosts"),
            std::string::npos)
      << text;
  EXPECT_EQ(rfa_context_destroy(ctx), RFA_SUCCESS);
}

struct Case {
  const char* name;
  rfa_strategy_t strategy;
  rfa_layout_t layout;
  rfa_mask_t mask;
  rfa_dtype_t dtype;
  bool window;
  bool documents;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

class AcrossNodesAttention : public ::testing::TestWithParam<Case> {};

TEST_P(AcrossNodesAttention, MatchesFloat64Reference) {
  const Case c = GetParam();
  const int P = world_size();
  // H = 8 divides every P up to 8 (Ulysses); 2 K/V heads (GQA); S splits over 2P zigzag halves.
  const int64_t B = 1, H = 8, Hkv = 2, D = 16, S = 2 * P * 6;
  const int32_t degree = c.strategy == RFA_STRATEGY_HYBRID ? std::max(2, ranks_per_node()) : 0;
  if (degree > 0 && (P % degree != 0 || H % degree != 0)) GTEST_SKIP() << "no hybrid grid of degree " << degree;
  rfa_options_t o;
  ASSERT_RFA_OK(rfa_options_init(&o));
  o.layout = c.layout;
  o.mask = c.mask;
  o.dtype = c.dtype;
  o.ring_order = RFA_RING_ORDER_TOPOLOGY;
  o.batch = B;
  o.seq_total = S;
  o.heads = H;
  o.kv_heads = Hkv;
  o.head_dim = D;
  o.strategy = c.strategy;
  o.ulysses_degree = degree;
  // A window ending one token past a rank's share: ring steps near its edge run, farther ones skip.
  if (c.window) o.window = S / P + 1;
  const std::vector<int64_t> bounds = {0, 1, S / 3, S - 2, S};
  if (c.documents) {
    o.doc_boundaries = bounds.data();
    o.doc_boundary_count = int64_t(bounds.size());
  }
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  std::vector<int64_t> positions(static_cast<std::size_t>(L));
  ASSERT_RFA_OK(rfa_context_get_local_positions(ctx, positions.data(), L));

  const ReferenceRun ref(o, c.documents ? bounds : std::vector<int64_t>(), 31);

  LocalShards shards(o, L);
  auto& [lq, lk, lv, ldo, lout, ldq, ldk, ldv] = shards;
  ASSERT_RFA_OK(shards.scatter(ctx, ref, o));
  lout.poison();
  ldq.poison();
  ldk.poison();
  ldv.poison();
  std::vector<float> lse(std::size_t(B * H * L), std::numeric_limits<float>::quiet_NaN());
  ASSERT_RFA_OK(rfa_forward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), lse.data()));
  ASSERT_RFA_OK(rfa_backward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), ldo.data(), lse.data(), ldq.data(),
                             ldk.data(), ldv.data()));
  const double tol = c.dtype == RFA_DTYPE_FLOAT32 ? 2e-6 : 8e-3, gtol = 4 * tol;
  double lse_err = 0.0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      const double expected = ref.lse[std::size_t(h * S + positions[std::size_t(i)])];
      const double got = lse[std::size_t(h * L + i)];
      // A row that sees no key (outside every document) has lse -inf on both sides.
      const double err = std::isinf(expected) && got == expected ? 0.0 : std::fabs(got - expected);
      lse_err = std::isnan(err) ? INFINITY : std::max(lse_err, err);
    }
  const double out_err = max_error_bshd(lout, ref.out, positions, B, S, H, D);
  const double dq_err = max_error_bshd(ldq, ref.dq, positions, B, S, H, D);
  const double dk_err = max_error_bshd(ldk, ref.dk, positions, B, S, Hkv, D);
  const double dv_err = max_error_bshd(ldv, ref.dv, positions, B, S, Hkv, D);
  EXPECT_LE(out_err, tol);
  EXPECT_LE(lse_err, 2e-6);
  EXPECT_LE(dq_err, gtol);
  EXPECT_LE(dk_err, gtol);
  EXPECT_LE(dv_err, gtol);
  if (world_rank() == 0)
    std::printf("  %s: P=%d max |error| out %.1e lse %.1e dq %.1e dk %.1e dv %.1e\n", c.name, P, out_err, lse_err,
                dq_err, dk_err, dv_err);
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

const Case kCases[] = {
    {"ring_contiguous_causal_fp32", RFA_STRATEGY_RING, RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32, false,
     false},
    {"ring_zigzag_causal_bf16", RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, false,
     false},
    {"ring_stripe_causal_fp32", RFA_STRATEGY_RING, RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32, false, false},
    {"ring_zigzag_window_fp32", RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32, true, false},
    {"ring_contiguous_documents_bf16", RFA_STRATEGY_RING, RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16,
     false, true},
    {"ring_stripe_documents_causal_fp32", RFA_STRATEGY_RING, RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32,
     false, true},
    {"ulysses_zigzag_causal_fp32", RFA_STRATEGY_ULYSSES, RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32, false,
     false},
    {"allgather_contiguous_documents_bf16", RFA_STRATEGY_ALLGATHER, RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL,
     RFA_DTYPE_BFLOAT16, false, true},
    {"hybrid_zigzag_window_fp32", RFA_STRATEGY_HYBRID, RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32, true,
     false},
    {"hybrid_stripe_causal_bf16", RFA_STRATEGY_HYBRID, RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, false,
     false},
    // The plan measured across the nodes (the default there), then run.
    {"auto_unmasked_fp32", RFA_STRATEGY_AUTO, RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_FLOAT32, false, false},
};

INSTANTIATE_TEST_SUITE_P(Strategies, AcrossNodesAttention, ::testing::ValuesIn(kCases), case_name);

}  // namespace
