// SPDX-License-Identifier: BSD-3-Clause
// rfa_rank_kernel_time: each rank's kernel time under each mask family given as ranges
// (mask_balance.hpp), every rank's blocks run alone, one rank after another, in this one
// process on one core: the work per rank measured without the ranks sharing cores, caches
// and memory bandwidth, which blur an MPI run's per-rank CPU seconds by several percent where
// ranks outnumber the cores (perf/masks/measured_balance.py measures those).
//
// A rank's forward is what the ring computes on it: its queries against every rank's K/V whose
// block some query sees (classify_blocks_every_entry, as the ring skips the others), each
// block's partial merged into the running output; its backward, D once, then every such block's
// dQ, dK and dV, each timed in this thread's CPU seconds. Each of --repeat repetitions times
// every rank; a rank's share is the median over the repetitions of its time over the
// repetition's mean, and the busiest rank's share is printed, forward and backward, beside
// rfa_mask_balance's counted shares of the same placement (visible pairs, forward and backward
// computed tiles) and the busiest rank's fastest time. Where the ranks are equal within the
// noise every median may fall under 1, and so may the busiest rank's share.
//
//   rfa_rank_kernel_time [options]: kUsage below (--help prints it).
// --families takes file stems (causal,skewed-documents,prefix-lm,block-causal,
// 2-d-neighbourhood,random-sparse). Each P runs on the largest length up to --seq that it
// takes (a multiple of 256 and of 8P, as measured_balance.py's). fp32
// only.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "core/error.hpp"
#include "kernels/contiguous_ops.hpp"
#include "kernels/flash_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "mask_balance.hpp"
#include "option_errors.hpp"
#include "result_json.hpp"

namespace {

using rfa::kernels::Tensor3;
using rfa::kernels::Tensor4;

struct Options {
  std::int64_t seq = 16384;
  std::vector<int> ranks = {2, 4, 8};
  std::vector<std::string> layouts = {"zigzag", "stripe", "balanced"};
  std::string families = "all";
  std::int64_t heads = 4, head_dim = 64;
  int repeat = 3;
  unsigned seed = 1;
  bool per_rank = false;  ///< also each rank's ms
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

/// The layout layout::layout_name() calls `name`; throws for none.
rfa_layout_t layout_named(const std::string& name) {
  for (rfa_layout_t l : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE, RFA_LAYOUT_BALANCED})
    if (name == rfa::layout::layout_name(l)) return l;
  rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "--layouts: unknown layout ", name);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--per-rank") {
      o.per_rank = true;
      continue;
    }
    if (i + 1 >= argc) rfa::fail(RFA_ERROR_INVALID_ARGUMENT, a, " needs a value (see the file's header)");
    const std::string v = argv[++i];
    if (a == "--seq") {
      o.seq = rfa::perf::whole_number(a, v, 8);
    } else if (a == "--ranks") {
      o.ranks = rfa::perf::whole_ints(a, v, 1);
    } else if (a == "--layouts") {
      o.layouts = split(v);
    } else if (a == "--families") {
      o.families = v;
    } else if (a == "--heads") {
      o.heads = rfa::perf::whole_number(a, v, 1);
    } else if (a == "--head-dim") {
      o.head_dim = rfa::perf::whole_number(a, v, 8);
    } else if (a == "--repeat") {
      o.repeat = rfa::perf::whole_int(a, v, 1);
    } else if (a == "--seed") {
      o.seed = unsigned(rfa::perf::whole_number(a, v, 0, std::numeric_limits<unsigned>::max()));
    } else {
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "unknown option ", a, " (see the file's header)");
    }
  }
  for (const std::string& l : o.layouts) layout_named(l);
  return o;
}

template <class V>
void fill_random(const V& view, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* data = view.data();
  for (std::size_t i = 0; i < view.size(); ++i) data[i] = dist(rng);
}

/// This thread's CPU seconds: the time the kernels ran, without what the machine gave to others.
double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// One rank's forward and backward kernel seconds: its queries against the blocks of `maps`.
struct RankTimes {
  double forward = 0, backward = 0;
};

class RankKernels {
 public:
  RankKernels(const Options& o, std::int64_t rows, std::mt19937_64& rng)
      : o_(o),
        rows_(rows),
        q_("q", 1, rows, o.heads, o.head_dim),
        k_("k", 1, rows, o.heads, o.head_dim),
        v_("v", 1, rows, o.heads, o.head_dim),
        dout_("dout", 1, rows, o.heads, o.head_dim),
        out_("out", 1, rows, o.heads, o.head_dim),
        block_out_("block_out", 1, rows, o.heads, o.head_dim),
        dq_("dq", 1, rows, o.heads, o.head_dim),
        dk_("dk", 1, rows, o.heads, o.head_dim),
        dv_("dv", 1, rows, o.heads, o.head_dim),
        lse_("lse", 1, o.heads, rows),
        block_lse_("block_lse", 1, o.heads, rows),
        delta_("delta", 1, o.heads, rows) {
    for (const Tensor4<float>& t : {q_, k_, v_, dout_}) fill_random(t, rng);
  }

