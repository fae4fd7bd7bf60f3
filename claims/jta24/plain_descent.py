r"""jta24's runs of plain l_p-AttGD (the theorems' algorithm): the per-step quantities of
Lemmas 4, 22, 24 (`plain_mirror_steps`, `test_descent_lemmas.py`), the long runs of the norm
growth (`norm_growth_runs`, `test_norm_growth.py`) and
the late iterates that meet the hypotheses of Lemmas 27, 29 (`late_run`, `test_progress.py`).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581, Appendix A.4-A.5.
"""
from __future__ import annotations

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.data import token_scores
from theorycheck.data.selection import selected_tokens
from theorycheck.models import TokenSelection
from theorycheck.optim import (
    MirrorDescent,
    bregman,
    dual_exponent,
    lp_norm,
    once_per_iterate,
    potential,
    run_trajectory,
)
from theorycheck.optim.directions import norms_along
from theorycheck.solvers import solve_lp_wsvm
from theorycheck.solvers.support import locally_optimal

from .setup import INSTANCES, SIZES, instances, lowest_token_svm

PLAIN_P = (1.25, 1.5, 1.75, 2.0, 3.0, 4.0)
PLAIN_ETA = (0.1, 1.0, 10.0, 100.0)


@shared_run(sizes={"quick": dict(SIZES["quick"], steps=200), "full": dict(SIZES["full"], steps=1000)})
def plain_mirror_steps(run, *, etas=PLAIN_ETA, mirror_p=None, n_instances=None):
    r"""Plain l_p-AttGD (the theorems' algorithm) for every p of PLAIN_P and eta of ``etas`` on
    every instance from W(0) std 1, side by side (``mirror_p``: the steps take that mirror map in
    every arm instead, e.g. 2.0 for plain GD, while the quantities below stay those of the arm's
    p); per step k the quantities of Lemmas 4, 22, 24:
    a = ||W_k||_p, b = ||W_{k+1}||_p, ||G||_q (G = grad L(W_k)), <-G, W_k>, <G, W_k - W_{k+1}>,
    psi(W_k), psi(W_{k+1}), D_psi(W_k, W_{k+1}), L(W_k), L(W_{k+1}).  Trial
    j = ((ip * len(etas)) + ie) * K + k; ``n_instances`` (None: the tier's) the number of instances."""
    s = dict(run.sizes, instances=n_instances or run.sizes["instances"])
    data, W0 = instances(run.rng(INSTANCES), s)
    K, E = data.K, len(etas)
    t = data.to_torch(run.device, run.dtype)
    model = TokenSelection(t.X, t.y, t.u).tiled(len(PLAIN_P) * E)
    p = [pv for pv in PLAIN_P for _ in etas for _ in range(K)]
    eta = [e for _ in PLAIN_P for e in etas for _ in range(K)]
    pt = run.tensor(p)
    step = MirrorDescent(model, p if mirror_p is None else [mirror_p] * len(p), eta)

    grad = once_per_iterate(lambda it: model.gradient(it.params)["W"])

    metrics = {
        "a": lambda it: lp_norm(it.W, pt),
        "G_q": lambda it: lp_norm(grad(it), dual_exponent(pt)),
        "neg_G_W": lambda it: -(grad(it) * it.W).flatten(1).sum(1),
        "G_step": lambda it: (grad(it) * (it.W - it.next["W"])).flatten(1).sum(1),
        "psi": lambda it: potential(it.W, pt),
        "D_step": lambda it: bregman(it.W, it.next["W"], pt),
        "L": lambda it: model.loss(it.params),
    }
    W0_t = run.tensor(np.tile(W0, (len(PLAIN_P) * E, 1, 1)))
    traj = run_trajectory(step, {"W": W0_t}, s["steps"], metrics)
    m = traj.metrics
    per_step = {name: m[name][:-1] for name in ("a", "G_q", "neg_G_W", "G_step", "psi", "D_step", "L")}
    return dict(per_step, b=m["a"][1:], psi_next=m["psi"][1:], L_next=m["L"][1:], p=np.array(p),
                eta=np.array(eta), instance=np.arange(len(p)) % K)


GROWTH_P = (1.75, 2.0, 3.0)


LATE_WINDOW = 200
"""Plain-MD steps at the end of `norm_growth_runs` at which every iterate is kept (Lemmas 27, 29)."""


GROWTH_ETA = 10.0
"""The step size of plain (and normalized) l_p-AttGD in `norm_growth_runs`, both tiers."""


SPAN_CHECKS = 200
"""Between K/10 and the late window `norm_growth_runs` keeps every (K/SPAN_CHECKS)-th iterate: where
Lemma 29's hypotheses are checked over its summation span (Lemma 27 from k0 = K/10 on)."""


