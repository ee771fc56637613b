// SPDX-License-Identifier: BSD-3-Clause
// Every strategy on a CUDA device through the engine's interface (AttentionStrategy's device
// passes), ranks sharing one GPU over the MPI transport (staged or CUDA-aware): the results
// against the float64 reference of the whole sequence (strategy_case.hpp's problems: layouts,
// GQA/MQA, a window, packed documents), and the per-rank memory formula (docs/memory.md): what a
// device pass allocates, seen through Kokkos' allocation hooks as on the host
// (strategy_memory_test.cpp), equals workspace_bytes(); each strategy object there is fresh, so
// its device cache allocates every buffer of the pass once. The block kernels are pinned by
// RFA_CUDA_KERNELS (rfa, the default here, or cudnn) and RFA_CUDA_KERNEL_PATH (sm80, the
// default here, or sm90), resolved on every rank as a context resolves them, so a kernel
// choice asked for and unavailable fails every test rather than testing another. Beside them,
// the order of an engine's calls across streams (device/stream_order.hpp). Without a CUDA
// device every test skips, saying why.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "allocation_log.hpp"
#include "comm/device_transport.hpp"
#include "cuda_device_check.hpp"
#include "device/stream_order.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/cuda_kernel_choice.hpp"
#include "layout/sequence_layout.hpp"
#include "mpi_test_support.hpp"
#include "strategy_case.hpp"
#include "strategy_in_space.hpp"

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

/// The device communicator (MPI: ranks share the GPU) and the strategy of the case: the hybrid
/// as 2 x 2 on four ranks, else one group. Skips on every rank without a device.
class DeviceStrategyTest : public ::testing::TestWithParam<DeviceCase> {
 protected:
  void SetUp() override {
    RFA_TEST_NEEDS_DEVICE(rfa_test::why_no_cuda_device());
    comm_ = comm::make_device_communicator(MPI_COMM_WORLD, world_rank(), comm::TransportChoice::mpi);
    const char* kernels = std::getenv("RFA_CUDA_KERNELS");
    const std::string asked = kernels == nullptr ? "rfa" : kernels;
    ASSERT_TRUE(asked == "rfa" || asked == "cudnn") << "RFA_CUDA_KERNELS is '" << asked << "': rfa or cudnn here";
    const char* path = std::getenv("RFA_CUDA_KERNEL_PATH");
    cuda_kernels_ = engine::choose_cuda_kernels(
        *comm_, engine::Device::cuda, asked == "cudnn" ? engine::KernelRequest::cudnn : engine::KernelRequest::rfa);
    cuda_path_ = engine::choose_cuda_path(
        *comm_, engine::Device::cuda, path == nullptr ? engine::PathRequest::sm80 : engine::PathRequest::environment);
    const int P = comm_->size();
    choice_.kind = GetParam().kind;
    if (choice_.kind == engine::StrategyKind::hybrid) choice_.ulysses_degree = P == 4 ? 2 : P;
  }
  /// The config of a case on the device, with the pinned kernels.
  engine::AttentionConfig device_config(engine::AttentionConfig cfg) const {
    cfg.device = engine::Device::cuda;
    cfg.cuda_kernels = cuda_kernels_;
    cfg.cuda_path = cuda_path_;
    return cfg;
  }
  /// The all-gather computes on rfa's kernels only: with cuDNN pinned it must be refused on
  /// every rank, and the case ends there.
  bool refused_allgather_on_cudnn(const engine::AttentionConfig& cfg) {
    if (choice_.kind != engine::StrategyKind::allgather || cfg.cuda_kernels != engine::CudaKernels::cudnn) return false;
    try {
      engine::make_strategy(*comm_, cfg, choice_);
      ADD_FAILURE() << "the all-gather accepted cuDNN kernels";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_UNSUPPORTED) << e.what();
    }
    return true;
  }
  std::unique_ptr<comm::Communicator> comm_;
  engine::StrategyChoice choice_;
  engine::CudaKernels cuda_kernels_ = engine::CudaKernels::rfa;
  engine::CudaPath cuda_path_ = engine::CudaPath::sm80;
};

