// SPDX-License-Identifier: BSD-3-Clause
// Correctness of the rfa_cuda kernels against the float64 reference (tests/reference):
// fresh random inputs, outputs poisoned with NaN before every call, odd lengths, causal and
// not, GQA, both dtypes and every head dim (32, 64, 128, 192, 256, and MLA's 192 / 128),
// segment position maps, sliding windows and packed documents, soft-capped scores, masks given as ranges, fp32
// accumulate modes, the delta, merge and conversion kernels (also at both of their vector widths:
// rowwise_checks.cu). Every forward runs on each path this build and
// device have (sm80, in both its layouts of query rows over warps where the value head dim takes
// them; sm90 on a Hopper GPU when the build has it; the cases sm90 does not take check that it
// refuses them by name). Argument checks run first and need no GPU; without a
// device the program then prints "no CUDA device: skipping" and exits 77 (CTest: skipped).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "accuracy_support.cuh"
#include "reference_attention.hpp"
#include "rfa_cuda/flash.h"
#include "rowwise_checks.hpp"
#include "sm80_layout_settings.hpp"
#include "test_support.cuh"

using namespace rfa_cuda_test;
namespace ref = rfa::reference;

namespace {

// The kernel paths to test: sm80 always, sm90 where it runs (set in main).
std::vector<rfa_cuda_path> kernel_paths = {RFA_CUDA_PATH_SM80};

std::string path_tag(rfa_cuda_path path) {
  return path == RFA_CUDA_PATH_SM80 ? "" : std::string(", ") + rfa_cuda_path_name(path);
}

// Whether the Hopper path takes a case's head dims: one, 64 or 128 (the sm80 path takes every
// case here).
bool path_takes_head_dim(const Case& c, rfa_cuda_path path) {
  return path != RFA_CUDA_PATH_SM90 || ((c.head_dim == 64 || c.head_dim == 128) && c.value_dim == 0);
}

// The sm80 forward's layouts, chosen by RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP: 16 or 32 query rows a
// warp (default: 32 on compute capability 9.x and later where both head dims are at most 128,
// else 16; 32 takes value head dims up to 128). Every forward on the sm80 path runs in each
// layout the case's head dims take.
constexpr const char* kRowsPerWarp = "RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP";

// A forward's kernels: a path, and on sm80 the query rows a warp (0: the default layout, the
// variable unset).
struct ForwardKernels {
  rfa_cuda_path path;
  int rows_per_warp;
};

// The sm80 backward's key tiles, chosen by RFA_CUDA_SM80_BACKWARD_KEY_TILE: 64 or 128 keys a CTA
// (default: 128 up to 128 columns of Q/K and V together, else 64; 128 takes up to 256). Every
// backward on the sm80 path, the deterministic one too, runs in each tile the case's head dims
// take.
constexpr const char* kBackwardKeyTile = "RFA_CUDA_SM80_BACKWARD_KEY_TILE";

// A backward's kernels: a path, and on sm80 the keys a CTA (0: the default tile).
struct BackwardKernels {
  rfa_cuda_path path;
  int key_tile;
};

// Sets an environment variable for its lifetime (nullptr: unsets it), and unsets it after.
class VariableSetting {
 public:
  VariableSetting(const char* name, const char* value) : name_(name) {
    if (value != nullptr)
      setenv(name_, value, 1);
    else
      unsetenv(name_);
  }
  ~VariableSetting() { unsetenv(name_); }
  VariableSetting(const VariableSetting&) = delete;
  VariableSetting& operator=(const VariableSetting&) = delete;

