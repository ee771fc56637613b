// SPDX-License-Identifier: BSD-3-Clause
#include "machine_context.hpp"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#if __has_include("rfa_git_state.h")
#include "rfa_git_state.h"  // RFA_PERF_GIT_COMMIT, rewritten at build time (cmake/RfaGitState.cmake)
#endif
#ifndef RFA_PERF_GIT_COMMIT
#define RFA_PERF_GIT_COMMIT "unknown"
#endif
#ifndef RFA_PERF_COMPILER
#define RFA_PERF_COMPILER "unknown"
#endif
#ifndef RFA_PERF_BUILD_TYPE
#define RFA_PERF_BUILD_TYPE "unknown"
#endif

namespace rfa {
namespace perf {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

/// The value after "key<blanks>:" on the first line of `text` that starts with `key` followed
/// only by blanks before its colon ("" if none).
std::string keyed_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.find_first_not_of(" \t", key.size()) != colon) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

/// The whole text of a file ("" where it cannot be read).
std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// NVIDIA's driver names each GPU under /proc without needing the CUDA runtime; a CPU-only
/// node has no such folder.
std::string gpu_models() {
  std::string models;
  std::error_code ec;
  const std::filesystem::path root("/proc/driver/nvidia/gpus");
  if (!std::filesystem::is_directory(root, ec)) return "none";
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string model = keyed_value(file_text((entry.path() / "information").string()), "Model");
    if (model.empty()) continue;
    if (models.find(model) == std::string::npos) models += (models.empty() ? "" : "; ") + model;
  }
  return models.empty() ? "none" : models;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

std::string host_name() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace

void set_field(ContextFields& fields, const std::string& key, const std::string& value) {
  for (auto& f : fields) {
    if (f.first == key) {
      f.second = value;
      return;
    }
  }
  fields.emplace_back(key, value);
}

std::string cpu_model_from(const std::string& cpuinfo) {
  const std::string name = keyed_value(cpuinfo, "model name");
  if (!name.empty()) return name;
  // Arm cores name no model: their implementer and part (with variant and revision) tell one
  // core design from another, as the comparator needs.
  const std::string implementer = keyed_value(cpuinfo, "CPU implementer"), part = keyed_value(cpuinfo, "CPU part");
  if (!implementer.empty() && !part.empty())
    return "arm implementer " + implementer + " part " + part + " variant " + keyed_value(cpuinfo, "CPU variant") +
           " revision " + keyed_value(cpuinfo, "CPU revision");
  return "unknown";
}

std::string cpu_model() { return cpu_model_from(file_text("/proc/cpuinfo")); }

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
}

ContextFields collect_machine_context(const std::string& program) {
  ContextFields c;
  c.emplace_back("result_schema", std::to_string(kResultSchema));
  c.emplace_back("date", utc_now());
  c.emplace_back("executable", program);
  c.emplace_back("host_name", host_name());
  c.emplace_back("num_cpus", std::to_string(std::thread::hardware_concurrency()));
  c.emplace_back("cpu_model", cpu_model());
  c.emplace_back("gpu_model", gpu_models());
  c.emplace_back("git_commit", RFA_PERF_GIT_COMMIT);
  c.emplace_back("compiler", RFA_PERF_COMPILER);
  c.emplace_back("slurm_job_id", env_or("SLURM_JOB_ID", "none"));
  c.emplace_back("slurm_nodelist", env_or("SLURM_JOB_NODELIST", "none"));
  c.emplace_back("rfa_build_type", RFA_PERF_BUILD_TYPE);  // Google Benchmark's "library_build_type" is its own
  return c;
}

}  // namespace perf
}  // namespace rfa
