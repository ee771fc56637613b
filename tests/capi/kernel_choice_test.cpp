// SPDX-License-Identifier: BSD-3-Clause
// options.cuda_kernels and RFA_CUDA_KERNELS, RFA_CUDA_KERNEL_PATH, and options.deterministic,
// through the C API on any machine: what a context reports it runs, the refusals (cuDNN or the
// Hopper forward on a host context, cuDNN where this build or machine cannot run it, a
// malformed value, ranks that ask differently) on every rank with the reason. The CUDA
// contexts' runs on both kernel choices are capi_cuda_test's, on a GPU.
#include <gtest/gtest.h>

#include <mpi.h>

#include <string>

#include "capi_test_support.hpp"
#include "rfa/rfa_config.h"
#include "rfa/rfa_mpi.h"
#include "scoped_env.hpp"

namespace {

using namespace rfa_capi_test;
using rfa::test::ScopedEnv;

rfa_options_t options() { return small_problem(RFA_LAYOUT_ZIGZAG, 16); }

rfa_options_t created_options(const rfa_options_t& o) {
  rfa_context_t ctx = nullptr;
  rfa_options_t got;
  rfa_options_init(&got);
  EXPECT_EQ(rfa_context_create(MPI_COMM_WORLD, &o, &ctx), RFA_SUCCESS) << rfa_get_last_error_message();
  if (ctx) {
    EXPECT_EQ(rfa_context_get_options(ctx, &got), RFA_SUCCESS);
    EXPECT_EQ(rfa_context_destroy(ctx), RFA_SUCCESS) << rfa_get_last_error_message();
  }
  return got;
}

TEST(KernelChoice, AHostContextReportsRfasKernels) {
  for (rfa_cuda_kernels_t asked : {RFA_CUDA_KERNELS_DEFAULT, RFA_CUDA_KERNELS_AUTO, RFA_CUDA_KERNELS_RFA}) {
    rfa_options_t o = options();
    o.cuda_kernels = asked;
    EXPECT_EQ(int(created_options(o).cuda_kernels), int(RFA_CUDA_KERNELS_RFA)) << "asked for " << int(asked);
  }
}

TEST(KernelChoice, CudnnOnAHostContextIsRefusedOnEveryRank) {
  rfa_options_t o = options();
  o.cuda_kernels = RFA_CUDA_KERNELS_CUDNN;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "CUDA contexts only");
  EXPECT_EQ(ctx, nullptr);
}

TEST(KernelChoice, TheEnvironmentAsksWhenTheOptionIsLeftAtItsDefault) {
  rfa_options_t o = options();
  {
    ScopedEnv asked("RFA_CUDA_KERNELS", "cudnn");  // on a host context: refused as above
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "CUDA contexts only");
  }
  {
    ScopedEnv asked("RFA_CUDA_KERNELS", "rfa");
    EXPECT_EQ(int(created_options(o).cuda_kernels), int(RFA_CUDA_KERNELS_RFA));
  }
  {
    ScopedEnv bad("RFA_CUDA_KERNELS", "fastest");
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                     "RFA_CUDA_KERNELS is 'fastest'", "auto, rfa or cudnn");
  }
  o.cuda_kernels = rfa_cuda_kernels_t(9);
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "options.cuda_kernels is 9");
}

// A CUDA context asking for cuDNN where this build cannot run it fails at creation on every rank,
// with the reason; asking for auto takes rfa's kernels there. (Where the engine has CUDA and
// cuDNN loads, capi_cuda_test runs both choices on a GPU.)
TEST(KernelChoice, CudnnWhereItCannotRunIsRefusedWithTheReason) {
  if (RFA_HAVE_CUDA) GTEST_SKIP() << "this build's engine runs on CUDA: capi_cuda_test covers it on a GPU";
  rfa_options_t o = options();
  o.device = RFA_DEVICE_CUDA;
  o.dtype = RFA_DTYPE_BFLOAT16;
  o.head_dim = 64;
  o.cuda_kernels = RFA_CUDA_KERNELS_CUDNN;
  rfa_context_t ctx = nullptr;
  // Without a CUDA engine the device itself is refused first, naming what is missing.
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "CUDA");
  EXPECT_EQ(ctx, nullptr);
}

TEST(KernelChoice, TheForwardPathIsCheckedOnEveryContext) {
  const rfa_options_t o = options();
  for (const char* fine : {"auto", "sm80"}) {
    ScopedEnv asked("RFA_CUDA_KERNEL_PATH", fine);
    EXPECT_EQ(int(created_options(o).cuda_kernels), int(RFA_CUDA_KERNELS_RFA)) << fine;
  }
  rfa_context_t ctx = nullptr;
  {
    ScopedEnv asked("RFA_CUDA_KERNEL_PATH", "sm90");
    EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "kernel path sm90",
                     "CUDA contexts only");
  }
  {
    ScopedEnv bad("RFA_CUDA_KERNEL_PATH", "sm100");
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                     "RFA_CUDA_KERNEL_PATH is 'sm100'", "auto, sm80 or sm90");
  }
  EXPECT_EQ(ctx, nullptr);
}

TEST(KernelChoice, RanksAskingForDifferentForwardPathsFailTogether) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv asked("RFA_CUDA_KERNEL_PATH", rank == 0 ? "sm80" : "auto");
  const rfa_options_t o = options();
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "CUDA kernel path");
  EXPECT_EQ(ctx, nullptr);
}

TEST(KernelChoice, DeterministicIsReportedAsZeroOrOne) {
  rfa_options_t o = options();
  o.deterministic = 7;
  EXPECT_EQ(created_options(o).deterministic, 1);
  o.deterministic = -1;  // Fortran's .true. as an integer in some compilers, C's ~0
  EXPECT_EQ(created_options(o).deterministic, 1);
  o.deterministic = 0;
  EXPECT_EQ(created_options(o).deterministic, 0);
}

}  // namespace
