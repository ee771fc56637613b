// SPDX-License-Identifier: BSD-3-Clause
// The ring's own overhead on one GPU: every kernel the P ranks of a zigzag
// causal ring launch for their blocks, run one after another on one GPU, against one causal
// attention over the whole sequence. Ranks that share a GPU take turns on it, so this sum is
// what the ring costs beyond the attention itself: the smaller per-block launches, the
// partial tiles at block edges, the merges, and the dK/dV additions.
//
// Forward per rank: one kernel per visible block, its fp32 partial merged into the running
// out/lse, either in the kernel's epilogue ("fused", what the engine does) or by the separate
// merge kernel ("separate"); then out narrowed to the storage dtype. Backward per rank: D
// once, one backward kernel per block, its dK/dV where the engine puts them
// (engine/travelling_gradients.hpp: the home gradient, the partial the second step starts, from
// the third step on a buffer of their own that rfa's kernels write over, added to the partial
// that arrived, or on cuDNN its own output, held until added to that partial), the fp32
// accumulators narrowed at the end; and the same with each step's dK/dV added straight into
// one buffer ("bwd direct": no contribution buffer, no addition of the arriving partial), which
// is what the engine's overlap of the arrival with the compute costs. Efficiency is the single
// attention's time over the ring's sum (1.0: no overhead). CUDA events, median of --iters runs
// after --warmup. Without a GPU: a message and exit 77.
//
// With --kernels cudnn (built when the cuDNN block kernel is), every block runs on cuDNN's fused
// attention as CudnnBlockCompute runs it (rfa_cudnn_forward merging into the running out/lse,
// rfa_cudnn_backward accumulating fp32 gradients), and the single attention is the same call
// over the whole sequence. With --kernels rfa-sm90, every forward (the blocks and the single
// attention) runs on the Hopper path of rfa's kernels; the backward stays on the sm_80 path.
//
// With --strategy ulysses or allgather, the other strategies' compute the same way: each rank's
// attention calls one after another, against the one attention. Ulysses: every rank one
// attention over the whole sequence for H/P heads. The KV all-gather: every rank's zigzag
// queries against the whole sequence's keys, one call per chunk of K/V heads
// (--kv-heads-per-chunk, default the engine's choice on a device: engine/allgather_chunk_rule.hpp,
// the same header). The transposes, gathers and reduce-scatters are the transport's, not timed.
//
// usage: rfa_cuda_ring_step_bench [options]: kUsage below (--help prints it).
// --json writes perf/'s result format (suite cuda_ring_step): one case per measurement, every
// timed iteration a repetition, the efficiency as a counter.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attention_work.hpp"
#include "bench_results.hpp"
#include "command_line.hpp"
#include "engine/allgather_chunk_rule.hpp"
#include "rfa_cuda/flash.h"
#include "test_support.cuh"
#if RFA_RING_STEP_CUDNN
#include "rfa_cuda/cudnn_attention.h"
#endif

using namespace rfa_cuda_test;

