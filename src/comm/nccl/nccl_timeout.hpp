// SPDX-License-Identifier: BSD-3-Clause
// How long the NCCL communicator waits for anything (init, an exchange, a collective,
// finalize) before it aborts: a hang on the GPU becomes an error instead of a stuck job.
#pragma once

namespace rfa::comm::nccl {

/// The default when neither the options nor RFA_NCCL_TIMEOUT_S say otherwise.
constexpr double kDefaultTimeoutSeconds = 300.0;

/// Parses a timeout in seconds ("300", "2.5"): null or empty gives kDefaultTimeoutSeconds;
/// anything but a finite number > 0 throws RFA_ERROR_INVALID_ARGUMENT naming `source`.
double parse_timeout_seconds(const char* text, const char* source);

/// The seconds the communicator waits, from `requested` in the convention of every internal
/// deadline (MpiOptions::timeout_s, collective/deadline.hpp): > 0 itself; 0 no deadline
/// (infinity: deadline_after() saturates it); < 0 RFA_NCCL_TIMEOUT_S from the environment,
/// else the default.
double resolve_timeout_seconds(double requested);

}  // namespace rfa::comm::nccl
