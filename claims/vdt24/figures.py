r"""vdt24's figure set-up: the methods of Figures 2, 5 and 3 and their batched runs.

All methods of one figure, and the negative controls' own settings (a smaller NGD step,
momentum with NGD's effective step, other Polyak caps), run as ONE batched trajectory
(`theorycheck.comparison.compare_methods`: trial group m follows method m), recorded at
log-spaced checkpoints and cached as a shared run; a control reads its own run of the batch,
never the claim's under another label.  The step sizes, caps and momentum are the
reconstruction's (spec section 3): the copy lost every numeric setting of these figures.

Seeds: the first SEEDS = 3 of the 5 trials of the shared vdt24 data sets (`problems`), with
their small initialization W_0 (fixed decoder); for Fig. 3 the first 3 DM instances from
u_0 = 0, W_0 = 0 (none selected by its outcome).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import logsumexp

from theorycheck import shared_run
from theorycheck.comparison import compare_methods, log_checkpoints
from theorycheck.models import TokenSelection
from theorycheck.optim import Method, frobenius_norm, standard_metrics

from .problems import dm, problem

SEEDS = 3
MOMENTUM = 0.9
DM_RHO = 2.0
DEV_RESOLUTION = 1e-15
"""1 - al(A, B) below this is float64 rounding noise: the alignment deficit series is floored here."""


def _repeat(tensor, groups):
    return tensor.repeat(groups, *([1] * (tensor.dim() - 1)))


def _log_deficit(alignment):
    """log(1 - al), floored at the float64 resolution of 1 - al."""
    return np.log(np.maximum(1.0 - alignment, DEV_RESOLUTION))


def _softmax_series(recorded):
    """log(1 - mean_i s_opt) (from the exact per-sample log(1 - s_{i,opt})) and mean_i s_opt."""
    n = recorded["s_opt"].shape[-1]
    return {"1 - s_opt": logsumexp(recorded["log_one_minus_s_opt"], axis=-1) - math.log(n),
            "mean s_opt": recorded["s_opt"].mean(-1)}


def _pick(metrics, names):
    return {name: metrics[name] for name in names}


def method_named(methods, label):
    return next(m for m in methods if m.label == label)


def plotted_labels(methods, control_only):
    return [m.label for m in methods if m.label not in control_only]


SLOW_NGD = "NGD (eta 1e-3)"
FIXED_DECODER_CONTROL_ONLY = ("Polyak (cap 1)", SLOW_NGD, "NGD-mom (eta 0.01)")
FIXED_DECODER_METHODS = (
    Method("GD", "gd", eta=1.0),
    Method("NGD", "ngd", eta=0.1),
    Method("NGD-mom", "ngd", eta=0.1, momentum=MOMENTUM),
    Method("Polyak", "polyak"),
    Method("Polyak (cap 1e3)", "polyak", eta_max=1e3),
    # the controls' own settings, run in the same batch:
    Method("Polyak (cap 1)", "polyak", eta_max=1.0),          # GD with eta = 1 from step 0
    Method(SLOW_NGD, "ngd", eta=1e-3),                        # NGD with a 100x smaller step
    Method("NGD-mom (eta 0.01)", "ngd", eta=0.01, momentum=MOMENTUM),  # NGD's effective step 0.1
)


@shared_run
def fixed_decoder_runs(run, *, family: str, n: int, T: int, d: int, steps: int, t_early: int):
    """Figs. 2 and 5: every method of `FIXED_DECODER_METHODS` on ``family`` (first SEEDS trials
    of the shared data and initialization), one batch, log-spaced checkpoints."""
    prob = run.use(problem, family=family, sizes=dict(n=n, T=T, d=d))
    model, params0 = prob.model.restrict(slice(0, SEEDS)), {"W": prob.W0[:SEEDS]}
    groups = len(FIXED_DECODER_METHODS)
    metrics = _pick(standard_metrics(model.tiled(groups), refs={"W": _repeat(prob.W_mm[:SEEDS], groups)},
                                     opt=_repeat(prob.opt[:SEEDS], groups)),
                    ("W_norm", "W_alignment", "log_excess_loss", "s_opt", "log_one_minus_s_opt"))

    def series(rec):
        return {"alignment deficit": _log_deficit(rec["W_alignment"]),
                "excess loss": rec["log_excess_loss"], "||W||": rec["W_norm"], **_softmax_series(rec)}

    report = prob.data.assumptions
    reference = {"||W_mm||": prob.W_mm_norm[:SEEDS], "rho_perp": report.details["rho_perp"][:SEEDS],
                 "assumption 2": report.per_trial["assumption2"][:SEEDS]}
    return compare_methods(model, params0, FIXED_DECODER_METHODS, steps, metrics,
                           checkpoints=log_checkpoints(steps, [t_early]), series=series,
                           reference=reference)


EQ13_REFERENCE = "Eq. (13), alpha = 2/3"
PAPER_POLYAK = "Polyak (cap 100)"
UNBOUND_CAP = "Polyak (cap 1e300)"
JOINT_CONTROL_ONLY = (SLOW_NGD, "joint NGD (eta 0.01)", "Polyak (cap 10)", UNBOUND_CAP)
JOINT_METHODS = (
    Method("GD", "gd", eta=1.0),
    Method("NGD", "block_ngd", eta=0.1),            # Eq. (13) without the time factor
    Method("joint NGD", "ngd", eta=0.1),            # Eq. (2) on theta = (u, W)
    Method("Polyak", "polyak"),
    Method(PAPER_POLYAK, "polyak", eta_max=100.0),  # the spec's reconstruction of the paper's cap
    Method(EQ13_REFERENCE, "block_ngd", eta=1.0, alpha=2.0 / 3.0),  # Theorem 2's method
    # the controls' own settings, run in the same batch:
    Method(SLOW_NGD, "block_ngd", eta=1e-3),
    Method("joint NGD (eta 0.01)", "ngd", eta=0.01),
    Method("Polyak (cap 10)", "polyak", eta_max=10.0),
    Method(UNBOUND_CAP, "polyak", eta_max=1e300),   # a cap that never binds within the horizon
)
CAPS = {"Polyak (cap 10)": 10.0, PAPER_POLYAK: 100.0, UNBOUND_CAP: 1e300, "Polyak": math.inf}
"""The Polyak runs of Fig. 3 by cap, for the plot of the cap dependence."""


def _margin_ratio(opt, u_mm):
    r"""m_t = ||u_mm|| min_i y_i u_t^T x_{i,opt} / ||u_t|| (Theorem 4's margin ratio), (K,): the
    scores gamma_{i,opt} in the run's coordinates."""
    norm_mm = frobenius_norm(u_mm)

    def metric(it):
        margins = it.model.scores(it.coordinates).gather(-1, opt[..., None]).squeeze(-1)
        return norm_mm * margins.min(1).values / it.norm("u")
    return metric


@shared_run
def figure3_runs(run, *, steps: int, t_early: int):
    """Fig. 3: every method of `JOINT_METHODS` on DM from u_0 = 0, W_0 = 0, one batch, on the
    first SEEDS of the shared DM instances (none selected by what it does)."""
    data, tensors, u_mm, W_mm = run.use(dm, rho=DM_RHO)
    X, y, opt, u_mm, W_mm = (a[:SEEDS] for a in (tensors.X, tensors.y, tensors.opt, u_mm, W_mm))
    groups = len(JOINT_METHODS)
    model = TokenSelection(X, y)
    tiled = model.tiled(groups)
    optr = _repeat(opt, groups)
    metrics = _pick(standard_metrics(tiled, refs={"W": _repeat(W_mm, groups), "u": _repeat(u_mm, groups)},
                                     opt=optr),
                    ("W_norm", "u_norm", "log_loss", "W_alignment", "u_alignment", "s_opt",
                     "log_one_minus_s_opt"))
    metrics["margin ratio"] = _margin_ratio(optr, _repeat(u_mm, groups))

    def series(rec):
        return {"loss": rec["log_loss"], "W alignment deficit": _log_deficit(rec["W_alignment"]),
                "u alignment deficit": _log_deficit(rec["u_alignment"]), "||W||": rec["W_norm"],
                "||u||": rec["u_norm"], "margin ratio": rec["margin ratio"], **_softmax_series(rec)}

    params0 = {"u": torch.zeros_like(X[:, 0, 0, :]), "W": torch.zeros_like(W_mm)}
    reference = {"||u_mm||": frobenius_norm(u_mm).cpu().numpy(), "n": data.n, "d": data.d}
    return compare_methods(model, params0, JOINT_METHODS, steps, metrics,
                           checkpoints=log_checkpoints(steps, [t_early, steps // 10]), series=series,
                           reference=reference)
