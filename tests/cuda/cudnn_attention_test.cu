// SPDX-License-Identifier: BSD-3-Clause
// The cuDNN block kernel (rfa_cuda/cudnn_attention.h) against the float64 reference: the ring
// blocks of every layout (contiguous, zigzag, stripe) at P = 2 and 4, every step, full and
// causal, sliding windows, GQA, bf16 and fp16, head dims 64 and 128; the forward merged into an
// fp32 running result (lse -inf at first), then the backward accumulated into fp32 gradients
// from the block's final output and lse; the deterministic backward twice, bitwise; one rank's
// block written in place (out in the storage dtype, lse overwritten), and in place refused for
// a block of several bands; documents that cross a block refused with the reason. Without a
// GPU, or without a loadable cuDNN 9.10.2 or newer, it prints why and exits 77 (CTest: skipped).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "accuracy_support.cuh"
#include "rfa_cuda/cudnn_attention.h"
#include "rfa_cuda/flash.h"
#include "test_support.cuh"

using namespace rfa_cuda_test;

namespace {

enum class Layout { contiguous, zigzag, stripe };

rfa_cuda_position_map layout_positions(Layout layout, int S, int P, int r) {
  if (layout == Layout::contiguous) return one_segment(std::int64_t(r) * (S / P), 1, S / P);
  if (layout == Layout::stripe) return one_segment(r, P, S / P);
  const std::int64_t c = S / (2 * P);
  return two_segments(r * c, c, (2 * P - 1 - r) * c, c);
}

/// A device workspace of rfa_cudnn_plan_*'s size (cudaMalloc is 256-byte aligned).
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
  explicit Workspace(std::size_t n) : bytes(n) { RFA_TEST_CUDA(cudaMalloc(&data, n == 0 ? 256 : n)); }
  ~Workspace() { cudaFree(data); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
};

void fill_device(DeviceArray& a, float value, std::size_t count) {
  RFA_TEST_CALL(rfa_cuda_fill_fp32(a.as_float(), value, count, nullptr));
}

// One block's random inputs (on the host and on the device) and its float64 and low-precision
// reference results.
struct BlockData {
  ref::Problem p, low;
  std::vector<double> q, k, v, dout;
  std::vector<double> ref_out, ref_lse, ref_dq, ref_dk, ref_dv, low_out, low_lse, low_dq, low_dk, low_dv;
  DeviceArray q_d, k_d, v_d, dout_d;

  explicit BlockData(const Case& c)
      : p(problem_of(c)),
        low(low_precision(p, c.dtype)),
        q(random_values(c.dtype, p.q_size())),
        k(random_values(c.dtype, p.kv_size())),
        v(random_values(c.dtype, p.kv_size())),
        dout(random_values(c.dtype, p.q_size())),
        q_d(c.dtype, q.size()),
        k_d(c.dtype, k.size()),
        v_d(c.dtype, v.size()),
        dout_d(c.dtype, q.size()) {
    ref::forward(p, q, k, v, ref_out, ref_lse);
    ref::backward(p, q, k, v, dout, ref_dq, ref_dk, ref_dv);
    ref::forward(low, q, k, v, low_out, low_lse);
    ref::backward(low, q, k, v, dout, low_dq, low_dk, low_dv);
    q_d.upload(q);
    k_d.upload(k);
    v_d.upload(v);
    dout_d.upload(dout);
  }

