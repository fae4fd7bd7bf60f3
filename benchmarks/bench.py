"""Trial-steps per second of every model and optimizer in the library, against the naive loop and
the hardware bound.

Rows: every workload of ``WORKLOADS`` -- every model registered in `theorycheck.models.MODELS`
(at its conformance size), plus the papers' scales of the token-selection model -- in every
representation it has (dense, and coefficient space for models with ``in_span``), times every
optimizer of `theorycheck.optim.OPTIMIZERS` that accepts it, for K in {1, 64, 1024, 8192}
batched trials (a K whose tensors would exceed ``--memory-gb`` is skipped and listed with the
reason), on the CPU with one torch thread (``--threads``) and on CUDA when torch sees a GPU.
A model registered later -- in the library or in a paper package's ``models.py`` -- appears
here with no edit; a new paper scale is one entry of
``WORKLOADS``.  Each row has

``trial_steps_per_s``
    K x optimizer steps per second of the batched step (wall time), median of ``--repeats``
    timings; ``cpu_trial_steps_per_s`` the same by process CPU time (on a machine shared with
    other jobs the wall time includes theirs; with one thread the CPU time does not);
``naive_trial_steps_per_s``
    the naive loop: one trial at a time, the model's plainly written ``reference_loss``
    differentiated by torch autograd (``loss.backward()``), the optimizer's update written in
    plain tensor operations (``torch.optim.Adam`` for Adam), same dtype, device and threads --
    the way the papers' own code runs.  It does not depend on K (one trial at a time);
    measured once per workload and optimizer on trial 0 (``cpu_naive_trial_steps_per_s`` by
    CPU time);
``bound_trial_steps_per_s``
    K / max(F / flop_rate, B / bandwidth): F the matrix-product FLOPs of one batched step of
    the cheapest representation (counted by ``torch.utils.flop_counter``; elementwise work is
    not counted, so F and the bound are optimistic), B its minimal memory traffic (every tensor
    of the model and the parameters that the step reads, read once, and the parameters
    written once), flop_rate the measured rate of a large float64 matrix product and
    bandwidth that of a large copy, on the same device and threads (by CPU time on the CPU).

Run:  python benchmarks/bench.py [--out benchmarks/results/<machine>.json] [--update-doc]
With ``--only PATTERN`` the rows of the other workloads are kept from the existing results file.
Timings are measurements, never test assertions.  ``--update-doc`` rewrites the table of this
machine in BENCHMARKS.md (between its markers); ``--doc-from RESULTS.json`` only does that.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the claims package: the papers' data sets
from claims.vdt24.setup import example1, gaussian_dm  # noqa: E402
from theorycheck.discovery import import_paper_modules  # noqa: E402
from theorycheck.errors import DeclarationError  # noqa: E402
from theorycheck.models import MODELS, TokenSelection  # noqa: E402
from theorycheck.optim import OPTIMIZERS, Adam, FirstOrder, MirrorDescent  # noqa: E402
from theorycheck.optim.mirror import dual_exponent, lp_norm  # noqa: E402

TRIALS = (1, 64, 1024, 8192)
import_paper_modules(ROOT / "claims")  # the models and optimizers the paper packages register


# ---------------------------------------------------------------- workloads


def _fixed_decoder(K, device, **sizes):
    data = example1(np.random.default_rng(0), K, **sizes).to_torch(device)
    d = data.X.shape[-1]
    g = torch.Generator(device=device).manual_seed(0)
    W0 = 0.01 / math.sqrt(d) * torch.randn(K, d, d, generator=g, dtype=torch.float64, device=device)
    return TokenSelection(data.X, data.y, data.u), {"W": W0}


def _joint(K, device, n, d):
    data = gaussian_dm(np.random.default_rng(0), K, n=n, d=d).to_torch(device)
    zeros = torch.zeros(K, d, dtype=torch.float64, device=device)
    return TokenSelection(data.X, data.y), {"u": zeros, "W": zeros[:, :, None] * zeros[:, None, :]}


def _registered(name):
    def make(K, device):
        inst = MODELS[name](K, 0)
        if device != "cpu":
            raise DeclarationError("registered conformance instances live on the CPU")
        return inst.model, inst.params
    return make


#: name -> (make(K, device) -> (model, dense params), sizes label, optimizers (None: all))
WORKLOADS = {
    "token_selection canonical": (lambda K, dev: _fixed_decoder(K, dev, n=6, T=4, d=32),
                                  "n=6 T=4 d=32 (Example 1)", ("gd", "ngd", "polyak")),
    "token_selection example1_full": (lambda K, dev: _fixed_decoder(K, dev, n=64, T=8, d=768),
                                      "n=64 T=8 d=768 (Example 1 full)", ("gd", "ngd", "polyak")),
    "token_selection joint": (lambda K, dev: _joint(K, dev, n=6, d=32),
                              "n=6 T=2 d=32 (data model)", ("gd", "ngd", "block_ngd_time_factor")),
    **{f"{name} (registered)": (_registered(name), "conformance size", None) for name in sorted(MODELS)},
}


def representations(model, params):
    """[(form, model, params, chosen automatically)]: dense, and coefficient space where the
    model has it."""
    forms = [("dense", model, params)]
    if hasattr(model, "in_span"):
        forms.append(("span", *model.in_span(params)))
    if hasattr(model, "cheapest"):
        auto = "span" if model.cheapest(params)[0] is not model else "dense"
    else:
        auto = "dense"
    return [(form, m, p, form == auto) for form, m, p in forms]


# ---------------------------------------------------------------- measurements


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


class _Clock:
    """Wall and process CPU time since construction.  On a shared machine the wall time of a
    single-threaded step includes the time other jobs held the core; the CPU time does not."""

    def __init__(self, device):
        self.device = device
        _sync(device)
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def elapsed(self):
        _sync(self.device)
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def steps_per_second(step, params, device, repeats, min_seconds):
    """(wall, CPU) steps per second, each the median over ``repeats`` timings of at least
    ``min_seconds`` of consecutive steps (after one warm-up step)."""
    p = step(0, params)
    rates, t = [], 1
    for _ in range(repeats):
        clock, count = _Clock(device), 0
        while count < 2 or time.perf_counter() - clock.wall < min_seconds:
            p = step(t, p)
            t, count = t + 1, count + 1
        wall, cpu = clock.elapsed()
        rates.append((count / wall, count / cpu))
    return tuple(statistics.median(r[i] for r in rates) for i in (0, 1))


def _naive_update(step):
    """update(t, params, grads, loss_fn) -> params: the optimizer's rule in plain tensor
    operations for one trial, or None for an optimizer it does not know."""
    if isinstance(step, FirstOrder):
        rule, eta = step.rules[0], math.exp(float(step.log_eta))
        mu, velocity = float(step.momentum), {}

        def update(t, params, grads, model):
            norm = torch.sqrt(sum((g * g).sum() for g in grads.values()))
            if rule == "gd":
                coef = {b: eta for b in grads}
            elif rule == "ngd":
                coef = {b: eta / norm for b in grads}
            elif rule == "polyak":
                gap = model.log_excess_loss(params).exp()
                coef = {b: gap / norm ** 2 for b in grads}
            else:
                coef = {b: eta * (t + 1) ** -float(step.alpha) / g.norm() for b, g in grads.items()}
            moves = {b: coef[b] * g for b, g in grads.items()}
            if mu:
                moves = {b: mu * velocity[b] + m if b in velocity else m for b, m in moves.items()}
                velocity.update(moves)
            return {b: params[b] - moves[b] for b in params}
        return update
    if isinstance(step, MirrorDescent):
        p, eta = float(step.p), float(step.eta)

        def update(t, params, grads, model):
            out = {}
            for b, g in grads.items():
                move = eta * g / lp_norm(g, dual_exponent(p)) if step.normalized else eta * g
                theta = torch.sign(params[b]) * params[b].abs() ** (p - 1) - move
                out[b] = torch.sign(theta) * theta.abs() ** (1 / (p - 1))
            return out
        return update
    if isinstance(step, Adam):
        state = {}

        def update(t, params, grads, model):
            if "opt" not in state:
                state["leaves"] = {b: v.clone() for b, v in params.items()}
                state["opt"] = torch.optim.Adam(list(state["leaves"].values()), lr=step.lr,
                                                betas=step.betas, eps=step.eps)
            for b, leaf in state["leaves"].items():
                leaf.grad = grads[b]
            state["opt"].step()
            return state["leaves"]
        return update
    return None


def naive_trial_steps_per_second(model, params, opt_name, device, min_seconds):
    """(wall, CPU) rates of the naive loop of the module docstring on trial 0 (one trial at a
    time, so the rate is per trial-step whatever K is); (None, None) where the optimizer has no
    naive form."""
    one = model.restrict(slice(0, 1))
    update = _naive_update(OPTIMIZERS[opt_name](one))
    if update is None:
        return None, None
    p = {b: v[:1].clone() for b, v in params.items()}
    clock, count = _Clock(device), 0
    while count < 2 or time.perf_counter() - clock.wall < min_seconds:
        leaves = {b: v.detach().requires_grad_(True) for b, v in p.items()}
        one.reference_loss(leaves).sum().backward()
        with torch.no_grad():
            p = update(count, {b: v.detach() for b, v in leaves.items()},
                       {b: v.grad for b, v in leaves.items()}, one)
        count += 1
    wall, cpu = clock.elapsed()
    return count / wall, count / cpu


def _storages(obj, found):
    """{storage key: bytes} of the tensors reachable from ``obj`` through attributes, tuples,
    lists and dicts."""
    if isinstance(obj, torch.Tensor):
        found[_key(obj)] = obj.untyped_storage().nbytes()
    elif isinstance(obj, dict):
        for v in obj.values():
            _storages(v, found)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            _storages(v, found)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for v in vars(obj).values():
            _storages(v, found)
    return found


def _key(tensor):
    return tensor.untyped_storage().data_ptr()


class _Reads(TorchDispatchMode):
    """The tensors of ``existing`` (storage key -> bytes) that the operations run under it read."""

    def __init__(self, existing):
        super().__init__()
        self.existing, self.read = existing, set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        for arg in torch.utils._pytree.tree_leaves((args, kwargs or {})):
            if isinstance(arg, torch.Tensor) and _key(arg) in self.existing:
                self.read.add(_key(arg))
        return func(*args, **(kwargs or {}))


def step_cost(model, params, opt_name):
    """(FLOPs, bytes) of one batched step: matrix-product FLOPs counted by torch, and the
    minimal traffic: every tensor of the model or the parameters that the step reads, read
    once, and the parameters written once."""
    step = OPTIMIZERS[opt_name](model)
    existing = _storages([model, dict(params)], {})
    with FlopCounterMode(display=False) as counter, _Reads(existing) as reads:
        step(0, params)
    written = sum(_storages(dict(params), {}).values())
    return counter.get_total_flops(), sum(existing[k] for k in reads.read) + written


def machine_peaks(device, size=1024, copy_mb=256):
    """(FLOP/s of a size x size float64 matrix product, bytes/s of a copy_mb MB copy), best of 3,
    by CPU time on the CPU (wall time on CUDA)."""
    a = torch.randn(size, size, dtype=torch.float64, device=device)
    src = torch.empty(copy_mb * 2 ** 20 // 8, dtype=torch.float64, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    a @ a
    dst.copy_(src)
    flops, copies = [], []
    for _ in range(3):
        clock = _Clock(device)
        a @ a
        flops.append(2 * size ** 3 / _seconds(clock))
        clock = _Clock(device)
        dst.copy_(src)
        copies.append(2 * src.numel() * 8 / _seconds(clock))
    return max(flops), max(copies)


def _seconds(clock):
    wall, cpu = clock.elapsed()
    return wall if clock.device == "cuda" else cpu


def bench_wsvm() -> list[dict]:
    """Seconds per W-SVM solve (Gram dual / primal, cvxpy + Clarabel) at Example 1's sizes."""
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
    return rows


