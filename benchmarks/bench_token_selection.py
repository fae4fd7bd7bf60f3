"""Speed of the batched token-selection model, its optimizers and the SVM references.

Measures, on the CPU (one torch thread) and on CUDA when torch sees a GPU:
* seconds per optimizer step (NGD, Polyak, per-block NGD with time factor on (u, W)) as the number of batched
  trials K grows -- the point of the leading trial dimension is that the cost per step
  grows far slower than K;
* seconds per W-SVM solve (Gram dual / primal, cvxpy + Clarabel) at the small and large
  Example-1 sizes.

Run:  python benchmarks/bench_token_selection.py [--out benchmarks/results-<host>.json]
Timings are measurements, not assertions: nothing in the test suite depends on them.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the claims package: vdt24's data sets
from claims.vdt24.setup import example1, gaussian_dm  # noqa: E402
from theorycheck.models import TokenSelection  # noqa: E402
from theorycheck.optim import NGD, BlockNGD, Polyak  # noqa: E402


def seconds_per_step(step, params, steps: int, sync) -> float:
    """Median over 3 repeats of the wall time per step of ``steps`` consecutive steps."""
    times = []
    for _ in range(3):
        sync()
        t0 = time.perf_counter()
        p = params
        for t in range(steps):
            p = step(t, p)
        sync()
        times.append((time.perf_counter() - t0) / steps)
    return float(np.median(times))


def bench_optimizers(device: str, trials: list[int], sizes: dict, steps: int) -> list[dict]:
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    rows = []
    for K in trials:
        data = example1(np.random.default_rng(0), K, **sizes).to_torch(device)
        d = data.X.shape[-1]
        W0 = 0.01 / np.sqrt(d) * torch.randn(K, d, d, dtype=torch.float64, device=device)
        model = TokenSelection(data.X, data.y, data.u)
        for name, step in [("ngd", NGD(model, 0.1)), ("polyak", Polyak(model))]:
            sec = seconds_per_step(step, {"W": W0}, steps, sync)
            rows.append(dict(device=device, method=name, K=K, **sizes, sec_per_step=sec,
                             sec_per_trial_step=sec / K))
        dm = gaussian_dm(np.random.default_rng(0), K, n=sizes["n"], d=sizes["d"]).to_torch(device)
        zeros_u = torch.zeros(K, sizes["d"], dtype=torch.float64, device=device)
        zeros_W = torch.zeros(K, sizes["d"], sizes["d"], dtype=torch.float64, device=device)
        sec = seconds_per_step(BlockNGD(TokenSelection(dm.X, dm.y), 1.0, alpha=2 / 3),
                               {"u": zeros_u, "W": zeros_W}, steps, sync)
        rows.append(dict(device=device, method="block_ngd_joint", K=K, n=sizes["n"], T=2, d=sizes["d"],
                         sec_per_step=sec, sec_per_trial_step=sec / K))
        print(rows[-3:])
    return rows


def bench_wsvm() -> list[dict]:
    from theorycheck.solvers import solve_wsvm
    from theorycheck.solvers.margin import clear_cache

    rows = []
    for sizes, methods in [(dict(n=6, T=4, d=32), ("dual", "primal")),
                           (dict(n=64, T=8, d=768), ("dual",))]:
        inst = example1(np.random.default_rng(0), 1, **sizes).instance(0)
        for method in methods:
            clear_cache()
            t0 = time.perf_counter()
            solve_wsvm(inst.X, inst.opt, method=method)
            rows.append(dict(program="W-SVM", method=method, **sizes, seconds=time.perf_counter() - t0))
            print(rows[-1])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    results = {"host": platform.node(), "platform": platform.platform(), "torch": torch.__version__,
               "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
               "optimizers": [], "svm": bench_wsvm()}
    for device in devices:
        results["optimizers"] += bench_optimizers(device, [1, 10, 100, 1000],
                                                  dict(n=6, T=4, d=32), args.steps)
        results["optimizers"] += bench_optimizers(device, [1, 10], dict(n=64, T=8, d=768),
                                                  max(5, args.steps // 10))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
