#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""How evenly each layout spreads the mask families' work over P ranks, counted and measured.

For every P, rfa_mask_balance counts each family of masks given as ranges (perf/masks/
mask_balance.hpp: causal, skewed documents, prefix-LM, block-causal, a 2-D neighbourhood, random
sparse) on each placement and writes the families' lists; rfa_run then runs the ring on the very
same lists, on the fixed layouts and on the balanced one, and reports each rank's compute CPU
seconds (engine::PassTimings::compute_cpu). The measured balance is the busiest rank's over the
mean of the ranks, forward and backward (median over the repetitions), and the busiest rank's
compute CPU ms, what its pass would take on a core of its own without the communication: CPU
seconds rather than wall time, so that ranks which outnumber the cores and take turns still
measure their own work (the slowest rank's wall time goes to the JSON too).
The counted balance is rfa_mask_balance's visible pairs and computed tiles, busiest over mean
(forward and backward tiles; balanced: its `balanced` placement, the layout's).

usage: perf/masks/measured_balance.py [--build build] [--ranks 2,4,8] [--seq 16384] [--heads 4]
                                      [--head-dim 64] [--dtype fp32] [--repeat 3]
                                      [--layouts contiguous,zigzag,stripe,balanced]
                                      [--families all] [--json FILE]
RFA_MPIEXEC names the MPI launcher (default mpiexec). Each P runs on the largest length up to
--seq that every family and layout takes there (a multiple of 256 and of 8 P).
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

from rfa_run_json import rfa_run_json

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAMILIES = ["causal", "skewed documents", "prefix-LM", "block-causal", "2-D neighbourhood", "random sparse"]


def stem(family):
    return family.replace(" ", "-").lower()


def seq_for(seq, P):
    step = 256 * (8 * P) // math.gcd(256, 8 * P)
    return seq // step * step


def counted(args, seq, P, directory):
    """rfa_mask_balance's rows for this (seq, P): {(family, placement): (pairs, tiles, backward tiles)}; writes
    the lists."""
    text = subprocess.run([os.path.join(args.build, "perf", "masks", "rfa_mask_balance"), "--seq", str(seq),
                           "--ranks", str(P), "--write-ranges", directory],
                          check=True, capture_output=True, text=True, timeout=600).stdout
    rows = {}
    for family in FAMILIES:
        for m in re.finditer(r"^%s\s+(\S+)\s+%d\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)" % (re.escape(family), P), text,
                             re.M):
            rows[(family, m.group(1))] = (float(m.group(2)), float(m.group(3)), float(m.group(4)))
    return rows


def measured(args, seq, P, layout, ranges_file):
    data, _ = rfa_run_json(args.build, P,
                           ["--seq", seq, "--layout", layout, "--mask", "ranges:" + ranges_file, "--heads", args.heads,
                            "--head-dim", args.head_dim, "--dtype", args.dtype, "--repeat", args.repeat, "--no-check",
                            "--no-overlap"])
    # The repetitions (rfa_run's aggregates left aside), their medians here.
    reps = {"fwd": [], "bwd": []}
    for b in data["benchmarks"]:
        m = re.match(r"main_job/(fwd|bwd)/", b["name"])
        if m and b.get("run_type") == "iteration":
            reps[m.group(1)].append(b)
    return {d: {"balance": statistics.median(b["compute_cpu_balance"] for b in r),
                "busiest_cpu_ms": 1e3 * statistics.median(b["compute_cpu_rank_max_s"] for b in r),
                "slowest_ms": statistics.median(b["real_time"] for b in r)} for d, r in reps.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--ranks", default="2,4,8")
    p.add_argument("--seq", type=int, default=16384)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--dtype", default="fp32")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--layouts", default="contiguous,zigzag,stripe,balanced")
    p.add_argument("--families", default="all", help="comma-separated file stems (causal,prefix-lm,...) or all")
    p.add_argument("--json")
    args = p.parse_args()
    families = FAMILIES if args.families == "all" else [f for f in FAMILIES if stem(f) in args.families.split(",")]
    if not families:
        sys.exit("measured_balance.py: --families names none of " + ", ".join(stem(f) for f in FAMILIES))

    rows = []
    print("%-18s %-10s %3s %6s %9s %9s %9s %9s %9s %10s %10s" %
          ("mask", "layout", "P", "S", "counted", "counted", "counted", "measured", "measured", "fwd cpu", "bwd cpu"))
    print("%-18s %-10s %3s %6s %9s %9s %9s %9s %9s %10s %10s" %
          ("", "", "", "", "pairs", "tiles", "bwd tiles", "fwd", "bwd", "ms (max)", "ms (max)"))
    for P in [int(x) for x in args.ranks.split(",")]:
        seq = seq_for(args.seq, P)
        if seq == 0:
            sys.exit("measured_balance.py: --seq %d is shorter than one length P = %d takes (a multiple of 256 and "
                     "of 8P)" % (args.seq, P))
        with tempfile.TemporaryDirectory() as lists:
            counts = counted(args, seq, P, lists)
            for family in families:
                for layout in args.layouts.split(","):
                    pairs, tiles, backward_tiles = counts.get((family, layout), (0.0, 0.0, 0.0))
                    m = measured(args, seq, P, layout, os.path.join(lists, stem(family) + ".ranges"))
                    row = {"mask": family, "layout": layout, "ranks": P, "seq": seq, "counted_pairs": pairs,
                           "counted_tiles": tiles, "counted_backward_tiles": backward_tiles, "measured_forward": m["fwd"]["balance"],
                           "measured_backward": m["bwd"]["balance"],
                           "forward_cpu_ms_rank_max": m["fwd"]["busiest_cpu_ms"],
                           "backward_cpu_ms_rank_max": m["bwd"]["busiest_cpu_ms"],
                           "forward_ms": m["fwd"]["slowest_ms"], "backward_ms": m["bwd"]["slowest_ms"]}
                    rows.append(row)
                    print("%-18s %-10s %3d %6d %9.3f %9.3f %9.3f %9.3f %9.3f %10.1f %10.1f" %
                          (family, layout, P, seq, pairs, tiles, backward_tiles, row["measured_forward"], row["measured_backward"],
                           row["forward_cpu_ms_rank_max"], row["backward_cpu_ms_rank_max"]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"heads": args.heads, "head_dim": args.head_dim, "dtype": args.dtype, "repeat": args.repeat,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
