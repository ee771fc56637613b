// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer harness over the C API's argument checks: each input is decoded into options
// (every field, enums in and out of range, sizes from 0 to overflowing, scales NaN, infinite,
// negative), a context is created on MPI_COMM_SELF (through its C handle or, as Fortran does,
// its MPI_Fint), and the entry points are called with buffers that are valid, NULL, misaligned
// or aliasing, and with fuzzed counts, heads, head dims and capacities; the mask builders and
// the calls without a context get sizes up to 2^63 - 1. Every entry point but rfa_finalize
// (which would end the process's Kokkos) is called.
// Whatever the input, every call must return an rfa code, with a message when it fails; a
// crash, a sanitizer report, a leak or a broken contract (abort below) is a finding.
// Shapes that pass validation are capped small, so a run makes thousands of calls a second.
#include <fuzzer/FuzzedDataProvider.h>
#include <mpi.h>
#include <sanitizer/lsan_interface.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "c_entry_points.h"
#include "rfa/rfa.h"
#include "rfa/rfa_mpi.h"

namespace {

[[noreturn]] void broken(const char* call, rfa_result_t code, const char* why) {
  std::fprintf(stderr, "contract broken: %s returned %d: %s (message: \"%s\")\n", call, int(code), why,
               rfa_get_last_error_message());
  std::abort();
}

// A failure must come with a message; success must leave none; the code must be one of rfa's.
void check(const char* call, rfa_result_t code) {
  if (int(code) < int(RFA_SUCCESS) || int(code) > int(RFA_ERROR_NONFINITE)) broken(call, code, "not an rfa_result_t");
  if (code == RFA_ERROR_INTERNAL) broken(call, code, "an internal error is a bug in rfa");
  const char* message = rfa_get_last_error_message();
  if (!message) broken(call, code, "NULL message");
  if (code != RFA_SUCCESS && message[0] == '\0') broken(call, code, "failure without a message");
  if (code == RFA_SUCCESS && message[0] != '\0') broken(call, code, "success left a message");
  if (std::strcmp(rfa_get_error_string(code), "unknown rfa result code") == 0) broken(call, code, "no text");
}

std::int64_t fuzzed_size(FuzzedDataProvider& in) {
  static const std::int64_t special[] = {0,
                                         -1,
                                         1,
                                         2,
                                         3,
                                         7,
                                         8,
                                         16,
                                         24,
                                         64,
                                         256,
                                         264,
                                         std::int64_t(1) << 31,
                                         std::int64_t(1) << 32,
                                         std::int64_t(1) << 40,
                                         std::numeric_limits<std::int64_t>::max(),
                                         std::numeric_limits<std::int64_t>::min()};
  if (in.ConsumeBool()) return in.PickValueInArray(special);
  return in.ConsumeIntegralInRange<std::int64_t>(-4, 70);
}

double fuzzed_real(FuzzedDataProvider& in) {
  static const double special[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.125,
                                   1e-30,
                                   -1e-30,
                                   1e300,
                                   -1e300,
                                   std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN(),
                                   std::numeric_limits<double>::denorm_min()};
  return in.ConsumeBool() ? in.PickValueInArray(special) : in.ConsumeFloatingPointInRange(-4.0, 4.0);
}

// Enums in and out of range, as ints (c_entry_points.h says why).
int fuzzed_enum(FuzzedDataProvider& in) { return in.ConsumeIntegralInRange<int>(-2, 6); }

rfa_options_t fuzzed_options(FuzzedDataProvider& in) {
  rfa_options_t o;
  if (in.ConsumeBool()) {
    check("rfa_options_init", rfa_options_init(&o));
  } else {  // a caller compiled against another struct size
    std::memset(&o, 0, sizeof o);
    const std::size_t size = in.ConsumeIntegralInRange<std::size_t>(0, sizeof o);
    check("rfa_options_init_sized", rfa_options_init_sized(&o, size));
  }
  if (in.ConsumeBool()) o.version = in.ConsumeIntegralInRange<std::int32_t>(-1, 3);
  int enums[FUZZ_ENUM_FIELDS];
  for (int& e : enums) e = fuzzed_enum(in);
  unsigned which = in.ConsumeIntegral<std::uint8_t>() & ~8u;
  // The topology orders cost milliseconds each (hwloc): mostly the identity, sometimes any.
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    which |= 8u;
  } else {
    o.ring_order = RFA_RING_ORDER_IDENTITY;
  }
  fuzz_set_enum_fields(&o, enums, which);
  if (in.ConsumeBool()) o.softmax_scale = fuzzed_real(in);
  o.batch = in.ConsumeBool() ? fuzzed_size(in) : 1;
  o.seq_total = fuzzed_size(in);
  o.heads = in.ConsumeBool() ? fuzzed_size(in) : 2;
  o.kv_heads = in.ConsumeBool() ? fuzzed_size(in) : 1;
  o.head_dim = in.ConsumeBool() ? fuzzed_size(in) : 8;
  if (in.ConsumeBool()) o.timeout_s = fuzzed_real(in);
  if (in.ConsumeBool()) o.ulysses_degree = in.ConsumeIntegralInRange<std::int32_t>(-2, 4);
  if (in.ConsumeBool()) o.window = in.ConsumeIntegralInRange<std::int64_t>(-2, 100);
  if (in.ConsumeBool()) o.attention_sinks = in.ConsumeIntegralInRange<std::int32_t>(-1, 2);
  if (in.ConsumeBool()) o.softcap = fuzzed_real(in);
  if (in.ConsumeBool()) {
    // Document boundaries in valid memory (a pointer the harness owns, or NULL), with any
    // values and any count up to what the array holds: the checks, not the harness, refuse them.
    static std::int64_t bounds[8];
    const int n = in.ConsumeIntegralInRange<int>(0, 8);
    for (int i = 0; i < n; ++i) bounds[i] = in.ConsumeIntegralInRange<std::int64_t>(-2, 80);
    o.doc_boundaries = in.ConsumeBool() ? bounds : nullptr;
    o.doc_boundary_count = in.ConsumeIntegralInRange<std::int64_t>(-1, n);
    if (in.ConsumeBool()) {  // per-sequence documents: offsets into them, likewise
      static std::int64_t offsets[5];
      const int m = in.ConsumeIntegralInRange<int>(0, 5);
      for (int i = 0; i < m; ++i) offsets[i] = in.ConsumeIntegralInRange<std::int64_t>(-1, 9);
      o.doc_boundary_offsets = in.ConsumeBool() ? offsets : nullptr;
      o.doc_boundary_offset_count = in.ConsumeIntegralInRange<std::int64_t>(-1, m);
    }
  }
  if (in.ConsumeBool()) {
    // Mask ranges likewise: any bounds, kinds and band offsets, in memory the harness owns.
    static rfa_mask_range_t ranges[4];
    const int n = in.ConsumeIntegralInRange<int>(0, 4);
    for (int i = 0; i < n; ++i) {
      for (std::int64_t* v : {&ranges[i].q_begin, &ranges[i].q_end, &ranges[i].k_begin, &ranges[i].k_end})
        *v = in.ConsumeIntegralInRange<std::int64_t>(-2, 80);
      ranges[i].band_lo = in.ConsumeIntegralInRange<std::int64_t>(-100, 100);
      ranges[i].band_hi = in.ConsumeIntegralInRange<std::int64_t>(-100, 100);
      const int kind = in.ConsumeIntegralInRange<int>(-1, 4);  // through its bytes: C may store any int
      std::memcpy(&ranges[i].kind, &kind, sizeof kind);
    }
    o.mask_ranges = in.ConsumeBool() ? ranges : nullptr;
    o.mask_range_count = in.ConsumeIntegralInRange<std::int64_t>(-1, n);
  }
  if (in.ConsumeBool()) o.value_head_dim = in.ConsumeBool() ? fuzzed_size(in) : 16;
  return o;
}

