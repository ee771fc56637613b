// SPDX-License-Identifier: BSD-3-Clause
#include "run_options.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/mask_range_builders.hpp"
#include "layout/sequence_layout.hpp"
#include "option_errors.hpp"

namespace rfa {
namespace perf {
std::string run_usage(const char* program) {
  return std::string("usage: mpirun -np P ") + program + R"( [options]

Runs context-parallel attention (the ring unless --strategy says otherwise) forward and backward
on an embedded problem split over the P ranks: a warm-up, timed repetitions, a check of every
rank's results against the single-rank kernels on the full sequence (up to S = 32768 unless
--check/--no-check), and the runs that measure how much communication was hidden. Prints which
phase runs, then per-rank and ring times (medians with their range over repetitions),
throughput, the hidden share and the largest error.
Use one rank per core: more ranks than cores take turns and time each other's work.

  --batch N          batch size (default 1)
  --seq N            total sequence length over all ranks (default 8192, rounded down to
                     a length the layout can split over P ranks)
  --heads N          query heads (default 8)
  --kv-heads N       key/value heads, dividing --heads (default: = --heads)
  --head-dim N       head dimension, a multiple of 8 up to 256 (default 64)
  --value-head-dim N V's (and out's) head dimension where it differs from --head-dim, as
                     multi-head latent attention's 192 / 128: a multiple of 8 up to 256 on
                     the host, 128 beside a --head-dim of 192 with --device cuda (default:
                     --head-dim)
  --layout L         contiguous | zigzag | stripe | balanced (default zigzag)
  --dtype T          fp32 | bf16 | fp16 (default bf16)
  --mask M           causal | none (default causal); --causal and --no-causal also work; or a mask
                     given as ranges (docs/masks.md): prefix-lm:P (the first P tokens both ways),
                     block-causal:B (blocks of B tokens), grid:NXxNY[xNZ]:R (points within R on
                     a row-major grid; sets --seq), ranges:FILE (lines "q_begin q_end k_begin
                     k_end full|causal|anticausal|band [band_lo band_hi]")
  --window W         sliding window: a key is visible only if q_pos - k_pos < W (default 0: none)
  --documents SPEC   packed documents, a key visible only in its query's document: L1,L2,...
                     (documents of those lengths, then one holding the rest) or random:N (N
                     documents cut at random); several SPECs separated by '/', one per batch
                     entry, give each sequence of the batch its own (docs/variants.md)
  --strategy X       ring | ulysses | allgather | hybrid | needed | auto (default ring): how the
                     sequence is parallelized (docs/strategies.md); hybrid needs --ulysses-degree;
                     needed moves only the K/V rows each rank's queries see; auto
                     takes the strategy, degree and layout the performance model predicts
                     fastest (docs/performance-model.md; RFA_PLAN_* set its machine figures)
  --ulysses-degree N ranks per Ulysses group of the hybrid strategy (a Pu x P/Pu grid; N divides
                     P and the heads)
  --scale X          softmax scale (default 1/sqrt(head-dim))
  --warmup N         untimed forward+backward passes first (default 1)
  --repeat N         timed repetitions; medians and spreads are reported (default 3)
  --check            compare with the single-rank kernels on the full sequence (default
                     only up to S = 32768: it holds full-sequence fp32 tensors on every rank)
  --sampled-check    compare 8 rows per rank with float64 attention computed for those rows
                     alone (the default above S = 32768; its cost grows with S, not S^2)
  --sampled-positions N  the sampled check on N evenly spaced positions of the sequence (the
                     first and the last among them), each on the rank that holds it: the same
                     rows and heads at any P, layout or strategy, so that errors at different
                     P compare like with like (implies --sampled-check)
  --no-check         skip both comparisons
  --no-overlap       skip the runs that measure hidden communication
  --release-workspace  free the workspace the context keeps between calls before every
                     timed forward and backward (rfa_context_release_workspace), as a code
                     that gives the memory back between calls would
  --json FILE        also write the results as JSON (rank 0), the format of perf/'s benchmarks
  --device D         host | cuda (default host). cuda: each rank uses the GPU of its node-local
                     rank (modulo the GPUs it sees, so ranks share GPUs when there are fewer);
                     needs rfa built against a CUDA-enabled Kokkos, head-dim 32, 64, 128, 192 or 256, bf16
                     or fp16. RFA_TRANSPORT=nccl|mpi picks the transport (ranks sharing a GPU:
                     mpi)
  --kernels K        auto | rfa | cudnn (default auto): what the ring steps run on with --device cuda
                     (cudnn: cuDNN's fused attention wherever it expresses the step; auto: cuDNN
                     where every rank loads it, but for the all-gather, else rfa's kernels); the
                     header line says which
  --kernel-path F    auto | sm80 | sm90: the implementation of rfa's CUDA kernels (default: what
                     RFA_CUDA_KERNEL_PATH says, else auto = the Hopper forward and the sm_80
                     backward where every rank runs the Hopper kernels, else sm80; sm90 is the
                     Hopper path for both)
  --deterministic    bitwise reproducible gradients (deterministic backward kernels)
  --sinks            attention sinks: a logit per head (-1, 0, 0.5, 2, repeating) in every row's
                     softmax, folded into the finished rows as the C API's
                     rfa_forward_with_sinks does; the check covers them and their gradient
  --softcap C        soft-capped scores: each scaled score s becomes C tanh(s / C) before the mask
                     and the softmax (C > 0; default: none)
  --kokkos-help      Kokkos' own options (--kokkos-threads=N, ...)
  --help             this text

The hidden share of communication is measured for the ring only (the other strategies have no
schedule without communication to compare with); it is 1 - (ring time - the same schedule without communication)
/ (the schedule without compute), per repetition and rank; it is reported with its spread, or
not at all when communication alone is shorter than the run-to-run noise of the ring time.
Ring order comes from RFA_RING_ORDER (identity | topo | file:PATH; default topo).
)";
}

