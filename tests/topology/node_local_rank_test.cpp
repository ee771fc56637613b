// SPDX-License-Identifier: BSD-3-Clause
// node_local_rank() before MPI is initialized (this program never initializes it): the
// launcher's local rank (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, then MPICH's MPI_LOCALRANKID),
// then the Slurm task's SLURM_LOCALID (which a process an mpiexec inside a job starts inherits
// from the launching step, the same on every rank), 0 without any, and a clear error naming the
// variable for a value that is not a local rank, an int (a larger number would be narrowed to
// another rank's).
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
  const ScopedEnv ompi(env_name(Env::ompi_local_rank), nullptr);
  const ScopedEnv mpich(env_name(Env::mpich_local_rank), nullptr);
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

// Under an mpiexec started inside a Slurm job every rank of a node inherits the step's
// SLURM_LOCALID; the launcher's own variable tells them apart.
TEST(NodeLocalRank, BeforeMpiTheLaunchersLocalRankComesFirst) {
  const ScopedEnv slurm(env_name(Env::slurm_localid), "0");
  {
    const ScopedEnv ompi(env_name(Env::ompi_local_rank), "5");
    const ScopedEnv mpich(env_name(Env::mpich_local_rank), "6");
    EXPECT_EQ(node_local_rank(MPI_COMM_WORLD), 5);
  }
  {
    const ScopedEnv ompi(env_name(Env::ompi_local_rank), "");
    const ScopedEnv mpich(env_name(Env::mpich_local_rank), "6");
    EXPECT_EQ(node_local_rank(MPI_COMM_WORLD), 6);
  }
  {
    const ScopedEnv ompi(env_name(Env::ompi_local_rank), nullptr);
    const ScopedEnv mpich(env_name(Env::mpich_local_rank), nullptr);
    EXPECT_EQ(node_local_rank(MPI_COMM_WORLD), 0);
  }
}

TEST(NodeLocalRank, RefusesWhatIsNotALocalRank) {
  const ScopedEnv slurm(env_name(Env::slurm_localid), nullptr);
  const ScopedEnv ompi(env_name(Env::ompi_local_rank), nullptr);
  const ScopedEnv mpich(env_name(Env::mpich_local_rank), nullptr);
  for (const Env variable : {Env::slurm_localid, Env::mpich_local_rank, Env::ompi_local_rank})
    for (const char* bad :
         {"-1", "2147483648", "4294967297", "99999999999999999999", "1x", "x", " 1 2", " 1", "+1", "1.0"}) {
      const ScopedEnv set(env_name(variable), bad);
      const std::string expected = std::string(env_name(variable)) + "='" + bad + "' is not a local rank";
      try {
        const int rank = node_local_rank(MPI_COMM_WORLD);
        ADD_FAILURE() << expected << ", but taken as local rank " << rank;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      }
    }
}

}  // namespace
}  // namespace rfa::collective
