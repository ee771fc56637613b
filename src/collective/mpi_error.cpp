// SPDX-License-Identifier: BSD-3-Clause
#include "collective/mpi_error.hpp"

#include "core/error.hpp"

namespace rfa::collective {

std::string mpi_error_message(int code, const char* call) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  int error_class = code;
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS) error_class = code;
  std::string message = std::string(call) + " failed: ";
  message += length > 0 ? std::string(text, std::size_t(length)) : "unknown MPI error";
  message += " (MPI error code " + std::to_string(code) + ", class " + std::to_string(error_class) + ")";
  return message;
}

void throw_mpi_error(int code, const char* call) { throw Error(RFA_ERROR_MPI, mpi_error_message(code, call)); }

bool mpi_is_usable() {
  // Both queries are allowed before MPI_Init and after MPI_Finalize.
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace rfa::collective
