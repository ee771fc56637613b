/* SPDX-License-Identifier: BSD-3-Clause */
/* Wraps docs/masks.md's fragment: the options and the context it assumes. */
#include <rfa/rfa_mpi.h>
#include <stdlib.h>

rfa_result_t readme_masks_fragment(rfa_options_t o);
rfa_result_t readme_masks_fragment(rfa_options_t o) {
  rfa_context_t ctx = NULL;
@FRAGMENT@
  return rfa_context_destroy(ctx);
}
