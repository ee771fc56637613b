/* SPDX-License-Identifier: BSD-3-Clause */
/* C shims through which the fuzz harness passes raw ints where the C API takes enums. */
#ifndef RFA_FUZZ_C_ENTRY_POINTS_H
#define RFA_FUZZ_C_ENTRY_POINTS_H

#include "rfa/rfa.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FUZZ_ENUM_FIELDS 7 /* layout, mask, dtype, ring_order, device, transport, strategy */

/* Sets the enum fields of `o` whose bit is set in `which` (bit i: field i) to values[i]. */
void fuzz_set_enum_fields(rfa_options_t* o, const int values[FUZZ_ENUM_FIELDS], unsigned which);
rfa_result_t fuzz_layout_local_seq(int layout, int64_t seq_total, int ranks, int64_t* local_seq);
rfa_result_t fuzz_layout_positions(int layout, int64_t seq_total, int ranks, int position, int64_t* positions,
                                   int64_t capacity);
const char* fuzz_error_string(int code);

#ifdef __cplusplus
}
#endif

#endif
