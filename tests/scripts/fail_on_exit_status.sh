#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a test's command and, where it exits with a status other than 0, says so in a line with
# FAIL in it. CTest ignores the exit status of a test that has PASS_REGULAR_EXPRESSION: such a
# test runs through this with FAIL in its FAIL_REGULAR_EXPRESSION, so that a crash after the
# line it looks for (in a destroy, in MPI_Finalize) still fails it.
# Usage: fail_on_exit_status.sh COMMAND [ARG...]
status=0
"$@" || status=$?
# 77, a skip, is left to the test's own skip rule.
if [ "$status" != 0 ] && [ "$status" != 77 ]; then
  echo "fail_on_exit_status: FAIL: '$1' exited with status $status"
fi
exit "$status"