@shared_run(sizes={"quick": dict(SIZES["quick"], instances=3, steps=2000),
                   "full": dict(SIZES["full"], steps=20000)})
def norm_growth_runs(run, *, n_instances=None, normalized=False):
    r"""Plain (or ``normalized``) l_p-AttGD with eta for p in GROWTH_P on the first ``n_instances``
    instances (None: the tier's) from W(0) std 1, side by side (trial j = ip * K + k).  Keeps W(k) at k = K/10 and at every step of
    the last LATE_WINDOW (``t``: those steps; ``r``: ||W(k)||_p there), every (K/SPAN_CHECKS)-th
    iterate strictly between them (``span_W``), the selected tokens alpha
    at K, the certified l_p-AttSVM W_mm_alpha and ||W_mm_alpha||_p, whether alpha is locally
    optimal, and per run its instance's least score range max_t gamma_{i,t} - min_t gamma_{i,t}
    over the samples (``score_spread``; ``distinct_scores``: it is > 0)."""
    s = dict(run.sizes, instances=n_instances or run.sizes["instances"])
    data, W0 = instances(run.rng(INSTANCES), s)
    K, P = data.K, len(GROWTH_P)
    t = data.to_torch(run.device, run.dtype)
    model = TokenSelection(t.X, t.y, t.u).tiled(P)
    p = [pv for pv in GROWTH_P for _ in range(K)]
    step = MirrorDescent(model, p, GROWTH_ETA, normalized=normalized)
    pt = run.tensor(p)
    tenth, late = s["steps"] // 10, s["steps"] - LATE_WINDOW
    span = list(range(tenth, late, s["steps"] // SPAN_CHECKS))
    marks = span + list(range(late, s["steps"] + 1))
    traj = run_trajectory(step, {"W": run.tensor(np.tile(W0, (P, 1, 1)))}, s["steps"],
                          {"r": lambda it: lp_norm(it.W, pt), "W": lambda it: it.W}, checkpoints=marks)
    kept = [0] + list(range(len(span), len(marks)))                 # K/10, then the late window
    X = np.tile(data.X, (P, 1, 1, 1))
    alpha = selected_tokens(X, traj.W.cpu().numpy())
    scores = token_scores(data.X, data.y, data.u)
    W_mm = np.stack([solve_lp_wsvm(data.X[j % K], alpha[j], p[j], name="synthetic", trial=j % K).W
                     for j in range(P * K)])
    local = np.array([locally_optimal(data.X[j % K], scores[j % K], alpha[j], W_mm[j]) for j in range(P * K)])
    spread = np.ptp(scores, axis=-1).min(-1)                          # least score range per instance
    distinct = spread > 0
    return dict(t=traj.t[kept], r=traj["r"][kept], W=traj["W"][kept], span_W=traj["W"][1:len(span)], p=np.array(p),
                eta=GROWTH_ETA, alpha=alpha, W_mm=W_mm,
                svm_norm=norms_along(W_mm[None], np.array(p))[0], locally_optimal=local,
                instance=np.arange(P * K) % K, distinct_scores=np.tile(distinct, P),
                score_spread=np.tile(spread, P))


MIN_RATE = 0.1
r"""The precondition on the runs meeting the hypotheses (`late_run`): P[a run meets them] >= MIN_RATE
by the exact one-sided binomial test at level MIN_ALPHA.  Over the quick tier's 96 runs it rejects
exactly the counts below 5 runs (P[Bin(96, 0.1) <= 4] = 0.031 < MIN_ALPHA <= P[Bin(96, 0.1) <= 5] = 0.073),
the decision ``at_least(count, 5)`` was (5 runs: the value used before the 20-seed sweep); as a binomial its calibration row is bounded through
the runs (pooled trials, or the beta-binomial where the runs of one instance move together) instead
of by the count's normal tail over seeds.  Over the full tier's 60 runs it rejects at <= 1."""
MIN_ALPHA = 0.05
"""Level of the `MIN_RATE` test (the round level at which 96 runs reject below 5)."""
PI = 0.1
"""The pi of Lemmas 21, 27 (the spec's test value, fixed before the data)."""


def plain_settled(runs, data, iterates) -> np.ndarray:
    """(J,) bool per run of `norm_growth_runs`: alpha (the last iterate's tokens) locally optimal
    and selected at every one of ``iterates`` (C, J, d, d) (the runs of ``data``'s instances)."""
    inst = runs["instance"]
    stable = np.all([np.all(selected_tokens(data.X[inst], Wc) == runs["alpha"], axis=-1) for Wc in iterates], axis=0)
    return runs["locally_optimal"] & stable


def rate_profile(p, r):
    r"""h_p(r) of the rate theorem: r^(1-p) (p < 2), (log r)^2/r (p = 2), log r/r (p > 2); p (J,), r (..., J)."""
    p = np.asarray(p, dtype=float)
    return np.where(p < 2, r ** (1 - p), np.where(p == 2, np.log(r) ** 2 / r, np.log(r) / r))


def late_run(tc, bad_reference: bool, summed: bool = False):
    r"""The runs of `norm_growth_runs` that meet the lemmas' measurable hypotheses, the others
    counted.  Lemma 27 (per late step): alpha locally optimal and selected at every late iterate
    (`plain_settled`); Lemma 21's alignment (`_aligned`, the proof's step in W(k) in
    C_{p,mu,R_pi}) recorded per run.  With ``summed`` (Lemma 29, which sums Lemma 27 from
    k0 = K/10): alpha selected and Lemma 21's alignment at every kept iterate from K/10 on (every
    (K/SPAN_CHECKS)-th step, then every late step), the sum's whole span.  That such runs are
    not rare is a precondition (P[a run meets them] >= MIN_RATE, the binomial of `MIN_RATE`).  Returns late iterates W (C, J, d, d) at steps t (C,), norms r, p,
    eta, alpha, W(K/10), and the reference of every run: its own W_mm_alpha, or with
    ``bad_reference`` the l_p-AttSVM of alpha_bad = argmin_t gamma_{i,t} (the hypotheses are those
    of the run, always measured against its own W_mm_alpha).  None when no run meets them."""
    runs = tc.use(norm_growth_runs, n_instances=tc.sizes["instances"])
    data, _ = instances(tc.paper_rng(INSTANCES), tc.sizes)
    inst = runs["instance"]
    checked = np.concatenate([runs["W"][:1], runs["span_W"], runs["W"][1:]]) if summed else runs["W"][1:]
    span = "from k0 = K/10" if summed else "over the late steps"
    local = np.flatnonzero(plain_settled(runs, data, checked))
    aligned = (_aligned(instances_model(data, inst[local]), checked[:, local], runs["W_mm"][local], runs["p"][local])
               if len(local) else np.zeros(0, dtype=bool))
    use = local[aligned] if summed else local
    tc.record(f"runs with alpha not locally optimal or not selected {span}", len(inst) - len(local))
    tc.record(f"runs with alpha locally optimal and selected but not aligned (Lemma 21) {span}", int((~aligned).sum()))
    met = np.zeros(len(inst), dtype=bool)
    met[use] = True
    tc.precondition.binomial(f"runs meeting the hypotheses {span}", met, p=MIN_RATE, alpha=MIN_ALPHA)
    if not len(use):
        return None
    p, inst = runs["p"][use], inst[use]
    refs = runs["W_mm"][use]
    if bad_reference:
        refs = np.stack([lowest_token_svm(data, k, pv)[1] for k, pv in zip(inst, p)])
    return dict(t=runs["t"][1:], W=runs["W"][1:, use], r=runs["r"][1:, use], p=p, eta=float(runs["eta"]),
                alpha=runs["alpha"][use], refs=refs, inst=inst, data=data, W_tenth=runs["W"][0, use],
                r_tenth=runs["r"][0, use], aligned=aligned[np.isin(local, use)])


def _aligned(model, W, W_mm, p) -> np.ndarray:
    r"""(J,) bool: Lemma 21's alignment <-G, W/||W||_p> <= (1 + PI) <-G, W_mm/||W_mm||_p> with
    G = grad L(W_c) at every iterate W_c of W (C, J, d, d) (the positive scale of G cancels)."""
    pt = torch.as_tensor(p)
    unit_mm = torch.as_tensor(W_mm) / lp_norm(torch.as_tensor(W_mm), pt)[:, None, None]
    ok = np.ones(W.shape[1], dtype=bool)
    for Wc in W:
        Wt = torch.as_tensor(Wc)
        g = model.scaled_gradient({"W": Wt})["W"].direction
        along_W = -(g * Wt).flatten(1).sum(1) / lp_norm(Wt, pt)
        ok &= ((1 + PI) * -(g * unit_mm).flatten(1).sum(1) - along_W >= 0).numpy()
    return ok


def excess_losses(model, W):
    """L(W_c) - L_* per iterate and run, (C, J), from the exact log excess loss."""
    return np.stack([model.log_excess_loss({"W": torch.as_tensor(Wc)}).exp().numpy() for Wc in W])


def instances_model(data, inst):
    """The model of instances ``inst`` (one trial each)."""
    t = data.to_torch("cpu", torch.float64)
    return TokenSelection(t.X[inst], t.y[inst], t.u[inst])
