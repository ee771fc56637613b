# SPDX-License-Identifier: BSD-3-Clause
"""Tests of perf/multinode/scale_check's choices that need no namespaces: the shaper's burst by
node count (on either side of the machine's cores), the wait for a quiet machine, and the TCP
processing as the median of its pairs over the bytes every node moved, the link's calibration
(refused where it is noise), and the transfers' cost to the kernels read from the ring bench (the
programs and /proc/stat stood in for)."""
import pathlib
import unittest
from unittest import mock

import perf_tool

scale_check = perf_tool.load("multinode/scale_check")


class BurstTest(unittest.TestCase):
    def tearDown(self):
        scale_check.BURST_MS = None

    def test_own_core_up_to_the_cores_shared_above(self):
        with mock.patch.object(scale_check.os, "cpu_count", return_value=2):
            self.assertEqual(scale_check.burst_ms(1), scale_check.OWN_CORE_BURST_MS)
            self.assertEqual(scale_check.burst_ms(2), scale_check.OWN_CORE_BURST_MS)
            self.assertEqual(scale_check.burst_ms(3), scale_check.SHARED_CORES_BURST_MS)
            self.assertEqual(scale_check.burst_ms(8), scale_check.SHARED_CORES_BURST_MS)
        self.assertNotEqual(scale_check.OWN_CORE_BURST_MS, scale_check.SHARED_CORES_BURST_MS)

    def test_given_burst_for_every_count(self):
        scale_check.BURST_MS = 7
        with mock.patch.object(scale_check.os, "cpu_count", return_value=2):
            self.assertEqual([scale_check.burst_ms(n) for n in (1, 2, 3, 8)], [7, 7, 7, 7])


class QuietTest(unittest.TestCase):
    def test_returns_once_a_half_second_is_quiet(self):
        # Busy seconds read before and after each half second: 0.9 busy, then 0.08 (under 10% of
        # two cores' second), then never read again.
        readings = iter([0.0, 0.9, 0.9, 0.98])
        with mock.patch.object(scale_check, "busy_cpu_seconds", side_effect=lambda: next(readings)), \
                mock.patch.object(scale_check.os, "cpu_count", return_value=2), \
                mock.patch.object(scale_check.time, "sleep") as sleep:
            scale_check.wait_until_quiet()
        self.assertEqual(sleep.call_count, 2)

    def test_gives_up_after_its_bound(self):
        clock = iter(range(100))  # one second a look: the deadline at 3 leaves two naps
        busy = iter(range(0, 1000, 5))  # always busy: 5 CPU seconds a nap on 2 cores
        before = scale_check.QUIET["busy_starts"]
        with mock.patch.object(scale_check, "busy_cpu_seconds", side_effect=lambda: next(busy)), \
                mock.patch.object(scale_check.os, "cpu_count", return_value=2), \
                mock.patch.object(scale_check.time, "monotonic", side_effect=lambda: next(clock)), \
                mock.patch.object(scale_check.time, "sleep") as sleep:
            quiet = scale_check.wait_until_quiet(within=3.0)
        self.assertFalse(quiet)
        self.assertEqual(sleep.call_count, 2)
        self.assertEqual(scale_check.QUIET["busy_starts"], before + 1)

    def test_bound_from_the_option_and_busy_starts_counted(self):
        clock = iter(range(100))
        busy = iter(range(0, 1000, 5))  # always busy
        saved = dict(scale_check.QUIET)
        try:
            scale_check.QUIET.update(within_s=2.0, busy_starts=0)
            with mock.patch.object(scale_check, "busy_cpu_seconds", side_effect=lambda: next(busy)), \
                    mock.patch.object(scale_check.os, "cpu_count", return_value=2), \
                    mock.patch.object(scale_check.time, "monotonic", side_effect=lambda: next(clock)), \
                    mock.patch.object(scale_check.time, "sleep") as sleep:
                self.assertFalse(scale_check.wait_until_quiet())
                self.assertFalse(scale_check.wait_until_quiet())
            self.assertLessEqual(sleep.call_count, 4)
            self.assertEqual(scale_check.QUIET["busy_starts"], 2)
        finally:
            scale_check.QUIET.clear()
            scale_check.QUIET.update(saved)

    def test_a_quiet_start_is_not_counted(self):
        readings = iter([0.0, 0.01])
        saved = dict(scale_check.QUIET)
        try:
            scale_check.QUIET["busy_starts"] = 0
            with mock.patch.object(scale_check, "busy_cpu_seconds", side_effect=lambda: next(readings)), \
                    mock.patch.object(scale_check.os, "cpu_count", return_value=2), \
                    mock.patch.object(scale_check.time, "sleep"):
                self.assertTrue(scale_check.wait_until_quiet())
            self.assertEqual(scale_check.QUIET["busy_starts"], 0)
        finally:
            scale_check.QUIET.clear()
            scale_check.QUIET.update(saved)


