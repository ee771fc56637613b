// SPDX-License-Identifier: BSD-3-Clause
// The public entry points: argument checks with readable messages, resolution of defaults
// (scale, strides, position maps) and dispatch to the launchers. Nothing here throws.
#include "rfa_cuda/flash.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "api_support.hpp"
#include "argument_checks.hpp"
#include "kernel_args.hpp"
#include "launch_dispatch.cuh"
#include "shape_mask.hpp"
#include "sm80_layout_settings.hpp"
#if RFA_CUDA_HAVE_SM90
#include "hopper/backward_sm90.hpp"
#include "hopper/forward_sm90.hpp"
#endif

namespace rfa_cuda {
namespace detail {
namespace {

const char* dtype_name(rfa_cuda_dtype t) {
  switch (t) {
    case RFA_CUDA_BF16: return "bf16";
    case RFA_CUDA_FP16: return "fp16";
    case RFA_CUDA_FP32: return "fp32";
  }
  return "unknown";
}

bool known_dtype(rfa_cuda_dtype t) { return t == RFA_CUDA_BF16 || t == RFA_CUDA_FP16 || t == RFA_CUDA_FP32; }

std::size_t element_bytes(rfa_cuda_dtype t) { return t == RFA_CUDA_FP32 ? sizeof(float) : sizeof(std::uint16_t); }

rfa_cuda_status to_device_positions(const char* name, const rfa_cuda_position_map& map, std::int64_t seq,
                                    DevicePositions& out) {
  RFA_CUDA_TRY(check_position_map(name, map, seq));
  out = device_positions(map);
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status check_shape(const rfa_cuda_attention_shape& s, AttentionDims& dims) {
  RFA_CUDA_TRY(check_common_shape(s));
  // Each factor bounded before the product, which could wrap in 64 bits otherwise.
  if (s.seq_q > INT_MAX / 2 || s.seq_k > INT_MAX / 2 || s.batch > INT_MAX / 2 || s.heads > INT_MAX / 2 ||
      s.batch * s.heads > INT_MAX / 2)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "seq_q %lld, seq_k %lld, batch %lld x heads %lld: the kernels' 32-bit tile indices take at most %d "
                "each",
                static_cast<long long>(s.seq_q), static_cast<long long>(s.seq_k), static_cast<long long>(s.batch),
                static_cast<long long>(s.heads), INT_MAX / 2);
  // A backward CTA walks every (query head of its GQA group, query tile) pair with a 32-bit
  // count, its query tiles at least 32 rows.
  if ((s.heads / s.kv_heads) * ((s.seq_q + 31) / 32) > INT_MAX)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "a GQA group of %lld query heads over %lld query rows is more (head, query tile) pairs than the "
                "backward's 32-bit walk counts: fewer heads per K/V head, or a shorter sequence per call",
                static_cast<long long>(s.heads / s.kv_heads), static_cast<long long>(s.seq_q));
  const std::int64_t value_dim = s.value_head_dim != 0 ? s.value_head_dim : s.head_dim;
  if (s.value_head_dim == 0 && !takes_dims(Sm80DimPairs{}, s.head_dim, s.head_dim))
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "head_dim %lld is not supported: use 32, 64, 128, 192 or 256 (192 also with value_head_dim 128)",
                static_cast<long long>(s.head_dim));
  if (!takes_dims(Sm80DimPairs{}, s.head_dim, value_dim))
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "head_dim %lld with value_head_dim %lld is not supported: use one head dim of 32, 64, 128, 192 or "
                "256, or head_dim 192 with value_head_dim 128",
                static_cast<long long>(s.head_dim), static_cast<long long>(s.value_head_dim));
  if (s.dtype != RFA_CUDA_BF16 && s.dtype != RFA_CUDA_FP16)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED, "input dtype %s is not supported: use bf16 or fp16", dtype_name(s.dtype));
  dims.batch = static_cast<int>(s.batch);
  dims.seq_q = static_cast<int>(s.seq_q);
  dims.seq_k = static_cast<int>(s.seq_k);
  dims.heads = static_cast<int>(s.heads);
  dims.kv_heads = static_cast<int>(s.kv_heads);
  dims.head_dim = static_cast<int>(s.head_dim);
  dims.value_dim = static_cast<int>(value_dim);
  dims.scale = s.scale != 0.f ? s.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  dims.scale_log2 = dims.scale * 1.44269504088896340736f;
  if (s.softcap > 0.f) {
    // ScoreCap holds softcap / scale and scale / softcap in fp32: beyond its normal range one of
    // them would be infinite or 0 (every capped score inf or NaN, or 0).
    const double ratio = static_cast<double>(s.softcap) / static_cast<double>(dims.scale);
    if (!(ratio >= FLT_MIN && ratio <= 1.0 / FLT_MIN))
      return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                  "softcap %g with scale %g is not supported: the kernels hold softcap / scale (%g) and its "
                  "inverse in fp32, which needs the ratio within %g .. %g",
                  static_cast<double>(s.softcap), static_cast<double>(dims.scale), ratio, static_cast<double>(FLT_MIN),
                  1.0 / FLT_MIN);
  }
  dims.cap = ScoreCap{s.softcap > 0.f, s.softcap > 0.f ? dims.scale / s.softcap : 0.f,
                      s.softcap > 0.f ? s.softcap / dims.scale : 0.f};
  dims.mask = device_mask(s);
  RFA_CUDA_TRY(to_device_positions("q_positions", s.q_positions, s.seq_q, dims.q_positions));
  RFA_CUDA_TRY(to_device_positions("k_positions", s.k_positions, s.seq_k, dims.k_positions));
  return RFA_CUDA_SUCCESS;
}

