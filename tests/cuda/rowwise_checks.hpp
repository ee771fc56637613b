// SPDX-License-Identifier: BSD-3-Clause
// The row-wise helpers' checks at both vector widths (rowwise_checks.cu), a part of
// rfa_cuda_kernel_test.
#pragma once

namespace rfa_cuda_test {

/// Runs the checks on the current device, counting each failure in `failures`
/// (accuracy_support.cuh) and printing a line per check.
void run_rowwise_checks();

}  // namespace rfa_cuda_test