namespace {

/// --mask grid:NXxNY[xNZ]:R
struct GridSpec {
  std::int64_t nx = 1, ny = 1, nz = 1, radius = 0;
};

GridSpec parse_grid(const std::string& spec) {
  const std::string body = spec.substr(5);
  const std::size_t colon = body.find(':');
  require(colon != std::string::npos, "--mask ", spec, ": expected grid:NXxNY[xNZ]:R, e.g. grid:128x64:2");
  std::vector<std::int64_t> extents;
  std::istringstream dims(body.substr(0, colon));
  for (std::string part; std::getline(dims, part, 'x');)
    extents.push_back(whole_number("--mask grid", part.c_str(), 1));
  require(extents.size() == 2 || extents.size() == 3, "--mask ", spec,
          ": the grid has 2 or 3 extents (NXxNY or NXxNYxNZ)");
  GridSpec g;
  g.nx = extents[0];
  g.ny = extents[1];
  g.nz = extents.size() == 3 ? extents[2] : 1;
  g.radius = whole_number("--mask grid's radius", body.substr(colon + 1).c_str(), 0);
  return g;
}

/// One entry per line of a ranges file: q_begin q_end k_begin k_end kind [band_lo band_hi], kind
/// full | causal | anticausal | band; '#' starts a comment.
std::vector<rfa_mask_range_t> read_ranges_file(const std::string& path) {
  std::ifstream in(path);
  require(bool(in), "--mask ranges:", path, ": cannot read the file");
  std::vector<rfa_mask_range_t> list;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    rfa_mask_range_t r{};
    std::string kind;
    if (!(fields >> r.q_begin)) continue;  // blank or comment
    require(bool(fields >> r.q_end >> r.k_begin >> r.k_end >> kind), "--mask ranges:", path, " line ", number,
            ": expected q_begin q_end k_begin k_end kind [band_lo band_hi]");
    if (kind == "full") {
      r.kind = RFA_RANGE_FULL;
    } else if (kind == "causal") {
      r.kind = RFA_RANGE_CAUSAL;
    } else if (kind == "anticausal") {
      r.kind = RFA_RANGE_ANTICAUSAL;
    } else if (kind == "band") {
      r.kind = RFA_RANGE_BAND;
      require(bool(fields >> r.band_lo >> r.band_hi), "--mask ranges:", path, " line ", number,
              ": a band needs band_lo and band_hi");
    } else {
      fail(RFA_ERROR_INVALID_ARGUMENT, "--mask ranges:", path, " line ", number, ": kind '", kind,
           "' is not full, causal, anticausal or band");
    }
    list.push_back(r);
  }
  return list;
}