// The tensor-core kernels need sm_80 (mma.sync bf16, cp.async, ldmatrix); the current device's
// compute capability major version in `major`.
rfa_cuda_status check_device(int& major) {
  int device = 0;
  RFA_CUDA_TRY(from_cuda(cudaGetDevice(&device), "cudaGetDevice"));
  RFA_CUDA_TRY(
      from_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute"));
  if (major < 8)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED, "device %d has compute capability %d.x; sm_80 or newer is needed", device,
                major);
  return RFA_CUDA_SUCCESS;
}
rfa_cuda_status check_device() {
  int major = 0;
  return check_device(major);
}

rfa_cuda_status check_rowwise_shape(const char* what, std::int64_t batch, std::int64_t seq, std::int64_t heads,
                                    std::int64_t head_dim, RowwiseShape& shape) {
  if (batch < 1 || seq < 1 || heads < 1 || head_dim < 1)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s: batch %lld, seq %lld, heads %lld, head_dim %lld must all be >= 1",
                what, static_cast<long long>(batch), static_cast<long long>(seq), static_cast<long long>(heads),
                static_cast<long long>(head_dim));
  // Each factor bounded before a product: batch x seq x heads rows at most 2^33.
  constexpr std::int64_t kMaxRows = INT64_C(1) << 33;
  if (seq > INT_MAX || heads > INT_MAX || batch > INT_MAX || head_dim > INT_MAX || batch * seq > kMaxRows ||
      heads > kMaxRows / (batch * seq))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "%s: batch %lld x seq %lld x heads %lld rows (head_dim %lld): at most 2^33 rows, each size at most "
                "INT_MAX",
                what, static_cast<long long>(batch), static_cast<long long>(seq), static_cast<long long>(heads),
                static_cast<long long>(head_dim));
  shape =
      RowwiseShape{static_cast<int>(batch), static_cast<int>(seq), static_cast<int>(heads), static_cast<int>(head_dim)};
  return RFA_CUDA_SUCCESS;
}

// The Hopper kernels take one head dim, 64 or 128, and have no soft cap, no ranges and one list
// of documents: the first of those limits a shape meets (none: the path takes it).
enum class Sm90Limit { none, value_head_dim, head_dim, softcap, ranges, doc_offsets };

