// SPDX-License-Identifier: BSD-3-Clause
// The rules of the CUDA kernel choice that need no GPU (engine/cuda_kernel_choice.hpp): which
// strategies take an automatic choice of cuDNN, which pass of each kernel path runs on the
// Hopper kernels, and that a host context's automatic choices are rfa's sm_80 kernels on every
// rank. What a CUDA context chooses on a GPU is rfa_run's and the C API suite's on a device
// (docs/gpus.md).
#include "engine/cuda_kernel_choice.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

using engine::CudaKernels;
using engine::CudaPath;
using engine::KernelRequest;
using engine::StrategyKind;

TEST(KernelChoiceRules, AnAutomaticCudnnChoiceGivesWayToRfaForTheStrategiesThatComputeOnIt) {
  for (StrategyKind kind : {StrategyKind::allgather, StrategyKind::needed})
    EXPECT_EQ(engine::kernels_for_strategy(CudaKernels::cudnn, KernelRequest::automatic, kind), CudaKernels::rfa)
        << engine::strategy_name(kind);
  for (StrategyKind kind : {StrategyKind::ring, StrategyKind::ulysses, StrategyKind::hybrid})
    EXPECT_EQ(engine::kernels_for_strategy(CudaKernels::cudnn, KernelRequest::automatic, kind), CudaKernels::cudnn)
        << engine::strategy_name(kind);
}

TEST(KernelChoiceRules, AnExplicitChoiceStaysForTheStrategyToAcceptOrRefuse) {
  for (StrategyKind kind : {StrategyKind::ring, StrategyKind::ulysses, StrategyKind::allgather, StrategyKind::hybrid,
                            StrategyKind::needed}) {
    SCOPED_TRACE(engine::strategy_name(kind));
    EXPECT_EQ(engine::kernels_for_strategy(CudaKernels::cudnn, KernelRequest::cudnn, kind), CudaKernels::cudnn);
    EXPECT_EQ(engine::kernels_for_strategy(CudaKernels::rfa, KernelRequest::rfa, kind), CudaKernels::rfa);
    EXPECT_EQ(engine::kernels_for_strategy(CudaKernels::rfa, KernelRequest::automatic, kind), CudaKernels::rfa);
  }
}

TEST(KernelChoiceRules, EachPathSaysWhichPassesRunOnTheHopperKernels) {
  EXPECT_FALSE(engine::hopper_pass(CudaPath::sm80, true));
  EXPECT_FALSE(engine::hopper_pass(CudaPath::sm80, false));
  EXPECT_TRUE(engine::hopper_pass(CudaPath::sm90, true));
  EXPECT_TRUE(engine::hopper_pass(CudaPath::sm90, false));
  EXPECT_TRUE(engine::hopper_pass(CudaPath::sm90_forward, true));
  EXPECT_FALSE(engine::hopper_pass(CudaPath::sm90_forward, false));
  EXPECT_STREQ(engine::cuda_path_name(CudaPath::sm90_forward), "sm90-forward");
}

TEST(KernelChoiceRules, AHostContextsAutomaticChoicesAreRfasSm80Kernels) {
  auto comm = world_ring();
  EXPECT_EQ(engine::choose_cuda_kernels(*comm, engine::Device::host, KernelRequest::automatic), CudaKernels::rfa);
  EXPECT_EQ(engine::choose_cuda_path(*comm, engine::Device::host, engine::PathRequest::automatic), CudaPath::sm80);
}

}  // namespace
}  // namespace test
}  // namespace rfa
