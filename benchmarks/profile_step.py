"""Where the time of one batched optimizer step goes, against the bound of `bench.py`.

Profiles a workload of ``bench.WORKLOADS`` (default: the canonical NGD step, (n, T, d) =
(6, 4, 32), coefficient space, K = 8192) on one CPU thread with ``torch.profiler`` and prints
a markdown summary:

* the measured rate (trial-steps/s by process CPU time) and the bound K / max(F / flop_rate,
  B / bandwidth) of the same run (`bench.step_cost`, `bench.machine_peaks`);
* the step's time split into matrix products (``bmm``, ``mm``, ``matmul``, ``baddbmm``,
  ``addmm``), the other tensor kernels (elementwise, reductions, copies: each reads and writes
  its operands once more) and the rest (Python and the dispatcher between the kernels: the
  step's CPU time minus the kernels' self time);
* the operators with the most self time, with their call counts per step;
* what each part would reach alone: the rate if the matrix products ran at the matrix-product
  peak, and the bytes the unfused kernels move (every argument and result once a kernel,
  counted by a dispatch mode) against the step's minimal traffic.

Run:  python benchmarks/profile_step.py [--workload "token_selection canonical"]
      [--optimizer ngd] [--form span] [--K 8192] [--steps 40] [--out FILE.md]
Timings are measurements, never test assertions.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the workloads, the step's cost and the machine's peaks)

MATMUL_OPS = ("aten::bmm", "aten::mm", "aten::matmul", "aten::baddbmm", "aten::addmm")


class _Traffic(TorchDispatchMode):
    """Bytes the kernels of one step read and write (every tensor argument and result, once
    per kernel), apart for the matrix products and the rest: the traffic of the unfused step."""

    def __init__(self):
        super().__init__()
        self.matmul = self.other = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        leaves = torch.utils._pytree.tree_leaves((args, kwargs or {}, out))
        moved = sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))
        if f"aten::{func.overloadpacket.__name__}" in MATMUL_OPS:
            self.matmul += moved
        else:
            self.other += moved
        return out


def profile_step(workload: str, optimizer: str, form: str, K: int, steps: int):
    """(rate by CPU time, bound, per operator its share of the profiled step's wall time and its
    calls a step, the step's CPU seconds, peaks, FLOPs and bytes a step) for ``steps`` steps of
    ``optimizer`` on ``workload`` in ``form`` (timed once plainly, once under the profiler)."""
    torch.set_num_threads(1)
    make = bench.WORKLOADS[workload][0]
    model, params = make(K, "cpu")
    chosen = [(m, p) for f, m, p, _ in bench.representations(model, params) if f == form]
    if not chosen:
        raise SystemExit(f"profile_step: {workload!r} has no {form!r} form")
    model, params = chosen[0]
    step = bench.OPTIMIZERS[optimizer](model)
    p = step(0, params)
    for t in range(1, 4):        # warm-up
        p = step(t, p)
    flops, nbytes = bench.step_cost(model, params, optimizer)
    with _Traffic() as traffic:
        step(4, p)
    peaks = bench.machine_peaks("cpu")
    start = time.process_time()
    for t in range(steps):
        p = step(4 + t, p)
    cpu = (time.process_time() - start) / steps
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for t in range(steps):
            p = step(4 + steps + t, p)
        wall = (time.perf_counter() - start) / steps
    # the profiler times operators by the wall clock: shares are of the profiled loop's wall time
    ops = {event.key: (event.self_cpu_time_total / 1e6 / steps / wall, event.count / steps)
           for event in prof.key_averages() if event.self_cpu_time_total > 0}
    bound = K / max(flops / peaks[0], nbytes / peaks[1])
    return K / cpu, bound, ops, cpu, peaks, flops, nbytes, (traffic.matmul, traffic.other)


def summary(workload, optimizer, form, K, rate, bound, ops, cpu, peaks, flops, nbytes, traffic) -> str:
    """The markdown summary of one profile (see the module docstring)."""
    matmul = sum(share for name, (share, _) in ops.items() if name in MATMUL_OPS)
    other = sum(share for share, _ in ops.values()) - matmul
    rest = max(1.0 - matmul - other, 0.0)
    calls = sum(c for _, c in ops.values())
    lines = [
        f"Profile of `{workload}`, {optimizer}, {form}, K = {K}, one CPU thread "
        f"(torch {torch.__version__}):", "",
        f"* measured {rate:.3g} trial-steps/s by CPU time; bound {bound:.3g} "
        f"({100 * rate / bound:.0f}% of it): {flops:.3g} matrix-product FLOPs and {nbytes:.3g} "
        f"bytes a step at {peaks[0] / 1e9:.1f} GFLOP/s and {peaks[1] / 1e9:.1f} GB/s;",
        f"* one step {1e3 * cpu:.2f} ms of CPU, under the profiler: matrix products "
        f"{100 * matmul:.0f}%, the other kernels {100 * other:.0f}%, Python and dispatch "
        f"between them {100 * rest:.0f}%; {calls:.0f} operator calls a step;",
        f"* the matrix products alone at the peak: {K / (flops / peaks[0]):.3g} trial-steps/s "
        f"(measured {flops / (matmul * cpu) / 1e9 if matmul else float('nan'):.1f} GFLOP/s in "
        f"them); the step's minimal bytes at the copy bandwidth: {K / (nbytes / peaks[1]):.3g};",
        f"* the unfused step's kernels move {traffic[1]:.3g} bytes outside the matrix products "
        f"({traffic[1] / nbytes:.0f}x the minimal traffic; at the copy bandwidth "
        f"{1e3 * traffic[1] / peaks[1]:.2f} ms, measured {1e3 * other * cpu:.2f} ms).", "",
        "| operator | share of the step | ms a step (share x CPU time) | calls a step |",
        "|---|---|---|---|",
    ]
    for name, (share, c) in sorted(ops.items(), key=lambda kv: -kv[1][0])[:15]:
        lines.append(f"| `{name}` | {100 * share:.1f}% | {1e3 * share * cpu:.3f} | {c:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="token_selection canonical")
    parser.add_argument("--optimizer", default="ngd")
    parser.add_argument("--form", default="span", help="dense or span (coefficient space)")
    parser.add_argument("--K", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--out", default=None, help="also write the summary to this file")
    args = parser.parse_args(argv)
    if args.workload not in bench.WORKLOADS:
        raise SystemExit(f"profile_step: unknown workload {args.workload!r}; "
                         f"known: {', '.join(bench.WORKLOADS)}")
    measured = profile_step(args.workload, args.optimizer, args.form, args.K, args.steps)
    text = summary(args.workload, args.optimizer, args.form, args.K, *measured)
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