Sm90Limit sm90_limit(const rfa_cuda_attention_shape& s) {
  if (s.value_head_dim != 0 && s.value_head_dim != s.head_dim) return Sm90Limit::value_head_dim;
  if (!takes_dims(Sm90DimPairs{}, s.head_dim, s.head_dim)) return Sm90Limit::head_dim;
  if (s.softcap > 0.f) return Sm90Limit::softcap;
  if (s.ranges != 0) return Sm90Limit::ranges;
  if (s.doc_offsets != nullptr) return Sm90Limit::doc_offsets;
  return Sm90Limit::none;
}

// A call on the Hopper path whose shape it does not take is refused, naming the limit: such a
// call runs on the sm_80 path (auto or sm80).
rfa_cuda_status check_path_fits(const rfa_cuda_attention_shape& s, rfa_cuda_path path) {
  if (path != RFA_CUDA_PATH_SM90) return RFA_CUDA_SUCCESS;
  switch (sm90_limit(s)) {
    case Sm90Limit::none: return RFA_CUDA_SUCCESS;
    case Sm90Limit::value_head_dim:
      return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                  "the Hopper kernels (path sm90) take one head dim for Q, K and V, not value_head_dim %lld beside "
                  "head_dim %lld: use the sm80 path",
                  static_cast<long long>(s.value_head_dim), static_cast<long long>(s.head_dim));
    case Sm90Limit::head_dim:
      return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                  "the Hopper kernels (path sm90) take head_dim 64 or 128, not %lld: use the sm80 path",
                  static_cast<long long>(s.head_dim));
    case Sm90Limit::softcap:
      return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                  "the Hopper kernels (path sm90) do not apply a soft cap (softcap %g): use the sm80 path",
                  static_cast<double>(s.softcap));
    case Sm90Limit::ranges:
      return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                  "the Hopper kernels (path sm90) do not take a mask given as ranges: use "
                  "the sm80 path");
    case Sm90Limit::doc_offsets:
      return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                  "the Hopper kernels (path sm90) take one list of documents for every batch entry, not "
                  "per-sequence documents (doc_offsets): use the sm80 path");
  }
  return RFA_CUDA_SUCCESS;
}

