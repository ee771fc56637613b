// SPDX-License-Identifier: BSD-3-Clause
// The kernels-level API's refusals that come before any device is asked (kernels_cuda/src/
// argument_checks.cpp and the entry points calling it), through the public calls: the same on a
// machine without a GPU as on one with, since nothing is launched. Each bad argument is
// RFA_CUDA_ERROR_INVALID_ARGUMENT with a message naming it: documents' offsets without
// boundaries or misaligned, device arrays (lse, delta, document boundaries, range arrays)
// misaligned, a scale beyond fp32 in the log2 domain, an unknown dtype, path or head dim below
// 1, the row-wise calls' outputs sharing rows, negative strides, misaligned tensors and row
// counts that would wrap; and cuDNN's host query says no (without crashing) to position maps
// and shapes the flash path refuses, and yes to a plain causal block.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>

#include "rfa_cuda/flash.h"
#if RFA_TEST_HAVE_CUDNN
#include "rfa_cuda/cudnn_attention.h"
#endif

namespace {

/// Host memory standing in for device tensors: never read, since every call here is refused
/// before a launch.
alignas(256) unsigned char g_memory[1 << 16];
void* at(std::size_t offset) { return g_memory + offset; }

rfa_cuda_attention_shape good_shape() {
  rfa_cuda_forward_params p;
  rfa_cuda_forward_params_init(&p);
  rfa_cuda_attention_shape s = p.shape;
  s.batch = 1;
  s.seq_q = s.seq_k = 64;
  s.heads = s.kv_heads = 1;
  s.head_dim = 64;
  s.mask = RFA_CUDA_MASK_CAUSAL;
  return s;
}

rfa_cuda_forward_params good_forward() {
  rfa_cuda_forward_params p;
  rfa_cuda_forward_params_init(&p);
  p.shape = good_shape();
  p.q = at(0);
  p.k = at(4096);
  p.v = at(8192);
  p.out = at(12288);
  p.lse = static_cast<float*>(at(16384));
  return p;
}

void expect_refused(rfa_cuda_status got, const std::string& needle, const std::string& what) {
  EXPECT_EQ(got, RFA_CUDA_ERROR_INVALID_ARGUMENT) << what << ": " << rfa_cuda_last_error_message();
  EXPECT_NE(std::string(rfa_cuda_last_error_message()).find(needle), std::string::npos)
      << what << ": " << rfa_cuda_last_error_message();
}

TEST(FlashArguments, BadShapesAndArraysAreRefusedBeforeTheDevice) {
  const std::int64_t* bounds = static_cast<const std::int64_t*>(at(20480));
  struct Case {
    const char* what;
    void (*change)(rfa_cuda_forward_params&);
    const char* needle;
  };
  static const std::int64_t* s_bounds = nullptr;
  s_bounds = bounds;
  const Case cases[] = {
      {"doc_offsets without doc_bounds", [](rfa_cuda_forward_params& p) { p.shape.doc_offsets = s_bounds; },
       "doc_offsets"},
      {"doc_offsets misaligned",
       [](rfa_cuda_forward_params& p) {
         p.shape.doc_bounds = s_bounds;
         p.shape.doc_bound_count = 3;
         p.shape.doc_offsets = reinterpret_cast<const std::int64_t*>(reinterpret_cast<const char*>(s_bounds) + 4);
       },
       "doc_offsets at"},
      {"doc_bounds misaligned",
       [](rfa_cuda_forward_params& p) {
         p.shape.doc_bounds = reinterpret_cast<const std::int64_t*>(reinterpret_cast<const char*>(s_bounds) + 4);
         p.shape.doc_bound_count = 3;
       },
       "doc_bounds at"},
      {"range arrays misaligned",
       [](rfa_cuda_forward_params& p) {
         p.shape.ranges = 1;
         p.shape.range_band_count = 1;
         p.shape.range_band_begin = s_bounds;
         p.shape.range_band_end = s_bounds;
         p.shape.range_band_offset = reinterpret_cast<const std::int64_t*>(reinterpret_cast<const char*>(s_bounds) + 2);
         p.shape.range_entries = s_bounds;
       },
       "range_band_offset"},
      {"lse misaligned", [](rfa_cuda_forward_params& p) { p.lse = reinterpret_cast<float*>(at(16386)); }, "lse at"},
      {"scale beyond fp32 in the log2 domain", [](rfa_cuda_forward_params& p) { p.shape.scale = FLT_MAX; }, "scale"},
      {"scale NaN", [](rfa_cuda_forward_params& p) { p.shape.scale = std::nanf(""); }, "scale"},
      {"dtype 7", [](rfa_cuda_forward_params& p) { p.shape.dtype = static_cast<rfa_cuda_dtype>(7); }, "dtype 7"},
      {"mask 5", [](rfa_cuda_forward_params& p) { p.shape.mask = static_cast<rfa_cuda_mask>(5); }, "mask 5"},
      {"head_dim 0", [](rfa_cuda_forward_params& p) { p.shape.head_dim = 0; }, "head_dim 0"},
      {"value_head_dim -1", [](rfa_cuda_forward_params& p) { p.shape.value_head_dim = -1; }, "value_head_dim -1"},
      {"path 9", [](rfa_cuda_forward_params& p) { p.path = static_cast<rfa_cuda_path>(9); }, "path"},
      {"segment longer than 2^40",
       [](rfa_cuda_forward_params& p) {
         p.shape.q_positions.count = 1;
         p.shape.q_positions.seg[0] = {0, 1, std::int64_t(1) << 41};
       },
       "q_positions.seg[0]"},
  };
  for (const Case& c : cases) {
    rfa_cuda_forward_params p = good_forward();
    c.change(p);
    expect_refused(rfa_cuda_flash_forward(&p, nullptr), c.needle, c.what);
  }
  // The backward asks the same of its shape, and of its lse and delta.
  rfa_cuda_backward_params b;
  rfa_cuda_backward_params_init(&b);
  b.shape = good_shape();
  b.q = at(0);
  b.k = at(4096);
  b.v = at(8192);
  b.dout = at(12288);
  b.dq = at(24576);
  b.dk = at(28672);
  b.dv = at(32768);
  b.lse = static_cast<float*>(at(16384));
  b.delta = reinterpret_cast<const float*>(at(16385));
  expect_refused(rfa_cuda_flash_backward(&b, nullptr), "delta at", "backward's delta misaligned");
  b.delta = static_cast<const float*>(at(16640));
  b.shape.doc_offsets = bounds;
  expect_refused(rfa_cuda_flash_backward(&b, nullptr), "doc_offsets", "backward's doc_offsets without doc_bounds");
}

TEST(RowwiseArguments, OutputsSharingRowsNegativeStridesAndMisalignmentAreRefused) {
  rfa_cuda_merge_params m{};
  m.batch = 2;
  m.seq = 8;
  m.heads = 2;
  m.head_dim = 16;
  m.out = static_cast<float*>(at(0));
  m.lse = static_cast<float*>(at(8192));
  m.block_out = static_cast<const float*>(at(16384));
  m.block_lse = static_cast<const float*>(at(24576));
  m.out_strides = {0, 32, 16};
  expect_refused(rfa_cuda_merge_partial(&m, nullptr), "out has batch stride 0", "merge's out repeated over the batch");
  m.out_strides = {0, 0, 0};
  m.lse = reinterpret_cast<float*>(at(8194));
  expect_refused(rfa_cuda_merge_partial(&m, nullptr), "lse at", "merge's lse misaligned");

  rfa_cuda_convert_params c{};
  c.batch = 2;
  c.seq = 8;
  c.heads = 2;
  c.head_dim = 16;
  c.src = static_cast<const float*>(at(0));
  c.dst = at(8192);
  c.dst_dtype = RFA_CUDA_BF16;
  c.dst_strides = {512, 0, 16};
  expect_refused(rfa_cuda_convert_from_fp32(&c, nullptr), "dst has seq stride 0", "convert's dst repeated");
  c.dst_strides = {0, 0, 0};
  c.dst = at(8193);
  expect_refused(rfa_cuda_convert_from_fp32(&c, nullptr), "dst at", "convert's dst misaligned");

  rfa_cuda_delta_params d{};
  d.batch = 2;
  d.seq = 8;
  d.heads = 2;
  d.head_dim = 16;
  d.out = at(0);
  d.dout = at(8192);
  d.delta = static_cast<float*>(at(16384));
  d.out_strides = {-512, 32, 16};
  expect_refused(rfa_cuda_attention_delta(&d, nullptr), "negative", "delta's out with a negative stride");
  d.out_strides = {0, 0, 0};
  d.dout = at(8193);
  expect_refused(rfa_cuda_attention_delta(&d, nullptr), "dout at", "delta's dout misaligned");
  d.dout = at(8192);
  // 2^22 x 6144 x 715827883 rows is 2^64 + 2^33: wraps to 2^33 in 64 bits.
  d.batch = std::int64_t(1) << 22;
  d.seq = 6144;
  d.heads = 715827883;
  expect_refused(rfa_cuda_attention_delta(&d, nullptr), "2^33 rows", "delta's rows wrapping");
}

#if RFA_TEST_HAVE_CUDNN
TEST(CudnnArguments, TheHostQueryRefusesWhatTheFlashPathRefuses) {
  const rfa_cuda_attention_shape good = good_shape();
  EXPECT_EQ(rfa_cudnn_expresses(&good, nullptr), 1) << rfa_cuda_last_error_message();
  struct Case {
    const char* what;
    void (*change)(rfa_cuda_attention_shape&);
  };
  const Case cases[] = {
      {"both maps of stride 0 (divided by)",
       [](rfa_cuda_attention_shape& s) {
         s.q_positions.count = s.k_positions.count = 1;
         s.q_positions.seg[0] = {0, 0, 64};
         s.k_positions.seg[0] = {0, 0, 64};
       }},
      {"a map longer than its sequence",
       [](rfa_cuda_attention_shape& s) {
         s.q_positions.count = 1;
         s.q_positions.seg[0] = {0, 1, 1000};
       }},
      {"a map shorter than its sequence",
       [](rfa_cuda_attention_shape& s) {
         s.q_positions.count = 1;
         s.q_positions.seg[0] = {0, 1, 10};
       }},
      {"a map of count -1", [](rfa_cuda_attention_shape& s) { s.q_positions.count = -1; }},
      {"a map of count 3", [](rfa_cuda_attention_shape& s) { s.k_positions.count = 3; }},
      {"a decreasing map",
       [](rfa_cuda_attention_shape& s) {
         s.k_positions.count = 1;
         s.k_positions.seg[0] = {63, -1, 64};
       }},
      {"mask 5", [](rfa_cuda_attention_shape& s) { s.mask = static_cast<rfa_cuda_mask>(5); }},
      {"window -5", [](rfa_cuda_attention_shape& s) { s.window = -5; }},
      {"scale NaN", [](rfa_cuda_attention_shape& s) { s.scale = std::nanf(""); }},
      {"scale -2", [](rfa_cuda_attention_shape& s) { s.scale = -2.f; }},
      {"scale inf", [](rfa_cuda_attention_shape& s) { s.scale = INFINITY; }},
      {"doc_bound_count 1", [](rfa_cuda_attention_shape& s) { s.doc_bound_count = 1; }},
  };
  for (const Case& c : cases) {
    rfa_cuda_attention_shape s = good;
    c.change(s);
    EXPECT_EQ(rfa_cudnn_expresses(&s, nullptr), 0) << c.what;
  }
}
#endif

}  // namespace
