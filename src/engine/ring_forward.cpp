// The ring forward (DESIGN.md §3): step s computes this rank's queries against the K/V block
// that started s positions upstream while the block for step s+1 is already travelling, then
// merges the block's fp32 partial into the running output.
#include <limits>
#include <type_traits>

#include "engine/ring_attention.hpp"
#include "engine/travelling_kv.hpp"
#include "engine/workspace.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace engine {

template <class T>
void RingAttention::forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out,
                            Tensor3<float> lse, RingMode mode) {
  const RingConfig& c = config_;
  const std::int64_t L = local_seq_;
  check_everywhere([&] {
    check_local_tensors(q, k, v);
    kernels::check_tensor(out, "out", c.batch, L, c.heads, c.head_dim);
    kernels::check_tensor(lse, "lse", c.batch, c.heads, L);
  });

  timings_ = RingTimings();
  ScopedSeconds total(timings_.total);
  const int P = ranks(), me = position();
  const bool communicate = mode != RingMode::compute_only;
  const bool compute = mode != RingMode::comm_only;

  Workspace ws;
  TravellingKV<T> kv(ws, comm_, k, v, communicate);
  // fp32 callers' out doubles as the accumulator; 16-bit outputs are narrowed at the end.
  Tensor4<float> acc;
  if constexpr (std::is_same<T, float>::value) {
    acc = out;
  } else {
    acc = ws.tensor4<float>("rfa::out_acc", c.batch, L, c.heads, c.head_dim);
  }
  Tensor4<float> block_out = ws.tensor4<float>("rfa::block_out", c.batch, L, c.heads, c.head_dim);
  Tensor3<float> block_lse = ws.tensor3<float>("rfa::block_lse", c.batch, c.heads, L);
  last_workspace_bytes_ = ws.bytes();
  Kokkos::deep_copy(acc, 0.0f);
  Kokkos::deep_copy(lse, -std::numeric_limits<float>::infinity());

  ExchangePoller poller;
  bool seen_any = false;  // the first visible block is written straight into the accumulator
  for (int s = 0; s < P; ++s) {
    const int owner = (me - s + P) % P;
    timings_.bytes_sent += kv.start(s);
    if (compute) {
      const kernels::AttentionParams p = block_params(c, P, me, owner);
      const bool visible = kernels::classify_tile(p.mask, p.q_pos, 0, L, p.k_pos, 0, L) !=
                           kernels::TileVisibility::hidden;
      if (visible) {
        ScopedSeconds t(timings_.compute);
        poller.watch(kv.pending_k(), kv.pending_v());
        if (!seen_any) {  // merging into out = 0, lse = -inf would only copy
          kernels::flash_forward<T, float>(p, q, kv.k(), kv.v(), acc, lse, poller.hook());
          seen_any = true;
        } else {
          kernels::flash_forward<T, float>(p, q, kv.k(), kv.v(), block_out, block_lse, poller.hook());
          kernels::merge_partial(acc, lse, block_out, block_lse);
        }
        ++timings_.steps_computed;
      }
      poller.rethrow_if_failed();
    }
    ScopedSeconds t(timings_.wait);
    kv.finish(s);
  }
  if constexpr (!std::is_same<T, float>::value) kernels::narrow<T>(acc, out);
}

template void RingAttention::forward<float>(Tensor4<const float>, Tensor4<const float>, Tensor4<const float>,
                                            Tensor4<float>, Tensor3<float>, RingMode);
template void RingAttention::forward<bf16_t>(Tensor4<const bf16_t>, Tensor4<const bf16_t>, Tensor4<const bf16_t>,
                                             Tensor4<bf16_t>, Tensor3<float>, RingMode);
template void RingAttention::forward<fp16_t>(Tensor4<const fp16_t>, Tensor4<const fp16_t>, Tensor4<const fp16_t>,
                                             Tensor4<fp16_t>, Tensor3<float>, RingMode);

}  // namespace engine
}  // namespace rfa
