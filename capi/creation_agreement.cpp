// SPDX-License-Identifier: BSD-3-Clause
#include "creation_agreement.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collective/agree_on_failure.hpp"
#include "collective/deadline.hpp"
#include "core/documents.hpp"
#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "core/mask_ranges.hpp"
#include "core/text_stream.hpp"

namespace rfa {
namespace capi {
namespace {

struct Field {
  const char* name;
  std::int64_t (*get)(const rfa_options_t&);
};

std::int64_t double_bits(double x) {
  std::int64_t bits;
  static_assert(sizeof bits == sizeof x, "double is 64 bits");
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// Every option that shapes the collective work; struct_size and version may legitimately
// differ (ranks built against different rfa headers).
const Field kFields[] = {
    {"layout", [](const rfa_options_t& o) { return std::int64_t(enum_value(o.layout)); }},
    {"mask", [](const rfa_options_t& o) { return std::int64_t(enum_value(o.mask)); }},
    {"dtype", [](const rfa_options_t& o) { return std::int64_t(enum_value(o.dtype)); }},
    {"ring_order", [](const rfa_options_t& o) { return std::int64_t(enum_value(o.ring_order)); }},
    {"softmax_scale", [](const rfa_options_t& o) { return double_bits(o.softmax_scale); }},
    {"batch", [](const rfa_options_t& o) { return o.batch; }},
    {"seq_total", [](const rfa_options_t& o) { return o.seq_total; }},
    {"heads", [](const rfa_options_t& o) { return o.heads; }},
    {"kv_heads", [](const rfa_options_t& o) { return o.kv_heads; }},
    {"head_dim", [](const rfa_options_t& o) { return o.head_dim; }},
    {"device", [](const rfa_options_t& o) { return std::int64_t(enum_value(o.device)); }},
    {"transport", [](const rfa_options_t& o) { return std::int64_t(enum_value(o.transport)); }},
    // The deadline the context will keep (0: none): options.timeout_s, or RFA_TIMEOUT_S where it
    // is 0, which each rank reads from its own environment (read before the agreement, so a
    // malformed value is this rank's verdict and this is not reached).
    {"timeout_s (after RFA_TIMEOUT_S)",
     [](const rfa_options_t& o) {
       if (o.timeout_s == 0.0) return double_bits(collective::timeout_from_environment());
       return double_bits(o.timeout_s < 0.0 ? 0.0 : o.timeout_s);
     }},
    {"strategy", [](const rfa_options_t& o) { return std::int64_t(enum_value(o.strategy)); }},
    {"ulysses_degree", [](const rfa_options_t& o) { return std::int64_t(o.ulysses_degree); }},
    {"window", [](const rfa_options_t& o) { return o.window; }},
    // Read only after this rank's own check of the list (read_options): the pointer is valid.
    {"doc_boundary_count", [](const rfa_options_t& o) { return o.doc_boundary_count; }},
    {"doc_boundaries (hash of the values)",
     [](const rfa_options_t& o) {
       return document_bounds_hash(o.doc_boundaries, o.doc_boundary_count);  // count <= 0: no value read
     }},
    {"check_values (after RFA_CHECK_VALUES)",
     [](const rfa_options_t& o) { return std::int64_t(enum_value(o.check_values)); }},
    {"cuda_kernels (after RFA_CUDA_KERNELS)",
     [](const rfa_options_t& o) { return std::int64_t(enum_value(o.cuda_kernels)); }},
    {"deterministic", [](const rfa_options_t& o) { return std::int64_t(o.deterministic); }},
    {"attention_sinks", [](const rfa_options_t& o) { return std::int64_t(o.attention_sinks); }},
    {"softcap", [](const rfa_options_t& o) { return double_bits(o.softcap); }},
    // Read only after this rank's own check of the list (read_options): the pointer is valid.
    {"mask_range_count", [](const rfa_options_t& o) { return o.mask_range_count; }},
    {"mask_ranges (hash of the entries)",
     [](const rfa_options_t& o) { return mask_ranges_hash(o.mask_ranges, o.mask_range_count); }},
    {"doc_boundary_offset_count", [](const rfa_options_t& o) { return o.doc_boundary_offset_count; }},
    {"doc_boundary_offsets (hash of the values)",
     [](const rfa_options_t& o) {
       return document_bounds_hash(o.doc_boundary_offsets, o.doc_boundary_offset_count);  // count <= 0: none read
     }},
    {"value_head_dim (0 for head_dim's value)", [](const rfa_options_t& o) { return o.value_head_dim; }},
};
// A field appended to rfa_options_t must be added above (and to the disagreement test,
// tests/capi/options_agreement_test.cpp): this fails to compile until the size is updated.
static_assert(offsetof(rfa_options_t, value_head_dim) + sizeof(std::int64_t) <= sizeof(rfa_options_t) &&
                  sizeof(rfa_options_t) <= offsetof(rfa_options_t, value_head_dim) + 8,
              "rfa_options_t has a field the creation agreement does not compare");
constexpr int kFieldCount = int(sizeof kFields / sizeof kFields[0]);
constexpr int kRecord = 1 + kFieldCount + 1;  // the verdict's code, the fields, the proposed id
static_assert(kRecord == kCreationRecordLength, "kCreationRecordLength is not the agreement's record length");

std::string value_text(int field, std::int64_t value) {
  TextStream os;
  if (std::strncmp(kFields[field].name, "doc_boundaries", 14) == 0 ||
      std::strncmp(kFields[field].name, "doc_boundary_offsets", 20) == 0 ||
      std::strncmp(kFields[field].name, "mask_ranges", 11) == 0) {
    os << "a list hashing to 0x" << std::hex << static_cast<std::uint64_t>(value);
  } else if (std::strcmp(kFields[field].name, "softmax_scale") == 0 ||
             std::strncmp(kFields[field].name, "timeout_s", 9) == 0 ||
             std::strcmp(kFields[field].name, "softcap") == 0) {
    double d;
    std::memcpy(&d, &value, sizeof d);
    // The shortest text that reads back as d: two values that differ are never printed alike.
    char text[32];
    os << std::string(text, std::to_chars(text, text + sizeof text, d).ptr);
  } else {
    os << value;
  }
  return os.str();
}

// "1, 3, 5" (at most `limit` ranks, then "and N more").
std::string rank_list(const std::vector<int>& ranks, std::size_t limit = 8) {
  TextStream os;
  for (std::size_t i = 0; i < ranks.size() && i < limit; ++i) os << (i ? ", " : "") << ranks[i];
  if (ranks.size() > limit) os << " and " << ranks.size() - limit << " more";
  return os.str();
}

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  fail(RFA_ERROR_MPI, call, " failed: ", std::string(text, std::size_t(length)));
}

}  // namespace

double creation_timeout(const LocalVerdict& verdict, const rfa_options_t& options) {
  // Options that failed to read are no guide; the environment still is (a bad RFA_TIMEOUT_S
  // falls back to the default here: the local checks before the agreement report it).
  // A non-finite value is refused after the agreement, on every rank alike.
  if (verdict.code == RFA_SUCCESS && std::isfinite(options.timeout_s) && options.timeout_s != 0.0)
    return options.timeout_s < 0.0 ? 0.0 : options.timeout_s;
  try {
    return collective::timeout_from_environment();
  } catch (const Error&) {
    return collective::kDefaultTimeoutSeconds;
  }
}

std::int64_t agree_on_creation(MPI_Comm comm, const LocalVerdict& verdict, const rfa_options_t& options,
                               std::int64_t proposed_id) {
  int size = 0, rank = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");

  std::int64_t mine[kRecord];
  mine[0] = verdict.code;
  for (int f = 0; f < kFieldCount; ++f) mine[1 + f] = verdict.code == RFA_SUCCESS ? kFields[f].get(options) : 0;
  mine[kRecord - 1] = proposed_id;
  // The first collective of a context's life, so the one that meets a late rank: it runs
  // nonblocking under the deadline, into a buffer that is abandoned to MPI on a timeout.
  collective::ParkedValues parked(std::vector<std::int64_t>(std::size_t(size) * kRecord));
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(mine, kRecord, MPI_INT64_T, parked.data(), kRecord, MPI_INT64_T, comm, &request),
            "MPI_Iallgather");
  const double timeout = creation_timeout(verdict, options);
  check_mpi(collective::wait_within(&request, 1, MPI_STATUS_IGNORE, timeout,
                                    [&](const int*) {
                                      parked.abandon();
                                      return "not every rank of the communicator arrived within " +
                                             collective::seconds_text(timeout) +
                                             " (a rank is late, stuck or gone; options.timeout_s or RFA_TIMEOUT_S "
                                             "sets the deadline)";
                                    }),
            "MPI_Iallgather");
  const std::vector<std::int64_t>& all = parked.values();
  auto at = [&](int r, int i) { return all[std::size_t(r) * kRecord + std::size_t(i)]; };

