"""The quick tier's cost per paper, against the standard of 60 s in one process.

Runs ``pytest claims/<paper> --tc-no-report --tc-no-cache`` once per paper (one process each,
the default one thread, a cold cache: every shared run computed), in sequence, and records the
process's wall seconds (interpreter start included), its CPU seconds (user + system, from the
child's resource usage) and pytest's exit status.  Writes ``results/quick-tier-<machine>.json``
and prints a markdown table.  Run it on an otherwise idle machine: the wall time of a shared one
measures the other jobs too (the CPU seconds less so).

A virtual machine's core is not the same speed from day to day (its host's other tenants), so
the run also times a fixed workload before the papers and after them (`host_probe`: a pure
Python loop, the interpreter's speed, and float64 matrix products on one thread, the kernels');
the results record both, and two tables are comparable only where the probes are.

    python benchmarks/quick_tier.py --machine vm            # every paper of claims/
    python benchmarks/quick_tier.py --papers anon20 gsb26   # a subset (the others' rows kept)
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the standard each paper's quick tier is held to (seconds, one process)
BUDGET_S = 60.0


def papers(claims_dir: Path) -> list[str]:
    """The paper packages under ``claims_dir`` (folders with an ``__init__.py``)."""
    return sorted(p.name for p in claims_dir.iterdir() if (p / "__init__.py").is_file())


def time_paper(paper: str, claims_dir: Path) -> dict:
    """One cold quick-tier run of ``paper`` in a process of its own: wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", str(claims_dir / paper), "--tc-no-report",
                           "--tc-no-cache", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = (done.stdout.strip().splitlines() or [""])[-1]
    return {"paper": paper, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "exit_status": done.returncode, "pytest": summary}


#: the host probe's workload: Python loop iterations, and (size, count) of the matrix products
PROBE_LOOP, PROBE_MATMUL = 10**7, (512, 40)


def host_probe() -> dict:
    """Seconds of a fixed workload in this process: ``python_s`` for `PROBE_LOOP` additions in a
    Python loop, ``matmul_s`` for `PROBE_MATMUL` float64 products of two 512 x 512 matrices with
    torch on one thread (the thread count restored after)."""
    import torch

    start = time.perf_counter()
    total = 0
    for i in range(PROBE_LOOP):
        total += i
    python_s = time.perf_counter() - start
    size, count = PROBE_MATMUL
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a = torch.ones(size, size, dtype=torch.float64) / size
        start = time.perf_counter()
        for _ in range(count):
            a = a @ a
        matmul_s = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    return {"python_s": round(python_s, 3), "matmul_s": round(matmul_s, 3)}


def table(rows: list[dict]) -> str:
    """The markdown table of ``rows`` against `BUDGET_S`."""
    lines = ["| paper | wall s | CPU s | within 60 s (wall) | pytest |", "|---|---|---|---|---|"]
    lines += [f"| {r['paper']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
              f"{'yes' if r['wall_s'] <= BUDGET_S else '**no**'} | {r['pytest']} |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", default="vm", help="name of the results file's machine")
    parser.add_argument("--papers", nargs="*", default=None, help="paper keys (default: all)")
    parser.add_argument("--claims-dir", default=str(ROOT / "claims"))
    args = parser.parse_args(argv)
    claims_dir = Path(args.claims_dir)
    known = papers(claims_dir)
    chosen = args.papers or known
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise SystemExit(f"quick_tier: unknown paper(s) {unknown}; the papers are {known}")
    out = ROOT / "benchmarks" / "results" / f"quick-tier-{args.machine}.json"
    earlier = json.loads(out.read_text())["rows"] if out.is_file() else []
    probes = [host_probe()]
    fresh = [time_paper(paper, claims_dir) for paper in chosen]
    probes.append(host_probe())
    rows = sorted([r for r in earlier if r["paper"] not in chosen] + fresh, key=lambda r: r["paper"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    out.write_text(json.dumps({"machine": args.machine, "platform": platform.platform(), "commit": commit,
                               "budget_s": BUDGET_S, "host_probe": {"before": probes[0], "after": probes[1]},
                               "rows": rows}, indent=1) + "\n")
    print(table(rows))
    print(f"host probe (before, after the papers): {probes[0]}, {probes[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
