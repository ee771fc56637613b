// SPDX-License-Identifier: BSD-3-Clause
// rfa_cudnn_*: one ring block as cuDNN band calls (band_plan.hpp), each a cached cuDNN
// frontend graph (SDPA forward with statistics, SDPA backward), folded into the ring's fp32
// state by the row-wise kernels (rowwise_launchers.hpp). cuDNN itself is loaded at run time (cudnn_library.hpp).
#include "rfa_cuda/cudnn_attention.h"

#include <cudnn_frontend.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "api_support.hpp"
#include "argument_checks.hpp"
#include "cudnn/band_plan.hpp"
#include "cudnn/cudnn_library.hpp"
#include "rowwise_launchers.hpp"

namespace fe = cudnn_frontend;

namespace rfa_cuda {
namespace cudnn {
namespace {

using detail::ElementType;
using detail::fail;
using detail::StridedTensor;

// Tensor uids of the graphs' variant packs.
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

constexpr std::size_t kAlign = 256;
std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

std::size_t element_bytes(rfa_cuda_dtype t) { return t == RFA_CUDA_FP32 ? 4 : 2; }

/// What makes two band calls the same cuDNN graph.
/// Every field is 64 bits wide, so the key has no padding: its bytes are its value, and
/// comparing or hashing them compares or hashes the fields (checked below at compile time).
struct GraphKey {
  std::int64_t backward = 0, deterministic = 0, direct = 0, dtype = 0;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, head_dim = 0, q_rows = 0, k_rows = 0;
  // q, k, v; out (backward, in-place forward); dout (backward); dq, dk, dv (in-place backward)
  std::int64_t strides[8][3] = {};
  std::int64_t has_right = 0, has_left = 0, right = 0, left = 0;
  std::int64_t scale_bits = 0;  // the float scale's bits

  bool operator==(const GraphKey& o) const { return std::memcmp(this, &o, sizeof *this) == 0; }
};
static_assert(std::has_unique_object_representations_v<GraphKey>, "GraphKey must have no padding bytes");

struct GraphKeyHash {
  std::size_t operator()(const GraphKey& k) const {
    // FNV-1a over the key's bytes (all of them fields: no padding).
    const auto* bytes = reinterpret_cast<const unsigned char*>(&k);
    std::uint64_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < sizeof k; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    return std::size_t(h);
  }
};

struct CachedGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  std::int64_t workspace = 0;  // cuDNN's own scratch
};

fe::DataType_t io_type(rfa_cuda_dtype t) {
  return t == RFA_CUDA_BF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

/// A 4-d [b][h][s][d] cuDNN tensor over rfa's [b][s][h][d] storage with these strides.
std::shared_ptr<fe::graph::Tensor_attributes> bshd_tensor(fe::graph::Graph& g, const char* name, Uid uid,
                                                          std::int64_t b, std::int64_t h, std::int64_t s,
                                                          std::int64_t d, const StridedTensor& t) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({b, h, s, d})
                      .set_stride({t.batch, t.head, t.seq, 1}));
}

/// Contiguous [b][s][h][d] scratch strides.
StridedTensor packed(void* data, std::int64_t s, std::int64_t h, std::int64_t d) {
  return StridedTensor{data, s * h * d, h * d, d};
}

template <class Attributes>
void set_band(Attributes& a, const BandBlock& band) {
  if (band.has_right_bound || band.has_left_bound) a.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT);
  if (band.has_right_bound) a.set_diagonal_band_right_bound(int(band.right_bound));
  if (band.has_left_bound) a.set_diagonal_band_left_bound(int(band.left_bound));
}

/// A frontend error that means cuDNN declines the graph (no engine supports it, none could be
/// planned): RFA_CUDA_ERROR_UNSUPPORTED, so that rfa's kernels take the block. Every other error
/// (an attribute or tensor rfa got wrong, a CUDA or cuDNN call that failed, a runtime
/// compilation that failed) is a failure, never a silent change of kernels.
rfa_cuda_status frontend_failure(fe::error_object status, const char* what) {
  switch (status.get_code()) {
    case fe::error_code_t::GRAPH_NOT_SUPPORTED:
    case fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED:
    case fe::error_code_t::HEURISTIC_QUERY_FAILED:
    case fe::error_code_t::UNSUPPORTED_GRAPH_FORMAT:
      return fail(RFA_CUDA_ERROR_UNSUPPORTED, "cuDNN %s: %s", what, status.get_message().c_str());
    default: return fail(RFA_CUDA_ERROR_CUDA, "cuDNN %s failed: %s", what, status.get_message().c_str());
  }
}

#define RFA_CUDNN_FE_TRY(call, what)                                    \
  do {                                                                  \
    auto fe_status_ = (call);                                           \
    if (fe_status_.is_bad()) return frontend_failure(fe_status_, what); \
  } while (0)

/// Validates, builds and plans a graph; its workspace size into `out`.
rfa_cuda_status finish_graph(cudnnHandle_t handle, const std::shared_ptr<fe::graph::Graph>& g, CachedGraph& out) {
  RFA_CUDNN_FE_TRY(g->validate(), "graph validation");
  RFA_CUDNN_FE_TRY(g->build_operation_graph(handle), "operation graph");
  RFA_CUDNN_FE_TRY(g->create_execution_plans({fe::HeurMode_t::A}), "execution plans");
  RFA_CUDNN_FE_TRY(g->check_support(handle), "support check");
  // cuDNN said it takes the graph: a plan that cannot then be built (the frontend reports any
  // build failure as GRAPH_EXECUTION_PLAN_CREATION_FAILED, a runtime compilation without NVRTC
  // or a sub-library that did not load among them) is a failure, not a decline.
  auto built = g->build_plans(handle);
  if (built.is_bad())
    return fail(RFA_CUDA_ERROR_CUDA, "cuDNN plan build failed after its support check passed: %s",
                built.get_message().c_str());
  std::int64_t workspace = 0;
  RFA_CUDNN_FE_TRY(g->get_workspace_size(workspace), "workspace size");
  out.graph = g;
  out.workspace = workspace;
  return RFA_CUDA_SUCCESS;
}

