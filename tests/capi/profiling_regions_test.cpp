// SPDX-License-Identifier: BSD-3-Clause
// Kokkos profiling regions (core/profiling_region.hpp), seen as a tool sees them: a push and a pop
// callback registered with Kokkos record every region of a forward, a backward, an all-gather and
// a destroy. Each call is one region named for it; inside the ring's passes, one region per ring
// step with work, in order; every region is closed, innermost first.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <string>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

std::vector<std::string> pushed;  // every region opened, in order
std::vector<std::string> open_regions;
bool unbalanced = false;

void on_push(const char* name) {
  pushed.emplace_back(name);
  open_regions.emplace_back(name);
}

void on_pop() {
  if (open_regions.empty()) {
    unbalanced = true;
    return;
  }
  open_regions.pop_back();
}

TEST(ProfilingRegions, OnePerCallAndOnePerRingStep) {
  const int P = world_size();
  rfa_options_t o = small_problem(RFA_LAYOUT_CONTIGUOUS, 16);
  o.mask = RFA_MASK_NONE;  // every ring step has work
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  const std::size_t q_elems = std::size_t(L * o.heads * o.head_dim),
                    kv_elems = std::size_t(L * o.kv_heads * o.head_dim);
  std::vector<float> q(q_elems, 0.5f), k(kv_elems, 0.25f), v(kv_elems, 1.0f), out(q_elems), dout(q_elems, 1.0f),
      dq(q_elems), dk(kv_elems), dv(kv_elems), lse(std::size_t(L * o.heads)),
      gathered(std::size_t(o.seq_total * o.heads * o.head_dim));

  Kokkos::Tools::Experimental::set_push_region_callback(on_push);
  Kokkos::Tools::Experimental::set_pop_region_callback(on_pop);
  ASSERT_RFA_OK(rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data()));
  ASSERT_RFA_OK(rfa_backward(ctx, q.data(), k.data(), v.data(), out.data(), dout.data(), lse.data(), dq.data(),
                             dk.data(), dv.data()));
  ASSERT_RFA_OK(rfa_allgather_bshd(ctx, o.heads, out.data(), gathered.data()));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  Kokkos::Tools::Experimental::set_pop_region_callback(nullptr);

  std::vector<std::string> expected = {"rfa_forward"};
  for (int s = 0; s < P; ++s) expected.push_back("rfa ring forward step " + std::to_string(s));
  expected.push_back("rfa_backward");
  for (int s = 0; s < P; ++s) expected.push_back("rfa ring backward step " + std::to_string(s));
  expected.push_back("rfa_allgather_bshd");
  expected.push_back("rfa_context_destroy");
  EXPECT_EQ(pushed, expected);
  EXPECT_TRUE(open_regions.empty()) << open_regions.size() << " region(s) left open, the last " << open_regions.back();
  EXPECT_FALSE(unbalanced) << "a region was closed that was never opened";
}

}  // namespace
