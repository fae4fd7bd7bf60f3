"""The library's linear-classifier step against a plain torch loop written for it, same run.

Rows: for each loss (logistic, exponential) and size (K trials, n samples, d features) of
``SIZES``, on one CPU thread (``--threads``):

``library_us``
    microseconds of CPU time per batched step of ``GD(LinearClassifier(X, y, loss=...), eta)``
    (`theorycheck.optim.GD` over `theorycheck.models.LinearClassifier`: the log-domain gradient,
    exact in saturation, and the generic first-order step);
``plain_us``
    the same update written the way a user writes it in plain batched torch::

        m = y * (X @ w)                          # margins
        g = -(X^T (y * sigmoid(-m))) / n         # or exp(-m): the exponential loss
        w = w - eta * g

    (exact only away from saturation: its gradient underflows to 0 at margins of 1e3);
``ratio``
    library_us / plain_us.

A second table times `theorycheck.models.scaled` (the function a model author calls to put a
plain gradient in scaled form: two passes, the peak and the division) against one elementwise
pass over the same tensor (``2 * G``).

Each time is the median of ``--repeats`` timings of at least ``--min-seconds`` of consecutive
steps (after a warm-up), by process CPU time (on a shared machine the wall time includes other
jobs).  Both sides step from the same start on the same data, iterates progressing.

Run:  python benchmarks/linear_step.py [--out benchmarks/results/linear-step-vm.md]
Timings are measurements, never test assertions.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from theorycheck.models import LinearClassifier, scaled, separable_data  # noqa: E402
from theorycheck.optim import GD  # noqa: E402

#: (K, n, d): one trial, a claim's batch, many trials, a larger data set
SIZES = ((1, 100, 10), (64, 100, 10), (1024, 100, 10), (64, 1000, 50))
LOSSES = ("logistic", "exponential")
ETA = 0.5


def plain_step(X, y, loss, eta):
    """The update of the module docstring, written plainly: ``step(w) -> w``."""
    n = X.shape[1]
    slope = torch.sigmoid if loss == "logistic" else torch.exp

    def step(w):
        m = y * torch.bmm(X, w[:, :, None]).squeeze(-1)
        g = -torch.bmm((y * slope(-m))[:, None, :], X).squeeze(1) / n
        return w - eta * g

    return step


def cpu_us_per_call(advance, state, repeats, min_seconds):
    """Median over ``repeats`` of the CPU microseconds per call of ``state = advance(state)``,
    each timing at least ``min_seconds`` long (after one warm-up call)."""
    state = advance(state)
    times = []
    for _ in range(repeats):
        start, count = time.process_time(), 0
        while count < 2 or time.process_time() - start < min_seconds:
            state = advance(state)
            count += 1
        times.append((time.process_time() - start) / count * 1e6)
    return statistics.median(times)


def step_rows(sizes, repeats, min_seconds):
    rows = []
    for K, n, d in sizes:
        X, y = separable_data(K, n, d, generator=torch.Generator().manual_seed(1000))
        w0 = 0.1 * torch.randn(K, d, generator=torch.Generator().manual_seed(1001), dtype=torch.float64)
        for loss in LOSSES:
            gd = GD(LinearClassifier(X, y, loss=loss), ETA)
            clock = {"t": 0}

            def library(params, gd=gd, clock=clock):
                clock["t"] += 1
                return gd(clock["t"], params)

            lib = cpu_us_per_call(library, {"w": w0}, repeats, min_seconds)
            plain = cpu_us_per_call(plain_step(X, y, loss, ETA), w0, repeats, min_seconds)
            rows.append(dict(loss=loss, K=K, n=n, d=d, library_us=lib, plain_us=plain, ratio=lib / plain))
    return rows


def scaled_rows(repeats, min_seconds):
    rows = []
    for shape in ((1, 10), (64, 10), (3, 6, 6), (256, 32, 32)):
        G = torch.randn(*shape, generator=torch.Generator().manual_seed(1002), dtype=torch.float64)
        times = {name: cpu_us_per_call(lambda s, f=f: (f(G), s)[1], None, repeats, min_seconds)
                 for name, f in (("scaled", scaled), ("one pass", lambda t: 2 * t))}
        rows.append(dict(shape=shape, **times))
    return rows


def markdown(rows, scaled_table, threads):
    lines = [f"Linear classifier step, {platform.node()} ({platform.machine()}), torch {torch.__version__}, "
             f"{threads} CPU thread(s), CPU microseconds a step (median):", "",
             "| loss | K | n | d | library (us) | plain torch (us) | library / plain |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['loss']} | {r['K']} | {r['n']} | {r['d']} | {r['library_us']:.1f} | {r['plain_us']:.1f} | "
              f"{r['ratio']:.2f} |" for r in rows]
    lines += ["", "`scaled(G)` against one elementwise pass over G (`2 * G`):", "",
              "| G shape | scaled (us) | one pass (us) |", "|---|---|---|"]
    lines += [f"| {tuple(r['shape'])} | {r['scaled']:.1f} | {r['one pass']:.1f} |"
              for r in scaled_table]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=0.2)
    parser.add_argument("--sizes", default=None, help="K,n,d;K,n,d... (default: SIZES)")
    parser.add_argument("--out", default=None, help="write the markdown here (default: print it)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sizes = SIZES if args.sizes is None else [tuple(int(v) for v in s.split(",")) for s in args.sizes.split(";")]
    text = markdown(step_rows(sizes, args.repeats, args.min_seconds), scaled_rows(args.repeats, args.min_seconds),
                    args.threads)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
