// SPDX-License-Identifier: BSD-3-Clause
// Throughput of the rfa_cuda forward and backward kernels over the scores the mask leaves
// visible (perf/common/attention_work.hpp: 4 d FLOPs per visible score forward, 2.5x that
// backward; causal: S(S+1)/2 per head), CUDA events after
// warm-up, median of the runs. The same shapes then go through
// torch.nn.functional.scaled_dot_product_attention with its FlashAttention-2 ("flash") and
// cuDNN backends in the same run, via perf/cuda/sdpa_peer.py, and both ratios are printed; a peer
// that cannot run says why in the table's place and in the JSON. The peer script also measures
// the device's peak, a large matrix product in the dtype through PyTorch on random data, and
// every row says its fraction of it ("of peak"; `peak_fraction` in the JSON, the peak in its
// context). Without a GPU: a message and exit 77.
//
// usage: rfa_cuda_kernel_bench [options]: kUsage below (--help prints it).
// --value-dim gives V, out, dout and dV a head dim of their own (MLA's 192 / 128: --dim 192
// --value-dim 128); the FLOPs are then 2 (d + dv) per visible score forward and 6 d + 4 dv
// backward (perf/common/attention_work.hpp), the peers get V in that dim too.
// --deterministic adds rows "bwd-det": the backward in its deterministic mode (no atomics).
// --path picks the kernels' implementation (rfa_cuda_path; default auto); "all" times the sm80
// path and, where it runs, the Hopper one (rows "fwd-sm90", "bwd-sm90"), each against the same
// peers. The deterministic backward runs on the sm80 kernels whatever the path.
// --rows-per-warp sets the sm80 forward's query rows a warp (RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP,
// which it overrides; default: the environment's); "both" times the sm80 forward in the other
// layout where the value head dim takes it (rows "fwd-w16" or "fwd-w32") and then in its default
// (rows "forward": on compute capability 9.x 32 rows a warp up to head dim 128, else 16), in one
// run on the same inputs.
// --backward-key-tile sets the sm80 backward's keys a CTA (RFA_CUDA_SM80_BACKWARD_KEY_TILE, which
// it overrides; default: the environment's); "both" times the sm80 backward at its default tile
// (rows "backward": 128 keys up to head dim 64, else 64) and then at the other where the head
// dims take it (rows "bwd-k128" or "bwd-k64"), in one run on the same inputs.
// --peer-check runs only the peers and prints what each reported (no GPU needed to run it,
// but the peers need one to report figures): a quick diagnosis of a missing peer column.
// The peers run under $RFA_PEER_PYTHON (default python3); the script is looked for beside the
// executable (the build copies it there), then at its source path.
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attention_work.hpp"
#include "bench_results.hpp"
#include "command_line.hpp"
#include "rfa_cuda/flash.h"
#include "sm80_layout_settings.hpp"
#include "test_support.cuh"

#ifndef RFA_CUDA_SDPA_SCRIPT
#define RFA_CUDA_SDPA_SCRIPT "perf/cuda/sdpa_peer.py"
#endif

using namespace rfa_cuda_test;

