// SPDX-License-Identifier: BSD-3-Clause
// The C API on CUDA devices end to end: tensors in device memory, the engine's blocks computed
// by kernels_cuda on the caller's stream, K/V and dK/dV moved by the device transport
// (RFA_TRANSPORT picks it: MPI, staged or CUDA-aware, with ranks sharing one GPU; NCCL at one
// rank). Every layout, both masks, bf16 and fp16, head dims 32 to 256 and 192 / 128, GQA and
// MQA, windows and documents, on the ring and on the Ulysses, all-gather and hybrid strategies (their
// all-to-alls, gathers and reduce-scatters on device memory), compared with the float64
// reference on the whole sequence. Without a CUDA device every test skips, saying why.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "capi_reference.hpp"
#include "capi_test_support.hpp"
#include "cuda_device_check.hpp"
#include "rfa/rfa_config.h"
#include "rfa/rfa_mpi.h"
#include "scoped_env.hpp"

namespace {

using namespace rfa_capi_test;

#define SKIP_WITHOUT_DEVICE() RFA_TEST_NEEDS_DEVICE(rfa_test::why_no_cuda_device())

/// A device copy of a host tensor, and back.
class OnDevice {
 public:
  explicit OnDevice(std::size_t bytes) : bytes_(bytes) { EXPECT_EQ(cudaMalloc(&p_, bytes), cudaSuccess); }
  /// Filled from `host`, complete on the device before it returns: cudaMemcpy from pageable
  /// memory may return before its DMA ends, and the context's streams are non-blocking (they do
  /// not wait for the legacy default stream), so a call could otherwise read the buffer first.
  OnDevice(const void* host, std::size_t bytes) : OnDevice(bytes) {
    EXPECT_EQ(cudaMemcpy(p_, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~OnDevice() { cudaFree(p_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  void* get() const { return p_; }
  /// NaN in every dtype, complete before it returns (cudaMemset is asynchronous on the legacy
  /// default stream, which a non-blocking stream's kernels do not wait for).
  void poison() {
    EXPECT_EQ(cudaMemset(p_, 0xff, bytes_), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void download(void* host) const { EXPECT_EQ(cudaMemcpy(host, p_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess); }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

struct Case {
  rfa_layout_t layout;
  rfa_mask_t mask;
  rfa_dtype_t dtype;
  int64_t head_dim;
  int64_t kv_heads;
  int64_t window = 0;      // options.window
  bool documents = false;  // packed documents (document_bounds)
  rfa_strategy_t strategy = RFA_STRATEGY_RING;
  bool default_stream = false;  // no rfa_context_set_stream: the legacy default stream
  bool sinks = false;           // options.attention_sinks: rfa_forward_with_sinks / rfa_backward_with_sinks
  double softcap = 0;           // options.softcap: scores soft-capped (rfa's sm80 kernels)
  bool per_sequence = false;    // with documents: entry 0 takes them, entry 1 is one document
  bool ranges = false;          // RFA_MASK_RANGES: a prefix seen by all and a band (see the test)
  int64_t value_dim = 0;        // options.value_head_dim (MLA's 128 beside a head_dim of 192; 0: head_dim)
  bool switch_stream = false;   // the backward on another stream, set right after the forward, no synchronization
};

/// Ranks per Ulysses group of the hybrid tested on P ranks: 2 x 2 on four, else one group.
int hybrid_degree(int ranks) { return ranks == 4 ? 2 : ranks; }

/// Packed documents over S = 72 P tokens: one of a single token, an empty one, one crossing
/// rank boundaries at every P, a long one, and a short last one.
std::vector<int64_t> document_bounds(int64_t S) { return {0, 1, 1, 50, 51, S - 20, S}; }

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const char* layouts[] = {"contiguous", "zigzag", "stripe"};
  const char* strategies[] = {"", "ulysses_", "allgather_", "hybrid_"};
  const Case& c = info.param;
  return std::string(strategies[c.strategy]) + layouts[c.layout] + (c.mask == RFA_MASK_CAUSAL ? "_causal_" : "_full_") +
         (c.dtype == RFA_DTYPE_BFLOAT16 ? "bf16" : "fp16") + "_d" + std::to_string(c.head_dim) + "_kv" +
         std::to_string(c.kv_heads) + (c.window > 0 ? "_window" + std::to_string(c.window) : "") +
         (c.documents ? "_documents" : "") + (c.default_stream ? "_default_stream" : "") + (c.sinks ? "_sinks" : "") +
         (c.softcap > 0 ? "_softcap" : "") + (c.per_sequence ? "_per_sequence" : "") + (c.ranges ? "_ranges" : "") +
         (c.value_dim != 0 ? "_dv" + std::to_string(c.value_dim) : "") + (c.switch_stream ? "_switch_stream" : "");
}

// |error| bounds for values of order one: the CUDA kernels round the probabilities to the
// storage dtype before the PV product (as FlashAttention does) and store 16-bit outputs.
double tolerance(rfa_dtype_t t) { return t == RFA_DTYPE_BFLOAT16 ? 1.5e-2 : 3e-3; }

/// `bounds` (and `offsets`, per-sequence documents, and `ranges`) must outlive the context's
/// creation (rfa copies them there).
rfa_options_t cuda_options(const Case& c, int64_t S, const std::vector<int64_t>* bounds = nullptr,
                           const std::vector<int64_t>* offsets = nullptr,
                           const std::vector<rfa_mask_range_t>* ranges = nullptr) {
  rfa_options_t o;
  rfa_options_init(&o);
  o.device = RFA_DEVICE_CUDA;
  o.layout = c.layout;
  o.mask = c.mask;
  o.dtype = c.dtype;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.batch = 2;
  o.seq_total = S;
  o.heads = 4;
  o.kv_heads = c.kv_heads;
  o.head_dim = c.head_dim;
  o.value_head_dim = c.value_dim;
  o.window = c.window;
  o.strategy = c.strategy;
  if (c.strategy == RFA_STRATEGY_HYBRID) o.ulysses_degree = hybrid_degree(world_size());
  o.attention_sinks = c.sinks ? 1 : 0;
  o.softcap = c.softcap;
  if (bounds != nullptr) {
    o.doc_boundaries = bounds->data();
    o.doc_boundary_count = int64_t(bounds->size());
  }
  if (offsets != nullptr) {
    o.doc_boundary_offsets = offsets->data();
    o.doc_boundary_offset_count = int64_t(offsets->size());
  }
  if (ranges != nullptr) {
    o.mask = RFA_MASK_RANGES;
    o.mask_ranges = ranges->data();
    o.mask_range_count = int64_t(ranges->size());
  }
  return o;
}

class CudaForwardBackward : public ::testing::TestWithParam<Case> {};

TEST_P(CudaForwardBackward, MatchesFloat64Reference) {
  SKIP_WITHOUT_DEVICE();
  const Case c = GetParam();
  const int P = world_size();
  // L = 72 rows per rank: more than one 64-row tile, and a partial one.
  const int64_t S = 2 * P * 36;
  const std::vector<int64_t> bounds = c.documents ? document_bounds(S) : std::vector<int64_t>();
  // Per-sequence documents: entry 0 the documents, entry 1 none (an empty list).
  const std::vector<int64_t> offsets = {0, int64_t(bounds.size()), int64_t(bounds.size())};
  const std::vector<std::vector<int64_t>> entry_docs =
      c.per_sequence ? std::vector<std::vector<int64_t>>{bounds, {}} : std::vector<std::vector<int64_t>>();
  // A mask given as ranges: every query sees the first S / 3 tokens, and each later query its
  // last 6 tokens too (a band of diagonals, crossing rank boundaries).
  std::vector<rfa_mask_range_t> ranges;
  if (c.ranges) ranges = {{0, S, 0, S / 3, 0, 0, RFA_RANGE_FULL}, {S / 3, S, S / 3, S, -5, 0, RFA_RANGE_BAND}};
  const rfa_options_t o = cuda_options(c, S, c.documents ? &bounds : nullptr, c.per_sequence ? &offsets : nullptr,
                                       c.ranges ? &ranges : nullptr);
  const int64_t B = o.batch, H = o.heads, Hkv = o.kv_heads, D = o.head_dim, DV = value_dim_of(o);
  const int degree = c.strategy == RFA_STRATEGY_ULYSSES ? P : c.strategy == RFA_STRATEGY_HYBRID ? o.ulysses_degree : 1;
  if (H % degree != 0) GTEST_SKIP() << H << " heads do not divide among " << degree << " Ulysses ranks";
  // The suite runs once per kernel choice (RFA_CUDA_KERNELS): the context reports what it runs.
  const char* asked = std::getenv("RFA_CUDA_KERNELS");
  rfa_context_t ctx = nullptr;
  if (c.strategy == RFA_STRATEGY_ALLGATHER && asked != nullptr && std::string(asked) == "cudnn") {
    // The all-gather's chunks run on rfa's kernels: asking for cuDNN fails on every rank.
    EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "not cuDNN");
    return;
  }
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  rfa_options_t created;
  rfa_options_init(&created);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &created));
  if (c.strategy == RFA_STRATEGY_ALLGATHER) {
    // A slice this short is far from filling the device with one K/V head: the chunk is the
    // largest divisor of the K/V heads that leaves two chunks, and the plan names it.
    int64_t chunk = 1;
    for (int64_t d = 1; d <= Hkv / 2; ++d)
      if (Hkv % d == 0) chunk = d;
    char plan[512];
    ASSERT_RFA_OK(rfa_context_get_plan(ctx, plan, sizeof plan));
    if (chunk > 1) {
      EXPECT_NE(std::string(plan).find("(" + std::to_string(chunk) + " K/V heads a chunk)"), std::string::npos) << plan;
    }
  }
  if (asked != nullptr && std::string(asked) == "cudnn") {
    EXPECT_EQ(int(created.cuda_kernels), int(RFA_CUDA_KERNELS_CUDNN));
  } else if (asked != nullptr && std::string(asked) == "rfa") {
    EXPECT_EQ(int(created.cuda_kernels), int(RFA_CUDA_KERNELS_RFA));
  }
  cudaStream_t stream = nullptr, second = nullptr;
  if (!c.default_stream) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_RFA_OK(rfa_context_set_stream(ctx, stream));
  }
  // The backward's stream: the same, or another one handed over right after the forward is
  // queued (its results, and the context's buffers, still in use on the first).
  // End to end: the device-level wait itself is rfa_device_strategies_test's DeviceStreamOrder.
  auto before_backward = [&] {
    if (!c.switch_stream) return true;
    return cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking) == cudaSuccess &&
           rfa_context_set_stream(ctx, second) == RFA_SUCCESS;
  };

  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  std::vector<int64_t> positions(std::size_t(L), -1);
  ASSERT_RFA_OK(rfa_context_get_local_positions(ctx, positions.data(), L));

  // Sinks of every kind (small, negative, dominant, none) for the four heads.
  const std::vector<float> sinks =
      c.sinks ? std::vector<float>{0.5f, -1.25f, 3.0f, -std::numeric_limits<float>::infinity()} : std::vector<float>();
  const ReferenceRun ref(o, bounds, 31, sinks, ranges, entry_docs);

  LocalShards shards(o, L);
  auto& [lq, lk, lv, ldo, lout, ldq, ldk, ldv] = shards;
  ASSERT_RFA_OK(shards.scatter(ctx, ref, o));
  // The sharding helpers take host memory on a CUDA context too: the all-gather of the query
  // shards gives back the whole tensor, bitwise.
  {
    Stored all_q(c.dtype, ref.q.size());
    ASSERT_RFA_OK(rfa_allgather_bshd(ctx, H, lq.data(), all_q.data()));
    EXPECT_EQ(std::memcmp(all_q.data(), ref.q.data(), ref.q.size() * rfa::dtype_size(c.dtype)), 0)
        << "rfa_allgather_bshd on a CUDA context did not reassemble q";
  }
  // q, dq and k, dk in head_dim; v, dv and out, dout in the value head dim.
  const std::size_t qb = lq.size() * rfa::dtype_size(c.dtype), kb = lk.size() * rfa::dtype_size(c.dtype),
                    vb = lv.size() * rfa::dtype_size(c.dtype), ob = ldo.size() * rfa::dtype_size(c.dtype),
                    lseb = std::size_t(B * H * L) * sizeof(float);
  OnDevice dq_in(lq.data(), qb), dk_in(lk.data(), kb), dv_in(lv.data(), vb), ddo(ldo.data(), ob);
  OnDevice dout_buf(ob), dlse(lseb), ddq(qb), ddk(kb), ddv(vb);
  dout_buf.poison();
  dlse.poison();
  ddq.poison();
  ddk.poison();
  ddv.poison();

  std::vector<float> dsinks(sinks.size());
  if (c.sinks) {
    // The sinks and their gradient in device memory too, like every tensor of a CUDA context.
    const OnDevice device_sinks(sinks.data(), sinks.size() * sizeof(float));
    OnDevice device_dsinks(sinks.size() * sizeof(float));
    device_dsinks.poison();
    const float* s = static_cast<const float*>(device_sinks.get());
    ASSERT_RFA_OK(rfa_forward_with_sinks(ctx, dq_in.get(), dk_in.get(), dv_in.get(), s, dout_buf.get(),
                                         static_cast<float*>(dlse.get())));
    ASSERT_TRUE(before_backward()) << rfa_get_last_error_message();
    ASSERT_RFA_OK(rfa_backward_with_sinks(ctx, dq_in.get(), dk_in.get(), dv_in.get(), dout_buf.get(), ddo.get(),
                                          static_cast<const float*>(dlse.get()), s, ddq.get(), ddk.get(), ddv.get(),
                                          static_cast<float*>(device_dsinks.get())));
    ASSERT_RFA_OK(rfa_context_synchronize(ctx));
    device_dsinks.download(dsinks.data());
  } else {
    ASSERT_RFA_OK(
        rfa_forward(ctx, dq_in.get(), dk_in.get(), dv_in.get(), dout_buf.get(), static_cast<float*>(dlse.get())));
    ASSERT_TRUE(before_backward()) << rfa_get_last_error_message();
    ASSERT_RFA_OK(rfa_backward(ctx, dq_in.get(), dk_in.get(), dv_in.get(), dout_buf.get(), ddo.get(),
                               static_cast<const float*>(dlse.get()), ddq.get(), ddk.get(), ddv.get()));
    ASSERT_RFA_OK(rfa_context_synchronize(ctx));
  }
  std::vector<float> lse(std::size_t(B * H * L));
  dout_buf.download(lout.data());
  dlse.download(lse.data());
  ddq.download(ldq.data());
  ddk.download(ldk.data());
  ddv.download(ldv.data());
  // The device workspace the context keeps, given back once (after a wait for its stream).
  int64_t released = -1;
  ASSERT_RFA_OK(rfa_context_release_workspace(ctx, &released));
  EXPECT_GE(released, 0);
  ASSERT_RFA_OK(rfa_context_release_workspace(ctx, &released));
  EXPECT_EQ(released, 0) << "a second release freed device memory";

  const double lse_err = max_error_lse(lse, ref.lse, positions, B, H, S);
  const double tol = tolerance(c.dtype), gtol = 4 * tol;
  const double out_err = max_error_bshd(lout, ref.out, positions, B, S, H, DV);
  const double dq_err = max_error_bshd(ldq, ref.dq, positions, B, S, H, D);
  const double dk_err = max_error_bshd(ldk, ref.dk, positions, B, S, Hkv, D);
  const double dv_err = max_error_bshd(ldv, ref.dv, positions, B, S, Hkv, DV);
  EXPECT_LE(out_err, tol);
  EXPECT_LE(lse_err, 1e-3);  // fp32, from scores of bf16/fp16 inputs
  EXPECT_LE(dq_err, gtol);
  EXPECT_LE(dk_err, gtol);
  EXPECT_LE(dv_err, gtol);
  for (std::size_t h = 0; h < dsinks.size(); ++h)  // a sum over every row: relative to its size
    EXPECT_NEAR(dsinks[h], ref.dsinks[h], gtol * (1 + std::fabs(ref.dsinks[h]))) << "dsinks, head " << h;
  if (world_rank() == 0) {
    const char* transport = std::getenv("RFA_TRANSPORT");
    std::printf(
        "  P=%d transport %s: max |error| out %.2e lse %.2e dq %.2e dk %.2e dv %.2e (tolerance %.1e, "
        "gradients %.1e)\n",
        P, transport ? transport : "default", out_err, lse_err, dq_err, dk_err, dv_err, tol, gtol);
  }

  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  if (stream != nullptr) cudaStreamDestroy(stream);
  if (second != nullptr) cudaStreamDestroy(second);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (rfa_layout_t l : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t m : {RFA_MASK_NONE, RFA_MASK_CAUSAL})
      for (rfa_dtype_t t : {RFA_DTYPE_BFLOAT16, RFA_DTYPE_FLOAT16}) cases.push_back({l, m, t, 64, 2});
  cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 128, 2});
  cases.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT16, 128, 1});    // MQA
  cases.push_back({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 4});  // MHA
  // Sliding windows: shorter than a rank's 72 rows, of 1, longer than S; packed
  // documents alone and under a window. The ring skips the steps they hide on every layout.
  cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2, 40});
  cases.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 128, 1, 1});
  cases.push_back({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 2, 300});
  // The longest window a caller may give (it hides nothing): every kernel choice's bounds hold it.
  cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 2, std::numeric_limits<int64_t>::max()});
  cases.push_back({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 128, 2, 0, true});
  cases.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 4, 0, true});
  cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 64, 2, 10, true});
  // Head dim 256 (rfa's sm80 kernels in their d = 256 shape, whatever the kernel path): causal
  // GQA, and MQA under a window with documents.
  cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 256, 2});
  cases.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 256, 1, 40, true});
  // Head dims 32 and 192 (d = 64's and d = 256's shapes of the sm80 kernels).
  cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT16, 32, 2, 40, true});
  cases.push_back({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 192, 2});
  // MLA's head dims, 192 for Q and K and 128 for V (rfa's sm80 kernels whatever the choice): V,
  // out, dout and dV move and compute in their own size.
  Case mla{RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 192, 2};
  mla.value_dim = 128;
  cases.push_back(mla);
  mla = {RFA_LAYOUT_STRIPE, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 192, 1, 40, true};
  mla.value_dim = 128;
  cases.push_back(mla);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(LayoutsMasksDtypes, CudaForwardBackward, ::testing::ValuesIn(all_cases()), case_name);

