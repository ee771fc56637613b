// Throughput of the rfa_cuda forward and backward kernels, FlashAttention's FLOP convention
// (forward 4*B*S^2*H*d, halved when causal; backward 2.5x forward), CUDA events after
// warm-up, median of the runs. When PyTorch is importable the same shapes go through
// torch.nn.functional.scaled_dot_product_attention (flash backend) in the same run, via
// bench/sdpa_peer.py, and the ratio is printed. Without a GPU: a message and exit 77.
//
// usage: rfa_cuda_kernel_bench [--batch 2] [--heads 16] [--kv-heads H] [--seq 8192]
//        [--dim 128] [--dtype bf16|fp16] [--warmup 5] [--iters 30] [--json FILE]
//        [--no-torch] [--torch-script PATH]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rfa_cuda/flash.h"
#include "test_support.cuh"

#ifndef RFA_CUDA_SDPA_SCRIPT
#define RFA_CUDA_SDPA_SCRIPT "kernels_cuda/bench/sdpa_peer.py"
#endif

using namespace rfa_cuda_test;

namespace {

struct Options {
  int batch = 2, heads = 16, kv_heads = 0, seq = 8192, dim = 128, warmup = 5, iters = 30;
  rfa_cuda_dtype dtype = RFA_CUDA_BF16;
  std::string json, torch_script = RFA_CUDA_SDPA_SCRIPT;
  bool torch = true;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--batch") o.batch = std::atoi(value());
    else if (a == "--heads") o.heads = std::atoi(value());
    else if (a == "--kv-heads") o.kv_heads = std::atoi(value());
    else if (a == "--seq") o.seq = std::atoi(value());
    else if (a == "--dim") o.dim = std::atoi(value());
    else if (a == "--warmup") o.warmup = std::atoi(value());
    else if (a == "--iters") o.iters = std::atoi(value());
    else if (a == "--dtype") o.dtype = std::strcmp(value(), "fp16") == 0 ? RFA_CUDA_FP16 : RFA_CUDA_BF16;
    else if (a == "--json") o.json = value();
    else if (a == "--no-torch") o.torch = false;
    else if (a == "--torch-script") o.torch_script = value();
    else {
      std::fprintf(stderr, "unknown option %s (see the comment at the top of kernel_bench.cu)\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.kv_heads == 0) o.kv_heads = o.heads;
  return o;
}

// Median milliseconds of `iters` timed runs of fn after `warmup` untimed ones.
template <typename Fn>
double median_ms(const Options& o, Fn&& fn) {
  for (int i = 0; i < o.warmup; ++i) fn();
  cudaEvent_t start, stop;
  RFA_TEST_CUDA(cudaEventCreate(&start));
  RFA_TEST_CUDA(cudaEventCreate(&stop));
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i) {
    RFA_TEST_CUDA(cudaEventRecord(start));
    fn();
    RFA_TEST_CUDA(cudaEventRecord(stop));
    RFA_TEST_CUDA(cudaEventSynchronize(stop));
    float ms = 0.f;
    RFA_TEST_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double forward_flops(const Options& o, bool causal) {
  const double f = 4.0 * o.batch * double(o.seq) * o.seq * o.heads * o.dim;
  return causal ? f / 2 : f;
}

// Runs the PyTorch peer; returns its "key value" lines (milliseconds), empty if unavailable.
std::map<std::string, double> run_torch_peer(const Options& o) {
  std::map<std::string, double> result;
  if (!o.torch) return result;
  if (std::system("python3 -c 'import torch' > /dev/null 2>&1") != 0) {
    std::printf("PyTorch not importable: no peer measurement\n");
    return result;
  }
  const std::string cmd = "python3 '" + o.torch_script + "' --batch " + std::to_string(o.batch) +
                          " --heads " + std::to_string(o.heads) + " --kv-heads " + std::to_string(o.kv_heads) +
                          " --seq " + std::to_string(o.seq) + " --dim " + std::to_string(o.dim) + " --dtype " +
                          (o.dtype == RFA_CUDA_FP16 ? "fp16" : "bf16") + " --warmup " + std::to_string(o.warmup) +
                          " --iters " + std::to_string(o.iters);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return result;
  char key[128];
  double value = 0;
  while (std::fscanf(pipe, "%127s %lf", key, &value) == 2) result[key] = value;
  if (pclose(pipe) != 0) std::printf("PyTorch peer failed (%s)\n", cmd.c_str());
  return result;
}

struct Row {
  std::string pass;
  bool causal;
  double ms, tflops, torch_ms;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!cuda_device_present()) {
    std::printf("no CUDA device: skipping the benchmark\n");
    return kSkipExitCode;
  }
  cudaDeviceProp prop{};
  RFA_TEST_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %s d=%d B=%d H=%d Hkv=%d S=%d\n", prop.name,
              o.dtype == RFA_CUDA_FP16 ? "fp16" : "bf16", o.dim, o.batch, o.heads, o.kv_heads, o.seq);

  const std::size_t q_elems = std::size_t(o.batch) * o.seq * o.heads * o.dim;
  const std::size_t kv_elems = std::size_t(o.batch) * o.seq * o.kv_heads * o.dim;
  const std::size_t lse_elems = std::size_t(o.batch) * o.heads * o.seq;
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](std::size_t n) {
    std::vector<double> x(n);
    for (double& v : x) v = u(rng);
    return x;
  };
  DeviceArray q(o.dtype, q_elems), k(o.dtype, kv_elems), v(o.dtype, kv_elems), dout(o.dtype, q_elems),
      out(o.dtype, q_elems), dq(o.dtype, q_elems), dk(o.dtype, kv_elems), dv(o.dtype, kv_elems),
      lse(RFA_CUDA_FP32, lse_elems), delta(RFA_CUDA_FP32, lse_elems);
  q.upload(random(q_elems));
  k.upload(random(kv_elems));
  v.upload(random(kv_elems));
  dout.upload(random(q_elems));