namespace {

struct Options {
  int batch = 2, heads = 16, kv_heads = 0, seq = 8192, dim = 128, value_dim = 0, warmup = 5, iters = 30;
  rfa_cuda_dtype dtype = RFA_CUDA_BF16;
  std::string json, torch_script = RFA_CUDA_SDPA_SCRIPT;
  bool torch = true;
  bool peer_check = false;
  bool deterministic = false;
  std::string path = "auto";
  std::string rows_per_warp;  // "16", "32", "both"; empty: the environment's
  std::string key_tile;       // "64", "128", "both"; empty: the environment's
};

Options parse_options(int argc, char** argv) {
  using rfa::perf::OptionError;
  using rfa::perf::whole_int;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw OptionError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--batch") {
      o.batch = whole_int(a, value(), 1);
    } else if (a == "--heads") {
      o.heads = whole_int(a, value(), 1);
    } else if (a == "--kv-heads") {
      o.kv_heads = whole_int(a, value(), 0);  // 0: --heads
    } else if (a == "--seq") {
      o.seq = whole_int(a, value(), 1);
    } else if (a == "--dim") {
      o.dim = whole_int(a, value(), 1);
    } else if (a == "--value-dim") {
      o.value_dim = whole_int(a, value(), 0);  // 0: --dim
    } else if (a == "--warmup") {
      o.warmup = whole_int(a, value(), 0);
    } else if (a == "--iters") {
      o.iters = whole_int(a, value(), 1);
    } else if (a == "--dtype") {
      const std::string d = value();
      if (d != "bf16" && d != "fp16") throw OptionError("--dtype is bf16 or fp16, not '" + d + "'");
      o.dtype = d == "fp16" ? RFA_CUDA_FP16 : RFA_CUDA_BF16;
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--no-torch") {
      o.torch = false;
    } else if (a == "--torch-script") {
      o.torch_script = value();
    } else if (a == "--peer-check") {
      o.peer_check = true;
    } else if (a == "--deterministic") {
      o.deterministic = true;
    } else if (a == "--path") {
      o.path = value();
    } else if (a == "--rows-per-warp") {
      o.rows_per_warp = value();
      if (o.rows_per_warp != "16" && o.rows_per_warp != "32" && o.rows_per_warp != "both")
        throw OptionError("--rows-per-warp is 16, 32 or both, not '" + o.rows_per_warp + "'");
    } else if (a == "--backward-key-tile") {
      o.key_tile = value();
      if (o.key_tile != "64" && o.key_tile != "128" && o.key_tile != "both")
        throw OptionError("--backward-key-tile is 64, 128 or both, not '" + o.key_tile + "'");
    } else {
      throw OptionError("unknown option " + a + " (see the comment at the top of kernel_bench.cu)");
    }
  }
  if (o.kv_heads == 0) o.kv_heads = o.heads;
  if (o.value_dim == 0) o.value_dim = o.dim;
  if (o.rows_per_warp == "32" && o.value_dim > 128)
    throw OptionError("--rows-per-warp 32 takes value head dims up to 128, not " + std::to_string(o.value_dim));
  if (o.key_tile == "128" && o.dim + o.value_dim > 256)
    throw OptionError("--backward-key-tile 128 takes head dims whose Q/K and V columns add up to at most 256, not " +
                      std::to_string(o.dim) + " + " + std::to_string(o.value_dim));
  if (o.path != "auto" && o.path != "sm80" && o.path != "sm90" && o.path != "all") {
    throw rfa::perf::OptionError("--path is auto, sm80, sm90 or all, not " + o.path);
  }
  return o;
}

// Every timed iteration (the JSON's repetitions) and their median (the table's figure).
struct Timing {
  std::vector<double> samples;
  double median = 0;
};

Timing time_ms(const Options& o, const std::function<void()>& fn) {
  Timing t;
  t.samples = event_samples_ms(o.warmup, o.iters, fn);
  std::vector<double> sorted = t.samples;
  std::sort(sorted.begin(), sorted.end());
  t.median = sorted[sorted.size() / 2];
  return t;
}

double pass_flops(const Options& o, bool causal, bool backward) {
  return rfa::perf::visible_flops(o.batch, o.heads, o.dim, o.value_dim,
                                  rfa::perf::visible_scores(rfa::perf::MaskShape{o.seq, causal, 0, {}, {}}), backward);
}

const char* const kPeers[] = {"flash", "cudnn"};

// One peer's figure for one measurement: milliseconds, or why there is none.
struct PeerResult {
  double ms = 0;
  std::string error = "not reported";
};
using PeerResults = std::map<std::string, std::map<std::string, PeerResult>>;  // [peer][key]

// The device's measured peak (the peer script's "peak matmul_<dtype>" line): TFLOP/s, or why
// there is none.
struct MeasuredPeak {
  double tflops = 0;
  std::string what;  // "matmul_bf16"
  std::string error = "not reported";
};

bool readable(const std::string& path) { return !path.empty() && access(path.c_str(), R_OK) == 0; }

// The peer script beside the executable (where the build copies it), else its source path.
std::string find_peer_script(const Options& o) {
  if (o.torch_script != RFA_CUDA_SDPA_SCRIPT) return o.torch_script;  // given with --torch-script
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<std::size_t>(n));
    dir = dir.substr(0, dir.rfind('/') + 1);
    if (readable(dir + "sdpa_peer.py")) return dir + "sdpa_peer.py";
  }
  return o.torch_script;
}

