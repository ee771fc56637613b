// SPDX-License-Identifier: BSD-3-Clause
// The sm_80 kernels' layouts: each has a default by head dims, measured on an H100, that the
// environment may override (docs/gpus.md, docs/environment.md), each read at every call and by
// rfa_cuda_check_head_dims (so a CUDA context's creation refuses a value its head dims do not
// take, on every rank):
// - RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP, the query rows a warp of the forward owns
//   (flash_forward.cu): 16 (8 warps a CTA) or 32 (4 warps, each reading a key tile once for two
//   blocks of 16 rows). 32 takes value head dims up to 128: above, the accumulators of two
//   blocks would not fit a thread's registers. Default: 32 on devices of compute capability 9.x
//   and above where both head dims are at most 128 (on an H100 at d 128 it took 0.79-0.89x the
//   time of 16, full and causal), else 16 (at 192 / 128, 32 took 1.27-1.38x the time of 16; an
//   A100's 164 KB of shared memory a multiprocessor hold one CTA of 96 KB, so 32 rows would
//   leave it 4 warps where 16 rows give 8, unmeasured): perf/RESULTS.md, "2026-12-05 (seventh
//   session) — the second GPU run: an H100, the A/B and the strategies' compute".
// - RFA_CUDA_SM80_BACKWARD_KEY_TILE, the keys a CTA of the backward owns (flash_backward.cu):
//   64 (4 warps) or 128 (8 warps), each warp 16 keys whatever the tile. A tile of 128 reads
//   every query tile and adds its dQ (atomics) once for twice the keys. Default: 128 where Q/K
//   and V columns add up to at most 128 (head dims 32 and 64), else 64. 128 takes up to 256
//   columns (head dims to 128): past them the backward runs in two passes of 4 warps.
#pragma once

#include <cstdint>

#include "rfa_cuda/flash.h"

namespace rfa_cuda {
namespace detail {

inline constexpr const char* kForwardRowsPerWarpEnv = "RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP";
inline constexpr int kWideForwardValueDimMax = 128;        // the most a forward of 32 rows a warp takes
inline constexpr int kWideForwardDefaultHeadDimMax = 128;  // up to this Q/K and V head dim, 32 is the default
inline constexpr int kWideForwardDefaultComputeMajor = 9;  // from this compute capability on

inline constexpr const char* kBackwardKeyTileEnv = "RFA_CUDA_SM80_BACKWARD_KEY_TILE";
inline constexpr int kWideBackwardColumnsMax = 256;      // the most Q/K + V columns a tile of 128 keys takes
inline constexpr int kWideBackwardDefaultColumns = 128;  // up to these, 128 keys is the default

/// The rows a warp that the variable's value `text` asks for at value head dim `value_dim`, in
/// `rows`: 0 where `text` is NULL or empty (the device's default, default_forward_rows_per_warp,
/// which needs the device: a caller checks its arguments first), else "16" or "32".
/// RFA_CUDA_ERROR_INVALID_ARGUMENT for any other value, RFA_CUDA_ERROR_UNSUPPORTED for 32 above a
/// value head dim of 128, each with the thread's message naming the variable. No device is asked.
rfa_cuda_status forward_rows_per_warp(const char* text, std::int64_t value_dim, int& rows);

/// The same for the variable as the environment holds it now.
rfa_cuda_status forward_rows_per_warp_from_environment(std::int64_t value_dim, int& rows);

/// The forward's rows a warp where its variable is unset: 32 on compute capability
/// kWideForwardDefaultComputeMajor and above where the Q/K and V head dims are both at most
/// kWideForwardDefaultHeadDimMax, else 16.
int default_forward_rows_per_warp(std::int64_t head_dim, std::int64_t value_dim, int compute_major);

/// The forward's rows a warp other than the default at these head dims and compute capability,
/// where they take it, else 0: what the kernel test and benchmark run beside the default. No
/// message is left.
int other_forward_rows_per_warp(std::int64_t head_dim, std::int64_t value_dim, int compute_major);

/// The keys a CTA of the backward that the variable's value `text` asks for at head dims
/// (`head_dim`, `value_dim`), in `keys`: the default above where `text` is NULL or empty, else
/// "64" or "128". RFA_CUDA_ERROR_INVALID_ARGUMENT for any other value,
/// RFA_CUDA_ERROR_UNSUPPORTED for 128 past 256 columns, each with the thread's message naming
/// the variable.
rfa_cuda_status backward_key_tile(const char* text, std::int64_t head_dim, std::int64_t value_dim, int& keys);

/// The same for the variable as the environment holds it now.
rfa_cuda_status backward_key_tile_from_environment(std::int64_t head_dim, std::int64_t value_dim, int& keys);

/// The backward's key tile where its variable is unset: 128 where the Q/K and V head dims add up
/// to at most kWideBackwardDefaultColumns, else 64.
int default_backward_key_tile(std::int64_t head_dim, std::int64_t value_dim);

/// The backward's key tile other than the default (default_backward_key_tile) at these
/// head dims, where they take it, else 0: what the kernel test and benchmark run beside the
/// default. No message is left.
int other_backward_key_tile(std::int64_t head_dim, std::int64_t value_dim);

}  // namespace detail
}  // namespace rfa_cuda