/// Ulysses, the KV all-gather and the hybrid on device memory: layouts, masks, MQA and MHA,
/// a window and packed documents.
std::vector<Case> strategy_cases() {
  std::vector<Case> cases;
  for (rfa_strategy_t s : {RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID}) {
    cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2, 0, false, s});
    cases.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 128, 1, 0, false, s});        // MQA
    cases.push_back({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 4, 0, false, s});  // MHA
    cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2, 40, false, s});
    cases.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 128, 2, 0, true, s});
    // On the legacy default stream: the strategies' own kernels must run on it too.
    cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 64, 4, 0, false, s, true});
    // Attention sinks, folded into the finished rows on the device (engine/attention_sinks.hpp).
    cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2, 40, false, s, false, true});
    // Soft-capped scores (scaled scores of about +-1 here: a cap of 0.4 bends most of them).
    cases.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 128, 2, 0, true, s, false, false, 0.4});
    // Per-sequence documents (rfa's sm80 kernels, each entry its own list).
    cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2, 0, true, s, false, false, 0, true});
    // Head dim 256, and MLA's 192 / 128.
    cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 256, 2, 0, false, s});
    Case mla{RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 192, 2, 0, false, s};
    mla.value_dim = 128;
    cases.push_back(mla);
  }
  cases.push_back({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT16, 128, 2, 40, true, RFA_STRATEGY_RING,
                   false, false, 0, true});
  cases.push_back(
      {RFA_LAYOUT_STRIPE, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 1, 0, true, RFA_STRATEGY_RING, false, false, 0, true});
  cases.push_back(
      {RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2, 40, false, RFA_STRATEGY_RING, false, false, 0.4});
  cases.push_back({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 128, 1, 0, true, RFA_STRATEGY_RING,
                   false, true, 0.4});
  cases.push_back(
      {RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 128, 2, 0, true, RFA_STRATEGY_RING, false, true});
  cases.push_back(
      {RFA_LAYOUT_STRIPE, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 64, 1, 0, false, RFA_STRATEGY_RING, true, true});
  // Masks given as ranges (the index on the device, rfa's sm80 kernels): every strategy, with a
  // window and documents on top in one case, on the stripe layout in another.
  for (rfa_strategy_t s : {RFA_STRATEGY_RING, RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID})
    cases.push_back(
        {RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 2, 0, false, s, false, false, 0, false, true});
  cases.push_back({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_FLOAT16, 128, 1, 40, true, RFA_STRATEGY_RING, false,
                   false, 0, false, true});
  cases.push_back({RFA_LAYOUT_STRIPE, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 2, 0, false, RFA_STRATEGY_RING, false,
                   false, 0, false, true});
  // The backward on another stream than the forward, handed over with no synchronization: the
  // context's buffers and the forward's results stay ordered (the ring and the all-gather,
  // whose device workspace every call reuses).
  for (rfa_strategy_t s : {RFA_STRATEGY_RING, RFA_STRATEGY_ALLGATHER}) {
    Case switched{RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 128, 2, 0, false, s};
    switched.switch_stream = true;
    cases.push_back(switched);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Strategies, CudaForwardBackward, ::testing::ValuesIn(strategy_cases()), case_name);

