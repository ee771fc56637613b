// SPDX-License-Identifier: BSD-3-Clause
// The ring engine against the float64 reference of the whole sequence: every layout, causal
// and not, every dtype, with and without GQA, on however many ranks mpiexec started.
#include "ring_case.hpp"

namespace rfa {
namespace test {
namespace {

struct RingSpec {
  rfa_layout_t layout;
  rfa_mask_t mask;
  std::int64_t kv_heads;
};

struct RingErrors {
  double out, lse, dq, dk, dv;
};

/// Runs forward and backward of `cfg` on `ring` and returns this rank's errors against the
/// float64 reference.
template <class T>
RingErrors run_ring(comm::Communicator& ring, const engine::RingConfig& cfg, std::uint64_t seed) {
  const std::int64_t S = cfg.seq_total, B = cfg.batch, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
  std::mt19937_64 rng(seed);
  GlobalTensor<T> q(B * S * H * D, rng, 2.0), k(B * S * HKV * D, rng, 2.0), v(B * S * HKV * D, rng, 1.0),
      dout(B * S * H * D, rng, 1.0);

  engine::RingAttention attn(ring, cfg);
  const PositionMap rows = attn.local_positions();
  const std::int64_t L = attn.local_seq();
  auto q_l = shard(q.stored, S, B, H, D, rows), k_l = shard(k.stored, S, B, HKV, D, rows),
       v_l = shard(v.stored, S, B, HKV, D, rows), dout_l = shard(dout.stored, S, B, H, D, rows);
  Tensor4<T> out("out", B, L, H, D), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, D);
  Tensor3<float> lse("lse", B, H, L);
  poison(out);
  poison(lse);
  poison(dq);
  poison(dk);
  poison(dv);
  attn.forward<T>(q_l, k_l, v_l, out, lse);
  attn.backward<T>(q_l, k_l, v_l, out, dout_l, lse, dq, dk, dv);

  reference::Problem prob;
  prob.batch = B;
  prob.seq_q = prob.seq_k = S;
  prob.heads = H;
  prob.kv_heads = HKV;
  prob.head_dim = D;
  prob.causal = cfg.mask == RFA_MASK_CAUSAL;
  std::vector<double> out_ref, lse_ref, dq_ref, dk_ref, dv_ref;
  reference::forward(prob, q.exact, k.exact, v.exact, out_ref, lse_ref);
  reference::backward(prob, q.exact, k.exact, v.exact, dout.exact, dq_ref, dk_ref, dv_ref);
  std::vector<double> lse_local(std::size_t(B * H * L));
  {
    std::vector<float> lse_ref32(lse_ref.begin(), lse_ref.end()), lse_loc32(lse_local.size());
    layout::scatter_bhs(lse_ref32.data(), S, B, H, rows, lse_loc32.data());
    lse_local.assign(lse_loc32.begin(), lse_loc32.end());
  }
  return RingErrors{relative_error(to_doubles(out), shard_of(out_ref, S, B, H, D, rows)),
                    relative_error(to_doubles(lse), lse_local),
                    relative_error(to_doubles(dq), shard_of(dq_ref, S, B, H, D, rows)),
                    relative_error(to_doubles(dk), shard_of(dk_ref, S, B, HKV, D, rows)),
                    relative_error(to_doubles(dv), shard_of(dv_ref, S, B, HKV, D, rows))};
}

engine::RingConfig config_for(const RingSpec& spec, rfa_dtype_t dtype) {
  engine::RingConfig cfg;
  cfg.layout = spec.layout;
  cfg.mask = spec.mask;
  cfg.dtype = dtype;
  cfg.batch = 2;
  cfg.seq_total = 120;  // divisible by 2P for P = 1..4 (zigzag), local lengths 120, 60, 40, 30
  cfg.heads = 4;
  cfg.kv_heads = spec.kv_heads;
  cfg.head_dim = 32;
  return cfg;
}

class RingAttentionTest : public ::testing::TestWithParam<RingSpec> {
 protected:
  template <class T>
  void check() {
    auto ring = world_ring();
    const auto cfg = config_for(GetParam(), dtype_of<T>::value);
    const RingErrors e = run_ring<T>(*ring, cfg, 1234);
    const double tol = tolerance<T>();
    EXPECT_LE(e.out, tol) << "out";
    EXPECT_LE(e.lse, 2e-5) << "lse";
    // Gradients see one more rounding (of out) than the output does.
    EXPECT_LE(e.dq, 2 * tol) << "dq";
    EXPECT_LE(e.dk, 2 * tol) << "dk";
    EXPECT_LE(e.dv, 2 * tol) << "dv";
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
  return specs;
}

INSTANTIATE_TEST_SUITE_P(Layouts, RingAttentionTest, ::testing::ValuesIn(ring_specs()), [](const auto& info) {
  const RingSpec& s = info.param;
  return std::string(layout::layout_name(s.layout)) + (s.mask == RFA_MASK_CAUSAL ? "_causal" : "_full") +
         (s.kv_heads == 4 ? "_mha" : "_gqa");
});

// The partials stay fp32 across ring steps, so splitting the sequence over more ranks must not
// make bf16 results worse: compare this run's error with the same problem on one rank.
TEST(RingPrecision, Bf16ErrorDoesNotGrowWithRanks) {
  const RingSpec spec{RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2};
  const auto cfg = config_for(spec, RFA_DTYPE_BFLOAT16);
  auto ring = world_ring();
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
