"""What one batch of all arms costs against one run per arm: gsb26's Figure 1 at the full tier.

Runs ``claims.gsb26.experiments:minibatch_run`` at its full-tier sizes with the steps cut to
``--steps`` (no cache), once with Figure 1's four arms in one batch and once with a single
arm, each in a fresh process on one CPU thread, and prints a markdown table of the process's
user and system CPU seconds and minor page faults.  The batch's per-step attention temporaries
(trials x batch^2 float64) are 1.44 GB, above the size from which glibc maps fresh memory for
every allocation (`theorycheck.runtime.MMAP_THRESHOLD`), so each step page-faults them in: the
system time.  One arm's temporaries stay below it.  The claims use one run per arm
(`claims.gsb26.experiments.arm_runs`).

Run:  python benchmarks/arm_split.py [--steps 40] [--out FILE.md]
Timings are measurements, never test assertions.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the scripts' shared output)

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, sys
from claims.gsb26 import experiments
from claims.gsb26.test_experiments import EXPERIMENT_SIZES, FIG1_ARMS
from theorycheck.explore import run_shared
experiments.minibatch_run.sizes["full"]["steps"] = int(sys.argv[1])
arms = [list(a) for a in FIG1_ARMS[:int(sys.argv[2])]]
before = resource.getrusage(resource.RUSAGE_SELF)
run_shared("claims.gsb26.experiments:minibatch_run", tier="full", seed=0, device="cpu", dtype="float64", threads=1,
           config={"arms": arms, "instances": EXPERIMENT_SIZES["full"]["fig1_instances"], "etas": [0.1]},
           cache_dir=None, use_cache=False)
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"arms": len(arms), "user_s": after.ru_utime - before.ru_utime,
                  "sys_s": after.ru_stime - before.ru_stime, "minor_faults": after.ru_minflt - before.ru_minflt}))
"""


def measure(steps: int, arms: int) -> dict:
    """One fresh process running the minibatch run with the first ``arms`` of Figure 1's arms."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", CHILD, str(steps), str(arms)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="steps of each run (default 40)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    rows = [measure(args.steps, arms) for arms in (4, 1)]
    lines = [f"gsb26 Figure 1's minibatch run, full-tier sizes, {args.steps} steps, one CPU thread:", "",
             "| arms in the run | user s | system s | minor faults | CPU s per arm |", "|---|---|---|---|---|"]
    lines += [f"| {r['arms']} | {r['user_s']:.1f} | {r['sys_s']:.1f} | {r['minor_faults']} | "
              f"{(r['user_s'] + r['sys_s']) / r['arms']:.1f} |" for r in rows]
    text = "\n".join(lines) + "\n"
    bench.emit(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
