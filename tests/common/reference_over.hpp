// SPDX-License-Identifier: BSD-3-Clause
// The float64 reference computed by the ranks of a communicator together: each rank takes every
// P-th query row (reference::Problem's row slices) and a sum over the ranks completes the
// results. Every rank of a distributed test compares its shard with the whole problem's
// reference; computed apart, that is P copies of the same float64 work, which was most of the
// engine and C API suites' time with more ranks than cores.
#pragma once

#include <mpi.h>

#include <vector>

#include "reference_attention.hpp"

namespace rfa {
namespace test {

/// reference::forward and reference::backward of `p` (its row slice replaced) on the same inputs,
/// shared across `comm` (MPI_COMM_SELF: computed whole here). Collective: every rank of `comm`
/// calls it at once with the same problem and inputs. `dsinks` as reference::backward's
/// (nullptr: not computed).
inline void reference_over(MPI_Comm comm, const reference::Problem& p, const std::vector<double>& q,
                           const std::vector<double>& k, const std::vector<double>& v, const std::vector<double>& dout,
                           std::vector<double>& out, std::vector<double>& lse, std::vector<double>& dq,
                           std::vector<double>& dk, std::vector<double>& dv, std::vector<double>* dsinks = nullptr) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  reference::Problem slice = p;
  slice.row_offset = rank;
  slice.row_stride = size;
  reference::forward_backward(slice, q, k, v, dout, out, lse, dq, dk, dv, dsinks);
  if (size == 1) return;
  for (std::vector<double>* part : {&out, &lse, &dq, &dk, &dv, dsinks})
    if (part != nullptr) MPI_Allreduce(MPI_IN_PLACE, part->data(), int(part->size()), MPI_DOUBLE, MPI_SUM, comm);
}

}  // namespace test
}  // namespace rfa