// The sm_80 kernels' blocks ask for up to 144 KB of shared memory at the larger head dims
// (launchers' *_shared_bytes); a device that lets a block opt into less (compute capability 8.6
// and 8.9: 99 KB) runs the smaller ones only, so such a call is refused by name before any launch.
rfa_cuda_status check_shared_memory(int head_dim, int value_dim, bool forward, bool backward, bool dq, int key_tile) {
  int device = 0, allowed = 0;
  RFA_CUDA_TRY(from_cuda(cudaGetDevice(&device), "cudaGetDevice"));
  RFA_CUDA_TRY(from_cuda(cudaDeviceGetAttribute(&allowed, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                         "cudaDeviceGetAttribute"));
  const bool wide_keys = key_tile == 128 && head_dim + value_dim > kWideBackwardDefaultColumns;
  const struct {
    bool used;
    const char* name;
    int bytes;
  } kernels[] = {{forward, "forward", flash_forward_shared_bytes(head_dim, value_dim)},
                 {backward, wide_keys ? "backward (128 keys a block, RFA_CUDA_SM80_BACKWARD_KEY_TILE)" : "backward",
                  flash_backward_shared_bytes(head_dim, value_dim, key_tile)},
                 {dq, "deterministic dQ", flash_backward_dq_shared_bytes(head_dim, value_dim)}};
  for (const auto& k : kernels)
    if (k.used && k.bytes > allowed)
      return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                  "head_dim %d with value head dim %d: the sm80 %s kernel needs %d bytes of shared memory per block "
                  "and device %d lets a block have %d; head dims up to 128 fit every device of compute capability "
                  "8.0 or newer at the default layouts",
                  head_dim, value_dim, k.name, k.bytes, device, allowed);
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status forward(const rfa_cuda_forward_params* p, cudaStream_t stream) {
  if (p == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "forward params is NULL");
  ForwardArgs a{};
  RFA_CUDA_TRY(check_shape(p->shape, a.dims));
  RFA_CUDA_TRY(forward_rows_per_warp_from_environment(a.dims.value_dim, a.rows_per_warp));  // 0: the device's
  RFA_CUDA_TRY(check_tile_tensor("q", p->q, p->q_strides));
  RFA_CUDA_TRY(check_tile_tensor("k", p->k, p->k_strides));
  RFA_CUDA_TRY(check_tile_tensor("v", p->v, p->v_strides));
  RFA_CUDA_TRY(check_tile_tensor("out", p->out, p->out_strides));
  RFA_CUDA_TRY(check_output_rows("out", p->out_strides, p->shape.batch, p->shape.seq_q, p->shape.heads));
  if (p->out_dtype != p->shape.dtype && p->out_dtype != RFA_CUDA_FP32)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "out_dtype %s must be the input dtype (%s) or fp32",
                dtype_name(p->out_dtype), dtype_name(p->shape.dtype));
  RFA_CUDA_TRY(check_device_array("flash_forward", "lse", p->lse, sizeof(float)));
  RFA_CUDA_TRY(check_known_path(p->path));
  if (p->merge && p->out_dtype != RFA_CUDA_FP32)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "merge needs out_dtype fp32 (the running partial), not %s",
                dtype_name(p->out_dtype));
  int compute_major = 0;
  RFA_CUDA_TRY(check_device(compute_major));
  if (a.rows_per_warp == 0)
    a.rows_per_warp = default_forward_rows_per_warp(a.dims.head_dim, a.dims.value_dim, compute_major);
  const rfa_cuda_attention_shape& s = p->shape;
  a.q = resolve(p->q, p->q_strides, s.seq_q, s.heads, s.head_dim);
  a.k = resolve(p->k, p->k_strides, s.seq_k, s.kv_heads, s.head_dim);
  a.v = resolve(p->v, p->v_strides, s.seq_k, s.kv_heads, a.dims.value_dim);
  a.out = resolve(p->out, p->out_strides, s.seq_q, s.heads, a.dims.value_dim);
  a.out_fp32 = p->out_dtype == RFA_CUDA_FP32;
  a.lse = p->lse;
  a.merge = p->merge != 0;
  rfa_cuda_path path = RFA_CUDA_PATH_SM80;
  RFA_CUDA_TRY(rfa_cuda_resolve_path(p->path, &path));
  RFA_CUDA_TRY(check_path_fits(p->shape, path));
  if (path == RFA_CUDA_PATH_SM90) {
    RFA_CUDA_TRY(sm90_input("q", p->q_strides, s.batch, s.seq_q, s.heads, s.head_dim, sizeof(std::uint16_t), a.q));
    RFA_CUDA_TRY(sm90_input("k", p->k_strides, s.batch, s.seq_k, s.kv_heads, s.head_dim, sizeof(std::uint16_t), a.k));
    RFA_CUDA_TRY(
        sm90_input("v", p->v_strides, s.batch, s.seq_k, s.kv_heads, a.dims.value_dim, sizeof(std::uint16_t), a.v));
  }
  if (path == RFA_CUDA_PATH_SM80)
    RFA_CUDA_TRY(check_shared_memory(a.dims.head_dim, a.dims.value_dim, true, false, false, 0));
#if RFA_CUDA_HAVE_SM90
  if (path == RFA_CUDA_PATH_SM90)
    return from_cuda(hopper::launch_flash_forward_sm90(a, element_type(s.dtype), stream), "Hopper forward launch");
#endif
  return from_cuda(launch_flash_forward(a, element_type(s.dtype), stream), "flash forward launch");
}

std::size_t backward_workspace_bytes(const rfa_cuda_backward_params& p) {
  if (p.grad_mode != RFA_CUDA_GRAD_STORE || p.deterministic != 0) return 0;
  const rfa_cuda_attention_shape& s = p.shape;
  if (s.batch < 1 || s.seq_q < 1 || s.heads < 1 || s.head_dim < 1) return 0;
  // A shape whose size wraps is refused by the backward; its workspace size saturates.
  std::size_t elements = 1;
  for (const std::int64_t n : {s.batch, s.seq_q, s.heads, s.head_dim, std::int64_t(sizeof(float))})
    if (__builtin_mul_overflow(elements, std::size_t(n), &elements)) return SIZE_MAX;
  return elements;
}

