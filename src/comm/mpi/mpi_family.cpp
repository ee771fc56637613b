// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/mpi_family.hpp"

#include <mpi.h>

#include <vector>

#include "core/error.hpp"

namespace rfa {
namespace comm {
namespace mpi {
namespace {

/// The mpi.h's own version, for the message.
std::string built_mpi_version() {
#if defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && defined(OMPI_MINOR_VERSION)
  return "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION);
#elif defined(MPICH_VERSION)
  return std::string("MPICH ") + MPICH_VERSION;
#else
  return mpi_family_name(built_mpi_family());
#endif
}

}  // namespace

const char* mpi_family_name(MpiFamily family) {
  switch (family) {
    case MpiFamily::open_mpi: return "Open MPI";
    case MpiFamily::mpich: return "MPICH (or an MPI on its ABI: Intel MPI, MVAPICH, Cray MPICH)";
    case MpiFamily::unknown: break;
  }
  return "an MPI of neither Open MPI's nor MPICH's family";
}

MpiFamily built_mpi_family() {
#if defined(OPEN_MPI)
  return MpiFamily::open_mpi;
#elif defined(MPICH_VERSION)
  return MpiFamily::mpich;
#else
  return MpiFamily::unknown;
#endif
}

MpiFamily mpi_family_of_version(const std::string& version) {
  if (version.find("Open MPI") != std::string::npos) return MpiFamily::open_mpi;
  for (const char* mark : {"MPICH", "Intel(R) MPI", "MVAPICH"})
    if (version.find(mark) != std::string::npos) return MpiFamily::mpich;
  return MpiFamily::unknown;
}

std::string running_mpi_version() {
  // Larger than any family's MPI_MAX_LIBRARY_VERSION_STRING (Open MPI's is 256, MPICH's 8192):
  // the constant compiled in here is that of rfa's mpi.h, not of the library that answers.
  std::vector<char> text(std::size_t(1) << 16, '\0');
  int length = 0;
  if (MPI_Get_library_version(text.data(), &length) != MPI_SUCCESS) return "";
  if (length < 0 || length >= int(text.size())) length = int(text.size()) - 1;
  std::string line;
  for (int i = 0; i < length && text[std::size_t(i)] != '\n'; ++i) {
    const char ch = text[std::size_t(i)];
    if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\0') {
      line += ch;
    } else if (!line.empty() && line.back() != ' ') {
      line += ' ';  // MPICH writes "MPICH Version:\t4.0.2"
    }
  }
  if (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

void require_mpi_family_of_build() {
  // The library that answers does not change during a process.
  static const std::string running = running_mpi_version();
  const MpiFamily ours = built_mpi_family(), theirs = mpi_family_of_version(running);
  if (ours == MpiFamily::unknown || theirs == MpiFamily::unknown || ours == theirs) return;
  fail(RFA_ERROR_VERSION_MISMATCH, "librfa was compiled against ", built_mpi_version(), "'s mpi.h, but the MPI this ",
       "process calls is '", running, "' (", mpi_family_name(theirs), "): their handles and datatypes differ, and ",
       "the first collective would abort the job. Build rfa with the MPI the program is built with (CMake: the same ",
       "MPI_C_COMPILER or MPI_HOME), or build the program with ", mpi_family_name(ours));
}

}  // namespace mpi
}  // namespace comm
}  // namespace rfa