  /// Rank `me`'s kernels against every block some of its queries see (the same K/V values
  /// stand for every rank's: the time depends on the positions, not on the values).
  RankTimes time(const rfa::MaskRangeIndex& ranges, const std::vector<rfa::PositionMap>& maps, int me) {
    rfa::kernels::AttentionParams p =
        rfa::kernels::make_params(1, rows_, rows_, o_.heads, o_.heads, o_.head_dim, RFA_MASK_RANGES);
    p.ranges = ranges;
    p.q_pos = maps[std::size_t(me)];
    std::vector<rfa::kernels::AttentionParams> blocks;
    for (const rfa::PositionMap& theirs : maps) {
      p.k_pos = theirs;
      if (rfa::kernels::classify_blocks_every_entry(p, p.q_pos, p.k_pos) != rfa::kernels::TileVisibility::hidden)
        blocks.push_back(p);
    }
    RankTimes t;
    const double f0 = thread_seconds();
    rfa::kernels::fill_elements(out_, 0.0f);
    rfa::kernels::fill_elements(lse_, -std::numeric_limits<float>::infinity());
    for (const rfa::kernels::AttentionParams& b : blocks) {
      rfa::kernels::flash_forward<float, float>(b, q_, k_, v_, block_out_, block_lse_, {}, &forward_workspace_);
      rfa::kernels::merge_partial(out_, lse_, block_out_, block_lse_);
    }
    t.forward = thread_seconds() - f0;
    const double b0 = thread_seconds();
    rfa::kernels::fill_elements(dq_, 0.0f);
    if (!blocks.empty()) rfa::kernels::compute_delta<float, float>(blocks.front(), dout_, out_, delta_);
    for (const rfa::kernels::AttentionParams& b : blocks) {
      rfa::kernels::fill_elements(dk_, 0.0f);
      rfa::kernels::fill_elements(dv_, 0.0f);
      rfa::kernels::flash_backward_accumulate<float>(b, q_, k_, v_, dout_, lse_, delta_, dq_, dk_, dv_, {},
                                                     &backward_workspace_);
    }
    t.backward = thread_seconds() - b0;
    return t;
  }

 private:
  const Options& o_;
  std::int64_t rows_;
  Tensor4<float> q_, k_, v_, dout_, out_, block_out_, dq_, dk_, dv_;
  Tensor3<float> lse_, block_lse_, delta_;
  rfa::kernels::ForwardWorkspace forward_workspace_;
  rfa::kernels::BackwardWorkspace backward_workspace_;
};

