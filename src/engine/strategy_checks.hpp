// SPDX-License-Identifier: BSD-3-Clause
// The argument checks every strategy runs on its local tensors before anything moves
// (docs/architecture.md §6.7): the dtype the context was configured for and each tensor's
// shape, with messages naming the tensor. Callers run them inside comm::check_everywhere, so
// a bad tensor on one rank fails every rank together.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "engine/attention_config.hpp"
#include "engine/pass_tensors.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/tensor_checks.hpp"

namespace rfa {
namespace engine {

/// The dtype, and q, k, v on `local_seq` rows. Views of any memory space (host or device):
/// only their extents and data pointers are read.
template <class T, class In>
void check_input_tensors(const AttentionConfig& c, std::int64_t local_seq, const In& q, const In& k, const In& v) {
  require(dtype_of<T>::value == c.dtype, "tensors are ", dtype_name(dtype_of<T>::value),
          " but the context was configured for ", dtype_name(c.dtype));
  kernels::check_tensor(q, "q", c.batch, local_seq, c.heads, c.head_dim);
  kernels::check_tensor(k, "k", c.batch, local_seq, c.kv_heads, c.head_dim);
  kernels::check_tensor(v, "v", c.batch, local_seq, c.kv_heads, c.dv());
}

/// q, k, v, out and lse of a forward.
template <class T, class Space>
void check_pass_tensors(const AttentionConfig& c, std::int64_t local_seq, const ForwardTensors<T, Space>& t) {
  check_input_tensors<T>(c, local_seq, t.q, t.k, t.v);
  kernels::check_tensor(t.out, "out", c.batch, local_seq, c.heads, c.dv());
  kernels::check_tensor(t.lse, "lse", c.batch, c.heads, local_seq);
}

/// The forward's tensors plus dout, dq, dk and dv of a backward.
template <class T, class Space, class TGrad>
void check_pass_tensors(const AttentionConfig& c, std::int64_t local_seq, const BackwardTensors<T, Space, TGrad>& t) {
  check_input_tensors<T>(c, local_seq, t.q, t.k, t.v);
  kernels::check_tensor(t.out, "out", c.batch, local_seq, c.heads, c.dv());
  kernels::check_tensor(t.dout, "dout", c.batch, local_seq, c.heads, c.dv());
  kernels::check_tensor(t.lse, "lse", c.batch, c.heads, local_seq);
  kernels::check_tensor(t.dq, "dq", c.batch, local_seq, c.heads, c.head_dim);
  kernels::check_tensor(t.dk, "dk", c.batch, local_seq, c.kv_heads, c.head_dim);
  kernels::check_tensor(t.dv, "dv", c.batch, local_seq, c.kv_heads, c.dv());
}

}  // namespace engine
}  // namespace rfa
