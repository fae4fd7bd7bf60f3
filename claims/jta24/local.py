r"""jta24's local theorem: restarts of normalized l_p-AttGD on the SVM ray of a locally optimal,
non-global alpha (`local_restarts`, read by `test_local.py`) and the radius map of where the
theorem starts to hold as the restart radius shrinks (`radius_map_alphas`, `radius_map_runs`,
read by `test_maps.py`).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581: the main-body local theorem (reconstructed),
its proof in Lemmas 19-30 (the induction of Lemma 28).
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.data.selection import selected_tokens
from theorycheck.models import TokenSelection
from theorycheck.optim import NGD, MirrorDescent, directional_bregman, run_trajectory
from theorycheck.optim.directions import divergence_curves, lp_unit, norms_along
from theorycheck.solvers import solve_lp_wsvm, solve_wsvm
from theorycheck.solvers.support import locally_optimal, safe_gap

from .direction import NORMALIZED_MD_ETA, lowest_score_switch, normalized_mirror_runs
from .setup import INSTANCES, SIZES, instances, synthetic

LOCAL_P = (1.75, 2.0, 3.0)
SAFE_GAP = 0.05
r"""delta_safe >= SAFE_GAP filters well-posed locally optimal alpha (spec: a higher-score token
that is almost a support token makes the basin tiny)."""


def distinct_switches(scores, instance, alpha) -> list:
    """alpha' = `lowest_score_switch` of every restart's alpha, the token sets kept apart: the
    restarts of one (instance, alpha) share their alpha', and no two token sets of one instance get
    the same alpha' (each is a trial of the control's binomial; the first non-global sample's switch
    had mapped token sets that differ only there onto one alpha')."""
    made = {}
    for k, a in zip(instance, alpha):
        key = (int(k), tuple(a))
        if key not in made:
            taken = {tuple(b) for (other, _), b in made.items() if other == key[0]}
            made[key] = lowest_score_switch(scores[key[0]], np.asarray(a), taken)
    return [made[(int(k), tuple(a))] for k, a in zip(instance, alpha)]


COMPETITOR_GAP = 3.0
r"""The restart radius R = max(scale, COMPETITOR_GAP / delta_safe) ||W_mm||_p: on the ray at R a
higher-score non-support token has logit gap (1 + delta_safe) R/||W_mm||_p against a support
token's R/||W_mm||_p, so its attention relative to a support token is exp(-delta_safe R/||W_mm||)
<= exp(-3).  The theorem's radius depends on delta (its cone constants mu(delta), R_pi); a fixed
5 ||W_mm||_p left the basin on the full tier (delta_safe ~ 0.1, relative weight exp(-0.5)).
The theorem's hypotheses (delta_safe >= SAFE_GAP) bound the radius by COMPETITOR_GAP / SAFE_GAP
= 60 ||W_mm||_p; a restart outside them (a control's alpha', whose delta_safe may be a round-off
1e-13) gets that largest radius, not COMPETITOR_GAP / delta_safe."""
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
    max(delta_safe, SAFE_GAP)) (at most COMPETITOR_GAP / SAFE_GAP: the hypotheses' floor on
    delta_safe), c = scale where delta_safe <= 0."""
    safe = np.asarray(safe, dtype=float)
    return np.where(safe > 0, np.maximum(scale, COMPETITOR_GAP / np.maximum(safe, SAFE_GAP)), scale)


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
    c = `restart_radius` = max(scale, COMPETITOR_GAP / max(delta_safe, SAFE_GAP)) (c = scale where
    delta_safe <= 0), with the
    step eta = NORMALIZED_MD_ETA[p] (c/scale)^(p-1), so that the dual iterate moves by the same fraction of its
    norm ||grad psi(W(0))||_q = (c ||W_mm||_p)^(p-1) per step as at the radius ``scale``.
    With ``switch_to_lowest`` the same restarts run on alpha' = `distinct_switches` of their
    alpha instead (its own W_mm and hypotheses).  Records the directional divergence to W_mm of
    the restart's own alpha and the selected tokens at 31 checkpoints, and the hypotheses.
    With ``thin_cone`` = mu' the start is moved off the ray onto the boundary of the thinner cone
    D_psi(W_mm/||W_mm||_p, W(0)/||W(0)||_p) = `thin_cone_widths` (mu' scaled by delta_safe; direction W_mm/||W_mm||_p + s E/||E||_p, E Gaussian
    from the stream "thin cone", s by bisection, the same radius), and every step is a checkpoint."""
    s = run.sizes
    runs = run.use(normalized_mirror_runs)
    data, _ = instances(run.rng(INSTANCES), s)
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
        switched = distinct_switches(scores, [tr["instance"] for tr in trials], [tr["alpha"] for tr in trials])
        trials = [restart_hypotheses(data, scores, tr["instance"], bad, tr["p"])
                  for tr, bad in zip(trials, switched)]
    counts = dict(candidates=len(evaluated), constructed=constructed)
    if not trials:
        return dict(p=np.empty(0), D=np.empty((0, 0)), tokens_kept=np.empty((0, 0), bool),
                    local=np.empty(0, bool), safe=np.empty(0), scale=np.empty(0), t=np.empty(0),
                    token_set=np.empty(0, int), instance=np.empty(0, int), **counts)
    idx = [tr["instance"] for tr in trials]
    t = data.to_torch(run.device, run.dtype)
    model = TokenSelection(t.X[idx], t.y[idx], t.u[idx])
    p = np.array([tr["p"] for tr in trials])
    W_mm = np.stack([tr["W_mm"] for tr in trials])
    alpha = np.stack([tr["alpha"] for tr in trials])
    safe = np.array([tr["safe"] for tr in trials])
    scale = restart_radius(safe, s["scale"])
    eta = [NORMALIZED_MD_ETA[pv] * (c / s["scale"]) ** (pv - 1) for pv, c in zip(p, scale)]
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
                local=np.array([tr["local"] for tr in trials]), safe=safe, scale=scale,
                token_set=token_sets(idx, alpha), instance=np.array(idx, dtype=int), **counts)