namespace {

struct Options {
  int batch = 1, heads = 16, seq = 32768, dim = 128, warmup = 3, iters = 10;
  std::vector<int> ranks = {2, 4, 8};
  rfa_cuda_dtype dtype = RFA_CUDA_BF16;
  bool cudnn = false;                       // --kernels cudnn
  rfa_cuda_path path = RFA_CUDA_PATH_AUTO;  // --kernels rfa-sm90: RFA_CUDA_PATH_SM90
  const char* kernels = "rfa";              // as given
  std::string strategy = "ring";            // --strategy
  int chunk = 0;                            // --kv-heads-per-chunk (allgather; 0: the engine's choice)
  std::string json;
};

Options parse_options(int argc, char** argv) {
  using rfa::perf::OptionError;
  using rfa::perf::whole_int;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw OptionError(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--batch") {
      o.batch = whole_int(a, v, 1);
    } else if (a == "--heads") {
      o.heads = whole_int(a, v, 1);
    } else if (a == "--seq") {
      o.seq = whole_int(a, v, 1);
    } else if (a == "--dim") {
      o.dim = whole_int(a, v, 1);
    } else if (a == "--warmup") {
      o.warmup = whole_int(a, v, 0);
    } else if (a == "--iters") {
      o.iters = whole_int(a, v, 1);
    } else if (a == "--dtype") {
      if (v != "bf16" && v != "fp16") throw OptionError("--dtype is bf16 or fp16, not '" + v + "'");
      o.dtype = v == "fp16" ? RFA_CUDA_FP16 : RFA_CUDA_BF16;
    } else if (a == "--json") {
      o.json = v;
    } else if (a == "--kernels") {
      if (v != "rfa" && v != "rfa-sm90" && v != "cudnn") throw OptionError("--kernels must be rfa, rfa-sm90 or cudnn");
      o.kernels = argv[i];
      o.cudnn = v == "cudnn";
      if (v == "rfa-sm90") o.path = RFA_CUDA_PATH_SM90;
#if !RFA_RING_STEP_CUDNN
      if (o.cudnn) throw OptionError("--kernels cudnn: this build has no cuDNN block kernel (RFA_ENABLE_CUDNN)");
#endif
    } else if (a == "--strategy") {
      if (v != "ring" && v != "ulysses" && v != "allgather")
        throw OptionError("--strategy must be ring, ulysses or allgather");
      o.strategy = v;
    } else if (a == "--kv-heads-per-chunk") {
      o.chunk = whole_int(a, v, 0);
    } else if (a == "--ranks") {
      // At most INT_MAX / 2: the check below takes 2P.
      o.ranks = rfa::perf::whole_ints(a, v, 1, std::numeric_limits<int>::max() / 2);
    } else {
      throw OptionError("unknown argument '" + a + "' (see the usage at the top of ring_step_bench.cu)");
    }
  }
  for (int p : o.ranks) {
    if (o.seq % (2 * p) != 0)
      throw OptionError("--seq " + std::to_string(o.seq) + " must divide by 2P for every P in --ranks (zigzag)");
    if (o.strategy == "ulysses" && o.heads % p != 0)
      throw OptionError("--strategy ulysses: --heads " + std::to_string(o.heads) +
                        " must divide by every P in --ranks");
  }
  if (o.strategy == "allgather" && o.cudnn)
    throw OptionError("--strategy allgather computes on rfa's kernels (the engine refuses cuDNN for it)");
  if (o.chunk > 0 && o.heads % o.chunk != 0)
    throw OptionError("--kv-heads-per-chunk must divide --heads (" + std::to_string(o.heads) + ")");
  return o;
}

