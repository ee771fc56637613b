// SPDX-License-Identifier: BSD-3-Clause
#include "comm/agreement.hpp"

#include <array>
#include <limits>

#include "core/error.hpp"
#include "core/text_stream.hpp"

namespace rfa::comm {
namespace {

// The record every agreement reduces with one MAX: a slot for the verdict, two for each of the
// stamp's three fields, two for each named value. ~v = -v-1 reverses the order without
// overflow, so max(~v) = ~min(v): one reduction finds both ends of everything.
constexpr std::size_t kStampFields = 3;
constexpr std::size_t kSlots = 1 + 2 * kStampFields + 2 * kMaxAgreedValues;
using Record = std::array<std::int64_t, kSlots>;

// A stamp field and a ring position share one slot: the field in the high bits, the position
// (or its complement, for the largest value) in the low ones, so the extreme values come with
// the lowest position that holds them.
int position_bits(int ranks) {
  int bits = 1;
  while (bits < 30 && (std::int64_t(1) << bits) < ranks) ++bits;
  return bits;
}

// Stamp fields are counters >= 0; the slot keeps their low 62 - position_bits bits, which is
// enough to tell two calls apart (they differ in their low bits first).
std::int64_t field_bits(std::int64_t value, int pbits) { return value & ((std::int64_t(1) << (62 - pbits)) - 1); }

/// What the ranks saw of one stamp field.
struct Spread {
  std::int64_t low = 0, high = 0;
  int low_position = 0, high_position = 0;
  bool agreed() const { return low == high; }
};

struct Reduced {
  std::int64_t lowest_failure = 0;  // position * kCodes + code, or P * kCodes when all were fine
  Spread stamp[kStampFields];       // context, operation, sequence
  std::int64_t value_low[kMaxAgreedValues] = {}, value_high[kMaxAgreedValues] = {};
};

constexpr std::int64_t kCodes = std::int64_t(1) << 16;  // above every rfa_result_t value

std::array<std::int64_t, kStampFields> stamp_fields(const CallStamp& s) { return {s.context, s.operation, s.sequence}; }

Reduced reduce(Communicator& comm, bool ok_here, rfa_result_t code, const std::int64_t* values, std::size_t count) {
  require(count <= kMaxAgreedValues, "an agreement takes at most ", kMaxAgreedValues, " values, not ", count);
  const int P = comm.size(), me = comm.rank(), pbits = position_bits(P);
  const std::int64_t mask = (std::int64_t(1) << pbits) - 1;
  Record r{};
  r.fill(std::numeric_limits<std::int64_t>::min());  // unused value slots: equal everywhere
  r[0] = ~(ok_here ? P * kCodes : me * kCodes + std::int64_t(code));
  const auto fields = stamp_fields(comm.call_stamp());
  for (std::size_t f = 0; f < kStampFields; ++f) {
    const std::int64_t v = field_bits(fields[f], pbits) << pbits;
    r[1 + 2 * f] = ~(v | me);
    r[2 + 2 * f] = v | (mask - me);
  }
  for (std::size_t i = 0; i < count; ++i) {
    r[1 + 2 * kStampFields + 2 * i] = ~values[i];
    r[2 + 2 * kStampFields + 2 * i] = values[i];
  }
  comm.allreduce_inplace(r.data(), r.size(), ReduceOp::max);

  Reduced out;
  out.lowest_failure = ~r[0];
  for (std::size_t f = 0; f < kStampFields; ++f) {
    const std::int64_t low = ~r[1 + 2 * f], high = r[2 + 2 * f];
    out.stamp[f] = {low >> pbits, high >> pbits, int(low & mask), int(mask - (high & mask))};
  }
  for (std::size_t v = 0; v < kMaxAgreedValues; ++v) {
    out.value_low[v] = ~r[1 + 2 * kStampFields + 2 * v];
    out.value_high[v] = r[2 + 2 * kStampFields + 2 * v];
  }
  return out;
}

std::string operation_text(const CallStamp& s, std::int64_t operation) {
  if (s.operation_name != nullptr) return s.operation_name(operation);
  return "operation " + std::to_string(operation);
}

// Throws RFA_ERROR_CALL_MISMATCH on every rank whose reduction saw different stamps.
void require_same_call(const Communicator& comm, const Reduced& r) {
  static const char* const kFieldNames[kStampFields] = {"context", "operation", "call number"};
  std::size_t f = 0;
  while (f < kStampFields && r.stamp[f].agreed()) ++f;
  if (f == kStampFields) return;
  const CallStamp& mine = comm.call_stamp();
  const Spread& s = r.stamp[f];
  auto side = [&](std::int64_t value) {
    switch (f) {
      case 0: return "context " + std::to_string(value);
      case 1: return operation_text(mine, value);
      default: return "call " + std::to_string(value);
    }
  };
  TextStream os;
  os << "the ranks are in different collective calls (their " << kFieldNames[f] << " differs): ring position "
     << s.low_position << " is in " << side(s.low) << ", ring position " << s.high_position << " in " << side(s.high)
     << "; this rank (ring position " << comm.rank() << ") is in "
     << (mine.operation != 0 ? operation_text(mine, mine.operation) : std::string("no call")) << ", call "
     << mine.sequence << " on context " << mine.context
     << ". Every rank must make the same collective calls on a context, in the same order; the context is "
        "unusable from now on: destroy it";
  throw Error(RFA_ERROR_CALL_MISMATCH, os.str());
}

}  // namespace

void fail_everywhere_unless(Communicator& comm, bool ok_here, rfa_result_t code, const std::string& message_here) {
  // A transport that timed out is unusable: no agreement can run on it, and the failure that
  // made it so (RFA_ERROR_TIMEOUT, say, from an inner engine on the same ranks) is what the
  // caller must see, not the refusal of the agreement.
  if (!ok_here && comm.has_abandoned_transfers()) throw Error(code, message_here);
  // Each rank that failed offers its position and its code, one that did not offers P: the
  // minimum is the lowest failing position with its code, or P when all succeeded, and the
  // ranks that did not fail report the code of the one that did (a refused allocation there is
  // RFA_ERROR_OUT_OF_MEMORY everywhere, not an invalid argument).
  const Reduced r = reduce(comm, ok_here, code, nullptr, 0);
  require_same_call(comm, r);
  if (r.lowest_failure == comm.size() * kCodes) return;
  if (!ok_here) throw AgreedError(code, message_here);
  TextStream os;
  os << "failed on another rank (lowest failing ring position: " << r.lowest_failure / kCodes
     << "); see that rank's message";
  throw AgreedError(rfa_result_t(r.lowest_failure % kCodes), os.str());
}

void require_same_everywhere(Communicator& comm, std::initializer_list<NamedValue> values) {
  require(values.size() <= kMaxAgreedValues, "an agreement takes at most ", kMaxAgreedValues, " values, not ",
          values.size());
  std::int64_t raw[kMaxAgreedValues] = {};
  std::size_t n = 0;
  for (const NamedValue& v : values) raw[n++] = v.value;
  const Reduced r = reduce(comm, true, RFA_SUCCESS, raw, n);
  require_same_call(comm, r);
  std::size_t i = 0;
  for (const NamedValue& v : values) {
    if (r.value_low[i] != r.value_high[i]) {
      TextStream os;
      os << v.name << " differs between ranks (from " << r.value_low[i] << " to " << r.value_high[i]
         << "); every rank must pass the same value";
      throw AgreedError(RFA_ERROR_INVALID_USAGE, os.str());
    }
    ++i;
  }
}

std::vector<std::int64_t> min_everywhere(Communicator& comm, std::initializer_list<std::int64_t> values) {
  const Reduced r = reduce(comm, true, RFA_SUCCESS, values.begin(), values.size());
  require_same_call(comm, r);
  return std::vector<std::int64_t>(r.value_low, r.value_low + values.size());
}

}  // namespace rfa::comm
