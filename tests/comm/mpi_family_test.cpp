// SPDX-License-Identifier: BSD-3-Clause
// The MPI family check of a context's creation: the version texts of the MPIs sites run, each
// read as its family (a text that names neither is taken, never refused); this process's MPI,
// the one rfa is built with, passes. The refusal itself: consumer_other_mpi_test, a program
// built with MPICH's mpi.h loading this librfa.
#include "comm/mpi/mpi_family.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include "comm_test_support.hpp"

namespace rfa::comm::mpi {
namespace {

TEST(MpiFamily, EachSitesVersionTextNamesItsFamily) {
  const struct {
    const char* text;
    MpiFamily family;
  } cases[] = {
      {"Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022", MpiFamily::open_mpi},
      {"Open MPI v5.0.3, package: Open MPI builder Distribution, ident: 5.0.3", MpiFamily::open_mpi},
      {"MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022", MpiFamily::mpich},
      {"Intel(R) MPI Library 2021.10 for Linux* OS", MpiFamily::mpich},
      {"MVAPICH2 Version      :\t2.3.7\nMVAPICH2 Release date :\tWed March 02 22:00:00 EST 2022", MpiFamily::mpich},
      {"MPI VERSION    : CRAY MPICH version 8.1.27.26 (ANL base 3.4a2)", MpiFamily::mpich},
      {"IBM Spectrum MPI 10.04.00.03", MpiFamily::unknown},
      {"Microsoft MPI 10.1", MpiFamily::unknown},
      {"", MpiFamily::unknown},
  };
  for (const auto& c : cases) EXPECT_EQ(mpi_family_of_version(c.text), c.family) << "'" << c.text << "'";
}

TEST(MpiFamily, TheBuildsMpiHIsKnown) {
#if defined(OPEN_MPI)
  EXPECT_EQ(built_mpi_family(), MpiFamily::open_mpi);
#elif defined(MPICH_VERSION)
  EXPECT_EQ(built_mpi_family(), MpiFamily::mpich);
#else
  EXPECT_EQ(built_mpi_family(), MpiFamily::unknown);
#endif
}

// The MPI this test runs on is the one it is built with: its text's first line, blanks
// collapsed, names that family, and the check takes it.
TEST(MpiFamily, ThisProcesssMpiIsTheBuildsAndPasses) {
  const std::string running = running_mpi_version();
  ASSERT_FALSE(running.empty());
  EXPECT_EQ(running.find_first_of("\n\t\r"), std::string::npos) << running;
  EXPECT_EQ(running.find("  "), std::string::npos) << running;
  EXPECT_NE(running.front(), ' ');
  EXPECT_NE(running.back(), ' ');
  EXPECT_EQ(mpi_family_of_version(running), built_mpi_family()) << running;
  EXPECT_NO_THROW(require_mpi_family_of_build());
}

}  // namespace
}  // namespace rfa::comm::mpi
