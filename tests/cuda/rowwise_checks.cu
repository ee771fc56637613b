// SPDX-License-Identifier: BSD-3-Clause
// The row-wise helpers at both of their vector widths (a lane moves 4 adjacent elements where
// every tensor of a call allows it, else 1): rfa_cuda_attention_delta, rfa_cuda_merge_partial
// and rfa_cuda_convert_from_fp32 on head dims that are and are not multiples of 4, on
// contiguous rows, on rows one element apart between heads, and on tensors that start one
// element past an aligned address (two for fp32: 8 bytes), the two tensors of a call alike and
// apart, each against float64 on the host. Inputs hold NaN between
// their rows (a read there poisons a result) and outputs a sentinel (a write there shows).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "accuracy_support.cuh"
#include "rowwise_checks.hpp"

namespace rfa_cuda_test {
namespace {

constexpr double kSentinel = 1536.0;  // exact in bf16, fp16 and fp32, and no value a helper writes

// Where a [batch][seq][heads][head_dim] tensor's elements lie in its buffer: `pad` elements after
// each head's row, the first element `offset` elements into the buffer.
struct RowLayout {
  const char* name;
  std::int64_t pad, offset;
};

struct Shape {
  std::int64_t batch, seq, heads, head_dim;
};

struct Placed {
  rfa_cuda_strides strides;
  std::int64_t offset, elements;  // the buffer's elements, padding included
  std::int64_t at(const Shape& s, std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t d) const {
    return offset + b * strides.batch + t * strides.seq + h * strides.head + d;
  }
};

Placed place(const Shape& s, const RowLayout& l) {
  Placed p;
  p.strides.head = s.head_dim + l.pad;
  p.strides.seq = s.heads * p.strides.head;
  p.strides.batch = s.seq * p.strides.seq;
  p.offset = l.offset;
  p.elements = l.offset + s.batch * p.strides.batch;
  return p;
}

// The buffer's values: `inside` at every element of the tensor, `outside` elsewhere.
template <class Inside>
std::vector<double> fill(const Shape& s, const Placed& p, double outside, Inside&& inside) {
  std::vector<double> x(std::size_t(p.elements), outside);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t h = 0; h < s.heads; ++h)
        for (std::int64_t d = 0; d < s.head_dim; ++d) x[std::size_t(p.at(s, b, t, h, d))] = inside();
  return x;
}

double uniform() { return std::uniform_real_distribution<double>(-1.0, 1.0)(rng); }

// Whether every element outside the tensor still holds the sentinel.
bool padding_kept(const Shape& s, const Placed& p, const std::vector<double>& got) {
  std::vector<bool> inside(got.size(), false);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t h = 0; h < s.heads; ++h)
        for (std::int64_t d = 0; d < s.head_dim; ++d) inside[std::size_t(p.at(s, b, t, h, d))] = true;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!inside[i] && got[i] != kSentinel) return false;
  return true;
}

void report(bool ok, const std::string& what, double worst) {
  std::printf("  %-4s %s (worst error %.2e)\n", ok ? "ok" : "FAIL", what.c_str(), worst);
  if (!ok) ++failures;
}

std::int64_t row_index(const Shape& s, std::int64_t b, std::int64_t t, std::int64_t h) {
  return (b * s.heads + h) * s.seq + t;  // lse and delta: [batch][heads][seq]
}