// Host memory handed to a CUDA context fails on every rank before anything moves, and the
// context stays usable; head dims the CUDA kernels lack are refused at creation.
TEST(CudaContext, RefusesHostPointersAndUnsupportedHeadDims) {
  SKIP_WITHOUT_DEVICE();
  const int P = world_size();
  rfa_options_t o = cuda_options({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2}, 2 * P * 8);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  const std::size_t q_elems = std::size_t(o.batch * L * o.heads * o.head_dim),
                    kv_elems = std::size_t(o.batch * L * o.kv_heads * o.head_dim);
  OnDevice q(q_elems * 2), k(kv_elems * 2), v(kv_elems * 2), out(q_elems * 2);
  OnDevice lse(std::size_t(o.batch * o.heads * L) * 4);
  std::vector<uint16_t> host_k(kv_elems);
  // Only rank 0 passes a host pointer: every rank must fail, naming it on rank 0.
  const void* k_arg = world_rank() == 0 ? static_cast<const void*>(host_k.data()) : k.get();
  const rfa_result_t rc = rfa_forward(ctx, q.get(), k_arg, v.get(), out.get(), static_cast<float*>(lse.get()));
  EXPECT_EQ(int(rc), int(RFA_ERROR_INVALID_ARGUMENT)) << rfa_get_last_error_message();
  if (world_rank() == 0) {
    EXPECT_NE(std::string(rfa_get_last_error_message()).find("k is host memory"), std::string::npos);
  }
  ASSERT_RFA_OK(rfa_forward(ctx, q.get(), k.get(), v.get(), out.get(), static_cast<float*>(lse.get())));
  ASSERT_RFA_OK(rfa_context_synchronize(ctx));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));

  o.head_dim = 96;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "head_dim 96",
                   "32, 64, 128, 192 or 256");
  o.head_dim = 64;
  o.dtype = RFA_DTYPE_FLOAT32;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "float32");
}

