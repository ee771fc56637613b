// SPDX-License-Identifier: BSD-3-Clause
// RFA_HOST_AMX and RFA_HOST_BF16_DOT are read once, at a context's creation (under mpiexec -n
// 1-2): switched off after it, a bf16 context's forward and backward give bitwise what they gave
// before, while a context created with them off runs the portable kernels (other results, where
// the build and CPU have AVX512-BF16 products, a failure there if not: elsewhere the switches
// change nothing and the test skips). Switched on again, that second context keeps the portable
// kernels.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

/// A bf16 problem whose head dims the hardware products take (multiples of 32).
rfa_options_t bf16_options() {
  rfa_options_t o = variant_options(RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 24, 64);
  o.check_values = RFA_VALUE_CHECKS_OFF;
  return o;
}

/// A forward and a backward on `ctx`: out, lse, dq, dk and dv as bytes.
std::vector<unsigned char> run(rfa_context_t ctx, const rfa_options_t& o) {
  const auto L = std::size_t(o.seq_total / world_size());
  const auto qn = std::size_t(o.batch) * L * std::size_t(o.heads * o.head_dim);
  const auto kvn = std::size_t(o.batch) * L * std::size_t(o.kv_heads * o.head_dim);
  auto stored = [&](std::size_t n, unsigned seed) {
    Stored t(RFA_DTYPE_BFLOAT16, n);
    const std::vector<double> v = random_values(n, seed + 10u * unsigned(world_rank()));
    for (std::size_t i = 0; i < n; ++i) t.set(i, float(v[i]) * 2.0f);
    return t;
  };
  const Stored q = stored(qn, 1), k = stored(kvn, 2), v = stored(kvn, 3), dout = stored(qn, 4);
  Stored out(RFA_DTYPE_BFLOAT16, qn), dq(RFA_DTYPE_BFLOAT16, qn), dk(RFA_DTYPE_BFLOAT16, kvn),
      dv(RFA_DTYPE_BFLOAT16, kvn);
  std::vector<float> lse(std::size_t(o.batch * o.heads) * L);
  EXPECT_EQ(int(rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data())), int(RFA_SUCCESS))
      << rfa_get_last_error_message();
  EXPECT_EQ(int(rfa_backward(ctx, q.data(), k.data(), v.data(), out.data(), dout.data(), lse.data(), dq.data(),
                             dk.data(), dv.data())),
            int(RFA_SUCCESS))
      << rfa_get_last_error_message();
  std::vector<unsigned char> bytes;
  auto append = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    bytes.insert(bytes.end(), b, b + n);
  };
  append(out.data(), 2 * qn);
  append(lse.data(), 4 * lse.size());
  append(dq.data(), 2 * qn);
  append(dk.data(), 2 * kvn);
  append(dv.data(), 2 * kvn);
  return bytes;
}

void set_switches(const char* value) {
  for (const char* name : {"RFA_HOST_AMX", "RFA_HOST_BF16_DOT"}) {
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
}

TEST(HostBf16Switches, AreReadAtCreationOnly) {
  const rfa_options_t o = bf16_options();
  set_switches(nullptr);
  rfa_context_t hardware = nullptr, portable = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &hardware));
  const std::vector<unsigned char> first = run(hardware, o);
  set_switches("0");
  EXPECT_TRUE(run(hardware, o) == first) << "switches set after the creation changed the context's results";
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &portable));
  const std::vector<unsigned char> off = run(portable, o);
  set_switches(nullptr);
  EXPECT_TRUE(run(portable, o) == off) << "switches set after the creation changed the context's results";
  ASSERT_RFA_OK(rfa_context_destroy(portable));
  ASSERT_RFA_OK(rfa_context_destroy(hardware));
  int differs = off != first ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &differs, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  // Whether the switches must change something is the build's and the CPU's to say, not the
  // results': where both have AVX512-BF16 products, the same bytes mean the switches were
  // ignored (or the products never chosen), a failure. (AMX tiles come with AVX512-BF16.)
  bool bf16_products_here = false;
#if defined(__AVX512BF16__) && (defined(__GNUC__) || defined(__clang__))
  bf16_products_here = __builtin_cpu_supports("avx512bf16");
#endif
  if (bf16_products_here) {
    EXPECT_TRUE(differs) << "a context created with RFA_HOST_AMX=0 and RFA_HOST_BF16_DOT=0 gave the bytes of one "
                            "on this CPU's AVX512-BF16 products";
  } else if (!differs) {
    GTEST_SKIP() << "the switches change nothing here (no hardware bf16 products in this build or CPU)";
  }
}

}  // namespace
