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
  counted by a dispatch mode) against the step's minimal traffic;
* with ``--compile``: the rate with the model's gradient compiled by ``torch.compile`` (the
  fused kernels of inductor; the step's Python bookkeeping stays eager) and the compile time.

Run:  python benchmarks/profile_step.py [--workload "token_selection canonical"]
      [--optimizer ngd] [--form span] [--K 8192] [--steps 40] [--compile] [--out FILE.md]
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


#: operators evaluating a transcendental function per output element (log_softmax: an exp and a log)
TRANSCENDENTAL = {"exp": 1, "log": 1, "log1p": 1, "expm1": 1, "_log_softmax": 2, "_softmax": 1,
                  "sigmoid": 1, "tanh": 1}


class _Traffic(TorchDispatchMode):
    """Bytes the kernels of one step read and write (every tensor argument and result, once
    per kernel), apart for the matrix products and the rest -- the traffic of the unfused step --
    and the transcendental evaluations (`TRANSCENDENTAL` per output element)."""

    def __init__(self):
        super().__init__()
        self.matmul = self.other = self.transcendental = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        leaves = torch.utils._pytree.tree_leaves((args, kwargs or {}, out))
        moved = sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))
        name = func.overloadpacket.__name__
        if f"aten::{name}" in MATMUL_OPS:
            self.matmul += moved
        else:
            self.other += moved
        if name.rstrip("_") in TRANSCENDENTAL and isinstance(out, torch.Tensor):
            self.transcendental += TRANSCENDENTAL[name.rstrip("_")] * out.numel()
        return out


def exp_rate(size: int = 2 ** 20, repeats: int = 20) -> float:
    """float64 ``torch.exp`` evaluations per CPU second on this thread (best of ``repeats``)."""
    x = torch.rand(size, dtype=torch.float64)
    out = torch.empty_like(x)
    best = 0.0
    for _ in range(repeats):
        start = time.process_time()
        torch.exp(x, out=out)
        best = max(best, size / max(time.process_time() - start, 1e-9))
    return best


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
    peaks = bench.machine_peaks("cpu") + (exp_rate(),)
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
    return K / cpu, bound, ops, cpu, peaks, flops, nbytes, (traffic.matmul, traffic.other, traffic.transcendental)


def compiled_gradient_rate(workload: str, optimizer: str, form: str, K: int, steps: int):
    """(eager rate, rate with ``model.scaled_gradient`` compiled, compile seconds) by CPU time, or
    None with the reason where torch.compile fails (no C++ compiler, an unsupported operator)."""
    torch.set_num_threads(1)
    model, params = bench.WORKLOADS[workload][0](K, "cpu")
    model, params = [(m, p) for f, m, p, _ in bench.representations(model, params) if f == form][0]
    step = bench.OPTIMIZERS[optimizer](model)
    p = step(0, params)

    def rate(p):
        start = time.process_time()
        for t in range(steps):
            p = step(10 + t, p)
        return K * steps / (time.process_time() - start), p

    eager, p = rate(p)
    eager_gradient = model.scaled_gradient
    try:
        model.scaled_gradient = torch.compile(eager_gradient, dynamic=False)
        start = time.perf_counter()
        for t in range(3):
            p = step(1 + t, p)
        seconds = time.perf_counter() - start
        compiled, _ = rate(p)
    except Exception as error:  # noqa: BLE001  (reported, not raised: a measurement)
        return None, f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    finally:
        model.scaled_gradient = eager_gradient
    return (eager, compiled, seconds), None


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
        f"{1e3 * traffic[1] / peaks[1]:.2f} ms, measured {1e3 * other * cpu:.2f} ms);",
        f"* {traffic[2]:.3g} transcendental evaluations a step (exp, log, log_softmax), at this "
        f"thread's float64 exp rate of {peaks[2]:.3g}/s {1e3 * traffic[2] / peaks[2]:.2f} ms "
        f"({100 * traffic[2] / peaks[2] / cpu:.0f}% of the step; the bound counts none of it).", "",
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
    parser.add_argument("--compile", action="store_true",
                        help="also the rate with the model's gradient compiled (torch.compile)")
    parser.add_argument("--out", default=None, help="also write the summary to this file")
    args = parser.parse_args(argv)
    if args.workload not in bench.WORKLOADS:
        raise SystemExit(f"profile_step: unknown workload {args.workload!r}; "
                         f"known: {', '.join(bench.WORKLOADS)}")
    measured = profile_step(args.workload, args.optimizer, args.form, args.K, args.steps)
    text = summary(args.workload, args.optimizer, args.form, args.K, *measured)
    if args.compile:
        rates, failure = compiled_gradient_rate(args.workload, args.optimizer, args.form, args.K, args.steps)
        text += ("\n" + (f"torch.compile of the model's gradient failed: {failure}" if rates is None else
                         f"With the model's gradient compiled (torch.compile, inductor): {rates[1]:.3g} "
                         f"trial-steps/s against {rates[0]:.3g} eager in the same process "
                         f"({rates[2]:.1f} s to compile and run the first steps).") + "\n")
    bench.emit(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