// A CUDA context's ring order knows each rank's GPU: the topology dump (RFA_TOPO_DUMP, written
// by rank 0) holds every rank's PCI bus id, none empty, and rank 0's is its current device's.
TEST(CudaContext, RingOrderKeysHoldTheRanksGpus) {
  SKIP_WITHOUT_DEVICE();
  int root_pid = int(::getpid());  // one file name on every rank: rank 0's process id
  MPI_Bcast(&root_pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string path = "rfa-cuda-topo-dump-" + std::to_string(root_pid) + ".json";
  rfa_options_t o = cuda_options({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 2}, world_size() * 8);
  rfa_context_t ctx = nullptr;
  {
    const rfa::test::ScopedEnv dump("RFA_TOPO_DUMP", path);
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  }
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  // Rank 0 alone reads the dump: its checks are EXPECTs, so that every rank reaches the barrier.
  if (world_rank() == 0) {
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(path.c_str());
    int device = -1;
    char bus[32] = {};
    EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
    EXPECT_EQ(cudaDeviceGetPCIBusId(bus, int(sizeof bus), device), cudaSuccess);
    // As the key spells it: domain of 4 hex digits, lower case (CUDA may write 8, upper case).
    unsigned domain = 0, pci_bus = 0, device_no = 0, function = 0;
    const bool parsed = std::sscanf(bus, "%x:%x:%x.%x", &domain, &pci_bus, &device_no, &function) == 4;
    EXPECT_TRUE(parsed) << "cudaDeviceGetPCIBusId wrote '" << bus << "'";
    char spelled[32] = {};
    std::snprintf(spelled, sizeof spelled, "%04x:%02x:%02x.%x", domain, pci_bus, device_no, function);
    const std::string lower(spelled);
    EXPECT_EQ(text.find("\"pci_bus_id\": \"\""), std::string::npos) << "a rank without its GPU:\n" << text;
    EXPECT_NE(text.find("\"pci_bus_id\": \"" + lower + "\""), std::string::npos)
        << "rank 0's GPU " << lower << " is not in the dump:\n"
        << text;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/// A CUDA context and one forward call's device tensors for it, the inputs zeroed (q one element
/// longer, so that a test can pass it one element in).
struct ForwardCall {
  rfa_context_t ctx = nullptr;
  std::unique_ptr<OnDevice> q, k, v, out, lse;
  rfa_result_t run(const void* q_arg = nullptr, float* lse_arg = nullptr) const {
    return rfa_forward(ctx, q_arg != nullptr ? q_arg : q->get(), k->get(), v->get(), out->get(),
                       lse_arg != nullptr ? lse_arg : static_cast<float*>(lse->get()));
  }
};
void create_forward_call(rfa_options_t o, ForwardCall& call) {
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &call.ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(call.ctx, &L));
  const std::size_t q_elems = std::size_t(o.batch * L * o.heads * o.head_dim),
                    kv_elems = std::size_t(o.batch * L * o.kv_heads * o.head_dim);
  const std::vector<uint16_t> zeros(q_elems + 8, 0);
  call.q = std::make_unique<OnDevice>(zeros.data(), (q_elems + 8) * 2);
  call.k = std::make_unique<OnDevice>(zeros.data(), kv_elems * 2);
  call.v = std::make_unique<OnDevice>(zeros.data(), kv_elems * 2);
  call.out = std::make_unique<OnDevice>(q_elems * 2);
  call.lse = std::make_unique<OnDevice>(std::size_t(o.batch * o.heads * L + 4) * 4);
}

// A CUDA context computes on the device current at its creation: a call made while another
// device is current fails on every rank before anything moves, and succeeds once the context's
// device is current again. Needs two devices (the lent machines have one: skipped there).
TEST(CudaContext, RefusesCallsWhileAnotherDeviceIsCurrent) {
  SKIP_WITHOUT_DEVICE();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs two CUDA devices (" << devices << " here)";
  rfa_options_t o = cuda_options({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 2}, world_size() * 8);
  o.transport = RFA_TRANSPORT_MPI;
  ForwardCall call;
  ASSERT_NO_FATAL_FAILURE(create_forward_call(o, call));
  int own = -1;
  ASSERT_EQ(cudaGetDevice(&own), cudaSuccess);
  // Only rank 0 makes another device current: every rank must fail, rank 0 saying why.
  if (world_rank() == 0) ASSERT_EQ(cudaSetDevice((own + 1) % devices), cudaSuccess);
  const rfa_result_t rc = call.run();
  EXPECT_EQ(int(rc), int(RFA_ERROR_INVALID_USAGE)) << rfa_get_last_error_message();
  if (world_rank() == 0) {
    EXPECT_NE(std::string(rfa_get_last_error_message()).find("but the context was created on device"),
              std::string::npos)
        << rfa_get_last_error_message();
    ASSERT_EQ(cudaSetDevice(own), cudaSuccess);
  }
  ASSERT_RFA_OK(call.run());
  ASSERT_RFA_OK(rfa_context_synchronize(call.ctx));
  ASSERT_RFA_OK(rfa_context_destroy(call.ctx));
}

// The caller's stream need only outlive the calls: a context whose stream the caller destroyed
// after its last call, without waiting for it, is destroyed cleanly (its work waited for through
// the last call's event), and the device takes work afterwards.
TEST(CudaContext, IsDestroyedAfterItsStreamIsGone) {
  SKIP_WITHOUT_DEVICE();
  ForwardCall call;
  ASSERT_NO_FATAL_FAILURE(create_forward_call(
      cuda_options({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2}, 2 * world_size() * 8), call));
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_RFA_OK(rfa_context_set_stream(call.ctx, stream));
  ASSERT_RFA_OK(call.run());
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  ASSERT_RFA_OK(rfa_context_destroy(call.ctx));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

/// Holds a stream with a host function that spins until released (or until `most` has passed,
/// so that a test that fails cannot hang the suite): a kernel that does not end, as far as the
/// stream's later work and rfa's waits can tell. The host function shares its state, so that it
/// may outlive the hold.
class StreamHold {
 public:
  StreamHold(cudaStream_t stream, std::chrono::seconds most) : state_(std::make_shared<State>()) {
    state_->until = std::chrono::steady_clock::now() + most;
    auto* shared = new std::shared_ptr<State>(state_);
    const cudaError_t rc = cudaLaunchHostFunc(stream, &StreamHold::spin, shared);
    EXPECT_EQ(rc, cudaSuccess);
    if (rc != cudaSuccess) delete shared;
  }
  ~StreamHold() { release(); }
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  void release() { state_->released = true; }
  /// Whether the hold ended by itself (`most` passed) rather than by release().
  bool timed_out() const { return state_->timed_out; }

 private:
  struct State {
    std::chrono::steady_clock::time_point until;
    std::atomic<bool> released{false}, timed_out{false};
  };
  static void spin(void* shared) {
    const std::unique_ptr<std::shared_ptr<State>> owned(static_cast<std::shared_ptr<State>*>(shared));
    State& state = **owned;
    while (!state.released) {
      if (std::chrono::steady_clock::now() >= state.until) {
        state.timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  }
  std::shared_ptr<State> state_;
};

/// Seconds `run` took, with its result.
template <class Run>
std::pair<rfa_result_t, double> timed(Run&& run) {
  const auto start = std::chrono::steady_clock::now();
  const rfa_result_t rc = run();
  return {rc, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// The waits for a CUDA context's stream end by its deadline: with the stream held by work that
// does not end and a forward queued behind it (which returns at once), rfa_context_synchronize
// on one context and rfa_context_release_workspace on a second one sharing the stream each
// return RFA_ERROR_TIMEOUT after the contexts' 1 s; each context refuses calls from then on at
// once with RFA_ERROR_INVALID_USAGE (rfa_context_release_workspace included, freeing nothing),
// and rfa_context_destroy, whose wait for the last call times out too, returns
// RFA_ERROR_TIMEOUT with the handle gone and the call's buffers kept (the forwards still run
// once the stream is released, and the device reports no error). One rank: it holds its own
// stream (at more ranks the staged transport's copies time out first, tested on the host).
TEST(CudaContext, WaitsForAStuckStreamOnlyUntilTheDeadline) {
  SKIP_WITHOUT_DEVICE();
  if (world_size() != 1) GTEST_SKIP() << "one rank only (it holds its own stream)";
  rfa_options_t o = cuda_options({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2}, 256);
  o.timeout_s = 1.0;
  o.check_values = RFA_VALUE_CHECKS_OFF;  // a value check would wait for the held stream inside the call
  ForwardCall call, other;
  ASSERT_NO_FATAL_FAILURE(create_forward_call(o, call));
  ASSERT_NO_FATAL_FAILURE(create_forward_call(o, other));
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (const ForwardCall* c : {&call, &other}) {
    ASSERT_RFA_OK(rfa_context_set_stream(c->ctx, stream));
    ASSERT_RFA_OK(c->run());
    ASSERT_RFA_OK(rfa_context_synchronize(c->ctx));
  }

  StreamHold hold(stream, std::chrono::seconds(20));
  const auto expect_timeout = [](const char* what, std::pair<rfa_result_t, double> r) {
    EXPECT_EQ(int(r.first), int(RFA_ERROR_TIMEOUT)) << what << ": " << rfa_get_last_error_message();
    EXPECT_NE(std::string(rfa_get_last_error_message()).find("did not complete within 1 s"), std::string::npos)
        << what << ": " << rfa_get_last_error_message();
    EXPECT_GE(r.second, 0.99) << what;
    EXPECT_LT(r.second, 5.0) << what << " (the deadline is 1 s)";
    std::printf("  %s on a held stream: %s after %.2f s\n", what, rfa_get_error_string(r.first), r.second);
  };
  // Queued behind the held work: returns without waiting for it.
  for (const ForwardCall* c : {&call, &other}) {
    const auto queued = timed([&] { return c->run(); });
    EXPECT_EQ(int(queued.first), int(RFA_SUCCESS)) << rfa_get_last_error_message();
    EXPECT_LT(queued.second, 1.0) << "a call queues its work and returns";
  }
  expect_timeout("rfa_context_synchronize", timed([&] { return rfa_context_synchronize(call.ctx); }));
  int64_t released = -1;
  expect_timeout("rfa_context_release_workspace",
                 timed([&] { return rfa_context_release_workspace(other.ctx, &released); }));
  EXPECT_EQ(released, -1) << "nothing is released while the stream's work may still use it";
  // Each context is unusable now: refused at once, the release included (nothing freed).
  const auto refused_release = timed([&] { return rfa_context_release_workspace(call.ctx, &released); });
  EXPECT_EQ(int(refused_release.first), int(RFA_ERROR_INVALID_USAGE)) << rfa_get_last_error_message();
  EXPECT_NE(std::string(rfa_get_last_error_message()).find("rfa_context_synchronize timed out"), std::string::npos)
      << rfa_get_last_error_message();
  EXPECT_LT(refused_release.second, 0.5) << "an unusable context refuses at once";
  EXPECT_EQ(released, -1) << "an unusable context frees nothing";
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, call.run(), "unusable", "rfa_context_synchronize timed out");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_synchronize(other.ctx), "unusable",
                   "rfa_context_release_workspace timed out");
  for (const ForwardCall* c : {&call, &other}) {
    expect_timeout("rfa_context_destroy", timed([&] { return rfa_context_destroy(c->ctx); }));
    EXPECT_EQ(int(rfa_context_synchronize(c->ctx)), int(RFA_ERROR_INVALID_ARGUMENT)) << "the handle is gone";
  }
  hold.release();
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_FALSE(hold.timed_out()) << "the hold was released by the test, not by its own bound";
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// A tensor the kernels would read in chunks that straddle 16 bytes (aligned to its 2-byte
// elements only; lse to its 4-byte ones) is refused on every rank before anything moves, naming
// it on its rank.
TEST(CudaContext, RefusesTensorsNotAlignedTo16Bytes) {
  SKIP_WITHOUT_DEVICE();
  ForwardCall call;
  ASSERT_NO_FATAL_FAILURE(create_forward_call(
      cuda_options({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2}, 2 * world_size() * 8), call));
  // Only rank 0 passes q one element past an allocation's start.
  const auto* q = static_cast<const uint16_t*>(call.q->get());
  const rfa_result_t rc = call.run(world_rank() == 0 ? q + 1 : q);
  EXPECT_EQ(int(rc), int(RFA_ERROR_INVALID_ARGUMENT)) << rfa_get_last_error_message();
  if (world_rank() == 0) {
    EXPECT_NE(std::string(rfa_get_last_error_message()).find("q (address"), std::string::npos);
    EXPECT_NE(std::string(rfa_get_last_error_message()).find("is not 16-byte aligned"), std::string::npos);
  }
  // lse too (fp32, aligned to its 4-byte elements only): cuDNN reads and writes it in place.
  auto* lse = static_cast<float*>(call.lse->get());
  const rfa_result_t lse_rc = call.run(nullptr, world_rank() == 0 ? lse + 1 : lse);
  EXPECT_EQ(int(lse_rc), int(RFA_ERROR_INVALID_ARGUMENT)) << rfa_get_last_error_message();
  if (world_rank() == 0) {
    EXPECT_NE(std::string(rfa_get_last_error_message()).find("lse (address"), std::string::npos);
    EXPECT_NE(std::string(rfa_get_last_error_message()).find("is not 16-byte aligned"), std::string::npos);
  }
  ASSERT_RFA_OK(call.run());
  ASSERT_RFA_OK(rfa_context_synchronize(call.ctx));
  ASSERT_RFA_OK(rfa_context_destroy(call.ctx));
}

// Device memory handed to a host context is refused the same way.
TEST(CudaContext, HostContextRefusesDevicePointers) {
  SKIP_WITHOUT_DEVICE();
  const int P = world_size();
  rfa_options_t o = cuda_options({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, 64, 2}, P * 8);
  o.device = RFA_DEVICE_HOST;
  // The suite runs with a CUDA kernel choice pinned in the environment, which a host context
  // refuses (kernel_choice_test): this host context is made without it.
  const rfa::test::ScopedEnv no_kernels("RFA_CUDA_KERNELS", nullptr), no_path("RFA_CUDA_KERNEL_PATH", nullptr);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  const std::size_t q_elems = std::size_t(o.batch * L * o.heads * o.head_dim),
                    kv_elems = std::size_t(o.batch * L * o.kv_heads * o.head_dim);
  std::vector<uint16_t> q(q_elems), k(kv_elems), v(kv_elems), out(q_elems);
  std::vector<float> lse(std::size_t(o.batch * o.heads * L));
  OnDevice device_out(q_elems * 2);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_forward(ctx, q.data(), k.data(), v.data(), device_out.get(), lse.data()),
                   "out is CUDA device memory", "RFA_DEVICE_HOST");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_set_stream(ctx, nullptr), "RFA_DEVICE_HOST");
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

// The sharding helpers copy on the host whatever the context's device: a CUDA context's helpers
// refuse device memory by name (a device pointer would fault), and take host memory.
TEST(CudaContext, ShardingHelpersRefuseDeviceMemory) {
  SKIP_WITHOUT_DEVICE();
  const int P = world_size();
  const rfa_options_t o = cuda_options({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2}, 2 * P * 8);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  const std::size_t local = std::size_t(o.batch * L * o.heads * o.head_dim),
                    whole = std::size_t(o.batch * o.seq_total * o.heads * o.head_dim);
  std::vector<uint16_t> host_whole(whole, 1), host_local(local);
  OnDevice device_local(local * 2), device_whole(whole * 2), device_lse(std::size_t(o.batch * o.heads * L) * 4);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_scatter_bshd(ctx, o.heads, host_whole.data(), device_local.get()),
                   "local is CUDA device memory", "rfa_scatter_bshd");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_gather_bshd(ctx, o.heads, host_local.data(), device_whole.get()),
                   "global is CUDA device memory", "rfa_gather_bshd");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_allgather_bshd(ctx, o.heads, device_local.get(), host_whole.data()),
                   "local is CUDA device memory", "rfa_allgather_bshd");
  std::vector<float> lse_whole(std::size_t(o.batch * o.heads * o.seq_total));
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_scatter_lse(ctx, lse_whole.data(), static_cast<float*>(device_lse.get())),
                   "local is CUDA device memory", "rfa_scatter_lse");
  ASSERT_RFA_OK(rfa_scatter_bshd(ctx, o.heads, host_whole.data(), host_local.data()));
  ASSERT_RFA_OK(rfa_allgather_bshd(ctx, o.heads, host_local.data(), host_whole.data()));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

// NCCL cannot put two ranks on one GPU: with more ranks than GPUs on this node, a context that
// asks for NCCL fails on every rank with a message that points at the MPI transport.
TEST(CudaContext, NcclRefusesRanksSharingAGpu) {
  SKIP_WITHOUT_DEVICE();
#if !RFA_HAVE_NCCL
  GTEST_SKIP() << "this build has no NCCL";
#endif
  int devices = 0;
  cudaGetDeviceCount(&devices);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_ranks = 1;
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  int shared = local_ranks > devices ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!shared) GTEST_SKIP() << "every rank has a GPU of its own here";
  const int P = world_size();
  rfa_options_t o = cuda_options({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_BFLOAT16, 64, 2}, 2 * P * 8);
  o.transport = RFA_TRANSPORT_NCCL;
  // The environment would override the option (the suite runs with RFA_TRANSPORT=mpi).
  const char* env = std::getenv("RFA_TRANSPORT");
  const std::string saved = env ? env : "";
  unsetenv("RFA_TRANSPORT");
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "share the GPU",
                   "RFA_TRANSPORT=mpi");
  if (env) setenv("RFA_TRANSPORT", saved.c_str(), 1);
}

}  // namespace
