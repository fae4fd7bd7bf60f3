"""The manifold projection's cost: `theorycheck.solvers.project_to_manifold` on fixed problems.

The projection onto the manifold of balanced factorizations is a weighted orthogonal Procrustes
problem (`theorycheck.solvers.balanced_factorization.weighted_procrustes`); gsb26 projects every
tracked iterate of its runs.  Rows, for Sigma of condition number 1, 10 and 100 (d = 3, k = 4,
the ill-conditioned recipe's sizes) and points at distance ``offset`` from the manifold:

``cold``
    a multi-start projection (the two polar starts and 8 Haar starts), as at a trajectory's first
    point;
``warm``
    a projection warm-started from the previous point's rotation alone, along a path of
    ``PATH`` points that moves 1% of ``offset`` a step, as `tracked_distances` does;

each with the median milliseconds per projection over ``--repeats`` timings (process CPU
time, one thread), the number of polar factors (SVDs) per projection, and the largest
`symmetry_defect` of the results (the projection's first-order condition, zero at an exact one).  The polar-factor
count is counted by wrapping the module's ``polar_factor``: it measures the iterations of the
majorize-minimize steps (and of the polar starts), whichever version of the solver runs.

Run:  python benchmarks/projection.py [--out benchmarks/results/projection-vm.json]
Timings are measurements, never test assertions.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import theorycheck.solvers.balanced_factorization as factorization  # noqa: E402

#: condition numbers of Sigma, distances of the points from the manifold, and the warm path's length
CONDITIONS, OFFSETS, PATH = (1.0, 10.0, 100.0), (0.01, 0.3), 20


def problem(rng, condition, d=3, k=4):
    """(Sigma, W*): Sigma = Q diag(geomspace(1/condition, 1)) Q^T, W* of spectral norm 0.2."""
    Q = scipy.stats.ortho_group.rvs(d, random_state=rng)
    Sigma = Q @ np.diag(np.geomspace(1 / condition, 1.0, d)) @ Q.T
    B = rng.standard_normal((k, d))
    return (Sigma + Sigma.T) / 2, 0.2 * B / np.linalg.norm(B, 2)


def path(rng, Sigma, W, offset):
    """``PATH`` points (V, K): a manifold point moved by ``offset`` in a random direction, then
    by 1% of ``offset`` a step."""
    V0, K0 = factorization.manifold_point(W, Sigma, scipy.stats.ortho_group.rvs(len(Sigma), random_state=rng))
    direction = [rng.standard_normal(V0.shape), rng.standard_normal(K0.shape)]
    scale = offset / np.sqrt(sum(np.sum(x * x) for x in direction))
    V, K = V0 + scale * direction[0], K0 + scale * direction[1]
    points = [(V, K)]
    for _ in range(PATH - 1):
        V = V + 0.01 * offset * rng.standard_normal(V.shape) / np.sqrt(V.size + K.size)
        K = K + 0.01 * offset * rng.standard_normal(K.shape) / np.sqrt(V.size + K.size)
        points.append((V, K))
    return points


class PolarCount:
    """Counts the calls of the module's ``polar_factor`` while active."""

    def __init__(self):
        self.calls, self._original = 0, factorization.polar_factor

    def __enter__(self):
        def counted(M):
            self.calls += 1
            return self._original(M)
        factorization.polar_factor = counted
        return self

    def __exit__(self, *exc):
        factorization.polar_factor = self._original


def run_cold(points, Sigma, W, seed):
    rng = np.random.default_rng(seed)
    return [factorization.project_to_manifold(V, K, Sigma, W, rng) for V, K in points]


def run_warm(points, Sigma, W, seed):
    rng = np.random.default_rng(seed)
    first = factorization.project_to_manifold(*points[0], Sigma, W, rng)
    out = [first]
    for V, K in points[1:]:
        out.append(factorization.project_to_manifold(V, K, Sigma, W, rng, random_starts=0, starts=(out[-1].R,),
                                                     polar_starts=False))
    return out[1:]


def measure(kind, points, Sigma, W, repeats):
    """One row: median ms per projection, polar factors per projection, worst symmetry defect."""
    runner = run_cold if kind == "cold" else run_warm
    count = len(points) if kind == "cold" else len(points) - 1
    with PolarCount() as polar:
        results = runner(points, Sigma, W, 0)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        runner(points, Sigma, W, 0)
        times.append((time.process_time() - start) / count * 1e3)
    worst = max(factorization.symmetry_defect(V, K, p, Sigma) for (V, K), p in zip(points[-count:], results))
    return {"ms_per_projection": round(statistics.median(times), 3),
            "polar_factors_per_projection": round(polar.calls / count, 1),
            "max_symmetry_defect": worst}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "projection-vm.json")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    rng = np.random.default_rng(2026_12_05)
    rows = []
    for condition in CONDITIONS:
        Sigma, W = problem(rng, condition)
        for offset in OFFSETS:
            points = path(rng, Sigma, W, offset)
            for kind in ("cold", "warm"):
                row = {"condition": condition, "offset": offset, "kind": kind,
                       **measure(kind, points, Sigma, W, args.repeats)}
                rows.append(row)
                print(" | ".join(str(v) for v in row.values()), flush=True)
    document = {"platform": platform.platform(), "numpy": np.__version__, "repeats": args.repeats, "rows": rows}
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
