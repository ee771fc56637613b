// SPDX-License-Identifier: BSD-3-Clause
// rfa_document_balance: how evenly each layout spreads the attention work of packed documents
// over P ranks (document_balance.hpp). No MPI: it counts, it does not run attention.
//
//   rfa_document_balance [options]: kUsage below (--help prints it).
// --check-stripe MAX exits 1 when the stripe layout's imbalance of pairs or of tiles is above
// MAX (the test of the layout rfa recommends for packed documents).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "document_balance.hpp"
#include "layout/sequence_layout.hpp"

namespace {

struct Options {
  std::int64_t seq = 65536, window = 0, tile = 96;
  int ranks = 4;
  double median = 600, sigma = 1.2, check_stripe = 0;
  unsigned seed = 1;
  bool causal = true;
};

Options parse_options(int argc, char** argv) {
  using rfa::perf::real_number;
  using rfa::perf::whole_int;
  using rfa::perf::whole_number;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw rfa::perf::OptionError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seq")
      o.seq = whole_number(a, value(), 1);
    else if (a == "--ranks")
      o.ranks = whole_int(a, value(), 1);
    else if (a == "--median")
      o.median = real_number(a, value(), 1);
    else if (a == "--sigma")
      o.sigma = real_number(a, value(), 0);
    else if (a == "--seed")
      o.seed = unsigned(whole_number(a, value(), 0, std::numeric_limits<unsigned>::max()));
    else if (a == "--window")
      o.window = whole_number(a, value(), 0);
    else if (a == "--tile")
      o.tile = whole_number(a, value(), 1);
    else if (a == "--check-stripe")
      o.check_stripe = real_number(a, value(), 0);
    else if (a == "--no-causal")
      o.causal = false;
    else
      throw rfa::perf::OptionError("unknown option " + a + " (see the top of document_balance_main.cpp)");
  }
  if (o.seq % (2 * o.ranks) != 0)
    throw rfa::perf::OptionError("--seq must be a multiple of 2 x --ranks, got " + std::to_string(o.seq) + " and " +
                                 std::to_string(o.ranks));
  return o;
}

}  // namespace

/// --help's text.
const char* const kUsage = R"(rfa_document_balance [--seq 65536] [--ranks 4] [--median 600] [--sigma 1.2] [--seed 1]
                            [--no-causal] [--window W] [--tile 96] [--check-stripe MAX]
How evenly each layout spreads the attention work of packed documents (log-normal lengths of
the given median and sigma) over P ranks. Counts only (no MPI, no attention).
  --check-stripe MAX  exit 1 where the stripe layout's imbalance of pairs or tiles is above MAX
)";

int main(int argc, char** argv) {
  rfa::perf::exit_on_help(argc, argv, kUsage);
  const Options o = rfa::perf::options_or_exit("rfa_document_balance", [&] { return parse_options(argc, argv); });
  std::mt19937_64 rng(o.seed);
  const std::vector<std::int64_t> docs = rfa::perf::long_tailed_documents(o.seq, o.median, o.sigma, rng);
  std::int64_t longest = 0;
  for (std::size_t d = 1; d < docs.size(); ++d) longest = std::max(longest, docs[d] - docs[d - 1]);
  rfa::kernels::MaskRule rule{o.causal, o.window, docs.data(), std::int64_t(docs.size()), {}};
  std::printf(
      "rfa_document_balance: S=%lld, P=%d, %zu documents (log-normal lengths, median %.0f, sigma %.2f, "
      "seed %u; longest %lld, rows per rank %lld), %s%s, tiles of %lld x %lld\n",
      (long long)o.seq, o.ranks, docs.size() - 1, o.median, o.sigma, o.seed, (long long)longest,
      (long long)(o.seq / o.ranks), o.causal ? "causal" : "non-causal",
      o.window > 0 ? (", window " + std::to_string(o.window)).c_str() : "", (long long)o.tile, (long long)o.tile);
  std::printf("%-11s %14s %14s %12s   per rank (pairs, millions)\n", "layout", "max/mean pairs", "max/mean tiles",
              "tiles, all");
  bool ok = true;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE}) {
    const auto work = rfa::perf::work_per_rank(layout, o.seq, o.ranks, rule, o.tile);
    std::vector<double> pairs, tiles;
    for (const auto& w : work) {
      pairs.push_back(w.pairs);
      tiles.push_back(w.tiles);
    }
    const double ip = rfa::perf::imbalance(pairs), it = rfa::perf::imbalance(tiles);
    double all_tiles = 0;
    for (double t : tiles) all_tiles += t;
    std::printf("%-11s %14.3f %14.3f %12.0f  ", rfa::layout::layout_name(layout), ip, it, all_tiles);
    for (double p : pairs) std::printf(" %.2f", p * 1e-6);
    std::printf("\n");
    if (layout == RFA_LAYOUT_STRIPE && o.check_stripe > 0 && (ip > o.check_stripe || it > o.check_stripe)) {
      std::printf("stripe: imbalance above %.2f\n", o.check_stripe);
      ok = false;
    }
  }
  return ok ? 0 : 1;
}
