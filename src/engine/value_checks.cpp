// SPDX-License-Identifier: BSD-3-Clause
#include "engine/value_checks.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "comm/agreement.hpp"
#include "core/error.hpp"
#include "core/text_stream.hpp"

namespace rfa {
namespace engine {
namespace {

// Where a rank found its first NaN or infinity, packed so that one min-reduction picks the
// lowest ring position, then its first tensor: position | tensor | flat index in one value,
// position | global sequence position in another (the same rank wins both).
constexpr int kIndexBits = 39, kTensorBits = 4, kPositionShift = kIndexBits + kTensorBits;
constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t low_bits(int n) { return (std::int64_t(1) << n) - 1; }

}  // namespace

void report_nonfinite_everywhere(comm::Communicator& comm, const PositionMap& rows,
                                 std::initializer_list<ScannedTensor> tensors, const char* kind,
                                 const char* consequence) {
  require(tensors.size() <= std::size_t(1) << kTensorBits, "at most 16 tensors per value check");
  std::int64_t where = kNone, token = kNone;
  std::size_t t = 0;
  for (const ScannedTensor& s : tensors) {
    if (s.first >= 0) {
      const std::int64_t row = s.head_dim > 0 ? (s.first / (s.heads * s.head_dim)) % s.rows : s.first % s.rows;
      const std::int64_t position = std::int64_t(comm.rank()) << kPositionShift;
      where = position | (std::int64_t(t) << kIndexBits) | std::min(s.first, low_bits(kIndexBits));
      token = position | std::min(rows(row), low_bits(kPositionShift));
      break;
    }
    ++t;
  }
  const std::vector<std::int64_t> lowest = comm::min_everywhere(comm, {where, token});
  if (lowest[0] == kNone) return;

  const int position = int(lowest[0] >> kPositionShift);
  const ScannedTensor& s = tensors.begin()[(lowest[0] >> kIndexBits) & low_bits(kTensorBits)];
  const std::int64_t flat = lowest[0] & low_bits(kIndexBits), sequence = lowest[1] & low_bits(kPositionShift);
  TextStream os;
  os << "the value checks (options.check_values) found NaN or infinity in the " << kind << " " << s.name
     << " on ring position " << position << ", first at ";
  if (s.head_dim > 0) {
    os << "batch " << flat / (s.rows * s.heads * s.head_dim) << ", sequence position " << sequence << ", head "
       << (flat / s.head_dim) % s.heads << ", element " << flat % s.head_dim;
  } else {
    os << "batch " << flat / (s.heads * s.rows) << ", head " << (flat / s.rows) % s.heads << ", sequence position "
       << sequence;
  }
  os << "; " << consequence;
  throw AgreedError(RFA_ERROR_NONFINITE, os.str());
}

}  // namespace engine
}  // namespace rfa
