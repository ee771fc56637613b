// SPDX-License-Identifier: BSD-3-Clause
// Turns NCCL return codes into rfa::Error(RFA_ERROR_NCCL), with NCCL's own detail.
#pragma once

#include <nccl.h>

#include <string>

namespace rfa::comm::nccl {

/// "ncclGroupEnd failed: unhandled system error (ncclSystemError, 2): <ncclGetLastError>".
/// comm may be null (before a communicator exists).
std::string nccl_error_message(ncclResult_t code, const char* call, ncclComm_t comm);

/// Throws rfa::Error(RFA_ERROR_NCCL, nccl_error_message(code, call, comm)).
[[noreturn]] void throw_nccl_error(ncclResult_t code, const char* call, ncclComm_t comm);

/// Throws unless code is ncclSuccess or, for nonblocking communicators, ncclInProgress.
inline void check_nccl(ncclResult_t code, const char* call, ncclComm_t comm) {
  if (code != ncclSuccess && code != ncclInProgress) throw_nccl_error(code, call, comm);
}

}  // namespace rfa::comm::nccl
