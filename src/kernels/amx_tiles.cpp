// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/amx_tiles.hpp"

#include <cstdlib>
#include <cstring>

#include "core/environment.hpp"

#if RFA_HOST_AMX
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace rfa {
namespace kernels {

#if RFA_HOST_AMX
namespace {

/// Linux hands out the AMX register state (8 KiB per thread) only on request.
bool tile_state_granted() {
  static const bool granted = [] {
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
}

struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

}  // namespace

bool host_amx_bf16_enabled() {
  const char* env = env_value(Env::host_amx);
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  return tile_state_granted();
}

namespace amx {

void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = 16;
  }
  // GCC 12 does not treat ldtilecfg as reading all 64 bytes and drops the stores above (the
  // tiles then fault with SIGILL): make them visible first.
  asm volatile("" : : "r"(&config) : "memory");
  _tile_loadconfig(&config);
}

namespace {
/// C tiles 0-3 += A tiles 4-5 (rows) x B tiles 6-7 (columns).
inline void products_2x2() {
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}
}  // namespace

void gemm(int M, int N, int K, RowsA a, PairsB b, float* c, std::size_t ldc, bool accumulate) {
  const std::size_t a_stride = a.ld * 2, b_stride = b.ld * 2, c_stride = ldc * 4;  // bytes
  for (int i = 0; i < M; i += 2 * kBlock) {
    for (int j = 0; j < N; j += 2 * kBlock) {
      float* cij = c + std::size_t(i) * ldc + j;
      if (accumulate) {
        _tile_loadd(0, cij, c_stride);
        _tile_loadd(1, cij + kBlock, c_stride);
        _tile_loadd(2, cij + kBlock * ldc, c_stride);
        _tile_loadd(3, cij + kBlock * ldc + kBlock, c_stride);
      } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
      }
      for (int k = 0; k < K; k += kChunk) {
        const std::size_t a0 = std::size_t(i) * a.ld + k, a1 = a0 + kBlock * a.ld;
        const std::size_t b0 = std::size_t(k / 2) * b.ld + std::size_t(j) * 2, b1 = b0 + 2 * kBlock;
        _tile_loadd(4, a.hi + a0, a_stride);
        _tile_loadd(5, a.hi + a1, a_stride);
        _tile_loadd(6, b.hi + b0, b_stride);
        _tile_loadd(7, b.hi + b1, b_stride);
        products_2x2();
        if (a.lo != nullptr) {
          _tile_loadd(4, a.lo + a0, a_stride);
          _tile_loadd(5, a.lo + a1, a_stride);
          products_2x2();
        } else if (b.lo != nullptr) {
          _tile_loadd(6, b.lo + b0, b_stride);
          _tile_loadd(7, b.lo + b1, b_stride);
          products_2x2();
        }
      }
      _tile_stored(0, cij, c_stride);
      _tile_stored(1, cij + kBlock, c_stride);
      _tile_stored(2, cij + kBlock * ldc, c_stride);
      _tile_stored(3, cij + kBlock * ldc + kBlock, c_stride);
    }
  }
}

}  // namespace amx

#else  // no AMX in this build

bool host_amx_bf16_enabled() { return false; }

#endif

}  // namespace kernels
}  // namespace rfa
