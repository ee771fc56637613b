// SPDX-License-Identifier: BSD-3-Clause
// Reading and checking rfa_options_t (docs/architecture.md §6.4): the caller's struct may be older
// (smaller) than this library's; fields it lacks take their defaults.
#pragma once

#include "engine/attention_config.hpp"
#include "engine/attention_strategy.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace capi {

/// options.check_values as this rank resolves it: ON or OFF, from the option or, for DEFAULT,
/// from RFA_CHECK_VALUES (unset or "0": off, "1": on). Throws RFA_ERROR_INVALID_ARGUMENT for
/// any other value of either.
rfa_value_checks_t resolve_value_checks(const rfa_value_checks_t& option);

/// options.cuda_kernels as asked for on this rank: AUTO, RFA or CUDNN, from the option or, for
/// DEFAULT, from RFA_CUDA_KERNELS (unset: auto). Throws RFA_ERROR_INVALID_ARGUMENT for any other
/// value of either. What runs is decided at creation (engine::choose_cuda_kernels).
rfa_cuda_kernels_t requested_cuda_kernels(const rfa_cuda_kernels_t& option);

/// The defaults rfa_options_init() writes.
rfa_options_t default_options();

/// The struct size of version 1 of rfa_options_t: the smallest struct_size accepted.
std::size_t min_options_size();

/// The largest struct_size accepted: a newer header's struct may be larger than this library's,
/// and its tail is read (it must be zero), so a size no header will reach is refused rather
/// than read past the caller's struct.
constexpr std::size_t kMaxOptionsSize = 4096;

/// Fails with RFA_ERROR_INVALID_ARGUMENT, naming @p what, unless @p struct_size is a size the
/// struct can have: at least version 1's, at most kMaxOptionsSize, and whole fields (a multiple
/// of the struct's alignment, which every version's sizeof is). A size that ends inside a field
/// would read or write half of it, mixing the caller's bytes with the defaults'.
void check_options_size(std::size_t struct_size, const char* what);

/// Writes this library's @p fields into the caller's struct of @p struct_size bytes (checked
/// first): the fields the caller's struct holds, zeros past this library's struct (the fields a
/// newer header appends, at the value that asks a library without them for nothing new), and
/// struct_size as the caller's.
void write_options(rfa_options_t* caller, std::size_t struct_size, const rfa_options_t& fields);

/// Copies min(struct_size, sizeof) bytes of the caller's struct over the defaults (a larger,
/// newer struct's tail must be zero: a field this library lacks, set, is RFA_ERROR_UNSUPPORTED
/// naming its byte offset), checks the
/// document boundaries, resolves check_values (resolve_value_checks) and cuda_kernels to what is
/// asked for (requested_cuda_kernels), makes deterministic 0 or 1 and a value_head_dim equal to
/// head_dim 0. Throws
/// RFA_ERROR_INVALID_ARGUMENT for NULL, a struct_size below version 1 (not initialized), bad
/// boundaries or a bad check_values.
rfa_options_t read_options(const rfa_options_t* caller, const char* what);

/// The head dim of v, out, dout and dv: options.value_head_dim, or head_dim for 0 (read_options
/// stores a value head dim equal to head_dim as 0).
inline std::int64_t value_head_dim_of(const rfa_options_t& o) {
  return o.value_head_dim != 0 ? o.value_head_dim : o.head_dim;
}

/// Throws RFA_ERROR_INVALID_ARGUMENT / RFA_ERROR_UNSUPPORTED, naming the field, unless the
/// options describe a usable ring of `ranks` ranks; returns the engine's view of them
/// (attention_config), built once here.
engine::AttentionConfig validate_options(const rfa_options_t& o, int ranks);

/// The engine's view of the options.
engine::AttentionConfig attention_config(const rfa_options_t& o);

/// The strategy the options choose (validated options only).
engine::StrategyChoice strategy_choice(const rfa_options_t& o);

}  // namespace capi
}  // namespace rfa