rfa_cuda_status backward(const rfa_cuda_backward_params* p, cudaStream_t stream) {
  if (p == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "backward params is NULL");
  BackwardArgs a{};
  RFA_CUDA_TRY(check_shape(p->shape, a.dims));
  RFA_CUDA_TRY(backward_key_tile_from_environment(a.dims.head_dim, a.dims.value_dim, a.key_tile));
  RFA_CUDA_TRY(check_tile_tensor("q", p->q, p->q_strides));
  RFA_CUDA_TRY(check_tile_tensor("k", p->k, p->k_strides));
  RFA_CUDA_TRY(check_tile_tensor("v", p->v, p->v_strides));
  RFA_CUDA_TRY(check_tile_tensor("dout", p->dout, p->dout_strides));
  RFA_CUDA_TRY(check_tile_tensor("dq", p->dq, p->dq_strides));
  RFA_CUDA_TRY(check_tile_tensor("dk", p->dk, p->dk_strides));
  RFA_CUDA_TRY(check_tile_tensor("dv", p->dv, p->dv_strides));
  const rfa_cuda_attention_shape& s = p->shape;
  RFA_CUDA_TRY(check_output_rows("dq", p->dq_strides, s.batch, s.seq_q, s.heads));
  RFA_CUDA_TRY(check_output_rows("dk", p->dk_strides, s.batch, s.seq_k, s.kv_heads));
  RFA_CUDA_TRY(check_output_rows("dv", p->dv_strides, s.batch, s.seq_k, s.kv_heads));
  RFA_CUDA_TRY(check_device_array("flash_backward", "lse", p->lse, sizeof(float)));
  RFA_CUDA_TRY(check_device_array("flash_backward", "delta", p->delta, sizeof(float)));
  RFA_CUDA_TRY(check_known_path(p->path));
  const bool store = p->grad_mode == RFA_CUDA_GRAD_STORE;
  const bool overwrite_dkdv = p->grad_mode == RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32;
  if (!store && !overwrite_dkdv && p->grad_mode != RFA_CUDA_GRAD_ACCUMULATE_FP32)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "unknown grad_mode %d", static_cast<int>(p->grad_mode));
  const bool deterministic = p->deterministic != 0;
  if (store && !deterministic && (p->workspace == nullptr || !aligned16(p->workspace)))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "grad_mode STORE needs a 16-byte aligned workspace of rfa_cuda_backward_workspace_size() bytes; "
                "workspace is %p",
                p->workspace);
  RFA_CUDA_TRY(check_device());
  // The deterministic mode runs the sm_80 kernels, with the dQ pass, whatever the path asks for
  // (whether the Hopper kernels could run here or take the shape is beside the point).
  rfa_cuda_path path = RFA_CUDA_PATH_SM80;
  if (deterministic) {
    RFA_CUDA_TRY(check_known_path(p->path));
  } else {
    RFA_CUDA_TRY(rfa_cuda_resolve_path(p->path, &path));
    RFA_CUDA_TRY(check_path_fits(p->shape, path));
  }
  if (path == RFA_CUDA_PATH_SM80)
    RFA_CUDA_TRY(check_shared_memory(a.dims.head_dim, a.dims.value_dim, false, true, deterministic, a.key_tile));
  a.q = resolve(p->q, p->q_strides, s.seq_q, s.heads, s.head_dim);
  a.k = resolve(p->k, p->k_strides, s.seq_k, s.kv_heads, s.head_dim);
  a.v = resolve(p->v, p->v_strides, s.seq_k, s.kv_heads, a.dims.value_dim);
  a.dout = resolve(p->dout, p->dout_strides, s.seq_q, s.heads, a.dims.value_dim);
  a.dk = resolve(p->dk, p->dk_strides, s.seq_k, s.kv_heads, s.head_dim);
  a.dv = resolve(p->dv, p->dv_strides, s.seq_k, s.kv_heads, a.dims.value_dim);
  if (path == RFA_CUDA_PATH_SM90 && !deterministic) {
    RFA_CUDA_TRY(sm90_input("q", p->q_strides, s.batch, s.seq_q, s.heads, s.head_dim, sizeof(std::uint16_t), a.q));
    RFA_CUDA_TRY(sm90_input("k", p->k_strides, s.batch, s.seq_k, s.kv_heads, s.head_dim, sizeof(std::uint16_t), a.k));
    RFA_CUDA_TRY(
        sm90_input("v", p->v_strides, s.batch, s.seq_k, s.kv_heads, a.dims.value_dim, sizeof(std::uint16_t), a.v));
    RFA_CUDA_TRY(sm90_input("dout", p->dout_strides, s.batch, s.seq_q, s.heads, a.dims.value_dim, sizeof(std::uint16_t),
                            a.dout));
  }
  a.lse = p->lse;
  a.delta = p->delta;
  a.store_dkdv = store;
  a.overwrite_dkdv = overwrite_dkdv;
  const StridedTensor dq = resolve(p->dq, p->dq_strides, s.seq_q, s.heads, s.head_dim);
  const ElementType type = element_type(s.dtype);
  if (deterministic) {
    // dK/dV from the key-tile kernel, dQ from the query-tile kernel: each output element has
    // one writer and sums its terms in a fixed order.
    a.atomic_dq = false;
    RFA_CUDA_TRY(from_cuda(launch_flash_backward(a, type, stream), "flash backward launch"));
    DqArgs d{};
    d.dims = a.dims;
    d.q = a.q;
    d.k = a.k;
    d.v = a.v;
    d.dout = a.dout;
    d.lse = a.lse;
    d.delta = a.delta;
    d.dq = dq;
    d.store_dq = store;
    return from_cuda(launch_flash_backward_dq(d, type, stream), "flash backward dq launch");
  }
  // dQ is summed over key tiles in an order that varies, so it always accumulates in fp32:
  // directly in the caller's buffer, or in the zeroed workspace that is then converted into dq.
  a.atomic_dq = true;
  a.dq_accum = store ? resolve(p->workspace, rfa_cuda_strides{0, 0, 0}, s.seq_q, s.heads, s.head_dim) : dq;
