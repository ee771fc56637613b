// rfa_run: the main job. Ring attention forward and backward on an embedded problem split
// over the MPI ranks, checked against the single-rank kernels, with a short report of time,
// throughput, error and hidden communication. See --help.
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "core/error.hpp"
#include "cpu_peak.hpp"
#include "engine/ring_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "mpi_program.hpp"
#include "reference_check.hpp"
#include "ring_problem.hpp"
#include "run_options.hpp"
#include "topology/choose_ring_order.hpp"
#include "topology/order_policy.hpp"

namespace rfa {
namespace perf {
namespace {

using engine::RingMode;
using engine::RingTimings;
using engine::Tensor3;
using engine::Tensor4;

/// Tolerances on the relative error against fp32 single-rank kernels (out; gradients get 2x).
double tolerance(rfa_dtype_t t) { return t == RFA_DTYPE_FLOAT32 ? 1e-4 : t == RFA_DTYPE_BFLOAT16 ? 2e-2 : 4e-3; }

struct PassTimes {
  double full = 1e300, compute_only = 0, comm_only = 0;
  RingTimings detail;
};

double hidden_fraction(const PassTimes& t) { return perf::hidden_fraction(t.full, t.compute_only, t.comm_only); }

template <class T>
int run(comm::Communicator& ring, const RunOptions& o, const char* order_policy) {
  const engine::RingConfig cfg = ring_config(o);
  engine::RingAttention attn(ring, cfg);
  const int P = ring.size(), me = ring.rank();
  const std::int64_t B = o.batch, H = o.heads, HKV = o.kv_heads, D = o.head_dim;
  LocalProblem<T> lp(attn);

  PassTimes fwd, bwd;
  auto timed = [&](RingMode mode, bool backward) {
    ring.barrier();
    if (backward) {
      lp.backward(attn, mode);
    } else {
      lp.forward(attn, mode);
    }
    return attn.last_timings();
  };
  for (int r = 0; r < o.repeat; ++r) {
    const RingTimings f = timed(RingMode::full, false);
    if (f.total < fwd.full) fwd.full = f.total, fwd.detail = f;
    const RingTimings b = timed(RingMode::full, true);
    if (b.total < bwd.full) bwd.full = b.total, bwd.detail = b;
  }
  CheckErrors err;
  if (o.check) err = check_against_single_rank<T>(ring, cfg, lp.out, lp.lse, lp.dq, lp.dk, lp.dv);
  if (o.overlap && P > 1) {
    // The other two schedules overwrite the results, so they run after the check.
    fwd.compute_only = timed(RingMode::compute_only, false).total;
    fwd.comm_only = timed(RingMode::comm_only, false).total;
    bwd.compute_only = timed(RingMode::compute_only, true).total;
    bwd.comm_only = timed(RingMode::comm_only, true).total;
  }

  // Gather each rank's row of the table on every rank (rank 0 prints).
  const int kFields = 8;
  const double mine[kFields] = {double(me), fwd.full, bwd.full, fwd.detail.wait, bwd.detail.wait,
                                double(fwd.detail.steps_computed), hidden_fraction(fwd), hidden_fraction(bwd)};
  std::vector<double> table(std::size_t(kFields) * P);
  ring.allgather(mine, table.data(), sizeof mine);

  const bool causal = o.mask == RFA_MASK_CAUSAL;
  const double fwd_flops = attention_flops(B, o.seq, o.seq, H, D, causal, false);
  const double bwd_flops = attention_flops(B, o.seq, o.seq, H, D, causal, true);
  const double tol = tolerance(o.dtype);
  const bool ok = !o.check || (err.out <= tol && err.lse <= 1e-3 && err.dq <= 2 * tol && err.dk <= 2 * tol &&
                               err.dv <= 2 * tol);
  if (me == 0) {
    std::printf("rfa_run: B=%lld S=%lld H=%lld/%lld d=%lld %s %s %s, P=%d ranks (ring order: %s), %d host thread(s)/rank\n",
                (long long)B, (long long)o.seq, (long long)H, (long long)HKV, (long long)D, dtype_name(o.dtype),
                causal ? "causal" : "non-causal", layout::layout_name(o.layout), P, order_policy,
                Kokkos::DefaultHostExecutionSpace().concurrency());
    std::printf("%4s %9s %9s %9s %9s %9s %6s %7s %7s\n", "pos", "fwd ms", "bwd ms", "fwd GF/s", "bwd GF/s",
                "wait ms", "steps", "hid fwd", "hid bwd");
    double fwd_max = 0, bwd_max = 0;
    for (int r = 0; r < P; ++r) {
      const double* t = &table[std::size_t(kFields) * r];
      fwd_max = std::max(fwd_max, t[1]);
      bwd_max = std::max(bwd_max, t[2]);
      std::printf("%4d %9.1f %9.1f %9.1f %9.1f %9.1f %6d %6.0f%% %6.0f%%\n", int(t[0]), 1e3 * t[1], 1e3 * t[2],
                  fwd_flops / P / t[1] * 1e-9, bwd_flops / P / t[2] * 1e-9, 1e3 * (t[3] + t[4]), int(t[5]),
                  (o.overlap && P > 1) ? 100 * t[6] : 100.0, (o.overlap && P > 1) ? 100 * t[7] : 100.0);
    }
    std::printf("ring: forward %.1f ms (%.1f GFLOP/s), backward %.1f ms (%.1f GFLOP/s), FLOPs by FlashAttention's convention\n",
                1e3 * fwd_max, fwd_flops / fwd_max * 1e-9, 1e3 * bwd_max, bwd_flops / bwd_max * 1e-9);
    if (o.overlap && P > 1) {
      std::printf("hidden communication: forward %.0f%%, backward %.0f%% (rank 0: comm alone %.1f/%.1f ms, exposed %.1f/%.1f ms)\n",
                  100 * hidden_fraction(fwd), 100 * hidden_fraction(bwd), 1e3 * fwd.comm_only, 1e3 * bwd.comm_only,
                  1e3 * std::max(0.0, fwd.full - fwd.compute_only), 1e3 * std::max(0.0, bwd.full - bwd.compute_only));
    }
    if (o.check) {
      std::printf("max error vs single-rank fp32 kernels on the full sequence: out %.2e  lse %.2e  dq %.2e  dk %.2e  dv %.2e"
                  "  (tolerance %.0e, gradients %.0e): %s\n",
                  err.out, err.lse, err.dq, err.dk, err.dv, tol, 2 * tol, ok ? "PASS" : "FAIL");
    } else {
      std::printf("check skipped (--no-check)\n");
    }
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace perf
}  // namespace rfa

int main(int argc, char** argv) {
  return rfa::perf::run_mpi_program(argc, argv, "rfa_run", [&](int world_rank) {
    rfa::perf::RunOptions opts;
    try {
      opts = rfa::perf::parse_run_options(argc, argv);
    } catch (const rfa::Error& e) {
      // Every rank parsed the same argv and failed the same way: one message is enough.
      if (world_rank == 0) std::fprintf(stderr, "rfa_run: error: %s\n", e.what());
      return 2;
    }
    if (opts.help) {
      if (world_rank == 0) std::printf("%s", rfa::perf::run_usage(argv[0]).c_str());
      return 0;
    }
    const auto order = rfa::topology::choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_DEFAULT);
    auto ring = rfa::comm::make_mpi_communicator(MPI_COMM_WORLD, order.position);
    return rfa::dispatch_dtype(opts.dtype, [&](auto tag) {
      return rfa::perf::run<decltype(tag)>(*ring, opts, rfa::topology::policy_name(order.policy_used));
    });
  });
}
