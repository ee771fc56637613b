// SPDX-License-Identifier: BSD-3-Clause
// The dK/dV partials around the ring (engine/travelling_gradients.hpp), driven as the ring
// backward drives them, with contributions whose sums are exact: every block's home gradient
// must end as the sum of what each rank that held the block contributed, once each, whether a
// step's contribution went into the partial itself (the first two steps), into a buffer of its
// own (zeroed and added to, or written over without zeroing, as rfa's CUDA kernels do:
// kStoresKeyGradients), or was held by the backend until the partial arrived (a backend with
// kHoldsKeyGradients, as cuDNN's: here the host's, holding on the steps the case says), and
// with ring steps jumped over.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/travelling_gradients.hpp"
#include "mpi_test_support.hpp"

namespace rfa {
namespace test {
namespace {

constexpr std::int64_t kBatch = 2, kSeq = 5, kKvHeads = 3, kDim = 4, kValueDim = 6;

/// What rank `me` contributes to the dK (dV: `value`) of block `owner`: integers, so that every
/// sum in fp32 is exact, different for each pair of ranks and each element.
float contribution(int me, int owner, std::int64_t element, bool value) {
  return float((me + 1) * 64 + (owner + 1) * (value ? 3 : 1) + (element % 7) * 1024);
}

void fill_contribution(kernels::Tensor4<float> t, int me, int owner, bool value) {
  for (std::int64_t i = 0; i < std::int64_t(t.size()); ++i) t.data()[i] = contribution(me, owner, i, value);
}

void add_contribution(kernels::Tensor4<float> t, int me, int owner, bool value) {
  for (std::int64_t i = 0; i < std::int64_t(t.size()); ++i) t.data()[i] += contribution(me, owner, i, value);
}

/// The host's blocks, holding a step's contribution where `holds` says, as a backend with
/// kHoldsKeyGradients does (CudnnBlockCompute): in a buffer of its own until the partial is in.
class HoldingCompute : public engine::HostBlockCompute {
 public:
  static constexpr bool kHoldsKeyGradients = true;
  HoldingCompute()
      : held_dk_("held_dk", kBatch, kSeq, kKvHeads, kDim), held_dv_("held_dv", kBatch, kSeq, kKvHeads, kValueDim) {}

  /// The backward of block `owner` on rank `me`, its dK/dV held.
  void backward_holding(int me, int owner) {
    ASSERT_FALSE(holding_) << "a held contribution was never added";
    fill_contribution(held_dk_, me, owner, false);
    fill_contribution(held_dv_, me, owner, true);
    holding_ = true;
  }
  void add_held_key_gradients(kernels::Tensor4<float> dk, kernels::Tensor4<float> dv) {
    ASSERT_TRUE(holding_) << "nothing held to add";
    add(dk, held_dk_);
    add(dv, held_dv_);
    holding_ = false;
  }
  bool holding() const { return holding_; }