// Every timed iteration, kept for the JSON; the table shows their median.
std::vector<double> samples_ms(const Options& o, const std::function<void()>& fn) {
  return event_samples_ms(o.warmup, o.iters, fn);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rank r of a zigzag ring of P holds chunks r and 2P-1-r of S/(2P) tokens each.
rfa_cuda_position_map zigzag(int rank, int P, int seq) {
  const int chunk = seq / (2 * P);
  rfa_cuda_position_map m{};
  m.count = 2;
  m.seg[0] = rfa_cuda_segment{int64_t(rank) * chunk, 1, chunk};
  m.seg[1] = rfa_cuda_segment{int64_t(2 * P - 1 - rank) * chunk, 1, chunk};
  return m;
}

// Whether any key of block `owner` is visible to a query of rank `me` (causal): the latest
// query position against the earliest key position.
bool block_visible(int me, int owner, int P, int seq) {
  const int chunk = seq / (2 * P);
  const int64_t last_q = int64_t(2 * P - me) * chunk - 1, first_k = int64_t(owner) * chunk;
  return first_k <= last_q;
}

struct Buffers {
  Buffers(const Options& o, int64_t rows)
      : q(o.dtype, rows * o.heads * o.dim),
        k(o.dtype, rows * o.heads * o.dim),
        v(o.dtype, rows * o.heads * o.dim),
        dout(o.dtype, rows * o.heads * o.dim),
        out(o.dtype, rows * o.heads * o.dim),
        acc(RFA_CUDA_FP32, rows * o.heads * o.dim),
        block_out(RFA_CUDA_FP32, rows * o.heads * o.dim),
        lse(RFA_CUDA_FP32, rows * o.heads),
        block_lse(RFA_CUDA_FP32, rows * o.heads),
        delta(RFA_CUDA_FP32, rows * o.heads),
        dq(RFA_CUDA_FP32, rows * o.heads * o.dim),
        dk(RFA_CUDA_FP32, rows * o.heads * o.dim),
        dv(RFA_CUDA_FP32, rows * o.heads * o.dim),
        dk_in(RFA_CUDA_FP32, rows * o.heads * o.dim),
        dv_in(RFA_CUDA_FP32, rows * o.heads * o.dim),
        dq16(o.dtype, rows * o.heads * o.dim) {
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    auto random = [&](std::size_t n) {
      std::vector<double> x(n);
      for (double& e : x) e = d(gen);
      return x;
    };
    const std::size_t n = std::size_t(rows) * o.heads * o.dim;
    q.upload(random(n));
    k.upload(random(n));
    v.upload(random(n));
    dout.upload(random(n));
    out.upload(random(n));
    lse.upload(std::vector<double>(std::size_t(rows) * o.heads, 1.0));  // finite: a plausible final lse
    dk_in.upload(std::vector<double>(n, 0.0));
    dv_in.upload(std::vector<double>(n, 0.0));
  }
  DeviceArray q, k, v, dout, out, acc, block_out, lse, block_lse, delta, dq, dk, dv, dk_in, dv_in, dq16;
};

rfa_cuda_attention_shape shape(const Options& o, int64_t rows_q, int64_t rows_k, rfa_cuda_position_map qm,
                               rfa_cuda_position_map km, int64_t heads = 0) {
  rfa_cuda_attention_shape s{};
  s.batch = o.batch;
  s.seq_q = rows_q;
  s.seq_k = rows_k;
  s.heads = s.kv_heads = heads > 0 ? heads : o.heads;
  s.head_dim = o.dim;
  s.mask = RFA_CUDA_MASK_CAUSAL;
  s.q_positions = qm;
  s.k_positions = km;
  s.dtype = o.dtype;
  return s;
}

rfa_cuda_convert_params narrowing(const Options& o, int64_t rows, const float* src, void* dst) {
  rfa_cuda_convert_params c{};
  c.batch = o.batch;
  c.seq = rows;
  c.heads = o.heads;
  c.head_dim = o.dim;
  c.src = src;
  c.dst = dst;
  c.dst_dtype = o.dtype;
  return c;
}

#if RFA_RING_STEP_CUDNN
// The cuDNN context and one scratch buffer, grown to the largest plan seen.
struct Cudnn {
  rfa_cudnn_context* ctx = nullptr;
  void* scratch = nullptr;
  std::size_t bytes = 0;
  void reserve(std::size_t need) {
    if (need <= bytes) return;
    if (scratch) RFA_TEST_CUDA(cudaFree(scratch));
    RFA_TEST_CUDA(cudaMalloc(&scratch, need));
    bytes = need;
  }
  ~Cudnn() {
    if (scratch) cudaFree(scratch);
    rfa_cudnn_destroy(ctx);
  }
};
Cudnn* cudnn = nullptr;

// One block forward on cuDNN, merged into f's out (fp32) and lse; plans on first use.
void cudnn_forward(rfa_cuda_forward_params& f) {
  f.merge = 1;
  std::size_t need = 0;
  RFA_TEST_CALL(rfa_cudnn_plan_forward(cudnn->ctx, &f, nullptr, &need));
  cudnn->reserve(need);
  RFA_TEST_CALL(rfa_cudnn_forward(cudnn->ctx, &f, nullptr, cudnn->scratch, cudnn->bytes, nullptr));
}

// One block backward on cuDNN from the final output `out`, accumulated into b's fp32 gradients.
void cudnn_backward(const rfa_cuda_backward_params& b, const void* out) {
  std::size_t need = 0;
  RFA_TEST_CALL(rfa_cudnn_plan_backward(cudnn->ctx, &b, rfa_cuda_strides{}, nullptr, &need));
  cudnn->reserve(need);
  RFA_TEST_CALL(
      rfa_cudnn_backward(cudnn->ctx, &b, out, rfa_cuda_strides{}, nullptr, cudnn->scratch, cudnn->bytes, nullptr));
}

// The same with dK and dV held in the scratch (the blocks of a zigzag ring's later steps are one
// band each), for rfa_cudnn_add_held_key_gradients to add.
void cudnn_backward_held(const rfa_cuda_backward_params& b, const void* out) {
  std::size_t need = 0;
  RFA_TEST_CALL(rfa_cudnn_plan_backward(cudnn->ctx, &b, rfa_cuda_strides{}, nullptr, &need));
  cudnn->reserve(need);
  RFA_TEST_CALL(rfa_cudnn_backward_holding_key_gradients(cudnn->ctx, &b, out, rfa_cuda_strides{}, nullptr,
                                                         cudnn->scratch, cudnn->bytes, nullptr));
}
#endif

// One forward pass of all P ranks, one after another.
void ring_forward(const Options& o, int P, Buffers& b, bool fused) {
  const int64_t L = o.seq / P;
  for (int me = 0; me < P; ++me) {
    bool seen = false;
    for (int s = 0; s < P; ++s) {
      const int owner = (me - s + P) % P;
      if (!block_visible(me, owner, P, o.seq)) continue;
      rfa_cuda_forward_params f;
      rfa_cuda_forward_params_init(&f);
      f.shape = shape(o, L, L, zigzag(me, P, o.seq), zigzag(owner, P, o.seq));
      f.path = o.path;
      f.q = b.q.get();
      f.k = b.k.get();
      f.v = b.v.get();
      f.out_dtype = RFA_CUDA_FP32;
#if RFA_RING_STEP_CUDNN
      if (o.cudnn) {  // into out = 0, lse = -inf at the first block, as the engine starts
        if (!seen) {
          RFA_TEST_CALL(rfa_cuda_fill_fp32(b.acc.as_float(), 0.f, std::size_t(o.batch) * L * o.heads * o.dim, nullptr));
          RFA_TEST_CALL(
              rfa_cuda_fill_fp32(b.block_lse.as_float(), -INFINITY, std::size_t(o.batch) * L * o.heads, nullptr));
        }
        f.out = b.acc.get();
        f.lse = b.block_lse.as_float();
        cudnn_forward(f);
        seen = true;
        continue;
      }
#endif
      if (!seen || fused) {
        f.out = b.acc.get();
        f.lse = b.block_lse.as_float();  // the running lse of this rank
        f.merge = seen ? 1 : 0;
        RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr));
      } else {
        f.out = b.block_out.get();
        f.lse = b.lse.as_float();  // scratch: this block's lse
        RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr));
        rfa_cuda_merge_params m{};
        m.batch = o.batch;
        m.seq = L;
        m.heads = o.heads;
        m.head_dim = o.dim;
        m.out = b.acc.as_float();
        m.lse = b.block_lse.as_float();
        m.block_out = b.block_out.as_float();
        m.block_lse = b.lse.as_float();
        RFA_TEST_CALL(rfa_cuda_merge_partial(&m, nullptr));
      }
      seen = true;
    }
    const rfa_cuda_convert_params c = narrowing(o, L, b.acc.as_float(), b.out.get());
    RFA_TEST_CALL(rfa_cuda_convert_from_fp32(&c, nullptr));
  }
}

