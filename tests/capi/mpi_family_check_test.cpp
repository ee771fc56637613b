// SPDX-License-Identifier: BSD-3-Clause
// The MPI family check of a context's creation (capi/mpi_family_check.hpp, compiled into this
// test: the C ABI's internals are not exported): the version texts of the MPIs sites run, each
// read as its family (a text that names neither is taken, never refused); a text's first line;
// this process's MPI, the one rfa is built with, is not refused. The refusal itself:
// consumer_other_mpi_test, a program built with MPICH's mpi.h loading this librfa.
#include "mpi_family_check.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

namespace rfa::capi {
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

TEST(MpiFamily, TheFirstLineWithItsBlanksCollapsed) {
  char line[32];
  first_line_of_version("MPICH Version:\t4.0.2\nMPICH Release date: x", line, sizeof line);
  EXPECT_STREQ(line, "MPICH Version: 4.0.2");
  first_line_of_version("  MVAPICH2 Version      :\t2.3.7  \r\n", line, sizeof line);
  EXPECT_STREQ(line, "MVAPICH2 Version : 2.3.7");
  first_line_of_version("", line, sizeof line);
  EXPECT_STREQ(line, "");
  // Cut short where it does not fit, and terminated.
  first_line_of_version("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4", line, 9);
  EXPECT_STREQ(line, "Open MPI");
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

// The MPI this test runs on is the one it is built with: its text names that family or neither
// (a derivative whose text names neither is taken), and the check does not refuse it.
TEST(MpiFamily, ThisProcesssMpiIsNotRefused) {
  static char text[1 << 16];
  int length = 0;
  ASSERT_EQ(MPI_Get_library_version(text, &length), MPI_SUCCESS);
  const MpiFamily running = mpi_family_of_version(text);
  EXPECT_TRUE(running == built_mpi_family() || running == MpiFamily::unknown) << text;
  EXPECT_EQ(mpi_family_refusal(), nullptr) << mpi_family_refusal();
}

}  // namespace
}  // namespace rfa::capi