 private:
  kernels::Tensor4<float> held_dk_, held_dv_;
  bool holding_ = false;
};

/// How a backend puts a step's contribution where the partials ask: added to the buffer it is
/// given (zeroed where the contribution goes apart), written over it (not zeroed), or held until
/// the partial arrives.
enum class Put { added, written_over, held };

/// One backward pass of the partials over `steps`: rank me's step s computes block me - s; step
/// i (index into steps) puts its contribution as put(i) says (held only where the partial is
/// arriving, added otherwise). Returns this rank's home dK and dV.
std::pair<kernels::Tensor4<float>, kernels::Tensor4<float>> run_pass(const std::vector<int>& steps,
                                                                     const std::function<Put(std::size_t)>& put) {
  auto comm = comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank());
  const int P = comm->size(), me = comm->rank();
  engine::AttentionConfig c;
  c.batch = kBatch;
  c.kv_heads = c.heads = kKvHeads;
  c.head_dim = kDim;
  c.value_dim = kValueDim;
  HoldingCompute blocks;
  engine::Workspace<Kokkos::HostSpace> ws;
  kernels::Tensor4<float> dk_home("dk_home", kBatch, kSeq, kKvHeads, kDim);
  kernels::Tensor4<float> dv_home("dv_home", kBatch, kSeq, kKvHeads, kValueDim);
  // Whatever the caller's memory held: the pass zeroes it.
  Kokkos::deep_copy(dk_home, 7.0f);
  Kokkos::deep_copy(dv_home, -3.0f);
  engine::TravellingGradients<HoldingCompute> grads(blocks, ws, *comm, c, kSeq, dk_home, dv_home, true, steps);
  grads.zero();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const int owner = (me - steps[i] + P) % P;
    grads.begin(i);
    if (grads.arriving() && put(i) == Put::held) {
      grads.hold_in_backend();
      blocks.backward_holding(me, owner);
    } else if (put(i) == Put::written_over) {
      const auto [dk_into, dv_into] = grads.contribution_written_over();
      fill_contribution(dk_into, me, owner, false);
      fill_contribution(dv_into, me, owner, true);
    } else {
      const auto [dk_into, dv_into] = grads.contribution();
      add_contribution(dk_into, me, owner, false);  // a backward accumulates
      add_contribution(dv_into, me, owner, true);
    }
    grads.wait_arrival();
    grads.add_contribution();
    EXPECT_FALSE(blocks.holding()) << "step " << i << "'s held contribution was not added";
    grads.send_on();
  }
  grads.wait_arrival();
  grads.add_home();
  return {dk_home, dv_home};
}

struct Case {
  const char* name;
  std::function<Put(std::size_t)> put;
};

void check_pass(const std::vector<int>& steps, const Case& held) {
  const int P = world_size(), me = world_rank();
  const auto [dk, dv] = run_pass(steps, held.put);
  for (int value = 0; value < 2; ++value) {
    const kernels::Tensor4<float>& got = value ? dv : dk;
    int wrong = 0;
    for (std::int64_t e = 0; e < std::int64_t(got.size()); ++e) {
      double expected = 0;
      for (int s : steps) expected += contribution((me + s) % P, me, e, value != 0);
      if (got.data()[e] != expected && ++wrong <= 3)
        ADD_FAILURE() << held.name << ", " << (value ? "dV" : "dK") << " element " << e << ": " << got.data()[e]
                      << ", expected " << expected;
    }
    EXPECT_EQ(wrong, 0) << held.name << (value ? ": dV" : ": dK");
  }
}

const Case kCases[] = {
    {"every step added", [](std::size_t) { return Put::added; }},
    {"every step written over", [](std::size_t) { return Put::written_over; }},
    {"every arriving step held", [](std::size_t) { return Put::held; }},
    {"every other step held", [](std::size_t i) { return i % 2 == 0 ? Put::held : Put::added; }},
    {"held, written over and added in turn", [](std::size_t i) { return Put(i % 3); }},
    {"the third step alone held", [](std::size_t i) { return i == 2 ? Put::held : Put::written_over; }},
};

TEST(TravellingGradients, EveryStepSumsEachContributionOnce) {
  std::vector<int> steps;
  for (int s = 0; s < world_size(); ++s) steps.push_back(s);
  for (const Case& c : kCases) check_pass(steps, c);
}

TEST(TravellingGradients, StepsJumpedOverSumTheStepsTaken) {
  const int P = world_size();
  if (P < 3) GTEST_SKIP() << "a step to jump over needs 3 ranks";
  // Step 1 jumped over (the partial starts at step 2), and from 5 ranks the one before last.
  std::vector<int> steps = {0};
  for (int s = 2; s < P; ++s)
    if (s != P - 2 || P < 5) steps.push_back(s);
  for (const Case& c : kCases) check_pass(steps, c);
}

}  // namespace
}  // namespace test
}  // namespace rfa
