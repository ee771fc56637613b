// SPDX-License-Identifier: BSD-3-Clause
// The caller's floating-point environment (capi/firewall.hpp, HeldFloatingPointEnvironment), on
// 1-2 ranks: a program that traps invalid operations, division by zero and overflow (as
// gfortran's -ffpe-trap=invalid,zero,overflow does) runs every call without a SIGFPE; under a
// directed rounding mode, or with subnormals flushed (MXCSR's FTZ and DAZ, as -ffast-math sets
// them), the results are bitwise those of round-to-nearest; after each call the program finds
// its rounding mode, its traps, its flush bits and its exception flags as it left them (none of
// rfa's own, such as the invalid flag of -inf - -inf, left raised). The variants whose
// kernels meet -inf scores (masks, windows, sinks) and the ring's merges of far-apart blocks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cfenv>
#include <cstring>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include <string>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

constexpr int kTraps = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW;

struct Case {
  const char* name;
  rfa_strategy_t strategy;
  rfa_dtype_t dtype;
  rfa_mask_t mask;
  int64_t window;
  bool sinks;
  double softcap;
};

/// One run's results: out, lse, dq, dk, dv and the sinks' gradient, as bytes.
struct Results {
  std::vector<unsigned char> bytes;
};

/// A program's floating-point environment: its rounding mode, its traps and its flags.
struct ProgramEnvironment {
  int rounding;
  int traps;
  int flags;
  unsigned flush = 0;  ///< MXCSR's flush-to-zero and denormals-are-zero bits (x86; -ffast-math sets both)
};

constexpr unsigned kFlushBits = 0x8040u;  // MXCSR: FTZ (0x8000), DAZ (0x0040)

unsigned flush_bits() {
#if defined(__x86_64__)
  return _mm_getcsr() & kFlushBits;
#else
  return 0;
#endif
}

ProgramEnvironment observed() { return {fegetround(), fegetexcept(), fetestexcept(FE_ALL_EXCEPT), flush_bits()}; }

/// Sets the program's environment: clears every flag and trap, then sets these.
void set_program_environment(const ProgramEnvironment& e) {
  fedisableexcept(FE_ALL_EXCEPT);
  feclearexcept(FE_ALL_EXCEPT);
  fesetround(e.rounding);
  if (e.flags) feraiseexcept(e.flags);
  if (e.traps) feenableexcept(e.traps);
#if defined(__x86_64__)
  _mm_setcsr((_mm_getcsr() & ~kFlushBits) | e.flush);
#endif
}

void expect_environment(const ProgramEnvironment& want, const char* after) {
  const ProgramEnvironment got = observed();
  EXPECT_EQ(got.rounding, want.rounding) << "rounding mode after " << after;
  EXPECT_EQ(got.traps, want.traps) << "traps after " << after;
  EXPECT_EQ(got.flags, want.flags) << "exception flags after " << after;
  EXPECT_EQ(got.flush, want.flush) << "flush-to-zero and denormals-are-zero after " << after;
}

void append(Results& r, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  r.bytes.insert(r.bytes.end(), p, p + bytes);
}

