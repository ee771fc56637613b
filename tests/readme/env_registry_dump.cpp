// SPDX-License-Identifier: BSD-3-Clause
// Prints the library's environment registry (src/core/environment.hpp), one variable per line:
// name, readers, default and meaning separated by tabs. env_table_test.py compares the library
// table of docs/environment.md with it.
#include <cstddef>
#include <cstdio>

#include "core/environment.hpp"

int main() {
  std::size_t count = 0;
  const rfa::EnvVariable* all = rfa::env_registry(&count);
  for (std::size_t i = 0; i < count; ++i)
    std::printf("%s\t%s\t%s\t%s\n", all[i].name, all[i].readers, all[i].fallback, all[i].meaning);
  return 0;
}
