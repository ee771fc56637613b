# SPDX-License-Identifier: BSD-3-Clause
"""Tests of perf/plot on synthetic result files: every figure is drawn from what the files
hold, strategies other than the ring get their own bars, GPU benchmarks get their own figures
(and no strategy bars), and an exact zero error does not break the logarithmic error figure."""
import os
import tempfile
import unittest

import perf_tool

plot = perf_tool.load("plot")

SHAPE = "B=1 S=4096 H=4/4 d=64 causal"


def ring_entries(name, strategy, times_ms, tflops, layout=None, **figures):
    entries = []
    for i, (t, f) in enumerate(zip(times_ms, tflops)):
        e = {"name": name, "run_name": name, "run_type": "iteration", "repetition_index": i, "real_time": t,
             "time_unit": "ms", "suite": "ring", "strategy": strategy, "dtype": "float32", "shape": SHAPE,
             "tflops": f}
        if layout:
            e["layout"] = layout
        e.update(figures)
        entries.append(e)
    return entries


def run(ranks, entries):
    return ("synthetic.json", {"suite": "ring", "ranks": str(ranks)}, entries)


class PlotTest(unittest.TestCase):
    def test_every_strategy_in_the_files_gets_bars(self):
        runs = [run(4, ring_entries("ring/fwd/zigzag", "ring", [10, 11, 12], [0.05, 0.045, 0.04], layout="zigzag")
                    + ring_entries("ulysses/fwd", "ulysses", [8, 8, 9], [0.06, 0.06, 0.055]))]
        table = plot.strategy_table(runs)
        config = ("forward", 4, "float32", SHAPE)
        self.assertEqual(set(table), {config})
        self.assertEqual(set(table[config]), {"ring/zigzag", "ulysses"})
        median, least, largest = table[config]["ulysses"]["gflops"]
        self.assertAlmostEqual(median, 60.0)
        self.assertAlmostEqual(least, 55.0)
        self.assertAlmostEqual(largest, 60.0)
        with tempfile.TemporaryDirectory() as out:
            path = plot.plot_strategies(runs, out)
            self.assertTrue(os.path.getsize(path) > 0)

    def test_bytes_sent_and_workspace_are_per_strategy(self):
        mib = 2**20
        runs = [run(2, ring_entries("strategy/fwd/ring/zigzag", "ring", [10, 12], [0.05, 0.04], layout="zigzag",
                                    bytes_sent_rank_max=3 * mib, workspace_bytes_rank_max=5 * mib)
                    + ring_entries("strategy/fwd/ulysses/zigzag", "ulysses", [9, 9], [0.06, 0.06], layout="zigzag",
                                   bytes_sent_rank_max=1 * mib, workspace_bytes_rank_max=7 * mib)
                    # an older file's case: no byte counters, still a throughput bar
                    + ring_entries("strategy/fwd/allgather/zigzag", "allgather", [9], [0.06], layout="zigzag"))]
        row = plot.strategy_table(runs)[("forward", 2, "float32", SHAPE)]
        self.assertEqual(row["ring/zigzag"]["sent"], 3 * mib)
        self.assertEqual(row["ulysses/zigzag"]["workspace"], 7 * mib)
        self.assertIsNone(row["allgather/zigzag"]["sent"])
        with tempfile.TemporaryDirectory() as out:
            self.assertTrue(os.path.getsize(plot.plot_strategies(runs, out)) > 0)

    def test_the_main_job_and_kernels_are_not_strategies(self):
        main_job = ring_entries("main_job/fwd/zigzag", "ring", [10], [0.05], layout="zigzag")
        kernels = [dict(e, suite="kernels") for e in ring_entries("fwd float32 full", "none", [5], [0.07])]
        self.assertEqual(plot.strategy_table([run(2, main_job + kernels)]), {})

    def test_error_against_p_draws_exact_zeros(self):
        runs = [run(p, ring_entries("main_job/fwd/zigzag", "ring", [10, 10], [0.05, 0.05], layout="zigzag",
                                    max_error=err))
                for p, err in ((1, 0.0), (2, 2e-6), (4, 3e-6))]
        floor, points = plot.error_points(plot.error_series(runs))
        self.assertAlmostEqual(floor, 2e-7)  # a tenth of the smallest error
        self.assertEqual(len(points), 1)
        measured, zeros = next(iter(points.values()))
        self.assertEqual(measured, [(2, 2e-6), (4, 3e-6)])  # the line leaves the exact 0 out
        self.assertEqual(zeros, [(1, floor)])  # drawn apart, at the floor
        with tempfile.TemporaryDirectory() as out:
            path = plot.plot_error_vs_p(runs, out)
            self.assertTrue(os.path.getsize(path) > 0)

    def test_gpu_files_get_their_own_figures_and_are_not_strategies(self):
        # As rfa_cuda_kernel_bench and rfa_cuda_ring_step_bench write them: TFLOP/s, peers as
        # counters (one peer failed: its error instead of figures), the efficiency per P.
        kernels = [{"name": "cuda/fwd/causal", "run_name": "cuda/fwd/causal", "run_type": "iteration",
                    "repetition_index": i, "real_time": t, "time_unit": "ms", "suite": "cuda_kernels",
                    "dtype": "bf16", "shape": "B=2 S=8192 H=16/16 d=128", "tflops": f, "sdpa_flash_tflops": 300.0,
                    "sdpa_cudnn_error": "RuntimeError: No available kernel"}
                   for i, (t, f) in enumerate(((2.0, 280.0), (2.1, 270.0), (1.9, 290.0)))]
        steps = [{"name": f"cuda_ring_step/P{p}/fwd_fused", "run_name": f"cuda_ring_step/P{p}/fwd_fused",
                  "run_type": "iteration", "repetition_index": 0, "real_time": 20.0, "time_unit": "ms",
                  "suite": "cuda_ring_step", "efficiency": e} for p, e in ((2, 0.98), (4, 0.97), (8, 0.92))]
        runs = [("kernels.json", {"suite": "cuda_kernels", "ranks": "1", "device": "cuda", "gpu_model": "H100"},
                 kernels),
                ("steps.json", {"suite": "cuda_ring_step", "ranks": "1", "device": "cuda"}, steps)]
        self.assertEqual(plot.strategy_table(runs), {})
        with tempfile.TemporaryDirectory() as out:
            self.assertTrue(os.path.getsize(plot.plot_gpu_kernels(runs, out)) > 0)
            self.assertTrue(os.path.getsize(plot.plot_gpu_ring_steps(runs, out)) > 0)
            self.assertIsNone(plot.plot_strategies(runs, out))
            self.assertIsNone(plot.plot_kernels(runs, out))  # the CPU figure: no CPU kernels here

    def test_ring_steps_of_both_block_kernels_are_separate_lines(self):
        steps = [{"name": f"{prefix}/P{p}/bwd", "run_name": f"{prefix}/P{p}/bwd", "run_type": "iteration",
                  "repetition_index": 0, "real_time": 20.0, "time_unit": "ms", "suite": "cuda_ring_step",
                  "efficiency": e}
                 for prefix, e in (("cuda_ring_step", 0.9), ("cuda_ring_step_cudnn", 0.95)) for p in (2, 4)]
        runs = [("steps.json", {"suite": "cuda_ring_step", "ranks": "1", "device": "cuda"}, steps)]
        series = plot.ring_step_series(runs)
        self.assertEqual(sorted(series), ["cudnn bwd", "rfa bwd"])
        self.assertAlmostEqual(series["cudnn bwd"][4][0], 0.95)
        with tempfile.TemporaryDirectory() as out:
            self.assertTrue(os.path.getsize(plot.plot_gpu_ring_steps(runs, out)) > 0)

    def test_errors_of_gpu_and_host_runs_are_separate_lines(self):
        host = run(2, ring_entries("main_job/fwd/zigzag", "ring", [10], [0.05], layout="zigzag", max_error=1e-3))
        gpu = ("gpu.json", {"suite": "ring", "ranks": "2", "device": "cuda"},
               ring_entries("main_job/fwd/zigzag", "ring", [1], [0.5], layout="zigzag", max_error=3e-3))
        series = plot.error_series([host, gpu])
        self.assertEqual(series[("float32", "forward (out, lse)")], {2: 1e-3})
        self.assertEqual(series[("float32 on cuda", "forward (out, lse)")], {2: 3e-3})
        with tempfile.TemporaryDirectory() as out:
            self.assertTrue(os.path.getsize(plot.plot_error_vs_p([host, gpu], out)) > 0)

    def test_plans_are_lines_per_machine_and_length_labelled_with_their_plan(self):
        def entry(seq, p, plan, fwd):
            name = f"plan/S={seq}/P={p}"
            return {"name": name, "run_name": name, "run_type": "iteration", "repetition_index": 0,
                    "real_time": 5.0, "time_unit": "ms", "suite": "plan", "plan": plan,
                    "forward_tflops_per_device": fwd, "backward_tflops_per_device": fwd / 2}
        runs = [("plan.json", {"suite": "plan", "machine_model": "h100-cluster"},
                 [entry(131072, 8, "ring, zigzag", 270.0), entry(131072, 64, "hybrid 8 x 8, zigzag", 200.0),
                  entry(1048576, 8, "ring, zigzag", 275.0)])]
        series = plot.plan_series(runs)
        self.assertEqual(sorted(series), [("h100-cluster", 131072), ("h100-cluster", 1048576)])
        self.assertEqual(series[("h100-cluster", 131072)][64], (200.0, 100.0, "hybrid 8 x 8, zigzag"))
        with tempfile.TemporaryDirectory() as out:
            self.assertTrue(os.path.getsize(plot.plot_plan(runs, out)) > 0)
        self.assertEqual(plot.plan_series([run(2, ring_entries("ring/fwd/zigzag", "ring", [1], [1.0]))]), {})

    def test_model_check_is_predicted_against_measured_per_strategy_and_p(self):
        def entry(strategy, mask, p, measured, predicted):
            name = f"model/{strategy}/{mask}/P={p}"
            return {"name": name, "run_name": name, "run_type": "iteration", "repetition_index": 0,
                    "real_time": measured, "time_unit": "ms", "suite": "model_check", "strategy": strategy,
                    "mask": mask, "ranks": p, "measured_forward_ms": measured, "predicted_forward_ms": predicted,
                    "measured_backward_ms": 2 * measured, "predicted_backward_ms": 1.5 * predicted}
        runs = [("check.json", {"suite": "model_check"},
                 [entry("ring, zigzag", "causal", 2, 100.0, 110.0), entry("ulysses", "causal", 2, 90.0, 80.0),
                  entry("ring, zigzag", "none", 4, 150.0, 140.0)])]
        points = plot.model_check_points(runs)
        self.assertEqual(sorted(points), [("ring, zigzag", 2), ("ring, zigzag", 4), ("ulysses", 2)])
        self.assertIn((100.0, 110.0, "forward", "causal"), points[("ring, zigzag", 2)])
        self.assertIn((200.0, 165.0, "backward", "causal"), points[("ring, zigzag", 2)])
        with tempfile.TemporaryDirectory() as out:
            self.assertTrue(os.path.getsize(plot.plot_model_check(runs, out)) > 0)
        self.assertEqual(plot.model_check_points([run(2, ring_entries("ring/fwd/zigzag", "ring", [1], [1.0]))]), {})

    def test_nothing_to_plot_is_said(self):
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "empty.json")
            with open(path, "w") as f:
                f.write('{"context": {}, "benchmarks": []}')
            self.assertEqual(plot.main(["--out", out, path]), 3)


if __name__ == "__main__":
    unittest.main()