/// Creates, runs a forward and a backward and destroys a context in the program environment
/// `env`, checked after each call; inputs of amplitude `amplitude` (large ones put the blocks'
/// lse far apart, so that the ring's merge weighs a block at e^-100 and less).
Results run(const Case& c, const ProgramEnvironment& env, float amplitude) {
  rfa_options_t o = variant_options(c.strategy, RFA_LAYOUT_ZIGZAG, c.dtype, c.mask, 6, 16);
  o.window = c.window;
  o.attention_sinks = c.sinks ? 1 : 0;
  o.softcap = c.softcap;
  o.softmax_scale = 1.0;
  // The inputs, made in the default environment (a directed rounding would round them otherwise).
  const int P = world_size();
  const auto L = std::size_t(o.seq_total / P);
  const auto qn = std::size_t(o.batch) * L * std::size_t(o.heads * o.head_dim);
  const auto kvn = std::size_t(o.batch) * L * std::size_t(o.kv_heads * o.head_dim);
  auto stored = [&](std::size_t n, unsigned seed) {
    Stored t(c.dtype, n);
    const std::vector<double> v = random_values(n, seed + 10u * unsigned(world_rank()));
    for (std::size_t i = 0; i < n; ++i) t.set(i, float(v[i]) * amplitude);
    return t;
  };
  const Stored q = stored(qn, 3), k = stored(kvn, 5), v = stored(kvn, 7), dout = stored(qn, 9);
  Stored out(c.dtype, qn), dq(c.dtype, qn), dk(c.dtype, kvn), dv(c.dtype, kvn);
  std::vector<float> lse(std::size_t(o.batch * o.heads) * L), sinks(std::size_t(o.heads), 0.5f),
      dsinks(std::size_t(o.heads));

  set_program_environment(env);
  Results r;
  rfa_context_t ctx = nullptr;
  const rfa_result_t created = rfa_context_create(MPI_COMM_WORLD, &o, &ctx);
  expect_environment(env, "rfa_context_create");
  EXPECT_EQ(int(created), int(RFA_SUCCESS)) << rfa_get_last_error_message();
  if (created != RFA_SUCCESS) return r;
  int64_t local = 0;
  EXPECT_EQ(int(rfa_context_get_local_seq(ctx, &local)), int(RFA_SUCCESS));
  expect_environment(env, "rfa_context_get_local_seq");
  EXPECT_EQ(std::size_t(local), L);
  const rfa_result_t forward =
      c.sinks ? rfa_forward_with_sinks(ctx, q.data(), k.data(), v.data(), sinks.data(), out.data(), lse.data())
              : rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data());
  expect_environment(env, "rfa_forward");
  EXPECT_EQ(int(forward), int(RFA_SUCCESS)) << rfa_get_last_error_message();
  const rfa_result_t backward =
      c.sinks ? rfa_backward_with_sinks(ctx, q.data(), k.data(), v.data(), out.data(), dout.data(), lse.data(),
                                        sinks.data(), dq.data(), dk.data(), dv.data(), dsinks.data())
              : rfa_backward(ctx, q.data(), k.data(), v.data(), out.data(), dout.data(), lse.data(), dq.data(),
                             dk.data(), dv.data());
  expect_environment(env, "rfa_backward");
  EXPECT_EQ(int(backward), int(RFA_SUCCESS)) << rfa_get_last_error_message();
  EXPECT_EQ(int(rfa_context_destroy(ctx)), int(RFA_SUCCESS));
  expect_environment(env, "rfa_context_destroy");
  set_program_environment({FE_TONEAREST, 0, 0});
  const std::size_t element = c.dtype == RFA_DTYPE_FLOAT32 ? 4 : 2;
  append(r, out.data(), qn * element);
  append(r, lse.data(), lse.size() * sizeof(float));
  append(r, dq.data(), qn * element);
  append(r, dk.data(), kvn * element);
  append(r, dv.data(), kvn * element);
  append(r, dsinks.data(), dsinks.size() * sizeof(float));
  return r;
}

class FloatingPointEnvironment : public ::testing::TestWithParam<Case> {
 protected:
  void TearDown() override { set_program_environment({FE_TONEAREST, 0, 0}); }
};

TEST_P(FloatingPointEnvironment, TrapsRoundingAndFlagsAreTheProgramsAndChangeNothing) {
  const Case c = GetParam();
  for (const float amplitude : {1.0f, 40.0f}) {
    SCOPED_TRACE("amplitude " + std::to_string(amplitude));
    const Results nearest = run(c, {FE_TONEAREST, 0, 0}, amplitude);
    ASSERT_FALSE(nearest.bytes.empty());
    struct Mode {
      int rounding;
      const char* name;
      unsigned flush = 0;
    };
    for (const Mode mode :
         {Mode{FE_TONEAREST, "to nearest"}, Mode{FE_UPWARD, "upward"}, Mode{FE_DOWNWARD, "downward"},
          Mode{FE_TOWARDZERO, "toward zero"}, Mode{FE_TONEAREST, "to nearest, subnormals flushed", kFlushBits}}) {
      SCOPED_TRACE(std::string("rounding ") + mode.name + ", invalid, division by zero and overflow trapped");
      // The program's own inexact flag, raised before the calls, must be there after them.
      const Results trapped = run(c, {mode.rounding, kTraps, FE_INEXACT, mode.flush}, amplitude);
      EXPECT_TRUE(trapped.bytes == nearest.bytes) << "results differ from round-to-nearest's";
    }
  }
}

const Case kCases[] = {
    {"ring_fp32_causal", RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0, false, 0.0},
    {"ring_fp32_full", RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_NONE, 0, false, 0.0},
    {"ring_bf16_causal", RFA_STRATEGY_RING, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 0, false, 0.0},
    {"ring_fp16_window", RFA_STRATEGY_RING, RFA_DTYPE_FLOAT16, RFA_MASK_CAUSAL, 5, false, 0.0},
    {"ring_fp32_sinks_softcap", RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0, true, 30.0},
    {"ulysses_bf16_causal", RFA_STRATEGY_ULYSSES, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 0, false, 0.0},
    {"allgather_fp32_causal", RFA_STRATEGY_ALLGATHER, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0, false, 0.0},
};

INSTANTIATE_TEST_SUITE_P(Variants, FloatingPointEnvironment, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
