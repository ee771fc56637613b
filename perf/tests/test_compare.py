# SPDX-License-Identifier: BSD-3-Clause
"""Tests of perf/compare on synthetic result files: a clear regression is flagged, noise is
not, a correctness mismatch or a case that errored always is, an unknown machine, device,
communicator or case is a new baseline, too few repetitions give no verdict (and hide no
regression elsewhere), a case the new run lost on the same machine makes it incomplete, and a
file without cases or context, of a newer result format, or options out of range, are usage
errors."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

import numpy as np

import perf_tool

compare = perf_tool.load("compare")

CONTEXT = {"cpu_model": "Test CPU", "gpu_model": "none", "num_cpus": "2", "ranks": "2", "threads_per_rank": "1",
           "kokkos_backends": "Serial", "suite": "ring"}


def result_file(directory, name, cases, context=None):
    """Writes perf/'s format: one entry per repetition (times in ms) plus a median aggregate
    that the comparator must ignore."""
    benchmarks = []
    for case, spec in cases.items():
        times = spec["times_ms"]
        for i, t in enumerate(times):
            entry = {"name": case, "run_name": case, "run_type": "iteration", "repetitions": len(times),
                     "repetition_index": i, "iterations": 1, "real_time": t, "cpu_time": t, "time_unit": "ms",
                     "suite": spec.get("suite", "ring"), "dtype": "float32", "shape": spec.get("shape", "S=1024")}
            if "correct" in spec:
                entry["correct"] = spec["correct"]
            if spec.get("error_occurred"):
                entry["error_occurred"] = True  # Google Benchmark's SkipWithError
            benchmarks.append(entry)
        benchmarks.append({"name": case + "_median", "run_name": case, "run_type": "aggregate",
                           "aggregate_name": "median", "real_time": 1e9, "time_unit": "ms"})
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump({"context": context or CONTEXT, "benchmarks": benchmarks}, f)
    return path


def noisy(median_ms, spread, n=12, seed=0):
    rng = np.random.default_rng(seed)
    return list(median_ms * (1.0 + spread * rng.standard_normal(n)))


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.base = result_file(self.dir.name, "base.json", {
            "ring/fwd/zigzag": {"times_ms": noisy(100, 0.02, seed=1)},
            "fwd float32 full": {"times_ms": noisy(50, 0.01, seed=2), "suite": "kernels"}})

    def tearDown(self):
        self.dir.cleanup()

    def run_compare(self, new, *extra):
        out_json = os.path.join(self.dir.name, "verdict.json")
        with redirect_stdout(io.StringIO()) as table:
            code = compare.main([self.base, new, "--json-out", out_json, *extra])
        with open(out_json) as f:
            verdict = json.load(f)
        return code, {c["case"]: c for c in verdict["cases"]}, table.getvalue()

    def test_clear_regression_is_flagged(self):
        new = result_file(self.dir.name, "new.json", {
            "ring/fwd/zigzag": {"times_ms": noisy(125, 0.02, seed=3)},
            "fwd float32 full": {"times_ms": noisy(50, 0.01, seed=4), "suite": "kernels"}})
        code, cases, table = self.run_compare(new)
        self.assertEqual(code, 1)
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "regression")
        self.assertLess(cases["ring/fwd/zigzag"]["p_slower"], 0.05)
        self.assertAlmostEqual(cases["ring/fwd/zigzag"]["ratio"], 1.25, delta=0.05)
        self.assertEqual(cases["fwd float32 full"]["verdict"], "same")
        self.assertIn("regression", table)

    def test_noise_is_not_flagged(self):
        new = result_file(self.dir.name, "new.json", {
            "ring/fwd/zigzag": {"times_ms": noisy(101, 0.03, seed=5)},
            "fwd float32 full": {"times_ms": noisy(50.5, 0.02, seed=6), "suite": "kernels"}})
        code, cases, _ = self.run_compare(new)
        self.assertEqual(code, 0)
        self.assertEqual({c["verdict"] for c in cases.values()}, {"same"})

    def test_thresholds_depend_on_the_suite(self):
        # 7% slower, significant: over the kernels' 5%, under the ring's 10%.
        new = result_file(self.dir.name, "new.json", {
            "ring/fwd/zigzag": {"times_ms": noisy(107, 0.005, seed=7)},
            "fwd float32 full": {"times_ms": noisy(53.5, 0.005, seed=8), "suite": "kernels"}})
        code, cases, _ = self.run_compare(new)
        self.assertEqual(code, 1)
        self.assertEqual(cases["fwd float32 full"]["verdict"], "regression")
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "same")
        self.assertLess(cases["ring/fwd/zigzag"]["p_slower"], 0.05)

    def test_a_correctness_mismatch_is_always_a_regression(self):
        new = result_file(self.dir.name, "new.json", {
            "ring/fwd/zigzag": {"times_ms": noisy(90, 0.02, seed=9), "correct": 0},
            "fwd float32 full": {"times_ms": noisy(50, 0.01, seed=10), "suite": "kernels"}})
        code, cases, _ = self.run_compare(new)
        self.assertEqual(code, 1)
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "regression")
        self.assertIn("wrong", cases["ring/fwd/zigzag"]["reason"])

    def test_a_case_that_errored_is_a_regression(self):
        new = result_file(self.dir.name, "new.json", {
            "ring/fwd/zigzag": {"times_ms": noisy(100, 0.02, seed=1), "error_occurred": True},
            "fwd float32 full": {"times_ms": noisy(50, 0.01, seed=2), "suite": "kernels"}})
        code, cases, _ = self.run_compare(new)
        self.assertEqual(code, 1)
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "regression")

    def test_a_regression_beside_too_few_repetitions_is_still_one(self):
        new = result_file(self.dir.name, "new.json", {
            "ring/fwd/zigzag": {"times_ms": noisy(125, 0.02, seed=3)},
            "fwd float32 full": {"times_ms": noisy(50, 0.01, n=5, seed=4), "suite": "kernels"}})
        code, cases, _ = self.run_compare(new)
        self.assertEqual(cases["fwd float32 full"]["verdict"], "too-few")
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "regression")
        self.assertEqual(code, 1)

    def test_an_unknown_machine_is_a_new_baseline(self):
        other = dict(CONTEXT, cpu_model="Another CPU")
        new = result_file(self.dir.name, "new.json", {"ring/fwd/zigzag": {"times_ms": noisy(200, 0.02, seed=11)}},
                          context=other)
        code, cases, _ = self.run_compare(new)
        self.assertEqual(code, 0)
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "new-baseline")
        self.assertIn("cpu_model", cases["ring/fwd/zigzag"]["reason"])
        self.assertEqual(cases["fwd float32 full"]["verdict"], "missing")

    def run_across(self, key, base_value, new_value):
        """The main job's case measured with the context's `key` at two values (3x slower in
        the second): exit code and the case's verdict."""
        base = result_file(self.dir.name, "a.json", {"main_job/fwd/zigzag": {"times_ms": noisy(100, 0.02, seed=17)}},
                           context=dict(CONTEXT, **{key: base_value}))
        new = result_file(self.dir.name, "b.json", {"main_job/fwd/zigzag": {"times_ms": noisy(300, 0.02, seed=18)}},
                          context=dict(CONTEXT, **{key: new_value}))
        verdict = os.path.join(self.dir.name, "verdict.json")
        with redirect_stdout(io.StringIO()):
            code = compare.main([base, new, "--json-out", verdict])
        with open(verdict) as f:
            return code, json.load(f)["cases"][0]

    def test_a_gpu_run_is_not_compared_with_a_host_run(self):
        code, case = self.run_across("device", "host", "cuda")
        self.assertEqual(code, 0)
        self.assertEqual(case["verdict"], "new-baseline")
        self.assertIn("device", case["reason"])

    def test_another_communicator_is_a_new_baseline(self):
        code, case = self.run_across("communicator", "mpi", "nccl")
        self.assertEqual(code, 0)
        self.assertEqual(case["verdict"], "new-baseline")
        self.assertIn("communicator", case["reason"])

    def test_other_cuda_kernels_or_ring_order_are_a_new_baseline(self):
        for key, a, b in (("cuda_kernels", "rfa", "cudnn"), ("ring_order", "identity", "topology"),
                          ("deterministic", "0", "1"), ("nodes", "1", "2")):
            code, case = self.run_across(key, a, b)
            self.assertEqual(code, 0, key)
            self.assertEqual(case["verdict"], "new-baseline", key)
            self.assertIn(key, case["reason"])

    def test_a_run_setting_only_one_file_records_is_compared(self):
        base = result_file(self.dir.name, "a.json", {"main_job/fwd/zigzag": {"times_ms": noisy(100, 0.02, seed=21)}})
        new = result_file(self.dir.name, "b.json", {"main_job/fwd/zigzag": {"times_ms": noisy(300, 0.02, seed=22)}},
                          context=dict(CONTEXT, ring_order="topology"))
        with redirect_stdout(io.StringIO()):
            self.assertEqual(compare.main([base, new]), 1)

    def test_an_unknown_case_or_shape_is_a_new_baseline(self):
        new = result_file(self.dir.name, "new.json", {
            "ring/fwd/stripe": {"times_ms": noisy(300, 0.02, seed=12)},
            "ring/fwd/zigzag": {"times_ms": noisy(300, 0.02, seed=13), "shape": "S=4096"},
            "fwd float32 full": {"times_ms": noisy(50, 0.01, seed=14), "suite": "kernels"}})
        code, cases, _ = self.run_compare(new)
        self.assertEqual(code, 0)
        self.assertEqual(cases["ring/fwd/stripe"]["verdict"], "new-baseline")
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "new-baseline")
        self.assertIn("shape", cases["ring/fwd/zigzag"]["reason"])

    def test_too_few_repetitions_give_no_verdict(self):
        new = result_file(self.dir.name, "new.json", {
            "ring/fwd/zigzag": {"times_ms": noisy(200, 0.02, n=5, seed=15)},
            "fwd float32 full": {"times_ms": noisy(50, 0.01, seed=16), "suite": "kernels"}})
        code, cases, _ = self.run_compare(new)
        self.assertEqual(code, 3)
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "too-few")

    def test_google_benchmark_decorations_do_not_split_cases(self):
        self.assertEqual(compare.case_key({"run_name": "fwd float32 full/min_time:1.000/real_time"}),
                         "fwd float32 full")

    def test_a_case_lost_on_the_same_machine_makes_the_run_incomplete(self):
        new = result_file(self.dir.name, "new.json", {"ring/fwd/zigzag": {"times_ms": noisy(100, 0.02, seed=19)}})
        code, cases, table = self.run_compare(new)
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "same")
        self.assertEqual(cases["fwd float32 full"]["verdict"], "missing")
        self.assertEqual(code, 4)
        self.assertIn("overall: incomplete", table)

    def test_a_regression_beside_a_lost_case_is_still_one(self):
        new = result_file(self.dir.name, "new.json", {"ring/fwd/zigzag": {"times_ms": noisy(125, 0.02, seed=20)}})
        code, cases, _ = self.run_compare(new)
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "regression")
        self.assertEqual(code, 1)

    def usage_error(self, *argv):
        """perf/compare's exit code for argv, its error output swallowed."""
        with redirect_stdout(io.StringIO()), open(os.devnull, "w") as devnull:
            old, sys.stderr = sys.stderr, devnull
            try:
                return compare.main(list(argv))
            except SystemExit as e:  # argparse's errors
                return e.code
            finally:
                sys.stderr = old

    def test_a_file_without_cases_or_context_is_a_usage_error(self):
        empty = os.path.join(self.dir.name, "empty.json")
        with open(empty, "w") as f:
            json.dump({"context": CONTEXT, "benchmarks": []}, f)
        self.assertEqual(self.usage_error(self.base, empty), 2)
        self.assertEqual(self.usage_error(empty, self.base), 2)
        bare = os.path.join(self.dir.name, "bare.json")
        with open(self.base) as f:
            benchmarks = json.load(f)["benchmarks"]
        with open(bare, "w") as f:
            json.dump({"benchmarks": benchmarks}, f)
        self.assertEqual(self.usage_error(bare, self.base), 2)

    def test_a_newer_result_format_is_a_usage_error(self):
        for schema in ("2", "x", "\u00b2"):  # a superscript two is a digit to str.isdigit
            newer = result_file(self.dir.name, "newer.json", {"ring/fwd/zigzag": {"times_ms": noisy(100, 0.02)}},
                                context=dict(CONTEXT, result_schema=schema))
            self.assertEqual(self.usage_error(self.base, newer), 2, schema)
            self.assertEqual(self.usage_error(newer, self.base), 2, schema)
        known = result_file(self.dir.name, "known.json", {"ring/fwd/zigzag": {"times_ms": noisy(100, 0.02)}},
                            context=dict(CONTEXT, result_schema="1"))
        with redirect_stdout(io.StringIO()):
            self.assertEqual(compare.main([self.base, known]), 4)  # lost the kernels case: readable

    def test_options_out_of_range_are_usage_errors(self):
        for extra in (["--alpha", "2"], ["--alpha", "0"], ["--threshold", "-0.5"], ["--min-repetitions", "1"]):
            self.assertEqual(self.usage_error(self.base, self.base, *extra), 2, extra)
        code, cases, _ = self.run_compare(self.base, "--alpha", "0.01", "--threshold", "0")
        self.assertEqual(code, 0)
        self.assertEqual(cases["ring/fwd/zigzag"]["verdict"], "same")

    def test_an_unreadable_file_is_a_usage_error(self):
        broken = os.path.join(self.dir.name, "broken.json")
        with open(broken, "w") as f:
            f.write("{not json")
        with redirect_stdout(io.StringIO()), open(os.devnull, "w") as devnull:
            old, sys.stderr = sys.stderr, devnull
            try:
                code = compare.main([self.base, broken])
            finally:
                sys.stderr = old
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()