 private:
  const char* name_;
};

// The forward's layout variable as a value or as `kernels` need it.
class RowsPerWarpSetting : public VariableSetting {
 public:
  explicit RowsPerWarpSetting(const char* value) : VariableSetting(kRowsPerWarp, value) {}
  explicit RowsPerWarpSetting(const ForwardKernels& kernels)
      : RowsPerWarpSetting(kernels.rows_per_warp == 0    ? nullptr
                           : kernels.rows_per_warp == 32 ? "32"
                                                         : "16") {}
};

// The backward's key tile variable as a value or as `kernels` need it.
class KeyTileSetting : public VariableSetting {
 public:
  explicit KeyTileSetting(const char* value) : VariableSetting(kBackwardKeyTile, value) {}
  explicit KeyTileSetting(const BackwardKernels& kernels)
      : KeyTileSetting(kernels.key_tile == 0     ? nullptr
                       : kernels.key_tile == 128 ? "128"
                                                 : "64") {}
};

// The current device's compute capability major version (the forward's default layout depends
// on it).
int device_compute_major() {
  int device = 0, major = 0;
  RFA_TEST_CUDA(cudaGetDevice(&device));
  RFA_TEST_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major;
}

// The forward kernels a case runs on: the other paths first, then the sm80 path in the layout
// beside its default where the head dims take one, then in its default last (whose out and lse
// the backward checks use).
std::vector<ForwardKernels> forward_kernels(const Case& c) {
  std::vector<ForwardKernels> all;
  for (auto path = kernel_paths.rbegin(); path != kernel_paths.rend(); ++path) {
    const int other = rfa_cuda::detail::other_forward_rows_per_warp(c.head_dim, c.dv(), device_compute_major());
    if (*path == RFA_CUDA_PATH_SM80 && other != 0) all.push_back({*path, other});
    all.push_back({*path, 0});
  }
  return all;
}

const char* rows_tag(const ForwardKernels& k) {
  return k.rows_per_warp == 0 ? "" : k.rows_per_warp == 32 ? ", 32 rows a warp" : ", 16 rows a warp";
}

// The sm80 backward's tile other than the default where the case's head dims take it, else 0.
int other_key_tile(const Case& c) { return rfa_cuda::detail::other_backward_key_tile(c.head_dim, c.dv()); }

// Whether this device runs the sm80 backward at `keys` a block at the case's head dims: the
// question a context asks at creation (the tile of 128 at d 128 asks for more shared memory than
// compute capability 8.6 and 8.9 give a block).
bool key_tile_fits(const Case& c, int keys) {
  const KeyTileSetting tile(keys == 128 ? "128" : "64");
  return rfa_cuda_check_head_dims(c.head_dim, c.value_dim) == RFA_CUDA_SUCCESS;
}

// The backward kernels a case runs on: every path, and on sm80 the other key tile (where the
// head dims take one and the device has the shared memory for it) before the default.
std::vector<BackwardKernels> backward_kernels(const Case& c) {
  std::vector<BackwardKernels> all;
  for (rfa_cuda_path path : kernel_paths) {
    const int other = other_key_tile(c);
    if (path == RFA_CUDA_PATH_SM80 && other != 0 && key_tile_fits(c, other)) all.push_back({path, other});
    all.push_back({path, 0});
  }
  return all;
}

std::string key_tile_tag(const BackwardKernels& k) {
  return k.key_tile == 0 ? "" : ", " + std::to_string(k.key_tile) + " keys a block";
}

std::string backward_tag(const BackwardKernels& k) { return path_tag(k.path) + key_tile_tag(k); }

std::string forward_tag(const ForwardKernels& k) { return path_tag(k.path) + rows_tag(k); }

// D = rowsum(dout * out) for a case's shape into `delta` (out and its dtype left to the caller).
rfa_cuda_delta_params delta_params(const Case& c, const DeviceArray& dout, DeviceArray& delta) {
  rfa_cuda_delta_params dp{};
  dp.batch = c.batch;
  dp.seq = c.seq_q;
  dp.heads = c.heads;
  dp.head_dim = c.dv();  // out and dout are value_head_dim wide
  dp.dout = dout.get();
  dp.dout_dtype = c.dtype;
  dp.delta = delta.as_float();
  return dp;
}

// The Hopper path takes one head dim, 64 or 128, and has no soft cap, no ranges and one list of
// documents: such a case is refused there (`status`, the call's, must be
// RFA_CUDA_ERROR_UNSUPPORTED saying so) and runs on sm80 only; rfa_cuda_sm90_takes, which the
// engine asks where to send a block, must say the same of the call's `shape`. True when the path
// was skipped.
bool refused_on_path(const Case& c, const rfa_cuda_attention_shape& shape, rfa_cuda_path path, rfa_cuda_status status) {
  const bool head_dim = !path_takes_head_dim(c, path);
  const bool taken = !head_dim && c.softcap <= 0.f && !c.ranges_on && c.doc_offsets.empty();
  if (path == RFA_CUDA_PATH_SM90 && (rfa_cuda_sm90_takes(&shape) != 0) != taken) {
    std::printf("  FAIL rfa_cuda_sm90_takes says %d where the case is %s by the Hopper path\n",
                rfa_cuda_sm90_takes(&shape), taken ? "taken" : "refused");
    ++failures;
  }
  if (taken || path != RFA_CUDA_PATH_SM90) return false;
  const char* says = head_dim ? (c.value_dim != 0 ? "take one head dim for Q, K and V" : "take head_dim 64 or 128, not")
                     : c.softcap > 0.f ? "do not apply a soft cap"
                     : c.ranges_on     ? "do not take a mask given as ranges"
                                       : "not per-sequence documents";
  const char* what = head_dim          ? (c.value_dim != 0 ? "a value head dim" : "its head dim")
                     : c.softcap > 0.f ? "a soft cap"
                     : c.ranges_on     ? "ranges"
                                       : "per-sequence documents";
  const bool ok = status == RFA_CUDA_ERROR_UNSUPPORTED && std::strstr(rfa_cuda_last_error_message(), says) != nullptr;
  std::printf("  %-4s the Hopper path refuses %s -> %s: %s\n", ok ? "ok" : "FAIL", what, rfa_cuda_status_string(status),
              rfa_cuda_last_error_message());
  if (!ok) ++failures;
  return true;
}

// `c` on rank 0's queries and rank 2's keys of a zigzag layout over P = 3 (chunks of 40), under a
// window of 37 and documents crossing the chunks: the new head dims' case of every mask at once.
Case zigzag_window_documents(Case c) {
  c.q_map = two_segments(0, 40, 200, 40);
  c.k_map = two_segments(80, 40, 120, 40);
  c.window = 37;
  c.docs = {0, 30, 110, 210, 240};
  return c;
}

// Every scaled score of `c` far past a soft cap of 1 (Case::past_cap): q is 9 sqrt(d) in its
// first element and 0 elsewhere (the scaled score is 9 k_0), k's first element in [1, 14/9].
void place_scores_past_cap(const Case& c, std::vector<double>& q, std::vector<double>& k) {
  for (std::size_t i = 0; i < q.size(); ++i)
    q[i] = i % std::size_t(c.head_dim) == 0 ? round_to(c.dtype, 9.0 * std::sqrt(double(c.head_dim))) : 0.0;
  std::uniform_real_distribution<double> first(1.0, 14.0 / 9.0);
  for (std::size_t i = 0; i < k.size(); i += std::size_t(c.head_dim)) k[i] = round_to(c.dtype, first(rng));
}

// Forward (both output modes) and backward (both gradient modes) on every path, delta, and the
// deterministic backward of one case.
void run_case(const Case& c) {
  std::printf("%s: %s d=%d dv=%d b=%d sq=%d sk=%d h=%d hkv=%d %s\n", c.name.c_str(),
              c.dtype == RFA_CUDA_BF16 ? "bf16" : "fp16", c.head_dim, c.dv(), c.batch, c.seq_q, c.seq_k, c.heads,
              c.kv_heads, c.causal ? "causal" : "full");
  const ref::Problem p = problem_of(c);
  const ref::Problem low = low_precision(p, c.dtype);
  const DeviceBounds docs(c.docs), doc_offsets(c.doc_offsets);
  const DeviceRangeIndex ranges(c);
  std::vector<double> q = random_values(c.dtype, p.q_size()), k = random_values(c.dtype, p.kv_size());
  const std::vector<double> v = random_values(c.dtype, p.v_size()), dout = random_values(c.dtype, p.out_size());
  if (c.past_cap) place_scores_past_cap(c, q, k);
  // dQ and dK: against their own size where the case makes them tiny (Case::past_cap).
  auto expect_gradient = [&](const std::string& what, const std::vector<double>& got, const std::vector<double>& exact,
                             const std::vector<double>& lowp) { expect_close(what, got, exact, lowp, c.past_cap); };
  std::vector<double> ref_out, ref_lse, ref_dq, ref_dk, ref_dv;
  ref::forward(p, q, k, v, ref_out, ref_lse);
  ref::backward(p, q, k, v, dout, ref_dq, ref_dk, ref_dv);
  std::vector<double> low_out, low_lse, low_dq, low_dk, low_dv;
  ref::forward(low, q, k, v, low_out, low_lse);
  ref::backward(low, q, k, v, dout, low_dq, low_dk, low_dv);

  DeviceArray dq_in(c.dtype, q.size()), dk_in(c.dtype, k.size()), dv_in(c.dtype, v.size()), ddout(c.dtype, dout.size());
  dq_in.upload(q);
  dk_in.upload(k);
  dv_in.upload(v);
  ddout.upload(dout);
  DeviceArray out16(c.dtype, dout.size()), out32(RFA_CUDA_FP32, dout.size()), lse(RFA_CUDA_FP32, p.lse_size()),
      delta(RFA_CUDA_FP32, p.lse_size());

  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape = shape_of(c, docs.get(), doc_offsets.get());
  ranges.apply(f.shape);
  f.q = dq_in.get();
  f.k = dk_in.get();
  f.v = dv_in.get();
  f.lse = lse.as_float();
  // sm80 at its default layout last: its fp32 out and lse feed the delta and the backward below.
  for (const ForwardKernels& kernels : forward_kernels(c)) {
    const RowsPerWarpSetting rows(kernels);
    f.path = kernels.path;
    f.out = out32.get();
    f.out_dtype = RFA_CUDA_FP32;
    if (refused_on_path(c, f.shape, f.path, rfa_cuda_flash_forward(&f, nullptr))) continue;
    for (rfa_cuda_dtype out_type : {c.dtype, RFA_CUDA_FP32}) {
      DeviceArray& out = out_type == RFA_CUDA_FP32 ? out32 : out16;
      out.poison();
      lse.poison();
      f.out = out.get();
      f.out_dtype = out_type;
      RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr));
      RFA_TEST_CUDA(cudaDeviceSynchronize());
      const std::string tag = (out_type == RFA_CUDA_FP32 ? "fp32" : "dtype") + forward_tag(kernels);
      expect_close("forward out (" + tag + ")", out.download(), ref_out, low_out);
      expect_within("forward lse (" + tag + ")", lse.download(), ref_lse, 2e-3);
    }
  }

  // D = rowsum(dout * out): from the fp32 out (used below) and from the dtype out.
  const std::vector<double> ref_delta = rowsum_product(p, dout, ref_out), low_delta = rowsum_product(p, dout, low_out);
  rfa_cuda_delta_params dp = delta_params(c, ddout, delta);
  for (rfa_cuda_dtype out_type : {c.dtype, RFA_CUDA_FP32}) {
    dp.out = out_type == RFA_CUDA_FP32 ? out32.get() : out16.get();
    dp.out_dtype = out_type;
    delta.poison();
    RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));
    RFA_TEST_CUDA(cudaDeviceSynchronize());
    expect_close(std::string("delta (out ") + (out_type == RFA_CUDA_FP32 ? "fp32)" : "dtype)"), delta.download(),
                 ref_delta, low_delta);
  }
  // Leave delta computed from the fp32 output for the backward.
  dp.out = out32.get();
  dp.out_dtype = RFA_CUDA_FP32;
  RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));

  rfa_cuda_backward_params bp;
  rfa_cuda_backward_params_init(&bp);
  bp.shape = shape_of(c, docs.get(), doc_offsets.get());
  ranges.apply(bp.shape);
  bp.q = dq_in.get();
  bp.k = dk_in.get();
  bp.v = dv_in.get();
  bp.dout = ddout.get();
  bp.lse = lse.as_float();  // the fp32-output forward ran last
  bp.delta = delta.as_float();

  for (const BackwardKernels& kernels : backward_kernels(c)) {
    const rfa_cuda_path path = kernels.path;
    const KeyTileSetting key_tile(kernels);
    const std::string tag = backward_tag(kernels);
    bp.path = path;
    // Accumulate mode: gradients are added to what the buffers hold; with dQ alone accumulated,
    // dK and dV are written over (poisoned first: a key row left unwritten stays NaN).
    bool refused = false;
    for (rfa_cuda_grad_mode mode : {RFA_CUDA_GRAD_ACCUMULATE_FP32, RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32}) {
      const bool keys_written_over = mode == RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32;
      const std::string how = keys_written_over ? " (accumulate dq fp32, dk dv written over" : " (accumulate fp32";
      // From zero where the gradients are tiny (Case::past_cap): sums with values near 1 would
      // round them away.
      auto start = [&](std::size_t n) {
        return c.past_cap ? std::vector<double>(n, 0.0) : random_values(RFA_CUDA_FP32, n);
      };
      const std::vector<double> dq0 = start(q.size()), dk0 = start(k.size()), dv0 = start(v.size());
      DeviceArray dq(RFA_CUDA_FP32, q.size()), dk(RFA_CUDA_FP32, k.size()), dv(RFA_CUDA_FP32, v.size());
      dq.upload(dq0);
      if (keys_written_over) {
        dk.poison();
        dv.poison();
      } else {
        dk.upload(dk0);
        dv.upload(dv0);
      }
      bp.grad_mode = mode;
      bp.dq = dq.get();
      bp.dk = dk.get();
      bp.dv = dv.get();
      // One call: accumulate mode adds to dq0, dk0, dv0, so a second would add the gradients twice.
      const rfa_cuda_status status = rfa_cuda_flash_backward(&bp, nullptr);
      if (refused_on_path(c, bp.shape, path, status)) {
        refused = true;
        break;
      }
      RFA_TEST_CALL(status);
      RFA_TEST_CUDA(cudaDeviceSynchronize());
      auto minus = [](std::vector<double> a, const std::vector<double>& b) {
        for (std::size_t i = 0; i < a.size(); ++i) a[i] -= b[i];
        return a;
      };
      expect_gradient("backward dq" + how + tag + ")", minus(dq.download(), dq0), ref_dq, low_dq);
      expect_gradient("backward dk" + how + tag + ")", keys_written_over ? dk.download() : minus(dk.download(), dk0),
                      ref_dk, low_dk);
      expect_close("backward dv" + how + tag + ")", keys_written_over ? dv.download() : minus(dv.download(), dv0),
                   ref_dv, low_dv);
    }
    if (refused) continue;
    {  // Store mode: gradients in the input dtype, overwritten.
      DeviceArray dq(c.dtype, q.size()), dk(c.dtype, k.size()), dv(c.dtype, v.size());
      dq.poison();
      dk.poison();
      dv.poison();
      bp.grad_mode = RFA_CUDA_GRAD_STORE;
      bp.dq = dq.get();
      bp.dk = dk.get();
      bp.dv = dv.get();
      DeviceArray workspace(RFA_CUDA_FP32, rfa_cuda_backward_workspace_size(&bp) / 4);
      workspace.poison();
      bp.workspace = workspace.get();
      RFA_TEST_CALL(rfa_cuda_flash_backward(&bp, nullptr));
      RFA_TEST_CUDA(cudaDeviceSynchronize());
      expect_gradient("backward dq (store dtype" + tag + ")", dq.download(), ref_dq, low_dq);
      expect_gradient("backward dk (store dtype" + tag + ")", dk.download(), ref_dk, low_dk);
      expect_close("backward dv (store dtype" + tag + ")", dv.download(), ref_dv, low_dv);
    }
  }
  bp.path = RFA_CUDA_PATH_AUTO;
  // Deterministic mode (the sm80 kernels whatever the path), in each key tile, both gradient
  // modes: right, and the same bits on a second run.
  for (const BackwardKernels& kernels : backward_kernels(c)) {
    if (kernels.path != RFA_CUDA_PATH_SM80) continue;
    const KeyTileSetting key_tile(kernels);
    for (rfa_cuda_grad_mode mode :
         {RFA_CUDA_GRAD_ACCUMULATE_FP32, RFA_CUDA_GRAD_STORE, RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32}) {
      const bool store = mode == RFA_CUDA_GRAD_STORE, keys_written_over = mode == RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32;
      const rfa_cuda_dtype grad_type = store ? c.dtype : RFA_CUDA_FP32;
      const std::string tag = std::string(store               ? " (deterministic, store dtype"
                                          : keys_written_over ? " (deterministic, dk dv written over"
                                                              : " (deterministic, accumulate fp32") +
                              key_tile_tag(kernels) + ")";
      DeviceArray dq(grad_type, q.size()), dk(grad_type, k.size()), dv(grad_type, v.size());
      bp.grad_mode = mode;
      bp.deterministic = 1;
      bp.workspace = nullptr;  // not needed in this mode
      bp.dq = dq.get();
      bp.dk = dk.get();
      bp.dv = dv.get();
      std::vector<double> first[3];
      for (int run = 0; run < 2; ++run) {
        DeviceArray* grads[3] = {&dq, &dk, &dv};
        for (DeviceArray* g : grads) {
          if (store || (keys_written_over && g != &dq))
            g->poison();
          else
            g->upload(std::vector<double>(g->bytes() / 4, 0.0));
        }
        // The second run asks for the last path tested (sm90 on a Hopper GPU, on every case, those
        // the Hopper path does not take among them): the mode runs the sm80 kernels whatever the
        // path, so it must give the same bits.
        bp.path = run == 0 ? RFA_CUDA_PATH_AUTO : kernel_paths.back();
        RFA_TEST_CALL(rfa_cuda_flash_backward(&bp, nullptr));
        RFA_TEST_CUDA(cudaDeviceSynchronize());
        if (run == 0) {
          for (int i = 0; i < 3; ++i) first[i] = grads[i]->download();
          expect_gradient("backward dq" + tag, first[0], ref_dq, low_dq);
          expect_gradient("backward dk" + tag, first[1], ref_dk, low_dk);
          expect_close("backward dv" + tag, first[2], ref_dv, low_dv);
        } else {
          const char* names[3] = {"dq", "dk", "dv"};
          for (int i = 0; i < 3; ++i) {
            const bool same = grads[i]->download() == first[i];
            std::printf("  %-4s %-40s\n", same ? "ok" : "FAIL",
                        (std::string(names[i]) + " bitwise equal on rerun" + path_tag(bp.path) + tag).c_str());
            if (!same) ++failures;
          }
        }
      }
    }
  }
  bp.deterministic = 0;
}

