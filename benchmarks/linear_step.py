"""The library's linear-classifier step against a plain torch loop written for it, same run.

Rows: for each loss (logistic, exponential), optimizer (GD, NGD) and size (K trials, n samples,
d features) of ``SIZES``, on one CPU thread (``--threads``):

``library_us``
    microseconds of CPU time per batched step of ``GD(LinearClassifier(X, y, loss=...), eta)``
    or ``NGD(...)`` (`theorycheck.optim` over `theorycheck.models.LinearClassifier`: the
    log-domain gradient, exact in saturation, and the generic first-order step);
``plain_us``
    the same update written the way a user writes it in plain batched torch::

        m = y * (X @ w)                          # margins
        g = -(X^T (y * sigmoid(-m))) / n         # or exp(-m): the exponential loss
        w = w - eta * g                          # GD
        w = w - eta * g / ||g||                  # NGD

    (exact only away from saturation: its gradient underflows to 0 at margins of 1e3);
``ratio``
    library_us / plain_us.

A second table times `theorycheck.models.scaled` (the function a model author calls to put a
plain gradient in scaled form: two passes, the peak and the division) against one elementwise
pass over the same tensor (``2 * G``).

Each time is the median of ``--repeats`` timings of at least ``--min-seconds`` of consecutive
steps (after a warm-up), by process CPU time (on a shared machine the wall time includes other
jobs), the timings of the two sides of a row taken in turn (library, plain, library, ...) so
that a change of the machine's load falls on both alike.  Both sides step from the same start
on the same data, every timing from it again (`interleaved_us`).

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
from theorycheck.optim import GD, NGD  # noqa: E402

#: (K, n, d): one trial, a claim's batch, many trials, a larger data set
SIZES = ((1, 100, 10), (64, 100, 10), (1024, 100, 10), (64, 1000, 50))
LOSSES = ("logistic", "exponential")
#: the library's optimizer of each row and whether the plain loop normalizes its step
OPTIMIZERS = {"GD": (GD, False), "NGD": (NGD, True)}
#: the step size: GD's steps shrink with the gradient; NGD's have length ETA, which keeps the
#: margins of a timing's few thousand steps (at most about 200) far from the float range
ETA = 0.01


def plain_step(X, y, loss, eta, normalized=False):
    """The update of the module docstring, written plainly: ``step(w) -> w``."""
    n = X.shape[1]
    slope = torch.sigmoid if loss == "logistic" else torch.exp

    def step(w):
        m = y * torch.bmm(X, w[:, :, None]).squeeze(-1)
        g = -torch.bmm((y * slope(-m))[:, None, :], X).squeeze(1) / n
        if normalized:
            return w - eta * g / torch.linalg.vector_norm(g, dim=1, keepdim=True)
        return w - eta * g

    return step


def interleaved_us(sides, repeats, min_seconds):
    """{name: median CPU microseconds per call} of each side ``(advance, state)`` of ``sides``
    ({name: side}; ``state = advance(state)``), over ``repeats`` rounds that time each side in
    turn for at least ``min_seconds`` (after one warm-up call each), every timing from the side's
    first state: each measures the same stretch of iterates, never one run far into saturation
    (where the plain loop's gradient is 0 and the arithmetic meets subnormal numbers)."""
    for advance, state in sides.values():
        advance(state)
    times = {name: [] for name in sides}
    for _ in range(repeats):
        for name, (advance, state) in sides.items():
            start, count = time.process_time(), 0
            while count < 2 or time.process_time() - start < min_seconds:
                state = advance(state)
                count += 1
            times[name].append((time.process_time() - start) / count * 1e6)
    return {name: statistics.median(values) for name, values in times.items()}


def library_step(step):
    """``advance(params) -> params`` of a library step, its clock running."""
    clock = {"t": 0}

    def advance(params):
        clock["t"] += 1
        return step(clock["t"], params)

    return advance


def step_rows(sizes, repeats, min_seconds):
    rows = []
    for K, n, d in sizes:
        X, y = separable_data(K, n, d, generator=torch.Generator().manual_seed(1000))
        w0 = 0.1 * torch.randn(K, d, generator=torch.Generator().manual_seed(1001), dtype=torch.float64)
        for optimizer, (make, normalized) in OPTIMIZERS.items():
            for loss in LOSSES:
                times = interleaved_us({
                    "library": (library_step(make(LinearClassifier(X, y, loss=loss), ETA)), {"w": w0}),
                    "plain": (plain_step(X, y, loss, ETA, normalized), w0)}, repeats, min_seconds)
                rows.append(dict(loss=loss, optimizer=optimizer, K=K, n=n, d=d, library_us=times["library"],
                                 plain_us=times["plain"], ratio=times["library"] / times["plain"]))
    return rows


def scaled_rows(repeats, min_seconds):
    rows = []
    for shape in ((1, 10), (64, 10), (3, 6, 6), (256, 32, 32)):
        G = torch.randn(*shape, generator=torch.Generator().manual_seed(1002), dtype=torch.float64)
        times = interleaved_us({name: (lambda s, f=f: (f(G), s)[1], None)
                                for name, f in (("scaled", scaled), ("one pass", lambda t: 2 * t))},
                               repeats, min_seconds)
        rows.append(dict(shape=shape, **times))
    return rows


def markdown(rows, scaled_table, threads):
    lines = [f"Linear classifier step, {platform.node()} ({platform.machine()}), torch {torch.__version__}, "
             f"{threads} CPU thread(s), CPU microseconds a step (median):", "",
             "| loss | optimizer | K | n | d | library (us) | plain torch (us) | library / plain |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['loss']} | {r['optimizer']} | {r['K']} | {r['n']} | {r['d']} | {r['library_us']:.1f} | "
              f"{r['plain_us']:.1f} | {r['ratio']:.2f} |" for r in rows]
    lines += ["", "`scaled(G)` against one elementwise pass over G (`2 * G`):", "",
              "| G shape | scaled (us) | one pass (us) |", "|---|---|---|"]
    lines += [f"| {tuple(r['shape'])} | {r['scaled']:.1f} | {r['one pass']:.1f} |"
              for r in scaled_table]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--min-seconds", type=float, default=0.1)
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
