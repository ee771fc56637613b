// SPDX-License-Identifier: BSD-3-Clause
// What the CUDA accuracy tests share (kernel_test.cu, cudnn_attention_test.cu): a case (shape,
// mask, position maps), its float64 reference problem, random inputs, and FlashAttention's
// acceptance rule against float64 with its report.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "reference_attention.hpp"
#include "rfa_cuda/flash.h"
#include "test_support.cuh"

namespace rfa_cuda_test {
namespace ref = rfa::reference;

inline int failures = 0;               // checks that failed so far
inline std::mt19937_64 rng(20240607);  // the inputs of every case

struct Case {
  std::string name;
  rfa_cuda_dtype dtype;
  int head_dim;
  int batch, seq_q, seq_k, heads, kv_heads;
  bool causal;
  rfa_cuda_position_map q_map{}, k_map{};  // count 0: identity
  std::int64_t window = 0;                 // sliding window (0: none)
  std::vector<std::int64_t> docs = {};     // packed documents' cumulative boundaries (empty: none)
  float softcap = 0.f;                     // scores soft-capped at +-softcap (0: none; the sm80 path only)
  bool ranges_on = false;                  // a mask given as ranges (the sm80 path only) ...
  std::vector<ref::Range> ranges = {};     // ... whose entries these are
  // Per-sequence documents: batch + 1 offsets cutting `docs` into the entries' lists (empty:
  // `docs` serves every entry; the sm80 path only).
  std::vector<std::int64_t> doc_offsets = {};
  int value_dim = 0;  // V, out, dout and dV's head dim where it differs from head_dim (0: head_dim)
  // Every scaled score 9 to 14, past a soft cap of 1 (softcap 1): tanh is 1 in fp32, yet dQ and dK
  // are 4 exp(-2 s) of their uncapped size (1e-8 to 1e-12), not 0 (as a slope taken as 1 - t^2
  // would make them); they are measured against their own size (expect_close's own_size).
  bool past_cap = false;
  int dv() const { return value_dim != 0 ? value_dim : head_dim; }
};

// A mask given as ranges indexed as rfa_cuda_attention_shape's range_* fields describe, in device
// memory (freed with the case). Built here independently of the library's index: bands cut at
// every entry's query bounds, each with every entry that covers it, key ranges uncut.
class DeviceRangeIndex {
 public:
  explicit DeviceRangeIndex(const Case& c) : on_(c.ranges_on) {
    if (!on_) return;
    constexpr std::int64_t kFar = std::int64_t(1) << 62;
    std::vector<std::int64_t> cuts;
    for (const ref::Range& r : c.ranges)
      if (r.q_begin < r.q_end) cuts.insert(cuts.end(), {r.q_begin, r.q_end});
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<std::int64_t> begin, end, offset, entries;
    for (std::size_t b = 0; b + 1 < cuts.size(); ++b) {
      const std::size_t before = entries.size();
      for (const ref::Range& r : c.ranges) {
        if (r.q_begin > cuts[b] || r.q_end < cuts[b + 1] || r.k_begin >= r.k_end) continue;
        std::int64_t lo = -kFar, hi = kFar;  // the offsets k - q the kind lets through
        if (r.kind == ref::Range::causal) hi = r.k_end - r.q_end;
        if (r.kind == ref::Range::anticausal) lo = r.k_end - r.q_end + 1;
        if (r.kind == ref::Range::band) lo = r.k_begin - r.q_begin + r.band_lo, hi = r.k_begin - r.q_begin + r.band_hi;
        entries.insert(entries.end(), {r.q_begin, r.q_end, r.k_begin, r.k_end, lo, hi});
      }
      if (entries.size() == before) continue;
      begin.push_back(cuts[b]);
      end.push_back(cuts[b + 1]);
      offset.push_back(std::int64_t(before / 6));
    }
    offset.push_back(std::int64_t(entries.size() / 6));
    bands_ = std::int64_t(begin.size());
    for (auto [host, device] :
         {std::pair{&begin, &begin_}, {&end, &end_}, {&offset, &offset_}, {&entries, &entries_}}) {
      if (host->empty() || bands_ == 0) continue;  // no bands: no arrays, as the engine copies them
      RFA_TEST_CUDA(cudaMalloc(device, host->size() * sizeof(std::int64_t)));
      RFA_TEST_CUDA(cudaMemcpy(*device, host->data(), host->size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));
    }
  }
  ~DeviceRangeIndex() {
    for (std::int64_t* p : {begin_, end_, offset_, entries_})
      if (p) cudaFree(p);
  }
  DeviceRangeIndex(const DeviceRangeIndex&) = delete;
  DeviceRangeIndex& operator=(const DeviceRangeIndex&) = delete;
  /// Points the shape's range fields at this index.
  void apply(rfa_cuda_attention_shape& s) const {
    s.ranges = on_ ? 1 : 0;
    s.range_band_begin = begin_;
    s.range_band_end = end_;
    s.range_band_offset = offset_;
    s.range_entries = entries_;
    s.range_band_count = bands_;
  }

