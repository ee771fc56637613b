// SPDX-License-Identifier: BSD-3-Clause
// Which MPI family a process calls, against the one whose mpi.h librfa is compiled with. Open MPI
// and MPICH (with the libraries built on its ABI: Intel MPI, MVAPICH, Cray MPICH) give handles
// and datatypes different types and values. A program built against one that loads a librfa
// built against the other has both libraries loaded; the program's answers every MPI call, and
// librfa's first collective hands it the other family's datatypes (MPICH aborts the job:
// "Invalid datatype"). A creation asks the MPI it reaches which one it is, before any other MPI
// call, also on a CPU the build refuses: this file is the C ABI's, compiled for the baseline
// x86-64, and uses the C library alone.
#pragma once

#include <cstddef>

namespace rfa {
namespace capi {

enum class MpiFamily { open_mpi, mpich, unknown };

/// The family of the mpi.h librfa is compiled with.
MpiFamily built_mpi_family() noexcept;

/// The family a version text of MPI_Get_library_version names: Open MPI where it says so,
/// MPICH where it names MPICH, Intel(R) MPI or MVAPICH, unknown otherwise.
MpiFamily mpi_family_of_version(const char* version) noexcept;

/// The first line of `text`, each run of blanks one space, none at the ends, into `line`
/// (`capacity` bytes, cut short where it does not fit; always terminated).
void first_line_of_version(const char* text, char* line, std::size_t capacity) noexcept;

/// Where the MPI this process calls names a family other than librfa's, the refusal's text
/// (naming both; static storage); nullptr otherwise, and where either family is unknown: the
/// check refuses only what it knows. The same answer on every rank of a job. Asks
/// MPI_Get_library_version once per process (callable before MPI_Init and after MPI_Finalize).
const char* mpi_family_refusal() noexcept;

}  // namespace capi
}  // namespace rfa