// Runs perf/cuda/sdpa_peer.py and collects its "<peer> <key> <ms>" and "<peer> <key> error <why>"
// lines, and its "peak <what> <TFLOP/s>" (or "peak <what> error <why>") into `peak`; other lines
// (versions) are echoed. Every peer, and the peak, ends up with a figure or a reason.
PeerResults run_sdpa_peers(const Options& o, MeasuredPeak& peak) {
  PeerResults results;
  auto fail_all = [&](const std::string& why) {
    for (const char* peer : kPeers) results[peer]["all"].error = why;
    peak.error = why;
  };
  if (!o.torch) {
    fail_all("disabled by --no-torch");
    return results;
  }
  const std::string script = find_peer_script(o);
  if (!readable(script)) {
    fail_all("peer script " + script + " not found (pass --torch-script PATH)");
    return results;
  }
  const char* python = std::getenv("RFA_PEER_PYTHON");
  const std::string cmd = std::string(python != nullptr && *python != '\0' ? python : "python3") + " '" + script +
                          "' --batch " + std::to_string(o.batch) + " --heads " + std::to_string(o.heads) +
                          " --kv-heads " + std::to_string(o.kv_heads) + " --seq " + std::to_string(o.seq) + " --dim " +
                          std::to_string(o.dim) + " --value-dim " + std::to_string(o.value_dim) + " --dtype " +
                          (o.dtype == RFA_CUDA_FP16 ? "fp16" : "bf16") + " --warmup " + std::to_string(o.warmup) +
                          " --iters " + std::to_string(o.iters) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    fail_all("cannot start: " + cmd);
    return results;
  }
  char line[1024];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    char peer[64], key[64];
    double ms = 0;
    int used = 0;
    const bool two_words = std::sscanf(line, "%63s %63s %n", peer, key, &used) == 2;
    const bool known_peer = two_words && (std::strcmp(peer, kPeers[0]) == 0 || std::strcmp(peer, kPeers[1]) == 0);
    const bool peak_line = two_words && std::strcmp(peer, "peak") == 0;
    std::string rest = known_peer || peak_line ? std::string(line + used) : std::string();
    while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.pop_back();
    if (peak_line) {
      peak.what = key;
      double tflops = 0;
      if (rest.compare(0, 6, "error ") == 0) {
        peak.error = rest.substr(6);
      } else if (std::sscanf(rest.c_str(), "%lf", &tflops) == 1 && tflops > 0) {
        peak.tflops = tflops;
        peak.error.clear();
      } else {
        peak.error = "unreadable: " + rest;
      }
    } else if (known_peer && rest.compare(0, 6, "error ") == 0) {
      results[peer][key].error = rest.substr(6);
    } else if (known_peer && std::sscanf(rest.c_str(), "%lf", &ms) == 1 && ms > 0) {
      results[peer][key] = PeerResult{ms, ""};
    } else {
      std::printf("peer: %s", line);  // versions, warnings, tracebacks: shown, not parsed
    }
  }
  const int status = pclose(pipe);
  if (status != 0) {  // what the peer did not report before it died gets the exit status
    const std::string why = "peer process exited with status " +
                            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status) + " (see 'peer:' lines)";
    for (const char* peer : kPeers)
      for (const char* key : {"fwd_full", "fwd_causal", "bwd_full", "bwd_causal"})
        if (results[peer].count(key) == 0 && results[peer].count("all") == 0) results[peer][key].error = why;
    if (peak.tflops <= 0 && peak.error == "not reported") peak.error = why;
  }
  return results;
}

// The peer's result for one measurement (a whole-peer failure applies to every key).
PeerResult peer_result(const PeerResults& all, const char* peer, const std::string& key) {
  const auto p = all.find(peer);
  if (p == all.end()) return PeerResult{};
  const auto k = p->second.find(key);
  if (k != p->second.end()) return k->second;
  const auto whole = p->second.find("all");
  return whole != p->second.end() ? whole->second : PeerResult{};
}

struct Row {
  std::string pass;  // forward, fwd-w16, fwd-w32, fwd-sm90, backward, bwd-k128, bwd-k64, bwd-sm90, bwd-det
  bool causal;
  double ms, tflops;
  PeerResult peers[2];               // kPeers order
  std::vector<double> samples = {};  // every timed iteration, ms
  double flops = 0;
  std::string rows_per_warp = "-";  // the sm80 forward's query rows a warp ("-": another pass)
  std::string key_tile = "-";       // the sm80 backward's keys a CTA ("-": another pass)
  // The peer's name for the same measurement: "fwd_full", "bwd_causal", ... (not the pass's
  // first three letters: "for_full" matches no peer line).
  std::string key() const { return std::string(pass[0] == 'f' ? "fwd" : "bwd") + (causal ? "_causal" : "_full"); }
};

}  // namespace

