// SPDX-License-Identifier: BSD-3-Clause
// The cuDNN band plan without a GPU: for every ring step of every layout (contiguous, zigzag,
// stripe), P = 1..6, causal or not, windows of many widths and packed documents, the bands the
// plan asks of cuDNN must show exactly the (query, key) pairs the mask on global positions
// shows: each visible pair inside exactly one band call, no hidden pair visible, and every
// refusal one of the documented kinds. Exit code 0 when all hold.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cudnn/band_plan.hpp"
#include "engine/cuda_attention_shape.hpp"
#include "layout/sequence_layout.hpp"

namespace {

using rfa_cuda::cudnn::band_visible;
using rfa_cuda::cudnn::BandBlock;
using rfa_cuda::cudnn::BandPlan;
using rfa_cuda::cudnn::covers_whole_block;
using rfa_cuda::cudnn::plan_bands;

// The longest window a caller may give (options.window has no upper bound): it hides nothing.
constexpr std::int64_t kLongestWindow = std::numeric_limits<std::int64_t>::max();
int failures = 0, checked_steps = 0, refused_steps = 0, refused_tall_window = 0, direct_steps = 0;

void fail(const std::string& what) {
  if (failures < 20) std::printf("FAIL: %s\n", what.c_str());
  ++failures;
}

/// The rows a ring position holds: the library's layout, as the engine hands it to the kernels.
rfa_cuda_position_map positions(rfa_layout_t layout, std::int64_t S, int P, int r) {
  return rfa::engine::cuda_positions(rfa::layout::positions(layout, S, P, r));
}

std::vector<std::int64_t> expand(const rfa_cuda_position_map& m) {
  std::vector<std::int64_t> out;
  for (int s = 0; s < m.count; ++s)
    for (std::int64_t i = 0; i < m.seg[s].length; ++i) out.push_back(m.seg[s].start + i * m.seg[s].stride);
  return out;
}

std::int64_t document(const std::vector<std::int64_t>& bounds, std::int64_t p) {
  std::int64_t d = 0;
  while (d + 2 < std::int64_t(bounds.size()) && bounds[std::size_t(d + 1)] <= p) ++d;
  return d;
}

bool visible(std::int64_t q, std::int64_t k, bool causal, std::int64_t window, const std::vector<std::int64_t>& docs) {
  if (causal && k > q) return false;
  if (window > 0 && q - k >= window) return false;
  return docs.size() <= 2 || document(docs, q) == document(docs, k);
}

/// What check_block found: the plan's number of cuDNN calls (-1: refused or wrong), and whether it
/// is one band over the whole block.
struct Planned {
  int calls = -1;
  bool direct = false;
};

/// Checks the plan of the block of queries at `qmap` and keys at `kmap` against the mask.
Planned check_block(const std::string& where, rfa_cuda_position_map qmap, rfa_cuda_position_map kmap, bool causal,
                    std::int64_t window, const std::vector<std::int64_t>& docs, rfa_cuda_dtype dtype) {
  rfa_cuda_attention_shape s{};
  s.batch = 1;
  s.heads = s.kv_heads = 1;
  s.head_dim = 64;
  s.mask = causal ? RFA_CUDA_MASK_CAUSAL : RFA_CUDA_MASK_NONE;
  s.window = window;
  s.dtype = dtype;
  s.q_positions = qmap;
  s.k_positions = kmap;
  const std::vector<std::int64_t> qpos = expand(s.q_positions), kpos = expand(s.k_positions);
  s.seq_q = std::int64_t(qpos.size());
  s.seq_k = std::int64_t(kpos.size());
  const BandPlan plan = plan_bands(s, docs.empty() ? nullptr : docs.data(), std::int64_t(docs.size()));
  ++checked_steps;
  if (!plan.expressible) {
    ++refused_steps;
    if (plan.why_not.find("more query rows than key rows") != std::string::npos) ++refused_tall_window;
    // The only refusals: a 32-bit dtype, a document boundary inside the block, a window over a
    // tall block.
    const bool allowed = dtype == RFA_CUDA_FP32 || plan.why_not.find("document boundary") != std::string::npos ||
                         plan.why_not.find("more query rows than key rows") != std::string::npos;
    if (!allowed || plan.why_not.empty()) fail(where + ": refused for '" + plan.why_not + "'");
    if (plan.why_not.find("document boundary") != std::string::npos && docs.size() <= 2)
      fail(where + ": refused for documents without documents");
    return {};
  }
  std::vector<int> covered(qpos.size() * kpos.size(), 0);
  for (const BandBlock& b : plan.blocks) {
    if (b.q_rows <= 0 || b.k_rows <= 0 || b.q_begin < 0 || b.k_begin < 0 || b.q_begin + b.q_rows > s.seq_q ||
        b.k_begin + b.k_rows > s.seq_k) {
      fail(where + ": a band outside the block");
      return {};
    }
    if ((b.has_right_bound && b.right_bound < 0) || (b.has_left_bound && b.left_bound < 1))
      fail(where + ": a bound cuDNN refuses");
    if (b.has_left_bound && b.q_rows > b.k_rows) fail(where + ": a window band with s_q > s_kv");
    for (std::int64_t i = 0; i < b.q_rows; ++i)
      for (std::int64_t j = 0; j < b.k_rows; ++j)
        if (band_visible(b, i, j)) ++covered[std::size_t((b.q_begin + i) * s.seq_k + b.k_begin + j)];
    // Every row of a band sees a key in it (rows that see nothing are trimmed away, so the
    // merge never meets a cuDNN row without keys).
    for (std::int64_t i = 0; i < b.q_rows; ++i) {
      bool any = false;
      for (std::int64_t j = 0; j < b.k_rows && !any; ++j) any = band_visible(b, i, j);
      if (!any) fail(where + ": a band row that sees no key");
    }
  }
  for (std::size_t i = 0; i < qpos.size(); ++i)
    for (std::size_t j = 0; j < kpos.size(); ++j) {
      const int want = visible(qpos[i], kpos[j], causal, window, docs) ? 1 : 0;
      const int got = covered[i * kpos.size() + j];
      if (got != want) {
        fail(where + ": query " + std::to_string(qpos[i]) + " key " + std::to_string(kpos[j]) + " expected " +
             std::to_string(want) + " got " + std::to_string(got));
        return {};
      }
    }
  // A block cuDNN may write in place is one band whose rows and keys are all the block's (each
  // row seeing a key, checked above). One rank's block is always one (a zigzag rank's two chunks
  // continue each other at P = 1), unless a document boundary cuts it.
  const bool direct = covers_whole_block(plan, s.seq_q, s.seq_k);
  direct_steps += direct ? 1 : 0;
  if (direct && (plan.blocks.size() != 1 || plan.blocks[0].q_rows != s.seq_q || plan.blocks[0].k_rows != s.seq_k))
    fail(where + ": not one whole band");
  return {int(plan.blocks.size()), direct};
}

void check_step(rfa_layout_t layout, std::int64_t S, int P, int me, int owner, bool causal, std::int64_t window,
                const std::vector<std::int64_t>& docs, rfa_cuda_dtype dtype) {
  const std::string where = std::string(rfa::layout::layout_name(layout)) + " S=" + std::to_string(S) +
                            " P=" + std::to_string(P) + " step " + std::to_string(me) + "<-" + std::to_string(owner) +
                            (causal ? " causal" : "") + " w=" + std::to_string(window) +
                            " docs=" + std::to_string(docs.size());
  const rfa_cuda_position_map qmap = positions(layout, S, P, me), kmap = positions(layout, S, P, owner);
  const Planned planned = check_block(where, qmap, kmap, causal, window, docs, dtype);
  if (planned.calls < 0) return;
  const bool cut = docs.size() > 2 && document(docs, 0) != document(docs, S - 1);
  if (P == 1 && !cut && !planned.direct) fail(where + ": one rank's block is not one band over the whole block");
  // Without a window or documents every step is one cuDNN call: the diagonal one causal band, the
  // others the full quarters of a zigzag step side by side.
  const bool one_document = docs.size() <= 2;
  if (window == 0 && one_document && planned.calls > 1)
    fail(where + ": " + std::to_string(planned.calls) + " cuDNN calls where one band covers the step");
}

}  // namespace

