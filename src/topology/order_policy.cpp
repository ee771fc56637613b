// SPDX-License-Identifier: BSD-3-Clause
#include "topology/order_policy.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/text_file.hpp"

namespace rfa::topology {
namespace {

const std::string kFilePrefix = "file:";

std::string trim(const std::string& s) {
  const char* space = " \t\r\n";
  std::size_t first = s.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

// A line of the file as a message shows it: bytes outside printable ASCII as \xNN (a NUL would
// end the message's text there), at most 80 of them.
std::string shown(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 80; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return text.size() > 80 ? out + "..." : out;
}

}  // namespace

PolicyChoice resolve_policy(rfa_ring_order_t requested, const std::string& env_value,
                            const std::string& explicit_file) {
  const bool env_names_file = env_value.compare(0, kFilePrefix.size(), kFilePrefix) == 0;
  switch (requested) {
    case RFA_RING_ORDER_IDENTITY: return {RFA_RING_ORDER_IDENTITY, ""};
    case RFA_RING_ORDER_TOPOLOGY: return {RFA_RING_ORDER_TOPOLOGY, ""};
    case RFA_RING_ORDER_FILE: {
      std::string file = explicit_file.empty() && env_names_file ? env_value.substr(kFilePrefix.size()) : explicit_file;
      require(!file.empty(), "rfa topology: ring order policy FILE needs a path: set ", env_name(Env::ring_order),
              "=file:PATH (", env_name(Env::ring_order), " is '", env_value, "')");
      return {RFA_RING_ORDER_FILE, file};
    }
    case RFA_RING_ORDER_DEFAULT: break;
    default: fail(RFA_ERROR_INVALID_ARGUMENT, "rfa topology: unknown ring order policy ", static_cast<int>(requested));
  }
  // "topology" is how the dump and the plan name the policy; "topo" its short form.
  if (env_value.empty() || env_value == "topo" || env_value == "topology") return {RFA_RING_ORDER_TOPOLOGY, ""};
  if (env_value == "identity") return {RFA_RING_ORDER_IDENTITY, ""};
  if (env_names_file) {
    std::string file = env_value.substr(kFilePrefix.size());
    require(!file.empty(), "rfa topology: ", env_name(Env::ring_order), "=file: needs a path (file:PATH)");
    return {RFA_RING_ORDER_FILE, file};
  }
  fail(RFA_ERROR_INVALID_ARGUMENT, "rfa topology: ", env_name(Env::ring_order), "='", env_value,
       "' is not one of identity, topo (or topology), file:PATH");
}

const char* policy_name(rfa_ring_order_t policy) {
  switch (policy) {
    case RFA_RING_ORDER_DEFAULT: return "default";
    case RFA_RING_ORDER_IDENTITY: return "identity";
    case RFA_RING_ORDER_TOPOLOGY: return "topology";
    case RFA_RING_ORDER_FILE: return "file";
  }
  return "unknown";
}

std::vector<int> parse_order_text(const std::string& text, int size, const std::string& source) {
  std::vector<int> order;
  std::vector<int> line_of_rank(size > 0 ? size : 0, 0);
  const bool utf16 = text.compare(0, 2, "\xff\xfe") == 0 || text.compare(0, 2, "\xfe\xff") == 0;
  require(!utf16 && text.compare(0, 3, "\xef\xbb\xbf") != 0, "rfa topology: ", source, " begins with a ",
          utf16 ? "UTF-16" : "UTF-8", " byte order mark: save it as plain text (ASCII digits, one rank a line)");
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::string content = trim(line.substr(0, line.find('#')));
    if (content.empty()) continue;
    std::size_t used = 0;
    long rank = -1;
    try {
      rank = std::stol(content, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == content.size(), "rfa topology: ", source, ":", number, ": '", shown(content),
            "' is not a rank (one integer per line)");
    require(rank >= 0 && rank < size, "rfa topology: ", source, ":", number, ": rank ", rank, " is outside 0..",
            size - 1);
    require(line_of_rank[rank] == 0, "rfa topology: ", source, ":", number, ": rank ", rank, " already listed on line ",
            line_of_rank[rank]);
    line_of_rank[rank] = number;
    order.push_back(static_cast<int>(rank));
  }
  require(static_cast<int>(order.size()) == size, "rfa topology: ", source, " lists ", order.size(),
          " ranks; the communicator has ", size, " (each rank exactly once)");
  return order;
}

std::string order_file_text(const std::string& path) {
  // One rank a line: 64 MiB holds the order of millions of ranks with comments.
  return read_text_file(path, std::size_t(64) << 20, "rfa topology: the ring order file");
}

}  // namespace rfa::topology
