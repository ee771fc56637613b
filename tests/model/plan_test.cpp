// SPDX-License-Identifier: BSD-3-Clause
// The machine the automatic strategy plans for (model/plan.hpp): the kernel rate of the device
// and dtype, scaled by the threads per rank on the host, cores shared where ranks outnumber
// them; the environment's figures over it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "model/plan.hpp"

namespace rfa::model {
namespace {

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

/// The machine planned for a problem of `dtype` (head dims 64) on `device`.
MachineModel planned_for(engine::Device device, rfa_dtype_t dtype, const PlanningHost& host) {
  engine::AttentionConfig c = causal_fp32(4096, 8, 64);
  c.device = device;
  c.dtype = dtype;
  return planning_machine(c, host);
}

MachineModel host(rfa_dtype_t dtype, HostBf16 bf16, int threads = 1) {
  return planned_for(engine::Device::host, dtype, PlanningHost{threads, bf16, 2});
}

/// Sets the planning variable `name` to `bad` and expects the planner to refuse it, naming both.
void expect_refused(const char* name, const char* bad) {
  setenv(name, bad, 1);
  try {
    host(RFA_DTYPE_FLOAT32, HostBf16::portable);
    ADD_FAILURE() << name << "=" << bad << " was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(e.what()).find(std::string(name) + " is '" + bad + "'"), std::string::npos) << e.what();
  }
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
  const MachineModel bf16 = planned_for(engine::Device::cuda, RFA_DTYPE_BFLOAT16, PlanningHost{});
  const MachineModel fp16 = planned_for(engine::Device::cuda, RFA_DTYPE_FLOAT16, PlanningHost{});
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
  EXPECT_EQ(tcp.inter_node.burst_bytes, 0.0);
  // Eight numbers: each link's burst in bytes after its CPU cost (a token bucket's).
  setenv("RFA_PLAN_LINKS", "0.5,100,1.5,2000,0.25,200,2.5,3000000", 1);
  const MachineModel shaped = host(RFA_DTYPE_FLOAT32, HostBf16::portable);
  EXPECT_DOUBLE_EQ(shaped.intra_node.cpu_seconds_per_byte, 1.5e-9);
  EXPECT_DOUBLE_EQ(shaped.intra_node.burst_bytes, 2000);
  EXPECT_DOUBLE_EQ(shaped.inter_node.bytes_per_s, 0.25e9);
  EXPECT_DOUBLE_EQ(shaped.inter_node.latency_s, 200e-6);
  EXPECT_DOUBLE_EQ(shaped.inter_node.cpu_seconds_per_byte, 2.5e-9);
  EXPECT_DOUBLE_EQ(shaped.inter_node.burst_bytes, 3e6);
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
  setenv("RFA_PLAN_LINKS", "8,0,0,5,0.25,0,0,0", 1);
  const MachineModel no_burst = host(RFA_DTYPE_FLOAT32, HostBf16::portable);
  EXPECT_EQ(no_burst.intra_node.burst_bytes, 5.0);
  EXPECT_EQ(no_burst.inter_node.burst_bytes, 0.0);
  for (const char* bad : {"0.5,100,1.5,0.25,200", "0.5,100,1,0.25,200,1,1", "0,100,1,0.25,200,1", "0.5,100,1,0,200,1",
                          "0,100,0.25,200", "0.5,100,0.25,-1", "0.5,100,-1,0.25,200,1", "0.5,100,1,0.25,200,inf",
                          "0.5,100,1,2000,0.25,200,1,-1", "0.5,100,1,2000,0,200,1,0", "0.5,100,1,2000,0.25,200,1,0,1",
                          // Figures no link has, which would make the model's predictions meaningless: a bandwidth
                          // below 1 kB/s or beyond 1 PB/s, a latency beyond 10 s, a CPU cost beyond 1 ms a byte, a
                          // burst beyond 1 PB (each just past its bound), in either place.
                          "1e-310,100,0.25,200", "0.5,100,9.9e-7,200", "1000001,0,0.25,0", "0.5,0,1e300,0",
                          "0.5,10000001,0.25,0", "0.5,0,0.25,1.00001e7", "0.5,0,1000001,0.25,0,0",
                          "0.5,0,0,0.25,0,1.000001e6", "0.5,0,0,1.000001e15,0.25,0,0,0", "0.5,0,0,0,0.25,0,0,2e15"}) {
    expect_refused("RFA_PLAN_LINKS", bad);
  }
  // Every bound is taken: 1 kB/s to 1 PB/s, up to 10 s, 1 ms a byte and 1 PB.
  setenv("RFA_PLAN_LINKS", "1e-6,1e7,1e6,1e15,1e6,0,0,0", 1);
  const MachineModel extremes = host(RFA_DTYPE_FLOAT32, HostBf16::portable);
  EXPECT_DOUBLE_EQ(extremes.intra_node.bytes_per_s, 1e3);
  EXPECT_DOUBLE_EQ(extremes.intra_node.latency_s, 10);
  EXPECT_DOUBLE_EQ(extremes.intra_node.cpu_seconds_per_byte, 1e-3);
  EXPECT_DOUBLE_EQ(extremes.intra_node.burst_bytes, 1e15);
  EXPECT_DOUBLE_EQ(extremes.inter_node.bytes_per_s, 1e15);
  // A kernel rate from 1 MFLOP/s to 1 EFLOP/s, both taken; 0, beyond either bound, or not finite refused.
  setenv("RFA_PLAN_KERNEL_RATE", "0.001,1e9", 1);
  const MachineModel rates = host(RFA_DTYPE_FLOAT32, HostBf16::portable);
  EXPECT_DOUBLE_EQ(rates.forward_flops_per_s, 1e6);
  EXPECT_DOUBLE_EQ(rates.backward_flops_per_s, 1e18);
  for (const char* bad : {"1000,0", "0.00099,100", "100,1.000001e9", "1e-310,100", "100,1e300", "nan,100", "100,inf"}) {
    expect_refused("RFA_PLAN_KERNEL_RATE", bad);
  }
  unsetenv("RFA_PLAN_KERNEL_RATE");
  unsetenv("RFA_PLAN_LINKS");
}

// Host ranks that outnumber their node's cores share them; enough cores, or a device, do not.
TEST(PlanningMachine, HostRanksShareTheCoresOfTheirNode) {
  auto planned = [](engine::Device device, double units) {
    return planned_for(device, RFA_DTYPE_FLOAT32, PlanningHost{1, HostBf16::portable, 4, units});
  };
  EXPECT_EQ(planned(engine::Device::host, 2).compute_units_per_node, 2);
  EXPECT_EQ(planned(engine::Device::host, 4).compute_units_per_node, 0);
  EXPECT_EQ(planned(engine::Device::host, 64).compute_units_per_node, 0);
  EXPECT_EQ(planned(engine::Device::host, 0).compute_units_per_node, 0);
  EXPECT_EQ(planned(engine::Device::cuda, 2).compute_units_per_node, 0);
}

// A host call's cost per row (the preset's FLOPs per value of a row's head dims at the rate
// planned with) grows with the head dims and shrinks with the rate and the threads; the bf16
// products' rows cost what the portable kernels' do. Cut tiles cost the portable kernels'
// calibrated figures. rfa's CUDA kernels have no cost per row and compute a cut tile whole.
TEST(PlanningMachine, HostCallsCostPerRowByTheirHeadDimsAtThePlannedRate) {
  const PlanningHost one{1, HostBf16::portable, 1};
  engine::AttentionConfig c = causal_fp32(4096, 8, 64);
  const MachineModel d64 = planning_machine(c, one);
  EXPECT_GT(d64.forward_row_seconds, 0.0);
  EXPECT_GT(d64.backward_row_seconds, d64.forward_row_seconds * d64.forward_flops_per_s / d64.backward_flops_per_s);
  c.head_dim = 128;
  EXPECT_DOUBLE_EQ(planning_machine(c, one).forward_row_seconds, 2 * d64.forward_row_seconds);
  c.value_dim = 64;  // d + dv = 192
  EXPECT_DOUBLE_EQ(planning_machine(c, one).backward_row_seconds, 1.5 * d64.backward_row_seconds);
  c = causal_fp32(4096, 8, 64);
  EXPECT_DOUBLE_EQ(planning_machine(c, PlanningHost{4, HostBf16::portable, 1}).forward_row_seconds,
                   d64.forward_row_seconds / 4);
  // A given rate moves the cost per row with it: half the rate, twice the seconds.
  const std::string half =
      std::to_string(d64.forward_flops_per_s / 2e9) + "," + std::to_string(d64.backward_flops_per_s / 2e9);
  setenv("RFA_PLAN_KERNEL_RATE", half.c_str(), 1);
  const MachineModel slower = planning_machine(c, one);
  unsetenv("RFA_PLAN_KERNEL_RATE");
  EXPECT_NEAR(slower.forward_row_seconds, 2 * d64.forward_row_seconds, 1e-6 * d64.forward_row_seconds);
  EXPECT_NEAR(slower.backward_row_seconds, 2 * d64.backward_row_seconds, 1e-6 * d64.backward_row_seconds);
  // bf16 on dot products or AMX tiles: faster scores, the same rows.
  c.dtype = RFA_DTYPE_BFLOAT16;
  for (HostBf16 bf16 : {HostBf16::dot_products, HostBf16::amx_tiles}) {
    const MachineModel m = planning_machine(c, PlanningHost{1, bf16, 1});
    EXPECT_GT(m.forward_flops_per_s, d64.forward_flops_per_s);
    EXPECT_DOUBLE_EQ(m.forward_row_seconds, d64.forward_row_seconds);
    EXPECT_DOUBLE_EQ(m.backward_row_seconds, d64.backward_row_seconds);
  }
  EXPECT_GT(d64.forward_masked_tile_cost, 0.0);
  EXPECT_GT(d64.forward_masked_visible_cost, 0.0);
  EXPECT_GT(d64.backward_masked_tile_cost, 0.0);
  EXPECT_GT(d64.backward_masked_visible_cost, 0.0);
  c.device = engine::Device::cuda;
  const MachineModel gpu = planning_machine(c, one);
  EXPECT_EQ(gpu.forward_row_seconds, 0.0);
  EXPECT_EQ(gpu.backward_row_seconds, 0.0);
  EXPECT_EQ(gpu.forward_masked_tile_cost, 1.0);
  EXPECT_EQ(gpu.forward_masked_visible_cost, 0.0);
}

// The automatic strategy on the model alone (RFA_PLAN_MEASURE=0) against what scale_check
// measured across 2, 4 and 8 "nodes" of one rank each (its first 15-round run in perf/RESULTS.md,
// "2026-12-03 (fifth session) — the host preset's cost per row and per cut tile", whose JSONs
// hold each case: S=8192, H=4, d=64, fp32, causal; the links, their TCP
// processing and the kernel rates as scale_check gives them to the library, the processing and
// the rates at each rank's share of the VM's 2 cores): the plan it takes is within 5% of the
// fastest measured: at 4 nodes Ulysses (591.7 ms), 12.7% faster than the zigzag ring (666.7
// ms), which a preset with no cost per row ranks first. The links as scale_check prints them
// (GB/s, us, CPU ns per byte over the rank's share of the cores), and the rates.
TEST(RankPlans, TheModelAloneTakesThePlanMeasuredFastestAcrossNodes) {
  struct Measured {
    int nodes;
    const char* links;                 // RFA_PLAN_LINKS: GB/s, us, CPU ns per byte, twice
    const char* rate;                  // RFA_PLAN_KERNEL_RATE
    std::map<std::string, double> ms;  // forward + backward, the slowest rank, medians of 15 rounds
  };
  const std::vector<Measured> runs = {
      {2,
       "0.139740,14.6,1.192,0.139740,14.6,1.192",
       "131.0,139.8",
       {{"ring, zigzag", 585.1},
        {"ring, contiguous", 787.6},
        {"ring, stripe", 591.8},
        {"ulysses, zigzag", 650.3},
        {"allgather, zigzag", 588.1}}},
      {4,
       "0.144067,60.3,1.978,0.144067,60.3,1.978",
       "65.15,71.15",
       {{"ring, zigzag", 666.7},
        {"ring, contiguous", 695.1},
        {"ring, stripe", 687.6},
        {"ulysses, zigzag", 591.7},
        {"allgather, zigzag", 652.0},
        {"hybrid 2 x 2, zigzag", 618.7}}},
      {8,
       "0.159710,424.8,4.389,0.159710,424.8,4.389",
       "32.225,35.175",
       {{"ring, zigzag", 869.5},
        {"ring, contiguous", 876.8},
        {"ring, stripe", 928.9},
        {"allgather, zigzag", 829.8},
        {"hybrid 2 x 4, zigzag", 690.0},
        {"hybrid 4 x 2, zigzag", 598.2}}},
  };
  for (const Measured& run : runs) {
    setenv("RFA_PLAN_LINKS", run.links, 1);
    setenv("RFA_PLAN_KERNEL_RATE", run.rate, 1);
    const std::vector<Plan> plans = automatic_plans(causal_fp32(8192, 4, 64), run.nodes, PlanningHost{});
    unsetenv("RFA_PLAN_LINKS");
    unsetenv("RFA_PLAN_KERNEL_RATE");
    // The check measured the plans on the zigzag layout and the ring on every layout.
    const auto taken = plans.begin();
    ASSERT_TRUE(run.ms.count(taken->name())) << run.nodes << " nodes: " << explain_plans(plans);
    const double best =
        std::min_element(run.ms.begin(), run.ms.end(), [](auto& a, auto& b) { return a.second < b.second; })->second;
    EXPECT_LE(run.ms.at(taken->name()), 1.05 * best) << run.nodes << " nodes: " << explain_plans(plans);
    // Each plan's prediction within 8% of its measurement (with no cost per row and a cut tile
    // at 1.6 / 1.3 whole tiles' scores the rings come out 10-16% fast at 4 and 8 nodes), but the
    // contiguous ring's where the nodes share the cores: its ranks' uneven work gives the busy
    // ones more than the even share the library plans with, which cannot see the sharing (1.34
    // there).
    for (const Plan& p : plans) {
      const auto m = run.ms.find(p.name());
      if (m == run.ms.end() || (p.name() == "ring, contiguous" && run.nodes > 2)) continue;
      const double predicted = 1e3 * (p.prediction.forward.seconds + p.prediction.backward.seconds);
      EXPECT_NEAR(predicted / m->second, 1.0, 0.08) << run.nodes << " nodes, " << p.name();
    }
  }
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