/// The problem a band call sees: the block's dims, strides and scale with the band's rows.
struct BandProblem {
  rfa_cuda_dtype dtype;
  std::int64_t batch, heads, kv_heads, head_dim;
  float scale;
  // out: backward and in-place forward; dout: backward; dq, dk, dv: in-place backward (data may
  // be null while planning).
  StridedTensor q, k, v, out, dout, dq, dk, dv;
  // In place: the block is one band over the whole of it, and cuDNN reads and writes the
  // caller's tensors (out and lse forward; lse, dq, dk and dv backward) instead of scratch.
  bool direct = false;
};

GraphKey key_of(const BandProblem& p, const BandBlock& band, bool backward, bool deterministic) {
  GraphKey k{};
  k.backward = backward;
  k.deterministic = backward && deterministic;
  k.direct = p.direct;
  k.dtype = int(p.dtype);
  k.batch = p.batch;
  k.heads = p.heads;
  k.kv_heads = p.kv_heads;
  k.head_dim = p.head_dim;
  k.q_rows = band.q_rows;
  k.k_rows = band.k_rows;
  const StridedTensor* tensors[8] = {&p.q, &p.k, &p.v, &p.out, &p.dout, &p.dq, &p.dk, &p.dv};
  for (int t = 0; t < (backward ? (p.direct ? 8 : 5) : (p.direct ? 4 : 3)); ++t) {
    k.strides[t][0] = tensors[t]->batch;
    k.strides[t][1] = tensors[t]->seq;
    k.strides[t][2] = tensors[t]->head;
  }
  k.has_right = band.has_right_bound;
  k.has_left = band.has_left_bound;
  k.right = band.right_bound;
  k.left = band.left_bound;
  std::uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &p.scale, sizeof p.scale);
  k.scale_bits = scale_bits;
  return k;
}

/// Scratch of one band call: cuDNN's workspace, then rfa's buffers.
struct ScratchLayout {
  std::size_t cudnn = 0, out = 0, stats = 0, dq = 0, dk = 0, dv = 0;
  std::size_t total() const { return cudnn + out + stats + dq + dk + dv; }
};

ScratchLayout scratch_of(const BandProblem& p, const BandBlock& band, const CachedGraph& g, bool backward) {
  ScratchLayout s;
  const std::size_t e = element_bytes(p.dtype);
  s.cudnn = aligned(std::size_t(g.workspace));
  if (p.direct) return s;  // the results and the statistics are the caller's tensors
  s.stats = aligned(std::size_t(p.batch * p.heads * band.q_rows) * sizeof(float));
  if (!backward) {
    s.out = aligned(std::size_t(p.batch * band.q_rows * p.heads * p.head_dim) * e);
  } else {
    s.dq = aligned(std::size_t(p.batch * band.q_rows * p.heads * p.head_dim) * e);
    s.dk = aligned(std::size_t(p.batch * band.k_rows * p.kv_heads * p.head_dim) * e);
    s.dv = s.dk;
  }
  return s;
}

/// Moves a tensor's base to local row `row`.
StridedTensor at_row(const StridedTensor& t, std::int64_t row, std::size_t element) {
  StridedTensor out = t;
  out.data = static_cast<char*>(t.data) + std::size_t(row * t.seq) * element;
  return out;
}

}  // namespace
}  // namespace cudnn
}  // namespace rfa_cuda

namespace rfa_cuda {
namespace cudnn {
namespace {

/// The dK and dV a backward left in its workspace (rfa_cudnn_backward_holding_key_gradients)
/// until rfa_cudnn_add_held_key_gradients adds them: which workspace, band and block.
struct HeldKeyGradients {
  bool held = false;
  const void* workspace = nullptr;
  BandBlock band;
  ScratchLayout layout;
  std::int64_t dtype = 0, batch = 0, seq_k = 0, kv_heads = 0, head_dim = 0;

  bool of(const rfa_cuda_attention_shape& s, const BandBlock& b, const void* ws) const {
    return held && ws == workspace && s.dtype == dtype && s.batch == batch && s.seq_k == seq_k &&
           s.kv_heads == kv_heads && s.head_dim == head_dim && b.k_begin == band.k_begin && b.k_rows == band.k_rows &&
           b.q_begin == band.q_begin && b.q_rows == band.q_rows;
  }
};

}  // namespace
}  // namespace cudnn
}  // namespace rfa_cuda

/// A cuDNN handle of one device, the graphs built on it (by band shape), and the dK and dV a
/// backward holds in its workspace, if any.
struct rfa_cudnn_context {
  cudnnHandle_t handle = nullptr;
  std::unordered_map<rfa_cuda::cudnn::GraphKey, rfa_cuda::cudnn::CachedGraph, rfa_cuda::cudnn::GraphKeyHash> graphs;
  rfa_cuda::cudnn::HeldKeyGradients held;
};

