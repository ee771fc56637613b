// SPDX-License-Identifier: BSD-3-Clause
// rfa_value_checks_bench: what options.check_values costs a user, measured through the C API.
// Two contexts over the same ranks and options but the checks (OFF and ON); each pair runs
// one rfa_forward and one rfa_backward on each, back to back, and the per-pair ratio of the
// two times is the checks' cost (pairing absorbs a machine's drift). The unchecked call is the
// peer; throughput counts the scores the causal mask leaves visible (perf/common/attention_work.hpp:
// 4 d FLOPs each forward, 2.5 times that backward), "of peak" is of the job's peak measured in
// the same run: one core's, on the products the kernels of this shape run on (fp32 FMAs, or bf16
// AMX tiles or AVX512-BF16 dot products), times the ranks and their host threads.
//
//   mpirun -np 2 --bind-to core rfa_value_checks_bench [--seq S] [--pairs N] [--dtype fp32|bf16] [--json FILE]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "attention_work.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "cpu_peak.hpp"
#include "kernels/bf16_products.hpp"
#include "kernels/flash_attention.hpp"
#include "mpi_program.hpp"
#include "option_errors.hpp"
#include "result_json.hpp"
#include "rfa/rfa_mpi.h"
#include "run_context.hpp"

namespace rfa {
namespace perf {
namespace {

struct ChecksOptions {
  std::int64_t seq = 8192, heads = 4, head_dim = 128;
  int pairs = 5;
  rfa_dtype_t dtype = RFA_DTYPE_FLOAT32;
  std::string json;
  bool help = false;
};

const char* kUsage = R"( [options]

Times rfa_forward and rfa_backward with options.check_values OFF and ON (two contexts, one
call of each back to back per pair) and prints the checks' cost as the median per-pair
ratio. B=1, causal, zigzag, H = Hkv heads.

  --seq S            whole sequence length (default 8192; a multiple of 2 x ranks)
  --heads H          heads (default 4)
  --head-dim D       head dimension (default 128)
  --dtype fp32|bf16  storage type (default fp32)
  --pairs N          timed pairs (default 5)
  --json FILE        also write the results as JSON (rank 0), perf/'s result format
  --kokkos-help      Kokkos' own options
  --help             this text
)";

ChecksOptions parse(int argc, char** argv) {
  ChecksOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      require(i + 1 < argc, flag, " needs a value (see --help)");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else if (flag == "--seq") {
      o.seq = whole_number(flag, value(), 2);
    } else if (flag == "--heads") {
      o.heads = whole_number(flag, value(), 1);
    } else if (flag == "--head-dim") {
      o.head_dim = whole_number(flag, value(), 8);
    } else if (flag == "--pairs") {
      o.pairs = whole_int(flag, value(), 1);
    } else if (flag == "--dtype") {
      const std::string d = value();
      require(d == "fp32" || d == "bf16", "--dtype expects fp32 or bf16, got '", d, "'");
      o.dtype = d == "fp32" ? RFA_DTYPE_FLOAT32 : RFA_DTYPE_BFLOAT16;
    } else if (flag == "--json") {
      o.json = value();
    } else {
      fail(RFA_ERROR_INVALID_ARGUMENT, "unknown option '", flag, "' (see --help)");
    }
  }
  return o;
}

void check(rfa_result_t rc, const char* call) {
  if (rc != RFA_SUCCESS) fail(rc, call, " failed: ", rfa_get_last_error_message());
}

/// One context and this rank's tensors (random values, the same on every run).
class Problem {
 public:
  Problem(const ChecksOptions& opts, rfa_value_checks_t checks) {
    rfa_options_t o;
    rfa_options_init(&o);
    o.layout = RFA_LAYOUT_ZIGZAG;
    o.mask = RFA_MASK_CAUSAL;
    o.dtype = opts.dtype;
    o.ring_order = RFA_RING_ORDER_IDENTITY;
    o.seq_total = opts.seq;
    o.heads = opts.heads;
    o.kv_heads = opts.heads;
    o.head_dim = opts.head_dim;
    o.check_values = checks;
    check(rfa_context_create(MPI_COMM_WORLD, &o, &ctx_), "rfa_context_create");
    std::int64_t L = 0;
    check(rfa_context_get_local_seq(ctx_, &L), "rfa_context_get_local_seq");
    const std::size_t n = std::size_t(L * opts.heads * opts.head_dim) * dtype_size(opts.dtype);
    for (std::vector<unsigned char>* t : {&q_, &k_, &v_, &out_, &dout_, &dq_, &dk_, &dv_}) t->resize(n);
    std::srand(7);
    for (std::vector<unsigned char>* t : {&q_, &k_, &v_, &dout_}) fill(*t, opts.dtype);
    lse_.resize(std::size_t(L * opts.heads));
  }
  ~Problem() { rfa_context_destroy(ctx_); }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  void forward() { check(rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), lse_.data()), "rfa_forward"); }
  void backward() {
    check(rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), dout_.data(), lse_.data(), dq_.data(),
                       dk_.data(), dv_.data()),
          "rfa_backward");
  }

 private:
  static void fill(std::vector<unsigned char>& bytes, rfa_dtype_t dtype) {
    const std::size_t size = dtype_size(dtype), n = bytes.size() / size;
    for (std::size_t i = 0; i < n; ++i) {
      const float x = float(std::rand()) / float(RAND_MAX) - 0.5f;
      if (dtype == RFA_DTYPE_FLOAT32) {
        std::memcpy(&bytes[i * size], &x, size);
      } else {
        bf16_t b;
        from_float(x, b);
        std::memcpy(&bytes[i * size], &b, size);
      }
    }
  }
  rfa_context_t ctx_ = nullptr;
  std::vector<unsigned char> q_, k_, v_, out_, dout_, dq_, dk_, dv_;
  std::vector<float> lse_;
};