class DeviceStrategyMemory : public DeviceStrategyTest {
 protected:
  template <class T>
  void check() {
    // GQA with kv_heads < P on 3 and 4 ranks; 12 heads divide among 1-4 ranks.
    engine::AttentionConfig cfg =
        device_config(strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2}, dtype_of<T>::value));
    cfg.head_dim = 64;
    if (refused_allgather_on_cudnn(cfg)) return;
    for (bool backward : {false, true}) {
      SCOPED_TRACE(backward ? "backward" : "forward");
      auto attn = engine::make_strategy(*comm_, cfg, choice_);  // fresh: its device cache is empty
      const std::int64_t L = attn->local_seq(), B = cfg.batch, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
      engine::DeviceTensor4<T> q("q", B, L, H, D), k("k", B, L, HKV, D), v("v", B, L, HKV, D), out("out", B, L, H, D),
          dout("dout", B, L, H, D), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, D);
      engine::DeviceTensor3<float> lse("lse", B, H, L);
      const AllocationLog log = log_allocations([&] {
        if (backward) {
          attn->backward(engine::BackwardTensors<T, Kokkos::CudaSpace>{q, k, v, out, dout, lse, dq, dk, dv});
        } else {
          attn->forward(engine::ForwardTensors<T, Kokkos::CudaSpace>{q, k, v, out, lse});
        }
        Kokkos::fence();
      });
      // One rank's ring forward is one block (a zigzag rank's two chunks continue each other),
      // written in place on every kernel choice: cuDNN computes it as one band over every row.
      if (!backward && choice_.kind == engine::StrategyKind::ring && comm_->size() == 1)
        EXPECT_EQ(attn->workspace_bytes(false), 0) << "one rank's forward keeps an fp32 accumulator";
      // A pass whose formula is 0 allocates nothing but cuDNN's scratch (the ring's forward on
      // one rank: no block travels, the kernels write the output directly); every other pass
      // shows the hooks work.
      if (attn->workspace_bytes(backward) > 0)
        EXPECT_GT(log.peak, 0) << "no allocation observed: are Kokkos tool hooks working?";
      if (cfg.cuda_kernels == engine::CudaKernels::rfa) {
        EXPECT_EQ(log.peak, attn->workspace_bytes(backward)) << "device allocations differ from the documented formula";
      } else {
        // cuDNN's plans ask for scratch of a size only cuDNN knows, beyond the formula.
        EXPECT_GE(log.peak, attn->workspace_bytes(backward)) << "device allocations below the documented formula";
        std::printf("[ cuDNN    ] %s: %lld bytes beyond the formula's %lld\n", backward ? "backward" : "forward",
                    static_cast<long long>(log.peak - attn->workspace_bytes(backward)),
                    static_cast<long long>(attn->workspace_bytes(backward)));
      }
      // What the pass reports having used: the formula, and on cuDNN its scratch too (all the
      // pass allocated).
      EXPECT_EQ(attn->last_workspace_bytes(),
                cfg.cuda_kernels == engine::CudaKernels::rfa ? attn->workspace_bytes(backward) : log.peak);
    }
  }
};

/// Tolerances of the CUDA kernels (relative to the largest reference value): they round the
/// probabilities to the storage dtype before the P V product, as FlashAttention does.
template <class T>
void expect_device_matches_reference(const AttentionErrors& e) {
  const double tol = std::is_same<T, bf16_t>::value ? 1.6e-2 : 3e-3;
  EXPECT_LE(e.out, tol) << "out";
  EXPECT_LE(e.lse, 1e-3) << "lse";
  EXPECT_LE(e.dq, 4 * tol) << "dq";
  EXPECT_LE(e.dk, 4 * tol) << "dk";
  EXPECT_LE(e.dv, 4 * tol) << "dv";
}