  std::vector<int> failing;
  for (int r = 0; r < size; ++r)
    if (at(r, 0) != RFA_SUCCESS) failing.push_back(r);
  if (!failing.empty()) {
    // Every rank learns why from the lowest failing rank (the same list everywhere, so every
    // rank takes part in the broadcast, under the creation's deadline).
    std::string reason = rank == failing.front() ? verdict.message : std::string();
    try {
      collective::broadcast_string(comm, reason, failing.front());
    } catch (const Error&) {
      if (verdict.code == RFA_SUCCESS) throw;  // a rank that failed reports its own verdict below
    }
    if (verdict.code != RFA_SUCCESS) throw Error(verdict.code, verdict.message);
    const auto code = rfa_result_t(at(failing.front(), 0));
    fail(code, "rank(s) ", rank_list(failing), " of the communicator cannot create the context (",
         rfa_get_error_string(code), "; rank ", failing.front(), ": ", reason, "); every rank fails together");
  }

  for (int f = 0; f < kFieldCount; ++f) {
    const std::int64_t reference = at(0, 1 + f);
    std::vector<int> differing;
    for (int r = 1; r < size; ++r)
      if (at(r, 1 + f) != reference) differing.push_back(r);
    if (differing.empty()) continue;
    TextStream os;
    os << "ranks disagree on options." << kFields[f].name << ": rank 0 passes " << value_text(f, reference);
    for (std::size_t i = 0; i < differing.size() && i < 8; ++i)
      os << ", rank " << differing[i] << " passes " << value_text(f, at(differing[i], 1 + f));
    os << " (differing from rank 0: rank(s) " << rank_list(differing) << "); every rank must pass the same options";
    throw Error(RFA_ERROR_INVALID_USAGE, os.str());
  }
  std::int64_t id = 0;
  for (int r = 0; r < size; ++r) id = std::max(id, at(r, kRecord - 1));
  return id;
}

}  // namespace capi
}  // namespace rfa
