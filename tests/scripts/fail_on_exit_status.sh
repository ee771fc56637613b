#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a test's command and, where its exit status is not the one expected, says so in a line
# with FAIL in it. CTest ignores the exit status of a test that has PASS_REGULAR_EXPRESSION:
# such a test runs through this with FAIL in its FAIL_REGULAR_EXPRESSION, so that a crash after
# the line it looks for (in a destroy, in MPI_Finalize) still fails it, and a program that
# prints the error looked for still has to end with a failure status.
# Usage: fail_on_exit_status.sh [--error-expected] COMMAND [ARG...]
#   by default the command must exit with 0 (77, a skip, is left to the test's own rule);
#   with --error-expected, with a status other than 0.
error_expected=0
if [ "${1:-}" = --error-expected ]; then
  error_expected=1
  shift
fi
status=0
"$@" || status=$?
if [ "$error_expected" = 1 ] && [ "$status" = 0 ]; then
  echo "fail_on_exit_status: FAIL: '$1' exited with status 0, where it should have failed"
elif [ "$error_expected" = 0 ] && [ "$status" != 0 ] && [ "$status" != 77 ]; then
  echo "fail_on_exit_status: FAIL: '$1' exited with status $status"
fi
exit "$status"