class DeviceStrategyResults : public DeviceStrategyTest {
 protected:
  template <class T>
  void check() {
    const std::vector<StrategySpec> specs = {{RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 2},
                                             {RFA_LAYOUT_STRIPE, RFA_MASK_NONE, 1},
                                             {RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, 12},
                                             {RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4, 15},
                                             {RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, 4, 0, packed_documents()}};
    for (const StrategySpec& spec : specs) {
      SCOPED_TRACE(std::string(layout::layout_name(spec.layout)) + ", kv_heads " + std::to_string(spec.kv_heads) +
                   (spec.window > 0 ? ", window" : "") + (spec.docs.empty() ? "" : ", documents"));
      engine::AttentionConfig cfg = device_config(strategy_config(spec, dtype_of<T>::value));
      cfg.head_dim = 64;
      if (refused_allgather_on_cudnn(cfg)) return;
      auto attn = engine::make_strategy(*comm_, cfg, choice_);
      PassesInSpace<Kokkos::CudaSpace> device(*attn);
      expect_device_matches_reference<T>(run_attention<T>(device, cfg, 8642));
      if (cfg.cuda_kernels == engine::CudaKernels::cudnn && spec.docs.empty()) {
        // Every step of these layouts is one cuDNN expresses: a visible step it did not compute
        // fell back to rfa's kernels without saying so.
        const engine::PassTimings& t = attn->last_timings();
        int mine[2] = {t.steps_on_cudnn, t.steps_computed}, total[2] = {0, 0};
        MPI_Allreduce(mine, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        EXPECT_GT(total[0], 0) << "cuDNN computed no step of the backward";
        EXPECT_EQ(total[0], total[1]) << "cuDNN declined " << total[1] - total[0] << " of the backward's " << total[1]
                                      << " visible steps (over all ranks), which rfa's kernels computed";
      }
    }
  }
};

/// Every strategy, in bf16 and fp16 (the CUDA kernels' dtypes).
std::vector<DeviceCase> device_cases() {
  std::vector<DeviceCase> cases;
  for (engine::StrategyKind kind : {engine::StrategyKind::ring, engine::StrategyKind::ulysses,
                                    engine::StrategyKind::allgather, engine::StrategyKind::hybrid})
    for (rfa_dtype_t dtype : {RFA_DTYPE_BFLOAT16, RFA_DTYPE_FLOAT16}) cases.push_back({kind, dtype});
  return cases;
}

/// f(T{}) with T the element type of a 16-bit dtype.
template <class F>
void with_dtype(rfa_dtype_t dtype, F&& f) {
  if (dtype == RFA_DTYPE_BFLOAT16) {
    f(bf16_t{});
  } else {
    f(fp16_t{});
  }
}

TEST_P(DeviceStrategyResults, MatchFloat64Reference) {
  with_dtype(GetParam().dtype, [this](auto tag) { this->template check<decltype(tag)>(); });
}
INSTANTIATE_TEST_SUITE_P(Strategies, DeviceStrategyResults, ::testing::ValuesIn(device_cases()), device_case_name);

TEST_P(DeviceStrategyMemory, MatchesFormula) {
  with_dtype(GetParam().dtype, [this](auto tag) { this->template check<decltype(tag)>(); });
}
INSTANTIATE_TEST_SUITE_P(Strategies, DeviceStrategyMemory, ::testing::ValuesIn(device_cases()), device_case_name);

// The order of a context's calls across streams (device/stream_order.hpp): after a call queued on
// stream A, a switch to stream B makes B wait for it. A's work here is a host function that
// holds A for half a second; an event recorded on B right after the switch is not reached
// before it ends (without the wait, B is empty and the event completes at once).
TEST(DeviceStreamOrder, ANewStreamWaitsForTheCallsQueuedOnTheLastOne) {
  RFA_TEST_NEEDS_DEVICE(rfa_test::why_no_cuda_device());
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t on_b = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&on_b, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(
                a, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(500)); }, nullptr),
            cudaSuccess);
  device::StreamOrder order;
  order.call_queued_on(a);
  order.switch_to(b);
  ASSERT_EQ(cudaEventRecord(on_b, b), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(on_b), cudaErrorNotReady) << "the new stream did not wait for the last call's work";
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(on_b), cudaSuccess);
  // A switch before any call waits for nothing.
  device::StreamOrder fresh;
  fresh.switch_to(a);
  ASSERT_EQ(cudaEventRecord(on_b, a), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  cudaEventDestroy(on_b);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

}  // namespace
}  // namespace test
}  // namespace rfa
