// SPDX-License-Identifier: BSD-3-Clause
// Which MPI family a process calls, against the one whose mpi.h rfa is compiled with. Open MPI
// and MPICH (with the libraries built on its ABI: Intel MPI, MVAPICH, Cray MPICH) give handles
// and datatypes different types and values. A program built against one that loads a librfa
// built against the other has both libraries loaded; the program's wins every MPI symbol, and
// rfa's first collective hands it the other family's datatypes (MPICH aborts the job:
// "Invalid datatype"). A context's creation asks the MPI it reaches which one it is, before
// any other MPI call, and refuses a mismatch.
#pragma once

#include <string>

namespace rfa {
namespace comm {
namespace mpi {

enum class MpiFamily { open_mpi, mpich, unknown };

/// "Open MPI", "MPICH (or an MPI on its ABI: ...)", or words for an unknown one.
const char* mpi_family_name(MpiFamily family);

/// The family of the mpi.h rfa is compiled with.
MpiFamily built_mpi_family();

/// The family a version text of MPI_Get_library_version names: Open MPI where it says so,
/// MPICH where it names MPICH, Intel(R) MPI or MVAPICH, unknown otherwise.
MpiFamily mpi_family_of_version(const std::string& version);

/// The first line of MPI_Get_library_version's text in this process, each run of blanks one
/// space, none at the ends ("" where the call fails). Callable before MPI_Init and after
/// MPI_Finalize.
std::string running_mpi_version();

/// Throws RFA_ERROR_VERSION_MISMATCH where the MPI this process calls names a family other
/// than rfa's (the answer is the same on every rank of a job, so every rank refuses). A
/// library whose version text names neither family is taken: the check refuses only what it
/// knows. Asks MPI once per process.
void require_mpi_family_of_build();

}  // namespace mpi
}  // namespace comm
}  // namespace rfa