// One backward pass of all P ranks, one after another. `travelling`: each step's dK/dV where
// the engine puts them while the partial of the block arrives; otherwise every step adds into
// one buffer.
void ring_backward(const Options& o, int P, Buffers& b, bool travelling) {
  const int64_t L = o.seq / P;
  const std::size_t grad = std::size_t(o.batch) * L * o.heads * o.dim;
  for (int me = 0; me < P; ++me) {
    rfa_cuda_delta_params dp{};
    dp.batch = o.batch;
    dp.seq = L;
    dp.heads = o.heads;
    dp.head_dim = o.dim;
    dp.out = b.out.get();
    dp.out_dtype = o.dtype;
    dp.dout = b.dout.get();
    dp.dout_dtype = o.dtype;
    dp.delta = b.delta.as_float();
    RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));
    RFA_TEST_CALL(rfa_cuda_fill_fp32(b.dq.as_float(), 0.f, grad, nullptr));
    int step = 0;  // among the visible ones
    for (int s = 0; s < P; ++s) {
      const int owner = (me - s + P) % P;
      if (!block_visible(me, owner, P, o.seq)) continue;
      // Travelling, as the engine (engine/travelling_gradients.hpp): the first step adds into the
      // home gradient (dk), the second into the partial it starts (dk_in), a later one apart
      // into dk (written over by rfa's kernels) and then into the partial that arrived (dk_in),
      // or, on cuDNN, held in its output until it is added to that partial.
      const bool into_partial = travelling && step == 1, arriving = travelling && step > 1;
      ++step;
      DeviceArray& dk = into_partial ? b.dk_in : b.dk;
      DeviceArray& dv = into_partial ? b.dv_in : b.dv;
      rfa_cuda_backward_params bp;
      rfa_cuda_backward_params_init(&bp);
      bp.shape = shape(o, L, L, zigzag(me, P, o.seq), zigzag(owner, P, o.seq));
      bp.q = b.q.get();
      bp.k = b.k.get();
      bp.v = b.v.get();
      bp.dout = b.dout.get();
      bp.lse = b.lse.as_float();
      bp.delta = b.delta.as_float();
      bp.grad_mode = RFA_CUDA_GRAD_ACCUMULATE_FP32;
      bp.dq = b.dq.get();
      bp.dk = dk.get();
      bp.dv = dv.get();
#if RFA_RING_STEP_CUDNN
      if (o.cudnn && arriving && rfa_cudnn_holds_key_gradients(&bp.shape, nullptr)) {
        cudnn_backward_held(bp, b.out.get());
        bp.dk = b.dk_in.get();
        bp.dv = b.dv_in.get();
        RFA_TEST_CALL(rfa_cudnn_add_held_key_gradients(cudnn->ctx, &bp, nullptr, cudnn->scratch, nullptr));
        continue;
      }
#endif
      // rfa's kernels write an arriving step's contribution over its buffer (nothing to zero).
      if (arriving && !o.cudnn) {
        bp.grad_mode = RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32;
      } else if (travelling || s == 0) {
        RFA_TEST_CALL(rfa_cuda_fill_fp32(dk.as_float(), 0.f, grad, nullptr));
        RFA_TEST_CALL(rfa_cuda_fill_fp32(dv.as_float(), 0.f, grad, nullptr));
      }
#if RFA_RING_STEP_CUDNN
      if (o.cudnn)
        cudnn_backward(bp, b.out.get());
      else
        RFA_TEST_CALL(rfa_cuda_flash_backward(&bp, nullptr));
#else
      RFA_TEST_CALL(rfa_cuda_flash_backward(&bp, nullptr));
#endif
      if (arriving) {  // the partial that arrived from upstream joins this step's contribution
        RFA_TEST_CALL(rfa_cuda_add_fp32(b.dk_in.as_float(), b.dk.as_float(), grad, nullptr));
        RFA_TEST_CALL(rfa_cuda_add_fp32(b.dv_in.as_float(), b.dv.as_float(), grad, nullptr));
      }
    }
    for (DeviceArray* g : {&b.dq, &b.dk_in, &b.dv_in}) {
      const rfa_cuda_convert_params c = narrowing(o, L, g->as_float(), b.dq16.get());
      RFA_TEST_CALL(rfa_cuda_convert_from_fp32(&c, nullptr));
    }
  }
}