#if RFA_CUDA_HAVE_SM90
  // The Hopper backward sums dQ through a TMA descriptor too: the caller's strides of 0 spelled
  // out (the workspace is contiguous).
  if (path == RFA_CUDA_PATH_SM90 && !store)
    RFA_CUDA_TRY(sm90_input("dq", p->dq_strides, s.batch, s.seq_q, s.heads, s.head_dim, sizeof(float), a.dq_accum));
#endif
  if (store)
    RFA_CUDA_TRY(
        from_cuda(cudaMemsetAsync(p->workspace, 0, backward_workspace_bytes(*p), stream), "zeroing the dq workspace"));
#if RFA_CUDA_HAVE_SM90
  if (path == RFA_CUDA_PATH_SM90)
    RFA_CUDA_TRY(from_cuda(hopper::launch_flash_backward_sm90(a, type, stream), "Hopper backward launch"));
  else
#endif
    RFA_CUDA_TRY(from_cuda(launch_flash_backward(a, type, stream), "flash backward launch"));
  if (store) {
    const RowwiseShape shape{a.dims.batch, a.dims.seq_q, a.dims.heads, a.dims.head_dim};
    RFA_CUDA_TRY(from_cuda(launch_convert_from_fp32(shape, a.dq_accum, dq, type, stream), "dq conversion launch"));
  }
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status delta(const rfa_cuda_delta_params* p, cudaStream_t stream) {
  if (p == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "delta params is NULL");
  RowwiseShape shape{};
  RFA_CUDA_TRY(check_rowwise_shape("attention_delta", p->batch, p->seq, p->heads, p->head_dim, shape));
  if (!known_dtype(p->out_dtype) || !known_dtype(p->dout_dtype))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "attention_delta: out_dtype %d or dout_dtype %d is no rfa_cuda_dtype",
                static_cast<int>(p->out_dtype), static_cast<int>(p->dout_dtype));
  RFA_CUDA_TRY(check_rowwise_tensor("attention_delta", "out", p->out, p->out_strides, element_bytes(p->out_dtype),
                                    false, p->batch, p->seq, p->heads));
  RFA_CUDA_TRY(check_rowwise_tensor("attention_delta", "dout", p->dout, p->dout_strides, element_bytes(p->dout_dtype),
                                    false, p->batch, p->seq, p->heads));
  RFA_CUDA_TRY(check_device_array("attention_delta", "delta", p->delta, sizeof(float)));
  const StridedTensor out = resolve(p->out, p->out_strides, p->seq, p->heads, p->head_dim);
  const StridedTensor dout = resolve(p->dout, p->dout_strides, p->seq, p->heads, p->head_dim);
  return from_cuda(launch_attention_delta(shape, out, element_type(p->out_dtype), dout, element_type(p->dout_dtype),
                                          p->delta, stream),
                   "attention_delta launch");
}

