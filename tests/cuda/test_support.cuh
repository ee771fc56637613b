// SPDX-License-Identifier: BSD-3-Clause
// Small host helpers shared by the kernel test and the benchmark: a device buffer that frees
// itself, conversion between double and the 16-bit storage types, and check macros.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rfa_cuda/flash.h"

namespace rfa_cuda_test {

#define RFA_TEST_CUDA(expr)                                                                              \
  do {                                                                                                   \
    const cudaError_t e_ = (expr);                                                                       \
    if (e_ != cudaSuccess) {                                                                             \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                      \
    }                                                                                                    \
  } while (0)

#define RFA_TEST_CALL(expr)                                                                                     \
  do {                                                                                                          \
    const rfa_cuda_status s_ = (expr);                                                                          \
    if (s_ != RFA_CUDA_SUCCESS) {                                                                               \
      std::fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #expr, rfa_cuda_status_string(s_), \
                   rfa_cuda_last_error_message());                                                              \
      std::exit(1);                                                                                             \
    }                                                                                                           \
  } while (0)

// Exit code that CTest reads as "skipped" (SKIP_RETURN_CODE 77).
constexpr int kSkipExitCode = 77;

inline bool cuda_device_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

inline std::size_t element_size(rfa_cuda_dtype t) { return t == RFA_CUDA_FP32 ? 4 : 2; }

// Rounds x to the storage type and back, as the GPU will see it.
inline double round_to(rfa_cuda_dtype t, double x) {
  switch (t) {
    case RFA_CUDA_BF16: return __bfloat162float(__float2bfloat16(static_cast<float>(x)));
    case RFA_CUDA_FP16: return __half2float(__float2half(static_cast<float>(x)));
    default: return static_cast<float>(x);
  }
}

// Packs doubles into the raw bytes of the storage type.
inline std::vector<unsigned char> encode(rfa_cuda_dtype t, const std::vector<double>& x) {
  std::vector<unsigned char> bytes(x.size() * element_size(t));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (t == RFA_CUDA_BF16) {
      reinterpret_cast<__nv_bfloat16*>(bytes.data())[i] = __float2bfloat16(static_cast<float>(x[i]));
    } else if (t == RFA_CUDA_FP16) {
      reinterpret_cast<__half*>(bytes.data())[i] = __float2half(static_cast<float>(x[i]));
    } else {
      reinterpret_cast<float*>(bytes.data())[i] = static_cast<float>(x[i]);
    }
  }
  return bytes;
}

inline std::vector<double> decode(rfa_cuda_dtype t, const std::vector<unsigned char>& bytes) {
  std::vector<double> x(bytes.size() / element_size(t));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (t == RFA_CUDA_BF16)
      x[i] = __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(bytes.data())[i]);
    else if (t == RFA_CUDA_FP16)
      x[i] = __half2float(reinterpret_cast<const __half*>(bytes.data())[i]);
    else
      x[i] = reinterpret_cast<const float*>(bytes.data())[i];
  }
  return x;
}

// Device memory of `count` elements of one type; freed on destruction.
class DeviceArray {
 public:
  DeviceArray(rfa_cuda_dtype type, std::size_t count) : type_(type), bytes_(count * element_size(type)) {
    RFA_TEST_CUDA(cudaMalloc(&data_, bytes_ == 0 ? 16 : bytes_));
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  void* get() const { return data_; }
  float* as_float() const { return static_cast<float*>(data_); }
  std::size_t bytes() const { return bytes_; }

  void upload(const std::vector<double>& x) {
    const std::vector<unsigned char> raw = encode(type_, x);
    RFA_TEST_CUDA(cudaMemcpy(data_, raw.data(), raw.size(), cudaMemcpyHostToDevice));
  }
  std::vector<double> download() const {
    std::vector<unsigned char> raw(bytes_);
    RFA_TEST_CUDA(cudaMemcpy(raw.data(), data_, raw.size(), cudaMemcpyDeviceToHost));
    return decode(type_, raw);
  }
  // All bits set is a NaN in bf16, fp16 and fp32: an output the kernel forgets stays NaN.
  void poison() { RFA_TEST_CUDA(cudaMemset(data_, 0xff, bytes_)); }

 private:
  rfa_cuda_dtype type_;
  std::size_t bytes_;
  void* data_ = nullptr;
};

// Milliseconds of each of `iters` timed runs of fn after `warmup` untimed ones, timed with CUDA
// events on the legacy default stream (the benchmarks' shared timer).
template <typename Fn>
std::vector<double> event_samples_ms(int warmup, int iters, Fn&& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  cudaEvent_t start, stop;
  RFA_TEST_CUDA(cudaEventCreate(&start));
  RFA_TEST_CUDA(cudaEventCreate(&stop));
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    RFA_TEST_CUDA(cudaEventRecord(start));
    fn();
    RFA_TEST_CUDA(cudaEventRecord(stop));
    RFA_TEST_CUDA(cudaEventSynchronize(stop));
    float ms = 0.f;
    RFA_TEST_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return times;
}

// The median of event_samples_ms.
template <typename Fn>
double median_event_ms(int warmup, int iters, Fn&& fn) {
  std::vector<double> times = event_samples_ms(warmup, iters, fn);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace rfa_cuda_test