// Storage for one call's tensors, and pointers into it that are valid, NULL, misaligned or
// aliasing another argument, as the input says. Every buffer is as large as the largest
// argument: the C API cannot know how large a caller's buffer is, so a buffer too small for
// its argument would be the harness's bug, not a finding.
class Arguments {
 public:
  explicit Arguments(std::int64_t largest_bytes) {
    for (auto& s : storage_) s.assign(std::size_t(largest_bytes) / sizeof(float) + 16, 0.0f);
  }
  void* pick(FuzzedDataProvider& in, int i) {
    switch (in.ConsumeIntegralInRange<int>(0, 7)) {
      case 0: return nullptr;
      case 1: return reinterpret_cast<char*>(storage_[i].data()) + in.ConsumeIntegralInRange<int>(1, 3);
      case 2: return storage_[in.ConsumeIntegralInRange<int>(0, kCount - 1)].data();  // maybe another's
      default: return storage_[i].data();
    }
  }
  static constexpr int kCount = 11;  // q k v out dout lse dq dk dv sinks dsinks

 private:
  std::vector<float> storage_[kCount];  // floats: aligned for every dtype
};

void call_on_context(rfa_context_t ctx, const rfa_options_t& o, FuzzedDataProvider& in) {
  std::int64_t L = 0;
  check("rfa_context_get_local_seq", rfa_context_get_local_seq(ctx, &L));
  int position = -1, ranks = 0;
  check("rfa_context_get_position", rfa_context_get_position(ctx, &position));
  check("rfa_context_get_ranks", rfa_context_get_ranks(ctx, &ranks));
  if (position != 0 || ranks != 1 || L < 1) broken("rfa_context_get_*", RFA_SUCCESS, "wrong one-rank context");
  rfa_options_t back;
  rfa_options_init(&back);
  check("rfa_context_get_options", rfa_context_get_options(ctx, in.ConsumeBool() ? &back : nullptr));
  std::vector<std::int64_t> positions(static_cast<std::size_t>(L));
  check("rfa_context_get_local_positions",
        rfa_context_get_local_positions(ctx, in.ConsumeBool() ? positions.data() : nullptr,
                                        in.ConsumeIntegralInRange<std::int64_t>(-1, L)));

  // Sizes as the context sees them (validated and capped at creation by this harness).
  const std::int64_t elem = o.dtype == RFA_DTYPE_FLOAT32 ? 4 : 2;
  const std::int64_t widest = std::max(o.head_dim, o.value_head_dim);  // V's head dim may be the larger
  const std::int64_t q = o.batch * L * o.heads * widest * elem, kv = o.batch * L * o.kv_heads * widest * elem;
  Arguments a(std::max({q, kv, o.batch * o.heads * L * 4}));
  // Either call on either kind of context (with sinks or not); the sinks' storage holds zeros.
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      check("rfa_forward", rfa_forward(ctx, a.pick(in, 0), a.pick(in, 1), a.pick(in, 2), a.pick(in, 3),
                                       static_cast<float*>(a.pick(in, 5))));
      break;
    case 1:
      check("rfa_backward",
            rfa_backward(ctx, a.pick(in, 0), a.pick(in, 1), a.pick(in, 2), a.pick(in, 3), a.pick(in, 4),
                         static_cast<const float*>(a.pick(in, 5)), a.pick(in, 6), a.pick(in, 7), a.pick(in, 8)));
      break;
    case 2:
      check("rfa_forward_with_sinks", rfa_forward_with_sinks(ctx, a.pick(in, 0), a.pick(in, 1), a.pick(in, 2),
                                                             static_cast<const float*>(a.pick(in, 9)), a.pick(in, 3),
                                                             static_cast<float*>(a.pick(in, 5))));
      break;
    default:
      check("rfa_backward_with_sinks",
            rfa_backward_with_sinks(ctx, a.pick(in, 0), a.pick(in, 1), a.pick(in, 2), a.pick(in, 3), a.pick(in, 4),
                                    static_cast<const float*>(a.pick(in, 5)), static_cast<const float*>(a.pick(in, 9)),
                                    a.pick(in, 6), a.pick(in, 7), a.pick(in, 8), static_cast<float*>(a.pick(in, 10))));
  }
  const std::int64_t heads = in.ConsumeBool() ? o.heads : in.ConsumeIntegralInRange<std::int64_t>(-2, 4);
  const std::int64_t global_bytes = heads > 0 ? o.batch * o.seq_total * heads * o.head_dim * elem : 0;
  std::vector<float> global(std::size_t(global_bytes > 0 ? global_bytes : 0) + 4);
  Arguments local(o.batch * L * 4 * o.head_dim * elem);  // heads above are at most 4
  check("rfa_scatter_bshd",
        rfa_scatter_bshd(ctx, heads, in.ConsumeBool() ? global.data() : nullptr, local.pick(in, 0)));
  check("rfa_gather_bshd", rfa_gather_bshd(ctx, heads, local.pick(in, 0), in.ConsumeBool() ? global.data() : nullptr));
  check("rfa_allgather_bshd",
        rfa_allgather_bshd(ctx, heads, local.pick(in, 0), in.ConsumeBool() ? global.data() : nullptr));
  // The same with a head dim of the call's own (V-shaped tensors), up to the widest the buffers hold.
  const std::int64_t dim = in.ConsumeBool() ? o.head_dim : in.ConsumeIntegralInRange<std::int64_t>(-2, o.head_dim);
  check("rfa_scatter_bshd_dim",
        rfa_scatter_bshd_dim(ctx, heads, dim, in.ConsumeBool() ? global.data() : nullptr, local.pick(in, 1)));
  check("rfa_gather_bshd_dim",
        rfa_gather_bshd_dim(ctx, heads, dim, local.pick(in, 1), in.ConsumeBool() ? global.data() : nullptr));
  check("rfa_allgather_bshd_dim",
        rfa_allgather_bshd_dim(ctx, heads, dim, local.pick(in, 1), in.ConsumeBool() ? global.data() : nullptr));
  // lse: [B][H][S] globally, [B][H][L] here, fp32.
  std::vector<float> global_lse(std::size_t(o.batch * o.heads * o.seq_total) + 4);
  check("rfa_scatter_lse",
        rfa_scatter_lse(ctx, in.ConsumeBool() ? global_lse.data() : nullptr, static_cast<float*>(a.pick(in, 5))));
  check("rfa_gather_lse",
        rfa_gather_lse(ctx, static_cast<const float*>(a.pick(in, 5)), in.ConsumeBool() ? global_lse.data() : nullptr));
  char plan[320];
  const std::int64_t capacity = in.ConsumeIntegralInRange<std::int64_t>(-1, 300);
  const bool to_plan = in.ConsumeBool();
  std::memset(plan, 'x', sizeof plan);
  const rfa_result_t planned = rfa_context_get_plan(ctx, to_plan ? plan : nullptr, capacity);
  check("rfa_context_get_plan", planned);
  if (planned == RFA_SUCCESS &&
      (capacity < 1 || std::memchr(plan, '\0', std::size_t(capacity)) == nullptr || plan[capacity] != 'x'))
    broken("rfa_context_get_plan", planned, "the text is not terminated inside its capacity, or spills past it");
  check("rfa_context_synchronize", rfa_context_synchronize(ctx));
  std::int64_t released = -1;
  check("rfa_context_release_workspace", rfa_context_release_workspace(ctx, in.ConsumeBool() ? &released : nullptr));
  check("rfa_context_set_stream", rfa_context_set_stream(ctx, nullptr));
}

