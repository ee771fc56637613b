// SPDX-License-Identifier: BSD-3-Clause
// What the build's flags turn on, as constant data: this file is compiled like the rest of the
// core (-march=native by default), while the check that reads the table is compiled for the
// baseline (core/build_isa.hpp). Nothing here runs: the table is constant-initialized.
#include "core/build_isa.hpp"

namespace rfa {

const BuildIsaTarget kBuildIsaTargets[] = {
#if defined(__x86_64__) || defined(__i386__)
#if defined(__SSE3__)
    {"SSE3", "sse3"},
#endif
#if defined(__SSSE3__)
    {"SSSE3", "ssse3"},
#endif
#if defined(__SSE4_1__)
    {"SSE4.1", "sse4.1"},
#endif
#if defined(__SSE4_2__)
    {"SSE4.2", "sse4.2"},
#endif
#if defined(__POPCNT__)
    {"POPCNT", "popcnt"},
#endif
#if defined(__AVX__)
    {"AVX", "avx"},
#endif
#if defined(__AVX2__)
    {"AVX2", "avx2"},
#endif
#if defined(__FMA__)
    {"FMA", "fma"},
#endif
#if defined(__F16C__)
    {"F16C", "f16c"},
#endif
#if defined(__BMI__)
    {"BMI1", "bmi"},
#endif
#if defined(__BMI2__)
    {"BMI2", "bmi2"},
#endif
#if defined(__MOVBE__)
    {"MOVBE", "movbe"},
#endif
#if defined(__LZCNT__)
    // Not an illegal instruction where it is missing: lzcnt then runs as bsr and returns another
    // count (GCC writes it for __builtin_clz, which the standard library's sorts use).
    {"LZCNT", "lzcnt"},
#endif
#if defined(__AVX512F__)
    {"AVX-512F", "avx512f"},
#endif
#if defined(__AVX512CD__)
    {"AVX-512CD", "avx512cd"},
#endif
#if defined(__AVX512BW__)
    {"AVX-512BW", "avx512bw"},
#endif
#if defined(__AVX512DQ__)
    {"AVX-512DQ", "avx512dq"},
#endif
#if defined(__AVX512VL__)
    {"AVX-512VL", "avx512vl"},
#endif
#if defined(__AVX512VBMI__)
    {"AVX-512VBMI", "avx512vbmi"},
#endif
#if defined(__AVX512VBMI2__)
    {"AVX-512VBMI2", "avx512vbmi2"},
#endif
#if defined(__AVX512VNNI__)
    {"AVX-512VNNI", "avx512vnni"},
#endif
#if defined(__AVX512IFMA__)
    {"AVX-512IFMA", "avx512ifma"},
#endif
#if defined(__AVX512BITALG__)
    {"AVX-512BITALG", "avx512bitalg"},
#endif
#if defined(__AVX512VPOPCNTDQ__)
    {"AVX-512VPOPCNTDQ", "avx512vpopcntdq"},
#endif
#if defined(__AVX512FP16__)
    {"AVX-512FP16", "avx512fp16"},
#endif
#if defined(__AVX512BF16__)
    {"AVX512-BF16", "avx512bf16"},
#endif
#if defined(__AVXVNNI__)
    {"AVX-VNNI", "avxvnni"},
#endif
#if defined(__GFNI__)
    {"GFNI", "gfni"},
#endif
#if defined(__VAES__)
    {"VAES", "vaes"},
#endif
#if defined(__VPCLMULQDQ__)
    {"VPCLMULQDQ", "vpclmulqdq"},
#endif
#endif
    {nullptr, nullptr},
};

}  // namespace rfa