void check_delta(const Shape& s, const RowLayout& l, const RowLayout& l2, rfa_cuda_dtype out_type,
                 rfa_cuda_dtype dout_type) {
  const Placed p = place(s, l), p2 = place(s, l2);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  DeviceArray out(out_type, std::size_t(p.elements)), dout(dout_type, std::size_t(p2.elements));
  DeviceArray delta(RFA_CUDA_FP32, std::size_t(s.batch * s.heads * s.seq));
  out.upload(fill(s, p, nan, uniform));
  dout.upload(fill(s, p2, nan, uniform));
  const std::vector<double> o = out.download(), g = dout.download();  // as stored
  rfa_cuda_delta_params dp{};
  dp.batch = s.batch, dp.seq = s.seq, dp.heads = s.heads, dp.head_dim = s.head_dim;
  dp.out = static_cast<char*>(out.get()) + p.offset * element_size(out_type);
  dp.out_strides = p.strides;
  dp.out_dtype = out_type;
  dp.dout = static_cast<char*>(dout.get()) + p2.offset * element_size(dout_type);
  dp.dout_strides = p2.strides;
  dp.dout_dtype = dout_type;
  dp.delta = delta.as_float();
  delta.poison();
  RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  const std::vector<double> got = delta.download();
  bool ok = true;
  double worst = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t h = 0; h < s.heads; ++h) {
        double want = 0, scale = 0;
        for (std::int64_t d = 0; d < s.head_dim; ++d) {
          const double product = o[std::size_t(p.at(s, b, t, h, d))] * g[std::size_t(p2.at(s, b, t, h, d))];
          want += product;
          scale += std::fabs(product);
        }
        const double error = std::fabs(got[std::size_t(row_index(s, b, t, h))] - want);
        if (!(error <= 4e-6 * scale + 1e-7)) ok = false;  // fp32 sums of up to 132 products
        if (error > worst || error != error) worst = error;
      }
  report(ok, "delta d" + std::to_string(s.head_dim) + " " + l.name + " / " + l2.name, worst);
}

void check_merge(const Shape& s, const RowLayout& l, const RowLayout& l2) {
  const Placed p = place(s, l), p2 = place(s, l2);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  DeviceArray out(RFA_CUDA_FP32, std::size_t(p.elements)), block(RFA_CUDA_FP32, std::size_t(p2.elements));
  const std::size_t rows = std::size_t(s.batch * s.heads * s.seq);
  DeviceArray lse(RFA_CUDA_FP32, rows), block_lse(RFA_CUDA_FP32, rows);
  out.upload(fill(s, p, kSentinel, uniform));
  block.upload(fill(s, p2, nan, uniform));
  // Every third row starts with nothing seen (lse -inf: it takes the block's values), every
  // fifth sees nothing in the block (block_lse -inf: kept as it was).
  std::vector<double> running(rows), arriving(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    running[r] = r % 3 == 0 ? -inf : 2 * uniform();
    arriving[r] = r % 5 == 0 ? -inf : 2 * uniform();
  }
  lse.upload(running);
  block_lse.upload(arriving);
  const std::vector<double> o = out.download(), bo = block.download();
  rfa_cuda_merge_params m{};
  m.batch = s.batch, m.seq = s.seq, m.heads = s.heads, m.head_dim = s.head_dim;
  m.out = out.as_float() + p.offset;
  m.out_strides = p.strides;
  m.lse = lse.as_float();
  m.block_out = block.as_float() + p2.offset;
  m.block_out_strides = p2.strides;
  m.block_lse = block_lse.as_float();
  RFA_TEST_CALL(rfa_cuda_merge_partial(&m, nullptr));
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  const std::vector<double> got = out.download(), got_lse = lse.download();
  bool ok = padding_kept(s, p, got);
  double worst = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t h = 0; h < s.heads; ++h) {
        const std::size_t r = std::size_t(row_index(s, b, t, h));
        const double a = running[r], n = arriving[r];
        const double w = n == -inf ? 0.0 : a == -inf ? 1.0 : 1.0 / (1.0 + std::exp(a - n));
        const double want_lse = n == -inf   ? a
                                : a == -inf ? n
                                            : std::max(a, n) + std::log1p(std::exp(-std::fabs(a - n)));
        const double lse_error = want_lse == -inf ? (got_lse[r] == -inf ? 0.0 : inf) : std::fabs(got_lse[r] - want_lse);
        if (!(lse_error <= 1e-5)) ok = false;
        for (std::int64_t d = 0; d < s.head_dim; ++d) {
          const std::size_t i = std::size_t(p.at(s, b, t, h, d)), j = std::size_t(p2.at(s, b, t, h, d));
          const double want = w == 1.0 ? bo[j] : o[i] - w * (o[i] - bo[j]);
          const double error = std::fabs(got[i] - want);
          if (!(error <= 1e-6)) ok = false;
          if (error > worst || error != error) worst = error;
        }
      }
  report(ok, "merge d" + std::to_string(s.head_dim) + " " + l.name + " / " + l2.name, worst);
}

