// rfa_ring_bench: ring efficiency and hidden communication, per layout.
//
//   efficiency = (single-rank time on the full sequence) / (P x ring time)
//   hidden     = 1 - (ring time - same schedule without communication) / communication alone
//   hidw       = 1 - (time any rank spent blocked in waits) / communication alone
// The first is the definition; the second is its noise-free lower-level view (it counts the
// copy work MPI does inside the engine's polls as compute, not as exposed communication).
//
// Defaults are the figures of record: S=16384, H=4, d=128, fp32, causal, every layout; run it
// with one rank per core (mpirun -np 2 --bind-to core). Takes the main job's flags (--seq,
// --heads, --dtype, --layout, --repeat, ...) plus --json FILE for the regression comparator.
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "core/error.hpp"
#include "cpu_peak.hpp"
#include "engine/ring_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "mpi_program.hpp"
#include "ring_problem.hpp"
#include "run_options.hpp"
#include "strategy_compare.hpp"

namespace rfa {
namespace perf {
namespace {

using engine::RingMode;
using engine::Tensor3;
using engine::Tensor4;

struct Times {
  double fwd = 1e300, bwd = 1e300;
  double fwd_wait = 0, bwd_wait = 0;  // time blocked in waits during the best run (max over ranks)
};

double max_over_ranks(comm::Communicator& ring, double seconds) {
  return double(ring.allreduce(std::int64_t(seconds * 1e9), comm::ReduceOp::max)) * 1e-9;
}

/// Best-of-repeat forward and backward times of `mode` (max over ranks, since the ring is as
/// slow as its slowest rank).
template <class T>
Times measure(comm::Communicator& ring, const engine::RingConfig& cfg, RingMode mode, int repeat) {
  engine::RingAttention attn(ring, cfg);
  LocalProblem<T> lp(attn);
  // An untimed pass of each first: real results (the timed backward sees a real lse), and the
  // first-call costs (page faults of fresh buffers, MPI's first rendezvous) out of the figures.
  lp.forward(attn);
  lp.backward(attn);
  Times best;
  for (int r = 0; r < repeat; ++r) {
    ring.barrier();
    lp.forward(attn, mode);
    const double f = max_over_ranks(ring, attn.last_timings().total);
    const double fw = max_over_ranks(ring, attn.last_timings().wait);
    ring.barrier();
    lp.backward(attn, mode);
    const double b = max_over_ranks(ring, attn.last_timings().total);
    const double bw = max_over_ranks(ring, attn.last_timings().wait);
    if (f < best.fwd) best.fwd = f, best.fwd_wait = fw;
    if (b < best.bwd) best.bwd = b, best.bwd_wait = bw;
  }
  return best;
}

/// The share of communication no rank waited for: 1 - time blocked in waits / communication
/// alone. Robust where hidden_fraction() is noise (communication a few % of the total).
double hidden_by_wait(double wait, double comm_only) {
  if (comm_only <= 0) return 1.0;
  return std::clamp(1.0 - wait / comm_only, 0.0, 1.0);
}

template <class T>
void bench(comm::Communicator& ring, const RunOptions& o, const std::vector<rfa_layout_t>& layouts, FILE* json) {
  engine::RingConfig cfg = ring_config(o);
  const int P = ring.size(), me = ring.rank();
  const bool causal = o.mask == RFA_MASK_CAUSAL;
  const double ffwd = attention_flops(o.batch, o.seq, o.seq, o.heads, o.head_dim, causal, false);
  const double fbwd = attention_flops(o.batch, o.seq, o.seq, o.heads, o.head_dim, causal, true);

  // The single-rank baseline: rank 0 alone on the full sequence while the others wait.
  Times single;
  if (me == 0) {
    auto alone = comm::make_mpi_communicator(MPI_COMM_SELF, 0);
    cfg.layout = RFA_LAYOUT_CONTIGUOUS;
    single = measure<T>(*alone, cfg, RingMode::full, o.repeat);
  }
  ring.barrier();
  if (me == 0) {
    std::printf("rfa_ring_bench: B=%lld S=%lld H=%lld/%lld d=%lld %s %s, P=%d, %d host thread(s)/rank\n",
                (long long)o.batch, (long long)o.seq, (long long)o.heads, (long long)o.kv_heads,
                (long long)o.head_dim, dtype_name(o.dtype), causal ? "causal" : "non-causal", P,
                Kokkos::DefaultHostExecutionSpace().concurrency());
    std::printf("single rank, full sequence: forward %.1f ms (%.1f GFLOP/s), backward %.1f ms (%.1f GFLOP/s)\n",
                1e3 * single.fwd, ffwd / single.fwd * 1e-9, 1e3 * single.bwd, fbwd / single.bwd * 1e-9);
    std::printf("%-11s %9s %9s %8s %8s %8s %8s %8s %8s %9s\n", "layout", "fwd ms", "bwd ms", "fwd eff", "bwd eff",
                "fwd hid", "bwd hid", "fwd hidw", "bwd hidw", "comm ms");
    if (json) std::fprintf(json, "{\n  \"single\": {\"fwd_s\": %.6f, \"bwd_s\": %.6f},\n  \"layouts\": [", single.fwd, single.bwd);
  }
  bool first = true;
  for (rfa_layout_t layout : layouts) {
    cfg.layout = layout;
    const Times full = measure<T>(ring, cfg, RingMode::full, o.repeat);
    const Times compute_only = measure<T>(ring, cfg, RingMode::compute_only, o.repeat);
    const Times comm_only = measure<T>(ring, cfg, RingMode::comm_only, o.repeat);
    if (me != 0) continue;
    const double eff_f = single.fwd / (P * full.fwd), eff_b = single.bwd / (P * full.bwd);
    const double hid_f = hidden_fraction(full.fwd, compute_only.fwd, comm_only.fwd);
    const double hid_b = hidden_fraction(full.bwd, compute_only.bwd, comm_only.bwd);
    const double hidw_f = hidden_by_wait(full.fwd_wait, comm_only.fwd);
    const double hidw_b = hidden_by_wait(full.bwd_wait, comm_only.bwd);
    std::printf("%-11s %9.1f %9.1f %7.1f%% %7.1f%% %7.1f%% %7.1f%% %7.1f%% %7.1f%% %4.0f/%-4.0f\n",
                layout::layout_name(layout), 1e3 * full.fwd, 1e3 * full.bwd, 100 * eff_f, 100 * eff_b, 100 * hid_f,
                100 * hid_b, 100 * hidw_f, 100 * hidw_b, 1e3 * comm_only.fwd, 1e3 * comm_only.bwd);
    if (json) {
      std::fprintf(json,
                   "%s\n    {\"layout\": \"%s\", \"ranks\": %d, \"fwd_s\": %.6f, \"bwd_s\": %.6f, \"fwd_efficiency\": %.4f,"
                   " \"bwd_efficiency\": %.4f, \"fwd_hidden\": %.4f, \"bwd_hidden\": %.4f, \"fwd_hidden_by_wait\": %.4f,"
                   " \"bwd_hidden_by_wait\": %.4f, \"fwd_comm_only_s\": %.6f, \"bwd_comm_only_s\": %.6f}",
                   first ? "" : ",", layout::layout_name(layout), P, full.fwd, full.bwd, eff_f, eff_b, hid_f, hid_b,
                   hidw_f, hidw_b, comm_only.fwd, comm_only.bwd);
    }
    first = false;
  }
  if (me == 0 && json) std::fprintf(json, "\n  ]\n}\n");
}

}  // namespace
}  // namespace perf
}  // namespace rfa

