# SPDX-License-Identifier: BSD-3-Clause
"""Tests of perf/suite's bookkeeping on stand-in programs (Python one-liners): a program counts
as written only when it exits 0 and leaves its result file (an earlier run's file does not
count); one that writes its result and then fails (rfa_run when its check fails) or exits 0
without a result is a failure, named with why. Against a baseline: a folder that does not exist
is refused before anything runs, each result's verdict is the worst of perf/compare's (a lost
case makes it incomplete), results with nothing to compare with are listed, and figures of a
run of some parts go to their own folder. The launcher's {N} is the nodes P ranks fill. A
variant's cost is its medians over the main job's, its results compared but not drawn."""
import argparse
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

import perf_tool

suite = perf_tool.load("suite")

CONTEXT = {"cpu_model": "Test CPU", "gpu_model": "none", "num_cpus": "2", "ranks": "2", "threads_per_rank": "1",
           "kokkos_backends": "Serial"}


def result_file(path, cases, context=None):
    """perf/'s format: 12 repetitions of each case at the given milliseconds, 1% apart."""
    benchmarks = [{"name": case, "run_name": case, "run_type": "iteration", "real_time": ms * (1 + 0.01 * (i % 3)),
                   "time_unit": "ms", "suite": "ring"} for case, ms in cases.items() for i in range(12)]
    with open(path, "w") as f:
        json.dump({"context": context or CONTEXT, "benchmarks": benchmarks}, f)
    return path


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

    def test_each_rank_count_has_its_own_ring_order_dump(self):
        os.environ["RFA_TOPO_DUMP"] = os.path.join(self.dir.name, "topo-P{P}.json")
        try:
            with redirect_stdout(io.StringIO()):
                self.suite.run("x", [sys.executable, "-c", "import os, sys; open(sys.argv[1], 'w').write("
                                     "os.environ['RFA_TOPO_DUMP'])", self.result], self.result, 4)
        finally:
            del os.environ["RFA_TOPO_DUMP"]
        with open(self.result) as f:
            self.assertEqual(f.read(), os.path.join(self.dir.name, "topo-P4.json"))

    def test_an_earlier_result_does_not_count(self):
        with open(self.result, "w") as f:
            f.write("{}")
        self.run_program("pass")
        self.assertEqual(self.suite.failures, ["x: no result file"])
        self.assertFalse(os.path.exists(self.result))


class SuiteBaselineTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "out")
        self.baseline = os.path.join(self.dir.name, "baseline")
        os.makedirs(self.out)
        os.makedirs(self.baseline)

    def tearDown(self):
        self.dir.cleanup()

    def compare(self, new_files):
        """suite.compare() over results written as {name: (cases, context)}: its code and the
        suite's bookkeeping."""
        s = suite.Suite(argparse.Namespace(out=self.out, baseline=self.baseline))
        for name, (cases, context) in new_files.items():
            s.written.append(result_file(os.path.join(self.out, name), cases, context))
        with redirect_stdout(io.StringIO()):
            code = s.compare()
        return code, s

    def test_a_missing_baseline_folder_is_refused_before_anything_runs(self):
        with redirect_stdout(io.StringIO()), open(os.devnull, "w") as devnull:
            old, sys.stderr = sys.stderr, devnull
            try:
                with self.assertRaises(SystemExit) as stop:
                    suite.main(["--baseline", os.path.join(self.dir.name, "typo"), "--out", self.out, "--build",
                                self.dir.name, "--only", "kernels"])
            finally:
                sys.stderr = old
        self.assertEqual(stop.exception.code, 2)
        self.assertEqual(os.listdir(self.out), [])

    def test_results_without_a_baseline_are_listed(self):
        result_file(os.path.join(self.baseline, "ring.json"), {"a": 10.0}, dict(CONTEXT, cpu_model="Another CPU"))
        code, s = self.compare({"ring.json": ({"a": 10.0}, None), "comm.json": ({"b": 5.0}, None)})
        self.assertEqual(code, 0)
        self.assertEqual(s.failures, [])
        self.assertEqual(len(s.uncompared), 2)
        self.assertIn("cpu_model", " ".join(s.uncompared))
        self.assertIn("comm.json (not in the baseline)", s.uncompared)

    def test_the_worst_verdict_decides(self):
        result_file(os.path.join(self.baseline, "ring.json"), {"a": 10.0, "b": 10.0})
        result_file(os.path.join(self.baseline, "comm.json"), {"c": 10.0})
        code, s = self.compare({"ring.json": ({"a": 10.0}, None), "comm.json": ({"c": 10.0}, None)})
        self.assertEqual(code, 4)  # ring.json lost case b
        self.assertEqual(s.uncompared, [])
        code, _ = self.compare({"ring.json": ({"a": 10.0}, None), "comm.json": ({"c": 20.0}, None)})
        self.assertEqual(code, 1)

    def test_figures_of_some_parts_have_their_own_folder(self):
        s = suite.Suite(argparse.Namespace(out=self.out, only="strategies,ring"))
        self.assertEqual(s.plot_folder(), os.path.join(self.out, "plots", "ring-strategies"))
        s = suite.Suite(argparse.Namespace(out=self.out, only=None))
        self.assertEqual(s.plot_folder(), os.path.join(self.out, "plots"))


class VariantCostTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def rfa_run_file(self, name, fwd, bwd):
        """rfa_run's cases, each repetition's time (ms) and rate given as (ms, TFLOP/s) pairs."""
        benchmarks = []
        for pass_, reps in (("fwd", fwd), ("bwd", bwd)):
            for ms, tflops in reps:
                benchmarks.append({"name": f"main_job/{pass_}/zigzag", "run_type": "iteration", "real_time": ms,
                                   "time_unit": "ms", "tflops": tflops})
            benchmarks.append({"name": f"main_job/{pass_}/zigzag_median", "run_type": "aggregate",
                               "aggregate_name": "median", "real_time": 1e9, "tflops": 1e9})
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump({"context": CONTEXT, "benchmarks": benchmarks}, f)
        return path

    def test_medians_over_the_main_jobs(self):
        main = self.rfa_run_file("main.json", [(10, 2.0), (12, 1.0), (11, 1.5)], [(20, 2.0), (30, 1.0), (25, 1.6)])
        variant = self.rfa_run_file("v.json", [(30, 0.5), (11, 0.9), (12, 0.75)], [(50, 1.0), (20, 2.0), (25, 0.8)])
        self.assertEqual(suite.variant_cost(main, variant),
                         "forward 1.09x the time, 0.50x the rate; backward 1.00x the time, 0.62x the rate")

    def test_a_variant_is_compared_but_not_drawn(self):
        s = suite.Suite(argparse.Namespace(out=self.dir.name))
        result = os.path.join(self.dir.name, "v.json")
        code = "import sys; open(sys.argv[1], 'w').write('{}')"
        with redirect_stdout(io.StringIO()):
            s.run("v", [sys.executable, "-c", code, result], result, plotted=False)
        self.assertEqual(s.written, [result])
        self.assertEqual(s.plotted, [])


class LauncherTest(unittest.TestCase):
    """The launcher template: {P} the ranks, {N} the nodes they fill at --ranks-per-node each (srun
    given the ranks alone spreads them over every node of the allocation)."""

    def test_the_nodes_are_the_ranks_per_node_rounded_up(self):
        template = "srun --nodes={N} --ntasks={P} --cpu-bind=cores"
        for ranks, nodes in ((1, 1), (2, 1), (3, 1), (4, 1), (5, 2), (8, 2), (9, 3), (12, 3)):
            self.assertEqual(suite.launcher_for(template, ranks, 4),
                             ["srun", f"--nodes={nodes}", f"--ntasks={ranks}", "--cpu-bind=cores"])
        self.assertEqual(suite.launcher_for(template, 3, 1)[1], "--nodes=3")

    def test_a_template_without_nodes_needs_no_ranks_per_node(self):
        self.assertEqual(suite.launcher_for("srun -n {P}", 8), ["srun", "-n", "8"])

    def test_nodes_without_ranks_per_node_are_refused_before_anything_runs(self):
        with self.assertRaises(ValueError):
            suite.launcher_for("srun --nodes={N} --ntasks={P}", 2)
        with tempfile.TemporaryDirectory() as out:
            for extra in ([], ["--ranks-per-node", "0"]):
                with redirect_stdout(io.StringIO()), open(os.devnull, "w") as devnull:
                    old, sys.stderr = sys.stderr, devnull
                    try:
                        with self.assertRaises(SystemExit) as stop:
                            suite.main(["--launcher", "srun --nodes={N} --ntasks={P}", "--out", out, "--build", out,
                                        "--only", "main", *extra])
                    finally:
                        sys.stderr = old
                self.assertEqual(stop.exception.code, 2)
                self.assertEqual(os.listdir(out), [])


if __name__ == "__main__":
    unittest.main()
