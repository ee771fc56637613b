// SPDX-License-Identifier: BSD-3-Clause
// Ring order changes which rank holds which position, never the answer: with ranks pretending
// to live on two hosts (the test-only RFA_TEST_HOSTNAME), topology order differs from identity
// order, and the gathered fp32 results must be bitwise identical.
#include <cstdlib>

#include "layout/distributed_gather.hpp"
#include "ring_case.hpp"
#include "topology/choose_ring_order.hpp"

namespace rfa {
namespace test {
namespace {

struct Gathered {
  std::vector<float> out, lse, dq, dk, dv;
};

Gathered run_in_order(rfa_ring_order_t policy) {
  const auto order = topology::choose_ring_order(MPI_COMM_WORLD, policy);
  auto ring = comm::make_mpi_communicator(MPI_COMM_WORLD, order.position);
  engine::AttentionConfig cfg;
  cfg.layout = RFA_LAYOUT_ZIGZAG;
  cfg.mask = RFA_MASK_CAUSAL;
  cfg.dtype = RFA_DTYPE_FLOAT32;
  cfg.batch = 1;
  cfg.seq_total = 96;
  cfg.heads = 2;
  cfg.kv_heads = 1;
  cfg.head_dim = 16;
  const std::int64_t S = 96, H = 2, HKV = 1, D = 16;
  std::mt19937_64 rng(7);
  GlobalTensor<float> q(S * H * D, rng, 2.0), k(S * HKV * D, rng, 2.0), v(S * HKV * D, rng, 1.0),
      dout(S * H * D, rng, 1.0);
  engine::RingAttention attn(*ring, cfg);
  const PositionMap rows = attn.local_positions();
  const std::int64_t L = attn.local_seq();
  auto q_l = shard(q.stored, S, 1, H, D, rows), k_l = shard(k.stored, S, 1, HKV, D, rows),
       v_l = shard(v.stored, S, 1, HKV, D, rows), dout_l = shard(dout.stored, S, 1, H, D, rows);
  Tensor4<float> out("out", 1, L, H, D), dq("dq", 1, L, H, D), dk("dk", 1, L, HKV, D), dv("dv", 1, L, HKV, D);
  Tensor3<float> lse("lse", 1, H, L);
  attn.forward(engine::HostForward<float>{q_l, k_l, v_l, out, lse});
  attn.backward(engine::HostBackward<float>{q_l, k_l, v_l, out, dout_l, lse, dq, dk, dv});

  Gathered g;
  g.out.resize(S * H * D);
  g.dq.resize(S * H * D);
  g.dk.resize(S * HKV * D);
  g.dv.resize(S * HKV * D);
  g.lse.resize(H * S);
  layout::allgather_bshd(*ring, cfg.layout, out.data(), layout::BshdDims{1, H, D}, g.out.data(), S);
  layout::allgather_bshd(*ring, cfg.layout, dq.data(), layout::BshdDims{1, H, D}, g.dq.data(), S);
  layout::allgather_bshd(*ring, cfg.layout, dk.data(), layout::BshdDims{1, HKV, D}, g.dk.data(), S);
  layout::allgather_bshd(*ring, cfg.layout, dv.data(), layout::BshdDims{1, HKV, D}, g.dv.data(), S);
  layout::allgather_bhs(*ring, cfg.layout, lse.data(), 1, H, g.lse.data(), S);
  return g;
}

TEST(RingOrder, TopologyOrderGivesBitwiseIdenticalResults) {
  // Even ranks on "node-a", odd ranks on "node-b": a cyclic placement that topology order
  // regroups (for P = 4: positions 0,1 go to ranks 0,2 and positions 2,3 to ranks 1,3).
  setenv("RFA_TEST_HOSTNAME", world_rank() % 2 == 0 ? "node-a" : "node-b", 1);
  const auto topo = topology::choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_TOPOLOGY);
  if (world_size() >= 4) {
    ASSERT_NE(topo.order, topology::identity_order(world_size())) << "the pretend hosts did not change the order";
  }
  const Gathered by_topology = run_in_order(RFA_RING_ORDER_TOPOLOGY);
  const Gathered by_identity = run_in_order(RFA_RING_ORDER_IDENTITY);
  unsetenv("RFA_TEST_HOSTNAME");
  EXPECT_EQ(by_topology.out, by_identity.out);
  EXPECT_EQ(by_topology.lse, by_identity.lse);
  EXPECT_EQ(by_topology.dq, by_identity.dq);
  EXPECT_EQ(by_topology.dk, by_identity.dk);
  EXPECT_EQ(by_topology.dv, by_identity.dv);
}

}  // namespace
}  // namespace test
}  // namespace rfa
