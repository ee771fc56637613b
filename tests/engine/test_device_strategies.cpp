// SPDX-License-Identifier: BSD-3-Clause
// Every strategy's per-rank memory formula on a CUDA device (docs/memory.md): what a device
// pass allocates, seen through Kokkos' allocation hooks as on the host (test_strategy_memory.cpp),
// equals workspace_bytes(). Ranks share one GPU over the MPI transport (staged or CUDA-aware);
// each strategy object is fresh, so its device cache allocates every buffer of the pass once.
// Results against float64 are the C API suite's (tests/capi/cuda_forward_backward_test.cpp).
// Without a CUDA device every test skips, saying why.
#include <gtest/gtest.h>

#include <string>

#include "allocation_log.hpp"
#include "comm/device_transport.hpp"
#include "cuda_device_check.hpp"
#include "engine/attention_strategy.hpp"
#include "mpi_test_support.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

struct DeviceCase {
  engine::StrategyKind kind;
  rfa_dtype_t dtype;
};

std::string device_case_name(const ::testing::TestParamInfo<DeviceCase>& info) {
  return std::string(engine::strategy_name(info.param.kind)) +
         (info.param.dtype == RFA_DTYPE_BFLOAT16 ? "_bf16" : "_fp16");
}

class DeviceStrategyMemory : public ::testing::TestWithParam<DeviceCase> {
 protected:
  template <class T>
  void check() {
    const std::string why = rfa_test::why_no_cuda_device();
    if (!why.empty()) GTEST_SKIP() << why << ": nothing to test";
    auto comm = comm::make_device_communicator(MPI_COMM_WORLD, world_rank(), comm::TransportChoice::mpi);
    const int P = comm->size();
    engine::StrategyChoice choice;
    choice.kind = GetParam().kind;
    if (choice.kind == engine::StrategyKind::hybrid) choice.ulysses_degree = P == 4 ? 2 : P;
    // GQA with kv_heads < P on 3 and 4 ranks; 12 heads divide among 1-4 ranks.
    engine::RingConfig cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2}, dtype_of<T>::value);
    cfg.device = engine::Device::cuda;
    cfg.head_dim = 64;
    for (bool backward : {false, true}) {
      SCOPED_TRACE(backward ? "backward" : "forward");
      auto attn = engine::make_strategy(*comm, cfg, choice);  // fresh: its device cache is empty
      const std::int64_t L = attn->local_seq(), B = cfg.batch, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
      engine::DeviceTensor4<T> q("q", B, L, H, D), k("k", B, L, HKV, D), v("v", B, L, HKV, D), out("out", B, L, H, D),
          dout("dout", B, L, H, D), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, D);
      engine::DeviceTensor3<float> lse("lse", B, H, L);
      const AllocationLog log = log_allocations([&] {
        if (backward) {
          attn->template backward_device<T>(q, k, v, out, dout, lse, dq, dk, dv);
        } else {
          attn->template forward_device<T>(q, k, v, out, lse);
        }
        Kokkos::fence();
      });
      EXPECT_GT(log.peak, 0) << "no allocation observed: are Kokkos tool hooks working?";
      EXPECT_EQ(log.peak, attn->workspace_bytes(backward)) << "device allocations differ from the documented formula";
      EXPECT_EQ(attn->last_workspace_bytes(), attn->workspace_bytes(backward));
    }
  }
};

TEST_P(DeviceStrategyMemory, MatchesFormula) {
  if (GetParam().dtype == RFA_DTYPE_BFLOAT16) {
    check<bf16_t>();
  } else {
    check<fp16_t>();
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, DeviceStrategyMemory,
                         ::testing::Values(DeviceCase{engine::StrategyKind::ring, RFA_DTYPE_BFLOAT16},
                                           DeviceCase{engine::StrategyKind::ulysses, RFA_DTYPE_BFLOAT16},
                                           DeviceCase{engine::StrategyKind::ulysses, RFA_DTYPE_FLOAT16},
                                           DeviceCase{engine::StrategyKind::allgather, RFA_DTYPE_BFLOAT16},
                                           DeviceCase{engine::StrategyKind::hybrid, RFA_DTYPE_BFLOAT16}),
                         device_case_name);

}  // namespace
}  // namespace test
}  // namespace rfa
