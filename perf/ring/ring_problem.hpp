// SPDX-License-Identifier: BSD-3-Clause
// A reproducible distributed problem for the main job and the ring benchmark. Every value
// is a hash of (tensor, batch, global position, head, dim), so each rank fills its shard -- or
// the whole sequence, for a check -- without anyone holding or sending the global tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/host_sums.hpp"
#include "core/allocation.hpp"
#include "core/dtype.hpp"
#include "core/positions.hpp"
#include "engine/attention_sinks.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/ring_attention.hpp"
#include "kernels/contiguous_ops.hpp"
#include "kernels/flash_attention.hpp"
#include "run_options.hpp"

namespace rfa {
namespace perf {

enum class TensorId : std::uint64_t { q = 1, k = 2, v = 3, dout = 4 };

inline float hashed_uniform(TensorId id, std::int64_t b, std::int64_t pos, std::int64_t h, std::int64_t x) {
  std::uint64_t z = (std::uint64_t(id) << 56) ^ (std::uint64_t(b) << 48) ^ (std::uint64_t(pos) << 20) ^
                    (std::uint64_t(h) << 10) ^ std::uint64_t(x);
  z += 0x9e3779b97f4a7c15ull;  // splitmix64 finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return float(double(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);  // uniform in [-1, 1)
}

/// Fills t[b][i][h][x] with the problem's values at global positions rows(i).
template <class T>
void fill(kernels::Tensor4<T> t, TensorId id, const PositionMap& rows) {
  for (std::int64_t b = 0; b < std::int64_t(t.extent(0)); ++b)
    for (std::int64_t i = 0; i < std::int64_t(t.extent(1)); ++i) {
      const std::int64_t pos = rows(i);
      for (std::int64_t h = 0; h < std::int64_t(t.extent(2)); ++h)
        for (std::int64_t x = 0; x < std::int64_t(t.extent(3)); ++x)
          t(b, i, h, x) = from_float<T>(hashed_uniform(id, b, pos, h, x));
    }
}

/// The same values as fp32 (exact for every storage dtype, since they were rounded to T first).
template <class T>
void fill_as_float(kernels::Tensor4<float> t, TensorId id, const PositionMap& rows) {
  for (std::int64_t b = 0; b < std::int64_t(t.extent(0)); ++b)
    for (std::int64_t i = 0; i < std::int64_t(t.extent(1)); ++i) {
      const std::int64_t pos = rows(i);
      for (std::int64_t h = 0; h < std::int64_t(t.extent(2)); ++h)
        for (std::int64_t x = 0; x < std::int64_t(t.extent(3)); ++x)
          t(b, i, h, x) = to_float(from_float<T>(hashed_uniform(id, b, pos, h, x)));
    }
}

/// Fraction of the communication that compute hid, from three runs of one schedule: with
/// communication (full), without it (compute_only) and without compute (comm_only):
/// 1 - exposed / communication alone, exposed = full - compute_only.
inline double hidden_fraction(double full, double compute_only, double comm_only) {
  if (comm_only <= 0) return 1.0;
  const double exposed = full > compute_only ? full - compute_only : 0.0;
  const double h = 1.0 - exposed / comm_only;
  return h < 0.0 ? 0.0 : (h > 1.0 ? 1.0 : h);
}

/// The ring configuration the options describe.
inline engine::AttentionConfig attention_config(const RunOptions& o) {
  engine::AttentionConfig cfg;
  cfg.layout = o.layout;
  cfg.mask = o.mask;
  cfg.dtype = o.dtype;
  cfg.softmax_scale = o.scale;
  cfg.batch = o.batch;
  cfg.seq_total = o.seq;
  cfg.heads = o.heads;
  cfg.kv_heads = o.kv_heads;
  cfg.head_dim = o.head_dim;
  cfg.value_dim = o.value_dim == o.head_dim ? 0 : o.value_dim;
  cfg.window = o.window;
  cfg.doc_bounds = o.documents.bounds;
  cfg.doc_offsets = o.documents.offsets;
  cfg.ranges = o.ranges;
  cfg.softcap = o.softcap;
  cfg.device = o.device == RunDevice::cuda ? engine::Device::cuda : engine::Device::host;
  cfg.deterministic = o.deterministic;
  return cfg;
}

/// A tensor allocated as bytes (core/allocation.hpp) whose buffer `storage` keeps alive.
template <class View, class Storage, class... Extents>
View allocate_kept(Storage& storage, const char* label, Extents... extents) {
  OwnedTensor<View> t = allocate_tensor<View>(label, extents...);
  storage.push_back(t.storage);
  return t.view;
}

/// The sink logits of rfa_run --sinks: one per head, of the kinds a model's sinks take
/// (negative, zero, positive, dominating a row), the same on every rank.
inline std::vector<float> run_sinks(std::int64_t heads) {
  const float kinds[] = {-1.0f, 0.0f, 0.5f, 2.0f};
  std::vector<float> s(static_cast<std::size_t>(heads));
  for (std::int64_t h = 0; h < heads; ++h) s[std::size_t(h)] = kinds[h % 4];
  return s;
}

/// One rank's tensors for a ring run: inputs filled for its rows, outputs zeroed. Allocated
/// as bytes (core/allocation.hpp), so that a tensor of 2^32 elements or more is whole and a
/// refused allocation is RFA_ERROR_OUT_OF_MEMORY naming the tensor: construct it inside
/// comm::check_everywhere so that every rank reports it.
template <class T>
struct LocalProblem {
  using Host = Kokkos::DefaultHostExecutionSpace;
  kernels::Tensor4<T> q, k, v, dout, out, dq, dk, dv;
  kernels::Tensor3<float> lse;

