#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a sparse mask costs against the full one: rfa_run's forward and backward (slowest rank,
median of the repetitions) for masks that leave about a tenth of the pairs visible, on the
needed-only exchange and on the ring (the peer, measured in the same run), over the time of the
full mask on the ring. Prints a table and writes the figures as JSON.

usage: perf/masks/sparse_vs_full.py [--build build] [--ranks 4] [--seq 8192] [--heads 4]
                                    [--head-dim 128] [--dtype fp32] [--repeat 3] [--json FILE]
RFA_MPIEXEC names the MPI launcher (default mpiexec).

Masks (S tokens): the full mask; causal with a window of S/10 (the pairs of a band a tenth of the
sequence wide); ten equal documents without the causal mask; a 2-D neighbourhood of radius 14 on
a 128-wide grid in row-major order (S / 128 rows), whose pairs cut every tile they reach
(docs/masks.md). Each runs on the contiguous layout, where neighbours hold neighbouring rows
and the needed-only exchange moves a halo, and on the ring also on zigzag, its default.
"""
import argparse
import json
import os
import re
import sys

from rfa_run_json import rfa_run_json

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(args, extra, strategy, layout):
    data, text = rfa_run_json(args.build, args.ranks,
                              ["--strategy", strategy, "--layout", layout, "--heads", args.heads, "--head-dim",
                               args.head_dim, "--dtype", args.dtype, "--repeat", args.repeat, "--no-check"] + extra)
    passes = {b["name"].split("/")[1]: b for b in data["benchmarks"] if b["name"].startswith("main_job/")}
    visible = re.search(r"over the (\d+) visible scores", text)
    return {
        "strategy": strategy, "layout": layout,
        "forward_ms": passes["fwd"]["real_time"], "backward_ms": passes["bwd"]["real_time"],
        "forward_bytes_rank_max": passes["fwd"].get("bytes_sent_rank_max", 0),
        "backward_bytes_rank_max": passes["bwd"].get("bytes_sent_rank_max", 0),
        "visible_scores": int(visible.group(1)) if visible else 0,
        "context": data["context"],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--dtype", default="fp32")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args()
    S = args.seq
    if S % 128 != 0 or S % (2 * args.ranks) != 0:
        sys.exit("sparse_vs_full: --seq must be a multiple of 128 (the grid's width) and of 2 x --ranks (zigzag)")
    docs = ",".join([str(S // 10)] * 9)
    masks = [
        ("full", ["--seq", str(S), "--mask", "none"], [("ring", "zigzag"), ("needed", "contiguous")]),
        ("causal window S/10", ["--seq", str(S), "--mask", "causal", "--window", str(S // 10)],
         [("needed", "contiguous"), ("ring", "contiguous"), ("ring", "zigzag")]),
        ("10 documents", ["--seq", str(S), "--mask", "none", "--documents", docs],
         [("needed", "contiguous"), ("ring", "contiguous"), ("ring", "zigzag")]),
        ("2-D neighbourhood r=14", ["--mask", "grid:128x%d:14" % (S // 128)],
         [("needed", "contiguous"), ("ring", "contiguous")]),
    ]
    rows = []
    for name, extra, runs in masks:
        for strategy, layout in runs:
            r = run(args, extra, strategy, layout)
            r["mask"] = name
            rows.append(r)
            print("measured %-24s %-7s %-10s fwd %8.1f ms  bwd %8.1f ms" %
                  (name, strategy, layout, r["forward_ms"], r["backward_ms"]), flush=True)
    full = rows[0]
    full_ms = full["forward_ms"] + full["backward_ms"]
    full_pairs = float(full["visible_scores"]) or 1.0
    print("\nP=%d S=%d H=%d d=%d %s, slowest rank, median of %d; 'of full': forward+backward over the "
          "full mask on the ring (zigzag)" % (args.ranks, S, args.heads, args.head_dim, args.dtype, args.repeat))
    print("%-24s %-7s %-10s %8s %9s %9s %8s %12s" % ("mask", "strategy", "layout", "visible", "fwd ms", "bwd ms",
                                                   "of full", "MiB fwd/rank"))
    for r in rows:
        r["visible_fraction"] = r["visible_scores"] / full_pairs
        r["of_full"] = (r["forward_ms"] + r["backward_ms"]) / full_ms
        print("%-24s %-7s %-10s %7.1f%% %9.1f %9.1f %8.3f %12.2f" %
              (r["mask"], r["strategy"], r["layout"], 100 * r["visible_fraction"], r["forward_ms"], r["backward_ms"],
               r["of_full"], r["forward_bytes_rank_max"] / 2**20))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"context": full["context"], "ranks": args.ranks, "seq": S, "runs": [
                {k: v for k, v in r.items() if k != "context"} for r in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