/// mask_range_list()'s work; a number its spec does not take throws OptionError.
static std::vector<rfa_mask_range_t> read_mask_range_list(const RunOptions& o) {
  const std::string& spec = o.mask_spec;
  const std::size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon), arg = spec.substr(colon + 1);
  if (kind == "prefix-lm") return prefix_lm_ranges(o.seq, whole_number("--mask prefix-lm", arg.c_str(), 0));
  if (kind == "block-causal") return block_causal_ranges(o.seq, whole_number("--mask block-causal", arg.c_str(), 1));
  if (kind == "grid") {
    const GridSpec g = parse_grid(spec);
    return grid_neighbourhood_ranges(g.nx, g.ny, g.nz, g.radius);
  }
  return read_ranges_file(arg);
}

/// The entries of the options' mask given as ranges (--mask with a spec) for their --seq;
/// throws RFA_ERROR_INVALID_ARGUMENT for a spec that does not fit (an argument out of range, an
/// unreadable or malformed file).
std::vector<rfa_mask_range_t> mask_range_list(const RunOptions& o) {
  return refused_as_rfa_error([&] { return read_mask_range_list(o); });
}

/// Sets the lists the mask reads for o.seq: o.ranges from o.mask_spec (null without a spec) and
/// o.documents from o.documents_spec.
void build_mask_lists(RunOptions& o) {
  o.documents = parse_documents(o.documents_spec, o.seq, o.batch);
  o.ranges.reset();
  if (o.mask_spec.empty()) return;
  const std::vector<rfa_mask_range_t> list = mask_range_list(o);
  o.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), o.seq,
                                                ("--mask " + o.mask_spec).c_str());
}

}  // namespace

MaskShape mask_shape(const RunOptions& o, std::int64_t entry) {
  MaskShape shape{o.seq, o.mask == RFA_MASK_CAUSAL, o.window, o.documents.entry(entry), {}};
  if (const std::shared_ptr<const MaskRanges> ranges = o.ranges) {
    shape.ranges = [ranges, spans = std::vector<std::pair<std::int64_t, std::int64_t>>()](
                       std::int64_t q, std::int64_t first, std::int64_t last) mutable {
      visible_key_intervals(ranges->index(), q, first, last, spans);
      std::int64_t n = 0;
      for (const auto& [a, b] : spans) n += b - a + 1;
      return n;
    };
  }
  return shape;
}

double visible_scores_over_batch(const RunOptions& o) {
  return visible_scores_over_batch(o.batch, !o.documents.offsets.empty(),
                                   [&o](std::int64_t e) { return mask_shape(o, e); });
}

