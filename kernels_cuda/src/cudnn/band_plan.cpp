// SPDX-License-Identifier: BSD-3-Clause
#include "cudnn/band_plan.hpp"

#include <algorithm>

namespace rfa_cuda {
namespace cudnn {
namespace {

/// One affine piece of a position map and the local row it starts at.
struct Piece {
  std::int64_t start, stride, length, local_begin;
};

/// Whether segment `b` continues `a`: the same stride, starting where `a` ends.
bool continues(const rfa_cuda_segment& a, const rfa_cuda_segment& b) {
  return a.length > 0 && b.length > 0 && a.stride == b.stride && b.start == a.start + a.stride * a.length;
}

/// The map's segments, each one piece; with `join`, a segment that continues the previous one
/// extends that piece instead.
std::vector<Piece> pieces(const rfa_cuda_position_map& map, std::int64_t seq, bool join) {
  if (map.count == 0) return {{0, 1, seq, 0}};
  std::vector<Piece> out;
  std::int64_t begin = 0;
  for (int s = 0; s < map.count && s < 2; ++s) {
    const rfa_cuda_segment& g = map.seg[s];
    if (g.length <= 0) continue;
    if (join && s == 1 && !out.empty() && continues(map.seg[0], g)) {
      out.back().length += g.length;  // one affine run of positions
    } else {
      out.push_back({g.start, g.stride, g.length, begin});
    }
    begin += g.length;
  }
  return out;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && (a < 0)); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

/// The document of a global position: the last d with bounds[d] <= position.
std::int64_t document_of(const std::int64_t* bounds, std::int64_t count, std::int64_t position) {
  const std::int64_t* it = std::upper_bound(bounds, bounds + count, position);
  return std::max<std::int64_t>(0, std::min<std::int64_t>(count - 2, (it - bounds) - 1));
}

BandPlan refuse(const std::string& why) {
  BandPlan plan;
  plan.why_not = why;
  return plan;
}

/// The plan over the maps' pieces (joined where `join`).
BandPlan plan_pieces(const rfa_cuda_attention_shape& shape, const std::int64_t* host_doc_bounds,
                     std::int64_t doc_bound_count, bool join) {
  const bool documents = doc_bound_count > 2;
  if (documents && host_doc_bounds == nullptr) return refuse("the document boundaries are not on the host");
  BandPlan plan;
  plan.expressible = true;
  const bool causal = shape.mask == RFA_CUDA_MASK_CAUSAL;
  for (const Piece& q : pieces(shape.q_positions, shape.seq_q, join)) {
    for (const Piece& k : pieces(shape.k_positions, shape.seq_k, join)) {
      if (q.length <= 0 || k.length <= 0) continue;
      if (q.stride != k.stride) return refuse("the query and key positions have different strides");
      const std::int64_t sigma = q.stride, delta = q.start - k.start;
      if (documents) {
        const std::int64_t q_first = document_of(host_doc_bounds, doc_bound_count, q.start);
        const std::int64_t q_last = document_of(host_doc_bounds, doc_bound_count, q.start + sigma * (q.length - 1));
        const std::int64_t k_first = document_of(host_doc_bounds, doc_bound_count, k.start);
        const std::int64_t k_last = document_of(host_doc_bounds, doc_bound_count, k.start + sigma * (k.length - 1));
        if (k_last < q_first || q_last < k_first) continue;  // no document in common: hidden
        if (!(q_first == q_last && k_first == k_last && q_first == k_first)) {
          return refuse("a document boundary falls inside the block (packed documents run on rfa's kernels)");
        }
      }
      // In local indices i (query) and j (key) of this pair: causal is j <= i + r, the window
      // i - j < left.
      // A window longer than the pair's longest distance, from its last query back to its first
      // key, hides nothing here (and shape.window - delta could leave int64: a window may be any
      // size).
      const std::int64_t longest = q.start + sigma * (q.length - 1) - k.start;
      bool has_right = causal, has_left = shape.window > 0 && shape.window <= longest;
      std::int64_t right = floor_div(delta, sigma);
      std::int64_t left = has_left ? ceil_div(shape.window - delta, sigma) : 0;
      if (has_right && has_left && right + left < 1) continue;  // an empty band
      // Leading rows (or keys) that see nothing are dropped, which moves the diagonal into the
      // band: then right >= 0 and left >= 1, as cuDNN needs.
      std::int64_t q_drop = 0, k_drop = 0;
      if (has_right && right < 0) {
        q_drop = -right;
        right = 0;
        left -= q_drop;
      } else if (has_left && left < 1) {
        k_drop = 1 - left;
        left = 1;
        right -= k_drop;
      }
      std::int64_t rows = q.length - q_drop, cols = k.length - k_drop;
      if (rows <= 0 || cols <= 0) continue;
      // Trailing rows that see no key, then trailing keys that no row sees.
      if (has_left) rows = std::min(rows, cols + left - 1);
      if (has_right) cols = std::min(cols, rows + right);
      if (rows <= 0 || cols <= 0) continue;
      // Bounds that hide nothing in this block are left out.
      if (has_right && right >= cols - 1) has_right = false;
      if (has_left && left >= rows) has_left = false;
      if (has_left && rows > cols) {
        return refuse("a sliding window over more query rows than key rows (cuDNN needs s_q <= s_kv for it)");
      }
      BandBlock b;
      b.q_begin = q.local_begin + q_drop;
      b.q_rows = rows;
      b.k_begin = k.local_begin + k_drop;
      b.k_rows = cols;
      b.has_right_bound = has_right;
      b.right_bound = has_right ? right : 0;
      b.has_left_bound = has_left;
      b.left_bound = has_left ? left : 0;
      plan.blocks.push_back(b);
    }
  }
  return plan;
}

/// Whether `map` lists its positions in increasing order: each piece rising, the second after the
/// first.
bool increasing(const rfa_cuda_position_map& map) {
  if (map.count == 0) return true;  // positions 0, 1, ...
  std::int64_t last = -1;
  for (int s = 0; s < map.count && s < 2; ++s) {
    const rfa_cuda_segment& g = map.seg[s];
    if (g.length <= 0) continue;
    if (g.length > 1 && g.stride <= 0) return false;
    if (g.start <= last) return false;
    last = g.start + g.stride * (g.length - 1);
  }
  return true;
}

bool same_positions(const rfa_cuda_position_map& a, const rfa_cuda_position_map& b) {
  if (a.count != b.count) return false;
  for (int s = 0; s < a.count && s < 2; ++s)
    if (a.seg[s].start != b.seg[s].start || a.seg[s].stride != b.seg[s].stride || a.seg[s].length != b.seg[s].length)
      return false;
  return true;
}

/// A block whose queries and keys are the same positions in increasing order, under the causal mask
/// alone (no window, no documents): key j is visible to query i iff position k(j) <= q(i), and with
/// q = k increasing that is j <= i. The whole block is then one causal band (a diagonal ring step:
/// each rank's own block, whatever the layout), every row seeing at least its own key.
bool causal_diagonal(const rfa_cuda_attention_shape& shape, std::int64_t doc_bound_count) {
  return shape.mask == RFA_CUDA_MASK_CAUSAL && shape.window <= 0 && doc_bound_count <= 2 &&
         shape.seq_q == shape.seq_k && shape.seq_q > 0 && same_positions(shape.q_positions, shape.k_positions) &&
         increasing(shape.q_positions);
}

bool unbounded(const BandBlock& b) { return !b.has_right_bound && !b.has_left_bound; }

/// Joins `b` into `a` where both are full rectangles side by side (the same key rows and query rows
/// that meet, or the same query rows and key rows that meet): their union is one full rectangle.
bool join_side_by_side(BandBlock& a, const BandBlock& b) {
  if (!unbounded(a) || !unbounded(b)) return false;
  if (a.k_begin == b.k_begin && a.k_rows == b.k_rows &&
      (a.q_begin + a.q_rows == b.q_begin || b.q_begin + b.q_rows == a.q_begin)) {
    a.q_begin = std::min(a.q_begin, b.q_begin);
    a.q_rows += b.q_rows;
    return true;
  }
  if (a.q_begin == b.q_begin && a.q_rows == b.q_rows &&
      (a.k_begin + a.k_rows == b.k_begin || b.k_begin + b.k_rows == a.k_begin)) {
    a.k_begin = std::min(a.k_begin, b.k_begin);
    a.k_rows += b.k_rows;
    return true;
  }
  return false;
}

/// Fewer, larger cuDNN calls for the same pairs: full bands side by side joined until none is left
/// (a zigzag ring step's two full quarters become one call).
BandPlan join_full_bands(BandPlan plan) {
  std::vector<BandBlock>& blocks = plan.blocks;
  for (bool joined = true; joined;) {
    joined = false;
    for (std::size_t i = 0; i < blocks.size() && !joined; ++i)
      for (std::size_t j = i + 1; j < blocks.size() && !joined; ++j)
        if (join_side_by_side(blocks[i], blocks[j])) {
          blocks.erase(blocks.begin() + std::ptrdiff_t(j));
          joined = true;
        }
  }
  return plan;
}

}  // namespace

BandPlan plan_bands(const rfa_cuda_attention_shape& shape, const std::int64_t* host_doc_bounds,
                    std::int64_t doc_bound_count) {
  if (shape.dtype != RFA_CUDA_BF16 && shape.dtype != RFA_CUDA_FP16) {
    return refuse("cuDNN's fused attention takes bf16 or fp16 tensors");
  }
  if (causal_diagonal(shape, doc_bound_count)) {
    BandPlan plan;
    plan.expressible = true;
    BandBlock whole;
    whole.q_rows = shape.seq_q;
    whole.k_rows = shape.seq_k;
    whole.has_right_bound = shape.seq_k > 1;  // a bound that hides nothing is left out
    plan.blocks.push_back(whole);
    return plan;
  }
  // Segments that continue each other are one piece where that makes the block one band over
  // the whole of it; elsewhere each segment is its own (a window band over a joined piece may have
  // more rows than cuDNN takes).
  const auto joins = [](const rfa_cuda_position_map& m) { return m.count == 2 && continues(m.seg[0], m.seg[1]); };
  if (!joins(shape.q_positions) && !joins(shape.k_positions))
    return join_full_bands(plan_pieces(shape, host_doc_bounds, doc_bound_count, false));
  BandPlan joined = plan_pieces(shape, host_doc_bounds, doc_bound_count, true);
  if (covers_whole_block(joined, shape.seq_q, shape.seq_k)) return joined;
  return join_full_bands(plan_pieces(shape, host_doc_bounds, doc_bound_count, false));
}

}  // namespace cudnn
}  // namespace rfa_cuda