// The mask builders with any sizes: each answers at once (no loop over a huge size, no list of
// billions) and never writes past the room it is given; a success with room means the list fit.
void call_builders(FuzzedDataProvider& in) {
  constexpr std::int64_t kRoom = 64;
  static rfa_mask_range_t room[kRoom + 1];
  std::memset(&room[kRoom], 0x5a, sizeof room[kRoom]);
  const std::int64_t capacity = in.ConsumeIntegralInRange<std::int64_t>(-1, kRoom);
  rfa_mask_range_t* ranges = in.ConsumeBool() ? room : nullptr;
  std::int64_t count = -1;
  std::int64_t* count_out = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : &count;
  const char* name = "";
  rfa_result_t rc = RFA_SUCCESS;
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
      name = "rfa_mask_ranges_causal";
      rc = rfa_mask_ranges_causal(fuzzed_size(in), ranges, capacity, count_out);
      break;
    case 1: {
      name = "rfa_mask_ranges_sliding_window";
      const std::int64_t seq = fuzzed_size(in), window = fuzzed_size(in);
      rc = rfa_mask_ranges_sliding_window(seq, window, in.ConsumeIntegralInRange<std::int32_t>(-1, 2), ranges, capacity,
                                          count_out);
      break;
    }
    case 2: {
      name = "rfa_mask_ranges_documents";
      static std::int64_t bounds[8];
      const int n = in.ConsumeIntegralInRange<int>(0, 8);
      for (int i = 0; i < n; ++i)
        bounds[i] = in.ConsumeBool() ? fuzzed_size(in) : in.ConsumeIntegralInRange<int>(-1, 90);
      const std::int64_t bound_count = in.ConsumeIntegralInRange<std::int64_t>(-1, n);
      rc = rfa_mask_ranges_documents(in.ConsumeBool() ? bounds : nullptr, bound_count,
                                     in.ConsumeIntegralInRange<std::int32_t>(-1, 2), ranges, capacity, count_out);
      break;
    }
    case 3: {
      name = "rfa_mask_ranges_prefix_lm";
      const std::int64_t seq = fuzzed_size(in), prefix = fuzzed_size(in);
      rc = rfa_mask_ranges_prefix_lm(seq, prefix, ranges, capacity, count_out);
      break;
    }
    case 4: {
      name = "rfa_mask_ranges_block_causal";
      const std::int64_t seq = fuzzed_size(in), block = fuzzed_size(in);
      rc = rfa_mask_ranges_block_causal(seq, block, ranges, capacity, count_out);
      break;
    }
    default: {
      name = "rfa_mask_ranges_grid_neighbourhood";
      const std::int64_t nx = fuzzed_size(in), ny = fuzzed_size(in), nz = fuzzed_size(in), radius = fuzzed_size(in);
      rc = rfa_mask_ranges_grid_neighbourhood(nx, ny, nz, radius, ranges, capacity, count_out);
    }
  }
  check(name, rc);
  unsigned char untouched[sizeof room[kRoom]];
  std::memset(untouched, 0x5a, sizeof untouched);
  if (std::memcmp(&room[kRoom], untouched, sizeof untouched) != 0) broken(name, rc, "wrote past the room given");
  if (rc == RFA_SUCCESS && (count < 0 || (ranges != nullptr && count > capacity)))
    broken(name, rc, "succeeded with a count below 0 or above the room given");
}