rfa_cuda_status merge(const rfa_cuda_merge_params* p, cudaStream_t stream) {
  if (p == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "merge params is NULL");
  RowwiseShape shape{};
  RFA_CUDA_TRY(check_rowwise_shape("merge_partial", p->batch, p->seq, p->heads, p->head_dim, shape));
  RFA_CUDA_TRY(check_rowwise_tensor("merge_partial", "out", p->out, p->out_strides, sizeof(float), true, p->batch,
                                    p->seq, p->heads));
  RFA_CUDA_TRY(check_rowwise_tensor("merge_partial", "block_out", p->block_out, p->block_out_strides, sizeof(float),
                                    false, p->batch, p->seq, p->heads));
  RFA_CUDA_TRY(check_device_array("merge_partial", "lse", p->lse, sizeof(float)));
  RFA_CUDA_TRY(check_device_array("merge_partial", "block_lse", p->block_lse, sizeof(float)));
  const StridedTensor out = resolve(p->out, p->out_strides, p->seq, p->heads, p->head_dim);
  const StridedTensor block = resolve(p->block_out, p->block_out_strides, p->seq, p->heads, p->head_dim);
  return from_cuda(launch_merge_partial(shape, out, p->lse, block, p->block_lse, stream), "merge_partial launch");
}

rfa_cuda_status convert(const rfa_cuda_convert_params* p, cudaStream_t stream) {
  if (p == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "convert params is NULL");
  RowwiseShape shape{};
  RFA_CUDA_TRY(check_rowwise_shape("convert_from_fp32", p->batch, p->seq, p->heads, p->head_dim, shape));
  if (p->dst_dtype != RFA_CUDA_BF16 && p->dst_dtype != RFA_CUDA_FP16)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "convert_from_fp32: dst_dtype %d must be bf16 or fp16",
                static_cast<int>(p->dst_dtype));
  RFA_CUDA_TRY(check_rowwise_tensor("convert_from_fp32", "src", p->src, p->src_strides, sizeof(float), false, p->batch,
                                    p->seq, p->heads));
  RFA_CUDA_TRY(check_rowwise_tensor("convert_from_fp32", "dst", p->dst, p->dst_strides, sizeof(std::uint16_t), true,
                                    p->batch, p->seq, p->heads));
  const StridedTensor src = resolve(p->src, p->src_strides, p->seq, p->heads, p->head_dim);
  const StridedTensor dst = resolve(p->dst, p->dst_strides, p->seq, p->heads, p->head_dim);
  return from_cuda(launch_convert_from_fp32(shape, src, dst, element_type(p->dst_dtype), stream),
                   "convert_from_fp32 launch");
}

}  // namespace
}  // namespace detail
}  // namespace rfa_cuda

using namespace rfa_cuda::detail;