// Random inputs of a case and its forward against float64 and against the inputs' precision.
struct ForwardReference {
  ref::Problem p;
  std::vector<double> q, k, v, ref_out, ref_lse, low_out, low_lse;
  explicit ForwardReference(const Case& c)
      : p(problem_of(c)),
        q(random_values(c.dtype, p.q_size())),
        k(random_values(c.dtype, p.kv_size())),
        v(random_values(c.dtype, p.v_size())) {
    ref::forward(p, q, k, v, ref_out, ref_lse);
    ref::forward(low_precision(p, c.dtype), q, k, v, low_out, low_lse);
  }
};

// Ring-style forward: the keys split in two blocks with their own position maps, each block's
// fp32 partial merged into a running out/lse that starts as NaN / -inf: by the separate merge
// kernel, or (fused) in the forward's epilogue.
void run_merge_case(const Case& c, int split, bool fused, const ForwardKernels& kernels) {
  const rfa_cuda_path path = kernels.path;
  const RowsPerWarpSetting rows_per_warp(kernels);
  std::printf("%s: %s merge of two key blocks (%d + %d rows), path %s%s\n", c.name.c_str(),
              fused ? "fused" : "separate", split, c.seq_k - split, rfa_cuda_path_name(path), rows_tag(kernels));
  const ForwardReference r(c);
  const ref::Problem& p = r.p;
  const std::vector<double>&q = r.q, &k = r.k, &v = r.v;
  const std::vector<double>&ref_out = r.ref_out, &ref_lse = r.ref_lse, &low_out = r.low_out;

  DeviceArray dq(c.dtype, q.size()), dk(c.dtype, k.size()), dv(c.dtype, v.size());
  dq.upload(q);
  dk.upload(k);
  dv.upload(v);
  DeviceArray out(RFA_CUDA_FP32, p.out_size()), lse(RFA_CUDA_FP32, p.lse_size()),
      block_out(RFA_CUDA_FP32, p.out_size()), block_lse(RFA_CUDA_FP32, p.lse_size());
  out.poison();
  lse.upload(std::vector<double>(p.lse_size(), -INFINITY));

  const std::vector<std::int64_t> all_k = positions(c.k_map);
  const std::size_t k_row_bytes = static_cast<std::size_t>(c.kv_heads) * c.head_dim * 2,
                    v_row_bytes = static_cast<std::size_t>(c.kv_heads) * c.dv() * 2;
  // Fused: the later block first, so under a causal mask the early rows see nothing in the
  // first launch and must take the second block's values over a poisoned out.
  for (int i = 0; i < 2; ++i) {
    const int part = fused ? 1 - i : i;
    const int first = part == 0 ? 0 : split, rows = part == 0 ? split : c.seq_k - split;
    Case block = c;
    block.seq_k = rows;
    // The block's global key positions: a piece of the full map, itself affine when the
    // full map is (each test keeps both pieces inside one segment).
    const std::int64_t start = all_k.empty() ? first : all_k[first];
    const std::int64_t stride = rows > 1 ? (all_k.empty() ? 1 : all_k[first + 1] - all_k[first]) : 1;
    block.k_map = one_segment(start, stride, rows);
    rfa_cuda_forward_params f;
    rfa_cuda_forward_params_init(&f);
    f.shape = shape_of(block);
    // A key block is rows [first, first + rows) of every batch entry of k and v: its first row's
    // address with the whole tensors' strides (without strides the kernel would take a batch
    // entry to be `rows` rows long).
    f.q = dq.get();
    f.k = static_cast<char*>(dk.get()) + first * k_row_bytes;
    f.v = static_cast<char*>(dv.get()) + first * v_row_bytes;
    const std::int64_t k_row = std::int64_t(c.kv_heads) * c.head_dim, v_row = std::int64_t(c.kv_heads) * c.dv();
    f.k_strides = {c.seq_k * k_row, k_row, c.head_dim};
    f.v_strides = {c.seq_k * v_row, v_row, c.dv()};
    f.out_dtype = RFA_CUDA_FP32;
    f.path = path;
    if (fused) {
      f.out = out.get();
      f.lse = lse.as_float();
      f.merge = 1;
      RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr));
      continue;
    }
    f.out = block_out.get();
    f.lse = block_lse.as_float();
    block_out.poison();
    block_lse.poison();
    RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr));
    rfa_cuda_merge_params m{};
    m.batch = c.batch;
    m.seq = c.seq_q;
    m.heads = c.heads;
    m.head_dim = c.dv();
    m.out = out.as_float();
    m.lse = lse.as_float();
    m.block_out = block_out.as_float();
    m.block_lse = block_lse.as_float();
    RFA_TEST_CALL(rfa_cuda_merge_partial(&m, nullptr));
  }
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  const std::string tag = std::string(fused ? "fused merged" : "merged") + forward_tag(kernels);
  expect_close(tag + " out", out.download(), ref_out, low_out);
  expect_within(tag + " lse", lse.download(), ref_lse, 2e-3);
}

// Runs `f` on `kernels` into `out` and `lse`, poisoned first, and compares their first values
// (as many as the references hold: the buffers may be larger) with the float64 reference.
void expect_forward(const std::string& what, rfa_cuda_forward_params f, const ForwardKernels& kernels, DeviceArray& out,
                    DeviceArray& lse, const std::vector<double>& ref_out, const std::vector<double>& ref_lse,
                    const std::vector<double>& low_out) {
  const RowsPerWarpSetting rows(kernels);
  f.path = kernels.path;
  out.poison();
  lse.poison();
  RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr));
  RFA_TEST_CUDA(cudaDeviceSynchronize());
  std::vector<double> got_out = out.download(), got_lse = lse.download();
  got_out.resize(ref_out.size());
  got_lse.resize(ref_lse.size());
  expect_close(what + " out" + forward_tag(kernels), got_out, ref_out, low_out);
  expect_within(what + " lse" + forward_tag(kernels), got_lse, ref_lse, 2e-3);
}