// One causal attention call pair of `heads` query heads over as many K/V heads, `rows_q` queries
// at `q_map` against `rows_k` keys at positions 0, 1, ... (the whole sequence), with buffers of
// its own, as a training step runs one: rfa's kernels write the output in the storage dtype and
// add fp32 gradients after D (the same accumulating kernel the ring runs); cuDNN merges into an
// fp32 output and lse from -inf, as the ring's blocks, and adds its fp32 gradients.
struct Attention {
  Attention(const Options& o, int64_t rows_q, int64_t rows_k, int64_t heads, rfa_cuda_position_map q_map)
      : q(o.dtype, std::size_t(o.batch * rows_q * heads * o.dim)),
        out(o.dtype, q.bytes() / element_size(o.dtype)),
        dout(o.dtype, q.bytes() / element_size(o.dtype)),
        acc(RFA_CUDA_FP32, q.bytes() / element_size(o.dtype)),
        dq(RFA_CUDA_FP32, q.bytes() / element_size(o.dtype)),
        k(o.dtype, std::size_t(o.batch * rows_k * heads * o.dim)),
        v(o.dtype, k.bytes() / element_size(o.dtype)),
        dk(RFA_CUDA_FP32, k.bytes() / element_size(o.dtype)),
        dv(RFA_CUDA_FP32, k.bytes() / element_size(o.dtype)),
        lse(RFA_CUDA_FP32, std::size_t(o.batch * heads * rows_q)),
        delta(RFA_CUDA_FP32, std::size_t(o.batch * heads * rows_q)),
        lse_rows(std::size_t(o.batch * heads * rows_q)),
        cudnn_kernels(o.cudnn) {
    std::mt19937 gen(11);
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    for (DeviceArray* t : {&q, &k, &v, &dout, &out}) {
      std::vector<double> x(t->bytes() / element_size(o.dtype));
      for (double& e : x) e = d(gen);
      t->upload(x);
    }
    lse.upload(std::vector<double>(lse_rows, 1.0));  // finite: a plausible final lse
    rfa_cuda_forward_params_init(&f);
    f.shape = shape(o, rows_q, rows_k, q_map, rfa_cuda_position_map{}, heads);
    f.path = o.path;
    f.q = q.get();
    f.k = k.get();
    f.v = v.get();
    f.out = cudnn_kernels ? acc.get() : out.get();
    f.out_dtype = cudnn_kernels ? RFA_CUDA_FP32 : o.dtype;
    f.lse = lse.as_float();
    dp = rfa_cuda_delta_params{};
    dp.batch = o.batch;
    dp.seq = rows_q;
    dp.heads = heads;
    dp.head_dim = o.dim;
    dp.out = out.get();
    dp.out_dtype = o.dtype;
    dp.dout = dout.get();
    dp.dout_dtype = o.dtype;
    dp.delta = delta.as_float();
    rfa_cuda_backward_params_init(&b);
    b.shape = f.shape;
    b.q = q.get();
    b.k = k.get();
    b.v = v.get();
    b.dout = dout.get();
    b.lse = lse.as_float();
    b.delta = delta.as_float();
    b.grad_mode = RFA_CUDA_GRAD_ACCUMULATE_FP32;
    b.dq = dq.get();
    b.dk = dk.get();
    b.dv = dv.get();
  }
  void forward() {
#if RFA_RING_STEP_CUDNN
    if (cudnn_kernels) {
      RFA_TEST_CALL(rfa_cuda_fill_fp32(lse.as_float(), -INFINITY, lse_rows, nullptr));
      cudnn_forward(f);
      return;
    }
#endif
    RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr));
  }
  void backward() {
#if RFA_RING_STEP_CUDNN
    if (cudnn_kernels) {
      cudnn_backward(b, out.get());
      return;
    }
#endif
    RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));
    RFA_TEST_CALL(rfa_cuda_flash_backward(&b, nullptr));
  }
  DeviceArray q, out, dout, acc, dq, k, v, dk, dv, lse, delta;
  std::size_t lse_rows;
  bool cudnn_kernels;
  rfa_cuda_forward_params f;
  rfa_cuda_delta_params dp;
  rfa_cuda_backward_params b;
};