void call_without_context(FuzzedDataProvider& in) {
  const int layout = fuzzed_enum(in);
  const std::int64_t seq = fuzzed_size(in);
  const int ranks = in.ConsumeIntegralInRange<int>(-1, 9);
  std::int64_t L = 0;
  check("rfa_layout_local_seq", fuzz_layout_local_seq(layout, seq, ranks, in.ConsumeBool() ? &L : nullptr));
  std::vector<std::int64_t> positions(64);
  const std::int64_t capacity = in.ConsumeIntegralInRange<std::int64_t>(-1, 64);
  if (seq <= 64)  // the helper writes up to `capacity` positions; keep them inside the vector
    check("rfa_layout_positions", fuzz_layout_positions(layout, seq, ranks, in.ConsumeIntegralInRange<int>(-1, 9),
                                                        in.ConsumeBool() ? positions.data() : nullptr, capacity));
  check("rfa_check_version_major", rfa_check_version_major(in.ConsumeIntegralInRange<int>(-1, 3)));
  // A handle that never came from rfa_context_create must be refused, not dereferenced.
  alignas(64) static unsigned char not_a_context[256];
  std::int64_t ignored = 0;
  check("rfa_context_get_local_seq(made-up handle)",
        rfa_context_get_local_seq(
            reinterpret_cast<rfa_context_t>(not_a_context + 8 * in.ConsumeIntegral<std::uint8_t>() % 256), &ignored));
  if (fuzz_error_string(in.ConsumeIntegral<int>()) == nullptr) broken("rfa_get_error_string", RFA_SUCCESS, "NULL");
}