  /// The block's forward into `out` (fp32 merged, or in place in `out_dtype`) and `lse`.
  rfa_cuda_forward_params forward(const Case& c, DeviceArray& out, rfa_cuda_dtype out_dtype, DeviceArray& lse,
                                  bool merge) const {
    rfa_cuda_forward_params f;
    rfa_cuda_forward_params_init(&f);
    f.shape = shape_of(c);
    f.q = q_d.get();
    f.k = k_d.get();
    f.v = v_d.get();
    f.out = out.get();
    f.out_dtype = out_dtype;
    f.lse = lse.as_float();
    f.merge = merge ? 1 : 0;
    return f;
  }
  /// The block's backward from `lse` into dq, dk, dv in `mode`.
  rfa_cuda_backward_params backward(const Case& c, DeviceArray& lse, rfa_cuda_grad_mode mode, DeviceArray& dq,
                                    DeviceArray& dk, DeviceArray& dv) const {
    rfa_cuda_backward_params b;
    rfa_cuda_backward_params_init(&b);
    b.shape = shape_of(c);
    b.q = q_d.get();
    b.k = k_d.get();
    b.v = v_d.get();
    b.dout = dout_d.get();
    b.lse = lse.as_float();
    b.grad_mode = mode;
    b.dq = dq.get();
    b.dk = dk.get();
    b.dv = dv.get();
    return b;
  }
};

// What one array holds more than it did (`before`), elementwise.
std::vector<double> added_since(const std::vector<double>& now, const std::vector<double>& before) {
  std::vector<double> d(now.size());
  for (std::size_t i = 0; i < now.size(); ++i) d[i] = now[i] - before[i];
  return d;
}

// The backward of `b`'s block again (one band), its dK and dV held in the workspace (dk and dv
// not given, the workspace poisoned first): dq takes the block's share at once, dk and dv only
// when the held gradients are added, once. Refused, with nothing added and the hold kept: an
// addition from another workspace; refused after the hold ended: a second addition, and one
// after a backward in between.
void run_held(rfa_cudnn_context* ctx, const BlockData& d, const rfa_cuda_backward_params& b, const DeviceArray& out16,
              const Workspace& bw, const DeviceArray& dq, const DeviceArray& dk, const DeviceArray& dv) {
  rfa_cuda_backward_params holding = b;
  holding.dk = holding.dv = nullptr;  // not read
  auto hold = [&] {
    RFA_TEST_CUDA(cudaMemset(bw.data, 0xff, bw.bytes));  // NaN in bf16 and fp16: unwritten gradients show
    RFA_TEST_CALL(rfa_cudnn_backward_holding_key_gradients(ctx, &holding, out16.get(), rfa_cuda_strides{}, nullptr,
                                                           bw.data, bw.bytes, nullptr));
    RFA_TEST_CUDA(cudaDeviceSynchronize());
  };
  auto refused_add = [&](const char* what, void* workspace) {
    const std::vector<double> dk_before = dk.download();
    const bool refused =
        rfa_cudnn_add_held_key_gradients(ctx, &b, nullptr, workspace, nullptr) == RFA_CUDA_ERROR_INVALID_ARGUMENT &&
        std::strstr(rfa_cuda_last_error_message(), "holds no dK and dV") != nullptr;
    const std::string message = rfa_cuda_last_error_message();
    RFA_TEST_CUDA(cudaDeviceSynchronize());
    report(what, refused && dk.download() == dk_before, message, dk_before, dk_before, 0);
  };
  const std::vector<double> dq1 = dq.download(), dk1 = dk.download(), dv1 = dv.download();
  hold();
  report("held: dk and dv untouched until added", dk.download() == dk1 && dv.download() == dv1, "", dk1, dk1, 0);
  const Workspace other(bw.bytes);
  refused_add("held: an addition from another workspace is refused", other.data);
  RFA_TEST_CALL(rfa_cudnn_add_held_key_gradients(ctx, &b, nullptr, bw.data, nullptr));
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  expect_close("held backward dq", added_since(dq.download(), dq1), d.ref_dq, d.low_dq);
  expect_close("held backward dk", added_since(dk.download(), dk1), d.ref_dk, d.low_dk);
  expect_close("held backward dv", added_since(dv.download(), dv1), d.ref_dv, d.low_dv);
  refused_add("held: a second addition is refused", bw.data);
  hold();
  RFA_TEST_CALL(rfa_cudnn_backward(ctx, &b, out16.get(), rfa_cuda_strides{}, nullptr, bw.data, bw.bytes, nullptr));
  refused_add("held: an addition after another backward is refused", bw.data);
}

// One ring block (queries of rank `me`, keys of rank `owner`) through cuDNN, forward then
// backward, against the reference of exactly that block.
void run_block(rfa_cudnn_context* ctx, const Case& c, bool deterministic) {
  const BlockData d(c);
  DeviceArray out16(c.dtype, d.q.size()), out32(RFA_CUDA_FP32, d.q.size()), lse(RFA_CUDA_FP32, d.p.lse_size()),
      dq(RFA_CUDA_FP32, d.q.size()), dk(RFA_CUDA_FP32, d.k.size()), dv(RFA_CUDA_FP32, d.v.size());
  const rfa_cuda_forward_params f = d.forward(c, out32, RFA_CUDA_FP32, lse, true);
  std::size_t bytes = 0;
  RFA_TEST_CALL(rfa_cudnn_plan_forward(ctx, &f, nullptr, &bytes));
  Workspace fw(bytes);
  fill_device(out32, 0.f, d.q.size());
  fill_device(lse, -INFINITY, d.p.lse_size());
  RFA_TEST_CALL(rfa_cudnn_forward(ctx, &f, nullptr, fw.data, fw.bytes, nullptr));
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  expect_close("forward out", out32.download(), d.ref_out, d.low_out);
  expect_within("forward lse", lse.download(), d.ref_lse, 2e-3);

  // The backward from this block's final output (in the storage dtype) and lse.
  out16.upload(d.ref_out);
  lse.upload(d.ref_lse);
  rfa_cuda_backward_params b = d.backward(c, lse, RFA_CUDA_GRAD_ACCUMULATE_FP32, dq, dk, dv);
  b.deterministic = deterministic ? 1 : 0;
  const rfa_cuda_strides contiguous{};
  RFA_TEST_CALL(rfa_cudnn_plan_backward(ctx, &b, contiguous, nullptr, &bytes));
  Workspace bw(bytes);
  std::vector<double> first_dq;
  for (int run = 0; run < (deterministic ? 2 : 1); ++run) {
    fill_device(dq, 0.f, d.q.size());
    fill_device(dk, 0.f, d.k.size());
    fill_device(dv, 0.f, d.v.size());
    RFA_TEST_CALL(rfa_cudnn_backward(ctx, &b, out16.get(), contiguous, nullptr, bw.data, bw.bytes, nullptr));
    RFA_TEST_CUDA(cudaDeviceSynchronize());
    if (run == 0) {
      first_dq = dq.download();
      expect_close("backward dq", first_dq, d.ref_dq, d.low_dq);
      expect_close("backward dk", dk.download(), d.ref_dk, d.low_dk);
      expect_close("backward dv", dv.download(), d.ref_dv, d.low_dv);
    } else {
      const bool same = std::memcmp(first_dq.data(), dq.download().data(), first_dq.size() * sizeof(double)) == 0;
      report("deterministic backward: dq bitwise repeated", same, "", first_dq, first_dq, 0);
    }
  }
  if (!deterministic && rfa_cudnn_holds_key_gradients(&b.shape, nullptr) == 1)
    run_held(ctx, d, b, out16, bw, dq, dk, dv);
}

// The one block of a pass written in place, every output poisoned first: the forward (merge 0:
// out in the storage dtype, lse overwritten), then the backward from the block's final out and
// lse (grad mode store: dq, dk, dv in the storage dtype, overwritten). One rank's block, which
// rfa_cudnn_writes_in_place must call one band over the whole block (a zigzag rank's two chunks
// at P = 1 continue each other).
void run_in_place(rfa_cudnn_context* ctx, const Case& c) {
  const BlockData d(c);
  DeviceArray out(c.dtype, d.q.size()), lse(RFA_CUDA_FP32, d.p.lse_size()), dq(c.dtype, d.q.size()),
      dk(c.dtype, d.k.size()), dv(c.dtype, d.v.size());
  const rfa_cuda_forward_params f = d.forward(c, out, c.dtype, lse, false);
  const bool one_band = rfa_cudnn_writes_in_place(&f.shape, nullptr) == 1;
  std::printf("  %-4s one band over the whole block (rfa_cudnn_writes_in_place)\n", one_band ? "ok" : "FAIL");
  if (!one_band) {
    ++failures;
    return;
  }
  std::size_t bytes = 0;
  RFA_TEST_CALL(rfa_cudnn_plan_forward(ctx, &f, nullptr, &bytes));
  Workspace fw(bytes);
  out.poison();
  lse.poison();
  RFA_TEST_CALL(rfa_cudnn_forward(ctx, &f, nullptr, fw.data, fw.bytes, nullptr));
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  expect_close("in-place out", out.download(), d.ref_out, d.low_out);
  expect_within("in-place lse", lse.download(), d.ref_lse, 2e-3);

  out.upload(d.ref_out);
  lse.upload(d.ref_lse);
  const rfa_cuda_backward_params b = d.backward(c, lse, RFA_CUDA_GRAD_STORE, dq, dk, dv);
  const rfa_cuda_strides contiguous{};
  RFA_TEST_CALL(rfa_cudnn_plan_backward(ctx, &b, contiguous, nullptr, &bytes));
  Workspace bw(bytes);
  dq.poison();
  dk.poison();
  dv.poison();
  RFA_TEST_CALL(rfa_cudnn_backward(ctx, &b, out.get(), contiguous, nullptr, bw.data, bw.bytes, nullptr));
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  expect_close("in-place dq", dq.download(), d.ref_dq, d.low_dq);
  expect_close("in-place dk", dk.download(), d.ref_dk, d.low_dk);
  expect_close("in-place dv", dv.download(), d.ref_dv, d.low_dv);
}

// What the engine asks of a block before a pass of one step, with no GPU or cuDNN: whether cuDNN
// writes it in place (one band over the whole block) and whether it computes it at all (else
// rfa's kernels do, and the pass writes directly too). Neither query changes the thread's last
// message.
void run_band_queries() {
  std::printf("band queries (host code)\n");
  // Whether cuDNN writes the block in place, expresses it, and holds its dK and dV (one band).
  auto expect_query = [](const char* what, const rfa_cuda_attention_shape* shape, int in_place, int expressed,
                         int holds) {
    rfa_cuda_flash_forward(nullptr, nullptr);  // a failure whose message the queries must leave
    const std::string before = rfa_cuda_last_error_message();
    const int got_in_place = rfa_cudnn_writes_in_place(shape, nullptr),
              got_expressed = rfa_cudnn_expresses(shape, nullptr),
              got_holds = rfa_cudnn_holds_key_gradients(shape, nullptr);
    const bool kept = before == rfa_cuda_last_error_message() && before.find("NULL") != std::string::npos;
    const bool ok = got_in_place == in_place && got_expressed == expressed && got_holds == holds && kept;
    std::printf("  %-4s %s: in place %d, expressed %d, holds dK and dV %d%s\n", ok ? "ok" : "FAIL", what, got_in_place,
                got_expressed, got_holds, kept ? "" : ", the last message changed");
    if (!ok) ++failures;
  };
  Case one{"one rank, causal", RFA_CUDA_BF16, 64, 1, 96, 96, 2, 2, true};
  rfa_cuda_attention_shape shape = shape_of(one);
  expect_query("one band over the whole block", &shape, 1, 1, 1);
  // A block of a ring of two ranks over 192 tokens: rank q's queries against rank k's keys.
  auto ring_block = [](Layout layout, int q, int k, std::int64_t window) {
    Case c{"ring block", RFA_CUDA_BF16, 64, 1, 96, 96, 2, 2, true};
    c.q_map = layout_positions(layout, 192, 2, q);
    c.k_map = layout_positions(layout, 192, 2, k);
    c.window = window;
    return shape_of(c);
  };
  // A later zigzag step: rank 1's queries see rank 0's first chunk whole and its second not at
  // all, one band over part of the block.
  shape = ring_block(Layout::zigzag, 1, 0, 0);
  expect_query("one band over part of the block", &shape, 0, 1, 1);
  // A rank's own zigzag block under a window: a band in each chunk (causal alone, it is one).
  shape = ring_block(Layout::zigzag, 0, 0, 20);
  expect_query("several bands", &shape, 0, 1, 0);
  // Rank 0's queries against rank 1's keys, contiguous: the causal mask hides every pair.
  shape = ring_block(Layout::contiguous, 0, 1, 0);
  expect_query("no band (every pair hidden)", &shape, 0, 1, 0);
  shape = shape_of(one);
  shape.softcap = 30.f;
  expect_query("a soft cap", &shape, 0, 0, 0);
  shape = shape_of(one);
  shape.head_dim = 192;
  shape.value_head_dim = 128;
  expect_query("a value head dim of its own", &shape, 0, 0, 0);
  static const std::int64_t offsets[2] = {0, 0};  // never read: the shape is refused first
  shape = shape_of(one);
  shape.doc_offsets = offsets;
  expect_query("per-sequence documents", &shape, 0, 0, 0);
  shape = shape_of(one);
  shape.ranges = 1;
  expect_query("ranges", &shape, 0, 0, 0);
  expect_query("no shape", nullptr, 0, 0, 0);
}

// In place is refused where the block is several bands (UNSUPPORTED: merge it instead), and an
// output that is neither merged fp32 nor in place is an invalid argument; neither touches out.
void run_in_place_refusals(rfa_cudnn_context* ctx) {
  Case c{"zigzag P=2 step 0<-0, window 20", RFA_CUDA_BF16, 64, 1, 96, 96, 2, 2, true};
  c.q_map = c.k_map = layout_positions(Layout::zigzag, 192, 2, 0);
  c.window = 20;  // a band in each chunk
  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape = shape_of(c);
  f.out_dtype = c.dtype;
  f.merge = 0;
  std::size_t bytes = 0;
  bool ok = rfa_cudnn_writes_in_place(&f.shape, nullptr) == 0 &&
            rfa_cudnn_plan_forward(ctx, &f, nullptr, &bytes) == RFA_CUDA_ERROR_UNSUPPORTED &&
            std::strstr(rfa_cuda_last_error_message(), "not one over the whole block") != nullptr;
  std::printf("  %-4s a block of several bands is not written in place: %s\n", ok ? "ok" : "FAIL",
              rfa_cuda_last_error_message());
  if (!ok) ++failures;
  f.out_dtype = RFA_CUDA_FP32;  // in place, but in fp32: neither mode
  ok = rfa_cudnn_plan_forward(ctx, &f, nullptr, &bytes) == RFA_CUDA_ERROR_INVALID_ARGUMENT &&
       std::strstr(rfa_cuda_last_error_message(), "merge 0, out_dtype the storage dtype") != nullptr;
  std::printf("  %-4s merge 0 with an fp32 out is refused: %s\n", ok ? "ok" : "FAIL", rfa_cuda_last_error_message());
  if (!ok) ++failures;
  rfa_cuda_backward_params b;
  rfa_cuda_backward_params_init(&b);
  b.shape = shape_of(c);
  b.grad_mode = RFA_CUDA_GRAD_STORE;
  ok = rfa_cudnn_plan_backward(ctx, &b, rfa_cuda_strides{}, nullptr, &bytes) == RFA_CUDA_ERROR_UNSUPPORTED &&
       std::strstr(rfa_cuda_last_error_message(), "not one over the whole block") != nullptr;
  std::printf("  %-4s nor are its gradients: %s\n", ok ? "ok" : "FAIL", rfa_cuda_last_error_message());
  if (!ok) ++failures;
  // Nor are its dK and dV held (a second band would write over the first's), nothing written.
  const BlockData d(c);
  DeviceArray out16(c.dtype, d.q.size()), lse(RFA_CUDA_FP32, d.p.lse_size()), dq(RFA_CUDA_FP32, d.q.size()),
      dk(RFA_CUDA_FP32, d.k.size()), dv(RFA_CUDA_FP32, d.v.size());
  fill_device(dq, 0.f, d.q.size());
  b = d.backward(c, lse, RFA_CUDA_GRAD_ACCUMULATE_FP32, dq, dk, dv);
  RFA_TEST_CALL(rfa_cudnn_plan_backward(ctx, &b, rfa_cuda_strides{}, nullptr, &bytes));
  Workspace bw(bytes);
  ok = rfa_cudnn_backward_holding_key_gradients(ctx, &b, out16.get(), rfa_cuda_strides{}, nullptr, bw.data, bw.bytes,
                                                nullptr) == RFA_CUDA_ERROR_UNSUPPORTED &&
       std::strstr(rfa_cuda_last_error_message(), "one band only") != nullptr;
  const std::string message = rfa_cuda_last_error_message();
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  const std::vector<double> dq_after = dq.download();
  ok = ok && std::all_of(dq_after.begin(), dq_after.end(), [](double x) { return x == 0; });
  std::printf("  %-4s nor are its dK and dV held: %s\n", ok ? "ok" : "FAIL", message.c_str());
  if (!ok) ++failures;
}

// Documents whose boundary falls inside the block: cuDNN is not asked, and says why.
void run_document_refusal(rfa_cudnn_context* ctx) {
  Case c{"documents", RFA_CUDA_BF16, 64, 1, 64, 64, 2, 2, true};
  const std::vector<std::int64_t> bounds = {0, 40, 128};
  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape = shape_of(c);
  f.shape.doc_bound_count = std::int64_t(bounds.size());
  f.out_dtype = RFA_CUDA_FP32;
  f.merge = 1;
  std::size_t bytes = 0;
  const rfa_cuda_status s = rfa_cudnn_plan_forward(ctx, &f, bounds.data(), &bytes);
  const bool ok =
      s == RFA_CUDA_ERROR_UNSUPPORTED && std::strstr(rfa_cuda_last_error_message(), "document boundary") != nullptr;
  std::printf("  %-4s documents across the block are refused: %s\n", ok ? "ok" : "FAIL", rfa_cuda_last_error_message());
  if (!ok) ++failures;
}

// Tensors the graphs cannot take (declared 16-byte aligned, strides in whole 16-byte chunks) are
// refused naming them, as rfa's kernels refuse them, before cuDNN sees them.
void run_argument_checks(rfa_cudnn_context* ctx) {
  Case c{"arguments", RFA_CUDA_BF16, 64, 1, 64, 64, 2, 2, true};
  DeviceArray q(c.dtype, 64 * 2 * 64 + 8), k(c.dtype, 64 * 2 * 64), v(c.dtype, 64 * 2 * 64),
      out(RFA_CUDA_FP32, 64 * 2 * 64), lse(RFA_CUDA_FP32, 2 * 64);
  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape = shape_of(c);
  f.q = static_cast<char*>(q.get()) + 2;  // one bf16 element in: aligned to its element, not to 16 bytes
  f.k = k.get();
  f.v = v.get();
  f.out = out.get();
  f.out_dtype = RFA_CUDA_FP32;
  f.lse = lse.as_float();
  f.merge = 1;
  const rfa_cuda_status misaligned = rfa_cudnn_forward(ctx, &f, nullptr, nullptr, 0, nullptr);
  bool ok = misaligned == RFA_CUDA_ERROR_INVALID_ARGUMENT &&
            std::strstr(rfa_cuda_last_error_message(), "q is not 16-byte aligned") != nullptr;
  std::printf("  %-4s a misaligned q is refused: %s\n", ok ? "ok" : "FAIL", rfa_cuda_last_error_message());
  if (!ok) ++failures;
  f.q = q.get();
  f.k_strides = {64 * 2 * 64, 2 * 64 + 4, 64};
  const rfa_cuda_status strided = rfa_cudnn_forward(ctx, &f, nullptr, nullptr, 0, nullptr);
  ok = strided == RFA_CUDA_ERROR_INVALID_ARGUMENT && std::strstr(rfa_cuda_last_error_message(), "k strides") != nullptr;
  std::printf("  %-4s k strides of part of a chunk are refused: %s\n", ok ? "ok" : "FAIL",
              rfa_cuda_last_error_message());
  if (!ok) ++failures;
}

}  // namespace