 private:
  bool on_;
  std::int64_t* begin_ = nullptr;
  std::int64_t* end_ = nullptr;
  std::int64_t* offset_ = nullptr;
  std::int64_t* entries_ = nullptr;
  std::int64_t bands_ = 0;
};

// The boundaries in device memory, as the kernels read them (freed with the case).
class DeviceBounds {
 public:
  explicit DeviceBounds(const std::vector<std::int64_t>& bounds) {
    if (bounds.empty()) return;
    RFA_TEST_CUDA(cudaMalloc(&data_, bounds.size() * sizeof(std::int64_t)));
    RFA_TEST_CUDA(cudaMemcpy(data_, bounds.data(), bounds.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));
  }
  ~DeviceBounds() {
    if (data_) cudaFree(data_);
  }
  DeviceBounds(const DeviceBounds&) = delete;
  DeviceBounds& operator=(const DeviceBounds&) = delete;
  const std::int64_t* get() const { return data_; }

 private:
  std::int64_t* data_ = nullptr;
};

inline rfa_cuda_position_map two_segments(std::int64_t s0, std::int64_t l0, std::int64_t s1, std::int64_t l1,
                                          std::int64_t stride = 1) {
  rfa_cuda_position_map m{};
  m.seg[0] = {s0, stride, l0};
  m.seg[1] = {s1, stride, l1};
  m.count = 2;
  return m;
}

inline rfa_cuda_position_map one_segment(std::int64_t start, std::int64_t stride, std::int64_t length) {
  rfa_cuda_position_map m{};
  m.seg[0] = {start, stride, length};
  m.count = 1;
  return m;
}

inline std::vector<std::int64_t> positions(const rfa_cuda_position_map& m) {
  std::vector<std::int64_t> p;
  if (m.count == 0) return p;  // the reference's identity map
  for (int s = 0; s < m.count; ++s)
    for (std::int64_t i = 0; i < m.seg[s].length; ++i) p.push_back(m.seg[s].start + i * m.seg[s].stride);
  return p;
}

inline std::vector<double> random_values(rfa_cuda_dtype t, std::size_t n, double amplitude = 1.0) {
  std::uniform_real_distribution<double> u(-amplitude, amplitude);
  std::vector<double> x(n);
  for (double& v : x) v = round_to(t, u(rng));
  return x;
}

// Rounding of the low-precision implementation the kernels are measured against.
inline double round_bf16(double x) { return round_to(RFA_CUDA_BF16, x); }
inline double round_fp16(double x) { return round_to(RFA_CUDA_FP16, x); }

// A kernel passes when its largest deviation from float64 is at most kFactor times that of a
// plain implementation in the same 16-bit type (FlashAttention's rule), plus a floor of
// kFloor * max(1, max|exact|). Unlike max|got - exact| / max|exact|, this stays meaningful
// where the exact result is 0: a single causal query has dq = dk = 0 exactly, the kernel
// returns ~1e-7 from rounding, and the low-precision implementation is off by ~1e-3.
inline constexpr double kFactor = 3.0;
inline constexpr double kFloor = 1e-5;

inline double max_abs_error(const std::vector<double>& got, const std::vector<double>& want,
                            std::size_t* worst = nullptr) {
  double max_err = 0.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    double err;
    if (std::isinf(want[i]) || std::isinf(got[i]))
      err = got[i] == want[i] ? 0.0 : INFINITY;
    else
      err = std::fabs(got[i] - want[i]);
    if (std::isnan(got[i])) err = INFINITY;  // NaN never passes
    if (err > max_err) {
      max_err = err;
      at = i;
    }
  }
  if (worst != nullptr) *worst = at;
  return max_err;
}