namespace rfa_cuda {
namespace cudnn {
namespace {

/// A graph in the problem's storage type with fp32 intermediates, and its q, k, v of the band.
struct GraphInputs {
  std::shared_ptr<fe::graph::Graph> graph;
  std::shared_ptr<fe::graph::Tensor_attributes> q, k, v;
};

GraphInputs graph_inputs(const BandProblem& p, const BandBlock& band) {
  GraphInputs in;
  in.graph = std::make_shared<fe::graph::Graph>();
  in.graph->set_io_data_type(io_type(p.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  in.q = bshd_tensor(*in.graph, "q", kQ, p.batch, p.heads, band.q_rows, p.head_dim, p.q);
  in.k = bshd_tensor(*in.graph, "k", kK, p.batch, p.kv_heads, band.k_rows, p.head_dim, p.k);
  in.v = bshd_tensor(*in.graph, "v", kV, p.batch, p.kv_heads, band.k_rows, p.head_dim, p.v);
  return in;
}

rfa_cuda_status build_forward(rfa_cudnn_context& c, const BandProblem& p, const BandBlock& band, CachedGraph& out) {
  auto [g, q, k, v] = graph_inputs(p, band);
  // The composite implementation, whatever the runtime cuDNN: the frontend would pick the unified
  // one by version alone for a block without a band, and a device without its engines would then
  // decline some blocks of a call and take others.
  auto attributes = fe::graph::SDPA_attributes()
                        .set_name("rfa_band_forward")
                        .set_generate_stats(true)
                        .set_attn_scale(p.scale)
                        .set_implementation(fe::AttentionImplementation_t::COMPOSITE);
  set_band(attributes, band);
  auto [o, stats] = g->sdpa(q, k, v, attributes);
  // In place: the caller's out (the band is every row of it); merged: packed scratch of the band.
  const StridedTensor o_layout = p.direct ? p.out : packed(nullptr, band.q_rows, p.heads, p.head_dim);
  o->set_output(true)
      .set_uid(kO)
      .set_dim({p.batch, p.heads, band.q_rows, p.head_dim})
      .set_stride({o_layout.batch, o_layout.head, o_layout.seq, 1});
  // [b][h][rows]: where the band is every row (in place), the layout of the caller's lse.
  stats->set_output(true)
      .set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({p.batch, p.heads, band.q_rows, 1})
      .set_stride({p.heads * band.q_rows, band.q_rows, 1, 1});
  return finish_graph(c.handle, g, out);
}

rfa_cuda_status build_backward(rfa_cudnn_context& c, const BandProblem& p, const BandBlock& band, bool deterministic,
                               CachedGraph& out) {
  auto [g, q, k, v] = graph_inputs(p, band);
  auto o = bshd_tensor(*g, "o", kO, p.batch, p.heads, band.q_rows, p.head_dim, p.out);
  auto dout = bshd_tensor(*g, "do", kDO, p.batch, p.heads, band.q_rows, p.head_dim, p.dout);
  auto stats = g->tensor(fe::graph::Tensor_attributes()
                             .set_name("stats")
                             .set_uid(kStats)
                             .set_data_type(fe::DataType_t::FLOAT)
                             .set_dim({p.batch, p.heads, band.q_rows, 1})
                             .set_stride({p.heads * band.q_rows, band.q_rows, 1, 1}));
  auto attributes = fe::graph::SDPA_backward_attributes()
                        .set_name("rfa_band_backward")
                        .set_attn_scale(p.scale)
                        .set_deterministic_algorithm(deterministic);
  set_band(attributes, band);
  auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, dout, stats, attributes);
  // In place: the caller's gradients (the band is the whole block); else packed scratch.
  const StridedTensor q_layout = p.direct ? p.dq : packed(nullptr, band.q_rows, p.heads, p.head_dim);
  const StridedTensor k_layout = p.direct ? p.dk : packed(nullptr, band.k_rows, p.kv_heads, p.head_dim);
  const StridedTensor v_layout = p.direct ? p.dv : k_layout;
  dq->set_output(true)
      .set_uid(kDQ)
      .set_dim({p.batch, p.heads, band.q_rows, p.head_dim})
      .set_stride({q_layout.batch, q_layout.head, q_layout.seq, 1});
  dk->set_output(true)
      .set_uid(kDK)
      .set_dim({p.batch, p.kv_heads, band.k_rows, p.head_dim})
      .set_stride({k_layout.batch, k_layout.head, k_layout.seq, 1});
  dv->set_output(true)
      .set_uid(kDV)
      .set_dim({p.batch, p.kv_heads, band.k_rows, p.head_dim})
      .set_stride({v_layout.batch, v_layout.head, v_layout.seq, 1});
  return finish_graph(c.handle, g, out);
}

/// The cached graph of a band call, built on first use.
rfa_cuda_status graph_for(rfa_cudnn_context& c, const BandProblem& p, const BandBlock& band, bool backward,
                          bool deterministic, const CachedGraph** out) {
  const GraphKey key = key_of(p, band, backward, deterministic);
  auto it = c.graphs.find(key);
  if (it == c.graphs.end()) {
    CachedGraph built;
    RFA_CUDA_TRY(backward ? build_backward(c, p, band, deterministic, built) : build_forward(c, p, band, built));
    it = c.graphs.emplace(key, std::move(built)).first;
  }
  *out = &it->second;
  return RFA_CUDA_SUCCESS;
}

float resolved_scale(const rfa_cuda_attention_shape& s) {
  return s.scale > 0.f ? s.scale : 1.f / std::sqrt(float(s.head_dim));
}

rfa_cuda_status check_shape(const rfa_cuda_attention_shape& s) {
  RFA_CUDA_TRY(detail::check_common_shape(s));
  if (s.batch < 1 || s.seq_q < 1 || s.seq_k < 1 || s.heads < 1 || s.kv_heads < 1 || s.heads % s.kv_heads != 0 ||
      s.head_dim < 8 || s.head_dim % 8 != 0 || s.head_dim > 256 || s.seq_q > INT_MAX || s.seq_k > INT_MAX)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "cuDNN attention: a shape of batch %lld, seq %lld x %lld, heads %lld over %lld, head_dim %lld",
                (long long)s.batch, (long long)s.seq_q, (long long)s.seq_k, (long long)s.heads, (long long)s.kv_heads,
                (long long)s.head_dim);
  if (s.softcap != 0.f)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "cuDNN attention: soft-capped scores (softcap %g) are not expressed by this block kernel; rfa's "
                "kernels apply them",
                double(s.softcap));
  if (s.doc_offsets != nullptr)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "cuDNN attention: per-sequence documents (doc_offsets) are not expressed by this block kernel; "
                "rfa's kernels take them");
  if (s.ranges != 0)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "cuDNN attention: a mask given as ranges is not expressed by this block kernel; rfa's kernels take it");
  if (s.value_head_dim != 0 && s.value_head_dim != s.head_dim)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "cuDNN attention: a value head dim (%lld) other than head_dim (%lld) is not expressed by this block "
                "kernel; rfa's kernels take it",
                (long long)s.value_head_dim, (long long)s.head_dim);
  return RFA_CUDA_SUCCESS;
}

