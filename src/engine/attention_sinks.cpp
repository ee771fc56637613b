// SPDX-License-Identifier: BSD-3-Clause
#include "engine/attention_sinks.hpp"

#include <Kokkos_Core.hpp>
#include <cmath>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/kept_for_process.hpp"
#include "engine/engine_backends.hpp"
#include "engine/pass_tensors.hpp"
#include "kernels/host_dispatch_lock.hpp"

namespace rfa {
namespace engine {

namespace {

// A row's lse after its head's sink s joins it, log(exp(before) + exp(s)), without overflow (the
// plain C functions: host and device code alike); before = -inf (no key seen) gives s.
KOKKOS_INLINE_FUNCTION float lse_with_sink(float before, float s) {
  const float high = before > s ? before : s, low = before > s ? s : before;
  // The difference only within 128 (e^-128 adds nothing to 1 in fp32): lses further apart than
  // fp32's range would overflow it, raising the flag a program may trap.
  return low < high - 128.0f ? high : high + ::log1pf(::expf(low - high));
}
// The share of a row's weight its keys keep once its head's sink s joins them: exp(before) /
// (exp(before) + exp(s)) = 1 / (1 + exp(s - before)), from the difference of the two alone.
// exp(before - lse_with_sink(before, s)) would carry that lse's rounding, half an ulp of it: a
// share 3% off at lses of 1e6, and 1 for 1/2 from 2^24 on. exp(-|d|) is formed only within 128
// (beyond, 0: no flag raised); before = -inf (no key seen) gives 0, a NaN stays NaN.
KOKKOS_INLINE_FUNCTION float kept_share(float before, float s) {
  const float d = before - s, far = d < 0.0f ? -d : d;
  const float t = far > 128.0f ? 0.0f : ::expf(-far), r = 1.0f / (1.0f + t);
  return d >= 0.0f ? r : t * r;
}

// Rows [first, last) of team `team` when rows are cut into teams of `per_team`.
struct TeamRows {
  std::int64_t first, last;
};
KOKKOS_INLINE_FUNCTION TeamRows team_rows(std::int64_t team, std::int64_t per_team, std::int64_t rows) {
  const std::int64_t first = team * per_team;
  return {first, first + per_team < rows ? first + per_team : rows};
}

// How many teams of `per_team` rows (>= 1; `kernel` names the caller otherwise) hold `rows`.
std::int64_t team_count(std::int64_t rows, std::int64_t per_team, const char* kernel) {
  if (per_team < 1) fail(RFA_ERROR_INTERNAL, kernel, ": rows_per_team ", per_team, " < 1");
  return (rows + per_team - 1) / per_team;
}

// Lanes that sum one row's head dim together on a device (a warp reads the row's contiguous
// values); the host's threads take a row each.
constexpr int kSinkRowLanes = 32;

// Values of a row one thread of apply_sinks scales, at most: loaded in one unrolled block, so that
// a device thread has them all in flight at once (a loop that loaded one value a turn waited for
// each load in turn).
constexpr int kSinkBlock = 8;

}  // namespace

template <class T, class Space>
void apply_sinks(const typename Space::execution_space& exec, const float* sinks, SpaceTensor4<T, Space> out,
                 SpaceTensor3<float, Space> lse, std::int64_t values_per_thread) {
  using Exec = typename Space::execution_space;
  using Range = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;
  const std::int64_t B = out.extent(0), L = out.extent(1), H = out.extent(2), D = out.extent(3);
  if (values_per_thread < 0) fail(RFA_ERROR_INTERNAL, "apply_sinks: values_per_thread ", values_per_thread, " < 0");
  const std::int64_t part = values_per_thread > 0 ? values_per_thread : kHostMemory<Space> ? D : kSinkBlock;
  const std::int64_t parts = D > 0 ? (D + part - 1) / part : 0;  // a row's pieces, one a thread
  const std::int64_t rows = B * H * L;
  if (rows == 0 || parts == 0) return;
  // The values first, each thread reading its row's lse before the second kernel rewrites it.
  // Threads go through out in its order, (entry, position, head, piece of the head dim), so that
  // a warp's threads read contiguous values.
  Kokkos::parallel_for(
      "rfa::apply_sinks", Range(exec, 0, rows * parts), KOKKOS_LAMBDA(std::int64_t t) {
        const std::int64_t r = t / parts, first = (t % parts) * part;
        const std::int64_t h = r % H, i = (r / H) % L, b = r / (H * L);
        const float s = sinks[h];
        if (s == -INFINITY) return;  // no sink for this head
        const float before = lse(b, h, i);
        const float factor = kept_share(before, s);
        const std::int64_t last = first + part < D ? first + part : D;
        for (std::int64_t block = first; block < last; block += kSinkBlock) {
          float v[kSinkBlock] = {};
          for (int j = 0; j < kSinkBlock; ++j)
            if (block + j < last) v[j] = to_float(out(b, i, h, block + j));
          for (int j = 0; j < kSinkBlock; ++j)
            if (block + j < last) out(b, i, h, block + j) = from_float<T>(v[j] * factor);
        }
      });
  Kokkos::parallel_for(
      "rfa::apply_sinks_lse", Range(exec, 0, rows), KOKKOS_LAMBDA(std::int64_t r) {
        const std::int64_t b = r / (H * L), h = (r / L) % H, i = r % L;
        const float s = sinks[h];
        if (s != -INFINITY) lse(b, h, i) = lse_with_sink(lse(b, h, i), s);
      });
  if constexpr (kHostMemory<Space>) exec.fence();
}

template <class T, class Space>
std::vector<double> sink_gradient_part(const typename Space::execution_space& exec, const float* sinks,
                                       SpaceTensor4<const T, Space> out, SpaceTensor4<const T, Space> dout,
                                       SpaceTensor3<const float, Space> lse,
                                       const std::function<void()>& wait_for_kernel, std::int64_t rows_per_team) {
  using Exec = typename Space::execution_space;
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  const std::int64_t B = out.extent(0), L = out.extent(1), H = out.extent(2), D = out.extent(3);
  const std::int64_t rows = B * L;
  const std::int64_t chunks = team_count(rows, rows_per_team, "sink_gradient_part");
  std::vector<double> part(std::size_t(H), 0.0);
  if (H == 0 || rows == 0) return part;
  // One kernel for every (head, chunk of rows) and one copy back: a team sums a chunk, each row's
  // D = sum_d dout * out across a vector's lanes.
  Kokkos::View<double*, Space> sums(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "rfa::sink_gradient_sums"),
                                    std::size_t(H * chunks));
  const int lanes = kHostMemory<Space> ? 1 : kSinkRowLanes;
  {  // On the host the dispatch runs within the call: its lock (kernels/host_dispatch_lock.hpp)
     // is held for it and released before the wait below.
    const kernels::HostDispatchLock<Exec> lock;
    Kokkos::parallel_for(
        "rfa::sink_gradient", Kokkos::TeamPolicy<Exec>(exec, int(H * chunks), Kokkos::AUTO, lanes),
        KOKKOS_LAMBDA(const Team& team) {
          const std::int64_t h = team.league_rank() / chunks;
          const TeamRows mine = team_rows(team.league_rank() % chunks, rows_per_team, rows);
          const float s = sinks[h];
          double sum = 0.0;
          if (s != -INFINITY) {  // no sink: no mass, no gradient
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(team, mine.first, mine.last),
                [&](std::int64_t r, double& acc) {
                  const std::int64_t b = r / L, i = r % L;
                  double delta = 0.0;  // the row term D = sum_d dout * out
                  Kokkos::parallel_reduce(
                      Kokkos::ThreadVectorRange(team, D),
                      [&](std::int64_t d, double& lane_sum) {
                        lane_sum += double(to_float(dout(b, i, h, d))) * double(to_float(out(b, i, h, d)));
                      },
                      delta);
                  acc -= ::exp(double(s) - double(lse(b, h, i))) * delta;
                },
                sum);
          }
          Kokkos::single(Kokkos::PerTeam(team), [&] { sums(team.league_rank()) = sum; });
        });
  }
  if (wait_for_kernel) {
    // Where it times out the kernel may still write `sums`, and freeing them would wait for it.
    on_timeout(wait_for_kernel, [&](const Error&) { keep_for_process(sums); });
  } else {
    exec.fence();
  }
  // Nothing left on `exec` to wait for: the copy to pageable memory returns at once.
  std::vector<double> chunk_sums(std::size_t(H * chunks));
  Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(chunk_sums.data(),
                                                                                         chunk_sums.size());
  Kokkos::deep_copy(exec, host, sums);
  exec.fence();
  for (std::int64_t h = 0; h < H; ++h)
    for (std::int64_t c = 0; c < chunks; ++c) part[std::size_t(h)] += chunk_sums[std::size_t(h * chunks + c)];
  return part;
}

#define RFA_INSTANTIATE_SINKS(T, Space)                                                                        \
  template void apply_sinks<T, Space>(const Space::execution_space&, const float*, SpaceTensor4<T, Space>,     \
                                      SpaceTensor3<float, Space>, std::int64_t);                               \
  template std::vector<double> sink_gradient_part<T, Space>(                                                   \
      const Space::execution_space&, const float*, SpaceTensor4<const T, Space>, SpaceTensor4<const T, Space>, \
      SpaceTensor3<const float, Space>, const std::function<void()>&, std::int64_t);

RFA_INSTANTIATE_SINKS(float, Kokkos::HostSpace)
RFA_INSTANTIATE_SINKS(bf16_t, Kokkos::HostSpace)
RFA_INSTANTIATE_SINKS(fp16_t, Kokkos::HostSpace)
#if RFA_ENGINE_CUDA
RFA_INSTANTIATE_SINKS(float, Kokkos::CudaSpace)
RFA_INSTANTIATE_SINKS(bf16_t, Kokkos::CudaSpace)
RFA_INSTANTIATE_SINKS(fp16_t, Kokkos::CudaSpace)
#endif

}  // namespace engine
}  // namespace rfa
