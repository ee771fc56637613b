#include "engine/ring_attention.hpp"

#include "core/error.hpp"
#include "kernels/tensor_checks.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {

RingAttention::RingAttention(comm::Communicator& comm, const RingConfig& config) : comm_(comm), config_(config) {
  validate_collective(comm_, config_);
  local_seq_ = layout::local_length(config_.layout, config_.seq_total, comm_.size());
}

PositionMap RingAttention::local_positions() const {
  return layout::positions(config_.layout, config_.seq_total, comm_.size(), comm_.rank());
}

std::int64_t RingAttention::workspace_bytes(bool backward) const {
  const RingConfig& c = config_;
  const std::int64_t elem = std::int64_t(dtype_size(c.dtype));
  const std::int64_t q_elems = c.batch * local_seq_ * c.heads * c.head_dim;
  const std::int64_t kv_elems = c.batch * local_seq_ * c.kv_heads * c.head_dim;
  const std::int64_t row_elems = c.batch * c.heads * local_seq_;
  const bool fp32 = c.dtype == RFA_DTYPE_FLOAT32;
  // Two K/V receive buffers (K and V each) in the storage dtype.
  std::int64_t bytes = 2 * 2 * kv_elems * elem;
  if (!backward) {
    bytes += (fp32 ? 0 : q_elems * 4)  // fp32 output accumulator (fp32 callers' out is used in place)
             + q_elems * 4             // one block's fp32 partial output
             + row_elems * 4;          // one block's lse
  } else {
    bytes += 2 * 2 * kv_elems * 4      // two dK/dV receive buffers, fp32
             + 2 * kv_elems * 4        // this step's dK/dV contribution, fp32
             + (fp32 ? 0 : q_elems * 4)  // fp32 dQ accumulator (fp32 callers' dq is used in place)
             + row_elems * 4;          // D = rowsum(dO * O)
  }
  return bytes;
}

template <class T>
void RingAttention::check_local_tensors(const Tensor4<const T>& q, const Tensor4<const T>& k,
                                        const Tensor4<const T>& v) const {
  const RingConfig& c = config_;
  if (dtype_of<T>::value != c.dtype) {
    fail(RFA_ERROR_INVALID_ARGUMENT, "tensors are ", dtype_name(dtype_of<T>::value), " but the ring was configured for ",
         dtype_name(c.dtype));
  }
  kernels::check_tensor(q, "q", c.batch, local_seq_, c.heads, c.head_dim);
  kernels::check_tensor(k, "k", c.batch, local_seq_, c.kv_heads, c.head_dim);
  kernels::check_tensor(v, "v", c.batch, local_seq_, c.kv_heads, c.head_dim);
}

template void RingAttention::check_local_tensors<float>(const Tensor4<const float>&, const Tensor4<const float>&,
                                                        const Tensor4<const float>&) const;
template void RingAttention::check_local_tensors<bf16_t>(const Tensor4<const bf16_t>&, const Tensor4<const bf16_t>&,
                                                         const Tensor4<const bf16_t>&) const;
template void RingAttention::check_local_tensors<fp16_t>(const Tensor4<const fp16_t>&, const Tensor4<const fp16_t>&,
                                                         const Tensor4<const fp16_t>&) const;

}  // namespace engine
}  // namespace rfa