  /// For any engine with config(), local_seq() and local_positions() (every strategy).
  template <class Engine>
  explicit LocalProblem(const Engine& attn) {
    const engine::AttentionConfig& c = attn.config();
    const std::int64_t L = attn.local_seq(), B = c.batch, H = c.heads, HKV = c.kv_heads, D = c.head_dim;
    const std::int64_t DV = c.dv();
    q = allocate<kernels::Tensor4<T>>("q", B, L, H, D);
    k = allocate<kernels::Tensor4<T>>("k", B, L, HKV, D);
    v = allocate<kernels::Tensor4<T>>("v", B, L, HKV, DV);
    dout = allocate<kernels::Tensor4<T>>("dout", B, L, H, DV);
    out = allocate<kernels::Tensor4<T>>("out", B, L, H, DV);
    dq = allocate<kernels::Tensor4<T>>("dq", B, L, H, D);
    dk = allocate<kernels::Tensor4<T>>("dk", B, L, HKV, D);
    dv = allocate<kernels::Tensor4<T>>("dv", B, L, HKV, DV);
    lse = allocate<kernels::Tensor3<float>>("lse", B, H, L);
    const PositionMap rows = attn.local_positions();
    fill(q, TensorId::q, rows);
    fill(k, TensorId::k, rows);
    fill(v, TensorId::v, rows);
    fill(dout, TensorId::dout, rows);
    for (const auto& t : {out, dq, dk, dv}) kernels::fill_elements(t, from_float<T>(0.0f));
    kernels::fill_elements(lse, 0.0f);
  }

  /// Any engine with the ring's passes: RingAttention, or any strategy
  /// (engine/attention_strategy.hpp; modes other than full are the ring's).
  template <class Engine>
  void forward(Engine& attn, engine::RingMode mode = engine::RingMode::full) {
    attn.forward(engine::HostForward<T>{q, k, v, out, lse}, mode);
    if (!sinks.empty()) engine::apply_sinks<T, Kokkos::HostSpace>(Host(), sinks.data(), out, lse);
  }
  template <class Engine>
  void backward(Engine& attn, engine::RingMode mode = engine::RingMode::full) {
    std::vector<double> part;
    if (!sinks.empty()) part = engine::sink_gradient_part<T, Kokkos::HostSpace>(Host(), sinks.data(), out, dout, lse);
    attn.backward(engine::HostBackward<T>{q, k, v, out, dout, lse, dq, dk, dv}, mode);
    if (!sinks.empty()) dsinks = comm::sum_in_rank_order(*sink_ranks, part);
  }
  /// The results, in host memory, for the check.
  LocalProblem& results() { return *this; }

  /// Attention sinks (rfa_run --sinks), as the C API applies them (engine/attention_sinks.hpp):
  /// folded into the finished rows after every forward, their gradient taken with every
  /// backward and summed over `ranks` (host values). Empty: none.
  void use_sinks(std::vector<float> logits, comm::Communicator& ranks) {
    sinks = std::move(logits);
    sink_ranks = &ranks;
  }
  std::vector<float> sinks;
  std::vector<double> dsinks;  ///< the last backward's sink gradient, the same on every rank
  comm::Communicator* sink_ranks = nullptr;

