// SPDX-License-Identifier: BSD-3-Clause
// Turns MPI return codes into rfa::Error. The library's communicators use MPI_ERRORS_RETURN,
// so every MPI call's code passes through check_mpi().
#pragma once

#include <mpi.h>

#include <string>

namespace rfa::collective {

/// "MPI_Isend failed: MPI_ERR_COUNT: invalid count argument (error class 2)".
std::string mpi_error_message(int code, const char* call);

/// Throws rfa::Error(RFA_ERROR_MPI, mpi_error_message(code, call)).
[[noreturn]] void throw_mpi_error(int code, const char* call);

/// Throws rfa::Error(RFA_ERROR_MPI, ...) unless code is MPI_SUCCESS.
inline void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) throw_mpi_error(code, call);
}

/// Whether MPI may be called now: initialized and not yet finalized.
bool mpi_is_usable();

}  // namespace rfa::collective
