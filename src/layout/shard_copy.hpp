// SPDX-License-Identifier: BSD-3-Clause
// Copies between a global tensor and one rank's shard of it, for setting up inputs, checking
// results and the C API's convenience helpers. Host memory, plain row-major pointers (a Kokkos
// host View's data() works; so does a Fortran array): the caller owns both buffers.
//
//   bshd tensors (q, k, v, out, gradients): global [b][S][h][d], local [b][L][h][d]
//   bhs tensors (lse):                      global [b][h][S],    local [b][h][L]
// where L = rows.length() and local row i is global row rows(i). Copies are bitwise (memcpy
// of whole rows), so a scatter followed by a gather reproduces the input exactly. Not a hot
// path: the engine never copies through here.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/positions.hpp"

namespace rfa::layout {

/// The sizes of a bshd tensor other than its sequence axis.
struct BshdDims {
  std::int64_t batch = 1;
  std::int64_t heads = 1;
  std::int64_t head_dim = 1;
};

/// local[b][i][h][d] = global[b][rows(i)][h][d]. T is float, double, rfa::bf16_t or rfa::fp16_t.
/// Throws RFA_ERROR_INVALID_ARGUMENT for a malformed map, a position outside 0..global_seq-1,
/// negative sizes or a null pointer to a non-empty tensor.
template <class T>
void scatter_bshd(const T* global, std::int64_t global_seq, const BshdDims& dims, const PositionMap& rows, T* local);

/// global[b][rows(i)][h][d] = local[b][i][h][d]; rows of `global` not in the map are untouched.
template <class T>
void gather_bshd(const T* local, const BshdDims& dims, const PositionMap& rows, T* global, std::int64_t global_seq);

/// local[b][h][i] = global[b][h][rows(i)] (fp32, the lse layout).
void scatter_bhs(const float* global, std::int64_t global_seq, std::int64_t batch, std::int64_t heads,
                 const PositionMap& rows, float* local);

/// global[b][h][rows(i)] = local[b][h][i]; other positions of `global` are untouched.
void gather_bhs(const float* local, std::int64_t batch, std::int64_t heads, const PositionMap& rows, float* global,
                std::int64_t global_seq);

}  // namespace rfa::layout
