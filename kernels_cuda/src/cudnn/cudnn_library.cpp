// SPDX-License-Identifier: BSD-3-Clause
#include "cudnn/cudnn_library.hpp"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "api_support.hpp"
#include "rfa_cuda/cudnn_attention.h"

// The frontend's dynamic loading calls cuDNN through this handle (cudnn_frontend_shim.h).
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace rfa_cuda {
namespace cudnn {
namespace {

struct LoadResult {
  rfa_cuda_status status = RFA_CUDA_ERROR_UNSUPPORTED;
  std::string message;
  std::int64_t version = 0;
};

std::string version_text(std::int64_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

LoadResult open_cudnn(const char* file) {
  LoadResult r;
  const std::string name = file != nullptr && *file != '\0' ? file : "libcudnn.so.9";
  dlerror();
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    r.message = "cuDNN is not available: dlopen(" + name + ") failed (" + (why ? why : "no reason given") +
                "); install cuDNN 9 (for example the PyPI package nvidia-cudnn-cu13) and put its lib folder on "
                "LD_LIBRARY_PATH, or load it by its file name";
    return r;
  }
  using GetVersion = std::size_t (*)();
  auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, "cudnnGetVersion"));
  if (get_version == nullptr) {
    r.message = "cuDNN is not available: " + name + " has no cudnnGetVersion (not a cuDNN library)";
    dlclose(handle);
    return r;
  }
  r.version = std::int64_t(get_version());
  if (r.version < RFA_CUDNN_MIN_VERSION) {
    r.message = "cuDNN " + version_text(r.version) + " (" + name + ") is older than " +
                version_text(RFA_CUDNN_MIN_VERSION) +
                ", the oldest rfa asks for fused attention; install a newer "
                "cuDNN 9";
    r.version = 0;
    dlclose(handle);
    return r;
  }
  cudnn_frontend::cudnn_dlhandle = handle;
  r.status = RFA_CUDA_SUCCESS;
  return r;
}

std::once_flag load_once;
LoadResult load_result;              // written once, by the first load_library()
std::atomic<bool> load_done{false};  // load_result is final

const LoadResult& loaded(const char* file) {
  std::call_once(load_once, [file] {
    load_result = open_cudnn(file);
    load_done.store(true, std::memory_order_release);
  });
  return load_result;
}

}  // namespace

rfa_cuda_status load_library(const char* file) {
  const LoadResult& r = loaded(file);
  if (r.status != RFA_CUDA_SUCCESS) return detail::fail(r.status, "%s", r.message.c_str());
  return RFA_CUDA_SUCCESS;
}

std::int64_t loaded_version() { return load_done.load(std::memory_order_acquire) ? load_result.version : 0; }

}  // namespace cudnn
}  // namespace rfa_cuda
