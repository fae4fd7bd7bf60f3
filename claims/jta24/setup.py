r"""The set-up of jta24: its synthetic data, its assumptions and the runs its claims share.

Paper: A. K. Julistiono, D. A. Tarzanagh, N. Azizan, "Optimizing Attention with Mirror Descent:
Generalized Max-Margin Token Selection", arXiv 2410.14581 (2024).  Only the appendix Lemmas
12-30 survive in the copy; the setting is reconstructed (authors' code, the predecessor papers).

Model: one softmax attention layer with a fixed value/prediction head v,
f(X_i) = v^T X_i^T softmax(X_i W z_i), token scores gamma_{i,t} = y_i v^T x_{i,t}; the library's
`theorycheck.models.TokenSelection` with decoder u = v.  Two choices of this encoding, both
inside the paper's setting (and stated in every claim that depends on them):

* **self-attention**, z_i = x_{i,0} (the paper's own special case, used in its joint example;
  the library model has this query).  The synthetic experiments of the paper use a separate
  query token z_i; nothing in the theory depends on which;
* **exponential loss** l(u) = exp(-u) (the library model's), one of the paper's examples of
  Assumption A (strictly decreasing, l' bounded and Lipschitz on bounded intervals).  The
  paper's experiments use the logistic loss, so numbers of the spec's reproduction are not
  comparable one to one; every claim tests shapes and certificates instead.

Data (the authors' generator, Section "synthetic experiments"): v ~ N(0, I_d), labels y_i = +1
when a N(0,1) draw is > 0 else -1, tokens x_{i,t} ~ N(0, I_d); v and every token normalized to
unit l_2 norm; W(0) with i.i.d. N(0,1) entries from a separate stream.  Each trial (instance)
draws from its own child stream of the paper-wide stream "synthetic".

Sizes: n=6, T=8, d=10 (the paper's synthetic instance) in both tiers; quick 5 instances, full
20 (the paper averaged 100; the spec's scaled-down reproduction used 20) with longer runs.  The
spec's large GPU instance (n=32, T=16, d=32) needs ~14 s per l_p-SVM solve on the CPU, ~100
solves per run: not encoded as a tier.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.data import AssumptionReport, TokenSelectionData, opt_is_argmax, token_scores, trial_generators
from theorycheck.data.selection import selected_tokens, token_assignments
from theorycheck.errors import InfeasibleProgramError
from theorycheck.models import TokenSelection
from theorycheck.optim import (
    NGD,
    MirrorDescent,
    bregman,
    directional_bregman,
    dual_exponent,
    lp_norm,
    once_per_iterate,
    potential,
    run_trajectory,
)
from theorycheck.optim.directions import divergence_curves, lp_unit, norms_along
from theorycheck.runtime import generator
from theorycheck.solvers import solve_lp_usvm, solve_lp_wsvm, solve_wsvm
from theorycheck.solvers.margin import constraint_values
from theorycheck.solvers.regularization_path import lp_regularization_path
from theorycheck.solvers.support import SUPPORT_TOL, locally_optimal, safe_gap
from theorycheck.solvers.svm import wsvm_constraint_factors

PAPER = "jta24"
SIZES = {"quick": dict(n=6, T=8, d=10, instances=5), "full": dict(n=6, T=8, d=10, instances=20)}
P_VALUES = (1.5, 1.75, 2.0, 3.0)
"""The exponents of the directional-convergence runs (the paper's 1.75, 2, 3, and 1.5)."""
STEP = {1.5: 0.1, 1.75: 0.1, 2.0: 0.1, 3.0: 1.0}
r"""eta of normalized MD per p: the paper's 0.1, and 1.0 for p = 3 (normalized MD with (eta, K)
and (eta/10, 10K) follow the same path up to the first steps, and ||W||_3 grows only like
(eta k)^(1/2))."""
DIRECTION_STEPS = {"quick": 2000, "full": 6000}
#: instances of the authors'-setting runs (`exp.synthetic_bregman_curves_authors_setting`)
AUTHORS_INSTANCES = {"quick": 5, "full": 20}
DIRECTION_SIZES = {"quick": dict(SIZES["quick"], instances=15, steps=DIRECTION_STEPS["quick"]),
                   "full": dict(SIZES["full"], steps=DIRECTION_STEPS["full"])}
r"""Sizes of `normalized_mirror_runs`: 15 instances in the quick tier (60 runs, so that a binomial
at p = 0.8 over all runs has power >= 0.8 at the framework's alternative), the tier's 20 in the
full tier.  The claims that read only a few of its runs (Lemmas 19-21, the local restarts) use the
runs of the first ``SIZES[tier]["instances"]`` instances (the same instances: each draws from its
own child stream)."""


def synthetic(rng, K: int, n: int, T: int, d: int, name: str = "synthetic"):
    """``K`` instances of the authors' generator (module docstring) and W(0) std 1:
    ``(TokenSelectionData, W0 (K, d, d))``; ``opt`` is the argmax of the scores."""
    X = np.empty((K, n, T, d))
    y, v, W0 = np.empty((K, n)), np.empty((K, d)), np.empty((K, d, d))
    for k, g in enumerate(trial_generators(rng, K)):
        v[k] = g.standard_normal(d)
        y[k] = np.where(g.standard_normal(n) > 0, 1.0, -1.0)
        X[k] = g.standard_normal((n, T, d))
        W0[k] = g.spawn(1)[0].standard_normal((d, d))
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    scores = token_scores(X, y, v)
    opt = scores.argmax(-1)
    report = AssumptionReport.from_flags(
        per_trial={"opt_unique_argmax": opt_is_argmax(scores, opt).all(-1)}, details={})
    data = TokenSelectionData(name=name, X=X, y=y, u=v, opt=opt, designated_opt=opt.copy(),
                              params=dict(n=n, T=T, d=d), assumptions=report)
    return data, W0


@shared_run(sizes=DIRECTION_SIZES)
def normalized_mirror_runs(run, *, loss: str = "exponential", cross_attention: bool = False,
                           instances: int | None = None):
    r"""Normalized l_p-AttGD for every p of P_VALUES on every instance, side by side.

    Trial j = (index of p) * K + k.  Records W at 0, 12 log-spaced checkpoints in [steps/20,
    steps], 0.5, 0.7 steps and at 40 evenly spaced ones (for the plots); then alpha_j = the
    tokens selected by the last iterate and the certified l_q-AttSVM solution W_mm[q][j] for
    alpha_j and every q of P_VALUES (solved once per distinct (instance, alpha, q)).
    ``loss="logistic"`` and ``cross_attention=True`` give the authors' setting (their code:
    logistic loss, a query token z_i per sample, drawn like the tokens on the unit sphere from
    the stream "queries"); ``instances`` overrides the tier's count (the first ones).
    """
    s = run.sizes
    data, W0 = synthetic(run.rng("synthetic"), instances or s["instances"], s["n"], s["T"], s["d"])
    K, steps, P = data.K, s["steps"], len(P_VALUES)
    Z = None
    if cross_attention:
        Z = run.rng("queries").standard_normal((K, s["n"], s["d"]))
        Z /= np.linalg.norm(Z, axis=-1, keepdims=True)
    tensors = data.to_torch(run.device, run.dtype)
    model = TokenSelection(tensors.X, tensors.y, tensors.u, loss=loss,
                           queries=None if Z is None else run.tensor(Z)).tiled(P)
    p = [pv for pv in P_VALUES for _ in range(K)]
    step = MirrorDescent(model, p, [STEP[pv] for pv in p], normalized=True)
    marks = np.unique(np.concatenate([
        [0], np.geomspace(steps / 20, steps, 12).round(), np.linspace(0, steps, 41).round(),
        [steps // 2, round(0.7 * steps)]]).astype(int))
    W0_t = run.tensor(np.tile(W0, (P, 1, 1)))
    traj = run_trajectory(step, {"W": W0_t}, steps, {"W": lambda it: it.W}, checkpoints=marks)
    W = traj["W"]
    X = np.tile(data.X, (P, 1, 1, 1))
    Zt = None if Z is None else np.tile(Z, (P, 1, 1))
    query = (lambda k: None) if Z is None else (lambda k: Z[k])  # noqa: E731
    alpha = selected_tokens(X, W[-1], Zt)
    solutions = {}
    W_mm = np.empty((P, P * K) + W0.shape[1:])
    for j in range(P * K):
        for iq, q in enumerate(P_VALUES):
            key = (j % K, tuple(alpha[j]), q)
            if key not in solutions:
                solutions[key] = solve_lp_wsvm(data.X[j % K], alpha[j], q, queries=query(j % K),
                                               name="synthetic", trial=j % K).W
            W_mm[iq, j] = solutions[key]
    scores = data.scores()
    own = np.array([P_VALUES.index(pv) for pv in p])
    local = np.array([locally_optimal(data.X[j % K], scores[j % K], alpha[j], W_mm[own[j], j],
                                      queries=query(j % K)) for j in range(P * K)])
    tokens = np.stack([selected_tokens(X, Wc, Zt) for Wc in W])
    return dict(t=traj.t, W=W, p=np.array(p), instance=np.arange(P * K) % K, alpha=alpha,
                W_mm=W_mm, locally_optimal=local, tokens=tokens, queries=Z,
                globally_optimal=np.all(alpha == np.tile(data.opt, (P, 1)), axis=-1))


def instances(runtime, sizes):
    """The paper-wide synthetic instances of a tier, the same as those of
    `normalized_mirror_runs` (stream (base seed, "jta24", "synthetic")): ``(data, W0)``."""
    return synthetic(generator(runtime.seed, PAPER, "synthetic"), sizes["instances"], sizes["n"],
                     sizes["T"], sizes["d"])


FAR_Q = {1.5: 3.0, 1.75: 3.0, 2.0: 3.0, 3.0: 1.5}
"""The far wrong exponent of each p (|q - p| >= 1.25, or the far end of P_VALUES)."""


def own_index(p: np.ndarray) -> np.ndarray:
    """Index into P_VALUES of every run's p."""
    return np.array([P_VALUES.index(float(x)) for x in p])


PLAIN_P = (1.25, 1.5, 1.75, 2.0, 3.0, 4.0)
PLAIN_ETA = (0.1, 1.0, 10.0, 100.0)


@shared_run(sizes={"quick": dict(SIZES["quick"], steps=200), "full": dict(SIZES["full"], steps=1000)})
def plain_mirror_steps(run, *, etas=PLAIN_ETA):
    r"""Plain l_p-AttGD (the theorems' algorithm) for every p of PLAIN_P and eta of ``etas`` on
    every instance from W(0) std 1, side by side; per step k the quantities of Lemmas 4, 22, 24:
    a = ||W_k||_p, b = ||W_{k+1}||_p, ||G||_q (G = grad L(W_k)), <-G, W_k>, psi(W_k), psi(W_{k+1}),
    D_psi(W_k, W_{k+1}), L(W_k), L(W_{k+1}).  Trial j = ((ip * len(etas)) + ie) * K + k."""
    s = run.sizes
    data, W0 = instances(run.runtime, s)
    K, E = data.K, len(etas)
    t = data.to_torch(run.device, run.dtype)
    model = TokenSelection(t.X, t.y, t.u).tiled(len(PLAIN_P) * E)
    p = [pv for pv in PLAIN_P for _ in etas for _ in range(K)]
    eta = [e for _ in PLAIN_P for e in etas for _ in range(K)]
    pt = run.tensor(p)
    step = MirrorDescent(model, p, eta)

    grad = once_per_iterate(lambda it: model.gradient(it.params)["W"])

    metrics = {
        "a": lambda it: lp_norm(it.W, pt),
        "G_q": lambda it: lp_norm(grad(it), dual_exponent(pt)),
        "neg_G_W": lambda it: -(grad(it) * it.W).flatten(1).sum(1),
        "psi": lambda it: potential(it.W, pt),
        "D_step": lambda it: bregman(it.W, it.next["W"], pt),
        "L": lambda it: model.loss(it.params),
    }
    W0_t = run.tensor(np.tile(W0, (len(PLAIN_P) * E, 1, 1)))
    traj = run_trajectory(step, {"W": W0_t}, s["steps"], metrics)
    m = traj.metrics
    per_step = {name: m[name][:-1] for name in ("a", "G_q", "neg_G_W", "psi", "D_step", "L")}
    return dict(per_step, b=m["a"][1:], psi_next=m["psi"][1:], L_next=m["L"][1:], p=np.array(p),
                eta=np.array(eta))


SPARSITY_Q = (1.1, 1.5, 2.0, 3.0)


@shared_run(sizes={"quick": dict(SIZES["quick"], steps=1500), "full": dict(SIZES["full"], steps=1500)})
def sparsity_runs(run, *, q_values=SPARSITY_Q, rotation=None, loss: str = "exponential"):
    r"""Normalized l_q-AttGD (eta = 0.1) from W(0) = 0 for every q of ``q_values`` on every instance,
    side by side (trial j = iq * K + k); returns the final iterates W (J, d, d) and q (J,).  With an
    orthogonal ``rotation`` Q (d, d) the runs see the tokens and the head in the rotated basis
    (x -> Q^T x, v -> Q^T v: the same scores and the same model), so the l_q geometry acts on the
    entries of W' = Q^T W Q; the returned iterates are mapped back, W = Q W' Q^T.  ``loss``:
    exponential or the authors' logistic."""
    s = run.sizes
    data, W0 = instances(run.runtime, s)
    K = data.K
    X, u = data.X, data.u
    if rotation is not None:
        X, u = X @ rotation, u @ rotation
    t = TokenSelectionData(name=data.name, X=X, y=data.y, u=u, opt=data.opt, designated_opt=data.designated_opt,
                           params=data.params, assumptions=data.assumptions).to_torch(run.device, run.dtype)
    model = TokenSelection(t.X, t.y, t.u, loss=loss).tiled(len(q_values))
    q = [qv for qv in q_values for _ in range(K)]
    step = MirrorDescent(model, q, 0.1, normalized=True)
    W = run.tensor(np.zeros((len(q),) + W0.shape[1:]))
    traj = run_trajectory(step, {"W": W}, s["steps"], {}, checkpoints=[])
    W = traj.W.cpu().numpy()
    if rotation is not None:
        W = rotation @ W @ rotation.T
    return dict(W=W, q=np.array(q))


def sparsity_index(W: np.ndarray) -> np.ndarray:
    r"""The scale-free sparsity index ||W||_1 / ||W||_2 (entrywise) of every matrix of W (J, d, d):
    between 1 (one non-zero entry) and sqrt(d^2) (all entries equal in size)."""
    flat = W.reshape(len(W), -1)
    return np.abs(flat).sum(1) / np.linalg.norm(flat, axis=1)


def small_entry_fraction(W: np.ndarray, relative=1e-2) -> np.ndarray:
    """Fraction of entries with |W_jk| < relative * max|W| per matrix of W (J, d, d)."""
    flat = np.abs(W.reshape(len(W), -1))
    return np.mean(flat < relative * flat.max(1, keepdims=True), axis=1)


LOCAL_P = (1.75, 2.0, 3.0)
SAFE_GAP = 0.05
r"""delta_safe >= SAFE_GAP filters well-posed locally optimal alpha (spec: a higher-score token
that is almost a support token makes the basin tiny)."""


def lowest_token_svm(data, k: int, p: float):
    """(alpha_bad, W_mm of alpha_bad): alpha_bad_i = argmin_t gamma_{i,t} (not locally optimal)
    and its certified l_p-AttSVM, instance k of ``data``."""
    bad = data.scores()[k].argmin(-1)
    return bad, solve_lp_wsvm(data.X[k], bad, float(p), name="synthetic", trial=int(k)).W


def lowest_score_switch(scores, alpha, opt):
    """alpha with its first non-global sample moved to its lowest-score token (not locally
    optimal: that token has a lower score than every other)."""
    bad = alpha.copy()
    i = int(np.flatnonzero(alpha != opt)[0])
    bad[i] = scores[i].argmin()
    return bad


COMPETITOR_GAP = 3.0
r"""The restart radius R = max(scale, COMPETITOR_GAP / delta_safe) ||W_mm||_p: on the ray at R a
higher-score non-support token has logit gap (1 + delta_safe) R/||W_mm||_p against a support
token's R/||W_mm||_p, so its attention relative to a support token is exp(-delta_safe R/||W_mm||)
<= exp(-3).  The theorem's radius depends on delta (its cone constants mu(delta), R_pi); a fixed
5 ||W_mm||_p left the basin on the full tier (delta_safe ~ 0.1, relative weight exp(-0.5))."""
MAX_RESTARTS = 9
"""At most 3 alpha x 3 p restarts (the spec's CPU configuration)."""


def second_best_switches(scores, opt):
    """Constructed candidate token sets of one instance: for every sample i, opt with sample i moved
    to its second-highest-score token, ``[(n,) int]`` in sample order.  Only opt_i scores higher than
    the new alpha_i, so alpha is locally optimal unless opt_i is a support token of W_mm_alpha."""
    second = np.argsort(scores, axis=-1)[:, -2]
    out = []
    for i in range(len(opt)):
        alpha = opt.copy()
        alpha[i] = second[i]
        out.append(alpha)
    return out


def restart_radius(safe, scale) -> np.ndarray:
    """The restart radius / ||W_mm_alpha||_p per restart: c = max(scale, COMPETITOR_GAP /
    delta_safe), c = scale where delta_safe <= 0."""
    safe = np.asarray(safe, dtype=float)
    positive = safe > 0
    return np.where(positive, np.maximum(scale, COMPETITOR_GAP / np.where(positive, safe, 1.0)), scale)


def restart_hypotheses(data, scores, k: int, alpha, p: float) -> dict:
    """The restart of (instance k, alpha, p) with its certified W_mm and its hypotheses: alpha
    locally optimal at p, delta_safe (`safe_gap`).  At p = 2 the l_2-AttSVM is the W-SVM, solved
    by its Gram dual (`solve_wsvm`, faster than the general l_p program; `svm.p2_is_frobenius`
    checks that the two programs agree)."""
    solve = solve_wsvm if p == 2.0 else functools.partial(solve_lp_wsvm, p=p)
    W_mm = solve(data.X[k], alpha, name="synthetic", trial=k).W
    return dict(instance=k, alpha=alpha, p=p, W_mm=W_mm,
                local=locally_optimal(data.X[k], scores[k], alpha, W_mm),
                safe=safe_gap(data.X[k], scores[k], alpha, W_mm))


def meets_restart_hypotheses(trial) -> bool:
    """alpha locally optimal at p and delta_safe >= SAFE_GAP (the local theorem's hypotheses)."""
    return bool(trial["local"] and trial["safe"] >= SAFE_GAP)


@shared_run(sizes={"quick": dict(SIZES["quick"], steps=1000, scale=5.0),
                   "full": dict(SIZES["full"], steps=3000, scale=5.0)})
def local_restarts(run, *, switch_to_lowest=False, thin_cone=None):
    r"""Restarts of normalized l_p-AttGD on the SVM ray of locally optimal, non-global alpha.

    Candidates, in this order: every distinct non-global alpha selected by `normalized_mirror_runs`
    (``candidates`` counts their (alpha, p)), then, while fewer than MAX_RESTARTS restarts meet the
    hypotheses, the constructed `second_best_switches` of instance 0, 1, ... (``constructed``
    counts the alpha evaluated; without them a seed whose runs all select opt has no restart at
    all).  For every p of LOCAL_P a restart is kept when alpha is locally optimal at p and
    delta_safe >= SAFE_GAP; at most MAX_RESTARTS are run.  W(0) = c W_mm_alpha^p with
    c = max(scale, COMPETITOR_GAP / delta_safe) (c = scale where delta_safe <= 0), with the
    step eta = STEP[p] (c/scale)^(p-1), so that the dual iterate moves by the same fraction of its
    norm ||grad psi(W(0))||_q = (c ||W_mm||_p)^(p-1) per step as at the radius ``scale``.
    With ``switch_to_lowest`` the same restarts run on alpha' = `lowest_score_switch` of their
    alpha instead (its own W_mm and hypotheses).  Records the directional divergence to W_mm of
    the restart's own alpha and the selected tokens at 31 checkpoints, and the hypotheses.
    With ``thin_cone`` = mu' the start is moved off the ray onto the boundary of the thinner cone
    D_psi(W_mm/||W_mm||_p, W(0)/||W(0)||_p) = `thin_cone_widths` (mu' scaled by delta_safe; direction W_mm/||W_mm||_p + s E/||E||_p, E Gaussian
    from the stream "thin cone", s by bisection, the same radius), and every step is a checkpoint."""
    s = run.sizes
    runs = run.use(normalized_mirror_runs)
    data, _ = instances(run.runtime, s)
    scores = data.scores()
    pairs = sorted({(int(k), tuple(a)) for k, a, g in zip(runs["instance"], runs["alpha"],
                                                           runs["globally_optimal"])
                    if not g and k < data.K})
    evaluated = [restart_hypotheses(data, scores, k, np.array(a), p) for k, a in pairs for p in LOCAL_P]
    trials = [tr for tr in evaluated if meets_restart_hypotheses(tr)]
    seen, constructed = set(pairs), 0
    for k in range(data.K):
        for alpha in second_best_switches(scores[k], data.opt[k]):
            if len(trials) >= MAX_RESTARTS:
                break
            if (k, tuple(alpha)) in seen:
                continue
            constructed += 1
            trials += [tr for tr in (restart_hypotheses(data, scores, k, alpha, p) for p in LOCAL_P)
                       if meets_restart_hypotheses(tr)]
    trials = trials[:MAX_RESTARTS]
    if switch_to_lowest:
        trials = [restart_hypotheses(data, scores, tr["instance"],
                                     lowest_score_switch(scores[tr["instance"]], tr["alpha"],
                                                         data.opt[tr["instance"]]), tr["p"])
                  for tr in trials]
    counts = dict(candidates=len(evaluated), constructed=constructed)
    if not trials:
        return dict(p=np.empty(0), D=np.empty((0, 0)), tokens_kept=np.empty((0, 0), bool),
                    local=np.empty(0, bool), safe=np.empty(0), scale=np.empty(0), t=np.empty(0), **counts)
    idx = [tr["instance"] for tr in trials]
    t = data.to_torch(run.device, run.dtype)
    model = TokenSelection(t.X[idx], t.y[idx], t.u[idx])
    p = np.array([tr["p"] for tr in trials])
    W_mm = np.stack([tr["W_mm"] for tr in trials])
    alpha = np.stack([tr["alpha"] for tr in trials])
    safe = np.array([tr["safe"] for tr in trials])
    scale = restart_radius(safe, s["scale"])
    eta = [STEP[pv] * (c / s["scale"]) ** (pv - 1) for pv, c in zip(p, scale)]
    step = MirrorDescent(model, p.tolist(), eta, normalized=True)
    marks = np.linspace(0, s["steps"], 31).round().astype(int)
    W0 = scale[:, None, None] * W_mm
    if thin_cone is not None:
        marks = np.arange(s["steps"] + 1)
        E = run.rng("thin cone").standard_normal(W_mm.shape)
        widths = thin_cone_widths(thin_cone, safe, p)
        W0 = np.stack([_on_cone_boundary(W_mm[j], E[j], float(p[j]), widths[j]) for j in range(len(p))])
        W0 = W0 * (scale * norms_along(W_mm[None], p)[0] / norms_along(W0[None], p)[0])[:, None, None]
    traj = run_trajectory(step, {"W": run.tensor(W0)}, s["steps"], {"W": lambda it: it.W},
                          checkpoints=marks)
    W = traj["W"]
    X = data.X[idx]
    kept = np.stack([np.all(selected_tokens(X, Wc) == alpha, axis=-1) for Wc in W])
    return dict(p=p, t=traj.t, D=divergence_curves(W, W_mm, p), tokens_kept=kept,
                local=np.array([tr["local"] for tr in trials]), safe=safe, scale=scale, **counts)


def thin_cone_widths(mu_thin: float, safe, p):
    r"""The thinner cone's width per restart: mu' min(1, delta_safe)^max(2, p).  Lemma 28's thinner
    cone is a function of the instance's constants: Lemma 19 turns D <= mu(delta) into margin
    errors <= delta/2 with mu(delta) ~ eps^2 (p <= 2) or eps^p (p > 2), eps proportional to delta;
    delta_safe (floored at SAFE_GAP, the hypothesis) stands for delta."""
    delta = np.minimum(1.0, np.maximum(np.asarray(safe, dtype=float), SAFE_GAP))
    return mu_thin * delta ** np.maximum(2.0, np.asarray(p, dtype=float))


def _on_cone_boundary(W_mm, E, p: float, mu: float):
    """W_mm/||W_mm||_p + s E/||E||_p, unit l_p norm, with D_psi_p(W_mm/||W_mm||_p, .) = mu (bisection in s)."""
    unit, noise = lp_unit(W_mm, p), lp_unit(E, p)
    D = lambda s: float(directional_bregman(torch.as_tensor(unit)[None],                 # noqa: E731
                                            torch.as_tensor(lp_unit(unit + s * noise, p))[None], p))
    lo, hi = 0.0, 1.0
    while D(hi) < mu:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if D(mid) < mu else (lo, mid)
    return lp_unit(unit + lo * noise, p)


GROWTH_P = (1.75, 2.0, 3.0)


LATE_WINDOW = 200
"""Plain-MD steps at the end of `norm_growth_runs` at which every iterate is kept (Lemmas 27, 29)."""


@shared_run(sizes={"quick": dict(SIZES["quick"], instances=3, steps=2000, eta=10.0),
                   "full": dict(SIZES["full"], steps=20000, eta=10.0)})
def norm_growth_runs(run, *, n_instances=None, normalized=False, zero_head=False):
    r"""Plain (or ``normalized``) l_p-AttGD with eta for p in GROWTH_P on the first ``n_instances``
    instances (None: the tier's) from W(0) std 1, side by side (trial j = ip * K + k).  Keeps W(k) at k = K/10 and at every step of
    the last LATE_WINDOW (``t``: those steps; ``r``: ||W(k)||_p there), the selected tokens alpha
    at K, the certified l_p-AttSVM W_mm_alpha and ||W_mm_alpha||_p, and whether alpha is locally
    optimal.  ``zero_head`` sets v = 0 (all scores equal)."""
    s = dict(run.sizes, instances=n_instances or run.sizes["instances"])
    data, W0 = instances(run.runtime, s)
    K, P = data.K, len(GROWTH_P)
    t = data.to_torch(run.device, run.dtype)
    v = torch.zeros_like(t.u) if zero_head else t.u
    model = TokenSelection(t.X, t.y, v).tiled(P)
    p = [pv for pv in GROWTH_P for _ in range(K)]
    step = MirrorDescent(model, p, s["eta"], normalized=normalized)
    pt = run.tensor(p)
    marks = [s["steps"] // 10] + list(range(s["steps"] - LATE_WINDOW, s["steps"] + 1))
    traj = run_trajectory(step, {"W": run.tensor(np.tile(W0, (P, 1, 1)))}, s["steps"],
                          {"r": lambda it: lp_norm(it.W, pt), "W": lambda it: it.W}, checkpoints=marks)
    X = np.tile(data.X, (P, 1, 1, 1))
    alpha = selected_tokens(X, traj.W.cpu().numpy())
    scores = token_scores(data.X, data.y, v.cpu().numpy())
    W_mm = np.stack([solve_lp_wsvm(data.X[j % K], alpha[j], p[j], name="synthetic", trial=j % K).W
                     for j in range(P * K)])
    local = np.array([locally_optimal(data.X[j % K], scores[j % K], alpha[j], W_mm[j]) for j in range(P * K)])
    distinct = np.ptp(scores, axis=-1).min(-1) > 0
    return dict(t=traj.t, r=traj["r"], W=traj["W"], p=np.array(p), eta=s["eta"], alpha=alpha, W_mm=W_mm,
                svm_norm=norms_along(W_mm[None], np.array(p))[0], locally_optimal=local,
                instance=np.arange(P * K) % K, distinct_scores=np.tile(distinct, P))


JOINT_X = np.array([[[-2.7, 1.2], [1.4, 2.1], [1.3, -0.1]],
                    [[0.4, -2.2], [-1.1, -0.4], [0.9, 0.1]]])
JOINT_Y = np.array([1.0, -1.0])
r"""The paper's two-sample joint-training example (n=2, T=3, d=2, query z_i = x_{i,0}; the
authors' joint-training notebook, as transcribed in the project's reconstruction): data, not
results."""
JOINT_P = (1.75, 2.0, 3.0)


@shared_run(sizes={"quick": dict(steps=2000, eta=(0.1, 0.1, 1.0)),
                   "full": dict(steps=20000, eta=(0.1, 0.1, 0.1))})
def joint_runs(run, *, loss: str = "exponential"):
    r"""Normalized l_p-JointGD (each block normalized by its own dual norm) on the paper's joint
    example from (W, v) = 0, p in JOINT_P side by side (trial j = p index); exponential loss, or
    ``loss="logistic"`` (the authors' notebook).
    Records W, v at 0, 1..100 and 40 evenly spaced checkpoints; the selected tokens at each;
    alpha = the tokens of the last iterate; the certified l_p-AttSVM W_mm_alpha and the l_p
    head SVM v_mm_alpha (min ||v||_p s.t. y_i x_{i,alpha_i}^T v >= 1) per p."""
    s = run.sizes
    P = len(JOINT_P)
    X = run.tensor(np.tile(JOINT_X, (P, 1, 1, 1)))
    model = TokenSelection(X, run.tensor(np.tile(JOINT_Y, (P, 1))), loss=loss)
    step = MirrorDescent(model, list(JOINT_P), list(s["eta"]), normalized=True)
    marks = np.unique(np.concatenate([np.arange(101), np.linspace(0, s["steps"], 41).round(),
                                      [s["steps"] // 10]]).astype(int))
    start = {"u": run.tensor(np.zeros((P, 2))), "W": run.tensor(np.zeros((P, 2, 2)))}
    traj = run_trajectory(step, start, s["steps"], {"W": lambda it: it.W, "v": lambda it: it.params["u"]},
                          checkpoints=marks)
    Xn = np.tile(JOINT_X, (P, 1, 1, 1))
    tokens = np.stack([selected_tokens(Xn, Wc) for Wc in traj["W"]])
    alpha = tokens[-1]
    W_mm = np.stack([solve_lp_wsvm(JOINT_X, alpha[j], p, name="joint example").W for j, p in enumerate(JOINT_P)])
    v_mm = np.stack([solve_lp_usvm(JOINT_X[np.arange(2), alpha[j]], JOINT_Y, p, name="joint example").W[:, 0]
                     for j, p in enumerate(JOINT_P)])
    return dict(t=traj.t, W=traj["W"], v=traj["v"], tokens=tokens, alpha=alpha, W_mm=W_mm, v_mm=v_mm,
                p=np.array(JOINT_P))


def divergence(reference, iterate, p):
    """D_psi_p(R/||R||_p, X/||X||_p) of one reference and one iterate (any shape)."""
    return float(directional_bregman(torch.tensor(reference)[None], torch.tensor(iterate)[None], p))


def nearest_other_tokens(alpha, p, W, v):
    r"""min over the token choices alpha'' != alpha (infeasible programs skipped) of the
    divergences of W and of v from the l_p SVMs of alpha'': (min D_W, min D_v, feasible count)."""
    dW, dv = [], []
    for other in token_assignments(JOINT_X.shape[1], JOINT_X.shape[0]):
        if np.array_equal(other, alpha):
            continue
        try:
            W_mm = solve_lp_wsvm(JOINT_X, other, p, name="joint example").W
            v_mm = solve_lp_usvm(JOINT_X[np.arange(2), other], JOINT_Y, p, name="joint example").W[:, 0]
        except InfeasibleProgramError:
            continue
        dW.append(divergence(W_mm, W, p)), dv.append(divergence(v_mm, v, p))
    return min(dW), min(dv), len(dW)


PATH_RADII = (2.0, 4.0, 8.0, 16.0)
"""Radii of the regularization path, in units of ||W_mm_opt||_p (the spec's; beyond 16 the
gradient is ~exp(-16) and L-BFGS cannot leave its start)."""


PATH_STOP = 3e-3
"""The path minimization stops once every (instance, p, R) of a start has relative projected
gradient <= PATH_STOP, a third of the claim's precondition 1e-2."""
PATH_STARTS = 2
"""Independent Gaussian starts per (instance, p), each followed along the radii by continuation,
besides the start on the SVM ray: the ray start alone would decide where the search ends; the
lowest loss over all starts is kept, so a lower minimum that a Gaussian start finds elsewhere
fails the claim."""


@shared_run(sizes={"quick": dict(SIZES["quick"], p=(2.0,)),
                   "full": dict(SIZES["full"], p=(1.5, 1.75, 2.0, 3.0))})
def regularization_path(run):
    r"""The regularization path W_R = argmin_{||W||_p <= R} L(W) at R = c ||W_mm_opt||_p, c in
    PATH_RADII, for every instance and p of the tier, from 1 + PATH_STARTS starts: (0) the ray
    point R W_mm_opt/||W_mm_opt||_p at every radius, (1..) PATH_STARTS Gaussian directions per
    (instance, p), each followed along the radii by continuation (the minimizer at one radius
    starts the next; the first from its Gaussian direction), minimized on the sphere
    (log(L(W) - L_*), the library's
    `lp_regularization_path`: L-BFGS, trial weights 1/R, no error when it stops short: the claim
    checks the projected gradients); the lower loss over the starts is kept.  The minimum of the
    loss over the ball is on the sphere when the radius is large (the loss has no finite
    minimizer).  Returns the kept W (I, C, d, d) with I = (p, instance) pairs, its loss and
    relative projected gradient, every start's W (S, I, C, d, d), loss and projected gradient,
    the certified W_mm_opt (I, d, d), p (I,), instance (I,), and which start won."""
    s = run.sizes
    data, _ = instances(run.runtime, s)
    K, C = data.K, len(PATH_RADII)
    pairs = [(pv, k) for pv in s["p"] for k in range(K)]
    W_mm = np.stack([solve_lp_wsvm(data.X[k], data.opt[k], pv, name="synthetic", trial=k).W for pv, k in pairs])
    p = np.array([pv for pv, _ in pairs])
    M = norms_along(W_mm[None], p)[0]
    rng = run.rng("path starts")
    idx = np.array([k for _, k in pairs])
    t = data.to_torch(run.device, run.dtype)
    model = TokenSelection(t.X[idx], t.y[idx], t.u[idx])
    shape = (len(pairs), C)
    S = PATH_STARTS + 1
    W = np.empty((S,) + shape + W_mm.shape[1:])
    log_excess, projected = np.empty((S,) + shape), np.empty((S,) + shape)
    ray_model = TokenSelection(t.X[np.repeat(idx, C)], t.y[np.repeat(idx, C)], t.u[np.repeat(idx, C)])
    ray = lp_regularization_path(ray_model, (M[:, None] * np.array(PATH_RADII)).ravel(), np.repeat(p, C),
                                 [np.repeat(W_mm, C, axis=0)], tol=PATH_STOP)
    W[0], log_excess[0], projected[0] = (ray.W.reshape(shape + W_mm.shape[1:]), ray.log_excess.reshape(shape),
                                         ray.projected_gradient.reshape(shape))
    for start in range(1, S):
        current = rng.standard_normal(W_mm.shape)
        for c, radius in enumerate(PATH_RADII):      # continuation: each radius from the last
            path = lp_regularization_path(model, M * radius, p, [current], tol=PATH_STOP)
            W[start, :, c], log_excess[start, :, c], projected[start, :, c] = (
                path.W, path.log_excess, path.projected_gradient)
            current = path.W
    won = log_excess.argmin(0)
    pick = lambda a: np.take_along_axis(a, won.reshape((1,) + shape + (1,) * (a.ndim - 3)), 0)[0]  # noqa: E731
    return dict(W=pick(W), log_excess=pick(log_excess), projected=pick(projected), start=won,
                W_starts=W, log_excess_starts=log_excess, projected_starts=projected,
                W_mm=W_mm, p=p, instance=np.array([k for _, k in pairs]), radii=np.array(PATH_RADII))


# ---------------------------------------------------------------- the claims' reading of the runs


def steps(p):
    """eta of normalized MD of every run (its p's STEP)."""
    return np.array([STEP[float(x)] for x in p])


def reference_index(p, control):
    """Index into P_VALUES of the reference of each run: its own p, or the far wrong q."""
    if control == "wrong_p":
        return np.array([P_VALUES.index(FAR_Q[float(x)]) for x in p])
    return own_index(p)


def wrong_token_references(tc, runs):
    r"""l_p-AttSVM of alpha' = alpha with one sample moved to its lowest-score token (the first
    sample whose alpha_i is not already the lowest): not locally optimal."""
    data, _ = instances(tc.runtime, tc.sizes)
    scores = data.scores()
    refs = np.empty_like(runs["W_mm"][0])
    for j, (k, alpha, p) in enumerate(zip(runs["instance"], runs["alpha"], runs["p"])):
        worst = scores[k].argmin(-1)
        i = int(np.flatnonzero(alpha != worst)[0])
        bad = alpha.copy()
        bad[i] = worst[i]
        queries = None if runs.get("queries") is None else runs["queries"][k]
        refs[j] = solve_lp_wsvm(data.X[k], bad, float(p), queries=queries, name="synthetic", trial=int(k)).W
    return refs


def per_p(values, p):
    """Medians of per-run values for each p of P_VALUES."""
    return np.array([np.median(values[p == pv]) for pv in P_VALUES])


NOISE = (1e-3, 1e-2)


def log_correlation(model, W, ref):
    r"""log <-grad L(W), ref> per trial from the scaled gradient exp(M) G (exact deep in
    saturation); NaN where the correlation is not positive."""
    g = model.scaled_gradient({"W": W})["W"]
    inner = -(g.direction * ref).flatten(1).sum(1)
    return torch.where(inner > 0, g.log_scale + inner.clamp_min(1e-300).log(), torch.nan), inner


def references(tc, bad_tokens: bool):
    r"""The reference of every run of `normalized_mirror_runs` on the first ``tc.sizes["instances"]``
    instances whose alpha is locally optimal: its own l_p-AttSVM W_mm_alpha, or with ``bad_tokens``
    the l_p-AttSVM of alpha_bad = argmin_t gamma_{i,t}.  Records the preconditions (alpha locally
    optimal on every run used, computed by `locally_optimal` for the alpha and reference in use;
    at least 5 runs); returns (refs (J,d,d), p (J,), instance (J,), data,
    alpha (J,n))."""
    runs = tc.use(normalized_mirror_runs)
    data, _ = instances(tc.runtime, tc.sizes)
    p_all = runs["p"]
    keep = np.flatnonzero(runs["locally_optimal"] & (runs["instance"] < data.K))
    scores = data.scores()
    refs, alphas, alpha_ok = [], [], []
    for j in keep:
        k = runs["instance"][j]
        if bad_tokens:
            bad, ref = lowest_token_svm(data, k, p_all[j])
            refs.append(ref), alphas.append(bad)
            alpha_ok.append(bool(locally_optimal(data.X[k], scores[k], bad, ref)))
        else:
            refs.append(runs["W_mm"][own_index(p_all[j:j + 1])[0], j])
            alphas.append(runs["alpha"][j]), alpha_ok.append(True)
    tc.precondition.holds("alpha locally optimal on every run used", bool(all(alpha_ok)))
    tc.precondition.at_least("runs used", len(keep), 5)
    return np.stack(refs), p_all[keep], runs["instance"][keep], data, np.stack(alphas)


def cone_samples(rng, refs, p, inst, radii, noise=NOISE):
    r"""W = R ||W_mm||_p U/||U||_p, U = W_mm/||W_mm||_p + s E/||E||_p (E Gaussian) for every
    reference, R in ``radii`` and s in ``noise``: (W (S,d,d), p (S,), instance (S,), reference (S,d,d))."""
    rows, ps, insts, cone_refs = [], [], [], []
    for ref, pv, k in zip(refs, p, inst):
        norm = float(lp_norm(torch.as_tensor(ref)[None], pv))
        for R in radii:
            for s in noise:
                U = lp_unit(ref, pv) + s * lp_unit(rng.standard_normal(ref.shape), pv)
                rows.append(R * norm * lp_unit(U, pv))
                ps.append(pv), insts.append(k), cone_refs.append(ref)
    return np.stack(rows), np.array(ps), np.array(insts), np.stack(cone_refs)


def cone_constants(X, alpha, W_mm, p):
    r"""The constants of Lemma 19 for one instance: margins m_k(W_mm) with the constraint
    factors, support mask, delta = (1/2) min over non-support tokens of (m - 1), A_q =
    max_{i,t,tau} ||x_{i,t} - x_{i,tau}||_q ||z_i||_q and mu(delta) (spec section 1.7:
    eps = delta / (2 A_q ||W_mm||_p); mu = eps^p / (p 2^p) for p >= 2, (p-1)/2 eps^2 N^(1-2/p) for
    p < 2, N = d^2)."""
    A, B, index = wsvm_constraint_factors(X, alpha)
    m = constraint_values(A, B, W_mm)
    support = np.abs(m - 1) <= SUPPORT_TOL
    delta = 0.5 * float(np.min(m[~support] - 1)) if (~support).any() else np.inf
    q = p / (p - 1)
    diffs = X[:, :, None, :] - X[:, None, :, :]
    A_q = float(np.max(np.linalg.norm(diffs, ord=q, axis=-1).max((1, 2)) * np.linalg.norm(X[:, 0], ord=q, axis=-1)))
    eps = delta / (2 * A_q * float(lp_norm(torch.as_tensor(W_mm)[None], p)))
    mu = eps ** p / (p * 2 ** p) if p >= 2 else (p - 1) / 2 * eps ** 2 * W_mm.size ** (1 - 2 / p)
    return A, B, index, support, delta, A_q, mu


def margin_slacks(A, B, index, support, delta, W):
    r"""Smallest slacks over the matrices W (S, d, d) and the constraints of (12a)
    m_tau - m_t - (3/2) delta (t support, tau non-support, same sample), (12b)
    m_tau - 1 - (3/2) delta, (12c) delta/2 - |m_t - 1| (inf where a set is empty)."""
    m = np.einsum("kr,src,kc->sk", A, W, B)
    slacks = {"12a": np.inf, "12b": np.inf, "12c": np.inf}
    for i in np.unique(index[:, 0]):
        own = index[:, 0] == i
        tight, loose = m[:, own & support], m[:, own & ~support]
        if tight.size:
            slacks["12c"] = min(slacks["12c"], float(np.min(delta / 2 - np.abs(tight - 1))))
        if loose.size:
            slacks["12b"] = min(slacks["12b"], float(np.min(loose - 1 - 1.5 * delta)))
        if tight.size and loose.size:
            slacks["12a"] = min(slacks["12a"], float(np.min(loose[:, :, None] - tight[:, None] - 1.5 * delta)))
    return slacks


def restarts(tc, thin_cone=None):
    """The restart run (alpha' = lowest-score switch under the control; started on the boundary of
    the thinner cone ``thin_cone`` when given) and its preconditions."""
    if thin_cone is None:
        r = tc.use(local_restarts, switch_to_lowest=tc.control == "not_locally_optimal")
    else:
        r = tc.use(local_restarts, switch_to_lowest=tc.control == "not_locally_optimal", thin_cone=thin_cone)
    tc.record("candidate restarts from the runs (non-global alpha x p)", int(r["candidates"]))
    tc.record("constructed candidate alpha evaluated (second-best switches of opt)", int(r["constructed"]))
    tc.record("delta_safe per restart", r["safe"])
    tc.record("restart radius / ||W_mm||_p per restart", r["scale"])
    tc.precondition.at_least("restarts on a locally optimal alpha", len(r["p"]), 3)
    tc.precondition.holds("every restart: alpha locally optimal, delta_safe >= 0.05",
                          bool(np.all(r["local"] & (r["safe"] >= SAFE_GAP))))
    return r if len(r["p"]) else None


MIN_RUNS = 5
"""Runs meeting the hypotheses needed to decide (the value used before the 20-seed sweep, kept)."""
PI = 0.1
"""The pi of Lemmas 21, 27 (the spec's test value, fixed before the data)."""


def plain_settled(runs, data) -> np.ndarray:
    """(J,) bool per run of `norm_growth_runs`: alpha (the last iterate's tokens) locally optimal
    and selected at every kept late iterate (the runs of ``data``'s instances)."""
    inst = runs["instance"]
    stable = np.all([np.all(selected_tokens(data.X[inst], Wc) == runs["alpha"], axis=-1) for Wc in runs["W"][1:]],
                    axis=0)
    return runs["locally_optimal"] & stable


def rate_profile(p, r):
    r"""h_p(r) of the rate theorem: r^(1-p) (p < 2), (log r)^2/r (p = 2), log r/r (p > 2); p (J,), r (..., J)."""
    p = np.asarray(p, dtype=float)
    return np.where(p < 2, r ** (1 - p), np.where(p == 2, np.log(r) ** 2 / r, np.log(r) / r))


def late_run(tc, bad_reference: bool, aligned_only: bool = True):
    r"""The runs of `norm_growth_runs` that meet the lemmas' measurable hypotheses, the others
    counted: alpha locally optimal and selected at every late iterate (`plain_settled`), and, with
    ``aligned_only``, Lemma 21's alignment at every late iterate (`_aligned`, the proof's step in
    W(k) in C_{p,mu,R_pi}); at least MIN_RUNS such runs is a precondition.  Returns late iterates
    W (C, J, d, d) at steps t (C,), norms r, p, eta, W(K/10), and the reference of every run: its
    own W_mm_alpha, or with ``bad_reference`` the l_p-AttSVM of alpha_bad = argmin_t gamma_{i,t}
    (the hypotheses are those of the run, always measured against its own W_mm_alpha).  None when
    no run meets them."""
    runs = tc.use(norm_growth_runs, n_instances=tc.sizes["instances"])
    data, _ = instances(tc.runtime, tc.sizes)
    inst = runs["instance"]
    local = np.flatnonzero(plain_settled(runs, data))
    aligned = (_aligned(instances_model(data, inst[local]), runs["W"][1:, local], runs["W_mm"][local], runs["p"][local])
               if len(local) else np.zeros(0, dtype=bool))
    use = local[aligned] if aligned_only else local
    tc.record("runs with alpha not locally optimal or not stable", len(inst) - len(local))
    tc.record("runs with alpha locally optimal and stable but not aligned (Lemma 21)", int((~aligned).sum()))
    tc.precondition.at_least("runs meeting the hypotheses over the late steps", len(use), MIN_RUNS)
    if not len(use):
        return None
    p, inst = runs["p"][use], inst[use]
    refs = runs["W_mm"][use]
    if bad_reference:
        refs = np.stack([lowest_token_svm(data, k, pv)[1] for k, pv in zip(inst, p)])
    return dict(t=runs["t"][1:], W=runs["W"][1:, use], r=runs["r"][1:, use], p=p, eta=float(runs["eta"]),
                refs=refs, inst=inst, data=data, W_tenth=runs["W"][0, use], r_tenth=runs["r"][0, use],
                k0=runs["t"][0], aligned=aligned if not aligned_only else np.ones(len(use), bool))


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


CERT_P = (1.1, 1.25, 1.5, 1.75, 2.0, 3.0, 4.0)


def certificates(tc, data):
    """Per (instance, p of CERT_P): (X, opt, p, W, lambda) with W the solver's certified
    l_p-AttSVM for opt (replaced under the controls: ``perturbed``, a feasible non-optimal W;
    ``wrong_p``, the solution of another p) and lambda its norm-form multipliers."""
    rng = tc.rng("perturbation")
    out = []
    for k in range(data.K):
        X, opt = data.X[k], data.opt[k]
        A, B, _ = wsvm_constraint_factors(X, opt)
        for p in CERT_P:
            sol = solve_lp_wsvm(X, opt, p, name="synthetic", trial=k)
            W = sol.W
            if tc.control == "perturbed":
                W = W + 1e-2 * np.abs(W).mean() * rng.standard_normal(W.shape)
                W = W / (np.sum((A @ W) * B, axis=1).min())        # feasible again
            elif tc.control == "wrong_p":
                W = solve_lp_wsvm(X, opt, 4.0 if p < 3 else 1.5, name="synthetic", trial=k).W
            out.append((X, opt, p, W, sol.multipliers))
    return out


def bregman_curve_checks(tc, runs):
    r"""The checks of the synthetic Bregman figure on the runs of `normalized_mirror_runs`: per p,
    the mean over instances of D^(q)_k for every q drawn; (a) the q = p curve lowest at K, (b) its
    median decay ratio D^(p)_K / D^(p)_{K/2} <= 0.6, (c) the far wrong q's median ratio >= 0.7
    (the control ``wrong_tokens`` replaces the own-q references by those of a wrong token choice)."""
    p, t = runs["p"], runs["t"]
    refs = runs["W_mm"].copy()
    own = own_index(p)
    if tc.control == "wrong_tokens":
        refs[own, np.arange(len(p))] = wrong_token_references(tc, runs)
    D = np.stack([divergence_curves(runs["W"], refs[iq], p) for iq in range(len(P_VALUES))])
    half = np.searchsorted(t, t[-1] // 2)
    lowest, decay, level = [], [], []
    for ip, pv in enumerate(P_VALUES):
        sel = p == pv
        mean = D[:, :, sel].mean(-1)                                   # (Q, C)
        lowest.append(mean[:, -1].argmin() == ip)
        decay.append(np.median(D[ip, -1, sel] / D[ip, half, sel]))
        far = P_VALUES.index(FAR_Q[pv])
        level.append(np.median(D[far, -1, sel] / D[far, half, sel]))
        for iq, q in enumerate(P_VALUES):
            tc.curve(f"bregman p={pv:g}", f"q={q:g}", t[1:], mean[iq, 1:], xscale="log", yscale="log",
                     xlabel="step k", ylabel="mean D_psi_p(W_mm_q, W(k))")
    tc.conclusion.holds("q = p curve lowest at K, every p", all(lowest), detail={"lowest": lowest})
    tc.conclusion.at_most("q = p curve decays from K/2 to K", decay, 0.6)
    tc.conclusion.at_least("far wrong q curve levels off", level, 0.7)


# ---------------------------------------------------------------- the radius map (test_maps.py)

MAP_P = 2.0
r"""The exponent of the radius map (`jta24.thm.lp_direction_local_map_radius`): p = 2, the l_2
member of the family (normalized l_2-MD is normalized GD, the l_2-AttSVM is the W-SVM, whose
Gram-dual solver `solve_wsvm` is fast enough to screen the candidate alpha of 40 instances in the
quick tier; `svm.p2_is_frobenius` checks that it is the l_p program's solution at p = 2)."""
MAP_THEOREM_SCALE = 5.0
"""The encoded local theorem's smallest radius / ||W_mm||_p (`LOCAL_SIZES`' scale, `local_restarts`)."""


@shared_run(sizes={"quick": dict(SIZES["quick"], instances=40), "full": dict(SIZES["full"], instances=100)})
def radius_map_alphas(run, *, instances: int):
    r"""``instances`` restarts of the local theorem, one per fresh synthetic instance (the authors'
    generator, stream "radius map", a pool of 3 ``instances`` draws scanned in order): for each
    instance the first `second_best_switches` alpha (opt with one sample moved to its
    second-highest-score token, samples in order) whose W-SVM W_mm_alpha (p = MAP_P) makes alpha
    locally optimal with delta_safe >= SAFE_GAP; instances without one are skipped.  Returns the
    instances' X, y, v, opt, alpha, W_mm, delta_safe, local (per restart) and the counts scanned
    (instances, W-SVM solves)."""
    s = run.sizes
    data, _ = synthetic(run.rng("radius map"), 3 * instances, s["n"], s["T"], s["d"], name="radius map")
    scores = data.scores()
    trials, scanned, solves = [], 0, 0
    for k in range(data.K):
        if len(trials) >= instances:
            break
        scanned += 1
        for alpha in second_best_switches(scores[k], data.opt[k]):
            trial = restart_hypotheses(data, scores, k, alpha, MAP_P)
            solves += 1
            if meets_restart_hypotheses(trial):
                trials.append(trial)
                break
    keep = np.array([tr["instance"] for tr in trials], dtype=int)
    return dict(X=data.X[keep], y=data.y[keep], v=data.u[keep], opt=data.opt[keep],
                alpha=np.array([tr["alpha"] for tr in trials], dtype=int).reshape(len(keep), s["n"]),
                W_mm=np.array([tr["W_mm"] for tr in trials]).reshape(len(keep), s["d"], s["d"]),
                safe=np.array([tr["safe"] for tr in trials], dtype=float),
                local=np.array([tr["local"] for tr in trials], dtype=bool),
                instances_scanned=scanned, solves=solves)


@shared_run(sizes={"quick": dict(SIZES["quick"], instances=40, steps=300),
                   "full": dict(SIZES["full"], instances=100, steps=1000)})
def radius_map_runs(run, *, fractions, instances: int, steps: int, dynamics_p: float = MAP_P):
    r"""Restarts of `radius_map_alphas` on the ray of W_mm_alpha (the W-SVM) at radius
    f c ||W_mm_alpha||, c = `restart_radius` (the encoded local theorem's), for every f of
    ``fractions``, side by side (trial j = g K + k): W(0) = f c W_mm_alpha, ``steps`` steps of
    normalized l_2-MD = normalized GD (`NGD`) with eta = STEP[2] f c / 5 (the rule of
    `local_restarts`: the same relative move of the dual iterate per step at every radius), or,
    with ``dynamics_p`` != 2, normalized l_p-MD with that p and eta = STEP[p] (f c / 5)^(p-1)
    (the map's dynamics control).  Returns, per (fraction, restart), the directional divergence
    D_psi_2(W_mm/||W_mm||, W/||W||) = 1 - <W_mm, W>/(||W_mm|| ||W||) at K/2 and K, whether the
    tokens selected at K are alpha, the radius fraction and c."""
    a = run.use(radius_map_alphas, instances=instances)
    K, G = len(a["alpha"]), len(fractions)
    c = restart_radius(a["safe"], MAP_THEOREM_SCALE)
    f = np.repeat(np.asarray(fractions, dtype=float), K)
    radius = f * np.tile(c, G)
    W_mm = np.tile(a["W_mm"], (G, 1, 1))
    X = np.tile(a["X"], (G, 1, 1, 1))
    model = TokenSelection(run.tensor(X), run.tensor(np.tile(a["y"], (G, 1))), run.tensor(np.tile(a["v"], (G, 1))))
    p_dyn = float(dynamics_p)
    eta = STEP.get(p_dyn, 0.1) * (radius / MAP_THEOREM_SCALE) ** (p_dyn - 1)
    if p_dyn == MAP_P:
        step = NGD(model, run.tensor(eta))
    else:
        step = MirrorDescent(model, [p_dyn] * len(radius), eta.tolist(), normalized=True)
    marks = [0, steps // 2, steps]
    traj = run_trajectory(step, {"W": run.tensor(radius[:, None, None] * W_mm)}, steps,
                          {"W": lambda it: it.W}, checkpoints=marks)
    W = traj["W"]
    D = divergence_curves(W, W_mm, np.full(G * K, MAP_P))
    kept = np.all(selected_tokens(X, W[-1]) == np.tile(a["alpha"], (G, 1)), axis=-1)
    return dict(D_half=D[1].reshape(G, K), D=D[-1].reshape(G, K), tokens_kept=kept.reshape(G, K),
                fractions=np.asarray(fractions, dtype=float), theorem_radius=c, eta=eta.reshape(G, K))
