// SPDX-License-Identifier: BSD-3-Clause
// The machine the automatic strategy plans for (model/plan.hpp): the kernel rate of the device
// and dtype, scaled by the threads per rank on the host, cores shared where ranks outnumber
// them; the environment's figures over it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/plan.hpp"

namespace rfa::model {
namespace {

MachineModel host(rfa_dtype_t dtype, HostBf16 bf16, int threads = 1) {
  return planning_machine(engine::Device::host, dtype, PlanningHost{threads, bf16, 2});
}

/// One batch entry of `seq` tokens, causal, fp32, zigzag, `heads` query and K/V heads.
engine::AttentionConfig causal_fp32(std::int64_t seq, std::int64_t heads, std::int64_t head_dim) {
  engine::AttentionConfig c;
  c.layout = RFA_LAYOUT_ZIGZAG;
  c.mask = RFA_MASK_CAUSAL;
  c.dtype = RFA_DTYPE_FLOAT32;
  c.batch = 1;
  c.seq_total = seq;
  c.heads = heads;
  c.kv_heads = heads;
  c.head_dim = head_dim;
  return c;
}

TEST(PlanningMachine, HostRatesFollowTheKernelsThatRunTheDtype) {
  const MachineModel fp32 = host(RFA_DTYPE_FLOAT32, HostBf16::amx_tiles);
  // fp32 and fp16 run the portable kernels whatever bf16 hardware there is; so does bf16 without it.
  EXPECT_EQ(host(RFA_DTYPE_FLOAT16, HostBf16::amx_tiles).forward_flops_per_s, fp32.forward_flops_per_s);
  EXPECT_EQ(host(RFA_DTYPE_BFLOAT16, HostBf16::portable).backward_flops_per_s, fp32.backward_flops_per_s);
  const MachineModel dot = host(RFA_DTYPE_BFLOAT16, HostBf16::dot_products);
  const MachineModel amx = host(RFA_DTYPE_BFLOAT16, HostBf16::amx_tiles);
  EXPECT_GT(dot.forward_flops_per_s, 1.5 * fp32.forward_flops_per_s);
  EXPECT_GT(dot.backward_flops_per_s, 1.2 * fp32.backward_flops_per_s);
  EXPECT_GT(amx.forward_flops_per_s, 2.0 * dot.forward_flops_per_s);
  EXPECT_GT(amx.backward_flops_per_s, 1.5 * dot.backward_flops_per_s);
  // Threads per rank multiply the rate; the node's ranks are the caller's.
  EXPECT_EQ(host(RFA_DTYPE_BFLOAT16, HostBf16::dot_products, 4).forward_flops_per_s, 4 * dot.forward_flops_per_s);
  EXPECT_EQ(dot.ranks_per_node, 2);
}

TEST(PlanningMachine, DevicesPlanWithTheirOwnPresetAndTheEnvironmentOverridesIt) {
  const MachineModel bf16 = planning_machine(engine::Device::cuda, RFA_DTYPE_BFLOAT16, PlanningHost{});
  const MachineModel fp16 = planning_machine(engine::Device::cuda, RFA_DTYPE_FLOAT16, PlanningHost{});
  EXPECT_EQ(bf16.forward_flops_per_s, fp16.forward_flops_per_s);
  EXPECT_GT(bf16.forward_flops_per_s, 100 * host(RFA_DTYPE_BFLOAT16, HostBf16::amx_tiles).forward_flops_per_s);
  setenv("RFA_PLAN_KERNEL_RATE", "1000,800", 1);
  const MachineModel given = host(RFA_DTYPE_BFLOAT16, HostBf16::amx_tiles, 8);
  unsetenv("RFA_PLAN_KERNEL_RATE");
  EXPECT_EQ(given.forward_flops_per_s, 1000e9);
  EXPECT_EQ(given.backward_flops_per_s, 800e9);
  // RFA_PLAN_LINKS: GB/s and microseconds inside a node, then between nodes (all four differ).
  setenv("RFA_PLAN_LINKS", "0.5,100,0.25,200", 1);
  const MachineModel linked = host(RFA_DTYPE_FLOAT32, HostBf16::portable);
  unsetenv("RFA_PLAN_LINKS");
  EXPECT_DOUBLE_EQ(linked.intra_node.bytes_per_s, 0.5e9);
  EXPECT_DOUBLE_EQ(linked.intra_node.latency_s, 100e-6);
  EXPECT_DOUBLE_EQ(linked.inter_node.bytes_per_s, 0.25e9);
  EXPECT_DOUBLE_EQ(linked.inter_node.latency_s, 200e-6);
  EXPECT_EQ(linked.intra_node.cpu_seconds_per_byte, 0.0);
  // Six numbers: each link's CPU nanoseconds per byte after its latency.
  setenv("RFA_PLAN_LINKS", "0.5,100,1.5,0.25,200,2.5", 1);
  const MachineModel tcp = host(RFA_DTYPE_FLOAT32, HostBf16::portable);
  EXPECT_DOUBLE_EQ(tcp.intra_node.bytes_per_s, 0.5e9);
  EXPECT_DOUBLE_EQ(tcp.intra_node.latency_s, 100e-6);
  EXPECT_DOUBLE_EQ(tcp.intra_node.cpu_seconds_per_byte, 1.5e-9);
  EXPECT_DOUBLE_EQ(tcp.inter_node.bytes_per_s, 0.25e9);
  EXPECT_DOUBLE_EQ(tcp.inter_node.latency_s, 200e-6);
  EXPECT_DOUBLE_EQ(tcp.inter_node.cpu_seconds_per_byte, 2.5e-9);
  // A latency or a CPU cost may be 0 (shared memory, RDMA), in either form; a bandwidth may not.
  setenv("RFA_PLAN_LINKS", "8,0,0,0.25,0,0", 1);
  const MachineModel free = host(RFA_DTYPE_FLOAT32, HostBf16::portable);
  EXPECT_DOUBLE_EQ(free.intra_node.bytes_per_s, 8e9);
  EXPECT_EQ(free.intra_node.latency_s, 0.0);
  EXPECT_EQ(free.intra_node.cpu_seconds_per_byte, 0.0);
  EXPECT_DOUBLE_EQ(free.inter_node.bytes_per_s, 0.25e9);
  EXPECT_EQ(free.inter_node.latency_s, 0.0);
  EXPECT_EQ(free.inter_node.cpu_seconds_per_byte, 0.0);
  setenv("RFA_PLAN_LINKS", "8,0,0.25,0", 1);
  EXPECT_EQ(host(RFA_DTYPE_FLOAT32, HostBf16::portable).inter_node.latency_s, 0.0);
  for (const char* bad : {"0.5,100,1.5,0.25,200", "0.5,100,1,0.25,200,1,1", "0,100,1,0.25,200,1", "0.5,100,1,0,200,1",
                          "0,100,0.25,200", "0.5,100,0.25,-1", "0.5,100,-1,0.25,200,1", "0.5,100,1,0.25,200,inf"}) {
    setenv("RFA_PLAN_LINKS", bad, 1);
    try {
      host(RFA_DTYPE_FLOAT32, HostBf16::portable);
      ADD_FAILURE() << "RFA_PLAN_LINKS=" << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT) << bad;
      EXPECT_NE(std::string(e.what()).find(std::string("RFA_PLAN_LINKS is '") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
  setenv("RFA_PLAN_KERNEL_RATE", "1000,0", 1);
  EXPECT_THROW(host(RFA_DTYPE_FLOAT32, HostBf16::portable), Error);
  unsetenv("RFA_PLAN_KERNEL_RATE");
  unsetenv("RFA_PLAN_LINKS");
}

// Host ranks that outnumber their node's cores share them; enough cores, or a device, do not.
TEST(PlanningMachine, HostRanksShareTheCoresOfTheirNode) {
  auto planned = [](engine::Device device, double units) {
    return planning_machine(device, RFA_DTYPE_FLOAT32, PlanningHost{1, HostBf16::portable, 4, units});
  };
  EXPECT_EQ(planned(engine::Device::host, 2).compute_units_per_node, 2);
  EXPECT_EQ(planned(engine::Device::host, 4).compute_units_per_node, 0);
  EXPECT_EQ(planned(engine::Device::host, 64).compute_units_per_node, 0);
  EXPECT_EQ(planned(engine::Device::host, 0).compute_units_per_node, 0);
  EXPECT_EQ(planned(engine::Device::cuda, 2).compute_units_per_node, 0);
}

// The automatic choice weighs every hybrid grid, those whose groups cross nodes too (one rank
// per node: every group does); a grid across nodes pays its all-to-alls on the link between
// nodes, so a slower network costs it more than the grid whose groups are nodes (whose ring
// alone crosses the network).
TEST(RankPlans, OfferEveryHybridGridAndChargeGroupsAcrossNodesTheNetwork) {
  engine::AttentionConfig c = causal_fp32(4096, 8, 64);
  MachineModel one_per_node;
  one_per_node.ranks_per_node = 1;
  std::vector<int> degrees;
  for (const Plan& plan : rank_plans(c, 8, one_per_node, false))
    if (plan.choice.kind == engine::StrategyKind::hybrid && plan.layout == RFA_LAYOUT_ZIGZAG)
      degrees.push_back(plan.choice.ulysses_degree);
  std::sort(degrees.begin(), degrees.end());
  EXPECT_EQ(degrees, (std::vector<int>{2, 4}));
  EXPECT_TRUE(rank_plans(c, 8, one_per_node, true).size() == 3) << "ring only: its three layouts";

  const engine::StrategyChoice grid{engine::StrategyKind::hybrid, 4, 1};
  auto backward_seconds = [&](int ranks_per_node, double network_bytes_per_s) {
    MachineModel m;
    m.ranks_per_node = ranks_per_node;
    m.inter_node = Link{5e-6, network_bytes_per_s};
    return predict(c, grid, 8, m).backward.seconds;
  };
  EXPECT_GT(backward_seconds(1, 1e9), backward_seconds(1, 1e10));
  EXPECT_LT(backward_seconds(4, 1e9) - backward_seconds(4, 1e10), backward_seconds(1, 1e9) - backward_seconds(1, 1e10));
  EXPECT_LT(backward_seconds(4, 1e9), backward_seconds(1, 1e9));
}

// Skewed documents (short ones, then one long one): the ring's plans include the balanced
// layout, predicted faster than zigzag and contiguous (it evens the busiest rank's tiles) and
// within 1% of the best (stripe, also even, whose mixed tiles the model does not charge); the
// causal mask alone, which zigzag already evens, is not offered it.
TEST(RankPlans, OfferTheBalancedLayoutWhereTheMaskIsUneven) {
  engine::AttentionConfig c = causal_fp32(16384, 4, 128);
  const MachineModel m;
  auto seconds = [&]() {  // each layout's predicted forward + backward, -1 where not offered
    std::vector<double> s(4, -1.0);
    for (const Plan& plan : rank_plans(c, 4, m, true))
      s[std::size_t(plan.layout)] = plan.prediction.forward.seconds + plan.prediction.backward.seconds;
    return s;
  };
  EXPECT_EQ(seconds()[RFA_LAYOUT_BALANCED], -1.0);
  c.doc_bounds = {0};
  for (std::int64_t b = 64; b <= 4096; b += 64) c.doc_bounds.push_back(b);
  c.doc_bounds.push_back(c.seq_total);
  const std::vector<double> s = seconds();
  const double balanced = s[RFA_LAYOUT_BALANCED];
  ASSERT_GT(balanced, 0.0);
  EXPECT_LT(balanced, s[RFA_LAYOUT_ZIGZAG]);
  EXPECT_LT(balanced, s[RFA_LAYOUT_CONTIGUOUS]);
  EXPECT_LT(balanced, 1.01 * std::min({s[RFA_LAYOUT_ZIGZAG], s[RFA_LAYOUT_CONTIGUOUS], s[RFA_LAYOUT_STRIPE]}));
}

// The needed-only exchange is offered where a window, documents (two or more) or ranges are set
// (not under the causal mask alone). With a narrow window on the contiguous layout a rank's queries see only the
// last window - 1 rows of the rank upstream: those are the bytes it is predicted to send, and over
// a slow network it is the plan chosen, where the ring moves a whole block.
TEST(RankPlans, OfferTheNeededOnlyExchangeAndChooseItForAHaloOverASlowNetwork) {
  engine::AttentionConfig c = causal_fp32(16384, 4, 128);
  MachineModel m;
  m.ranks_per_node = 1;
  m.inter_node = Link{5e-6, 1e8};
  auto offered = [&] {
    for (const Plan& plan : rank_plans(c, 4, m, false))
      if (plan.choice.kind == engine::StrategyKind::needed) return true;
    return false;
  };
  EXPECT_FALSE(offered());
  // One document hides nothing; two are the fewest that hide keys.
  c.doc_bounds = {0, c.seq_total};
  EXPECT_FALSE(offered()) << "one document";
  c.doc_bounds = {0, c.seq_total / 2, c.seq_total};
  EXPECT_TRUE(offered()) << "two documents";
  c.doc_bounds.clear();
  c.window = 256;
  EXPECT_TRUE(offered());
  const Plan best = choose_plan(c, 4, m, false);
  EXPECT_EQ(best.choice.kind, engine::StrategyKind::needed) << best.name();
  EXPECT_EQ(best.layout, RFA_LAYOUT_CONTIGUOUS) << best.name();
  const double row = 4.0 * 2 * 128 * 4;  // a K and a V row of every head, fp32
  EXPECT_DOUBLE_EQ(best.prediction.forward.bytes_sent, 255 * row);
  EXPECT_DOUBLE_EQ(best.prediction.backward.bytes_sent, 2 * 255 * row);
  engine::AttentionConfig ring = c;
  ring.layout = RFA_LAYOUT_CONTIGUOUS;
  EXPECT_DOUBLE_EQ(predict(ring, {engine::StrategyKind::ring, 0, 1}, 4, m).forward.bytes_sent, 4096 * row);
}

TEST(PlanningMachine, ThisProcessKnowsItsBf16Products) {
  const HostBf16 here = host_bf16_here();
  EXPECT_TRUE(here == HostBf16::portable || here == HostBf16::dot_products || here == HostBf16::amx_tiles);
  setenv("RFA_HOST_AMX", "0", 1);
  setenv("RFA_HOST_BF16_DOT", "0", 1);
  EXPECT_EQ(host_bf16_here(), HostBf16::portable);  // the environment keeps bf16 on the portable kernels
  unsetenv("RFA_HOST_AMX");
  unsetenv("RFA_HOST_BF16_DOT");
}

}  // namespace
}  // namespace rfa::model
