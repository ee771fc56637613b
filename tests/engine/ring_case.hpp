// A distributed test problem: every rank draws the same global inputs (same seed), keeps
// its shard, and computes the float64 reference on the whole sequence to compare its shard
// of the results with.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "engine/ring_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "layout/shard_copy.hpp"
#include "reference_attention.hpp"

namespace rfa {
namespace test {

using engine::Tensor3;
using engine::Tensor4;

inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

/// The ring over MPI_COMM_WORLD in identity order.
inline std::unique_ptr<comm::Communicator> world_ring() { return comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank()); }

template <class T>
double tolerance();
template <>
inline double tolerance<float>() { return 2e-5; }
template <>
inline double tolerance<bf16_t>() { return 1.6e-2; }
template <>
inline double tolerance<fp16_t>() { return 2.5e-3; }

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

template <class View>
std::vector<double> as_doubles(const View& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_float(v.data()[i]);
  return out;
}

template <class View>
void poison(const View& v) {
  using T = typename View::non_const_value_type;
  for (std::size_t i = 0; i < v.size(); ++i) v.data()[i] = from_float<T>(std::numeric_limits<float>::quiet_NaN());
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