/// parse_run_options()'s work; a number an option does not take throws OptionError.
static RunOptions read_run_options(int argc, char** argv) {
  RunOptions o;
  bool kv_heads_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      require(i + 1 < argc, flag, " needs a value (see --help)");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else if (flag == "--batch") {
      o.batch = whole_number(flag, value(), 1);
    } else if (flag == "--seq") {
      o.seq = whole_number(flag, value(), 1);
      o.seq_given = true;
    } else if (flag == "--heads") {
      o.heads = whole_number(flag, value(), 1);
    } else if (flag == "--kv-heads") {
      o.kv_heads = whole_number(flag, value(), 1);
      kv_heads_given = true;
    } else if (flag == "--head-dim") {
      o.head_dim = whole_number(flag, value(), 1);
    } else if (flag == "--value-head-dim") {
      o.value_dim = whole_number(flag, value(), 1);
    } else if (flag == "--repeat") {
      o.repeat = whole_int(flag, value(), 1);
    } else if (flag == "--warmup") {
      o.warmup = whole_int(flag, value(), 0);
    } else if (flag == "--json") {
      o.json = value();
      require(!o.json.empty(), "--json expects a file name, got ''");
    } else if (flag == "--check") {
      o.check = CheckMode::on;
    } else if (flag == "--sampled-check") {
      o.check = CheckMode::sampled;
    } else if (flag == "--sampled-positions") {
      o.check = CheckMode::sampled;
      o.sampled_positions = whole_number(flag, value(), 1);
    } else if (flag == "--scale") {
      // A positive fp32 number, as the kernels take it (its smallest normal to its largest).
      o.scale = float(real_number(flag, value(), std::numeric_limits<float>::min(), std::numeric_limits<float>::max()));
    } else if (flag == "--layout") {
      const std::string v = value();
      if (v == "contiguous")
        o.layout = RFA_LAYOUT_CONTIGUOUS;
      else if (v == "zigzag")
        o.layout = RFA_LAYOUT_ZIGZAG;
      else if (v == "stripe")
        o.layout = RFA_LAYOUT_STRIPE;
      else if (v == "balanced")
        o.layout = RFA_LAYOUT_BALANCED;
      else
        fail(RFA_ERROR_INVALID_ARGUMENT, "--layout must be contiguous, zigzag, stripe or balanced, got '", v, "'");
    } else if (flag == "--dtype") {
      const std::string v = value();
      if (v == "fp32" || v == "float32")
        o.dtype = RFA_DTYPE_FLOAT32;
      else if (v == "bf16" || v == "bfloat16")
        o.dtype = RFA_DTYPE_BFLOAT16;
      else if (v == "fp16" || v == "float16")
        o.dtype = RFA_DTYPE_FLOAT16;
      else
        fail(RFA_ERROR_INVALID_ARGUMENT, "--dtype must be fp32, bf16 or fp16, got '", v, "'");
    } else if (flag == "--mask") {
      const std::string v = value();
      o.mask_spec.clear();
      if (v == "causal") {
        o.mask = RFA_MASK_CAUSAL;
      } else if (v == "none") {
        o.mask = RFA_MASK_NONE;
      } else if (v.rfind("prefix-lm:", 0) == 0 || v.rfind("block-causal:", 0) == 0 || v.rfind("grid:", 0) == 0 ||
                 v.rfind("ranges:", 0) == 0) {
        o.mask = RFA_MASK_RANGES;
        o.mask_spec = v;
      } else {
        fail(RFA_ERROR_INVALID_ARGUMENT,
             "--mask must be causal, none, prefix-lm:P, block-causal:B, grid:NXxNY[xNZ]:R or ranges:FILE, got '", v,
             "'");
      }
    } else if (flag == "--window") {
      o.window = whole_number(flag, value(), 0);
    } else if (flag == "--documents") {
      o.documents_spec = value();
    } else if (flag == "--causal") {  // the mask flags' last word wins, --mask's too
      o.mask = RFA_MASK_CAUSAL;
      o.mask_spec.clear();
    } else if (flag == "--no-causal") {
      o.mask = RFA_MASK_NONE;
      o.mask_spec.clear();
    } else if (flag == "--no-check") {
      o.check = CheckMode::off;
    } else if (flag == "--release-workspace") {
      o.release_workspace = true;
    } else if (flag == "--no-overlap") {
      o.overlap = false;
    } else if (flag == "--strategy") {  // the last one given wins, auto too
      const std::string v = value();
      o.auto_strategy = v == "auto";
      if (v == "ring")
        o.strategy.kind = engine::StrategyKind::ring;
      else if (v == "ulysses")
        o.strategy.kind = engine::StrategyKind::ulysses;
      else if (v == "allgather")
        o.strategy.kind = engine::StrategyKind::allgather;
      else if (v == "hybrid")
        o.strategy.kind = engine::StrategyKind::hybrid;
      else if (v == "needed")
        o.strategy.kind = engine::StrategyKind::needed;
      else if (v != "auto")
        fail(RFA_ERROR_INVALID_ARGUMENT, "--strategy must be ring, ulysses, allgather, hybrid, needed or auto, got '",
             v, "'");
    } else if (flag == "--ulysses-degree") {
      o.strategy.ulysses_degree = whole_int(flag, value(), 1);
    } else if (flag == "--kernels") {
      const std::string v = value();
      if (v == "auto")
        o.kernels = engine::KernelRequest::automatic;
      else if (v == "rfa")
        o.kernels = engine::KernelRequest::rfa;
      else if (v == "cudnn")
        o.kernels = engine::KernelRequest::cudnn;
      else
        fail(RFA_ERROR_INVALID_ARGUMENT, "--kernels must be auto, rfa or cudnn, got '", v, "'");
    } else if (flag == "--kernel-path") {
      o.kernel_path = engine::parse_path_request(value(), "--kernel-path");
    } else if (flag == "--deterministic") {
      o.deterministic = true;
    } else if (flag == "--sinks") {
      o.sinks = true;
    } else if (flag == "--softcap") {
      const char* text = value();
      char* end = nullptr;
      o.softcap = std::strtof(text, &end);
      require(end && *end == '\0' && o.softcap > 0.0f && std::isfinite(o.softcap),
              "--softcap expects a positive number, got '", text, "'");
    } else if (flag == "--device") {
      const std::string v = value();
      if (v == "host")
        o.device = RunDevice::host;
      else if (v == "cuda")
        o.device = RunDevice::cuda;
      else
        fail(RFA_ERROR_INVALID_ARGUMENT, "--device must be host or cuda, got '", v, "'");
    } else {
      fail(RFA_ERROR_INVALID_ARGUMENT, "unknown option '", flag, "' (see --help)");
    }
  }
  if (!kv_heads_given) o.kv_heads = o.heads;
  if (o.mask_spec.rfind("grid:", 0) == 0) {  // the grid decides the length
    const GridSpec g = parse_grid(o.mask_spec);
    std::int64_t points = 0;
    require(!__builtin_mul_overflow(g.nx, g.ny, &points) && !__builtin_mul_overflow(points, g.nz, &points), "--mask ",
            o.mask_spec, ": the grid has too many points for 64-bit positions");
    require(!o.seq_given || o.seq == points, "--mask ", o.mask_spec, " has ", points, " points but --seq is ", o.seq,
            ": leave --seq out, or give the grid's size");
    o.seq = points;
    o.seq_given = true;
  }
  build_mask_lists(o);  // a bad spec fails here, before any work
  const engine::StrategyKind kind = o.strategy.kind;
  if (o.auto_strategy) {
    require(o.strategy.ulysses_degree == 0, "--ulysses-degree: --strategy auto chooses the degree");
  } else if (kind == engine::StrategyKind::hybrid) {
    require(o.strategy.ulysses_degree > 0,
            "--strategy hybrid needs --ulysses-degree N: the ranks per Ulysses group "
            "(N divides P and the heads; ranks per node is usual)");
  } else if (kind != engine::StrategyKind::ulysses) {  // Ulysses: the engine checks a degree against P
    require(o.strategy.ulysses_degree == 0, "--ulysses-degree applies to --strategy hybrid (or ulysses), not to ",
            engine::strategy_name(kind));
  }
  require(o.device == RunDevice::cuda || o.kernels != engine::KernelRequest::cudnn,
          "--kernels cudnn needs --device cuda (host runs use rfa's host kernels)");
  require(o.device == RunDevice::cuda || o.kernel_path != engine::PathRequest::sm90,
          "--kernel-path sm90 needs --device cuda (host runs use rfa's host kernels)");
  return o;
}

