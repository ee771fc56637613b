# SPDX-License-Identifier: BSD-3-Clause
"""One rfa_run job on `ranks` MPI ranks with --json, for the scripts of perf/masks: returns its
JSON results and its printed output. RFA_MPIEXEC names the MPI launcher (default mpiexec); ranks
may outnumber the cores (--oversubscribe), and root may run it (--allow-run-as-root)."""
import json
import os
import subprocess
import tempfile


def rfa_run_json(build, ranks, flags, timeout=1800):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = [os.environ.get("RFA_MPIEXEC", "mpiexec"), "-n", str(ranks), "--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += [os.path.join(build, "perf", "ring", "rfa_run")] + [str(f) for f in flags] + ["--json", out]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout).stdout
        with open(out) as f:
            return json.load(f), text
