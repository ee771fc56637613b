// SPDX-License-Identifier: BSD-3-Clause
#include "strategy_compare.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/error.hpp"
#include "cpu_peak.hpp"
#include "layout/sequence_layout.hpp"
#include "ring_problem.hpp"

namespace rfa {
namespace perf {
namespace {

struct PassFigures {
  double seconds = 1e300;          ///< best of repeat, slowest rank
  std::int64_t bytes_sent = 0;     ///< most any rank sent
  std::int64_t workspace = 0;      ///< most any rank allocated
};

std::int64_t max_over(comm::Communicator& comm, std::int64_t v) { return comm.allreduce(v, comm::ReduceOp::max); }

void keep_best(comm::Communicator& comm, const engine::AttentionStrategy& attn, PassFigures& f) {
  const double s = double(max_over(comm, std::int64_t(attn.last_timings().total * 1e9))) * 1e-9;
  if (s < f.seconds) f.seconds = s;
  f.bytes_sent = max_over(comm, attn.last_timings().bytes_sent);
  f.workspace = max_over(comm, attn.last_workspace_bytes());
}

std::string choice_name(const engine::StrategyChoice& c) {
  std::string name = engine::strategy_name(c.kind);
  if (c.kind == engine::StrategyKind::hybrid) name += ":" + std::to_string(c.ulysses_degree);
  return name;
}

template <class T>
void measure(comm::Communicator& comm, const RunOptions& o, const engine::StrategyChoice& choice) {
  std::unique_ptr<engine::AttentionStrategy> attn;
  try {
    attn = engine::make_strategy(comm, ring_config(o), choice);  // fails on every rank together
  } catch (const Error& e) {
    if (comm.rank() == 0) std::printf("%-12s skipped: %s\n", choice_name(choice).c_str(), e.what());
    return;
  }
  LocalProblem<T> lp(*attn);
  lp.forward(*attn);  // untimed: first-touch and first-rendezvous costs out of the figures
  lp.backward(*attn);
  PassFigures fwd, bwd;
  for (int r = 0; r < o.repeat; ++r) {
    comm.barrier();
    lp.forward(*attn);
    keep_best(comm, *attn, fwd);
    comm.barrier();
    lp.backward(*attn);
    keep_best(comm, *attn, bwd);
  }
  if (comm.rank() != 0) return;
  const double MiB = 1024.0 * 1024.0;
  std::printf("%-12s %9.1f %9.1f %10.2f %10.2f %10.2f %10.2f\n", choice_name(choice).c_str(), 1e3 * fwd.seconds,
              1e3 * bwd.seconds, double(fwd.bytes_sent) / MiB, double(bwd.bytes_sent) / MiB,
              double(fwd.workspace) / MiB, double(bwd.workspace) / MiB);
}

}  // namespace

std::vector<engine::StrategyChoice> parse_strategies(const std::string& text, int ranks) {
  using engine::StrategyKind;
  std::vector<engine::StrategyChoice> choices;
  if (text == "all") {
    choices = {{StrategyKind::ring, 0, 1}, {StrategyKind::ulysses, 0, 1}, {StrategyKind::allgather, 0, 1}};
    if (ranks > 2 && ranks % 2 == 0) choices.push_back({StrategyKind::hybrid, 2, 1});
    return choices;
  }
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    engine::StrategyChoice c;
    if (item == "ring") {
      c.kind = StrategyKind::ring;
    } else if (item == "ulysses") {
      c.kind = StrategyKind::ulysses;
    } else if (item == "allgather") {
      c.kind = StrategyKind::allgather;
    } else if (item.rfind("hybrid:", 0) == 0 && item.size() > 7 &&
               item.find_first_not_of("0123456789", 7) == std::string::npos) {
      c.kind = StrategyKind::hybrid;
      c.ulysses_degree = std::stoi(item.substr(7));
    } else {
      fail(RFA_ERROR_INVALID_ARGUMENT, "--strategy: '", item,
           "' is not one of ring, ulysses, allgather, hybrid:PU (e.g. hybrid:2), or all");
    }
    choices.push_back(c);
  }
  require(!choices.empty(), "--strategy needs at least one strategy");
  return choices;
}

void compare_strategies(comm::Communicator& comm, const RunOptions& o,
                        const std::vector<engine::StrategyChoice>& choices) {
  if (comm.rank() == 0) {
    std::printf("rfa_ring_bench --strategy: B=%lld S=%lld H=%lld/%lld d=%lld %s %s %s, P=%d, %d host thread(s)/rank\n",
                (long long)o.batch, (long long)o.seq, (long long)o.heads, (long long)o.kv_heads,
                (long long)o.head_dim, dtype_name(o.dtype), o.mask == RFA_MASK_CAUSAL ? "causal" : "non-causal",
                layout::layout_name(o.layout), comm.size(), Kokkos::DefaultHostExecutionSpace().concurrency());
    std::printf("%-12s %9s %9s %10s %10s %10s %10s\n", "strategy", "fwd ms", "bwd ms", "fwd MiB tx", "bwd MiB tx",
                "fwd MiB ws", "bwd MiB ws");
  }
  for (const engine::StrategyChoice& choice : choices) {
    dispatch_dtype(o.dtype, [&](auto tag) {
      measure<decltype(tag)>(comm, o, choice);
      return 0;
    });
  }
}

}  // namespace perf
}  // namespace rfa
