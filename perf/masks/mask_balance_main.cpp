// SPDX-License-Identifier: BSD-3-Clause
// rfa_mask_balance: for each mask family given as ranges (mask_balance.hpp), each fixed layout
// and P, the busiest rank's visible pairs and computed tiles over the mean, the scores the
// kernels compute over the visible ones, the ring steps some rank computes on, and the K/V rows
// the busiest rank receives from the ring and from the needed-only exchange against those its
// queries see. No MPI: it counts, it does not run attention.
//
//   rfa_mask_balance [options]: kUsage below (--help prints it).
// Placements: the fixed layouts; "pairs", the balanced layout's chunks as their visible pairs
// alone place them; and "balanced", RFA_LAYOUT_BALANCED's placement (pairs, then swaps judged
// on the ranks' computed tiles; P must divide seq / 8). --check-causal MAX exits 1 when the zigzag layout's
// causal imbalance is above MAX, when a ring would receive fewer rows than the queries see, when
// the needed-only exchange gives a rank more than 1.1x the rows its queries see, or when the
// engine's step selection runs fewer ring steps than the queries need. --write-ranges DIR also
// writes each family's list as DIR/<family>.ranges ("2-D neighbourhood" as 2-d-neighbourhood),
// the file rfa_run's --mask ranges:FILE reads, so that a run times the very mask counted here
// (perf/masks/measured_balance.py).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "core/error.hpp"
#include "layout/sequence_layout.hpp"
#include "mask_balance.hpp"

namespace {

struct Options {
  std::int64_t seq = 65536;
  std::vector<int> ranks = {2, 4, 8, 16, 32, 64};
  unsigned seed = 1;
  double check_causal = 0;
  std::string write_ranges;  ///< a directory, or empty
};

/// Writes `ranges` in rfa_run's ranges-file format (perf/ring/run_options.cpp).
void write_ranges_file(const std::string& path, const std::vector<rfa_mask_range_t>& ranges) {
  std::ofstream out(path);
  if (!out) rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "--write-ranges: cannot write ", path);
  static const char* const kinds[] = {"full", "causal", "anticausal", "band"};
  out << "# q_begin q_end k_begin k_end kind [band_lo band_hi], written by rfa_mask_balance\n";
  for (const rfa_mask_range_t& r : ranges) {
    out << r.q_begin << ' ' << r.q_end << ' ' << r.k_begin << ' ' << r.k_end << ' ' << kinds[r.kind];
    if (r.kind == RFA_RANGE_BAND) out << ' ' << r.band_lo << ' ' << r.band_hi;
    out << '\n';
  }
  if (!out) rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "--write-ranges: cannot write ", path);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw rfa::perf::OptionError(a + " needs a value (see the file's header)");
    const std::string v = argv[++i];
    if (a == "--seq") {
      o.seq = rfa::perf::whole_number(a, v, 256);
    } else if (a == "--seed") {
      o.seed = unsigned(rfa::perf::whole_number(a, v, 0, std::numeric_limits<unsigned>::max()));
    } else if (a == "--write-ranges") {
      o.write_ranges = v;
    } else if (a == "--check-causal") {
      o.check_causal = rfa::perf::real_number(a, v, 0);
    } else if (a == "--ranks") {
      o.ranks = rfa::perf::whole_ints(a, v, 1);
    } else {
      throw rfa::perf::OptionError("unknown option " + a);
    }
  }
  if (o.seq % 256 != 0)
    throw rfa::perf::OptionError("--seq must be a multiple of 256 (the grid is 256 wide), got " +
                                 std::to_string(o.seq));
  return o;
}

}  // namespace

/// --help's text.
const char* const kUsage = R"(rfa_mask_balance [--seq 65536] [--ranks 2,4,8,16,32,64] [--seed 1] [--check-causal MAX]
                        [--write-ranges DIR]
For each mask family given as ranges, each fixed layout, the balanced layout's placement and
each P: the busiest rank's visible pairs and computed tiles over the mean, the ring steps some
rank computes on and the K/V rows it receives. Counts only (no MPI, no attention).
  --seq N             sequence length, a multiple of 256 (default 65536)
  --ranks LIST        rank counts (default 2,4,8,16,32,64; one that does not divide seq / 8 is
                      skipped)
  --seed N            the random families' seed (default 1)
  --check-causal MAX  exit 1 where the zigzag's causal imbalance is above MAX, or a rank's rows
                      fall short of or beyond what its queries see (the header of
                      perf/masks/mask_balance_main.cpp says each)
  --write-ranges DIR  also write each family as DIR/<family>.ranges (rfa_run --mask ranges:FILE)
)";

