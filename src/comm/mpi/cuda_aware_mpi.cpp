// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/cuda_aware_mpi.hpp"

#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "core/environment.hpp"

#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

namespace rfa::comm {

bool mpi_is_cuda_aware() {
  const char* env = env_value(Env::mpi_cuda_aware);
  if (env && std::strcmp(env, "0") == 0) return false;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace rfa::comm
