#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What each attention variant costs on a device: device_check.sh's ab phase runs the main job
(rfa_run, one rank, rfa's sm_80 kernels) once per variant at the same shape, and this reads
their JSON and sets each variant beside the run it is measured against.

    variant_costs.py --run NAME FILE [--run ...] --variant NAME FILE BASE [--variant ...] [--json OUT]

--run names a run that only serves as a base; --variant names one and the run (a --run or an
earlier --variant) it is measured against. Each file is one rfa_run --json: the medians of its
forward and backward (the "main_job/fwd/..." and "main_job/bwd/..." aggregates). For every
variant and pass it prints the base's and the variant's median ms, their ratio variant / base
(above 1: the variant costs that much more time) and the ratio of their rates over the visible
scores (TFLOP/s, variant / base: below 1, each visible score costs more with the variant), and
writes them as JSON with --json. A report, not a test of speed: exit status 0 when every file
was read and holds both passes, 1 otherwise.
"""
import argparse
import json
import sys

PASSES = ("forward", "backward")


def passes_of(path):
    """{pass: (median ms, TFLOP/s)} of one rfa_run --json: its forward's and backward's medians."""
    with open(path) as f:
        data = json.load(f)
    found = {}
    for b in data.get("benchmarks", []):
        name = b.get("name", "")
        if b.get("run_type") != "aggregate" or b.get("aggregate_name", "median") != "median":
            continue
        for p, prefix in (("forward", "main_job/fwd/"), ("backward", "main_job/bwd/")):
            ms, rate = b.get("real_time"), b.get("tflops")
            if name.startswith(prefix) and isinstance(ms, (int, float)) and isinstance(rate, (int, float)):
                found[p] = (float(ms), float(rate))
    missing = [p for p in PASSES if p not in found]
    if missing:
        raise ValueError("no median of the " + " or ".join(missing))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", nargs=2, action="append", default=[], metavar=("NAME", "FILE"))
    parser.add_argument("--variant", nargs=3, action="append", required=True, metavar=("NAME", "FILE", "BASE"))
    parser.add_argument("--json", help="write the comparison here")
    args = parser.parse_args()
    runs = {}
    for name, path in args.run + [v[:2] for v in args.variant]:
        if name in runs:
            print(f"variant_costs: {name} is named twice", file=sys.stderr)
            return 1
        try:
            runs[name] = passes_of(path)
        except (OSError, ValueError) as e:
            print(f"variant_costs: cannot read {name} ({path}): {e}", file=sys.stderr)
            return 1
    for name, _, base in args.variant:
        if base not in runs or base == name:
            print(f"variant_costs: {name} is measured against {base}, which is not another run given",
                  file=sys.stderr)
            return 1
    print("each variant beside its base run: time ratio variant / base (> 1: slower), rate ratio over the "
          "visible scores (< 1: each costs more)")
    print(f"{'variant':14} {'base':10} {'pass':9} {'base ms':>9} {'variant ms':>11} {'time':>7} {'rate':>7}")
    out = {"variants": []}
    for name, _, base in args.variant:
        for p in PASSES:
            (base_ms, base_rate), (ms, rate) = runs[base][p], runs[name][p]
            row = {"variant": name, "base": base, "pass": p, "base_ms": base_ms, "variant_ms": ms,
                   "time_ratio": ms / base_ms, "rate_ratio": rate / base_rate if base_rate > 0 else None}
            out["variants"].append(row)
            rate_text = f"{row['rate_ratio']:7.3f}" if row["rate_ratio"] is not None else f"{'-':>7}"
            print(f"{name:14} {base:10} {p:9} {base_ms:9.3f} {ms:11.3f} {row['time_ratio']:7.3f} {rate_text}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
