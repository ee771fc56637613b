// SPDX-License-Identifier: BSD-3-Clause
// node_local_rank() before MPI is initialized (this program never initializes it): the Slurm
// task's SLURM_LOCALID, 0 without one, and a clear error for a value that is not a local rank,
// an int (a larger number would be narrowed to another rank's).
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "collective/node_rank.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "scoped_env.hpp"

namespace rfa::collective {
namespace {

using rfa::test::ScopedEnv;

TEST(NodeLocalRank, BeforeMpiTakesSlurmsLocalId) {
  int initialized = 1;
  MPI_Initialized(&initialized);
  ASSERT_EQ(initialized, 0) << "this program must not initialize MPI";
  {
    ScopedEnv slurm(env_name(Env::slurm_localid), "3");
    EXPECT_EQ(node_local_rank(MPI_COMM_WORLD), 3);
  }
  {
    ScopedEnv slurm(env_name(Env::slurm_localid), "2147483647");
    EXPECT_EQ(node_local_rank(MPI_COMM_WORLD), 2147483647);
  }
  {
    ScopedEnv slurm(env_name(Env::slurm_localid), nullptr);
    EXPECT_EQ(node_local_rank(MPI_COMM_WORLD), 0);
  }
  {
    ScopedEnv slurm(env_name(Env::slurm_localid), "");
    EXPECT_EQ(node_local_rank(MPI_COMM_WORLD), 0);
  }
}

TEST(NodeLocalRank, RefusesWhatIsNotALocalRank) {
  for (const char* bad :
       {"-1", "2147483648", "4294967297", "99999999999999999999", "1x", "x", " 1 2", " 1", "+1", "1.0"}) {
    ScopedEnv slurm(env_name(Env::slurm_localid), bad);
    try {
      const int rank = node_local_rank(MPI_COMM_WORLD);
      ADD_FAILURE() << "SLURM_LOCALID='" << bad << "' taken as local rank " << rank;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("SLURM_LOCALID='") + bad + "' is not a local rank"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace rfa::collective
