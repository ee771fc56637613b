// SPDX-License-Identifier: BSD-3-Clause
#include "core/mask_ranges.hpp"

#include <algorithm>

#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "core/fnv_hash.hpp"

namespace rfa {
namespace {

void check_range(std::int64_t begin, std::int64_t end, std::int64_t seq_total, const char* what, std::int64_t i,
                 const char* axis) {
  require(begin >= 0 && begin <= seq_total, what, "[", i, "].", axis, "_begin is ", begin,
          "; it must lie in [0, seq_total = ", seq_total, "]");
  require(end >= begin && end <= seq_total, what, "[", i, "].", axis, "_end is ", end, "; it must lie in [", axis,
          "_begin = ", begin, ", seq_total = ", seq_total, "] (a range is [begin, end); begin == end is empty)");
}

}  // namespace

void validate_mask_ranges(const rfa_mask_range_t* ranges, std::int64_t count, std::int64_t seq_total,
                          const char* what) {
  require(count >= 0, what, " has a count of ", count, "; it must be >= 0");
  if (count == 0) return;
  require(ranges != nullptr, what, " is NULL but its count is ", count);
  for (std::int64_t i = 0; i < count; ++i) {
    const rfa_mask_range_t& r = ranges[i];
    check_range(r.q_begin, r.q_end, seq_total, what, i, "q");
    check_range(r.k_begin, r.k_end, seq_total, what, i, "k");
    const int kind = enum_value(r.kind);
    require(kind >= RFA_RANGE_FULL && kind <= RFA_RANGE_BAND, what, "[", i, "].kind is ", kind,
            ", not an rfa_range_kind_t value");
    if (kind == RFA_RANGE_BAND) {
      require(r.band_lo <= r.band_hi, what, "[", i, "] is a band from offset ", r.band_lo, " to ", r.band_hi,
              "; band_lo must not exceed band_hi");
      const std::int64_t limit = kUnboundedOffset / 2;
      require(r.band_lo > -limit && r.band_hi < limit, what, "[", i, "]'s band offsets (", r.band_lo, ", ", r.band_hi,
              ") must lie within +-2^61");
    }
  }
}

std::int64_t mask_ranges_hash(const rfa_mask_range_t* ranges, std::int64_t count) {
  std::uint64_t h = kFnvOffsetBasis;
  for (std::int64_t i = 0; i < count; ++i) {
    const rfa_mask_range_t& r = ranges[i];
    const bool band = enum_value(r.kind) == RFA_RANGE_BAND;
    for (const std::int64_t v : {r.q_begin, r.q_end, r.k_begin, r.k_end, std::int64_t(enum_value(r.kind)),
                                 band ? r.band_lo : 0, band ? r.band_hi : 0})
      fnv1a_append(h, v);
  }
  return fnv1a_value(h);
}

RangeEntry range_entry(const rfa_mask_range_t& r) {
  RangeEntry e{r.q_begin, r.q_end, r.k_begin, r.k_end, -kUnboundedOffset, kUnboundedOffset};
  switch (enum_value(r.kind)) {
    case RFA_RANGE_CAUSAL: e.diag_hi = r.k_end - r.q_end; break;  // k - k_end <= q - q_end
    case RFA_RANGE_ANTICAUSAL: e.diag_lo = r.k_end - r.q_end + 1; break;
    case RFA_RANGE_BAND:
      e.diag_lo = r.k_begin - r.q_begin + r.band_lo;
      e.diag_hi = r.k_begin - r.q_begin + r.band_hi;
      break;
    default: break;
  }
  return e;
}

MaskRanges::MaskRanges(const rfa_mask_range_t* ranges, std::int64_t count, std::int64_t seq_total, const char* what) {
  validate_mask_ranges(ranges, count, seq_total, what);
  if (count > 0) public_.assign(ranges, ranges + count);
  hash_ = mask_ranges_hash(ranges, count);
  // Each entry cut to the queries that see some key of it and the keys some query sees:
  // query q sees k in [k_begin, k_end) with k - q in [diag_lo, diag_hi].
  std::vector<RangeEntry> cut;
  std::vector<std::int64_t> points;
  for (const rfa_mask_range_t& r : public_) {
    RangeEntry e = range_entry(r);
    e.q_begin = std::max(e.q_begin, e.k_begin - e.diag_hi);
    e.q_end = std::min(e.q_end, e.k_end - e.diag_lo);  // q <= k_end - 1 - diag_lo
    if (e.q_begin >= e.q_end) continue;
    e.k_begin = std::max(e.k_begin, e.q_begin + e.diag_lo);
    e.k_end = std::min(e.k_end, e.q_end + e.diag_hi);  // k <= q_end - 1 + diag_hi
    if (e.k_begin >= e.k_end) continue;
    cut.push_back(e);
    points.push_back(e.q_begin);
    points.push_back(e.q_end);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  // Bands between consecutive points; an entry covers the bands from its q_begin to its q_end.
  const std::size_t n = points.empty() ? 0 : points.size() - 1;
  auto point_index = [&](std::int64_t p) {
    return std::size_t(std::lower_bound(points.begin(), points.end(), p) - points.begin());
  };
  std::vector<std::int64_t> per_band(n + 1, 0);
  for (const RangeEntry& e : cut) {
    ++per_band[point_index(e.q_begin)];
    --per_band[point_index(e.q_end)];
  }
  std::int64_t total = 0, running = 0;
  for (std::size_t b = 0; b < n; ++b) {
    running += per_band[b];
    per_band[b] = running;
    total += running;
  }
  require(total <= kMaxIndexEntries, what, " needs an index of ", total, " entries (entries overlapping in ",
          "their queries are kept once per band of queries they share), more than the ", kMaxIndexEntries,
          " rfa keeps: merge entries, or split long query ranges less finely");
  std::vector<std::int64_t> first(n, 0);  // where each kept band's entries start in entries_
  for (std::size_t b = 0; b < n; ++b) {
    if (per_band[b] == 0) continue;
    first[b] = std::int64_t(entries_.size());
    band_begin_.push_back(points[b]);
    band_end_.push_back(points[b + 1]);
    band_offset_.push_back(first[b]);
    entries_.resize(entries_.size() + std::size_t(per_band[b]));
  }
  band_offset_.push_back(std::int64_t(entries_.size()));
  std::vector<std::int64_t> fill = first;
  for (const RangeEntry& e : cut) {
    for (std::size_t b = point_index(e.q_begin); b < point_index(e.q_end); ++b) {
      RangeEntry in_band = e;  // the keys the band's queries can see of it
      in_band.q_begin = points[b];
      in_band.q_end = points[b + 1];
      in_band.k_begin = std::max(e.k_begin, in_band.q_begin + e.diag_lo);
      in_band.k_end = std::min(e.k_end, in_band.q_end + e.diag_hi);
      entries_[std::size_t(fill[b]++)] = in_band;
    }
  }
}

void visible_key_intervals(const MaskRangeIndex& index, std::int64_t q, std::int64_t lo, std::int64_t hi,
                           std::vector<std::pair<std::int64_t, std::int64_t>>& out) {
  out.clear();
  const std::int64_t band = index.band_of(q);
  if (band < 0 || lo > hi) return;
  for (std::int64_t e = index.band_offset[band]; e < index.band_offset[band + 1]; ++e) {
    const RangeEntry& r = index.entries[e];
    const std::int64_t a = std::max({lo, r.k_begin, q + r.diag_lo}), b = std::min({hi, r.k_end - 1, q + r.diag_hi});
    if (a <= b) out.emplace_back(a, b);
  }
  std::sort(out.begin(), out.end());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (kept > 0 && out[i].first <= out[kept - 1].second + 1) {
      out[kept - 1].second = std::max(out[kept - 1].second, out[i].second);
    } else {
      out[kept++] = out[i];
    }
  }
  out.resize(kept);
}

MaskRangeIndex MaskRanges::index() const {
  MaskRangeIndex x;
  x.band_begin = band_begin_.data();
  x.band_end = band_end_.data();
  x.band_offset = band_offset_.data();
  x.entries = entries_.data();
  x.band_count = std::int64_t(band_begin_.size());
  x.on = true;
  return x;
}

}  // namespace rfa