int main(int argc, char** argv) {
  rfa::perf::exit_on_help(argc, argv, kUsage);
  const Options o = rfa::perf::options_or_exit("rfa_mask_balance", [&] { return parse_options(argc, argv); });
  std::mt19937_64 rng(o.seed);
  bool ok = true;
  try {
    std::printf("rfa_mask_balance: S=%lld, masks given as ranges on the fixed layouts (counts, no attention run)\n",
                (long long)o.seq);
    std::printf("%-18s %-10s %4s %9s %9s %9s %9s %6s %11s %11s %7s %11s %7s\n", "mask", "layout", "P", "pairs", "tiles",
                "bwd tiles", "computed", "steps", "ring rows", "seen rows", "ring /", "needed", "needed");
    std::printf("%-18s %-10s %4s %9s %9s %9s %9s %6s %11s %11s %7s %11s %7s\n", "", "", "", "max/mean", "max/mean",
                "max/mean", "/visible", "", "(busiest)", "(busiest)", "seen", "(busiest)", "/ seen");
    for (const rfa::perf::MaskFamily& f : rfa::perf::mask_families(o.seq, rng)) {
      if (!o.write_ranges.empty())
        write_ranges_file(o.write_ranges + "/" + rfa::perf::family_stem(f.name) + ".ranges", f.ranges);
      const rfa::perf::MaskPairs mask(f.ranges, o.seq);
      // The fixed layouts, then the balanced layout's chunks by their pairs alone, and refined.
      for (int placement = 0; placement < 5; ++placement) {
        for (int P : o.ranks) {
          if (P < 1 || o.seq % (8 * P) != 0) continue;
          const rfa_layout_t layouts[] = {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE};
          const bool fixed = placement < 3;
          rfa::engine::RefinementReport refined;
          const auto solve_start = std::chrono::steady_clock::now();
          const rfa::perf::Placement rows = fixed ? rfa::perf::layout_placement(layouts[placement], o.seq, P)
                                                  : rfa::perf::balanced_placement(mask, P, placement == 4, &refined);
          const double solve_seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - solve_start).count();
          const rfa::perf::PlacementCounts c =
              rfa::perf::placement_counts(mask, rows, fixed ? &layouts[placement] : nullptr);
          const std::string name = fixed            ? rfa::layout::layout_name(layouts[placement])
                                   : placement == 3 ? "pairs"
                                                    : "balanced";
          std::printf("%-18s %-10s %4d %9.3f %9.3f %9.3f %9.2f %6d %11lld %11lld %7.2f", f.name.c_str(), name.c_str(),
                      P, c.work_max_over_mean, c.tiles_max_over_mean, c.backward_tiles_max_over_mean,
                      c.computed_over_visible, c.ring_steps, (long long)c.ring_rows, (long long)c.seen_rows,
                      c.seen_rows > 0 ? double(c.ring_rows) / double(c.seen_rows) : 0.0);
          if (fixed)
            std::printf(" %11lld %7.3f\n", (long long)c.needed_rows, c.needed_over_seen);
          else
            std::printf(" %11s %7s\n", "-", "-");
          if (placement == 4)
            std::printf("%-18s   refinement: %d swaps kept of %d counted, %.3g operations%s%s; solved in %.3f s\n", "",
                        refined.swaps, refined.tried, refined.operations,
                        refined.out_of_budget ? ", stopped by the budget" : "",
                        refined.second_start ? ", from the second start" : "", solve_seconds);
          if (o.check_causal > 0) {
            if (c.ring_rows < c.seen_rows) {
              std::printf("FAIL: the ring receives fewer rows than the queries see\n");
              ok = false;
            }
            if (fixed && c.needed_over_seen > 1.1) {
              std::printf("FAIL: a rank receives %.3fx the rows its queries see in the needed-only exchange\n",
                          c.needed_over_seen);
              ok = false;
            }
            if (fixed && c.engine_ring_steps < c.ring_steps) {
              std::printf("FAIL: the engine runs %d ring steps where the queries need %d\n", c.engine_ring_steps,
                          c.ring_steps);
              ok = false;
            }
            if (f.name == "causal" && placement == 1 && c.work_max_over_mean > o.check_causal) {
              std::printf("FAIL: zigzag's causal imbalance %.4f is above %.4f\n", c.work_max_over_mean, o.check_causal);
              ok = false;
            }
          }
        }
      }
    }
  } catch (const rfa::Error& e) {
    std::fprintf(stderr, "rfa_mask_balance: error: %s\n", e.what());
    return 1;
  }
  return ok ? 0 : 1;
}