 private:
  template <class View, class... Extents>
  View allocate(const char* label, Extents... extents) {
    return allocate_kept<View>(storage_, label, extents...);
  }
  std::vector<Kokkos::View<unsigned char*, Kokkos::HostSpace>> storage_;
};

#if RFA_ENGINE_CUDA
/// The same problem on this rank's GPU: filled on the host, copied once; each pass returns
/// only when the GPU is done with it, so that host clocks time the device work.
template <class T>
struct DeviceProblem {
  template <class U>
  using Tensor4 = engine::DeviceTensor4<U>;
  LocalProblem<T> host;
  Tensor4<T> q, k, v, dout, out, dq, dk, dv;
  engine::DeviceTensor3<float> lse;

  /// For any engine with config(), local_seq() and local_positions().
  template <class Engine>
  explicit DeviceProblem(const Engine& attn) : host(attn) {
    q = mirror(host.q, "q_device");
    k = mirror(host.k, "k_device");
    v = mirror(host.v, "v_device");
    dout = mirror(host.dout, "dout_device");
    out = mirror(host.out, "out_device");
    dq = mirror(host.dq, "dq_device");
    dk = mirror(host.dk, "dk_device");
    dv = mirror(host.dv, "dv_device");
    lse = allocate<engine::DeviceTensor3<float>>("lse_device", host.lse.extent(0), host.lse.extent(1),
                                                 host.lse.extent(2));
  }

  /// RingAttention or any strategy, as LocalProblem's.
  template <class Engine>
  void forward(Engine& attn, engine::RingMode mode = engine::RingMode::full) {
    attn.forward(engine::ForwardTensors<T, Kokkos::CudaSpace>{q, k, v, out, lse}, mode);
    if (sinks.size() > 0) engine::apply_sinks<T, Kokkos::CudaSpace>(Kokkos::Cuda(), sinks.data(), out, lse);
    Kokkos::fence();
  }
  template <class Engine>
  void backward(Engine& attn, engine::RingMode mode = engine::RingMode::full) {
    std::vector<double> part;
    if (sinks.size() > 0)
      part = engine::sink_gradient_part<T, Kokkos::CudaSpace>(Kokkos::Cuda(), sinks.data(), out, dout, lse);
    attn.backward(engine::BackwardTensors<T, Kokkos::CudaSpace>{q, k, v, out, dout, lse, dq, dk, dv}, mode);
    Kokkos::fence();
    if (sinks.size() > 0) host.dsinks = comm::sum_in_rank_order(*host.sink_ranks, part);
  }
  /// As LocalProblem::use_sinks; the logits are copied to the device.
  void use_sinks(std::vector<float> logits, comm::Communicator& ranks) {
    host.use_sinks(std::move(logits), ranks);
    sinks = Kokkos::View<float*, Kokkos::CudaSpace>("sinks_device", host.sinks.size());
    Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> from(host.sinks.data(), host.sinks.size());
    Kokkos::deep_copy(sinks, from);
  }
  Kokkos::View<float*, Kokkos::CudaSpace> sinks;
  LocalProblem<T>& results() {
    copy_contiguous(host.out, out);
    copy_contiguous(host.lse, lse);
    copy_contiguous(host.dq, dq);
    copy_contiguous(host.dk, dk);
    copy_contiguous(host.dv, dv);
    return host;
  }

 private:
  // Byte-allocated like the host tensors (core/allocation.hpp), and copied as 1-d arrays:
  // deep_copy of a rank-4 View goes by its span, 32-bit in Kokkos' legacy Views.
  template <class View, class... Extents>
  View allocate(const char* label, Extents... extents) {
    return allocate_kept<View>(storage_, label, extents...);
  }
  template <class Dst, class Src>
  static void copy_contiguous(const Dst& dst, const Src& src) {
    using U = typename Dst::non_const_value_type;
    Kokkos::View<U*, typename Dst::memory_space, Kokkos::MemoryUnmanaged> d(dst.data(), dst.size());
    Kokkos::View<const U*, typename Src::memory_space, Kokkos::MemoryUnmanaged> s(src.data(), src.size());
    Kokkos::deep_copy(d, s);
  }
  Tensor4<T> mirror(const kernels::Tensor4<T>& h, const char* label) {
    Tensor4<T> d = allocate<Tensor4<T>>(label, h.extent(0), h.extent(1), h.extent(2), h.extent(3));
    copy_contiguous(d, h);
    return d;
  }
  std::vector<Kokkos::View<unsigned char*, typename engine::DeviceTensor4<T>::memory_space>> storage_;
};
#endif

}  // namespace perf
}  // namespace rfa