  std::vector<Row> rows;
  for (bool causal : {false, true}) {
    rfa_cuda_attention_shape s{};
    s.batch = o.batch;
    s.seq_q = s.seq_k = o.seq;
    s.heads = o.heads;
    s.kv_heads = o.kv_heads;
    s.head_dim = o.dim;
    s.mask = causal ? RFA_CUDA_MASK_CAUSAL : RFA_CUDA_MASK_NONE;
    s.dtype = o.dtype;

    rfa_cuda_forward_params f;
    rfa_cuda_forward_params_init(&f);
    f.shape = s;
    f.q = q.get();
    f.k = k.get();
    f.v = v.get();
    f.out = out.get();
    f.out_dtype = o.dtype;
    f.lse = lse.as_float();
    const double fwd_ms = median_ms(o, [&] { RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr)); });

    rfa_cuda_delta_params dp{};
    dp.batch = o.batch;
    dp.seq = o.seq;
    dp.heads = o.heads;
    dp.head_dim = o.dim;
    dp.out = out.get();
    dp.out_dtype = o.dtype;
    dp.dout = dout.get();
    dp.dout_dtype = o.dtype;
    dp.delta = delta.as_float();
    rfa_cuda_backward_params bp;
    rfa_cuda_backward_params_init(&bp);
    bp.shape = s;
    bp.q = q.get();
    bp.k = k.get();
    bp.v = v.get();
    bp.dout = dout.get();
    bp.lse = lse.as_float();
    bp.delta = delta.as_float();
    bp.grad_mode = RFA_CUDA_GRAD_STORE;  // same outputs as PyTorch's backward
    bp.dq = dq.get();
    bp.dk = dk.get();
    bp.dv = dv.get();
    DeviceArray workspace(RFA_CUDA_FP32, rfa_cuda_backward_workspace_size(&bp) / 4);
    bp.workspace = workspace.get();
    // The backward as a training step sees it: D, then the gradient kernel (+ dq conversion).
    const double bwd_ms = median_ms(o, [&] {
      RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));
      RFA_TEST_CALL(rfa_cuda_flash_backward(&bp, nullptr));
    });
    const double flops = forward_flops(o, causal);
    rows.push_back({"forward", causal, fwd_ms, flops / (fwd_ms * 1e9), 0});
    rows.push_back({"backward", causal, bwd_ms, 2.5 * flops / (bwd_ms * 1e9), 0});
  }

  const std::map<std::string, double> peer = run_torch_peer(o);
  std::printf("%-9s %-7s %10s %9s %12s %8s\n", "pass", "mask", "ms", "TFLOP/s", "torch ms", "ratio");
  for (Row& r : rows) {
    const std::string key = r.pass.substr(0, 3) + (r.causal ? "_causal" : "_full");
    const auto it = peer.find(key);
    r.torch_ms = it == peer.end() ? 0 : it->second;
    std::printf("%-9s %-7s %10.3f %9.1f", r.pass.c_str(), r.causal ? "causal" : "full", r.ms, r.tflops);
    if (r.torch_ms > 0) std::printf(" %12.3f %8.2f\n", r.torch_ms, r.torch_ms / r.ms);
    else std::printf(" %12s %8s\n", "-", "-");
  }

  if (!o.json.empty()) {
    FILE* j = std::fopen(o.json.c_str(), "w");
    if (j == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", o.json.c_str());
      return 1;
    }
    std::fprintf(j, "{\n  \"device\": \"%s\",\n  \"dtype\": \"%s\",\n  \"batch\": %d, \"heads\": %d, "
                    "\"kv_heads\": %d, \"seq\": %d, \"head_dim\": %d,\n  \"results\": [\n",
                 prop.name, o.dtype == RFA_CUDA_FP16 ? "fp16" : "bf16", o.batch, o.heads, o.kv_heads, o.seq, o.dim);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::fprintf(j, "    {\"pass\": \"%s\", \"causal\": %s, \"ms\": %.4f, \"tflops\": %.2f", r.pass.c_str(),
                   r.causal ? "true" : "false", r.ms, r.tflops);
      if (r.torch_ms > 0) std::fprintf(j, ", \"torch_ms\": %.4f, \"speedup_vs_torch\": %.3f", r.torch_ms, r.torch_ms / r.ms);
      std::fprintf(j, "}%s\n", i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(j, "  ]\n}\n");
    std::fclose(j);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return 0;
}
