// SPDX-License-Identifier: BSD-3-Clause
// allgather_bshd / allgather_bhs under mpiexec -n 1..4: every rank scatters its own shard of a
// global tensor all ranks can generate, and the gather must rebuild it bitwise on every rank.
#include "layout/distributed_gather.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "core/error.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa::layout {
namespace {

const rfa_layout_t kLayouts[] = {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE};

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, double>) {
      x = dist(rng);
    } else {
      x = from_float<T>(dist(rng));
    }
  }
  return v;
}

template <class T>
class DistributedGather : public ::testing::Test {};
using StorageTypes = ::testing::Types<float, double, bf16_t, fp16_t>;
TYPED_TEST_SUITE(DistributedGather, StorageTypes);

TYPED_TEST(DistributedGather, RebuildsTheGlobalTensorOnEveryRank) {
  using T = TypeParam;
  // Reversed positions: the gather must follow ring positions, not world ranks.
  int world_size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  comm::MpiCommunicator comm(MPI_COMM_WORLD, world_size - 1 - world_rank());
  const BshdDims dims{2, 3, 4};
  const std::int64_t s = 2 * comm.size() * 5;
  const std::size_t n = std::size_t(dims.batch * s * dims.heads * dims.head_dim);
  for (rfa_layout_t layout : kLayouts) {
    SCOPED_TRACE(layout_name(layout));
    const std::vector<T> global = random_values<T>(n, 17u + unsigned(layout));  // same on every rank
    const PositionMap mine = positions(layout, s, comm.size(), comm.rank());
    std::vector<T> local(std::size_t(dims.batch * mine.length() * dims.heads * dims.head_dim));
    scatter_bshd(global.data(), s, dims, mine, local.data());
    std::vector<T> rebuilt = random_values<T>(n, 5u);  // poison
    allgather_bshd(comm, layout, local.data(), dims, rebuilt.data(), s);
    EXPECT_EQ(std::memcmp(rebuilt.data(), global.data(), n * sizeof(T)), 0);
  }
}

TEST(DistributedGatherLse, RebuildsTheGlobalLseOnEveryRank) {
  comm::MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const std::int64_t batch = 3, heads = 2, s = 2 * comm.size() * 3;
  const std::size_t n = std::size_t(batch * heads * s);
  for (rfa_layout_t layout : kLayouts) {
    SCOPED_TRACE(layout_name(layout));
    const std::vector<float> global = random_values<float>(n, 23u + unsigned(layout));
    const PositionMap mine = positions(layout, s, comm.size(), comm.rank());
    std::vector<float> local(std::size_t(batch * heads * mine.length()));
    scatter_bhs(global.data(), s, batch, heads, mine, local.data());
    std::vector<float> rebuilt(n, -1.0f);
    allgather_bhs(comm, layout, local.data(), batch, heads, rebuilt.data(), s);
    EXPECT_EQ(std::memcmp(rebuilt.data(), global.data(), n * sizeof(float)), 0);
  }
}

TEST(DistributedGatherErrors, DisagreementAndBadShapesFailOnEveryRank) {
  comm::MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  std::vector<float> local(1024), global(1024 * 4);
  const BshdDims dims{1, 1, 2};
  if (comm.size() > 1) {
    // One rank believes in a longer sequence.
    const std::int64_t s = comm.rank() == 0 ? 4 * comm.size() : 2 * comm.size();
    try {
      allgather_bshd(comm, RFA_LAYOUT_CONTIGUOUS, local.data(), dims, global.data(), s);
      ADD_FAILURE() << "a disagreement on S was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_INVALID_USAGE);
      EXPECT_NE(std::string(e.what()).find("global sequence length differs"), std::string::npos) << e.what();
    }
  }
  // S = 2P + 1 is valid on no rank (all agree, all invalid): INVALID_ARGUMENT everywhere.
  try {
    allgather_bshd(comm, RFA_LAYOUT_ZIGZAG, local.data(), dims, global.data(), 2 * comm.size() + 1);
    ADD_FAILURE() << "an invalid S was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("multiple of 2 * P"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rfa::layout