void check_convert(const Shape& s, const RowLayout& l, const RowLayout& l2, rfa_cuda_dtype dst_type) {
  const Placed p = place(s, l), p2 = place(s, l2);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  DeviceArray src(RFA_CUDA_FP32, std::size_t(p.elements)), dst(dst_type, std::size_t(p2.elements));
  src.upload(fill(s, p, nan, [] { return 8 * uniform(); }));
  dst.upload(std::vector<double>(std::size_t(p2.elements), kSentinel));
  const std::vector<double> x = src.download();
  rfa_cuda_convert_params cp{};
  cp.batch = s.batch, cp.seq = s.seq, cp.heads = s.heads, cp.head_dim = s.head_dim;
  cp.src = src.as_float() + p.offset;
  cp.src_strides = p.strides;
  cp.dst = static_cast<char*>(dst.get()) + p2.offset * element_size(dst_type);
  cp.dst_strides = p2.strides;
  cp.dst_dtype = dst_type;
  RFA_TEST_CALL(rfa_cuda_convert_from_fp32(&cp, nullptr));
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  const std::vector<double> got = dst.download();
  bool ok = padding_kept(s, p2, got);
  double worst = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t h = 0; h < s.heads; ++h)
        for (std::int64_t d = 0; d < s.head_dim; ++d) {
          const std::size_t i = std::size_t(p.at(s, b, t, h, d)), j = std::size_t(p2.at(s, b, t, h, d));
          const double error = std::fabs(got[j] - round_to(dst_type, x[i]));  // rounded to nearest even, exactly
          if (!(error == 0)) ok = false;
          if (error > worst || error != error) worst = error;
        }
  report(ok,
         std::string("convert to ") + (dst_type == RFA_CUDA_BF16 ? "bf16" : "fp16") + " d" +
             std::to_string(s.head_dim) + " " + l.name + " / " + l2.name,
         worst);
}

}  // namespace

void run_rowwise_checks() {
  std::printf("row-wise helpers at both vector widths\n");
  // Each call's two tensors alike in every layout, then one of them off by itself (a width taken
  // from one tensor alone would misread the other); two elements in is 8 bytes past an aligned
  // address, where an fp32 row must not be taken as 16-byte aligned.
  const RowLayout contiguous{"contiguous", 0, 0}, apart{"rows one element apart", 1, 0}, one_in{"one element in", 0, 1},
      two_in{"two elements in", 0, 2};
  const std::pair<RowLayout, RowLayout> pairs[] = {{contiguous, contiguous}, {apart, apart},       {one_in, one_in},
                                                   {two_in, two_in},         {contiguous, two_in}, {two_in, contiguous},
                                                   {contiguous, apart}};
  for (std::int64_t head_dim : {3, 4, 8, 36, 128, 132})
    for (const auto& [l, l2] : pairs) {
      const Shape s{2, 5, 3, head_dim};
      check_delta(s, l, l2, RFA_CUDA_BF16, RFA_CUDA_BF16);
      check_delta(s, l, l2, RFA_CUDA_FP16, RFA_CUDA_FP32);
      check_delta(s, l, l2, RFA_CUDA_FP32, RFA_CUDA_BF16);
      check_merge(s, l, l2);
      check_convert(s, l, l2, RFA_CUDA_BF16);
      check_convert(s, l, l2, RFA_CUDA_FP16);
    }
}

}  // namespace rfa_cuda_test
