// SPDX-License-Identifier: BSD-3-Clause
// Shape and pointer checks shared by the kernel entry points: each names the tensor and
// the expected shape so a caller can see at once what is wrong.
#pragma once

#include <cstdint>

#include "core/error.hpp"
#include "core/text_stream.hpp"

namespace rfa {
namespace kernels {

template <class View>
void check_tensor(const View& v, const char* name, std::int64_t e0, std::int64_t e1, std::int64_t e2,
                  std::int64_t e3 = -1) {
  const std::int64_t want[4] = {e0, e1, e2, e3};
  bool ok = true;
  for (unsigned r = 0; r < View::rank; ++r) ok = ok && std::int64_t(v.extent(r)) == want[r];
  if (!ok) {
    TextStream got, exp;
    for (unsigned r = 0; r < View::rank; ++r) {
      got << (r ? "," : "") << v.extent(r);
      exp << (r ? "," : "") << want[r];
    }
    fail(RFA_ERROR_INVALID_ARGUMENT, "tensor '", name, "' has shape [", got.str(), "], expected [", exp.str(), "]");
  }
  require(v.data() != nullptr, "tensor '", name, "' has no data (null pointer)");
}

}  // namespace kernels
}  // namespace rfa
