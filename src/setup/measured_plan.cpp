// SPDX-License-Identifier: BSD-3-Clause
#include "setup/measured_plan.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <locale>
#include <memory>
#include <sstream>

#include "collective/deadline.hpp"
#include "comm/agreement.hpp"
#include "core/allocation.hpp"
#include "core/dtype.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/kept_for_process.hpp"
#include "core/text_stream.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/pass_tensors.hpp"

#if RFA_ENGINE_CUDA
#include "device/stream_wait.hpp"
#endif

namespace rfa {
namespace setup {
namespace {

/// The rounds of a plan whose allocation was refused, in nanoseconds (no timing reaches it).
constexpr std::int64_t kRefusedPlan = INT64_MAX;

double predicted_seconds(const model::Plan& p) { return p.prediction.forward.seconds + p.prediction.backward.seconds; }

/// Fills the tensor in `t` with values in [-1, 1) from a hash of each element's index and
/// `seed`: inputs whose scores spread like a model's, the same on every run. A device tensor is
/// filled on the host and copied over as bytes.
template <class TensorView>
void fill_synthetic(const OwnedTensor<TensorView>& t, std::uint64_t seed) {
  using T = typename TensorView::non_const_value_type;
  using Space = typename TensorView::memory_space;
  const std::int64_t bytes = std::int64_t(t.storage.extent(0));
  Kokkos::View<unsigned char*, Kokkos::HostSpace> host;
  if constexpr (engine::kHostMemory<Space>) {
    host = t.storage;
  } else {
    host = allocate_bytes<Kokkos::HostSpace>("rfa::measured_plan::staging", bytes);
  }
  T* data = reinterpret_cast<T*>(host.data());
  for (std::int64_t i = 0; i < bytes / std::int64_t(sizeof(T)); ++i) {
    std::uint64_t h = std::uint64_t(i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    h ^= h >> 31, h *= 0xbf58476d1ce4e5b9ull, h ^= h >> 29;
    data[i] = from_float<T>(float(h >> 40) / float(1ull << 23) - 1.0f);
  }
  if constexpr (!engine::kHostMemory<Space>) Kokkos::deep_copy(t.storage, host);
}

/// A call's tensors for `config` on one rank holding `L` rows, in memory `Space`
/// (core/allocation.hpp: RFA_ERROR_OUT_OF_MEMORY where the allocator refuses).
template <class T, class Space>
struct SyntheticCall {
  using Tensor4 = engine::SpaceTensor4<T, Space>;
  OwnedTensor<Tensor4> q, k, v, out, dout, dq, dk, dv;
  OwnedTensor<engine::SpaceTensor3<float, Space>> lse;

  SyntheticCall(const engine::AttentionConfig& c, std::int64_t L)
      : q(allocate_tensor<Tensor4>("rfa::measured_plan::q", c.batch, L, c.heads, c.head_dim)),
        k(allocate_tensor<Tensor4>("rfa::measured_plan::k", c.batch, L, c.kv_heads, c.head_dim)),
        v(allocate_tensor<Tensor4>("rfa::measured_plan::v", c.batch, L, c.kv_heads, c.dv())),
        out(allocate_tensor<Tensor4>("rfa::measured_plan::out", c.batch, L, c.heads, c.dv())),
        dout(allocate_tensor<Tensor4>("rfa::measured_plan::dout", c.batch, L, c.heads, c.dv())),
        dq(allocate_tensor<Tensor4>("rfa::measured_plan::dq", c.batch, L, c.heads, c.head_dim)),
        dk(allocate_tensor<Tensor4>("rfa::measured_plan::dk", c.batch, L, c.kv_heads, c.head_dim)),
        dv(allocate_tensor<Tensor4>("rfa::measured_plan::dv", c.batch, L, c.kv_heads, c.dv())),
        lse(allocate_tensor<engine::SpaceTensor3<float, Space>>("rfa::measured_plan::lse", c.batch, c.heads, L)) {
    fill_synthetic(q, 1), fill_synthetic(k, 2), fill_synthetic(v, 3), fill_synthetic(dout, 4);
  }

  engine::ForwardTensors<T, Space> forward() const { return {q.view, k.view, v.view, out.view, lse.view}; }
  engine::StorageGradients<T, Space> backward() const {
    return {q.view, k.view, v.view, out.view, dout.view, lse.view, dq.view, dk.view, dv.view};
  }
};

/// Waits until the engine's queued work is done (host passes return done).
void wait_for_results(engine::AttentionStrategy& engine) {
#if RFA_ENGINE_CUDA
  if (engine.config().device == engine::Device::cuda)
    device::wait_for_stream(engine.cuda_stream(), collective::current_timeout(), "waiting for a measured plan's pass");
#else
  (void)engine;
#endif
}

template <class T, class Space>
std::vector<double> time_rounds(comm::Communicator& comm, engine::AttentionStrategy& engine) {
  std::unique_ptr<SyntheticCall<T, Space>> call;
  comm::check_everywhere(
      comm, [&] { call = std::make_unique<SyntheticCall<T, Space>>(engine.config(), engine.local_seq()); });
  const engine::AnyForwardTensors forward = call->forward();
  const engine::AnyBackwardTensors backward = call->backward();
  std::vector<double> seconds;
  on_timeout(
      [&] {
        for (int round = 0; round <= kMeasuredRounds; ++round) {
          comm.barrier();
          const auto start = std::chrono::steady_clock::now();
          engine.forward(forward);
          engine.backward(backward);
          wait_for_results(engine);
          const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
          if (round > 0) seconds.push_back(took.count());  // round 0 allocates the workspace
        }
      },
      // Work that did not end by the deadline may still use the tensors: kept, not freed.
      [&](const Error&) { keep_for_process(std::move(call)); });
  return seconds;
}

/// time_rounds in the memory space and dtype of `c`, the engine's configuration.
std::vector<double> time_engine_rounds(comm::Communicator& comm, const engine::AttentionConfig& c,
                                       engine::AttentionStrategy& engine) {
  std::vector<double> seconds;
  dispatch_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (c.device == engine::Device::cuda) {
#if RFA_ENGINE_CUDA
      seconds = time_rounds<T, Kokkos::CudaSpace>(comm, engine);
#else
      fail(RFA_ERROR_INTERNAL, "a CUDA configuration in a build whose engine has no CUDA backend");
#endif
    } else {
      seconds = time_rounds<T, Kokkos::HostSpace>(comm, engine);
    }
  });
  return seconds;
}

}  // namespace

double plan_measure_margin(int hosts) {
  const std::string text = env_text(Env::plan_measure);
  if (text.empty()) return hosts > 1 ? kAcrossHostsMeasureMargin : 0.0;
  // Digits with at most one decimal point, read whatever the process's locale.
  double percent = -1;
  const bool digits = text.find_first_not_of("0123456789.") == std::string::npos &&
                      std::count(text.begin(), text.end(), '.') <= 1 &&
                      text.find_first_of("0123456789") != std::string::npos;
  if (digits) {
    std::istringstream in(text);
    in.imbue(std::locale::classic());
    in >> percent;
  }
  if (!digits || !std::isfinite(percent) || percent < 0 || percent > 1000)
    fail(RFA_ERROR_INVALID_ARGUMENT, env_name(Env::plan_measure), " is '", text,
         "'; it must be a percentage from 0 (the model alone) to 1000: the automatic strategy measures the plans "
         "the model predicts within that margin of its best");
  return percent / 100.0;
}

std::vector<std::size_t> plans_to_measure(const std::vector<model::Plan>& plans, double margin, std::size_t most) {
  std::vector<std::size_t> chosen;
  if (plans.empty()) return chosen;
  const double limit = predicted_seconds(plans.front()) * (1.0 + margin);
  for (std::size_t i = 0; i < plans.size() && chosen.size() < std::max<std::size_t>(1, most); ++i)
    if (i == 0 || predicted_seconds(plans[i]) <= limit) chosen.push_back(i);
  return chosen;
}

MeasuredPlans fastest_measured(comm::Communicator& comm, const std::vector<model::Plan>& plans,
                               const std::vector<std::size_t>& measured,
                               const std::function<std::vector<double>(const model::Plan&)>& time_plan,
                               double budget_seconds) {
  require(!measured.empty(), "no plan to measure");
  MeasuredPlans m;
  m.budget_seconds = budget_seconds;
  bool found = false;
  double best = 0;
  for (std::size_t j = 0; j < measured.size(); ++j) {
    if (j > 0 && m.spent_seconds >= budget_seconds) {
      m.not_timed = measured.size() - j;
      break;
    }
    std::vector<std::int64_t> nanoseconds(std::size_t(kMeasuredRounds), kRefusedPlan);
    try {
      const std::vector<double> rounds = time_plan(plans.at(measured[j]));
      require(rounds.size() == std::size_t(kMeasuredRounds), "a measured plan gave ", rounds.size(), " rounds, not ",
              kMeasuredRounds);
      for (std::size_t r = 0; r < rounds.size(); ++r)
        nanoseconds[r] = std::min<std::int64_t>(std::llround(rounds[r] * 1e9), kRefusedPlan - 1);
    } catch (const AgreedError& e) {
      // An allocation refused on some rank, raised on every rank together: the plan does not
      // fit beside the measurement's own tensors (and perhaps not at all); the others may.
      if (e.code() != RFA_ERROR_OUT_OF_MEMORY) throw;
    }
    // Every rank then holds the same slowest-rank rounds: the same choice and the same budget.
    comm.allreduce_inplace(nanoseconds.data(), nanoseconds.size(), comm::ReduceOp::max);
    m.measured.push_back(measured[j]);
    const std::int64_t least = *std::min_element(nanoseconds.begin(), nanoseconds.end());
    const double s = least == kRefusedPlan ? HUGE_VAL : double(least) * 1e-9;
    m.seconds.push_back(s);
    if (least == kRefusedPlan) continue;
    double rounds_seconds = 0;
    for (std::int64_t ns : nanoseconds) rounds_seconds += double(ns) * 1e-9;
    m.spent_seconds += rounds_seconds * double(kMeasuredRounds + 1) / double(kMeasuredRounds);
    if (!found || s < best || (s == best && measured[j] < m.fastest)) best = s, m.fastest = measured[j];
    found = true;
  }
  m.all_refused = !found;
  if (m.all_refused) m.fastest = 0;
  return m;
}

std::vector<double> time_plan_rounds(comm::Communicator& comm, const engine::AttentionConfig& config,
                                     const model::Plan& plan) {
  engine::AttentionConfig c = config;
  c.layout = plan.layout;
  std::unique_ptr<engine::AttentionStrategy> engine = engine::make_strategy(comm, c, plan.choice);
  return on_timeout([&] { return time_engine_rounds(comm, c, *engine); },
                    // Its destruction would wait for work that did not end by the deadline: kept instead.
                    [&](const Error&) { keep_for_process(std::move(engine)); });
}

std::string explain_measured(const std::vector<model::Plan>& plans, const MeasuredPlans& m, double margin,
                             int by_default_hosts) {
  auto ms = [](double s) { return general_number(1e3 * s, 4); };
  std::size_t winner = 0;
  for (std::size_t j = 0; j < m.measured.size(); ++j)
    if (m.measured[j] == m.fastest) winner = j;
  const std::string margin_text = general_number(100.0 * margin, 6) + "%";
  const model::Plan& modelled = plans.front();
  const std::string predicted = modelled.name() + ", predicted " + ms(modelled.prediction.forward.seconds) + " + " +
                                ms(modelled.prediction.backward.seconds) + " ms";
  const std::string source = by_default_hosts > 1 ? "RFA_PLAN_MEASURE unset: the default where the ranks span " +
                                                        std::to_string(by_default_hosts) + " hosts"
                                                  : std::string("RFA_PLAN_MEASURE");
  if (m.all_refused)
    return modelled.name() + ": the model's first plan: every plan it predicts within " + margin_text +
           " of its best ran out of memory when measured (" + source + "); " + predicted;
  std::string s = plans.at(m.fastest).name() + ": measured " + ms(m.seconds[winner]) +
                  " ms forward + backward, the fastest of " + std::to_string(m.measured.size()) +
                  (m.measured.size() == 1 ? " plan" : " plans") + " the model predicts within " + margin_text +
                  " of its best (" + source + "; docs/performance-model.md)";
  if (m.not_timed > 0) {
    s += ", " + std::to_string(m.not_timed) + " more left untimed (measuring had taken " +
         general_number(m.spent_seconds, 3) + " s of its " + general_number(m.budget_seconds, 6) + " s budget)";
  }
  bool first = true;
  for (std::size_t j = 0; j < m.measured.size(); ++j) {
    if (j == winner) continue;
    s += std::string(first ? "; then " : ", ") + plans.at(m.measured[j]).name() +
         (std::isinf(m.seconds[j]) ? std::string(" out of memory") : " " + ms(m.seconds[j]) + " ms");
    first = false;
  }
  return s + "; the model alone: " + predicted;
}

}  // namespace setup
}  // namespace rfa