inline void report(const std::string& what, bool ok, const std::string& detail, const std::vector<double>& got,
                   const std::vector<double>& want, std::size_t worst) {
  std::printf("  %-4s %-40s %s\n", ok ? "ok" : "FAIL", what.c_str(), detail.c_str());
  if (!ok) {
    std::printf("       worst at %zu: got %.6g want %.6g\n", worst, got[worst], want[worst]);
    ++failures;
  }
}

// `lowp` is the same computation by ref::Problem::round's low-precision implementation.
// `own_size`: the floor is kFloor * max|exact| alone, for results whose every value is far below
// 1 (an absolute floor of kFloor would take 0 for them); max|exact| must then be above 0.
inline void expect_close(const std::string& what, const std::vector<double>& got, const std::vector<double>& exact,
                         const std::vector<double>& lowp, bool own_size = false) {
  std::size_t worst = 0;
  const double err = max_abs_error(got, exact, &worst), lowp_err = max_abs_error(lowp, exact);
  double scale = own_size ? 0.0 : 1.0;
  for (double x : exact)
    if (std::isfinite(x)) scale = std::max(scale, std::fabs(x));
  const double bound = kFactor * lowp_err + kFloor * scale;
  char detail[160];
  std::snprintf(detail, sizeof detail, "error %.3e (low-precision %.3e, bound %.3e%s)", err, lowp_err, bound,
                own_size ? ", of the values' own size" : "");
  report(what, err <= bound && scale > 0.0, detail, got, exact, worst);
}

// An absolute bound, for values that no 16-bit rounding touches (lse, D).
inline void expect_within(const std::string& what, const std::vector<double>& got, const std::vector<double>& exact,
                          double tol) {
  std::size_t worst = 0;
  const double err = max_abs_error(got, exact, &worst);
  char detail[96];
  std::snprintf(detail, sizeof detail, "error %.3e (tol %.1e)", err, tol);
  report(what, err <= tol, detail, got, exact, worst);
}

inline ref::Problem low_precision(ref::Problem p, rfa_cuda_dtype t) {
  p.round = t == RFA_CUDA_BF16 ? round_bf16 : round_fp16;
  return p;
}

// D[b][h][i] = sum_d dout * out, in float64 (both [b][sq][h][dv], dv the value head dim).
inline std::vector<double> rowsum_product(const ref::Problem& p, const std::vector<double>& dout,
                                          const std::vector<double>& out) {
  std::vector<double> delta(p.lse_size(), 0.0);
  const std::int64_t dv = p.dv();
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t i = 0; i < p.seq_q; ++i)
      for (std::int64_t h = 0; h < p.heads; ++h) {
        double s = 0.0;
        for (std::int64_t d = 0; d < dv; ++d) {
          const std::size_t at = ((b * p.seq_q + i) * p.heads + h) * dv + d;
          s += dout[at] * out[at];
        }
        delta[(b * p.heads + h) * p.seq_q + i] = s;
      }
  return delta;
}

inline rfa_cuda_attention_shape shape_of(const Case& c, const std::int64_t* device_docs = nullptr,
                                         const std::int64_t* device_doc_offsets = nullptr) {
  rfa_cuda_attention_shape s{};
  s.batch = c.batch;
  s.seq_q = c.seq_q;
  s.seq_k = c.seq_k;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.value_head_dim = c.value_dim;
  s.scale = 0.f;
  s.mask = c.causal ? RFA_CUDA_MASK_CAUSAL : RFA_CUDA_MASK_NONE;
  s.q_positions = c.q_map;
  s.k_positions = c.k_map;
  s.dtype = c.dtype;
  s.window = c.window;
  s.doc_bounds = device_docs;
  s.doc_bound_count = device_docs ? std::int64_t(c.docs.size()) : 0;
  s.doc_offsets = device_doc_offsets;
  s.softcap = c.softcap;
  return s;
}

inline ref::Problem problem_of(const Case& c) {
  ref::Problem p;
  p.batch = c.batch;
  p.seq_q = c.seq_q;
  p.seq_k = c.seq_k;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.head_dim = c.head_dim;
  p.value_dim = c.value_dim;
  p.causal = c.causal;
  p.q_pos = positions(c.q_map);
  p.k_pos = positions(c.k_map);
  p.window = c.window;
  p.doc_bounds = c.docs;
  p.entry_doc_bounds = ref::split_document_lists(c.docs, c.doc_offsets);
  p.softcap = c.softcap;
  p.ranges_on = c.ranges_on;
  p.ranges = c.ranges;
  return p;
}

}  // namespace rfa_cuda_test
