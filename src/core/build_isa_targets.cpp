// SPDX-License-Identifier: BSD-3-Clause
// What the build's flags turn on, as constant data: this file is compiled like the rest of the
// core (-march=native by default), while the check that reads the table is compiled for the
// baseline (core/build_isa.hpp). Nothing here runs: the table is constant-initialized.
#include "core/build_isa.hpp"

namespace rfa {

const BuildIsaTarget kBuildIsaTargets[] = {
#if defined(__x86_64__) || defined(__i386__)
#if defined(__AVX2__)
    {"AVX2", "avx2"},
#endif
#if defined(__FMA__)
    {"FMA", "fma"},
#endif
#if defined(__AVX512F__)
    {"AVX-512F", "avx512f"},
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
#if defined(__AVX512BF16__)
    {"AVX512-BF16", "avx512bf16"},
#endif
#endif
    {nullptr, nullptr},
};

}  // namespace rfa
