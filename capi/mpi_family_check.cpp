// SPDX-License-Identifier: BSD-3-Clause
#include "mpi_family_check.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace rfa {
namespace capi {
namespace {

const char* family_name(MpiFamily family) noexcept {
  switch (family) {
    case MpiFamily::open_mpi: return "Open MPI";
    case MpiFamily::mpich: return "MPICH (or an MPI on its ABI: Intel MPI, MVAPICH, Cray MPICH)";
    case MpiFamily::unknown: break;
  }
  return "an MPI of neither Open MPI's nor MPICH's family";
}

/// The mpi.h's own name and version, for the message.
void built_version(char* out, std::size_t capacity) noexcept {
#if defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && defined(OMPI_MINOR_VERSION)
  std::snprintf(out, capacity, "Open MPI %d.%d", int(OMPI_MAJOR_VERSION), int(OMPI_MINOR_VERSION));
#elif defined(MPICH_VERSION)
  std::snprintf(out, capacity, "MPICH %s", MPICH_VERSION);
#else
  std::snprintf(out, capacity, "%s", family_name(built_mpi_family()));
#endif
}

/// The refusal's text, or an empty one: worked out once.
struct Verdict {
  char text[1024] = {};

  Verdict() noexcept {
    // Larger than any family's MPI_MAX_LIBRARY_VERSION_STRING (Open MPI's is 256, MPICH's
    // 8192): the constant compiled in here is that of librfa's mpi.h, not of the library that
    // answers. Static, so that no allocation can fail.
    static char version[1 << 16];
    int length = 0;
    if (MPI_Get_library_version(version, &length) != MPI_SUCCESS) return;
    if (length < 0 || length >= int(sizeof version)) length = int(sizeof version) - 1;
    version[length] = '\0';
    char line[256];
    first_line_of_version(version, line, sizeof line);
    const MpiFamily ours = built_mpi_family(), theirs = mpi_family_of_version(version);
    if (ours == MpiFamily::unknown || theirs == MpiFamily::unknown || ours == theirs) return;
    char built[64];
    built_version(built, sizeof built);
    std::snprintf(text, sizeof text,
                  "librfa was compiled against %s's mpi.h, but the MPI this process calls is '%s' (%s): their "
                  "handles and datatypes differ, and the first collective would abort the job. Build rfa with the "
                  "MPI the program is built with (CMake: the same MPI_C_COMPILER or MPI_HOME), or build the program "
                  "with %s",
                  built, line, family_name(theirs), family_name(ours));
  }
};

}  // namespace

MpiFamily built_mpi_family() noexcept {
#if defined(OPEN_MPI)
  return MpiFamily::open_mpi;
#elif defined(MPICH_VERSION)
  return MpiFamily::mpich;
#else
  return MpiFamily::unknown;
#endif
}

MpiFamily mpi_family_of_version(const char* version) noexcept {
  if (std::strstr(version, "Open MPI") != nullptr) return MpiFamily::open_mpi;
  for (const char* mark : {"MPICH", "Intel(R) MPI", "MVAPICH"})
    if (std::strstr(version, mark) != nullptr) return MpiFamily::mpich;
  return MpiFamily::unknown;
}

void first_line_of_version(const char* text, char* line, std::size_t capacity) noexcept {
  if (capacity == 0) return;
  std::size_t n = 0;
  for (const char* c = text; *c != '\0' && *c != '\n' && n + 1 < capacity; ++c) {
    if (*c != ' ' && *c != '\t' && *c != '\r') {
      line[n++] = *c;
    } else if (n > 0 && line[n - 1] != ' ') {
      line[n++] = ' ';  // MPICH writes "MPICH Version:\t4.0.2"
    }
  }
  while (n > 0 && line[n - 1] == ' ') --n;
  line[n] = '\0';
}

const char* mpi_family_refusal() noexcept {
  static const Verdict verdict;
  return verdict.text[0] != '\0' ? verdict.text : nullptr;
}

}  // namespace capi
}  // namespace rfa
