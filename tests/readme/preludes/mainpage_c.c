/* SPDX-License-Identifier: BSD-3-Clause */
/* Wraps the Doxygen main page's example (docs/mainpage.md): the program and the buffers it
   assumes (their sizes are the page's comment; here they stay NULL, since it is only compiled). */
#include <stddef.h>
#include <rfa/rfa_mpi.h>

int main(int argc, char** argv) {
  float *q = NULL, *k = NULL, *v = NULL, *out = NULL, *lse = NULL;
@FRAGMENT@
  return 0;
}