// Strided inputs, every path, forward and backward: K and V interleaved in one packed
// [b][s][2 kv_heads][d] buffer (seq stride 2 kv_heads d, V starting kv_heads d elements in), Q
// with a padded batch stride.
void run_strided_case(const Case& c) {
  std::printf("%s: packed K/V, padded Q batch stride\n", c.name.c_str());
  const ForwardReference r(c);
  const ref::Problem& p = r.p;
  const std::vector<double>&q = r.q, &k = r.k, &v = r.v;
  const std::vector<double>&ref_out = r.ref_out, &ref_lse = r.ref_lse, &low_out = r.low_out;
  // A K/V row holds every K/V head's key (head_dim wide) and then every one's value (the value
  // head dim wide), as a fused K/V projection leaves them.
  const std::int64_t d = c.head_dim, dv = c.dv(), row = static_cast<std::int64_t>(c.heads) * d, pad = 8;
  const std::int64_t q_batch = c.seq_q * row + pad, k_width = c.kv_heads * d, v_width = c.kv_heads * dv,
                     kv_row = k_width + v_width;
  std::vector<double> q_padded(static_cast<std::size_t>(c.batch * q_batch), 0.0);
  std::vector<double> kv(static_cast<std::size_t>(c.batch * c.seq_k * kv_row), 0.0);
  for (int b = 0; b < c.batch; ++b) {
    for (std::int64_t i = 0; i < c.seq_q * row; ++i) q_padded[b * q_batch + i] = q[b * c.seq_q * row + i];
    for (std::int64_t t = 0; t < c.seq_k; ++t) {
      const std::int64_t token = b * c.seq_k + t;
      for (std::int64_t i = 0; i < k_width; ++i) kv[token * kv_row + i] = k[token * k_width + i];
      for (std::int64_t i = 0; i < v_width; ++i) kv[token * kv_row + k_width + i] = v[token * v_width + i];
    }
  }
  DeviceArray dq(c.dtype, q_padded.size()), dkv(c.dtype, kv.size()), out(c.dtype, p.out_size()),
      lse(RFA_CUDA_FP32, p.lse_size());
  dq.upload(q_padded);
  dkv.upload(kv);
  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape = shape_of(c);
  f.q = dq.get();
  f.q_strides = {q_batch, row, d};
  f.k = dkv.get();
  f.v = static_cast<char*>(dkv.get()) + k_width * 2;  // 16-bit elements
  f.k_strides = {c.seq_k * kv_row, kv_row, d};
  f.v_strides = {c.seq_k * kv_row, kv_row, dv};
  f.out = out.get();
  f.out_dtype = c.dtype;
  f.lse = lse.as_float();
  for (const ForwardKernels& kernels : forward_kernels(c))
    if (path_takes_head_dim(c, kernels.path))
      expect_forward("strided forward", f, kernels, out, lse, ref_out, ref_lse, low_out);

  // The backward on the same strided inputs (dO contiguous), fp32 gradients accumulated from 0,
  // dQ with Q's padded batch stride (the atomics' addresses off the contiguous layout) and its
  // padding left at 0.
  const std::vector<double> dout = random_values(c.dtype, p.out_size());
  std::vector<double> ref_dq, ref_dk, ref_dv, low_dq, low_dk, low_dv;
  ref::backward(p, q, k, v, dout, ref_dq, ref_dk, ref_dv);
  ref::backward(low_precision(p, c.dtype), q, k, v, dout, low_dq, low_dk, low_dv);
  DeviceArray ddout(c.dtype, dout.size()), out32(RFA_CUDA_FP32, dout.size()), delta(RFA_CUDA_FP32, p.lse_size());
  ddout.upload(dout);
  f.path = RFA_CUDA_PATH_SM80;
  f.out = out32.get();
  f.out_dtype = RFA_CUDA_FP32;
  RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr));
  rfa_cuda_delta_params dp = delta_params(c, ddout, delta);
  dp.out = out32.get();
  dp.out_dtype = RFA_CUDA_FP32;
  RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));
  rfa_cuda_backward_params bp;
  rfa_cuda_backward_params_init(&bp);
  bp.shape = f.shape;
  bp.q = f.q;
  bp.q_strides = f.q_strides;
  bp.k = f.k;
  bp.v = f.v;
  bp.k_strides = f.k_strides;
  bp.v_strides = f.v_strides;
  bp.dout = ddout.get();
  bp.lse = lse.as_float();
  bp.delta = delta.as_float();
  for (const BackwardKernels& kernels : backward_kernels(c)) {
    const rfa_cuda_path path = kernels.path;
    if (!path_takes_head_dim(c, path)) continue;
    const KeyTileSetting key_tile(kernels);
    DeviceArray dq(RFA_CUDA_FP32, q_padded.size()), dk(RFA_CUDA_FP32, k.size()), dv(RFA_CUDA_FP32, v.size());
    for (DeviceArray* g : {&dq, &dk, &dv}) g->upload(std::vector<double>(g->bytes() / 4, 0.0));
    bp.path = path;
    bp.dq = dq.get();
    bp.dq_strides = f.q_strides;
    bp.dk = dk.get();
    bp.dv = dv.get();
    RFA_TEST_CALL(rfa_cuda_flash_backward(&bp, nullptr));
    RFA_TEST_CUDA(cudaDeviceSynchronize());
    const std::vector<double> dq_padded = dq.download();
    std::vector<double> got_dq(q.size());
    bool padding_untouched = true;
    for (int b = 0; b < c.batch; ++b) {
      for (std::int64_t i = 0; i < c.seq_q * row; ++i) got_dq[b * c.seq_q * row + i] = dq_padded[b * q_batch + i];
      for (std::int64_t i = c.seq_q * row; i < q_batch; ++i) padding_untouched &= dq_padded[b * q_batch + i] == 0.0;
    }
    std::printf("  %-4s %-40s\n", padding_untouched ? "ok" : "FAIL",
                ("strided backward dq padding untouched" + backward_tag(kernels)).c_str());
    if (!padding_untouched) ++failures;
    expect_close("strided backward dq" + backward_tag(kernels), got_dq, ref_dq, low_dq);
    expect_close("strided backward dk" + backward_tag(kernels), dk.download(), ref_dk, low_dk);
    expect_close("strided backward dv" + backward_tag(kernels), dv.download(), ref_dv, low_dv);
  }
}

// K and V broadcast over the batch (batch stride 0, as keys shared by every entry would be): with
// the same queries in every entry, each entry's output is the one-entry case's. The sm80 path
// reads any strides; the Hopper path, whose TMA descriptors take no stride of 0, refuses the
// call by name. `one` has batch 1.
void run_broadcast_case(const Case& one, int batch) {
  std::printf("%s: K and V broadcast over %d batch entries\n", one.name.c_str(), batch);
  const ForwardReference r(one);
  auto repeated = [batch](const std::vector<double>& x) {
    std::vector<double> all;
    for (int b = 0; b < batch; ++b) all.insert(all.end(), x.begin(), x.end());
    return all;
  };
  const std::vector<double> q = repeated(r.q), ref_out = repeated(r.ref_out), ref_lse = repeated(r.ref_lse),
                            low_out = repeated(r.low_out);
  DeviceArray dq(one.dtype, q.size()), dk(one.dtype, r.k.size()), dv(one.dtype, r.v.size()),
      out(one.dtype, ref_out.size()), lse(RFA_CUDA_FP32, ref_lse.size());
  dq.upload(q);
  dk.upload(r.k);
  dv.upload(r.v);
  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape = shape_of(one);
  f.shape.batch = batch;
  f.q = dq.get();
  f.k = dk.get();
  f.v = dv.get();
  f.k_strides = {0, std::int64_t(one.kv_heads) * one.head_dim, one.head_dim};
  f.v_strides = {0, std::int64_t(one.kv_heads) * one.dv(), one.dv()};
  f.out = out.get();
  f.out_dtype = one.dtype;
  f.lse = lse.as_float();
  for (const ForwardKernels& kernels : forward_kernels(one)) {
    const rfa_cuda_path path = kernels.path;
    if (!path_takes_head_dim(one, path)) continue;
    if (path != RFA_CUDA_PATH_SM90) {
      expect_forward("broadcast forward", f, kernels, out, lse, ref_out, ref_lse, low_out);
      continue;
    }
    f.path = path;
    const rfa_cuda_status status = rfa_cuda_flash_forward(&f, nullptr);
    const bool ok = status == RFA_CUDA_ERROR_UNSUPPORTED &&
                    std::strstr(rfa_cuda_last_error_message(), "takes no batch stride of 0") != nullptr;
    std::printf("  %-4s the Hopper path refuses a broadcast k -> %s: %s\n", ok ? "ok" : "FAIL",
                rfa_cuda_status_string(status), rfa_cuda_last_error_message());
    if (!ok) ++failures;
  }
  // The first entry alone with the same strides: a zero batch stride over one entry repeats
  // nothing, and every path takes it (the Hopper path's descriptors with a stride of their own).
  f.shape.batch = 1;
  for (const ForwardKernels& kernels : forward_kernels(one))
    if (path_takes_head_dim(one, kernels.path))
      expect_forward("batch stride 0 over one entry,", f, kernels, out, lse, r.ref_out, r.ref_lse, r.low_out);
}

// A call that needs no GPU returned `want` with a message that holds `needle`.
void expect(const char* what, rfa_cuda_status got, rfa_cuda_status want, const char* needle) {
  const bool ok = got == want && std::strstr(rfa_cuda_last_error_message(), needle) != nullptr;
  std::printf("  %-4s %-40s -> %s: %s\n", ok ? "ok" : "FAIL", what, rfa_cuda_status_string(got),
              rfa_cuda_last_error_message());
  if (!ok) ++failures;
}

// A value of a layout variable at head dims (head_dim, value_head_dim), and whether the call
// refuses it there.
struct LayoutValue {
  std::int64_t head_dim, value_head_dim;
  const char* value;  // nullptr: unset
  bool refused;
};

