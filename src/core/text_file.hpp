// SPDX-License-Identifier: BSD-3-Clause
// Small text files named by the environment (a ring order, a topology dump), read and written
// so that a path that is no file cannot stall the rank: a FIFO without a writer reads as empty
// rather than blocking the open, one without a reader is refused rather than waited for, and a
// file larger than the caller allows is refused rather than read whole.
#pragma once

#include <cstddef>
#include <string>

namespace rfa {

/// The whole text at `path`, at most `max_bytes` of it. Throws RFA_ERROR_INVALID_ARGUMENT,
/// naming `what` and the path, when it cannot be opened or read, is a directory, or is longer.
std::string read_text_file(const std::string& path, std::size_t max_bytes, const std::string& what);

/// Writes `text` to `path` (created or truncated). Throws RFA_ERROR_INVALID_ARGUMENT, naming
/// `what` and the path, when it cannot be written (a FIFO nobody reads is refused at once).
void write_text_file(const std::string& path, const std::string& text, const std::string& what);

}  // namespace rfa
