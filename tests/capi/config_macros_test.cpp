// SPDX-License-Identifier: BSD-3-Clause
// The installed rfa_config.h macros mean what a user reads into them: RFA_HAVE_CUDA is 1
// exactly when librfa runs CUDA contexts, and the narrower macros are consistent with it.
#include <gtest/gtest.h>

#include <utility>

#include "capi_test_support.hpp"
#include "rfa/rfa_config.h"
#include "rfa/rfa_mpi.h"
#if RFA_HAVE_CUDA
#include "cuda_device_check.hpp"
#endif

namespace {

using namespace rfa_capi_test;

// A CUDA context the CUDA engine supports (bf16, head_dim 64): refused only for lack of CUDA.
rfa_options_t supported_cuda_options() {
  rfa_options_t o;
  rfa_options_init(&o);
  o.device = RFA_DEVICE_CUDA;
  o.dtype = RFA_DTYPE_BFLOAT16;
  o.layout = RFA_LAYOUT_CONTIGUOUS;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.seq_total = 8 * world_size();
  o.heads = 2;
  o.kv_heads = 2;
  o.head_dim = 64;
  return o;
}

// Every head dim the CUDA kernels take (32, 64, 128, 192, 256, and 192 with a value head dim of
// 128): a context where the build runs CUDA (skipped only without a device, and failed then
// under RFA_TEST_REQUIRE_DEVICE=1), refused for the build alone (never for the head dims) where
// it does not.
TEST(ConfigMacros, HaveCudaMeansCudaContextsWork) {
#if RFA_HAVE_CUDA
  RFA_TEST_NEEDS_DEVICE(rfa_test::why_no_cuda_device());
#endif
  const std::pair<int64_t, int64_t> dims[] = {{32, 0}, {64, 0}, {128, 0}, {192, 0}, {256, 0}, {192, 128}};
  for (const auto& [head_dim, value_dim] : dims) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", value_head_dim " + std::to_string(value_dim));
    rfa_options_t o = supported_cuda_options();
    o.head_dim = head_dim;
    o.value_head_dim = value_dim;
    rfa_context_t ctx = nullptr;
    const rfa_result_t rc = rfa_context_create(MPI_COMM_WORLD, &o, &ctx);
#if RFA_HAVE_CUDA
    EXPECT_EQ(rc, RFA_SUCCESS) << rfa_get_last_error_message();
    if (rc == RFA_SUCCESS) EXPECT_EQ(rfa_context_destroy(ctx), RFA_SUCCESS);
#else
    EXPECT_EQ(rc, RFA_ERROR_UNSUPPORTED) << "RFA_HAVE_CUDA is 0, yet a CUDA context was not refused: "
                                         << rfa_get_last_error_message();
    EXPECT_NE(std::string(rfa_get_last_error_message()).find("CUDA-enabled Kokkos"), std::string::npos)
        << rfa_get_last_error_message();
    EXPECT_EQ(ctx, nullptr);
    if (rc == RFA_SUCCESS) rfa_context_destroy(ctx);
#endif
  }
}

TEST(ConfigMacros, NarrowerMacrosAgree) {
  // The engine on CUDA runs the CUDA kernels; NCCL is a CUDA transport; rfa_mpi.h needs MPI.
  EXPECT_TRUE(!RFA_HAVE_CUDA || RFA_HAVE_CUDA_KERNELS);
  EXPECT_TRUE(!RFA_HAVE_NCCL || RFA_HAVE_CUDA_KERNELS);
  EXPECT_EQ(RFA_HAVE_MPI, 1);  // this test runs under MPI through rfa_mpi.h
  for (int v : {RFA_HAVE_CUDA, RFA_HAVE_CUDA_KERNELS, RFA_HAVE_NCCL, RFA_HAVE_MPI, RFA_HAVE_HWLOC, RFA_HAVE_FORTRAN})
    EXPECT_TRUE(v == 0 || v == 1);
}

}  // namespace
