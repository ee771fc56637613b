// SPDX-License-Identifier: BSD-3-Clause
// Address space without memory behind it, for tests of sizes no test machine could hold:
// pages come into existence only where they are touched (MAP_NORESERVE, so the kernel's
// overcommit heuristic does not refuse the mapping either).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <fstream>

namespace rfa {
namespace test {

class Unbacked {
 public:
  explicit Unbacked(std::size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : p;
  }
  ~Unbacked() {
    if (data_) munmap(data_, bytes_);
  }
  Unbacked(const Unbacked&) = delete;
  Unbacked& operator=(const Unbacked&) = delete;
  void* data() const { return data_; }

 private:
  std::size_t bytes_;
  void* data_;
};

/// True when the kernel grants any allocation (vm.overcommit_memory = 1): then an allocation
/// that "cannot" succeed does, and tests of refused allocations have nothing to test.
inline bool overcommit_always() {
  std::ifstream f("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  return (f >> mode) && mode == 1;
}

}  // namespace test
}  // namespace rfa