/// The bands of a block, or why cuDNN cannot compute it.
rfa_cuda_status bands_of(const rfa_cuda_attention_shape& s, const std::int64_t* host_doc_bounds, BandPlan& plan) {
  RFA_CUDA_TRY(check_shape(s));
  plan = plan_bands(s, host_doc_bounds, s.doc_bound_count);
  if (!plan.expressible) return fail(RFA_CUDA_ERROR_UNSUPPORTED, "cuDNN attention: %s", plan.why_not.c_str());
  return RFA_CUDA_SUCCESS;
}

/// The band problem of a block's shape and its q, k, v (forward and backward alike).
template <class Params>
BandProblem inputs_problem(const Params& p) {
  const rfa_cuda_attention_shape& s = p.shape;
  BandProblem b{};
  b.dtype = s.dtype;
  b.batch = s.batch;
  b.heads = s.heads;
  b.kv_heads = s.kv_heads;
  b.head_dim = s.head_dim;
  b.scale = resolved_scale(s);
  b.q = detail::resolve(p.q, p.q_strides, s.seq_q, s.heads, s.head_dim);
  b.k = detail::resolve(p.k, p.k_strides, s.seq_k, s.kv_heads, s.head_dim);
  b.v = detail::resolve(p.v, p.v_strides, s.seq_k, s.kv_heads, s.head_dim);
  return b;
}

BandProblem forward_problem(const rfa_cuda_forward_params& p) {
  BandProblem b = inputs_problem(p);
  b.direct = p.merge == 0;
  if (b.direct) b.out = detail::resolve(p.out, p.out_strides, p.shape.seq_q, p.shape.heads, p.shape.head_dim);
  return b;
}

/// A forward either merges into an fp32 running result (merge 1, out_dtype fp32) or writes the
/// block's result in place (merge 0, out_dtype the storage dtype).
rfa_cuda_status check_output_mode(const rfa_cuda_forward_params& p) {
  const bool merged = p.merge != 0 && p.out_dtype == RFA_CUDA_FP32;
  const bool direct = p.merge == 0 && p.out_dtype == p.shape.dtype;
  if (!merged && !direct)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "cuDNN attention merges into an fp32 running result (merge 1, out_dtype fp32) or writes a block's "
                "result in place (merge 0, out_dtype the storage dtype)");
  return RFA_CUDA_SUCCESS;
}

/// In place, the block must be one band over the whole of it: cuDNN's results are then the
/// block's (several bands would need merging, rows or keys of none a value).
rfa_cuda_status check_in_place_plan(bool in_place, const rfa_cuda_attention_shape& s, const BandPlan& plan) {
  if (in_place && !covers_whole_block(plan, s.seq_q, s.seq_k))
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "cuDNN attention: the block is %zu band call(s), not one over the whole block, so its results cannot "
                "be written in place (merge or accumulate them in fp32 instead)",
                plan.blocks.size());
  return RFA_CUDA_SUCCESS;
}

BandProblem backward_problem(const rfa_cuda_backward_params& p, const void* out, rfa_cuda_strides out_strides) {
  const rfa_cuda_attention_shape& s = p.shape;
  BandProblem b = inputs_problem(p);
  b.out = detail::resolve(out, out_strides, s.seq_q, s.heads, s.head_dim);
  b.dout = detail::resolve(p.dout, p.dout_strides, s.seq_q, s.heads, s.head_dim);
  b.direct = p.grad_mode == RFA_CUDA_GRAD_STORE;
  if (b.direct) {
    b.dq = detail::resolve(p.dq, p.dq_strides, s.seq_q, s.heads, s.head_dim);
    b.dk = detail::resolve(p.dk, p.dk_strides, s.seq_k, s.kv_heads, s.head_dim);
    b.dv = detail::resolve(p.dv, p.dv_strides, s.seq_k, s.kv_heads, s.head_dim);
  }
  return b;
}

/// A backward either accumulates into fp32 gradients (grad mode accumulate) or writes the
/// block's gradients in place, in the storage dtype (grad mode store).
rfa_cuda_status check_grad_mode(const rfa_cuda_backward_params& p) {
  if (p.grad_mode != RFA_CUDA_GRAD_ACCUMULATE_FP32 && p.grad_mode != RFA_CUDA_GRAD_STORE)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "cuDNN attention accumulates fp32 gradients (grad mode accumulate) or writes a block's gradients in "
                "place (grad mode store), not grad mode %d",
                int(p.grad_mode));
  return RFA_CUDA_SUCCESS;
}