class ProcessingTest(unittest.TestCase):
    def test_median_of_the_pairs_over_the_bytes_every_node_moved(self):
        # Each run's busy seconds in order: 8-byte run, block run, per pair; over eight nodes, each
        # rank sending two messages per exchange.
        nodes, block, repeat = 8, 1 << 20, 20
        moved = nodes * 2 * (repeat + 2) * (block - 8)
        per_byte = [3e-9, 1e-9, 2e-9, 5e-9, 4e-9]
        busy = []
        for figure in per_byte:
            busy += [0.5, 0.5 + figure * moved]
        clock = {"busy": 0.0, "runs": iter(busy)}
        launched = []

        def launch(n, *args, **kwargs):
            launched.append(n)
            clock["busy"] += next(clock["runs"])
            return ""

        with mock.patch.object(scale_check, "launch", side_effect=launch), \
                mock.patch.object(scale_check, "wait_until_quiet"), \
                mock.patch.object(scale_check, "busy_cpu_seconds", side_effect=lambda: clock["busy"]):
            median, pairs = scale_check.cpu_per_byte(pathlib.Path("build"), nodes, "1gbit", block,
                                                     pathlib.Path("out"), repeat=repeat, pairs=5)
        self.assertEqual(launched, [nodes] * 10)
        self.assertAlmostEqual(median, 3e-9, delta=1e-15)
        for got, want in zip(pairs, per_byte):
            self.assertAlmostEqual(got, want, delta=1e-15)


class CalibrationTest(unittest.TestCase):
    TABLE = ("rfa_comm_bench: ring exchange over mpi, 2 ranks, 2 message(s) at once, 10 repetition(s) per size\n"
             "       bytes  median us     min us     max us  GB/s (link)     MPI GB/s   rfa/MPI\n"
             "           8      {small}       24.8     3729.6         0.00           -         -\n"
             "       65536      {large}      205.8     1201.4         0.16           -         -\n")

    def calibrate(self, small, large):
        with mock.patch.object(scale_check, "run", return_value=self.TABLE.format(small=small, large=large)):
            return scale_check.calibrate(pathlib.Path("build"), 2, "1gbit", 65536, pathlib.Path("out"))

    def test_latency_and_bandwidth_from_the_medians(self):
        latency, bandwidth = self.calibrate("100.0", "1100.0")
        self.assertAlmostEqual(latency, 100e-6, delta=1e-12)
        self.assertAlmostEqual(bandwidth, 2 * (65536 - 8) / 1000e-6, delta=1.0)

    def test_a_large_message_no_slower_than_a_small_one_is_noise(self):
        # A loaded machine's medians: read as a bandwidth, 1e14 B/s, whose burst could not be allocated.
        with self.assertRaises(SystemExit) as stop:
            self.calibrate("977.7", "814.4")
        self.assertIn("noise", str(stop.exception))


class RingBenchTableTest(unittest.TestCase):
    TABLE = ("layout         fwd ms    bwd ms      fwd GF/s      bwd GF/s  fwd eff  bwd eff     fwd hidden     bwd hidden"
             "   comm ms\n"
             "contiguous       10.1      18.7   106.4 (24%)   143.3 (33%)    58.3%    63.2%          noise          noise"
             "    0/1   \n"
             "zigzag            6.6      13.8   162.1 (-)     194.0 (-)      88.8%    85.6%    23% (0-100)      0% (0-39)"
             "    2/5   \n")

    def test_reads_each_layout_row(self):
        rows = scale_check.ring_bench(self.TABLE)
        self.assertEqual(sorted(rows), ["contiguous", "zigzag"])
        self.assertEqual(rows["contiguous"]["fwd_ms"], 10.1)
        self.assertIsNone(rows["contiguous"]["fwd_hidden"])
        z = rows["zigzag"]
        self.assertEqual((z["fwd_ms"], z["bwd_ms"]), (6.6, 13.8))
        self.assertAlmostEqual(z["fwd_efficiency"], 0.888)
        self.assertAlmostEqual(z["bwd_efficiency"], 0.856)
        self.assertEqual((z["fwd_hidden"], z["fwd_hidden_range"]), (0.23, "0-100"))
        self.assertEqual((z["bwd_hidden"], z["bwd_hidden_range"]), (0.0, "0-39"))
        self.assertEqual(z["comm_only_ms"], [2.0, 5.0])


class KernelCostTest(unittest.TestCase):
    LINE = ("the transfers' cost to the kernels (zigzag; each rank's kernel time with the ring's transfers less "
            "without, over the bytes moved): {} / {} ns per byte (forward / backward), 0.10 both\n")

    def test_reads_the_ring_bench_line(self):
        text = "layout ...\n" + self.LINE.format("0.42", "1.30")
        forward, backward = scale_check.kernel_cost_per_byte(text, pathlib.Path("out"))
        self.assertAlmostEqual(forward, 0.42e-9, delta=1e-15)
        self.assertAlmostEqual(backward, 1.30e-9, delta=1e-15)

    def test_noise_below_zero_is_none(self):
        forward, backward = scale_check.kernel_cost_per_byte(self.LINE.format("-0.05", "0.20"), pathlib.Path("out"))
        self.assertEqual(forward, 0.0)
        self.assertAlmostEqual(backward, 0.20e-9, delta=1e-15)

    def test_missing_line_is_an_error(self):
        with self.assertRaises(SystemExit):
            scale_check.kernel_cost_per_byte("layout ...\n", pathlib.Path("out"))


if __name__ == "__main__":
    unittest.main()