// The K/V heads a chunk of the KV all-gather holds on a device: --kv-heads-per-chunk, else the
// engine's rule (engine/allgather_chunk_rule.hpp) for this benchmark's shape (equal query and
// K/V heads, one head dim, 16-bit elements).
int allgather_chunk(const Options& o, int P) {
  if (o.chunk > 0) return o.chunk;
  const rfa::engine::AllGatherShape shape{o.batch, o.heads, o.heads, o.seq / P, P, o.dim, o.dim, 2};
  return int(rfa::engine::device_kv_heads_per_chunk(shape));
}

// Every rank's calls of `strategy` at P ranks, one after another: `calls` holds each rank's
// attention, run `repeat` times (the all-gather's chunks, every one the same work).
struct StrategyCalls {
  std::vector<std::unique_ptr<Attention>> calls;
  int repeat = 1;
};

StrategyCalls strategy_calls(const Options& o, int P) {
  StrategyCalls s;
  if (o.strategy == "ulysses") {  // the whole sequence, H/P heads, on every rank alike
    s.calls.push_back(std::make_unique<Attention>(o, o.seq, o.seq, o.heads / P, rfa_cuda_position_map{}));
    s.repeat = P;
  } else {  // allgather: each rank's zigzag rows against every key, a chunk of heads at a time
    const int chunk = allgather_chunk(o, P);
    for (int r = 0; r < P; ++r)
      s.calls.push_back(std::make_unique<Attention>(o, o.seq / P, o.seq, chunk, zigzag(r, P, o.seq)));
    s.repeat = o.heads / chunk;
  }
  return s;
}

}  // namespace

