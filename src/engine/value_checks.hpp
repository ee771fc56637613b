// SPDX-License-Identifier: BSD-3-Clause
// The value checks of a call (options.check_values): every rank scans its tensors for NaN and
// infinity (kernels/nonfinite_scan.hpp), then one agreement tells every rank where the lowest
// ring position that found one found its first, so all ranks fail together with the same
// message naming the tensor, the ring position and the element.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "comm/communicator.hpp"
#include "core/positions.hpp"

namespace rfa {
namespace engine {

/// One tensor as this rank scanned it.
struct ScannedTensor {
  const char* name;    ///< "q", "lse", ...
  std::int64_t first;  ///< flat index of its first NaN or infinity on this rank, or -1
  std::int64_t batch;  ///< its dims: [batch][rows][heads][head_dim] (bshd) or [batch][heads][rows] (lse)
  std::int64_t rows;
  std::int64_t heads;
  std::int64_t head_dim;  ///< 0 for the [batch][heads][rows] layout of lse
};

/// Collective (one agreement, also when nothing was found). Returns when no rank found a NaN
/// or infinity in `tensors`; otherwise throws an AgreedError RFA_ERROR_NONFINITE on every rank,
/// naming the first tensor in which the lowest such ring position found one and its first
/// element there (batch, global sequence position from `rows`, head, element), followed by
/// `consequence` ("nothing was computed or written"). Every rank passes the same list of tensors.
void report_nonfinite_everywhere(comm::Communicator& comm, const PositionMap& rows,
                                 std::initializer_list<ScannedTensor> tensors, const char* kind,
                                 const char* consequence);

}  // namespace engine
}  // namespace rfa