/// --help's text.
const char* const kUsage = R"(rfa_cuda_kernel_bench [--batch 2] [--heads 16] [--kv-heads H] [--seq 8192] [--dim 128]
       [--value-dim DV] [--dtype bf16|fp16] [--warmup 5] [--iters 30] [--json FILE] [--no-torch]
       [--torch-script PATH] [--peer-check] [--deterministic] [--path auto|sm80|sm90|all]
       [--rows-per-warp 16|32|both] [--backward-key-tile 64|128|both]
Throughput of rfa's CUDA forward and backward kernels (none and causal masks), the fraction of
the device's measured peak, and PyTorch SDPA's flash and cuDNN backends on the same shapes in
the same run. perf/cuda/kernel_bench.cu's header says what each option does. Exit 77 without
a GPU.
)";

int main(int argc, char** argv) {
  rfa::perf::exit_on_help(argc, argv, kUsage);
  const Options o = rfa::perf::options_or_exit("rfa_cuda_kernel_bench", [&] { return parse_options(argc, argv); });
  if (o.peer_check) {
    // Through the same rows and keys as the table, so the test covers how rows find peers.
    MeasuredPeak peak;
    const PeerResults peers = run_sdpa_peers(o, peak);
    if (peak.tflops > 0)
      std::printf("peak %s %.4f TFLOP/s\n", peak.what.c_str(), peak.tflops);
    else
      std::printf("peak: %s\n", peak.error.c_str());
    for (const char* peer : kPeers)
      for (const char* pass : {"forward", "backward"})
        for (bool causal : {false, true}) {
          const std::string key = Row{pass, causal, 0, 0, {}}.key();
          const PeerResult r = peer_result(peers, peer, key);
          if (r.ms > 0)
            std::printf("%s %s %.4f ms\n", peer, key.c_str(), r.ms);
          else
            std::printf("%s %s: %s\n", peer, key.c_str(), r.error.c_str());
        }
    return 0;
  }
  if (!cuda_device_present()) {
    std::printf("no CUDA device: skipping the benchmark\n");
    return kSkipExitCode;
  }
  cudaDeviceProp prop{};
  RFA_TEST_CUDA(cudaGetDeviceProperties(&prop, 0));
  // The kernel paths to time, each as the API resolves it on this device.
  std::vector<rfa_cuda_path> paths;
  for (rfa_cuda_path want : o.path == "all"    ? std::vector<rfa_cuda_path>{RFA_CUDA_PATH_SM80, RFA_CUDA_PATH_SM90}
                            : o.path == "sm80" ? std::vector<rfa_cuda_path>{RFA_CUDA_PATH_SM80}
                            : o.path == "sm90" ? std::vector<rfa_cuda_path>{RFA_CUDA_PATH_SM90}
                                               : std::vector<rfa_cuda_path>{RFA_CUDA_PATH_AUTO}) {
    rfa_cuda_path chosen = RFA_CUDA_PATH_SM80;
    if (rfa_cuda_resolve_path(want, &chosen) == RFA_CUDA_SUCCESS) {
      paths.push_back(chosen);
    } else if (o.path == "all") {
      std::printf("kernel path %s skipped: %s\n", rfa_cuda_path_name(want), rfa_cuda_last_error_message());
    } else {
      std::fprintf(stderr, "kernel path %s: %s\n", rfa_cuda_path_name(want), rfa_cuda_last_error_message());
      return 1;
    }
  }
  std::string path_names;
  for (rfa_cuda_path p : paths) path_names += std::string(path_names.empty() ? "" : ",") + rfa_cuda_path_name(p);
  // The sm80 forward's layouts to time: the one asked for (the environment's, else the default),
  // or the other then the default where the head dims take the other.
  constexpr const char* kRowsPerWarp = "RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP";
  if (o.rows_per_warp == "16" || o.rows_per_warp == "32") setenv(kRowsPerWarp, o.rows_per_warp.c_str(), 1);
  const char* environment_rows = std::getenv(kRowsPerWarp);
  const std::string default_rows =
      std::to_string(rfa_cuda::detail::default_forward_rows_per_warp(o.dim, o.value_dim, prop.major));
  const std::string rows_per_warp =
      environment_rows != nullptr && *environment_rows != '\0' ? environment_rows : default_rows;  // one layout's
  const int other_rows_count = rfa_cuda::detail::other_forward_rows_per_warp(o.dim, o.value_dim, prop.major);
  const std::string other_rows = other_rows_count != 0 ? std::to_string(other_rows_count) : "";
  const bool both_layouts = o.rows_per_warp == "both" && !other_rows.empty();
  std::printf("device %s, %s d=%d dv=%d B=%d H=%d Hkv=%d S=%d, kernel path %s, sm80 forward %s rows a warp\n",
              prop.name, o.dtype == RFA_CUDA_FP16 ? "fp16" : "bf16", o.dim, o.value_dim, o.batch, o.heads, o.kv_heads,
              o.seq, path_names.c_str(),
              both_layouts ? (default_rows + " and " + other_rows).c_str() : rows_per_warp.c_str());
  if (o.rows_per_warp == "both" && !both_layouts)
    std::printf("no fwd-w32 rows: 32 rows a warp take value head dims up to 128, not %d\n", o.value_dim);
  // The sm80 backward's key tiles likewise: the one asked for (the environment's, else the
  // default), or the default then the other where the head dims take it.
  constexpr const char* kKeyTile = "RFA_CUDA_SM80_BACKWARD_KEY_TILE";
  if (o.key_tile == "64" || o.key_tile == "128") setenv(kKeyTile, o.key_tile.c_str(), 1);
  const char* environment_tile = std::getenv(kKeyTile);
  const std::string default_tile = std::to_string(rfa_cuda::detail::default_backward_key_tile(o.dim, o.value_dim));
  const std::string key_tile =
      environment_tile != nullptr && *environment_tile != '\0' ? environment_tile : default_tile;  // one tile's
  const int other_keys = rfa_cuda::detail::other_backward_key_tile(o.dim, o.value_dim);
  const std::string other_tile = other_keys != 0 ? std::to_string(other_keys) : "";
  bool both_tiles = o.key_tile == "both" && !other_tile.empty();
  if (both_tiles) {  // the other tile where this device has its shared memory (not 128 at d 128 on 8.6 / 8.9)
    const std::string before = environment_tile != nullptr ? environment_tile : "";
    setenv(kKeyTile, other_tile.c_str(), 1);
    if (rfa_cuda_check_head_dims(o.dim, o.value_dim) != RFA_CUDA_SUCCESS) {
      std::printf("no bwd-k%s rows: %s\n", other_tile.c_str(), rfa_cuda_last_error_message());
      both_tiles = false;
    }
    if (before.empty())
      unsetenv(kKeyTile);
    else
      setenv(kKeyTile, before.c_str(), 1);
  }
  std::printf("sm80 backward: %s keys a block\n",
              both_tiles ? (default_tile + " and " + other_tile).c_str() : key_tile.c_str());
  if (o.key_tile == "both" && other_tile.empty())
    std::printf("no bwd-k128 rows: 128 keys a block take Q/K and V columns up to 256, not %d\n", o.dim + o.value_dim);

  const std::size_t q_elems = std::size_t(o.batch) * o.seq * o.heads * o.dim;
  const std::size_t kv_elems = std::size_t(o.batch) * o.seq * o.kv_heads * o.dim;
  const std::size_t v_elems = std::size_t(o.batch) * o.seq * o.kv_heads * o.value_dim;  // v, dv
  const std::size_t out_elems = std::size_t(o.batch) * o.seq * o.heads * o.value_dim;   // out, dout
  const std::size_t lse_elems = std::size_t(o.batch) * o.heads * o.seq;
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](std::size_t n) {
    std::vector<double> x(n);
    for (double& v : x) v = u(rng);
    return x;
  };
  DeviceArray q(o.dtype, q_elems), k(o.dtype, kv_elems), v(o.dtype, v_elems), dout(o.dtype, out_elems),
      out(o.dtype, out_elems), dq(o.dtype, q_elems), dk(o.dtype, kv_elems), dv(o.dtype, v_elems),
      lse(RFA_CUDA_FP32, lse_elems), delta(RFA_CUDA_FP32, lse_elems);
  q.upload(random(q_elems));
  k.upload(random(kv_elems));
  v.upload(random(v_elems));
  dout.upload(random(out_elems));

  std::vector<Row> rows;
  for (bool causal : {false, true}) {
    rfa_cuda_attention_shape s{};
    s.batch = o.batch;
    s.seq_q = s.seq_k = o.seq;
    s.heads = o.heads;
    s.kv_heads = o.kv_heads;
    s.head_dim = o.dim;
    s.value_head_dim = o.value_dim != o.dim ? o.value_dim : 0;
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
    const double flops = pass_flops(o, causal, false), backward_flops = pass_flops(o, causal, true);
    // sm80 last (with "both", in its default layout after the other): its out and lse feed the
    // backward's delta.
    for (auto path = paths.rbegin(); path != paths.rend(); ++path) {
      f.path = *path;
      const bool both = *path == RFA_CUDA_PATH_SM80 && both_layouts;
      for (const char* rows_setting :
           both ? std::vector<const char*>{other_rows.c_str(), nullptr} : std::vector<const char*>{nullptr}) {
        if (both) {
          if (rows_setting != nullptr)
            setenv(kRowsPerWarp, rows_setting, 1);
          else
            unsetenv(kRowsPerWarp);  // the default; the other passes and the peers run as it has them
        }
        const Timing fwd = time_ms(o, [&] { RFA_TEST_CALL(rfa_cuda_flash_forward(&f, nullptr)); });
        const std::string rows_label = *path == RFA_CUDA_PATH_SM90 ? "-"
                                       : rows_setting != nullptr   ? rows_setting
                                       : both                      ? default_rows
                                                                   : rows_per_warp;
        const std::string pass = *path == RFA_CUDA_PATH_SM90 ? "fwd-sm90"
                                 : rows_setting != nullptr   ? "fwd-w" + rows_label
                                                             : "forward";
        rows.push_back({pass, causal, fwd.median, flops / (fwd.median * 1e9), {}, fwd.samples, flops, rows_label});
      }
    }

    rfa_cuda_delta_params dp{};
    dp.batch = o.batch;
    dp.seq = o.seq;
    dp.heads = o.heads;
    dp.head_dim = o.value_dim;  // out and dout
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
    for (rfa_cuda_path path : paths) {
      bp.path = path;
      const bool both = path == RFA_CUDA_PATH_SM80 && both_tiles;
      for (const char* tile_setting :
           both ? std::vector<const char*>{nullptr, other_tile.c_str()} : std::vector<const char*>{nullptr}) {
        if (both && tile_setting == nullptr) unsetenv(kKeyTile);  // the default first
        if (tile_setting != nullptr) setenv(kKeyTile, tile_setting, 1);
        const Timing bwd = time_ms(o, [&] {
          RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));
          RFA_TEST_CALL(rfa_cuda_flash_backward(&bp, nullptr));
        });
        const std::string tile_label = path == RFA_CUDA_PATH_SM90 ? "-"
                                       : tile_setting             ? tile_setting
                                       : both                     ? default_tile
                                                                  : key_tile;
        const std::string pass = path == RFA_CUDA_PATH_SM90 ? "bwd-sm90"
                                 : tile_setting != nullptr  ? "bwd-k" + tile_label
                                                            : "backward";
        Row row{pass, causal, bwd.median, backward_flops / (bwd.median * 1e9), {}, bwd.samples, backward_flops};
        row.key_tile = tile_label;
        rows.push_back(row);
      }
      if (both) unsetenv(kKeyTile);  // the deterministic pass runs as the default had it
    }
    bp.path = RFA_CUDA_PATH_AUTO;
    if (o.deterministic) {
      bp.deterministic = 1;
      const Timing det = time_ms(o, [&] {
        RFA_TEST_CALL(rfa_cuda_attention_delta(&dp, nullptr));
        RFA_TEST_CALL(rfa_cuda_flash_backward(&bp, nullptr));
      });
      bp.deterministic = 0;
      Row row{"bwd-det", causal, det.median, backward_flops / (det.median * 1e9), {}, det.samples, backward_flops};
      const char* tile_now = std::getenv(kKeyTile);  // its dK/dV pass's tile
      row.key_tile = tile_now != nullptr && *tile_now != '\0' ? tile_now : default_tile;
      rows.push_back(row);
    }
  }

  MeasuredPeak peak;
  const PeerResults peers = run_sdpa_peers(o, peak);
  if (peak.tflops > 0)
    std::printf("peak: %.1f TFLOP/s, a %s (PyTorch, random data, this run)\n", peak.tflops, peak.what.c_str());
  else
    std::printf("peak: not measured (%s)\n", peak.error.c_str());
  std::printf("%-9s %-7s %9s %8s %7s | %9s %6s | %9s %6s\n", "pass", "mask", "rfa ms", "TFLOP/s", "of peak", "flash ms",
              "ratio", "cudnn ms", "ratio");
  std::vector<std::string> reasons;
  for (Row& r : rows) {
    std::printf("%-9s %-7s %9.3f %8.1f", r.pass.c_str(), r.causal ? "causal" : "full", r.ms, r.tflops);
    if (peak.tflops > 0)
      std::printf(" %6.1f%%", 100.0 * r.tflops / peak.tflops);
    else
      std::printf(" %7s", "-");
    for (int i = 0; i < 2; ++i) {
      r.peers[i] = peer_result(peers, kPeers[i], r.key());
      if (r.peers[i].ms > 0) {
        std::printf(" | %9.3f %6.2f", r.peers[i].ms, r.peers[i].ms / r.ms);
      } else {
        std::printf(" | %9s %6s", "-", "-");
        reasons.push_back(std::string(kPeers[i]) + " " + r.key() + ": " + r.peers[i].error);
      }
    }
    std::printf("\n");
  }
  for (const std::string& why : reasons) std::printf("  no peer figure for %s\n", why.c_str());
  std::printf("ratio = peer ms / rfa ms (> 1: rfa is faster)\n");

  if (!o.json.empty()) {
    // perf/'s one format: one case per row, each timed iteration a repetition, the peers'
    // medians as counters of the same case (perf/compare, perf/plot read it).
    const std::string dtype = o.dtype == RFA_CUDA_FP16 ? "fp16" : "bf16";
    const std::string shape = "B=" + std::to_string(o.batch) + " S=" + std::to_string(o.seq) +
                              " H=" + std::to_string(o.heads) + "/" + std::to_string(o.kv_heads) +
                              " d=" + std::to_string(o.dim) +
                              (o.value_dim != o.dim ? "/" + std::to_string(o.value_dim) : std::string());
    std::vector<rfa_cuda_bench::Measurement> measured;
    for (const Row& r : rows) {
      rfa_cuda_bench::Measurement m;
      const std::string pass = r.pass == "forward"    ? "fwd"
                               : r.pass == "fwd-w16"  ? "fwd_w16"
                               : r.pass == "fwd-w32"  ? "fwd_w32"
                               : r.pass == "fwd-sm90" ? "fwd_sm90"
                               : r.pass == "backward" ? "bwd"
                               : r.pass == "bwd-k128" ? "bwd_k128"
                               : r.pass == "bwd-k64"  ? "bwd_k64"
                               : r.pass == "bwd-sm90" ? "bwd_sm90"
                                                      : "bwd_det";
      m.name = "cuda/" + pass + "/" + (r.causal ? "causal" : "full");
      m.ms = r.samples;
      m.flops = r.flops;
      m.labels = {{"pass", r.pass},
                  {"mask", r.causal ? "causal" : "none"},
                  {"path", r.pass == "fwd-sm90" || r.pass == "bwd-sm90" ? "sm90" : "sm80"},
                  {"rows_per_warp", r.rows_per_warp},
                  {"key_tile", r.key_tile}};
      for (int p = 0; p < 2; ++p)
        m.peers.push_back({std::string("sdpa_") + kPeers[p], r.peers[p].ms, r.peers[p].error});
      if (peak.tflops > 0) m.counters.push_back({"peak_fraction", r.tflops / peak.tflops});
      measured.push_back(m);
    }
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    try {
      rfa::perf::write_results_json(o.json,
                                    rfa_cuda_bench::gpu_context("rfa_cuda_kernel_bench", prop.name, runtime, driver,
                                                                "cuda_kernels", dtype, shape, peak.tflops, peak.what),
                                    rfa_cuda_bench::to_cases(measured, "cuda_kernels", dtype, shape));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rfa_cuda_kernel_bench: %s\n", e.what());
      return 1;
    }
    std::printf("wrote %s (perf/'s result format)\n", o.json.c_str());
  }
  return 0;
}