/// The scratch the block's bands need (the largest band's: they run one after another).
rfa_cuda_status plan_block(rfa_cudnn_context& c, const BandProblem& problem, const BandPlan& plan, bool backward,
                           bool deterministic, std::size_t& bytes) {
  bytes = 0;
  for (const BandBlock& band : plan.blocks) {
    const CachedGraph* g = nullptr;
    RFA_CUDA_TRY(graph_for(c, problem, band, backward, deterministic, &g));
    bytes = std::max(bytes, scratch_of(problem, band, *g, backward).total());
  }
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status check_workspace(void* workspace, std::size_t have, std::size_t need) {
  if (need > have)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "cuDNN attention: the workspace holds %zu bytes, the block needs %zu",
                have, need);
  if (need > 0 && (workspace == nullptr || reinterpret_cast<std::uintptr_t>(workspace) % kAlign != 0))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "cuDNN attention: the workspace must be %zu-byte aligned", kAlign);
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status execute(rfa_cudnn_context& c, const CachedGraph& g, std::unordered_map<std::int64_t, void*>& pack,
                        void* workspace, cudaStream_t stream) {
  const cudnnStatus_t set = fe::detail::set_stream(c.handle, stream);
  if (set != CUDNN_STATUS_SUCCESS) return fail(RFA_CUDA_ERROR_CUDA, "cudnnSetStream failed (status %d)", int(set));
  RFA_CUDNN_FE_TRY(g.graph->execute(c.handle, pack, workspace), "execution");
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status forward_block(rfa_cudnn_context& c, const rfa_cuda_forward_params& p, const std::int64_t* host_docs,
                              void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  c.held.held = false;  // the workspace may be written over
  RFA_CUDA_TRY(check_output_mode(p));
  if (p.out == nullptr || p.lse == nullptr)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "cuDNN attention: out and lse must be set");
  RFA_CUDA_TRY(detail::check_tile_tensor("q", p.q, p.q_strides));
  RFA_CUDA_TRY(detail::check_tile_tensor("k", p.k, p.k_strides));
  RFA_CUDA_TRY(detail::check_tile_tensor("v", p.v, p.v_strides));
  RFA_CUDA_TRY(detail::check_tile_tensor("out", p.out, p.out_strides));
  RFA_CUDA_TRY(detail::check_output_rows("out", p.out_strides, p.shape.batch, p.shape.seq_q, p.shape.heads));
  BandPlan plan;
  RFA_CUDA_TRY(bands_of(p.shape, host_docs, plan));
  RFA_CUDA_TRY(check_in_place_plan(p.merge == 0, p.shape, plan));
  const BandProblem problem = forward_problem(p);
  std::size_t need = 0;
  RFA_CUDA_TRY(plan_block(c, problem, plan, false, false, need));
  RFA_CUDA_TRY(check_workspace(workspace, workspace_bytes, need));
  const rfa_cuda_attention_shape& s = p.shape;
  const std::size_t e = element_bytes(s.dtype);
  if (problem.direct) {  // one band, every row: cuDNN writes out and lse themselves
    const CachedGraph* g = nullptr;
    RFA_CUDA_TRY(graph_for(c, problem, plan.blocks[0], false, false, &g));
    const BandBlock& band = plan.blocks[0];
    std::unordered_map<std::int64_t, void*> pack = {{kQ, problem.q.data},
                                                    {kK, at_row(problem.k, band.k_begin, e).data},
                                                    {kV, at_row(problem.v, band.k_begin, e).data},
                                                    {kO, problem.out.data},
                                                    {kStats, p.lse}};
    return execute(c, *g, pack, workspace, stream);
  }
  const StridedTensor out = detail::resolve(p.out, p.out_strides, s.seq_q, s.heads, s.head_dim);
  for (const BandBlock& band : plan.blocks) {
    const CachedGraph* g = nullptr;
    RFA_CUDA_TRY(graph_for(c, problem, band, false, false, &g));
    const ScratchLayout layout = scratch_of(problem, band, *g, false);
    char* base = static_cast<char*>(workspace);
    void* block_out = base + layout.cudnn;
    float* block_stats = reinterpret_cast<float*>(base + layout.cudnn + layout.out);
    std::unordered_map<std::int64_t, void*> pack = {{kQ, at_row(problem.q, band.q_begin, e).data},
                                                    {kK, at_row(problem.k, band.k_begin, e).data},
                                                    {kV, at_row(problem.v, band.k_begin, e).data},
                                                    {kO, block_out},
                                                    {kStats, block_stats}};
    RFA_CUDA_TRY(execute(c, *g, pack, base, stream));
    const detail::RowwiseShape rows{int(s.batch), int(band.q_rows), int(s.heads), int(s.head_dim)};
    RFA_CUDA_TRY(detail::from_cuda(
        detail::launch_merge_band(rows, at_row(out, band.q_begin, sizeof(float)), p.lse + band.q_begin, s.seq_q,
                                  packed(block_out, band.q_rows, s.heads, s.head_dim), detail::element_type(s.dtype),
                                  block_stats, stream),
        "cuDNN attention: the merge of a band"));
  }
  return RFA_CUDA_SUCCESS;
}

/// Where a band's gradients lie in the workspace after its graph ran (scratch_of's order: cuDNN's
/// workspace, then the lse rows, dQ, dK and dV of the band).
struct BandGradients {
  float* stats;
  void *dq, *dk, *dv;
};
BandGradients band_gradients(void* workspace, const ScratchLayout& layout) {
  char* base = static_cast<char*>(workspace);
  BandGradients g;
  g.stats = reinterpret_cast<float*>(base + layout.cudnn);
  g.dq = base + layout.cudnn + layout.stats;
  g.dk = static_cast<char*>(g.dq) + layout.dq;
  g.dv = static_cast<char*>(g.dk) + layout.dk;
  return g;
}

