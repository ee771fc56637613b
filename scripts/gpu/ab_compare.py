#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The paired A/B of device_check.sh's ab phase: rfa's sm_80 kernels at a baseline revision
against the current ones, from their kernel benchmarks' JSON, taken in turns.

    ab_compare.py --pair BASELINE.json CURRENT.json [--pair ...] [--json OUT]

Each file is one run of rfa_cuda_kernel_bench: the baseline's in its revision's format (the
early benchmark's {"results": [{"pass", "causal", "ms"}]}, or perf/'s result format) and the
current one's in perf/'s (the "benchmarks" entries' medians, labelled pass and mask). For every
row both sides of every pair measured (forward and backward, full and causal), it prints the
baseline's and the current median times and the ratio baseline / current per pair (above 1:
the current kernels are faster), its median and range, and writes them as JSON with --json.
A report, not a test: exit status 0 when every file was read and some row compared, 1
otherwise (an unreadable file, or nothing in common), whatever the ratios.
"""
import argparse
import json
import statistics
import sys

PASSES = {"forward": "forward", "fwd": "forward", "backward": "backward", "bwd": "backward"}


def rows_of(path):
    """{(pass, mask): ms} of one benchmark run: forward and backward, full and causal, sm_80."""
    with open(path) as f:
        data = json.load(f)
    rows = {}
    if isinstance(data.get("results"), list):  # the early benchmark's own format
        for r in data["results"]:
            p = PASSES.get(r.get("pass"))
            if p and isinstance(r.get("ms"), (int, float)):
                rows[(p, "causal" if r.get("causal") else "full")] = float(r["ms"])
    for b in data.get("benchmarks", []):  # perf/'s result format: the medians
        if b.get("run_type") != "aggregate" or b.get("path", "sm80") != "sm80":
            continue
        p = PASSES.get(b.get("pass"))
        ms = b.get("real_time")
        if p and isinstance(ms, (int, float)):
            rows[(p, "causal" if b.get("mask") == "causal" else "full")] = float(ms)
    if not rows:
        raise ValueError("no forward or backward row")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", nargs=2, action="append", required=True, metavar=("BASELINE", "CURRENT"))
    parser.add_argument("--json", help="write the comparison here")
    args = parser.parse_args()
    pairs = []
    for base, current in args.pair:
        try:
            pairs.append((rows_of(base), rows_of(current)))
        except (OSError, ValueError) as e:
            print(f"ab_compare: cannot read the pair {base} / {current}: {e}", file=sys.stderr)
            return 1
    keys = sorted(set.intersection(*(set(b) & set(c) for b, c in pairs)))
    left_out = sorted(set.union(*(set(b) ^ set(c) for b, c in pairs)) - set(keys))
    if not keys:
        print("ab_compare: no row that both sides of every pair measured", file=sys.stderr)
        return 1
    print(f"paired A/B over {len(pairs)} pair(s); ratio = baseline ms / current ms (> 1: the current kernels are faster)")
    print(f"{'pass':9} {'mask':7} {'baseline ms':>12} {'current ms':>11} {'ratio':>7}  range")
    out = {"pairs": len(pairs), "rows": []}
    for p, mask in keys:
        base = [b[(p, mask)] for b, _ in pairs]
        cur = [c[(p, mask)] for _, c in pairs]
        ratios = [x / y for x, y in zip(base, cur)]
        row = {"pass": p, "mask": mask, "baseline_ms": base, "current_ms": cur,
               "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
        out["rows"].append(row)
        print(f"{p:9} {mask:7} {statistics.median(base):12.3f} {statistics.median(cur):11.3f} "
              f"{row['ratio_median']:7.3f}  [{row['ratio_min']:.3f}, {row['ratio_max']:.3f}]")
    for p, mask in left_out:
        print(f"{p:9} {mask:7} measured on one side only: left out")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