def bench_jax(device, args) -> list[dict]:
    """What a user would write instead: the canonical NGD step in plain JAX -- the loss
    L(W) = mean_i exp(-y_i u^T X_i^T softmax(X_i W x_{i,0})) written directly, its gradient by
    ``jax.grad``, the K trials by ``jax.vmap``, the step compiled by ``jax.jit`` (float64) --
    on the same data; rows ``workload = "token_selection canonical (plain JAX)"``, timed like the
    library's rows (wall, and process CPU time: every thread of the process, XLA's included; pin
    XLA to one thread with ``XLA_FLAGS``, see BENCHMARKS.md).  Empty when jax is not installed
    or has no backend for ``device``."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return []
    jax.config.update("jax_enable_x64", True)
    backend = "gpu" if device == "cuda" else "cpu"
    try:
        target = jax.devices(backend)[0]
    except RuntimeError:
        return []

    def loss(W, X, y, u):
        scores = jnp.einsum("ntd,de,ne->nt", X, W, X[:, 0])
        attended = jnp.einsum("nt,ntd->nd", jax.nn.softmax(scores, axis=-1), X)
        return jnp.mean(jnp.exp(-y * (attended @ u)))

    def ngd(W, X, y, u, eta=0.1):
        g = jax.grad(loss)(W, X, y, u)
        return W - eta * g / jnp.linalg.norm(g)

    step = jax.jit(jax.vmap(ngd, in_axes=(0, 0, 0, 0)))
    rows = []
    for K in TRIALS:
        model, params = _fixed_decoder(K, "cpu", n=6, T=4, d=32)
        put = lambda a: jax.device_put(jnp.asarray(a.numpy()), target)  # noqa: E731
        X, y, u, W = put(model.X), put(model.y), put(model.u), put(params["W"])
        W = step(W, X, y, u).block_until_ready()                       # compile once
        rates = []
        for _ in range(args.repeats):
            clock, count = _Clock("cpu"), 0
            while count < 2 or time.perf_counter() - clock.wall < args.min_seconds:
                W = step(W, X, y, u)
                count += 1
            W.block_until_ready()
            wall, cpu = clock.elapsed()
            rates.append((count / wall, count / cpu))
        wall, cpu = (statistics.median(r[i] for r in rates) for i in (0, 1))
        row = dict(device=device, workload="token_selection canonical (plain JAX)", sizes="n=6 T=4 d=32",
                   K=K, form="dense", auto=False, optimizer="ngd", trial_steps_per_s=K * wall,
                   cpu_trial_steps_per_s=K * cpu, naive_trial_steps_per_s=None,
                   cpu_naive_trial_steps_per_s=None, bound_trial_steps_per_s=None)
        print(json.dumps({k: v for k, v in row.items() if k != "sizes"}), flush=True)
        rows.append(row)
    return rows


# ---------------------------------------------------------------- the run


def bench_device(device, args, peaks):
    rows = []
    flop_rate, bandwidth = peaks
    for workload, (make, sizes, opt_names) in WORKLOADS.items():
        if args.only and not re.search(args.only, workload):
            continue
        naive, per_trial_bytes = {}, None
        for K in TRIALS:
            base = dict(device=device, workload=workload, sizes=sizes, K=K)
            if per_trial_bytes is not None and 8 * K * per_trial_bytes > args.memory_gb * 2 ** 30:
                rows.append(dict(base, skipped=f"needs ~{8 * K * per_trial_bytes / 2 ** 30:.1f} GB "
                                                f"(> --memory-gb {args.memory_gb})"))
                continue
            try:
                model, params = make(K, device)
            except DeclarationError as error:
                rows.append(dict(base, skipped=str(error)))
                break
            forms = representations(model, params)
            per_trial_bytes = min(sum(_storages([m, dict(p)], {}).values()) for _, m, p, _ in forms) / K
            for opt_name in opt_names or sorted(OPTIMIZERS):
                costs, measured = [], []
                for form, m, p, auto in forms:
                    row = dict(base, form=form, auto=auto, optimizer=opt_name)
                    try:
                        step = OPTIMIZERS[opt_name](m)
                        step(0, p)
                    except DeclarationError as error:
                        rows.append(dict(row, skipped=str(error).split(":")[0]))
                        continue
                    costs.append(step_cost(m, p, opt_name))
                    wall, cpu = steps_per_second(step, p, device, args.repeats, args.min_seconds)
                    measured.append(dict(row, trial_steps_per_s=K * wall, cpu_trial_steps_per_s=K * cpu))
                if not measured:
                    continue
                if opt_name not in naive:
                    naive[opt_name] = naive_trial_steps_per_second(model, params, opt_name, device,
                                                                   args.min_seconds)
                flops, nbytes = min(c[0] for c in costs), min(c[1] for c in costs)
                bound = K / max(flops / flop_rate, nbytes / bandwidth)
                for row in measured:
                    row.update(naive_trial_steps_per_s=naive[opt_name][0],
                               cpu_naive_trial_steps_per_s=naive[opt_name][1], bound_trial_steps_per_s=bound,
                               step_flops=flops, step_bytes=nbytes)
                    rows.append(row)
                    print(json.dumps({k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()
                                      if k not in ("sizes", "device")}), flush=True)
            del model, params, forms
    return rows


MARK = "<!-- benchmark table: {machine} -->"


def table(results) -> str:
    """The markdown table of a results dict (one row per measured workload, form, optimizer)."""
    lines = [f"Machine `{results['machine']}` ({results['platform']}, torch {results['torch']}, "
             f"{results['threads']} thread(s)); peaks: " + ", ".join(
                 f"{d}: {p['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s matmul, "
                 f"{p['copy_bytes_per_s'] / 1e9:.1f} GB/s copy" for d, p in results["peaks"].items()),
             "",
             "Rates in trial-steps/s: wall time, and process CPU time (what the step costs without "
             "the other jobs of a shared machine); ratios from the CPU-time rates.",
             "",
             "| device | workload | form | optimizer | K | wall | CPU | naive (CPU) | bound | x naive | % of bound |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        if "skipped" in r:
            continue
        naive, cpu, bound = r["cpu_naive_trial_steps_per_s"], r["cpu_trial_steps_per_s"], r["bound_trial_steps_per_s"]
        form = r["form"] + (" (auto)" if r["auto"] else "")
        naive_cells = ("", "") if naive is None else (f"{naive:.3g}", f"{cpu / naive:.3g}")
        bound_cells = ("", "") if bound is None else (f"{bound:.3g}", f"{100 * cpu / bound:.2g}")
        lines.append(f"| {r['device']} | {r['workload']} | {form} | {r['optimizer']} | {r['K']} | "
                     f"{r['trial_steps_per_s']:.3g} | {cpu:.3g} | {naive_cells[0]} | {bound_cells[0]} | "
                     f"{naive_cells[1]} | {bound_cells[1]} |")
    skipped = sorted({f"{r['workload']} K={r['K']}: {r['skipped']}" for r in results["rows"]
                      if "skipped" in r and "form" not in r})
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped) + "."]
    return "\n".join(lines)


def update_doc(results, path=ROOT / "BENCHMARKS.md"):
    """Replace the table of this machine in BENCHMARKS.md (between its two markers)."""
    mark = MARK.format(machine=results["machine"])
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{mark}\n{table(results)}\n{mark}"
    if mark in text:
        text = re.sub(re.escape(mark) + ".*?" + re.escape(mark), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def emit(text: str, out: str | None) -> None:
    """Print a script's markdown output and, with ``--out FILE``, write it to FILE too."""
    print(text, end="")
    if out:
        Path(out).write_text(text)


