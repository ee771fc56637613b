// SPDX-License-Identifier: BSD-3-Clause
#include "comm/nccl/nccl_error.hpp"

#include "core/error.hpp"

namespace rfa::comm::nccl {

std::string nccl_error_message(ncclResult_t code, const char* call, ncclComm_t comm) {
  std::string message =
      std::string(call) + " failed: " + ncclGetErrorString(code) + " (NCCL result " + std::to_string(int(code)) + ")";
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0') message += ": " + std::string(detail);
  return message;
}

void throw_nccl_error(ncclResult_t code, const char* call, ncclComm_t comm) {
  throw Error(RFA_ERROR_NCCL, nccl_error_message(code, call, comm));
}

}  // namespace rfa::comm::nccl
