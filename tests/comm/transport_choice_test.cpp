// SPDX-License-Identifier: BSD-3-Clause
// Which transport a CUDA context gets (src/comm/transport.hpp): the option, RFA_TRANSPORT
// overriding it, what a build without NCCL must refuse, and the message for two ranks on one
// GPU under NCCL. Pure functions: no GPU, no MPI.
#include "comm/transport.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace rfa::comm {
namespace {

class TransportEnv : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("RFA_TRANSPORT"); }
  void TearDown() override { unsetenv("RFA_TRANSPORT"); }
};

TEST_F(TransportEnv, AutomaticIsNcclWhenBuiltElseMpi) {
  EXPECT_EQ(resolve_transport(TransportChoice::automatic, true), TransportChoice::nccl);
  EXPECT_EQ(resolve_transport(TransportChoice::automatic, false), TransportChoice::mpi);
  EXPECT_EQ(resolve_transport(TransportChoice::mpi, true), TransportChoice::mpi);
}

TEST_F(TransportEnv, EnvironmentOverridesTheOption) {
  setenv("RFA_TRANSPORT", "mpi", 1);
  EXPECT_EQ(resolve_transport(TransportChoice::nccl, true), TransportChoice::mpi);
  setenv("RFA_TRANSPORT", "nccl", 1);
  EXPECT_EQ(resolve_transport(TransportChoice::mpi, true), TransportChoice::nccl);
  setenv("RFA_TRANSPORT", "", 1);  // empty: as if unset
  EXPECT_EQ(resolve_transport(TransportChoice::mpi, true), TransportChoice::mpi);
}

TEST_F(TransportEnv, BadValuesAndMissingNcclAreClearErrors) {
  setenv("RFA_TRANSPORT", "NCCL", 1);
  try {
    resolve_transport(TransportChoice::automatic, true);
    FAIL() << "RFA_TRANSPORT=NCCL was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("'nccl' or 'mpi'"), std::string::npos) << e.what();
  }
  unsetenv("RFA_TRANSPORT");
  try {
    resolve_transport(TransportChoice::nccl, false);
    FAIL() << "NCCL was chosen in a build without it";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("RFA_TRANSPORT=mpi"), std::string::npos) << e.what();
  }
}

TEST(SharedGpu, FoundOnlyForTheSameGpuOfTheSameHost) {
  const std::vector<GpuPlacement> apart = {{"n1", "0000:3B:00.0"}, {"n1", "0000:5E:00.0"}, {"n2", "0000:3B:00.0"}};
  EXPECT_FALSE(find_shared_gpu(apart).found());
  const std::vector<GpuPlacement> unknown = {{"n1", ""}, {"n1", ""}};  // no device: not a pair
  EXPECT_FALSE(find_shared_gpu(unknown).found());
  const std::vector<GpuPlacement> shared = {{"n1", "0000:3B:00.0"}, {"n2", "0000:3B:00.0"}, {"n1", "0000:3B:00.0"}};
  const SharedGpu pair = find_shared_gpu(shared);
  ASSERT_TRUE(pair.found());
  EXPECT_EQ(pair.first, 0);
  EXPECT_EQ(pair.second, 2);
  const std::string message = shared_gpu_message(shared, pair);
  for (const char* part : {"ranks 0 and 2", "0000:3B:00.0", "n1", "RFA_TRANSPORT=mpi"})
    EXPECT_NE(message.find(part), std::string::npos) << message;
}

}  // namespace
}  // namespace rfa::comm