extern "C" {

void rfa_cuda_forward_params_init(rfa_cuda_forward_params* p) {
  if (p == nullptr) return;
  std::memset(p, 0, sizeof *p);
  p->shape.dtype = RFA_CUDA_BF16;
  p->out_dtype = RFA_CUDA_BF16;
}

void rfa_cuda_backward_params_init(rfa_cuda_backward_params* p) {
  if (p == nullptr) return;
  std::memset(p, 0, sizeof *p);
  p->shape.dtype = RFA_CUDA_BF16;
  p->grad_mode = RFA_CUDA_GRAD_ACCUMULATE_FP32;
}

rfa_cuda_status rfa_cuda_flash_forward(const rfa_cuda_forward_params* p, cudaStream_t stream) {
  return forward(p, stream);
}

rfa_cuda_status rfa_cuda_check_head_dims(int64_t head_dim, int64_t value_head_dim) {
  const std::int64_t value_dim = value_head_dim != 0 ? value_head_dim : head_dim;
  if (!takes_dims(Sm80DimPairs{}, head_dim, value_dim))
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "head_dim %lld with value head dim %lld is not supported: use one head dim of 32, 64, 128, 192 or 256, "
                "or head_dim 192 with value_head_dim 128",
                static_cast<long long>(head_dim), static_cast<long long>(value_dim));
  int rows_per_warp = 0, key_tile = 64;  // the rows a warp: checked only (no shared memory depends on them)
  RFA_CUDA_TRY(forward_rows_per_warp_from_environment(value_dim, rows_per_warp));
  RFA_CUDA_TRY(backward_key_tile_from_environment(head_dim, value_dim, key_tile));
  RFA_CUDA_TRY(check_device());
  return check_shared_memory(static_cast<int>(head_dim), static_cast<int>(value_dim), true, true, true, key_tile);
}

int rfa_cuda_sm90_takes(const rfa_cuda_attention_shape* shape) {
  return shape != nullptr && sm90_limit(*shape) == Sm90Limit::none;
}

size_t rfa_cuda_backward_workspace_size(const rfa_cuda_backward_params* p) {
  return p == nullptr ? 0 : backward_workspace_bytes(*p);
}

rfa_cuda_status rfa_cuda_flash_backward(const rfa_cuda_backward_params* p, cudaStream_t stream) {
  return backward(p, stream);
}

rfa_cuda_status rfa_cuda_attention_delta(const rfa_cuda_delta_params* p, cudaStream_t stream) {
  return delta(p, stream);
}

rfa_cuda_status rfa_cuda_merge_partial(const rfa_cuda_merge_params* p, cudaStream_t stream) { return merge(p, stream); }

rfa_cuda_status rfa_cuda_convert_from_fp32(const rfa_cuda_convert_params* p, cudaStream_t stream) {
  return convert(p, stream);
}

rfa_cuda_status rfa_cuda_add_fp32(float* into, const float* from, size_t count, cudaStream_t stream) {
  if (count == 0) return RFA_CUDA_SUCCESS;
  if (into == nullptr || from == nullptr)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "add_fp32: into and from must not be NULL");
  return from_cuda(launch_add_fp32(into, from, count, stream), "add_fp32 launch");
}

rfa_cuda_status rfa_cuda_fill_fp32(float* data, float value, size_t count, cudaStream_t stream) {
  if (count == 0) return RFA_CUDA_SUCCESS;
  if (data == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "fill_fp32: data must not be NULL");
  return from_cuda(launch_fill_fp32(data, value, count, stream), "fill_fp32 launch");
}

const char* rfa_cuda_status_string(rfa_cuda_status status) {
  switch (status) {
    case RFA_CUDA_SUCCESS: return "success";
    case RFA_CUDA_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case RFA_CUDA_ERROR_UNSUPPORTED: return "unsupported configuration";
    case RFA_CUDA_ERROR_CUDA: return "CUDA runtime error";
  }
  return "unknown status";
}

const char* rfa_cuda_last_error_message(void) { return rfa_cuda::detail::last_message(); }

}  // extern "C"