/// --help's text.
const char* const kUsage =
    R"(rfa_cuda_ring_step_bench [--batch 1] [--heads 16] [--seq 32768] [--dim 128] [--ranks 2,4,8]
       [--dtype bf16|fp16] [--kernels rfa|rfa-sm90|cudnn] [--warmup 3] [--iters 10]
       [--strategy ring|ulysses|allgather] [--kv-heads-per-chunk N] [--json FILE]
The ring's overhead on one GPU: every kernel the P ranks of a zigzag causal ring launch, run one
after another, against one attention over the whole sequence (efficiency 1.0: no overhead).
perf/cuda/ring_step_bench.cu's header says what each option does. Exit 77 without a GPU.
)";

int main(int argc, char** argv) {
  rfa::perf::exit_on_help(argc, argv, kUsage);
  const Options o = rfa::perf::options_or_exit("rfa_cuda_ring_step_bench", [&] { return parse_options(argc, argv); });
  if (!cuda_device_present()) {
    std::printf("no CUDA device: nothing to measure\n");
    return 77;
  }
  cudaDeviceProp prop{};
  RFA_TEST_CUDA(cudaGetDeviceProperties(&prop, 0));
  rfa_cuda_path chosen = RFA_CUDA_PATH_SM80;
  if (rfa_cuda_resolve_path(o.path, &chosen) != RFA_CUDA_SUCCESS) {
    std::fprintf(stderr, "--kernels %s: %s\n", o.kernels, rfa_cuda_last_error_message());
    return 2;
  }
#if RFA_RING_STEP_CUDNN
  Cudnn cudnn_state;
  if (o.cudnn) {
    RFA_TEST_CALL(rfa_cudnn_create(&cudnn_state.ctx));
    cudnn = &cudnn_state;
  }
#endif
  std::printf("%s: zigzag causal %s on one GPU, B=%d H=%d S=%d d=%d %s, %s kernels, median of %d\n", prop.name,
              o.strategy.c_str(), o.batch, o.heads, o.seq, o.dim, o.dtype == RFA_CUDA_FP16 ? "fp16" : "bf16", o.kernels,
              o.iters);

  // The single attention over the whole sequence, as a training step runs it (and as every
  // strategy's calls run: Attention).
  Attention whole(o, o.seq, o.seq, o.heads, rfa_cuda_position_map{});
  const std::vector<double> single_fwd_ms = samples_ms(o, [&] { whole.forward(); });
  const double single_fwd = median_of(single_fwd_ms);
  const std::vector<double> single_bwd_ms = samples_ms(o, [&] { whole.backward(); });
  const double single_bwd = median_of(single_bwd_ms);
  // Over the scores the causal mask leaves visible (attention_work.hpp), backward 2.5x that.
  const double fwd_flops =
      rfa::perf::visible_flops(o.batch, o.heads, o.dim, rfa::perf::MaskShape{o.seq, true, 0, {}, {}}, false);
  std::vector<rfa_cuda_bench::Measurement> measured;
  auto add = [&](const std::string& name, const std::vector<double>& ms, double flops, const std::string& pass, int P,
                 double efficiency) {
    rfa_cuda_bench::Measurement m;
    m.name = name;
    m.ms = ms;
    m.flops = flops;
    m.labels = {{"pass", pass},         {"mask", "causal"},
                {"layout", "zigzag"},   {"ranks_on_one_gpu", std::to_string(P)},
                {"kernels", o.kernels}, {"strategy", o.strategy}};
    if (efficiency > 0) m.counters = {{"efficiency", efficiency}};
    measured.push_back(m);
  };
  const std::string prefix = std::string(o.cudnn                        ? "cuda_ring_step_cudnn"
                                         : o.path == RFA_CUDA_PATH_SM90 ? "cuda_ring_step_sm90"
                                                                        : "cuda_ring_step") +
                             (o.strategy == "ring" ? "" : "/" + o.strategy);
  add(prefix + "/single/fwd", single_fwd_ms, fwd_flops, "forward", 1, 0);
  add(prefix + "/single/bwd", single_bwd_ms, 2.5 * fwd_flops, "backward", 1, 0);

  std::printf("single causal attention: forward %.3f ms, backward %.3f ms\n", single_fwd, single_bwd);
  if (o.strategy != "ring") {
    std::printf("%s, every rank's attention calls one after another:\n%4s %6s | %12s %6s | %12s %6s\n",
                o.strategy.c_str(), "P", "calls", "forward ms", "eff", "backward ms", "eff");
    for (int P : o.ranks) {
      StrategyCalls calls = strategy_calls(o, P);
      auto run = [&](bool backward) {
        for (auto& a : calls.calls)
          for (int i = 0; i < calls.repeat; ++i) backward ? a->backward() : a->forward();
      };
      const std::vector<double> fwd_ms = samples_ms(o, [&] { run(false); });
      const std::vector<double> bwd_ms = samples_ms(o, [&] { run(true); });
      const double fwd = median_of(fwd_ms), bwd = median_of(bwd_ms);
      const std::string at = prefix + "/P" + std::to_string(P);
      add(at + "/fwd", fwd_ms, fwd_flops, "forward", P, single_fwd / fwd);
      add(at + "/bwd", bwd_ms, 2.5 * fwd_flops, "backward", P, single_bwd / bwd);
      std::printf("%4d %6d | %12.3f %6.3f | %12.3f %6.3f\n", P, int(calls.calls.size()) * calls.repeat, fwd,
                  single_fwd / fwd, bwd, single_bwd / bwd);
    }
    std::printf(
        "eff = single attention ms / sum over ranks of their attention calls (1.0: the strategy's compute "
        "costs no more than one attention); calls: per pass, over every rank\n");
  }
  if (o.strategy == "ring")
    std::printf("%4s | %12s %6s | %12s %6s | %12s %6s | %12s %6s\n", "P", "fwd fused ms", "eff", "fwd sep. ms", "eff",
                "backward ms", "eff", "bwd direct", "eff");
  for (int P : o.strategy == "ring" ? o.ranks : std::vector<int>{}) {
    Buffers b(o, o.seq / P);
    const std::vector<double> fused_ms = samples_ms(o, [&] { ring_forward(o, P, b, true); });
    // The separate merge is rfa's kernels' variant; cuDNN's path always merges one way.
    const std::vector<double> separate_ms = samples_ms(o, [&] { ring_forward(o, P, b, o.cudnn); });
    const std::vector<double> backward_ms = samples_ms(o, [&] { ring_backward(o, P, b, true); });
    const std::vector<double> direct_ms = samples_ms(o, [&] { ring_backward(o, P, b, false); });
    const double fused = median_of(fused_ms), separate = median_of(separate_ms), backward = median_of(backward_ms),
                 direct = median_of(direct_ms);
    const std::string at = prefix + "/P" + std::to_string(P);
    add(at + "/fwd_fused", fused_ms, fwd_flops, "forward", P, single_fwd / fused);
    add(at + "/fwd_separate", separate_ms, fwd_flops, "forward", P, single_fwd / separate);
    add(at + "/bwd", backward_ms, 2.5 * fwd_flops, "backward", P, single_bwd / backward);
    add(at + "/bwd_direct", direct_ms, 2.5 * fwd_flops, "backward", P, single_bwd / direct);
    std::printf("%4d | %12.3f %6.3f | %12.3f %6.3f | %12.3f %6.3f | %12.3f %6.3f\n", P, fused, single_fwd / fused,
                separate, single_fwd / separate, backward, single_bwd / backward, direct, single_bwd / direct);
  }
  if (o.strategy == "ring")
    std::printf(
        "eff = single attention ms / sum over ranks of their per-step kernels (1.0: no ring overhead); bwd "
        "direct: every step's dK/dV added into one buffer (the engine's zeroed contributions and additions of the "
        "arriving partials left out)\n");
  if (!o.json.empty()) {
    const std::string dtype = o.dtype == RFA_CUDA_FP16 ? "fp16" : "bf16";
    const std::string shape = "B=" + std::to_string(o.batch) + " S=" + std::to_string(o.seq) +
                              " H=" + std::to_string(o.heads) + "/" + std::to_string(o.heads) +
                              " d=" + std::to_string(o.dim) + " causal";
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    try {
      rfa::perf::write_results_json(o.json,
                                    rfa_cuda_bench::gpu_context("rfa_cuda_ring_step_bench", prop.name, runtime, driver,
                                                                "cuda_ring_step", dtype, shape),
                                    rfa_cuda_bench::to_cases(measured, "cuda_ring_step", dtype, shape));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rfa_cuda_ring_step_bench: %s\n", e.what());
      return 1;
    }
    std::printf("wrote %s (perf/'s result format)\n", o.json.c_str());
  }
  return 0;
}
