// SPDX-License-Identifier: BSD-3-Clause
// A distributed test problem: every rank draws the same global inputs (same seed), keeps
// its shard, and computes the float64 reference on the whole sequence to compare its shard
// of the results with.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi_test_support.hpp"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "engine/ring_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "layout/shard_copy.hpp"
#include "reference_attention.hpp"
#include "tensor_test_support.hpp"

namespace rfa {
namespace test {

using engine::Tensor3;
using engine::Tensor4;


/// The ring over MPI_COMM_WORLD in identity order.
inline std::unique_ptr<comm::Communicator> world_ring() { return comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank()); }

/// Global inputs rounded to T, as doubles (the reference) and as T.
template <class T>
struct GlobalTensor {
  std::vector<T> stored;
  std::vector<double> exact;
  GlobalTensor(std::size_t n, std::mt19937_64& rng, double amplitude) : stored(n), exact(n) {
    std::uniform_real_distribution<double> dist(-amplitude, amplitude);
    for (std::size_t i = 0; i < n; ++i) {
      stored[i] = from_float<T>(float(dist(rng)));
      exact[i] = to_float(stored[i]);
    }
  }
};

/// A local shard, as a Kokkos view of T.
template <class T>
Tensor4<T> shard(const std::vector<T>& global, std::int64_t S, std::int64_t B, std::int64_t H, std::int64_t D,
                 const PositionMap& rows) {
  Tensor4<T> local("shard", B, rows.length(), H, D);
  layout::scatter_bshd(global.data(), S, layout::BshdDims{B, H, D}, rows, local.data());
  return local;
}

inline std::vector<double> shard_of(const std::vector<double>& global, std::int64_t S, std::int64_t B,
                                    std::int64_t H, std::int64_t D, const PositionMap& rows) {
  std::vector<double> local(std::size_t(B * rows.length() * H * D));
  layout::scatter_bshd(global.data(), S, layout::BshdDims{B, H, D}, rows, local.data());
  return local;
}

/// max |got - ref| / max(1e-2, max |ref|), with NaNs and unmatched infinities counted as +inf.
inline double relative_error(const std::vector<double>& got, const std::vector<double>& ref) {
  double err = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(got[i])) return INFINITY;
    if (std::isinf(ref[i]) || std::isinf(got[i])) {
      if (got[i] != ref[i]) return INFINITY;
      continue;
    }
    err = std::max(err, std::abs(got[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return err / std::max(1e-2, scale);
}

}  // namespace test
}  // namespace rfa