RunOptions parse_run_options(int argc, char** argv) {
  return refused_as_rfa_error([&] { return read_run_options(argc, argv); });
}

std::string strategy_label(const engine::StrategyChoice& choice) {
  std::string text = engine::strategy_name(choice.kind);
  if (choice.kind == engine::StrategyKind::hybrid) text += ":" + std::to_string(choice.ulysses_degree);
  return text;
}

std::string fit_default_seq(RunOptions& o, int ranks) {
  if (o.seq_given) return "";
  const std::int64_t per_rank = o.layout == RFA_LAYOUT_ZIGZAG ? 2 : o.layout == RFA_LAYOUT_BALANCED ? 8 : 1;
  const std::int64_t divisor = per_rank * std::int64_t(ranks);
  const std::int64_t fitted = o.seq / divisor * divisor;
  if (fitted == o.seq || fitted < 1) return "";
  const std::string old = std::to_string(o.seq);
  o.seq = fitted;
  build_mask_lists(o);  // a spec's entries follow the length (prefix-lm, block-causal, a file's checks)
  return "S=" + std::to_string(fitted) + ": the default " + old + " rounded down to a multiple of " +
         (per_rank == 1 ? std::string("P = ") : std::to_string(per_rank) + "P = ") + std::to_string(divisor) +
         " for the " + layout::layout_name(o.layout) + " layout";
}

}  // namespace perf
}  // namespace rfa