int main() {
  run_band_queries();
  if (!cuda_device_present()) {
    std::printf("no CUDA device: skipping the GPU cases (%d host-check failures)\n", failures);
    return failures == 0 ? kSkipExitCode : 1;
  }
  if (rfa_cudnn_load(std::getenv("RFA_CUDNN_LIBRARY")) != RFA_CUDA_SUCCESS) {
    std::printf("no usable cuDNN: skipping (%s)\n", rfa_cuda_last_error_message());
    return kSkipExitCode;
  }
  std::printf("cuDNN %lld\n", static_cast<long long>(rfa_cudnn_version()));
  rfa_cudnn_context* ctx = nullptr;
  RFA_TEST_CALL(rfa_cudnn_create(&ctx));
  int blocks = 0;
  for (Layout layout : {Layout::contiguous, Layout::zigzag, Layout::stripe})
    for (int P : {2, 4}) {
      const int S = 2 * P * 96;  // 96-row chunks: not a multiple of cuDNN's 64-row tiles
      for (int me = 0; me < P; ++me)
        for (int owner = 0; owner < P; ++owner) {
          // Cycle through the masks, dtypes, head dims and head groupings over the steps.
          const int pick = blocks++;
          Case c{};
          c.name = std::string(layout == Layout::contiguous ? "contiguous"
                               : layout == Layout::zigzag   ? "zigzag"
                                                            : "stripe") +
                   " P=" + std::to_string(P) + " step " + std::to_string(me) + "<-" + std::to_string(owner);
          c.dtype = pick % 3 == 2 ? RFA_CUDA_FP16 : RFA_CUDA_BF16;
          c.head_dim = pick % 2 ? 128 : 64;
          c.batch = 1 + pick % 2;
          c.seq_q = c.seq_k = S / P;
          c.heads = 4;
          c.kv_heads = pick % 4 == 3 ? 1 : (pick % 2 ? 2 : 4);
          c.causal = pick % 4 != 1;
          c.window = pick % 5 == 4 ? S / 3 : (pick % 7 == 6 ? 33 : 0);
          c.q_map = layout_positions(layout, S, P, me);
          c.k_map = layout_positions(layout, S, P, owner);
          std::printf("%s: %s d=%d b=%d h=%d hkv=%d %s w=%lld\n", c.name.c_str(),
                      c.dtype == RFA_CUDA_BF16 ? "bf16" : "fp16", c.head_dim, c.batch, c.heads, c.kv_heads,
                      c.causal ? "causal" : "full", static_cast<long long>(c.window));
          run_block(ctx, c, pick % 6 == 5);
        }
    }
  // One rank's block in place: contiguous and zigzag, full and causal, windows (one wider than
  // the block), GQA, both dtypes, head dims 64 and 128, a length off cuDNN's 64-row tiles.
  for (int pick = 0; pick < 6; ++pick) {
    Case c{};
    const Layout layout = pick % 2 ? Layout::zigzag : Layout::contiguous;
    const int S = pick < 3 ? 200 : 384;
    c.name = std::string("in place, one rank, ") + (layout == Layout::zigzag ? "zigzag" : "contiguous");
    c.dtype = pick % 3 == 2 ? RFA_CUDA_FP16 : RFA_CUDA_BF16;
    c.head_dim = pick % 2 ? 128 : 64;
    c.batch = 1 + pick % 2;
    c.seq_q = c.seq_k = S;
    c.heads = 4;
    c.kv_heads = pick % 3 == 1 ? 1 : 2;
    c.causal = pick != 4;
    c.window = pick == 3 ? 70 : (pick == 5 ? 1000 : 0);
    c.q_map = c.k_map = layout_positions(layout, S, 1, 0);
    std::printf("%s: %s d=%d b=%d hkv=%d %s w=%lld S=%d\n", c.name.c_str(), c.dtype == RFA_CUDA_BF16 ? "bf16" : "fp16",
                c.head_dim, c.batch, c.kv_heads, c.causal ? "causal" : "full", static_cast<long long>(c.window), S);
    run_in_place(ctx, c);
  }
  run_in_place_refusals(ctx);
  run_document_refusal(ctx);
  run_argument_checks(ctx);
  rfa_cudnn_destroy(ctx);
  std::printf("%s: %d failures\n", failures ? "FAILED" : "passed", failures);
  return failures == 0 ? 0 : 1;
}
