"""Start-up cost of a seed's run: ``theorycheck sweep`` / ``calibrate`` run every seed as a
fresh pytest process; this times the seed runner (`theorycheck.sweep.run_seeds`: processes forked
from a server that imported the heavy libraries once) against one ``python -m pytest``
subprocess per seed (how it ran before), on the same seeds of a cheap claim, one seed at a time.

The seeds only time the runs (nothing is chosen on them), so the spent seeds 0-19 serve.
Wall seconds per seed on an otherwise idle machine (the forked processes are not children of
this one, so their CPU time is not visible here; one job on an idle core is the CPU time).

    python benchmarks/seed_runner.py --seeds 0-9 --out benchmarks/results/seed-runner-vm.json
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from theorycheck.sweep import parse_seeds, run_seeds

#: a claim whose own run is a fraction of a second: the seed's cost is its start-up
DEFAULT_NODE = "claims/jta24/test_descent_lemmas.py::test_norm_increment"


def subprocess_seconds(seeds: list[int], node: str, out: Path) -> list[float]:
    """Wall seconds of ``python -m pytest node --tc-seed s`` per seed (the former runner)."""
    times = []
    for seed in seeds:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", node, "--tc-seed", str(seed), "--tc-report-dir",
                        str(out / f"sub{seed}"), "--tc-baseline", "none", "-p", "no:cacheprovider", "-q"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False)
        times.append(time.perf_counter() - start)
    return times


def runner_seconds(seeds: list[int], node: str, out: Path) -> list[float]:
    """Wall seconds of `run_seeds` per seed (one seed per call, after one call that starts the
    process server, which a sweep pays once)."""
    run_seeds(seeds[:1], [node], out / "warm", progress=lambda line: None)
    times = []
    for seed in seeds:
        start = time.perf_counter()
        run_seeds([seed], [node], out / f"fork{seed}", progress=lambda line: None)
        times.append(time.perf_counter() - start)
    return times


def summary(times: list[float]) -> dict:
    """Mean, least and largest of ``times`` (seconds)."""
    return {"mean_s": sum(times) / len(times), "min_s": min(times), "max_s": max(times), "seeds": len(times)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--node", default=DEFAULT_NODE)
    parser.add_argument("--out", type=Path, help="results file (JSON); default: print only")
    args = parser.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        result = {"machine": platform.node(), "node": args.node, "seeds": args.seeds,
                  "subprocess": summary(subprocess_seconds(seeds, args.node, scratch)),
                  "seed_runner": summary(runner_seconds(seeds, args.node, scratch))}
    result["saved_fraction"] = 1 - result["seed_runner"]["mean_s"] / result["subprocess"]["mean_s"]
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
