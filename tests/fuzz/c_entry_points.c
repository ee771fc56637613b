/* SPDX-License-Identifier: BSD-3-Clause */
/* The enum arguments as a C caller passes them: any int. In C an enum holds any value of its
 * underlying integer type; in C++ a value outside the enumeration's range is undefined (and
 * UBSan says so), so the C++ harness hands raw ints to these C shims. */
#include "c_entry_points.h"

void fuzz_set_enum_fields(rfa_options_t* o, const int values[FUZZ_ENUM_FIELDS], unsigned which) {
  if (which & 1u) o->layout = values[0];
  if (which & 2u) o->mask = values[1];
  if (which & 4u) o->dtype = values[2];
  if (which & 8u) o->ring_order = values[3];
  if (which & 16u) o->device = values[4];
  if (which & 32u) o->transport = values[5];
  if (which & 64u) o->strategy = values[6];
}

rfa_result_t fuzz_layout_local_seq(int layout, int64_t seq_total, int ranks, int64_t* local_seq) {
  return rfa_layout_local_seq(layout, seq_total, ranks, local_seq);
}

rfa_result_t fuzz_layout_positions(int layout, int64_t seq_total, int ranks, int position, int64_t* positions,
                                   int64_t capacity) {
  return rfa_layout_positions(layout, seq_total, ranks, position, positions, capacity);
}

const char* fuzz_error_string(int code) { return rfa_get_error_string(code); }