/// Collective: `pass` once on every rank, timed from a barrier to the slowest rank's end.
template <class Pass>
double timed(Pass&& pass) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  pass();
  double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return mine;
}

int bench(int me, int ranks, const ChecksOptions& o) {
  Problem off(o, RFA_VALUE_CHECKS_OFF), on(o, RFA_VALUE_CHECKS_ON);
  off.forward(), on.forward(), off.backward(), on.backward();  // warm-up: first-touch, Kokkos
  MaskShape mask;
  mask.seq = o.seq;
  mask.causal = true;
  const double visible = visible_scores(mask);
  const double flops[2] = {visible_flops(1, double(o.heads), double(o.head_dim), visible, false),
                           visible_flops(1, double(o.heads), double(o.head_dim), visible, true)};
  // The products the host kernels run this shape's blocks on, and one core's peak on them.
  const kernels::AttentionParams shape =
      kernels::make_params(1, o.seq / ranks, o.seq, o.heads, o.heads, o.head_dim, RFA_MASK_CAUSAL);
  const kernels::Bf16Products products =
      o.dtype == RFA_DTYPE_BFLOAT16 ? kernels::host_bf16_products(shape) : kernels::Bf16Products::none;
  const int threads = Kokkos::DefaultHostExecutionSpace().concurrency();
  const double peak = measure_core_peak(products) * 1e-9 * ranks * threads;
  const char* peak_kind = products == kernels::Bf16Products::amx_tiles    ? "bf16 AMX tiles"
                          : products == kernels::Bf16Products::avx512_dot ? "AVX512-BF16 dot products"
                                                                          : "fp32 FMAs";
  std::vector<BenchCase> cases;
  if (me == 0) {
    std::printf(
        "rfa_value_checks_bench: %d rank%s, S=%lld H=%lld d=%lld %s causal zigzag, %d pairs; GFLOP/s over the "
        "visible scores; the job's measured peak %.1f GFLOP/s (%s, %d rank(s) x %d thread(s))\n",
        ranks, ranks == 1 ? "" : "s", (long long)o.seq, (long long)o.heads, (long long)o.head_dim,
        o.dtype == RFA_DTYPE_FLOAT32 ? "fp32" : "bf16", o.pairs, peak, peak_kind, ranks, threads);
    std::printf("%-9s %14s %14s %13s %12s\n", "pass", "off GFLOP/s", "on GFLOP/s", "of peak", "checks cost");
  }
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> t_off, t_on, ratio;
    for (int p = 0; p < o.pairs; ++p) {
      t_off.push_back(timed([&] { pass == 0 ? off.forward() : off.backward(); }));
      t_on.push_back(timed([&] { pass == 0 ? on.forward() : on.backward(); }));
      ratio.push_back(t_on.back() / t_off.back());
    }
    const char* name = pass == 0 ? "forward" : "backward";
    for (int checked = 0; checked < 2; ++checked) {
      BenchCase c;
      c.name = std::string("value_checks/") + name + (checked ? "/on" : "/off");
      c.labels = {{"suite", "value_checks"},
                  {"pass", name},
                  {"checks", checked ? "on" : "off"},
                  {"dtype", o.dtype == RFA_DTYPE_FLOAT32 ? "fp32" : "bf16"},
                  {"shape", "S=" + std::to_string(o.seq) + " H=" + std::to_string(o.heads)}};
      for (double s : checked ? t_on : t_off) {
        Repetition r;
        r.seconds = s;
        r.counters["gflops"] = flops[pass] / s * 1e-9;
        r.counters["peak_fraction"] = flops[pass] / s * 1e-9 / peak;
        c.repetitions.push_back(r);
      }
      if (checked) c.counters["cost_median_ratio"] = median(ratio) - 1.0;
      cases.push_back(std::move(c));
    }
    if (me == 0) {
      const double g_off = flops[pass] / median(t_off) * 1e-9, g_on = flops[pass] / median(t_on) * 1e-9;
      std::printf("%-9s %14.1f %14.1f %12.1f%% %+11.2f%%  (pairs: %+.2f%% .. %+.2f%%)\n", name, g_off, g_on,
                  100.0 * g_off / peak, 100.0 * (median(ratio) - 1.0),
                  100.0 * (*std::min_element(ratio.begin(), ratio.end()) - 1.0),
                  100.0 * (*std::max_element(ratio.begin(), ratio.end()) - 1.0));
    }
  }
  if (me == 0 && !o.json.empty()) {
    ContextFields context = collect_run_context("rfa_value_checks_bench");
    set_field(context, "suite", "value_checks");
    set_field(context, "ranks", std::to_string(ranks));
    set_field(context, "strategy", "ring");
    write_results_json(o.json, context, cases);
    std::printf("results written to %s\n", o.json.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace perf
}  // namespace rfa

int main(int argc, char** argv) {
  return rfa::perf::run_mpi_program(argc, argv, "rfa_value_checks_bench", [](int world_rank, int args, char** argv_) {
    rfa::perf::ChecksOptions opts;
    try {
      opts = rfa::perf::refused_as_rfa_error([&] { return rfa::perf::parse(args, argv_); });
    } catch (const rfa::Error& e) {
      if (world_rank == 0) std::fprintf(stderr, "rfa_value_checks_bench: error: %s\n", e.what());
      return 2;
    }
    if (opts.help) {
      if (world_rank == 0) std::printf("usage: mpirun -np P %s%s", argv_[0], rfa::perf::kUsage);
      return 0;
    }
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    return rfa::perf::bench(world_rank, ranks, opts);
  });
}
