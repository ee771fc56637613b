// SPDX-License-Identifier: BSD-3-Clause
// Command-line options of the main job (rfa_run). Every rank parses the same argv, so every
// rank reaches the same verdict on bad flags without talking to the others.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention_work.hpp"
#include "command_line.hpp"
#include "core/mask_ranges.hpp"
#include "document_spec.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/cuda_kernel_choice.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace perf {

/// automatic: the full-sequence check up to kCheckAutoMaxSeq tokens, the sampled one above.
enum class CheckMode { automatic, on, sampled, off };

/// Where the ring runs: the host kernels, or the CUDA kernels on this rank's GPU.
enum class RunDevice { host, cuda };

struct RunOptions {
  std::int64_t batch = 1;
  std::int64_t seq = 8192;
  std::int64_t heads = 8;
  std::int64_t kv_heads = 8;
  std::int64_t head_dim = 64;
  std::int64_t value_dim = 0;  ///< --value-head-dim: V's head dim where it differs (0: head_dim)
  rfa_layout_t layout = RFA_LAYOUT_ZIGZAG;
  rfa_dtype_t dtype = RFA_DTYPE_BFLOAT16;
  rfa_mask_t mask = RFA_MASK_CAUSAL;
  std::int64_t window = 0;  ///< --window W: sliding window (0: none)
  /// --mask prefix-lm:P | block-causal:B | grid:NXxNY[xNZ]:R | ranges:FILE: a mask given as
  /// ranges (mask RFA_MASK_RANGES); empty otherwise.
  std::string mask_spec;
  /// mask_spec's entries for `seq`, validated and indexed once (parse_run_options, and
  /// fit_default_seq when it changes the length); null for the other masks.
  std::shared_ptr<const MaskRanges> ranges;
  /// --documents SPEC: packed documents (document_spec.hpp); empty: none.
  std::string documents_spec;
  /// documents_spec's lists for `seq` and `batch` (parse_run_options, and fit_default_seq when
  /// it changes the length).
  DocumentLists documents;
  float scale = 0.0f;
  int warmup = 1;
  int repeat = 3;
  CheckMode check = CheckMode::automatic;
  /// --sampled-positions N: the sampled check on N global positions (0: kSampledRowsPerRank
  /// local rows of every rank).
  std::int64_t sampled_positions = 0;
  bool overlap = true;
  bool help = false;
  bool seq_given = false;              ///< --seq was on the command line (the default adapts to P)
  std::string json;                    ///< --json FILE: also write the results there (rank 0)
  RunDevice device = RunDevice::host;  ///< --device host|cuda
  engine::StrategyChoice strategy;     ///< --strategy, --ulysses-degree (default: the ring)
  bool auto_strategy = false;          ///< --strategy auto: the performance model's plan (and layout)
  std::string plan;                    ///< what runs and why, for the header (auto: the model's words)
  engine::KernelRequest kernels = engine::KernelRequest::automatic;  ///< --kernels (CUDA devices)
  /// --kernel-path (CUDA devices); unset: RFA_CUDA_KERNEL_PATH decides, as for the C API.
  engine::PathRequest kernel_path = engine::PathRequest::environment;
  bool deterministic = false;  ///< --deterministic: bitwise reproducible gradients
  bool sinks = false;          ///< --sinks: attention sinks (ring_problem.hpp, run_sinks)
  float softcap = 0.0f;        ///< --softcap C: soft-capped scores (0: none)
  /// --release-workspace: the context's kept workspace freed before every timed pass (what a
  /// code that gives the memory back between calls pays).
  bool release_workspace = false;
};

/// Above this many tokens the full-sequence check gives way to the sampled one unless --check
/// asks for it: it builds full-sequence fp32 tensors on every rank, which a long (Slurm) run
/// must not.
constexpr std::int64_t kCheckAutoMaxSeq = 32768;

/// Which check runs for these options: on (the full sequence), sampled, or off.
inline CheckMode check_to_run(const RunOptions& o) {
  if (o.check != CheckMode::automatic) return o.check;
  return o.seq <= kCheckAutoMaxSeq ? CheckMode::on : CheckMode::sampled;
}

/// When --seq was not given, rounds the default down to the nearest length the layout can
/// split over `ranks` (zigzag: a multiple of 2P, else of P) and returns a note saying so
/// (empty when nothing changed). An explicit --seq is never changed.
std::string fit_default_seq(RunOptions& o, int ranks);

/// "ring", "ulysses", "allgather" or "hybrid:PU": the strategy as output and JSON name it (the
/// spelling of rfa_ring_bench --strategy).
std::string strategy_label(const engine::StrategyChoice& choice);

/// The mask these options run for batch entry `entry` (for counting the visible scores).
MaskShape mask_shape(const RunOptions& o, std::int64_t entry = 0);

/// The scores the mask leaves visible in one head, summed over the batch's entries.
double visible_scores_over_batch(const RunOptions& o);

/// The FLOPs of one pass of these options over all ranks: over the scores the mask leaves visible
/// (what every rate and fraction of peak counts) and by FlashAttention's convention (kept beside
/// it, labelled as such).
struct PassFlops {
  double visible = 0;
  double flash_convention = 0;
};

inline PassFlops pass_flops(const RunOptions& o, bool backward) {
  const double dv = double(o.value_dim != 0 ? o.value_dim : o.head_dim);
  return {visible_flops(1.0, double(o.heads), double(o.head_dim), dv, visible_scores_over_batch(o), backward),
          flash_convention_flops(double(o.batch), double(o.seq), double(o.seq), double(o.heads), double(o.head_dim), dv,
                                 o.mask == RFA_MASK_CAUSAL, backward)};
}

/// The head dims as labels print them: "64", or "192/128" where V's differs (Q and K's / V's).
inline std::string head_dims_label(const RunOptions& o) {
  return std::to_string(o.head_dim) +
         (o.value_dim != 0 && o.value_dim != o.head_dim ? "/" + std::to_string(o.value_dim) : "");
}

/// Parses argv; throws rfa::Error(RFA_ERROR_INVALID_ARGUMENT) with a message naming the flag.
RunOptions parse_run_options(int argc, char** argv);

/// The --help text.
std::string run_usage(const char* program);

}  // namespace perf
}  // namespace rfa