/// Adds a band's dK and dV, in the storage dtype in the workspace (`g`), to the fp32 dk and dv.
rfa_cuda_status accumulate_key_gradients(const rfa_cuda_backward_params& p, const BandBlock& band,
                                         const BandGradients& g, cudaStream_t stream) {
  const rfa_cuda_attention_shape& s = p.shape;
  const StridedTensor dk = detail::resolve(p.dk, p.dk_strides, s.seq_k, s.kv_heads, s.head_dim);
  const StridedTensor dv = detail::resolve(p.dv, p.dv_strides, s.seq_k, s.kv_heads, s.head_dim);
  const ElementType type = detail::element_type(s.dtype);
  const detail::RowwiseShape k_rows{int(s.batch), int(band.k_rows), int(s.kv_heads), int(s.head_dim)};
  RFA_CUDA_TRY(
      detail::from_cuda(detail::launch_accumulate_band(k_rows, at_row(dk, band.k_begin, sizeof(float)),
                                                       packed(g.dk, band.k_rows, s.kv_heads, s.head_dim), type, stream),
                        "cuDNN attention: the accumulation of a band's dK"));
  return detail::from_cuda(
      detail::launch_accumulate_band(k_rows, at_row(dv, band.k_begin, sizeof(float)),
                                     packed(g.dv, band.k_rows, s.kv_heads, s.head_dim), type, stream),
      "cuDNN attention: the accumulation of a band's dV");
}

/// A block whose dK and dV may be held in the workspace: one band (a second band's graph would
/// overwrite the first's).
rfa_cuda_status check_held_plan(const BandPlan& plan) {
  if (plan.blocks.size() != 1)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "cuDNN attention holds the dK and dV of a block of one band only, not of %zu bands "
                "(rfa_cudnn_holds_key_gradients says which blocks)",
                plan.blocks.size());
  return RFA_CUDA_SUCCESS;
}

/// `hold_key_gradients`: dK and dV stay in the workspace (a block of one band: check_held_plan),
/// p.dk and p.dv are not read, and add_held_key_gradients adds them later.
rfa_cuda_status backward_block(rfa_cudnn_context& c, const rfa_cuda_backward_params& p, const void* out_data,
                               rfa_cuda_strides out_strides, const std::int64_t* host_docs, void* workspace,
                               std::size_t workspace_bytes, cudaStream_t stream, bool hold_key_gradients) {
  c.held.held = false;  // the workspace may be written over
  RFA_CUDA_TRY(check_grad_mode(p));
  const bool in_place = p.grad_mode == RFA_CUDA_GRAD_STORE;
  if (hold_key_gradients && in_place)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "cuDNN attention holds the dK and dV of a backward that accumulates (grad mode accumulate), not of "
                "one that writes in place");
  const bool key_gradients_set = hold_key_gradients || (p.dk != nullptr && p.dv != nullptr);
  if (p.dq == nullptr || !key_gradients_set || p.lse == nullptr || out_data == nullptr)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, hold_key_gradients
                                                     ? "cuDNN attention: dq, lse and out must be set"
                                                     : "cuDNN attention: dq, dk, dv, lse and out must be set");
  if (in_place) {  // 16-bit gradients, which cuDNN writes in 16-byte chunks
    RFA_CUDA_TRY(detail::check_tile_tensor("dq", p.dq, p.dq_strides));
    RFA_CUDA_TRY(detail::check_tile_tensor("dk", p.dk, p.dk_strides));
    RFA_CUDA_TRY(detail::check_tile_tensor("dv", p.dv, p.dv_strides));
  }
  RFA_CUDA_TRY(detail::check_tile_tensor("q", p.q, p.q_strides));
  RFA_CUDA_TRY(detail::check_tile_tensor("k", p.k, p.k_strides));
  RFA_CUDA_TRY(detail::check_tile_tensor("v", p.v, p.v_strides));
  RFA_CUDA_TRY(detail::check_tile_tensor("dout", p.dout, p.dout_strides));
  RFA_CUDA_TRY(detail::check_tile_tensor("out", out_data, out_strides));
  RFA_CUDA_TRY(detail::check_output_rows("dq", p.dq_strides, p.shape.batch, p.shape.seq_q, p.shape.heads));
  RFA_CUDA_TRY(detail::check_output_rows("dk", p.dk_strides, p.shape.batch, p.shape.seq_k, p.shape.kv_heads));
  RFA_CUDA_TRY(detail::check_output_rows("dv", p.dv_strides, p.shape.batch, p.shape.seq_k, p.shape.kv_heads));
  BandPlan plan;
  RFA_CUDA_TRY(bands_of(p.shape, host_docs, plan));
  RFA_CUDA_TRY(check_in_place_plan(in_place, p.shape, plan));
  if (hold_key_gradients) RFA_CUDA_TRY(check_held_plan(plan));
  const BandProblem problem = backward_problem(p, out_data, out_strides);
  const bool deterministic = p.deterministic != 0;
  std::size_t need = 0;
  RFA_CUDA_TRY(plan_block(c, problem, plan, true, deterministic, need));
  RFA_CUDA_TRY(check_workspace(workspace, workspace_bytes, need));
  const rfa_cuda_attention_shape& s = p.shape;
  const std::size_t e = element_bytes(s.dtype);
  if (in_place) {  // one band, the whole block: cuDNN reads lse and writes dq, dk, dv themselves
    const CachedGraph* g = nullptr;
    RFA_CUDA_TRY(graph_for(c, problem, plan.blocks[0], true, deterministic, &g));
    std::unordered_map<std::int64_t, void*> pack = {
        {kQ, problem.q.data},   {kK, problem.k.data},     {kV, problem.v.data},
        {kO, problem.out.data}, {kDO, problem.dout.data}, {kStats, const_cast<float*>(p.lse)},
        {kDQ, problem.dq.data}, {kDK, problem.dk.data},   {kDV, problem.dv.data}};
    return execute(c, *g, pack, workspace, stream);
  }
  const StridedTensor dq = detail::resolve(p.dq, p.dq_strides, s.seq_q, s.heads, s.head_dim);
  const ElementType type = detail::element_type(s.dtype);
  for (const BandBlock& band : plan.blocks) {
    const CachedGraph* g = nullptr;
    RFA_CUDA_TRY(graph_for(c, problem, band, true, deterministic, &g));
    const BandGradients grads = band_gradients(workspace, scratch_of(problem, band, *g, true));
    // The final lse rows of the band, contiguous per (batch, head): cuDNN's statistics input.
    RFA_CUDA_TRY(detail::from_cuda(
        cudaMemcpy2DAsync(grads.stats, std::size_t(band.q_rows) * sizeof(float), p.lse + band.q_begin,
                          std::size_t(s.seq_q) * sizeof(float), std::size_t(band.q_rows) * sizeof(float),
                          std::size_t(s.batch * s.heads), cudaMemcpyDeviceToDevice, stream),
        "cuDNN attention: the copy of the band's lse rows"));
    std::unordered_map<std::int64_t, void*> pack = {{kQ, at_row(problem.q, band.q_begin, e).data},
                                                    {kK, at_row(problem.k, band.k_begin, e).data},
                                                    {kV, at_row(problem.v, band.k_begin, e).data},
                                                    {kO, at_row(problem.out, band.q_begin, e).data},
                                                    {kDO, at_row(problem.dout, band.q_begin, e).data},
                                                    {kStats, grads.stats},
                                                    {kDQ, grads.dq},
                                                    {kDK, grads.dk},
                                                    {kDV, grads.dv}};
    RFA_CUDA_TRY(execute(c, *g, pack, workspace, stream));
    const detail::RowwiseShape q_rows{int(s.batch), int(band.q_rows), int(s.heads), int(s.head_dim)};
    RFA_CUDA_TRY(detail::from_cuda(
        detail::launch_accumulate_band(q_rows, at_row(dq, band.q_begin, sizeof(float)),
                                       packed(grads.dq, band.q_rows, s.heads, s.head_dim), type, stream),
        "cuDNN attention: the accumulation of a band's dQ"));
    if (!hold_key_gradients) {
      RFA_CUDA_TRY(accumulate_key_gradients(p, band, grads, stream));
    } else {
      HeldKeyGradients& h = c.held;
      h.workspace = workspace;
      h.band = band;
      h.layout = scratch_of(problem, band, *g, true);
      h.dtype = s.dtype, h.batch = s.batch, h.seq_k = s.seq_k, h.kv_heads = s.kv_heads, h.head_dim = s.head_dim;
      h.held = true;
    }
  }
  return RFA_CUDA_SUCCESS;
}

