// SPDX-License-Identifier: BSD-3-Clause
// Lets a header of plain device code (kernels_cuda/src/attention_mask.cuh: integer logic, loads
// through __ldg, min; row_epilogue.cuh and score_cap.cuh: fp32 math) compile as host C++, so
// that its logic is tested on any machine, with the sanitizers too, instead of only on a lent
// GPU. CUDA's qualifiers become nothing (__forceinline__: inline), __ldg a plain load and
// __fdividef a division. Include it before the device header, in a host test only.
#pragma once

#ifdef __CUDACC__
#error "device_code_on_host.hpp stands in for CUDA's qualifiers in host compilers; nvcc has its own"
#endif

#include <algorithm>

// The names are CUDA's own (reserved in C++): they are what the device header spells. CUDA's
// runtime header, where a test includes it first, defines the first two as nothing for host
// compilers too, and __forceinline__ as an always-inline.
#ifndef __host__
#define __host__
#endif
#ifndef __device__
#define __device__
#endif
#undef __forceinline__
#define __forceinline__ inline

template <class T>
inline T __ldg(const T* p) {
  return *p;
}
// CUDA's fast division (2 ulp for divisors up to 2^126): a correctly rounded one on the host.
inline float __fdividef(float a, float b) { return a / b; }
using std::min;