int main(int argc, char** argv) {
  return rfa::perf::run_mpi_program(argc, argv, "rfa_ring_bench", [&](int world_rank) {
    // The figures of record are the defaults; the user's flags come after and win.
    std::vector<char*> args = {argv[0]};
    const char* defaults[] = {"--seq", "16384", "--heads", "4", "--head-dim", "128", "--dtype", "fp32", "--causal",
                              "--repeat", "2"};
    for (const char* d : defaults) args.push_back(const_cast<char*>(d));
    std::string json_path, strategies;
    bool layout_given = false;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--json" && i + 1 < argc) {
        json_path = argv[++i];
        continue;
      }
      if (std::string(argv[i]) == "--strategy" && i + 1 < argc) {
        strategies = argv[++i];
        continue;
      }
      if (std::string(argv[i]) == "--layout") layout_given = true;
      args.push_back(argv[i]);
    }
    const auto opts = rfa::perf::parse_run_options(int(args.size()), args.data());
    if (opts.help) {
      if (world_rank == 0) {
        std::printf("%s  --json FILE        also write the results as JSON (rank 0)\n"
                    "  --strategy LIST    compare strategies instead of layouts: all, or a comma list of ring,\n"
                    "                     ulysses, allgather, hybrid:PU (time, bytes sent, workspace per rank)\n",
                    rfa::perf::run_usage(argv[0]).c_str());
      }
      return 0;
    }
    std::vector<rfa_layout_t> layouts = {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE};
    if (layout_given) layouts = {opts.layout};
    FILE* json = (world_rank == 0 && !json_path.empty()) ? std::fopen(json_path.c_str(), "w") : nullptr;
    auto ring = rfa::comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank);
    if (!strategies.empty()) {
      rfa::perf::compare_strategies(*ring, opts, rfa::perf::parse_strategies(strategies, ring->size()), json);
      if (json) std::fclose(json);
      return 0;
    }
    rfa::dispatch_dtype(opts.dtype, [&](auto tag) {
      rfa::perf::bench<decltype(tag)>(*ring, opts, layouts, json);
      return 0;
    });
    if (json) std::fclose(json);
    return 0;
  });
}
