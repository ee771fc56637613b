# SPDX-License-Identifier: BSD-3-Clause
"""Tests of perf/suite's bookkeeping on stand-in programs (Python one-liners): a program counts
as written only when it exits 0 and leaves its result file; one that writes its result and then
fails (rfa_run when its check fails) or exits 0 without a result is a failure, named with why."""
import argparse
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

import perf_tool

suite = perf_tool.load("suite")


class SuiteRunTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.suite = suite.Suite(argparse.Namespace(out=self.dir.name))
        self.result = os.path.join(self.dir.name, "x.json")

    def tearDown(self):
        self.dir.cleanup()

    def run_program(self, code):
        with redirect_stdout(io.StringIO()) as printed:
            self.suite.run("x", [sys.executable, "-c", code, self.result], self.result)
        return printed.getvalue()

    def test_a_result_and_exit_code_zero_is_written(self):
        self.run_program("import sys; open(sys.argv[1], 'w').write('{}')")
        self.assertEqual(self.suite.failures, [])
        self.assertEqual(self.suite.written, [self.result])

    def test_a_result_then_a_failed_check_is_a_failure(self):
        printed = self.run_program("import sys; open(sys.argv[1], 'w').write('{}'); print('check FAILED'); sys.exit(1)")
        self.assertEqual(self.suite.failures, ["x: exit code 1"])
        self.assertEqual(self.suite.written, [])
        self.assertIn("check FAILED", printed)  # the log's tail is shown

    def test_exit_code_zero_without_a_result_is_a_failure(self):
        self.run_program("pass")
        self.assertEqual(self.suite.failures, ["x: no result file"])
        self.assertEqual(self.suite.written, [])


if __name__ == "__main__":
    unittest.main()