def with_earlier_rows(results, earlier, only):
    """``results`` of a partial run (``--only``) completed by the rows of the other workloads
    (and, without a new one, the W-SVM timings) of an earlier results file, in `WORKLOADS`
    order, so that re-measuring some workloads keeps the rest of the machine's table."""
    order = {name: i for i, name in enumerate(WORKLOADS)}
    rows = [r for r in earlier["rows"] if not re.search(only, r["workload"])] + results["rows"]
    rows.sort(key=lambda r: (r["device"], order.get(r["workload"], len(order))))
    return dict(results, rows=rows, svm=results["svm"] or earlier.get("svm", []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="results JSON (default benchmarks/results/<machine>.json)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--min-seconds", type=float, default=0.2, help="length of one timing")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="skip a K whose tensors need more")
    parser.add_argument("--only", default=None, help="regular expression: only these workloads")
    parser.add_argument("--no-svm", action="store_true", help="skip the W-SVM solve timings")
    parser.add_argument("--update-doc", action="store_true", help="rewrite this machine's table in BENCHMARKS.md")
    parser.add_argument("--doc-from", default=None, help="only rewrite BENCHMARKS.md from this results JSON")
    parser.add_argument("--devices", default=None,
                        help="comma-separated devices to measure (default: cpu, and cuda when torch sees it)")
    args = parser.parse_args()
    if args.doc_from:
        update_doc(json.loads(Path(args.doc_from).read_text()))
        return
    torch.set_num_threads(args.threads)
    machine = platform.node() or "machine"
    devices = (args.devices.split(",") if args.devices else
               ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    unknown = [d for d in devices if d not in ("cpu", "cuda") or (d == "cuda" and not torch.cuda.is_available())]
    if unknown:
        parser.error(f"--devices: {', '.join(unknown)} not available (cpu, or cuda where torch sees a GPU)")
    peaks = {d: machine_peaks(d) for d in devices}
    results = {"machine": machine, "platform": platform.platform(), "torch": torch.__version__,
               "threads": args.threads,
               "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
               "peaks": {d: {"matmul_flops_per_s": f, "copy_bytes_per_s": b} for d, (f, b) in peaks.items()},
               "rows": [], "svm": [] if args.no_svm else bench_wsvm()}
    for device in devices:
        results["rows"] += bench_device(device, args, peaks[device])
        if not args.only or re.search(args.only, "token_selection canonical (plain JAX)"):
            results["rows"] += bench_jax(device, args)
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"{machine}.json"
    if args.only and out.exists():
        results = with_earlier_rows(results, json.loads(out.read_text()), args.only)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    if args.update_doc:
        update_doc(results)


if __name__ == "__main__":
    main()
