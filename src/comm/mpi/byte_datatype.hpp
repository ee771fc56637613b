// SPDX-License-Identifier: BSD-3-Clause
// Describes a byte count of any size to MPI, whose counts are int (MPI 3.1; Open MPI 4.1 has no
// large-count MPI_Count functions). Up to `max_count` bytes it is simply `bytes` x MPI_BYTE.
// Above, it is one element of a derived datatype covering exactly `bytes` bytes: q blocks of
// `max_count` bytes followed by the remainder, resized so its extent is `bytes`. One element of
// that type works for point-to-point calls and, because the extent is exact, also as the
// per-rank block of allgather/alltoall and for broadcast.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>

namespace rfa::comm::mpi {

class ByteDatatype {
 public:
  /// `max_count` (1..INT_MAX) is the largest byte count sent as plain MPI_BYTE; tests lower it
  /// to exercise the derived-type path with small buffers.
  explicit ByteDatatype(std::size_t bytes, std::size_t max_count = INT_MAX);
  ~ByteDatatype();
  ByteDatatype(const ByteDatatype&) = delete;
  ByteDatatype& operator=(const ByteDatatype&) = delete;

  MPI_Datatype type() const { return type_; }
  int count() const { return count_; }
  /// True when a derived type was built (bytes > max_count).
  bool derived() const { return owned_; }

 private:
  MPI_Datatype type_ = MPI_BYTE;
  int count_ = 0;
  bool owned_ = false;
};

}  // namespace rfa::comm::mpi
