// SPDX-License-Identifier: BSD-3-Clause
// The problem the setup suites set up: small, fp32, causal, GQA 2:1, that every strategy and
// layout fits on 1, 2 and 4 ranks.
#pragma once

#include "setup/attention_setup.hpp"

namespace rfa::setup {

inline SetupRequest small_request() {
  SetupRequest r;
  r.config.layout = RFA_LAYOUT_ZIGZAG;
  r.config.mask = RFA_MASK_CAUSAL;
  r.config.dtype = RFA_DTYPE_FLOAT32;
  r.config.batch = 1;
  r.config.seq_total = 2 * 4 * 16;
  r.config.heads = 4;
  r.config.kv_heads = 2;
  r.config.head_dim = 8;
  r.chosen_by = "the test";
  return r;
}

}  // namespace rfa::setup