int main() {
  std::mt19937_64 rng(5);
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE}) {
    for (int P = 1; P <= 6; ++P) {
      const std::int64_t S = 2 * P * 12;  // divisible by every layout's rule
      std::vector<std::vector<std::int64_t>> doc_sets = {{}};
      doc_sets.push_back({0, S});                       // one document: no mask
      doc_sets.push_back({0, S / 3, S / 3, S - 5, S});  // an empty document, a short last one
      for (int t = 0; t < 2; ++t) {
        std::vector<std::int64_t> d = {0};
        while (d.back() < S) d.push_back(std::min<std::int64_t>(S, d.back() + 1 + std::int64_t(rng() % 30)));
        doc_sets.push_back(d);
      }
      for (int me = 0; me < P; ++me)
        for (int owner = 0; owner < P; ++owner)
          for (bool causal : {false, true})
            for (std::int64_t window : {std::int64_t(0), std::int64_t(1), std::int64_t(2), std::int64_t(3),
                                        std::int64_t(5), std::int64_t(7), std::int64_t(12), std::int64_t(13),
                                        std::int64_t(24), std::int64_t(31), std::int64_t(1000), kLongestWindow})
              for (const auto& docs : doc_sets)
                check_step(layout, S, P, me, owner, causal, window, docs, RFA_CUDA_BF16);
    }
  }
  // The layouts' pieces pair up into bands cuDNN takes, windows included: none is refused for a
  // window over more query rows than key rows (a zigzag rank's continuing chunks are joined only
  // where that makes the step one band over the whole block).
  if (refused_tall_window > 0)
    fail(std::to_string(refused_tall_window) + " steps refused for a window over a tall block");
  // Maps no layout makes. The diagonal block is one causal band only where its positions increase:
  // a map whose second piece comes first is not; two increasing pieces of different strides are,
  // which pairing the pieces would refuse.
  rfa_cuda_position_map down{};
  down.count = 2;
  down.seg[0] = {10, 1, 4};
  down.seg[1] = {0, 1, 4};
  if (check_block("a map whose second piece comes first", down, down, true, 0, {}, RFA_CUDA_BF16).calls < 2)
    fail("a map whose second piece comes first: planned as one band");
  rfa_cuda_position_map strided{};
  strided.count = 2;
  strided.seg[0] = {1, 3, 5};
  strided.seg[1] = {20, 2, 3};
  if (!check_block("two increasing pieces of different strides", strided, strided, true, 0, {}, RFA_CUDA_BF16).direct)
    fail("two increasing pieces of different strides: not one band over the block");
  rfa_cuda_position_map one{};
  one.count = 1;
  one.seg[0] = {7, 1, 1};
  if (!check_block("one token", one, one, true, 0, {}, RFA_CUDA_BF16).direct)
    fail("one token: not one band over the block");
  // 32-bit tensors are never asked of cuDNN.
  check_step(RFA_LAYOUT_CONTIGUOUS, 8, 2, 0, 0, true, 0, {}, RFA_CUDA_FP32);
  check_block("fp32 on the diagonal", positions(RFA_LAYOUT_ZIGZAG, 8, 2, 0), positions(RFA_LAYOUT_ZIGZAG, 8, 2, 0),
              true, 0, {}, RFA_CUDA_FP32);
  std::printf(
      "cudnn_band_plan_test: %d steps, %d left to rfa's kernels (%d of them a window over a tall block), %d "
      "one band over the whole block, %d failures\n",
      checked_steps, refused_steps, refused_tall_window, direct_steps, failures);
  return failures == 0 ? 0 : 1;
}
