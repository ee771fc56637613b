// SPDX-License-Identifier: BSD-3-Clause
#include "result_json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace rfa {
namespace perf {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  // The shortest text that reads back as exactly v: byte counts past 1e9 keep every digit.
  char text[32];
  const std::to_chars_result r = std::to_chars(text, text + sizeof text, v);
  return std::string(text, r.ptr);
}

namespace {

/// One entry of "benchmarks": Google Benchmark's fields first, then labels and counters.
void write_entry(std::ostream& os, const BenchCase& c, int index, const Repetition& rep, bool aggregate) {
  const int reps = int(c.repetitions.size());
  os << "    {\n      \"name\": " << quoted(aggregate ? c.name + "_median" : c.name) << ",\n"
     << "      \"family_index\": " << index << ",\n      \"per_family_instance_index\": 0,\n"
     << "      \"run_name\": " << quoted(c.name) << ",\n"
     << "      \"run_type\": " << quoted(aggregate ? "aggregate" : "iteration") << ",\n"
     << "      \"repetitions\": " << reps << ",\n      \"threads\": 1,\n";
  if (aggregate) {
    os << "      \"aggregate_name\": \"median\",\n      \"aggregate_unit\": \"time\",\n";
  } else {
    os << "      \"repetition_index\": " << (&rep - c.repetitions.data()) << ",\n";
  }
  os << "      \"iterations\": 1,\n      \"real_time\": " << json_number(rep.seconds * 1e3)
     << ",\n      \"cpu_time\": " << json_number(rep.seconds * 1e3) << ",\n      \"time_unit\": \"ms\"";
  for (const auto& [k, v] : c.labels) os << ",\n      " << quoted(k) << ": " << quoted(v);
  for (const auto& [k, v] : c.counters) os << ",\n      " << quoted(k) << ": " << json_number(v);
  for (const auto& [k, v] : rep.counters) os << ",\n      " << quoted(k) << ": " << json_number(v);
  os << "\n    }";
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void write_results_json(const std::string& path, const ContextFields& context, const std::vector<BenchCase>& cases) {
  std::ostringstream os;
  os << "{\n  \"context\": {";
  for (std::size_t i = 0; i < context.size(); ++i)
    os << (i ? "," : "") << "\n    " << quoted(context[i].first) << ": " << quoted(context[i].second);
  os << "\n  },\n  \"benchmarks\": [";
  bool first = true;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const BenchCase& c = cases[i];
    for (const Repetition& rep : c.repetitions) {
      os << (first ? "\n" : ",\n");
      write_entry(os, c, int(i), rep, false);
      first = false;
    }
    if (c.repetitions.size() > 1) {
      // The median of every per-repetition figure, as Google Benchmark's aggregates do.
      Repetition mid;
      std::vector<double> seconds;
      std::map<std::string, std::vector<double>> figures;
      for (const Repetition& rep : c.repetitions) {
        seconds.push_back(rep.seconds);
        for (const auto& [k, v] : rep.counters) figures[k].push_back(v);
      }
      mid.seconds = median(seconds);
      for (const auto& [k, v] : figures) mid.counters[k] = median(v);
      os << ",\n";
      write_entry(os, c, int(i), mid, true);
    }
  }
  os << "\n  ]\n}\n";
  std::ofstream out(path);
  if (!out) throw ResultsFileError("cannot open '" + path + "' for writing");
  out << os.str();
  out.close();
  if (!out) throw ResultsFileError("cannot write '" + path + "'");
}

}  // namespace perf
}  // namespace rfa