/// Adds to p.dk and p.dv the dK and dV that the context's last call, a backward of the same
/// block holding them (backward_block), left in `workspace`; once.
rfa_cuda_status add_held_key_gradients(rfa_cudnn_context& c, const rfa_cuda_backward_params& p,
                                       const std::int64_t* host_docs, void* workspace, cudaStream_t stream) {
  if (p.grad_mode != RFA_CUDA_GRAD_ACCUMULATE_FP32)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "cuDNN attention adds held dK and dV to fp32 gradients (grad mode accumulate), not grad mode %d",
                int(p.grad_mode));
  if (p.dk == nullptr || p.dv == nullptr)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "cuDNN attention: dk and dv must be set");
  RFA_CUDA_TRY(detail::check_output_rows("dk", p.dk_strides, p.shape.batch, p.shape.seq_k, p.shape.kv_heads));
  RFA_CUDA_TRY(detail::check_output_rows("dv", p.dv_strides, p.shape.batch, p.shape.seq_k, p.shape.kv_heads));
  BandPlan plan;
  RFA_CUDA_TRY(bands_of(p.shape, host_docs, plan));
  RFA_CUDA_TRY(check_held_plan(plan));
  HeldKeyGradients& h = c.held;
  if (!h.of(p.shape, plan.blocks[0], workspace))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "cuDNN attention: this workspace holds no dK and dV of this block (the context's last call must be "
                "rfa_cudnn_backward_holding_key_gradients of the same block and workspace, and they are added once)");
  h.held = false;
  return accumulate_key_gradients(p, h.band, band_gradients(workspace, h.layout), stream);
}

/// Runs `body` and turns any exception (the frontend throws for some failures, the standard
/// library for a refused allocation) into a failure: an exception never means "declined".
template <class Body>
rfa_cuda_status guarded(const char* what, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(RFA_CUDA_ERROR_CUDA, "cuDNN attention (%s) failed: %s", what, e.what());
  } catch (...) {
    return fail(RFA_CUDA_ERROR_CUDA, "cuDNN attention (%s) failed: an unknown exception", what);
  }
}

rfa_cuda_status require_context(const rfa_cudnn_context* c, const void* p) {
  if (c == nullptr || p == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "cuDNN attention: a NULL argument");
  return RFA_CUDA_SUCCESS;
}

}  // namespace
}  // namespace cudnn
}  // namespace rfa_cuda

using namespace rfa_cuda::cudnn;

extern "C" {

rfa_cuda_status rfa_cudnn_load(const char* library_file) { return load_library(library_file); }

int64_t rfa_cudnn_version(void) { return loaded_version(); }

rfa_cuda_status rfa_cudnn_create(rfa_cudnn_context** context) {
  if (context == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "rfa_cudnn_create: context is NULL");
  *context = nullptr;
  RFA_CUDA_TRY(load_library(nullptr));
  return guarded("create", [&]() -> rfa_cuda_status {
    auto made = std::make_unique<rfa_cudnn_context>();
    const cudnnStatus_t status = fe::detail::create_handle(&made->handle);
    if (status != CUDNN_STATUS_SUCCESS)
      return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                  "cudnnCreate failed (status %d, %s): no usable GPU for cuDNN here, or one of its sub-libraries "
                  "did not load from the folder of the library loaded",
                  int(status), fe::detail::get_error_string(status));
    *context = made.release();
    return RFA_CUDA_SUCCESS;
  });
}