// Each value set in `variable` while `call` runs on `shape` at its head dims: refused with
// RFA_CUDA_ERROR_UNSUPPORTED and a message holding `refusal`, or taken, so that the call's next
// check speaks (its q is NULL).
template <class Call>
void expect_layout_values(const char* variable, const char* refusal, rfa_cuda_attention_shape& shape, Call call,
                          const std::vector<LayoutValue>& values) {
  for (const LayoutValue& l : values) {
    const VariableSetting setting(variable, l.value);
    shape.head_dim = l.head_dim;
    shape.value_head_dim = l.value_head_dim;
    const std::string what = std::string(variable) + "=" + (l.value ? l.value : "(unset)") + ", d " +
                             std::to_string(l.head_dim) + "/" + std::to_string(l.value_head_dim);
    if (l.refused)
      expect(what.c_str(), call(), RFA_CUDA_ERROR_UNSUPPORTED, refusal);
    else
      expect((what + " passes, q NULL").c_str(), call(), RFA_CUDA_ERROR_INVALID_ARGUMENT, "q is NULL");
  }
}

// Checks that need no GPU: bad arguments are refused with a status and a message.
void run_argument_checks() {
  std::printf("argument checks\n");
  // The checks below expect the default layouts, whatever the caller's environment.
  unsetenv(kRowsPerWarp);
  unsetenv(kBackwardKeyTile);
  alignas(16) static unsigned char dummy[64];
  rfa_cuda_forward_params f;
  rfa_cuda_forward_params_init(&f);
  f.shape.batch = f.shape.seq_q = f.shape.seq_k = f.shape.heads = f.shape.kv_heads = 1;
  f.shape.head_dim = 64;
  f.q = f.k = f.v = f.out = dummy;
  f.lse = reinterpret_cast<float*>(dummy);
  rfa_cuda_forward_params bad = f;
  bad.shape.head_dim = 96;
  expect("head_dim 96", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_UNSUPPORTED,
         "head_dim 96 is not supported: use 32, 64, 128, 192 or 256");
  bad.shape.head_dim = 256;  // a head dim the kernels take: the next check speaks
  bad.q = nullptr;
  expect("head_dim 256 passes, q NULL", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "q is NULL");
  bad.shape.head_dim = 192;
  bad.shape.value_head_dim = 64;
  expect("head_dim 192, value_head_dim 64", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_UNSUPPORTED,
         "or head_dim 192 with value_head_dim 128");
  bad.shape.value_head_dim = 128;
  expect("192 / 128 passes, q NULL", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "q is NULL");
  expect("check_head_dims(96, 0)", rfa_cuda_check_head_dims(96, 0), RFA_CUDA_ERROR_UNSUPPORTED,
         "use one head dim of 32, 64, 128, 192 or 256");
  expect("check_head_dims(128, 64)", rfa_cuda_check_head_dims(128, 64), RFA_CUDA_ERROR_UNSUPPORTED,
         "or head_dim 192 with value_head_dim 128");
  bad = f;
  bad.q = nullptr;  // a shape that passes lets the next check speak
  bad.shape.kv_heads = 1;
  bad.shape.heads = 1 << 20;  // MQA: one group of 2^20 query heads
  bad.shape.seq_q = 1 << 16;  // 2^11 tiles of 32 rows: 2^31 (head, tile) pairs, one past INT_MAX
  expect("2^31 (head, query tile) pairs in a group", rfa_cuda_flash_forward(&bad, nullptr),
         RFA_CUDA_ERROR_INVALID_ARGUMENT, "more (head, query tile) pairs than the backward's 32-bit walk");
  bad.shape.seq_q = (1 << 16) - 32;  // 2^31 - 2^20 pairs
  expect("2^31 - 2^20 pairs pass, q NULL", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "q is NULL");
  bad = f;
  bad.shape.heads = 3;
  bad.shape.kv_heads = 2;
  expect("heads % kv_heads != 0", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT, "kv_heads");
  bad = f;
  bad.q = nullptr;
  expect("q NULL", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT, "q is NULL");
  bad = f;
  bad.merge = 1;  // out_dtype bf16: there is no fp32 running partial to merge into
  expect("merge with a bf16 out", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "merge needs out_dtype fp32");
  bad = f;
  bad.shape.q_positions = one_segment(0, 1, 5);
  expect("position map length != seq_q", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "q_positions");
  bad = f;
  bad.shape.softcap = -1.f;
  expect("softcap -1", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT, "softcap -1");
  bad.shape.softcap = INFINITY;
  expect("softcap inf", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT, "softcap inf");
  // softcap / scale held in fp32 with its inverse: 1e30 / 1e-10 overflows, 1e-30 / 1e10 underflows.
  bad.shape.softcap = 1e30f;
  bad.shape.scale = 1e-10f;
  expect("softcap / scale beyond fp32", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_UNSUPPORTED,
         "softcap 1e+30 with scale 1e-10");
  bad.shape.softcap = 1e-30f;
  bad.shape.scale = 1e10f;
  expect("scale / softcap beyond fp32", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_UNSUPPORTED,
         "softcap 1e-30 with scale 1e+10");
  bad.shape.softcap = 1e30f;  // ratios of 1e37 and 1e-37, within fp32's normal range: the next check speaks
  bad.shape.scale = 1e-7f;
  bad.q = nullptr;
  expect("softcap / scale 1e37 passes, q NULL", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "q is NULL");
  bad.shape.softcap = 1e-30f;
  bad.shape.scale = 1e7f;
  expect("softcap / scale 1e-37 passes, q NULL", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "q is NULL");
  bad = f;
  bad.shape.window = -1;
  expect("window -1", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT, "window -1");
  bad = f;
  bad.shape.doc_bound_count = 3;
  expect("doc_bounds NULL with a count", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "doc_bounds: 3 values");
  bad = f;
  bad.shape.doc_bounds = reinterpret_cast<const std::int64_t*>(dummy);
  bad.shape.doc_bound_count = 1;
  expect("doc_bounds of one value", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "documents + 1 boundaries");
  bad = f;
  bad.shape.ranges = 1;
  bad.shape.range_band_count = 2;
  expect("ranges without their index", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "ranges: 2 bands");
  bad.shape.range_band_count = -1;
  expect("ranges of -1 bands", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "ranges: -1 bands");
  bad = f;
  bad.shape.k_positions = one_segment(0, 0, 1);
  expect("segment stride 0", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT, "stride");
  bad = f;
  bad.shape.dtype = RFA_CUDA_FP32;
  bad.out_dtype = RFA_CUDA_FP32;
  expect("fp32 inputs", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_UNSUPPORTED, "dtype");
  bad = f;
  bad.q_strides = {0, 12, 0};
  expect("stride not a multiple of 8", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "multiples of 8");
  bad = f;
  bad.shape.batch = 2;
  bad.out_strides = {0, 64, 64};
  expect("out repeated over the batch", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "out has batch stride 0");
  bad = f;
  bad.shape.seq_q = 2;
  bad.out_strides = {128, 0, 64};
  expect("out repeated over the sequence", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "out has seq stride 0");
  bad = f;
  bad.out_strides = {0, 0, 64};  // batch 1, seq 1: a zero stride over one index repeats nothing
  bad.lse = nullptr;
  expect("out strides 0 over one index pass", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "lse is NULL");
  bad = f;
  bad.out_dtype = RFA_CUDA_FP16;
  expect("out dtype fp16 with bf16 input", rfa_cuda_flash_forward(&bad, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "out_dtype");
  {  // The sm80 forward's layout from the environment, checked before any device is asked for.
    bad = f;
    bad.q = nullptr;  // a value the variable takes lets the next check speak
    for (const char* value : {"17", "32x", " 32", "0"}) {
      const RowsPerWarpSetting rows(value);
      expect((std::string(kRowsPerWarp) + "=\"" + value + "\"").c_str(), rfa_cuda_flash_forward(&bad, nullptr),
             RFA_CUDA_ERROR_INVALID_ARGUMENT, "RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP is 16 or 32");
    }
    expect_layout_values(kRowsPerWarp, "=32 takes value head dims up to 128, not", bad.shape,
                         [&] { return rfa_cuda_flash_forward(&bad, nullptr); },
                         {{256, 0, "32", true},
                          {192, 0, "32", true},
                          {192, 128, "32", false},
                          {128, 0, "32", false},
                          {32, 0, "32", false},
                          {256, 0, "16", false},
                          {256, 0, "", false},
                          {192, 0, nullptr, false}});
    // The question a context asks at creation, on every rank, says the same.
    {
      const RowsPerWarpSetting rows("32");
      expect("check_head_dims(256, 0) at 32 rows a warp", rfa_cuda_check_head_dims(256, 0), RFA_CUDA_ERROR_UNSUPPORTED,
             "=32 takes value head dims up to 128, not 256");
      expect("check_head_dims(192, 0) at 32 rows a warp", rfa_cuda_check_head_dims(192, 0), RFA_CUDA_ERROR_UNSUPPORTED,
             "=32 takes value head dims up to 128, not 192");
    }
    {
      const RowsPerWarpSetting rows("64");
      expect("check_head_dims(128, 0) at 64 rows a warp", rfa_cuda_check_head_dims(128, 0),
             RFA_CUDA_ERROR_INVALID_ARGUMENT,
             "RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP is 16 or 32 (query rows a warp of the sm80 forward), not \"64\"");
    }
  }
  rfa_cuda_path chosen = RFA_CUDA_PATH_SM90;
  expect("unknown kernel path", rfa_cuda_resolve_path(static_cast<rfa_cuda_path>(7), &chosen),
         RFA_CUDA_ERROR_INVALID_ARGUMENT, "unknown kernel path 7");
  const bool auto_is_sm80 =
      rfa_cuda_resolve_path(RFA_CUDA_PATH_AUTO, &chosen) == RFA_CUDA_SUCCESS && chosen == RFA_CUDA_PATH_SM80;
  std::printf("  %-4s %-40s\n", auto_is_sm80 ? "ok" : "FAIL", "path auto -> sm80");
  if (!auto_is_sm80) ++failures;
  if (!rfa_cuda_sm90_built())
    expect("path sm90 in a build without it", rfa_cuda_resolve_path(RFA_CUDA_PATH_SM90, &chosen),
           RFA_CUDA_ERROR_UNSUPPORTED, "not in this build");
  rfa_cuda_backward_params b;
  rfa_cuda_backward_params_init(&b);
  b.shape = f.shape;
  b.q = b.k = b.v = b.dout = b.dq = b.dk = b.dv = dummy;
  b.lse = b.delta = reinterpret_cast<const float*>(dummy);
  b.grad_mode = RFA_CUDA_GRAD_STORE;
  expect("store mode without workspace", rfa_cuda_flash_backward(&b, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "workspace");
  rfa_cuda_backward_params bad_b = b;
  bad_b.shape.heads = bad_b.shape.kv_heads = 2;
  bad_b.dk_strides = {128, 128, 0};
  expect("dk repeated over the heads", rfa_cuda_flash_backward(&bad_b, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "dk has head stride 0");
  bad_b = b;
  bad_b.shape.seq_q = 2;
  bad_b.dq_strides = {128, 0, 64};
  expect("dq repeated over the sequence", rfa_cuda_flash_backward(&bad_b, nullptr), RFA_CUDA_ERROR_INVALID_ARGUMENT,
         "dq has seq stride 0");
  {  // The sm80 backward's key tile from the environment, checked with the shape before any device is asked for.
    bad_b = b;
    bad_b.grad_mode = RFA_CUDA_GRAD_ACCUMULATE_FP32;
    bad_b.q = nullptr;  // a value the variable takes lets the next check speak
    for (const char* value : {"96", "128x", " 64", "0", "16"}) {
      const KeyTileSetting tile(value);
      expect((std::string(kBackwardKeyTile) + "=\"" + value + "\"").c_str(), rfa_cuda_flash_backward(&bad_b, nullptr),
             RFA_CUDA_ERROR_INVALID_ARGUMENT,
             "RFA_CUDA_SM80_BACKWARD_KEY_TILE is 64 or 128 (keys a CTA of the sm80 backward)");
    }
    // 128 keys up to 256 columns of Q/K and V together (d 128 the last), refused past them (192,
    // the next head dim the kernels take, and MLA's 192 / 128); 64 everywhere.
    expect_layout_values(kBackwardKeyTile, "=128 takes head dims whose Q/K and V columns add up to at most 256",
                         bad_b.shape, [&] { return rfa_cuda_flash_backward(&bad_b, nullptr); },
                         {{256, 0, "128", true},
                          {192, 0, "128", true},
                          {192, 128, "128", true},
                          {128, 0, "128", false},
                          {32, 0, "128", false},
                          {64, 0, "64", false},
                          {256, 0, "64", false},
                          {192, 128, "64", false},
                          {128, 0, "", false},
                          {192, 0, nullptr, false}});
    {  // The question a context asks at creation, on every rank, says the same.
      const KeyTileSetting tile("128");
      expect("check_head_dims(192, 128) at 128 keys a block", rfa_cuda_check_head_dims(192, 128),
             RFA_CUDA_ERROR_UNSUPPORTED, "not 192 + 128: unset it or set 64");
      expect("check_head_dims(256, 0) at 128 keys a block", rfa_cuda_check_head_dims(256, 0),
             RFA_CUDA_ERROR_UNSUPPORTED, "not 256 + 256");
    }
    {
      const KeyTileSetting tile("32");
      expect("check_head_dims(64, 0) at 32 keys a block", rfa_cuda_check_head_dims(64, 0),
             RFA_CUDA_ERROR_INVALID_ARGUMENT,
             "RFA_CUDA_SM80_BACKWARD_KEY_TILE is 64 or 128 (keys a CTA of the sm80 backward), not \"32\"");
    }
  }
  const bool sized = rfa_cuda_backward_workspace_size(&b) == std::size_t(4) * 64;
  b.deterministic = 1;
  const bool no_workspace = rfa_cuda_backward_workspace_size(&b) == 0;
  std::printf("  %-4s %-40s\n", sized && no_workspace ? "ok" : "FAIL", "workspace: 256 B, 0 when deterministic");
  if (!(sized && no_workspace)) ++failures;
}

}  // namespace

// usage: rfa_cuda_kernel_test [--filter SUBSTRING[|SUBSTRING...]] [--require-path sm90]
//   --filter: only the GPU cases whose name contains one of the substrings ('|' between them; e.g.
//   to keep a compute-sanitizer run short); a filter that selects no case fails the run
//   --require-path sm90: fail, rather than test the sm_80 kernels alone, where the Hopper kernels
//   cannot run (not in this build, or a device that is not 9.x): a check that asks for them
//   must not pass without them
int main(int argc, char** argv) {
  std::vector<std::string> filters;
  bool require_sm90 = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--filter" && i + 1 < argc) {
      const std::string list = argv[++i];
      for (std::size_t from = 0;;) {
        const std::size_t bar = list.find('|', from);
        filters.push_back(list.substr(from, bar == std::string::npos ? std::string::npos : bar - from));
        if (bar == std::string::npos) break;
        from = bar + 1;
      }
    } else if (arg == "--require-path" && i + 1 < argc && std::string(argv[i + 1]) == "sm90") {
      require_sm90 = true;
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--filter SUBSTRING[|SUBSTRING...]] [--require-path sm90]\n", argv[0]);
      return 2;
    }
  }
  int matched = 0;  // cases a --filter selected: one that selects none fails the run
  auto selected = [&](const std::string& name) {
    if (filters.empty()) return true;
    for (const std::string& f : filters)
      if (!f.empty() && name.find(f) != std::string::npos) {
        ++matched;
        return true;
      }
    return false;
  };
  run_argument_checks();
  if (!cuda_device_present()) {
    std::printf("no CUDA device: skipping the GPU correctness tests (%d argument-check failures)\n", failures);
    return failures == 0 ? kSkipExitCode : 1;
  }
  int device = 0;
  RFA_TEST_CUDA(cudaGetDevice(&device));
  const int major = device_compute_major();
  if (major < 8) {
    std::printf("CUDA device has compute capability %d.x < 8.0: skipping\n", major);
    return kSkipExitCode;
  }

  // Every head-dim pair the kernels take runs here exactly when their blocks' shared memory fits
  // what the device gives a block (every pair on an A100 or H100; up to 128 on 8.6 and 8.9).
  {
    int allowed = 0;
    RFA_TEST_CUDA(cudaDeviceGetAttribute(&allowed, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const int pairs[][3] = {{32, 0, 50176},   {64, 0, 82944},    {128, 0, 98304}, {192, 0, 147456},
                            {256, 0, 135680}, {192, 128, 131072}};  // head_dim, value_head_dim, the most a kernel asks
    // The backward's tile of 128 keys asks for more at d 128 (K and V of 128 keys).
    const int wide_pairs[][3] = {{32, 0, 50176}, {64, 0, 82944}, {128, 0, 107008}};
    const auto check_pairs = [&](const auto& list, const char* setting) {
      for (const auto& pair : list) {
        const rfa_cuda_status status = rfa_cuda_check_head_dims(pair[0], pair[1]);
        const bool fits = pair[2] <= allowed;
        const bool ok = fits ? status == RFA_CUDA_SUCCESS
                             : status == RFA_CUDA_ERROR_UNSUPPORTED &&
                                   std::strstr(rfa_cuda_last_error_message(), "shared memory") != nullptr;
        std::printf("  %-4s check_head_dims(%d, %d)%s: %s (a block may have %d bytes here)\n", ok ? "ok" : "FAIL",
                    pair[0], pair[1], setting, status == RFA_CUDA_SUCCESS ? "runs" : rfa_cuda_last_error_message(),
                    allowed);
        if (!ok) ++failures;
      }
    };
    check_pairs(pairs, "");
    const KeyTileSetting tile("128");
    check_pairs(wide_pairs, " at 128 keys a block");
  }

  rfa_cuda_path hopper = RFA_CUDA_PATH_SM80;
  if (rfa_cuda_resolve_path(RFA_CUDA_PATH_SM90, &hopper) == RFA_CUDA_SUCCESS) {
    kernel_paths.push_back(hopper);
  } else if (require_sm90) {
    std::printf("FAIL --require-path sm90: %s\n", rfa_cuda_last_error_message());
    return 1;
  }
  std::printf("kernel paths tested:");
  for (rfa_cuda_path path : kernel_paths) std::printf(" %s", rfa_cuda_path_name(path));
  std::printf(rfa_cuda_sm90_built() ? "\n" : " (this build has no sm90 path)\n");

  const rfa_cuda_dtype B = RFA_CUDA_BF16, H = RFA_CUDA_FP16;
  std::vector<Case> cases = {
      {"tiny", B, 64, 1, 1, 1, 1, 1, false},
      {"single query, causal", H, 128, 1, 1, 77, 2, 1, true},
      {"odd, full", B, 64, 2, 77, 77, 4, 2, false},
      {"odd, causal, d128", H, 128, 1, 129, 129, 2, 1, true},
      {"long, causal", B, 128, 1, 1000, 1000, 2, 2, true},
      {"long, causal, fp16 d64", H, 64, 1, 1000, 1000, 2, 1, true},
      {"sq != sk, GQA 4:1", B, 128, 1, 129, 1000, 4, 1, false},
      {"sq > sk, causal fp16", H, 64, 2, 300, 77, 2, 2, true},
  };
  // Keys on the backward's tile edges at d 128 (64 and 128 keys a block; 32 queries a stage) and
  // one either side: full with 33 queries, causal over as many queries as keys.
  for (int keys : {127, 128, 129})
    cases.push_back({"d128 tile edges, full GQA 4:2, 33 x " + std::to_string(keys), keys % 2 ? B : H, 128, 1, 33, keys,
                     4, 2, false});
  for (int keys : {255, 256, 257})
    cases.push_back({"d128 tile edges, causal, " + std::to_string(keys) + " x " + std::to_string(keys),
                     keys % 2 ? H : B, 128, 2, keys, keys, 2, 1, true});
  // Zigzag over P = 3 ranks, chunks of 40 tokens: rank r holds chunks r and 5 - r.
  Case zig{"zigzag q(rank 1) x k(rank 1)", B, 128, 1, 80, 80, 2, 1, true};
  zig.q_map = two_segments(40, 40, 160, 40);
  zig.k_map = two_segments(40, 40, 160, 40);
  cases.push_back(zig);
  Case zig_other{"zigzag q(rank 0) x k(rank 2), masked rows", H, 64, 1, 80, 80, 2, 2, true};
  zig_other.q_map = two_segments(0, 40, 200, 40);
  zig_other.k_map = two_segments(80, 40, 120, 40);
  cases.push_back(zig_other);
  Case stripe{"stripe q(rank 2 of 3) x k(rank 0)", B, 64, 1, 101, 100, 2, 1, true};
  stripe.q_map = one_segment(2, 3, 101);
  stripe.k_map = one_segment(0, 3, 100);
  cases.push_back(stripe);
  // Sliding windows and packed documents (the host kernels' MaskRule, on the device): windows of
  // 1, inside a tile and across tiles, causal or not; documents of one token, documents
  // shorter and longer than a tile, an empty document, with a window on top, on zigzag and
  // stripe maps.
  Case w1{"window 1, causal", B, 64, 1, 200, 200, 2, 1, true};
  w1.window = 1;
  Case w37{"window 37, full, fp16 d128", H, 128, 2, 300, 300, 4, 2, false};
  w37.window = 37;
  Case w300{"window 300, causal, long", B, 128, 1, 1000, 1000, 2, 2, true};
  w300.window = 300;
  Case docs{"documents, causal", B, 64, 1, 500, 500, 2, 1, true};
  docs.docs = {0, 1, 2, 90, 90, 260, 261, 500};
  Case docs_full{"documents, full, fp16 d128", H, 128, 2, 300, 300, 4, 2, false};
  docs_full.docs = {0, 150, 151, 300};
  Case docs_window{"documents + window 50, causal", B, 128, 1, 700, 700, 2, 2, true};
  docs_window.docs = {0, 7, 400, 700};
  docs_window.window = 50;
  Case docs_zig{"documents, zigzag q(rank 0) x k(rank 2)", H, 64, 1, 80, 80, 2, 2, true};
  docs_zig.q_map = two_segments(0, 40, 200, 40);
  docs_zig.k_map = two_segments(80, 40, 120, 40);
  docs_zig.docs = {0, 30, 110, 210, 240};
  Case docs_stripe{"documents, stripe q(rank 2 of 3) x k(rank 0)", B, 64, 1, 101, 100, 2, 1, false};
  docs_stripe.q_map = one_segment(2, 3, 101);
  docs_stripe.k_map = one_segment(0, 3, 100);
  docs_stripe.docs = {0, 1, 50, 170, 303};
  for (const Case& c : {w1, w37, w300, docs, docs_full, docs_window, docs_zig, docs_stripe}) cases.push_back(c);
  // Soft-capped scores (1/sqrt(d)-scaled scores of about +-1 here): a cap that bends most of them,
  // with GQA, a window, documents and a zigzag map; one that bends only the largest.
  Case cap{"softcap 0.4, causal", B, 64, 1, 300, 300, 4, 2, true};
  cap.softcap = 0.4f;
  Case cap_window{"softcap 0.4 + window 50, full, fp16 d128", H, 128, 2, 300, 300, 2, 1, false};
  cap_window.softcap = 0.4f;
  cap_window.window = 50;
  Case cap_docs_zig{"softcap 1.5, documents, zigzag q(rank 0) x k(rank 2)", B, 128, 1, 80, 80, 2, 2, true};
  cap_docs_zig.q_map = two_segments(0, 40, 200, 40);
  cap_docs_zig.k_map = two_segments(80, 40, 120, 40);
  cap_docs_zig.docs = {0, 30, 110, 210, 240};
  cap_docs_zig.softcap = 1.5f;
  for (const Case& c : {cap, cap_window, cap_docs_zig}) cases.push_back(c);
  // Zigzag chunks as long as the sm80 tiles' rows (64, 128) or one shorter or longer, so that a
  // tile's rows or keys cross from one chunk to the other exactly at a tile edge or one row away
  // (rank 0's queries, rank 1's keys of P = 3): causal, and a window with documents on a chunk's
  // edge and one beside it.
  for (int n : {63, 64, 65, 127, 128, 129}) {
    const std::string chunks = "zigzag chunks of " + std::to_string(n) + ", q(rank 0) x k(rank 1), ";
    Case edge{chunks + "causal", n % 2 ? B : H, 64, 1, 2 * n, 2 * n, 2, 1, true};
    edge.q_map = two_segments(0, n, 5 * n, n);
    edge.k_map = two_segments(n, n, 4 * n, n);
    cases.push_back(edge);
    edge.name = chunks + "window + documents, full";
    edge.causal = false;
    edge.window = n + 1;
    edge.docs = {0, 4 * n, 5 * n + 1, 6 * n};
    cases.push_back(edge);
  }
  // A later step of a causal zigzag ring whose keys' second chunk no query sees (rank 2's queries,
  // rank 0's keys of P = 3, at d 128): chunks of 128 make it a whole key tile of the Hopper
  // backward and two of the sm80 one with nothing to walk, one key fewer or more puts the
  // unseen keys a row off the tile edge (a partial last tile with nothing to walk); the
  // backwards must still write zeros for them in the grad modes that write dK and dV over.
  for (int n : {127, 128, 129}) {
    Case unseen{"zigzag chunks of " + std::to_string(n) + ", q(rank 2) x k(rank 0), causal: keys no query sees",
                n % 2 ? H : B,
                128,
                1,
                2 * n,
                2 * n,
                2,
                1,
                true};
    unseen.q_map = two_segments(2 * n, n, 3 * n, n);
    unseen.k_map = two_segments(0, n, 5 * n, n);
    cases.push_back(unseen);
  }
  // Masks given as ranges (the library's index on the device): prefix-LM (a causal entry and a
  // full one), a 2-D neighbourhood of bands with GQA and fp16 d128, block-causal blocks with a
  // window and documents on top on a zigzag map, and a list of every kind with empty,
  // single-token and overlapping entries on a stripe map; the Hopper path refuses them.
  using R = ref::Range;
  Case prefix{"ranges: prefix-LM 100", B, 64, 1, 300, 300, 2, 1, false};
  prefix.ranges_on = true;
  prefix.ranges = {{0, 300, 0, 300, R::causal}, {0, 300, 0, 100, R::full}};
  Case grid{"ranges: 2-D neighbourhood 20 x 15, radius 2, fp16 d128", H, 128, 1, 300, 300, 4, 2, false};
  grid.ranges_on = true;
  for (std::int64_t y = 0; y < 15; ++y)
    for (std::int64_t dy = -2; dy <= 2; ++dy)
      if (y + dy >= 0 && y + dy < 15)
        grid.ranges.push_back({20 * y, 20 * y + 20, 20 * (y + dy), 20 * (y + dy) + 20, R::band, -2, 2});
  Case blocks_zig{
      "ranges: block-causal 48 + window 50 + documents, zigzag q(rank 0) x k(rank 2)", B, 64, 1, 80, 80, 2, 2, false};
  blocks_zig.q_map = two_segments(0, 40, 200, 40);
  blocks_zig.k_map = two_segments(80, 40, 120, 40);
  blocks_zig.window = 50;
  blocks_zig.docs = {0, 30, 110, 210, 240};
  blocks_zig.ranges_on = true;
  for (std::int64_t b = 0; b < 240; b += 48)
    blocks_zig.ranges.push_back(
        {b, std::min<std::int64_t>(b + 48, 240), 0, std::min<std::int64_t>(b + 48, 240), R::full});
  Case kinds{"ranges: every kind, stripe q(rank 2 of 3) x k(rank 0)", B, 128, 1, 101, 100, 2, 1, false};
  kinds.q_map = one_segment(2, 3, 101);
  kinds.k_map = one_segment(0, 3, 100);
  kinds.ranges_on = true;
  kinds.ranges = {{0, 303, 0, 303, R::band, -40, 3}, {100, 200, 150, 303, R::anticausal}, {50, 50, 0, 303, R::full},
                  {77, 78, 0, 303, R::full},         {0, 303, 299, 300, R::full},         {200, 303, 0, 120, R::causal},
                  {0, 150, 60, 90, R::full}};
  // An empty list: no pair is seen, and the index has no bands and no arrays on the device.
  Case no_ranges{"ranges: none (no bands, no arrays)", B, 64, 1, 130, 130, 2, 1, false};
  no_ranges.ranges_on = true;
  for (const Case& c : {prefix, grid, blocks_zig, kinds, no_ranges}) cases.push_back(c);
  // The longest window a caller may give, whose reach from a position leaves int64 (it hides
  // nothing): causal on a zigzag map, and full on positions from -2^60 (both paths).
  Case longest{"window INT64_MAX, causal, zigzag q(rank 0) x k(rank 1)", H, 64, 1, 80, 80, 2, 1, true};
  longest.q_map = two_segments(0, 40, 200, 40);
  longest.k_map = two_segments(40, 40, 160, 40);
  longest.window = std::numeric_limits<std::int64_t>::max();
  Case longest_far{"window INT64_MAX, full, positions from -2^60", B, 128, 1, 130, 130, 2, 1, false};
  longest_far.q_map = one_segment(-(std::int64_t(1) << 60), 1, 130);
  longest_far.k_map = one_segment(-(std::int64_t(1) << 60) + 7, 1, 130);
  longest_far.window = std::numeric_limits<std::int64_t>::max();
  for (const Case& c : {longest, longest_far}) cases.push_back(c);
  // Per-sequence documents: three entries, each its own boundaries (one token each, boundaries
  // on the sm80 tiles' edges and one either side, none), causal with GQA; full with a window on
  // a zigzag map where one entry's documents hide the block; the Hopper path refuses them.
  Case entries{"per-sequence documents, causal GQA 4:2", B, 64, 3, 200, 200, 4, 2, true};
  std::vector<std::vector<std::int64_t>> entry_lists = {{}, {0, 63, 64, 65, 127, 128, 129, 200}, {0, 200}};
  for (std::int64_t x = 0; x <= 200; ++x) entry_lists[0].push_back(x);
  Case entries_zig{"per-sequence documents + window 60, full, zigzag q(rank 2) x k(rank 0), fp16 d128",
                   H,
                   128,
                   3,
                   80,
                   80,
                   2,
                   1,
                   false};
  entries_zig.q_map = two_segments(80, 40, 120, 40);
  entries_zig.k_map = two_segments(0, 40, 200, 40);
  entries_zig.window = 60;
  std::vector<std::vector<std::int64_t>> zig_lists = {{0, 40, 200, 240}, {}, {0, 30, 110, 210, 240}};
  for (auto [c, lists] : {std::make_pair(&entries, &entry_lists), std::make_pair(&entries_zig, &zig_lists)}) {
    const ref::DocumentLists packed = ref::pack_document_lists(*lists);
    c->docs = packed.bounds;
    c->doc_offsets = packed.offsets;
    cases.push_back(*c);
  }
  // Head dim 256 (the sm80 kernels; the Hopper path refuses it): lengths on and either side of the
  // d = 256 tiles' edges (forward 128 queries x 32 keys, dQ pass 64 x 32, backward 64 keys x 32
  // queries per stage), a long causal run, GQA and fp16, a window with documents on a zigzag map,
  // a soft cap, a mask given as ranges.
  Case d256_edges{"d256, causal, 129 x 65", B, 256, 1, 129, 65, 2, 1, true};
  Case d256_short{"d256, full GQA 4:2 fp16, 31 x 33", H, 256, 2, 31, 33, 4, 2, false};
  Case d256_long{"d256, causal, long", B, 256, 1, 513, 513, 2, 2, true};
  const Case d256_zig = zigzag_window_documents(
      {"d256, window 37 + documents, zigzag q(rank 0) x k(rank 2), fp16", H, 256, 1, 80, 80, 2, 1, true});
  Case d256_cap{"d256, softcap 0.4, full, 64 x 127", B, 256, 1, 64, 127, 2, 2, false};
  d256_cap.softcap = 0.4f;
  Case d256_ranges{"d256, ranges: prefix-LM 100", B, 256, 1, 300, 300, 2, 1, false};
  d256_ranges.ranges_on = true;
  d256_ranges.ranges = {{0, 300, 0, 300, R::causal}, {0, 300, 0, 100, R::full}};
  for (const Case& c : {d256_edges, d256_short, d256_long, d256_zig, d256_cap, d256_ranges}) cases.push_back(c);
  // MLA's head dims, 192 for Q and K, 128 for V (the sm80 kernels; the Hopper path refuses them):
  // the same edges (the forward's 128 x 64 tiles, the dQ pass's 128 x 32, the backward's 64 keys
  // x 32 queries), GQA, fp16 with a window and documents on a zigzag map, a soft cap.
  Case mla_edges{"d192/128, causal GQA 4:2, 129 x 65", B, 192, 1, 129, 65, 4, 2, true};
  Case mla_long{"d192/128, causal, long, fp16", H, 192, 2, 513, 513, 2, 1, true};
  const Case mla_zig = zigzag_window_documents(
      {"d192/128, window 37 + documents, zigzag q(rank 0) x k(rank 2)", H, 192, 1, 80, 80, 2, 2, true});
  Case mla_cap{"d192/128, softcap 0.4, full, 31 x 127", B, 192, 1, 31, 127, 2, 1, false};
  mla_cap.softcap = 0.4f;
  Case mla_ranges{"d192/128, ranges: prefix-LM 100, GQA 4:2", H, 192, 1, 300, 300, 4, 2, false};
  mla_ranges.ranges_on = true;
  mla_ranges.ranges = {{0, 300, 0, 300, R::causal}, {0, 300, 0, 100, R::full}};
  for (Case c : {mla_edges, mla_long, mla_zig, mla_cap, mla_ranges}) {
    c.value_dim = 128;
    cases.push_back(c);
  }
  // One head dim of 192 (query fragments in shared memory as at d = 256, with 64-key forward
  // stages) and of 32: the tiles' edges, GQA, fp16, a window with documents on a zigzag map, a
  // soft cap over a mask given as ranges.
  Case d192_edges{"d192, causal GQA 4:2, 129 x 65", B, 192, 1, 129, 65, 4, 2, true};
  const Case d192_zig = zigzag_window_documents(
      {"d192, window 37 + documents, zigzag q(rank 0) x k(rank 2), fp16", H, 192, 1, 80, 80, 2, 1, true});
  Case d32_edges{"d32, full GQA 4:2 fp16, 127 x 129", H, 32, 2, 127, 129, 4, 2, false};
  const Case d32_zig = zigzag_window_documents(
      {"d32, window 37 + documents, zigzag q(rank 0) x k(rank 2)", B, 32, 1, 80, 80, 2, 2, true});
  Case d192_cap_ranges{
      "d192, softcap 0.4 + ranges: block-causal 48, full, 130 x 130", B, 192, 1, 130, 130, 2, 1, false};
  Case d32_cap_ranges{
      "d32, softcap 0.4 + ranges: block-causal 48, full fp16, 130 x 130", H, 32, 2, 130, 130, 4, 2, false};
  for (Case* c : {&d192_cap_ranges, &d32_cap_ranges}) {
    c->softcap = 0.4f;
    c->ranges_on = true;
    for (std::int64_t b = 0; b < 130; b += 48)
      c->ranges.push_back({b, std::min<std::int64_t>(b + 48, 130), 0, std::min<std::int64_t>(b + 48, 130), R::full});
  }
  for (const Case& c : {d192_edges, d192_zig, d32_edges, d32_zig, d192_cap_ranges, d32_cap_ranges}) cases.push_back(c);
  for (const Case& c : cases)
    if (selected(c.name)) run_case(c);
  // Scores far past the cap, causal and full, on and beside the sm80 tiles' 64 keys.
  for (const bool causal : {false, true}) {
    Case past{std::string("softcap 1, every score 9-14 past it, ") + (causal ? "causal" : "full") + ", 130 x 65",
              B,
              64,
              1,
              130,
              65,
              2,
              1,
              causal};
    past.softcap = 1.f;
    past.past_cap = true;
    if (selected(past.name)) run_case(past);
  }

  Case strided{"strided, causal GQA 4:2", B, 128, 2, 300, 300, 4, 2, true};
  Case strided_d64{"strided, full fp16 d64", H, 64, 2, 129, 257, 2, 1, false};
  Case strided_d256{"strided, d256 causal GQA 4:2 fp16", H, 256, 2, 130, 129, 4, 2, true};
  Case strided_mla{"strided, d192/128 full GQA 4:2", B, 192, 2, 129, 130, 4, 2, false};
  strided_mla.value_dim = 128;
  for (const Case& c : {strided, strided_d64, strided_d256, strided_mla})
    if (selected(c.name)) run_strided_case(c);
  Case broadcast{"broadcast K/V, causal GQA 4:2", B, 128, 1, 129, 257, 4, 2, true};
  if (selected(broadcast.name)) run_broadcast_case(broadcast, 3);

  Case merge{"merge, causal", B, 128, 1, 200, 200, 2, 1, true};
  Case merge_stripe{"merge, stripe causal fp16", H, 64, 1, 150, 150, 2, 2, true};
  merge_stripe.q_map = one_segment(1, 2, 150);
  merge_stripe.k_map = one_segment(0, 2, 150);
  Case merge_d256{"merge, d256 causal", B, 256, 1, 200, 200, 2, 1, true};
  Case merge_mla{"merge, d192/128 causal GQA 4:2", B, 192, 1, 200, 200, 4, 2, true};
  merge_mla.value_dim = 128;
  Case merge_d192{"merge, d192 causal fp16", H, 192, 1, 200, 200, 2, 1, true};
  Case merge_d32{"merge, d32 full GQA 4:2", B, 32, 2, 150, 150, 4, 2, false};
  const std::pair<const Case*, int> merges[] = {{&merge, 77},     {&merge_stripe, 70}, {&merge_d256, 96},
                                                {&merge_mla, 65}, {&merge_d192, 64},   {&merge_d32, 31}};
  for (const auto& [c, split] : merges) {
    if (!selected(c->name)) continue;
    for (const ForwardKernels& kernels : forward_kernels(*c)) {
      if (!path_takes_head_dim(*c, kernels.path)) continue;
      for (bool fused : {false, true}) run_merge_case(*c, split, fused, kernels);
    }
  }

  if (selected("row-wise helpers")) run_rowwise_checks();

  if (!filters.empty() && matched == 0) {
    std::printf("FAIL: --filter selected no case: nothing was tested\n");
    ++failures;
  }
  if (failures == 0)
    std::printf("all checks passed\n");
  else
    std::printf("%d check(s) FAILED\n", failures);
  return failures == 0 ? 0 : 1;
}
