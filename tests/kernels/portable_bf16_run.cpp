// SPDX-License-Identifier: BSD-3-Clause
// ctest runs rfa_kernels_test twice: as it is, and as rfa_kernels_test.portable_bf16 with the
// hardware bf16 products turned off (RFA_HOST_AMX=0, RFA_HOST_BF16_DOT=0), so that the native
// vector kernels' bf16 path stays tested where the bf16 cases otherwise run on AMX tiles or
// AVX512-BF16 dot products. Where the build and CPU have neither, the second run would repeat
// the first case for case: it skips them all, saying why.
#include <gtest/gtest.h>

#include <cstring>

#include "core/environment.hpp"
#include "kernels/amx_tiles.hpp"
#include "kernels/bf16_dot.hpp"
#include "scoped_env.hpp"

namespace rfa {
namespace kernels {
namespace {

/// Whether `id` says 0, the value that turns the kernels' hardware path off.
bool turned_off(Env id) {
  const char* value = env_value(id);
  return value != nullptr && std::strcmp(value, "0") == 0;
}

class PortableBf16Run : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!turned_off(Env::host_amx) || !turned_off(Env::host_bf16_dot)) return;
    bool hardware = false;
    {
      const test::ScopedEnv amx(env_name(Env::host_amx), nullptr);
      const test::ScopedEnv dot(env_name(Env::host_bf16_dot), nullptr);
      hardware = host_amx_bf16_enabled() || host_bf16_dot_enabled();
    }
    if (!hardware)
      GTEST_SKIP() << "RFA_HOST_AMX=0 and RFA_HOST_BF16_DOT=0 change nothing here (the build or the CPU has no "
                      "AMX tiles or AVX512-BF16 products): this run would repeat rfa_kernels_test";
  }
};

[[maybe_unused]] const ::testing::Environment* const kRegistered =
    ::testing::AddGlobalTestEnvironment(new PortableBf16Run);

}  // namespace
}  // namespace kernels
}  // namespace rfa
