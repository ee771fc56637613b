// Command-line options of the main job (rfa_run). Every rank parses the same argv, so every
// rank reaches the same verdict on bad flags without talking to the others.
#pragma once

#include <cstdint>
#include <string>

#include "rfa/rfa.h"

namespace rfa {
namespace perf {

struct RunOptions {
  std::int64_t batch = 1;
  std::int64_t seq = 8192;
  std::int64_t heads = 8;
  std::int64_t kv_heads = 8;
  std::int64_t head_dim = 64;
  rfa_layout_t layout = RFA_LAYOUT_ZIGZAG;
  rfa_dtype_t dtype = RFA_DTYPE_BFLOAT16;
  rfa_mask_t mask = RFA_MASK_CAUSAL;
  float scale = 0.0f;
  int repeat = 1;
  bool check = true;
  bool overlap = true;
  bool help = false;
};

/// Parses argv; throws rfa::Error(RFA_ERROR_INVALID_ARGUMENT) with a message naming the flag.
RunOptions parse_run_options(int argc, char** argv);

/// The --help text.
std::string run_usage(const char* program);

}  // namespace perf
}  // namespace rfa