def token_sets(instance, alpha) -> np.ndarray:
    """The token set of every restart: the index of its (instance, alpha) among the distinct ones,
    in order of first appearance (the restarts of one alpha at the p of LOCAL_P share it)."""
    keys = [(int(k), tuple(a)) for k, a in zip(instance, alpha)]
    first = {key: i for i, key in reversed(list(enumerate(keys)))}
    order = {key: rank for rank, key in enumerate(sorted(first, key=first.get))}
    return np.array([order[key] for key in keys], dtype=int)


def per_token_set(token_set, success) -> np.ndarray:
    """Per token set (`token_sets`, in order): whether every one of its restarts succeeded."""
    success = np.asarray(success, dtype=bool)
    return np.array([bool(success[token_set == s].all()) for s in np.unique(token_set)], dtype=bool)


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


def restarts(tc, thin_cone=None):
    r"""The restart run (alpha' = lowest-score switch under the control; started on the boundary of
    the thinner cone ``thin_cone`` when given) and its preconditions.  The hypotheses are decided
    on delta_safe alone: delta_safe >= SAFE_GAP implies that alpha is locally optimal (a support
    token t of W_mm has margin m_t = 1 within SUPPORT_TOL < SAFE_GAP, so a token scoring at least
    alpha_i, whose m - 1 >= delta_safe, is none), so "alpha locally optimal and delta_safe >=
    SAFE_GAP" is delta_safe >= SAFE_GAP, every restart: its least delta_safe is the margin (the
    claim's restarts are chosen so; under the control alpha' has a support token above it, delta_safe
    about 0).  `locally_optimal` per restart is recorded."""
    if thin_cone is None:
        r = tc.use(local_restarts, switch_to_lowest=tc.control == "not_locally_optimal")
    else:
        r = tc.use(local_restarts, switch_to_lowest=tc.control == "not_locally_optimal", thin_cone=thin_cone)
    tc.record("candidate restarts from the runs (non-global alpha x p)", int(r["candidates"]))
    tc.record("constructed candidate alpha evaluated (second-best switches of opt)", int(r["constructed"]))
    tc.record("delta_safe per restart", r["safe"])
    tc.record("restart radius / ||W_mm||_p per restart", r["scale"])
    tc.record("token set per restart (index of its instance and alpha)", r["token_set"])
    tc.record("instance per restart", r["instance"])
    tc.record("alpha locally optimal per restart", r["local"])
    tc.precondition.at_least("restarts on a locally optimal alpha", len(r["p"]), 3)
    if len(r["p"]):
        tc.precondition.at_least("every restart: alpha locally optimal, delta_safe >= 0.05", r["safe"], SAFE_GAP)
    return r if len(r["p"]) else None


# ---------------------------------------------------------------- the radius map (test_maps.py)

MAP_P = 2.0
r"""The exponent of the radius map (`jta24.thm.lp_direction_local_map_radius`): p = 2, the l_2
member of the family (normalized l_2-MD is normalized GD, the l_2-AttSVM is the W-SVM, whose
Gram-dual solver `solve_wsvm` is fast enough to screen the candidate alpha of 40 instances in the
quick tier; `svm.p2_is_frobenius` checks that it is the l_p program's solution at p = 2)."""
MAP_THEOREM_SCALE = 5.0
"""The encoded local theorem's smallest radius / ||W_mm||_p (`LOCAL_SIZES`' scale, `local_restarts`)."""


MAP_POOL = 3
"""`radius_map_alphas` scans a pool of MAP_POOL times the restarts it needs (instances in order)."""


@shared_run(sizes={"quick": dict(SIZES["quick"], instances=40), "full": dict(SIZES["full"], instances=100)})
def radius_map_alphas(run, *, instances: int):
    r"""``instances`` restarts of the local theorem, one per fresh synthetic instance (the authors'
    generator, stream "radius map", a pool of MAP_POOL ``instances`` draws scanned in order): for each
    instance the first `second_best_switches` alpha (opt with one sample moved to its
    second-highest-score token, samples in order) whose W-SVM W_mm_alpha (p = MAP_P) makes alpha
    locally optimal with delta_safe >= SAFE_GAP; instances without one are skipped.  Returns the
    instances' X, y, v, opt, alpha, W_mm, delta_safe, local (per restart) and the counts scanned
    (instances, W-SVM solves)."""
    s = run.sizes
    data, _ = synthetic(run.rng("radius map"), MAP_POOL * instances, s["n"], s["T"], s["d"], name="radius map")
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
    normalized l_2-MD = normalized GD (`NGD`) with eta = NORMALIZED_MD_ETA[2] f c / 5 (the rule of
    `local_restarts`: the same relative move of the dual iterate per step at every radius), or,
    with ``dynamics_p`` != 2, normalized l_p-MD with that p and eta = NORMALIZED_MD_ETA[p] (f c / 5)^(p-1)
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
    eta = NORMALIZED_MD_ETA.get(p_dyn, 0.1) * (radius / MAP_THEOREM_SCALE) ** (p_dyn - 1)
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
