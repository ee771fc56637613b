// SPDX-License-Identifier: BSD-3-Clause
#include <string>

#include "core/error.hpp"
#include "firewall.hpp"

extern "C" {

RFA_API rfa_result_t rfa_get_version(int* major, int* minor, int* patch) {
  return rfa::capi::guard(__func__, [&] {
    if (major) *major = RFA_VERSION_MAJOR;
    if (minor) *minor = RFA_VERSION_MINOR;
    if (patch) *patch = RFA_VERSION_PATCH;
    return RFA_SUCCESS;
  });
}

RFA_API rfa_result_t rfa_check_version_major(int header_major) {
  return rfa::capi::guard(__func__, [&] {
    if (header_major != RFA_VERSION_MAJOR) {
      rfa::fail(RFA_ERROR_VERSION_MISMATCH, "the program was compiled against rfa headers of major version ",
                header_major, " but the library is version ", RFA_VERSION_STRING);
    }
    return RFA_SUCCESS;
  });
}

}  // extern "C"