int run(const Options& o) {
  std::printf(
      "rfa_rank_kernel_time: each rank's kernels alone on one core (fp32, H=%lld, d=%lld, %d repetitions), "
      "the busiest rank's share of the mean (median over the repetitions)\n",
      (long long)o.heads, (long long)o.head_dim, o.repeat);
  std::printf("%-18s %-10s %3s %6s %9s %9s %9s %9s %9s %10s %10s\n", "mask", "layout", "P", "S", "counted", "counted",
              "counted", "measured", "measured", "fwd ms", "bwd ms");
  std::printf("%-18s %-10s %3s %6s %9s %9s %9s %9s %9s %10s %10s\n", "", "", "", "", "pairs", "tiles", "bwd tiles",
              "fwd", "bwd", "(busiest)", "(busiest)");
  const std::vector<std::string> wanted = o.families == "all" ? std::vector<std::string>() : split(o.families);
  for (const int P : o.ranks) {
    // A multiple of 256 (the families' grids and blocks) and of 8P (the balanced layout's chunks).
    const std::int64_t step = P >= 1 ? 256 * (8 * P) / std::gcd<std::int64_t>(256, 8 * P) : 0;
    const std::int64_t seq = step > 0 ? o.seq / step * step : 0;
    if (seq == 0)
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "--seq ", o.seq, " is shorter than one length P = ", P,
                " takes (a multiple of 256 and of 8P)");
    std::mt19937_64 rng(o.seed);
    std::mt19937_64 values(o.seed + 1);
    RankKernels kernels(o, seq / P, values);
    for (const rfa::perf::MaskFamily& f : rfa::perf::mask_families(seq, rng)) {
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), rfa::perf::family_stem(f.name)) == wanted.end())
        continue;
      const rfa::perf::MaskPairs mask(f.ranges, seq);
      for (const std::string& layout : o.layouts) {
        const rfa_layout_t fixed = layout_named(layout);
        const bool balanced = fixed == RFA_LAYOUT_BALANCED;
        const rfa::perf::Placement placement =
            balanced ? rfa::perf::balanced_placement(mask, P, true) : rfa::perf::layout_placement(fixed, seq, P);
        const rfa::perf::PlacementCounts counted =
            rfa::perf::placement_counts(mask, placement, balanced ? nullptr : &fixed);
        std::vector<rfa::PositionMap> maps;
        for (const std::vector<rfa::Segment>& rank : placement) maps.push_back(rfa::perf::as_map(rank));
        // Each repetition times every rank once, starting at another rank each time so that no
        // rank always follows the same one; a rank's share is the median over the repetitions of
        // its time over that repetition's mean, so that a machine whose speed drifts from one
        // repetition to the next (a VM's neighbours) compares ranks timed close together.
        std::vector<std::vector<double>> shares[2];
        std::vector<double> fastest[2];
        for (int pass = 0; pass < 2; ++pass) {
          shares[pass].assign(std::size_t(P), {});
          fastest[pass].assign(std::size_t(P), 1e300);
        }
        for (int rep = 0; rep < o.repeat; ++rep) {
          std::vector<double> times[2] = {std::vector<double>(std::size_t(P)), std::vector<double>(std::size_t(P))};
          for (int i = 0; i < P; ++i) {
            const int r = (i + rep) % P;
            const RankTimes t = kernels.time(mask.ranges->index(), maps, r);
            times[0][std::size_t(r)] = t.forward;
            times[1][std::size_t(r)] = t.backward;
          }
          for (int pass = 0; pass < 2; ++pass) {
            const double mean = std::accumulate(times[pass].begin(), times[pass].end(), 0.0) / double(P);
            for (int r = 0; r < P; ++r) {
              shares[pass][std::size_t(r)].push_back(mean > 0 ? times[pass][std::size_t(r)] / mean : 1.0);
              fastest[pass][std::size_t(r)] = std::min(fastest[pass][std::size_t(r)], times[pass][std::size_t(r)]);
            }
          }
        }
        std::vector<double> share[2];
        for (int pass = 0; pass < 2; ++pass)
          for (std::vector<double>& s : shares[pass]) share[pass].push_back(rfa::perf::median(s));
        std::printf("%-18s %-10s %3d %6lld %9.3f %9.3f %9.3f %9.3f %9.3f %10.1f %10.1f\n", f.name.c_str(),
                    layout.c_str(), P, (long long)seq, counted.work_max_over_mean, counted.tiles_max_over_mean,
                    counted.backward_tiles_max_over_mean, *std::max_element(share[0].begin(), share[0].end()),
                    *std::max_element(share[1].begin(), share[1].end()),
                    1e3 * *std::max_element(fastest[0].begin(), fastest[0].end()),
                    1e3 * *std::max_element(fastest[1].begin(), fastest[1].end()));
        if (o.per_rank)
          for (int r = 0; r < P; ++r)
            std::printf("%-18s   rank %3d: forward %.1f ms (share %.3f), backward %.1f ms (share %.3f)\n", "", r,
                        1e3 * fastest[0][std::size_t(r)], share[0][std::size_t(r)], 1e3 * fastest[1][std::size_t(r)],
                        share[1][std::size_t(r)]);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace

/// --help's text.
const char* const kUsage = R"(rfa_rank_kernel_time [--seq 16384] [--ranks 2,4,8] [--layouts zigzag,stripe,balanced]
                            [--families all] [--heads 4] [--head-dim 64] [--repeat 3] [--seed 1]
                            [--per-rank] [Kokkos options]
Each rank's kernel time under each mask family given as ranges, every rank's blocks run alone in
this process on one core; the busiest rank's share beside rfa_mask_balance's counted shares.
--families takes file stems (causal, skewed-documents, prefix-lm, block-causal,
2-d-neighbourhood, random-sparse). fp32 only. --kokkos-help: Kokkos' own options.
)";

int main(int argc, char** argv) {
  rfa::perf::exit_on_help(argc, argv, kUsage);
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    return run(rfa::perf::refused_as_rfa_error([&] { return parse(argc, argv); }));
  } catch (const rfa::Error& e) {
    std::fprintf(stderr, "rfa_rank_kernel_time: %s\n", e.what());
    return 2;
  }
}