void rfa_cudnn_destroy(rfa_cudnn_context* context) {
  if (context == nullptr) return;
  context->graphs.clear();
  if (context->handle != nullptr) fe::detail::destroy_handle(context->handle);
  delete context;
}

rfa_cuda_status rfa_cudnn_plan_forward(rfa_cudnn_context* context, const rfa_cuda_forward_params* p,
                                       const int64_t* host_doc_bounds, size_t* workspace_bytes) {
  RFA_CUDA_TRY(require_context(context, p));
  if (workspace_bytes == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "workspace_bytes is NULL");
  return guarded("forward plan", [&]() -> rfa_cuda_status {
    RFA_CUDA_TRY(check_output_mode(*p));
    BandPlan plan;
    RFA_CUDA_TRY(bands_of(p->shape, host_doc_bounds, plan));
    RFA_CUDA_TRY(check_in_place_plan(p->merge == 0, p->shape, plan));
    std::size_t bytes = 0;
    RFA_CUDA_TRY(plan_block(*context, forward_problem(*p), plan, false, false, bytes));
    *workspace_bytes = bytes;
    return RFA_CUDA_SUCCESS;
  });
}

rfa_cuda_status rfa_cudnn_plan_backward(rfa_cudnn_context* context, const rfa_cuda_backward_params* p,
                                        rfa_cuda_strides out_strides, const int64_t* host_doc_bounds,
                                        size_t* workspace_bytes) {
  RFA_CUDA_TRY(require_context(context, p));
  if (workspace_bytes == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "workspace_bytes is NULL");
  return guarded("backward plan", [&]() -> rfa_cuda_status {
    RFA_CUDA_TRY(check_grad_mode(*p));
    BandPlan plan;
    RFA_CUDA_TRY(bands_of(p->shape, host_doc_bounds, plan));
    RFA_CUDA_TRY(check_in_place_plan(p->grad_mode == RFA_CUDA_GRAD_STORE, p->shape, plan));
    std::size_t bytes = 0;
    RFA_CUDA_TRY(
        plan_block(*context, backward_problem(*p, nullptr, out_strides), plan, true, p->deterministic != 0, bytes));
    *workspace_bytes = bytes;
    return RFA_CUDA_SUCCESS;
  });
}

namespace {

/// The band plan of `shape`'s block where cuDNN expresses it (true), as a query: the calling
/// thread's last failure message stays what it was.
bool query_bands(const rfa_cuda_attention_shape* shape, const int64_t* host_doc_bounds, BandPlan& plan) {
  if (shape == nullptr) return false;
  const std::string message = rfa_cuda::detail::last_message();
  const bool expressed =
      guarded("band query", [&] { return bands_of(*shape, host_doc_bounds, plan); }) == RFA_CUDA_SUCCESS;
  if (message != rfa_cuda::detail::last_message()) fail(RFA_CUDA_SUCCESS, "%s", message.c_str());
  return expressed;
}

}  // namespace

int rfa_cudnn_writes_in_place(const rfa_cuda_attention_shape* shape, const int64_t* host_doc_bounds) {
  BandPlan plan;
  return query_bands(shape, host_doc_bounds, plan) && covers_whole_block(plan, shape->seq_q, shape->seq_k) ? 1 : 0;
}

int rfa_cudnn_expresses(const rfa_cuda_attention_shape* shape, const int64_t* host_doc_bounds) {
  BandPlan plan;
  return query_bands(shape, host_doc_bounds, plan) ? 1 : 0;
}

int rfa_cudnn_holds_key_gradients(const rfa_cuda_attention_shape* shape, const int64_t* host_doc_bounds) {
  BandPlan plan;
  return query_bands(shape, host_doc_bounds, plan) && plan.blocks.size() == 1 ? 1 : 0;
}

rfa_cuda_status rfa_cudnn_forward(rfa_cudnn_context* context, const rfa_cuda_forward_params* p,
                                  const int64_t* host_doc_bounds, void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream) {
  RFA_CUDA_TRY(require_context(context, p));
  return guarded("forward",
                 [&] { return forward_block(*context, *p, host_doc_bounds, workspace, workspace_bytes, stream); });
}

rfa_cuda_status rfa_cudnn_backward(rfa_cudnn_context* context, const rfa_cuda_backward_params* p, const void* out,
                                   rfa_cuda_strides out_strides, const int64_t* host_doc_bounds, void* workspace,
                                   size_t workspace_bytes, cudaStream_t stream) {
  RFA_CUDA_TRY(require_context(context, p));
  return guarded("backward", [&] {
    return backward_block(*context, *p, out, out_strides, host_doc_bounds, workspace, workspace_bytes, stream, false);
  });
}

rfa_cuda_status rfa_cudnn_backward_holding_key_gradients(rfa_cudnn_context* context, const rfa_cuda_backward_params* p,
                                                         const void* out, rfa_cuda_strides out_strides,
                                                         const int64_t* host_doc_bounds, void* workspace,
                                                         size_t workspace_bytes, cudaStream_t stream) {
  RFA_CUDA_TRY(require_context(context, p));
  return guarded("backward holding dK and dV", [&] {
    return backward_block(*context, *p, out, out_strides, host_doc_bounds, workspace, workspace_bytes, stream, true);
  });
}

rfa_cuda_status rfa_cudnn_add_held_key_gradients(rfa_cudnn_context* context, const rfa_cuda_backward_params* p,
                                                 const int64_t* host_doc_bounds, void* workspace, cudaStream_t stream) {
  RFA_CUDA_TRY(require_context(context, p));
  return guarded("adding held dK and dV",
                 [&] { return add_held_key_gradients(*context, *p, host_doc_bounds, workspace, stream); });
}

}  // extern "C"