// The calls added to the harness after its seed corpus was made take their bytes last, so that
// each seed still decodes to the options and calls it was saved for.
void call_last(FuzzedDataProvider& in) {
  int major = -1, minor = -1, patch = -1;
  check("rfa_get_version", rfa_get_version(in.ConsumeBool() ? &major : nullptr, in.ConsumeBool() ? &minor : nullptr,
                                           in.ConsumeBool() ? &patch : nullptr));
  // A binding's own error: returned as given, its message (NULL: none) recorded for a failure.
  const rfa_result_t reported = static_cast<rfa_result_t>(in.ConsumeIntegralInRange<int>(0, int(RFA_ERROR_NONFINITE)));
  const bool with_message = in.ConsumeBool();
  if (rfa_report_binding_error(reported, with_message ? "a binding's message" : nullptr) != reported)
    broken("rfa_report_binding_error", reported, "did not return the code it was given");
  if (reported != RFA_SUCCESS &&
      std::strcmp(rfa_get_last_error_message(), with_message ? "a binding's message" : "") != 0)
    broken("rfa_report_binding_error", reported, "did not record the message it was given");
  call_builders(in);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // Open MPI, PMIx and hwloc keep what they allocate here until MPI_Finalize, which a fuzzer
  // never reaches: not rfa's leaks, so not counted. Everything after is.
  __lsan_disable();
  MPI_Init(argc, argv);
  __lsan_enable();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  call_without_context(in);
  const rfa_options_t o = fuzzed_options(in);
  // Creation validates everything; only tiny problems go on to run attention.
  const bool small = o.batch >= 1 && o.batch <= 2 && o.seq_total >= 1 && o.seq_total <= 70 && o.heads >= 1 &&
                     o.heads <= 4 && o.kv_heads >= 1 && o.head_dim >= 1 && o.head_dim <= 64 && o.value_head_dim <= 64;
  rfa_options_t create = o;
  rfa_context_t ctx = nullptr;
  const MPI_Comm comm = in.ConsumeBool() ? MPI_COMM_SELF : MPI_COMM_NULL;
  const rfa_options_t* options = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : &create;
  rfa_context_t* out = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : &ctx;
  // A quarter of the time as a Fortran caller would: the communicator's MPI_Fint handle. Decided
  // by the input's first byte (every other value comes from its end), so that the seeds made
  // before this choice still decode to their options and calls.
  const std::vector<std::uint8_t> front = in.ConsumeBytes<std::uint8_t>(1);
  const bool fint = !front.empty() && front[0] % 4 == 1;
  const rfa_result_t rc =
      fint ? rfa_context_create_fint(MPI_Comm_c2f(comm), options, out) : rfa_context_create(comm, options, out);
  check(fint ? "rfa_context_create_fint" : "rfa_context_create", rc);
  if (rc != RFA_SUCCESS) {
    if (ctx != nullptr) broken("rfa_context_create", rc, "failed but left a context");
  } else {
    if (small) call_on_context(ctx, o, in);
    check("rfa_context_destroy", rfa_context_destroy(ctx));
  }
  call_last(in);
  return 0;
}
