// SPDX-License-Identifier: BSD-3-Clause
#include "options.hpp"

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "core/documents.hpp"
#include "core/enum_value.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/mask_ranges.hpp"
#include "engine/attention_config.hpp"
#include "firewall.hpp"

namespace rfa {
namespace capi {

rfa_options_t default_options() {
  rfa_options_t o;
  std::memset(&o, 0, sizeof o);  // padding too: the struct is compared and copied bytewise
  const engine::AttentionConfig defaults;
  o.struct_size = sizeof(rfa_options_t);
  o.version = RFA_OPTIONS_VERSION;
  o.layout = defaults.layout;
  o.mask = defaults.mask;
  o.dtype = defaults.dtype;
  o.ring_order = RFA_RING_ORDER_DEFAULT;
  o.softmax_scale = 0.0;
  o.batch = defaults.batch;
  o.seq_total = 0;
  o.heads = defaults.heads;
  o.kv_heads = defaults.kv_heads;
  o.head_dim = defaults.head_dim;
  o.device = RFA_DEVICE_HOST;
  o.transport = RFA_TRANSPORT_DEFAULT;
  o.timeout_s = 0.0;
  o.strategy = RFA_STRATEGY_RING;
  o.ulysses_degree = 0;
  o.window = 0;
  o.doc_boundaries = nullptr;
  o.doc_boundary_count = 0;
  o.check_values = RFA_VALUE_CHECKS_DEFAULT;
  o.cuda_kernels = RFA_CUDA_KERNELS_DEFAULT;
  o.deterministic = 0;
  o.attention_sinks = 0;
  o.softcap = 0.0;
  o.mask_ranges = nullptr;
  o.mask_range_count = 0;
  o.doc_boundary_offsets = nullptr;
  o.doc_boundary_offset_count = 0;
  o.value_head_dim = 0;
  return o;
}

rfa_cuda_kernels_t requested_cuda_kernels(const rfa_cuda_kernels_t& option) {
  const int v = enum_value(option);
  require(v >= RFA_CUDA_KERNELS_DEFAULT && v <= RFA_CUDA_KERNELS_CUDNN, "options.cuda_kernels is ", v,
          ", not an rfa_cuda_kernels_t value");
  if (v != RFA_CUDA_KERNELS_DEFAULT) return rfa_cuda_kernels_t(v);
  const std::string text = env_text(Env::cuda_kernels);
  if (text.empty() || text == "auto") return RFA_CUDA_KERNELS_AUTO;
  if (text == "rfa") return RFA_CUDA_KERNELS_RFA;
  if (text == "cudnn") return RFA_CUDA_KERNELS_CUDNN;
  fail(RFA_ERROR_INVALID_ARGUMENT, env_name(Env::cuda_kernels), " is '", text, "'; it must be auto, rfa or cudnn");
}

rfa_value_checks_t resolve_value_checks(const rfa_value_checks_t& option) {
  const int v = enum_value(option);
  require(v == RFA_VALUE_CHECKS_DEFAULT || v == RFA_VALUE_CHECKS_OFF || v == RFA_VALUE_CHECKS_ON,
          "options.check_values is ", v, ", not an rfa_value_checks_t value");
  if (v != RFA_VALUE_CHECKS_DEFAULT) return rfa_value_checks_t(v);
  const std::string text = env_text(Env::check_values);
  if (text.empty() || text == "0") return RFA_VALUE_CHECKS_OFF;
  if (text == "1") return RFA_VALUE_CHECKS_ON;
  fail(RFA_ERROR_INVALID_ARGUMENT, env_name(Env::check_values), " is '", text,
       "'; it must be 1 (check every call's tensors for "
       "NaN and infinity) or 0 (do not)");
}

std::size_t min_options_size() {
  // Version 1 ends with head_dim. When fields are appended, this stays where it is.
  return offsetof(rfa_options_t, head_dim) + sizeof(int64_t);
}

// Every field is as large as its alignment and no larger than the struct's (LP64): a multiple
// of the struct's alignment then never ends inside a field.
static_assert(alignof(rfa_options_t) == sizeof(std::int64_t), "struct_size checks assume 8-byte alignment");

void check_options_size(std::size_t struct_size, const char* what) {
  if (struct_size < min_options_size()) {
    fail(RFA_ERROR_INVALID_ARGUMENT, what, " is ", struct_size, " but must be at least ", min_options_size(),
         " (version 1 of rfa_options_t): initialize the struct with rfa_options_init()");
  }
  if (struct_size > kMaxOptionsSize) {
    fail(RFA_ERROR_INVALID_ARGUMENT, what, " is ", struct_size, ", more than ", kMaxOptionsSize,
         " bytes, which no version of rfa_options_t reaches: initialize the struct with rfa_options_init()");
  }
  if (struct_size % alignof(rfa_options_t) != 0) {
    fail(RFA_ERROR_INVALID_ARGUMENT, what, " is ", struct_size, ", not a multiple of ", alignof(rfa_options_t),
         ": it ends inside a field, so it is no version's sizeof(rfa_options_t); initialize the struct with "
         "rfa_options_init()");
  }
}

void write_options(rfa_options_t* caller, std::size_t struct_size, const rfa_options_t& fields) {
  check_options_size(struct_size, "struct_size");
  const std::size_t known = sizeof(rfa_options_t);
  std::memcpy(caller, &fields, struct_size < known ? struct_size : known);
  if (struct_size > known) std::memset(reinterpret_cast<unsigned char*>(caller) + known, 0, struct_size - known);
  caller->struct_size = struct_size;
}

rfa_options_t read_options(const rfa_options_t* caller, const char* what) {
  if (!caller) fail(RFA_ERROR_INVALID_ARGUMENT, what, " is NULL");
  check_options_size(caller->struct_size, (std::string(what) + "->struct_size").c_str());
  if (caller->version < 1) {
    fail(RFA_ERROR_INVALID_ARGUMENT, what, "->version is ", caller->version,
         ": initialize the struct with rfa_options_init()");
  }
  // A newer header's struct: the fields it appends are zero unless the caller set them
  // (rfa_options_init zeroes them, 0 asking for nothing new), and a field set here would be
  // silently ignored, so it is refused on this rank, before the ranks agree.
  const auto* bytes = reinterpret_cast<const unsigned char*>(caller);
  for (std::size_t i = sizeof(rfa_options_t); i < caller->struct_size; ++i) {
    if (bytes[i] != 0) {
      fail(RFA_ERROR_UNSUPPORTED, what, " sets a field at byte ", i, " of its ", caller->struct_size,
           " bytes, past the ", sizeof(rfa_options_t), " of rfa_options_t in this librfa (", RFA_VERSION_MAJOR, ".",
           RFA_VERSION_MINOR, ".", RFA_VERSION_PATCH,
           "): the program was compiled against a newer rfa.h whose fields this library lacks (run it with that "
           "version's librfa, or leave the new fields as rfa_options_init() sets them), or its struct_size is not "
           "the struct's (initialize the struct with rfa_options_init())");
    }
  }
  rfa_options_t o = default_options();
  const std::size_t n = caller->struct_size < sizeof o ? caller->struct_size : sizeof o;
  std::memcpy(&o, caller, n);
  o.struct_size = sizeof o;
  // The boundaries are read here, where only this rank's own memory is at stake, so that a bad
  // pointer or list is this rank's verdict before the ranks agree on anything.
  require(o.doc_boundary_count >= 0, what, "->doc_boundary_count is ", o.doc_boundary_count,
          "; it must be >= 0 (0: no documents)");
  require(o.doc_boundary_offset_count >= 0, what, "->doc_boundary_offset_count is ", o.doc_boundary_offset_count,
          "; it must be >= 0 (0: one list of documents for every batch entry)");
  // An empty list is NULL with a count of 0: a list given with a count of 0 is a count left
  // unset, which would silently drop the documents (or hide every key of a ranges mask).
  require(o.doc_boundaries == nullptr || o.doc_boundary_count != 0,
          "options.doc_boundaries is set but options.doc_boundary_count is 0: give the number of boundaries "
          "(documents + 1), or leave doc_boundaries NULL for one document");
  require(o.doc_boundary_offsets == nullptr || o.doc_boundary_offset_count != 0,
          "options.doc_boundary_offsets is set but options.doc_boundary_offset_count is 0: give batch + 1, or leave "
          "doc_boundary_offsets NULL for one list serving every batch entry");
  validate_document_lists(o.doc_boundaries, o.doc_boundary_count, o.doc_boundary_offsets, o.doc_boundary_offset_count,
                          o.batch, o.seq_total, "options.doc_boundaries", "options.doc_boundary_offsets");
  // The same for the mask's ranges: each entry read and checked on its own rank. A list beside
  // another mask is refused here too: the ranks agree on the entries, not on the pointer, so a
  // pointer left on one rank alone must be that rank's verdict before they agree.
  validate_mask_ranges(o.mask_ranges, o.mask_range_count, o.seq_total, "options.mask_ranges");
  if (enum_value(o.mask) != RFA_MASK_RANGES && (o.mask_ranges != nullptr || o.mask_range_count != 0)) {
    fail(RFA_ERROR_INVALID_ARGUMENT, "options.mask_ranges holds ", o.mask_range_count,
         " entries but options.mask is not RFA_MASK_RANGES: set the mask to RFA_MASK_RANGES to use them, or leave "
         "mask_ranges NULL with a count of 0");
  }
  require(o.mask_ranges == nullptr || o.mask_range_count != 0,
          "options.mask_ranges is set but options.mask_range_count is 0: give the number of entries, or leave "
          "mask_ranges NULL (with RFA_MASK_RANGES, a mask hiding every key)");
  // The switches each rank reads for itself later: malformed on any rank, every rank fails.
  for (const Env id : {Env::host_amx, Env::host_bf16_dot, Env::mpi_cuda_aware}) require_switch_value(id);
  // Resolved here, on each rank, so that the ranks then agree on what they will do.
  o.check_values = resolve_value_checks(o.check_values);
  o.cuda_kernels = requested_cuda_kernels(o.cuda_kernels);
  o.deterministic = o.deterministic != 0 ? 1 : 0;
  o.attention_sinks = o.attention_sinks != 0 ? 1 : 0;
  // One head dim is said one way, 0, on every rank and in rfa_context_get_options(): options
  // copied from a context and given another head_dim then keep one head dim.
  if (o.value_head_dim == o.head_dim) o.value_head_dim = 0;
  return o;
}

engine::AttentionConfig validate_options(const rfa_options_t& o, int ranks) {
  const int layout = enum_value(o.layout), mask = enum_value(o.mask), dtype = enum_value(o.dtype),
            ring_order = enum_value(o.ring_order), strategy = enum_value(o.strategy);
  require(layout == RFA_LAYOUT_CONTIGUOUS || layout == RFA_LAYOUT_ZIGZAG || layout == RFA_LAYOUT_STRIPE ||
              layout == RFA_LAYOUT_BALANCED,
          "options.layout is ", layout, ", not an rfa_layout_t value");
  require(mask == RFA_MASK_NONE || mask == RFA_MASK_CAUSAL || mask == RFA_MASK_RANGES, "options.mask is ", mask,
          ", not an rfa_mask_t value");
  require(dtype == RFA_DTYPE_FLOAT32 || dtype == RFA_DTYPE_BFLOAT16 || dtype == RFA_DTYPE_FLOAT16, "options.dtype is ",
          dtype, ", not an rfa_dtype_t value");
  require(ring_order >= RFA_RING_ORDER_DEFAULT && ring_order <= RFA_RING_ORDER_FILE, "options.ring_order is ",
          ring_order, ", not an rfa_ring_order_t value");
  const int device = enum_value(o.device), transport = enum_value(o.transport);
  require(device == RFA_DEVICE_HOST || device == RFA_DEVICE_CUDA, "options.device is ", device,
          ", not an rfa_device_t value");
  require(transport >= RFA_TRANSPORT_DEFAULT && transport <= RFA_TRANSPORT_NCCL, "options.transport is ", transport,
          ", not an rfa_transport_t value");
  if (device == RFA_DEVICE_HOST && transport == RFA_TRANSPORT_NCCL) {
    fail(RFA_ERROR_UNSUPPORTED,
         "options.transport is RFA_TRANSPORT_NCCL but options.device is RFA_DEVICE_HOST: "
         "NCCL moves device memory only; host contexts use MPI");
  }
  require(std::isfinite(o.timeout_s), "options.timeout_s is ", o.timeout_s,
          "; it must be finite (0: RFA_TIMEOUT_S or the default, < 0: no deadline)");
  require(strategy >= RFA_STRATEGY_RING && strategy <= RFA_STRATEGY_NEEDED, "options.strategy is ", strategy,
          ", not an rfa_strategy_t value");
  if (strategy == RFA_STRATEGY_AUTO) {
    require(o.ulysses_degree == 0, "options.ulysses_degree is ", o.ulysses_degree,
            " but RFA_STRATEGY_AUTO chooses the degree: leave it 0");
  }
  require(std::isfinite(o.softmax_scale) && o.softmax_scale >= 0.0, "options.softmax_scale is ", o.softmax_scale,
          "; it must be finite and >= 0 (0 means 1/sqrt(head_dim))");
  // The kernels apply the scale in fp32: a value that rounds to 0 there would read as "the
  // default", and one beyond fp32's range as infinity.
  const float scale_fp32 = float(o.softmax_scale);
  require(o.softmax_scale == 0.0 || (scale_fp32 > 0.0f && std::isfinite(scale_fp32)), "options.softmax_scale is ",
          o.softmax_scale, ", which is ", scale_fp32 > 0.0f ? "beyond" : "below", " the range of fp32 (",
          std::numeric_limits<float>::denorm_min(), " .. ", std::numeric_limits<float>::max(),
          ") the kernels apply it in; 0 means 1/sqrt(head_dim)");
  const float softcap_fp32 = float(o.softcap);
  require(o.softcap == 0.0 || (softcap_fp32 > 0.0f && std::isfinite(softcap_fp32)), "options.softcap is ", o.softcap,
          "; it must be 0 (no cap) or a positive value within fp32's range (", std::numeric_limits<float>::denorm_min(),
          " .. ", std::numeric_limits<float>::max(), "), which the kernels apply it in");
  require(o.batch >= 1, "options.batch is ", o.batch, "; it must be >= 1");
  require(o.seq_total >= 1, "options.seq_total is ", o.seq_total, "; it must be >= 1 (the whole sequence length)");
  require(o.heads >= 1, "options.heads is ", o.heads, "; it must be >= 1");
  require(o.kv_heads >= 1, "options.kv_heads is ", o.kv_heads, "; it must be >= 1");
  require(o.heads % o.kv_heads == 0, "options.heads (", o.heads, ") is not a multiple of options.kv_heads (",
          o.kv_heads, ")");
  require(o.head_dim >= 1, "options.head_dim is ", o.head_dim, "; it must be >= 1");
  require(o.value_head_dim >= 0, "options.value_head_dim is ", o.value_head_dim,
          "; it must be >= 0 (0: the same as head_dim)");
  require(o.window >= 0, "options.window is ", o.window,
          "; it must be >= 0 (0: no sliding window; w >= 1: a key is visible only if q_pos - k_pos < w)");
  // The whole sequence's largest tensor (the sharding helpers take it whole) in fp32 bytes,
  // with a factor 2 of headroom for padded lengths and offsets past the end: every size and
  // index rfa computes then fits in 64 bits.
  std::int64_t bytes = 2 * 4;
  const std::int64_t widest = o.head_dim > value_head_dim_of(o) ? o.head_dim : value_head_dim_of(o);
  for (const std::int64_t factor : {o.batch, o.seq_total, o.heads > o.kv_heads ? o.heads : o.kv_heads, widest}) {
    if (__builtin_mul_overflow(bytes, factor, &bytes)) {
      fail(RFA_ERROR_INVALID_ARGUMENT, "options.batch x seq_total x heads x head_dim (", o.batch, " x ", o.seq_total,
           " x ", o.heads, " x ", widest, ") overflows 64-bit sizes: a tensor that large cannot be addressed");
    }
  }
  // Shape rules the engine owns (layout divisibility, supported head dims, what each strategy
  // needs) are checked by it, so the C API cannot drift from what the engines accept. An
  // automatic strategy is checked once chosen (creation chooses only among plans that fit).
  engine::AttentionConfig config = attention_config(o);
  if (strategy != RFA_STRATEGY_AUTO) engine::validate_strategy(strategy_choice(o), config, ranks);
  return config;
}

engine::StrategyChoice strategy_choice(const rfa_options_t& o) {
  engine::StrategyChoice choice;
  switch (o.strategy) {
    case RFA_STRATEGY_RING: choice.kind = engine::StrategyKind::ring; break;
    case RFA_STRATEGY_ULYSSES: choice.kind = engine::StrategyKind::ulysses; break;
    case RFA_STRATEGY_ALLGATHER: choice.kind = engine::StrategyKind::allgather; break;
    case RFA_STRATEGY_HYBRID: choice.kind = engine::StrategyKind::hybrid; break;
    case RFA_STRATEGY_NEEDED: choice.kind = engine::StrategyKind::needed; break;
    case RFA_STRATEGY_AUTO: fail(RFA_ERROR_INTERNAL, "RFA_STRATEGY_AUTO reached the engine unresolved");
  }
  choice.ulysses_degree = o.ulysses_degree;
  return choice;
}

engine::AttentionConfig attention_config(const rfa_options_t& o) {
  engine::AttentionConfig c;
  c.layout = o.layout;
  c.mask = o.mask;
  c.dtype = o.dtype;
  c.softmax_scale = float(o.softmax_scale);
  c.softcap = float(o.softcap);
  c.batch = o.batch;
  c.seq_total = o.seq_total;
  c.heads = o.heads;
  c.kv_heads = o.kv_heads;
  c.head_dim = o.head_dim;
  c.value_dim = o.value_head_dim;  // 0 where it is head_dim (read_options)
  c.device = o.device == RFA_DEVICE_CUDA ? engine::Device::cuda : engine::Device::host;
  c.window = o.window;
  c.cuda_kernels = o.cuda_kernels == RFA_CUDA_KERNELS_CUDNN ? engine::CudaKernels::cudnn : engine::CudaKernels::rfa;
  c.deterministic = o.deterministic != 0;
  if (o.doc_boundary_count > 0 && o.doc_boundaries)
    c.doc_bounds.assign(o.doc_boundaries, o.doc_boundaries + o.doc_boundary_count);
  if (o.doc_boundary_offset_count > 0 && o.doc_boundary_offsets)
    c.doc_offsets.assign(o.doc_boundary_offsets, o.doc_boundary_offsets + o.doc_boundary_offset_count);
  if (enum_value(o.mask) == RFA_MASK_RANGES)
    c.ranges =
        std::make_shared<const MaskRanges>(o.mask_ranges, o.mask_range_count, o.seq_total, "options.mask_ranges");
  return c;
}

}  // namespace capi
}  // namespace rfa

extern "C" RFA_API rfa_result_t rfa_options_init_sized(rfa_options_t* options, size_t struct_size) {
  return rfa::capi::guard(__func__, [&] {
    if (!options) rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "options is NULL");
    rfa::capi::write_options(options, struct_size, rfa::capi::default_options());
    return RFA_SUCCESS;
  });
}
