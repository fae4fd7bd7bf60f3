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

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.data import AssumptionReport, TokenSelectionData, opt_is_argmax, token_scores, trial_generators
from theorycheck.models import TokenSelection, log_attention
from theorycheck.optim import (
    MirrorDescent,
    bregman,
    directional_bregman,
    dual_exponent,
    lp_norm,
    once_per_iterate,
    potential,
    run_trajectory,
)
from theorycheck.runtime import generator
from theorycheck.solvers import lp_sphere_minimize, solve_lp_usvm, solve_lp_wsvm
from theorycheck.solvers.margin import constraint_values
from theorycheck.solvers.svm import wsvm_constraint_factors

PAPER = "jta24"
SIZES = {"quick": dict(n=6, T=8, d=10, instances=5), "full": dict(n=6, T=8, d=10, instances=20)}
SUPPORT_TOL = 1e-6
"""|m_{i,t} - 1| <= SUPPORT_TOL makes t a support token (margins are certified to ~1e-12)."""
P_VALUES = (1.5, 1.75, 2.0, 3.0)
"""The exponents of the directional-convergence runs (the paper's 1.75, 2, 3, and 1.5)."""
STEP = {1.5: 0.1, 1.75: 0.1, 2.0: 0.1, 3.0: 1.0}
r"""eta of normalized MD per p: the paper's 0.1, and 1.0 for p = 3 (normalized MD with (eta, K)
and (eta/10, 10K) follow the same path up to the first steps, and ||W||_3 grows only like
(eta k)^(1/2))."""
DIRECTION_STEPS = {"quick": 2000, "full": 6000}


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


def selected_tokens(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """argmax_t s_{i,t}(W), the tokens the attention selects, ``(K, n)`` for X (K,n,T,d), W (K,d,d)."""
    return log_attention(torch.as_tensor(X), torch.as_tensor(W)).argmax(-1).numpy()


def support_tokens(X: np.ndarray, alpha: np.ndarray, W_mm: np.ndarray) -> np.ndarray:
    r"""Boolean (n, T): t is a support token of sample i, |m_{i,t}(W_mm) - 1| <= SUPPORT_TOL,
    m_{i,t} = (x_{i,alpha_i} - x_{i,t})^T W_mm x_{i,0}, t != alpha_i (one instance)."""
    A, B, index = wsvm_constraint_factors(X, alpha)
    mask = np.zeros(X.shape[:2], dtype=bool)
    tight = np.abs(constraint_values(A, B, W_mm) - 1) <= SUPPORT_TOL
    mask[index[tight, 0], index[tight, 1]] = True
    return mask


def locally_optimal(X, scores, alpha, W_mm) -> bool:
    r"""alpha is locally optimal (Definition 3, as in Tarzanagh et al.): every support token of
    W_mm (the l_p-AttSVM solution for alpha) scores strictly below alpha_i, one instance."""
    support = support_tokens(X, alpha, W_mm)
    own = scores[np.arange(len(alpha)), alpha][:, None]
    return bool(np.all(~support | (scores < own)))


@shared_run(sizes={"quick": dict(SIZES["quick"], steps=DIRECTION_STEPS["quick"]),
                   "full": dict(SIZES["full"], steps=DIRECTION_STEPS["full"])})
def normalized_mirror_runs(run):
    r"""Normalized l_p-AttGD for every p of P_VALUES on every instance, side by side.

    Trial j = (index of p) * K + k.  Records W at 0, 12 log-spaced checkpoints in [steps/20,
    steps], 0.5, 0.7 steps and at 40 evenly spaced ones (for the plots); then alpha_j = the
    tokens selected by the last iterate and the certified l_q-AttSVM solution W_mm[q][j] for
    alpha_j and every q of P_VALUES (solved once per distinct (instance, alpha, q)).
    """
    s = run.sizes
    data, W0 = synthetic(run.rng("synthetic"), s["instances"], s["n"], s["T"], s["d"])
    K, steps, P = data.K, s["steps"], len(P_VALUES)
    tensors = data.to_torch(run.device, run.dtype)
    model = TokenSelection(tensors.X, tensors.y, tensors.u).tiled(P)
    p = [pv for pv in P_VALUES for _ in range(K)]
    step = MirrorDescent(model, p, [STEP[pv] for pv in p], normalized=True)
    marks = np.unique(np.concatenate([
        [0], np.geomspace(steps / 20, steps, 12).round(), np.linspace(0, steps, 41).round(),
        [steps // 2, round(0.7 * steps)]]).astype(int))
    W0_t = run.tensor(np.tile(W0, (P, 1, 1)))
    traj = run_trajectory(step, {"W": W0_t}, steps, {"W": lambda it: it.W}, checkpoints=marks)
    W = traj["W"]
    X = np.tile(data.X, (P, 1, 1, 1))
    alpha = selected_tokens(X, W[-1])
    solutions = {}
    W_mm = np.empty((P, P * K) + W0.shape[1:])
    for j in range(P * K):
        for iq, q in enumerate(P_VALUES):
            key = (j % K, tuple(alpha[j]), q)
            if key not in solutions:
                solutions[key] = solve_lp_wsvm(data.X[j % K], alpha[j], q, name="synthetic", trial=j % K).W
            W_mm[iq, j] = solutions[key]
    scores = data.scores()
    own = np.array([P_VALUES.index(pv) for pv in p])
    local = np.array([locally_optimal(data.X[j % K], scores[j % K], alpha[j], W_mm[own[j], j])
                      for j in range(P * K)])
    tokens = np.stack([selected_tokens(X, Wc) for Wc in W])
    return dict(t=traj.t, W=W, p=np.array(p), instance=np.arange(P * K) % K, alpha=alpha,
                W_mm=W_mm, locally_optimal=local, tokens=tokens,
                globally_optimal=np.all(alpha == np.tile(data.opt, (P, 1)), axis=-1))



def instances(runtime, sizes):
    """The paper-wide synthetic instances of a tier, the same as those of
    `normalized_mirror_runs` (stream (base seed, "jta24", "synthetic")): ``(data, W0)``."""
    return synthetic(generator(runtime.seed, PAPER, "synthetic"), sizes["instances"], sizes["n"],
                     sizes["T"], sizes["d"])


FAR_Q = {1.5: 3.0, 1.75: 3.0, 2.0: 3.0, 3.0: 1.5}
"""The far wrong exponent of each p (|q - p| >= 1.25, or the far end of P_VALUES)."""


def divergence_curves(W: np.ndarray, references: np.ndarray, p: np.ndarray) -> np.ndarray:
    r"""D_psi_p(R_j/||R_j||_p, W_c,j/||W_c,j||_p) for iterates W (C, J, d, d) and one reference
    R_j (J, d, d) per run, with each run's own p (J,): shape (C, J)."""
    refs, pt = torch.as_tensor(references), torch.as_tensor(p)
    return np.stack([directional_bregman(refs, torch.as_tensor(Wc), pt).numpy() for Wc in W])


def norms_along(W: np.ndarray, p: np.ndarray) -> np.ndarray:
    """||W_c,j||_p with each run's own p, shape (C, J)."""
    pt = torch.as_tensor(p)
    return np.stack([lp_norm(torch.as_tensor(Wc), pt).numpy() for Wc in W])


def own_index(p: np.ndarray) -> np.ndarray:
    """Index into P_VALUES of every run's p."""
    return np.array([P_VALUES.index(float(x)) for x in p])


def stable_tokens(runs, fraction=0.3) -> np.ndarray:
    """(J,) bool: the selected tokens equal alpha at every checkpoint of the last ``fraction``."""
    start = np.searchsorted(runs["t"], round((1 - fraction) * runs["t"][-1]))
    return np.all(runs["tokens"][start:] == runs["alpha"][None], axis=(0, 2))


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
def sparsity_runs(run, *, q_values=SPARSITY_Q):
    r"""Normalized l_q-AttGD (eta = 0.1) from W(0) = 0 for every q of ``q_values`` on every instance,
    side by side (trial j = iq * K + k); returns the final iterates W (J, d, d) and q (J,)."""
    s = run.sizes
    data, W0 = instances(run.runtime, s)
    K = data.K
    t = data.to_torch(run.device, run.dtype)
    model = TokenSelection(t.X, t.y, t.u).tiled(len(q_values))
    q = [qv for qv in q_values for _ in range(K)]
    step = MirrorDescent(model, q, 0.1, normalized=True)
    W = run.tensor(np.zeros((len(q),) + W0.shape[1:]))
    traj = run_trajectory(step, {"W": W}, s["steps"], {}, checkpoints=[])
    return dict(W=traj.W.cpu().numpy(), q=np.array(q))


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


def safe_gap(X, scores, alpha, W_mm) -> float:
    r"""delta_safe = min{m_{i,t}(W_mm) - 1 : t != alpha_i, gamma_{i,t} >= gamma_{i,alpha_i}} (inf
    if empty), one instance."""
    A, B, index = wsvm_constraint_factors(X, alpha)
    m = constraint_values(A, B, W_mm)
    own = scores[index[:, 0], alpha[index[:, 0]]]
    higher = scores[index[:, 0], index[:, 1]] >= own
    return float(np.min(m[higher] - 1)) if higher.any() else np.inf


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


def restart_hypotheses(data, scores, k: int, alpha, p: float) -> dict:
    """The restart of (instance k, alpha, p) with its certified W_mm and its hypotheses: alpha
    locally optimal at p, delta_safe (`safe_gap`)."""
    W_mm = solve_lp_wsvm(data.X[k], alpha, p, name="synthetic", trial=k).W
    return dict(instance=k, alpha=alpha, p=p, W_mm=W_mm,
                local=locally_optimal(data.X[k], scores[k], alpha, W_mm),
                safe=safe_gap(data.X[k], scores[k], alpha, W_mm))


def meets_restart_hypotheses(trial) -> bool:
    """alpha locally optimal at p and delta_safe >= SAFE_GAP (the local theorem's hypotheses)."""
    return bool(trial["local"] and trial["safe"] >= SAFE_GAP)


@shared_run(sizes={"quick": dict(SIZES["quick"], steps=1000, scale=5.0),
                   "full": dict(SIZES["full"], steps=3000, scale=5.0)})
def local_restarts(run, *, switch_to_lowest=False):
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
    the restart's own alpha and the selected tokens at 31 checkpoints, and the hypotheses."""
    s = run.sizes
    runs = run.use(normalized_mirror_runs)
    data, _ = instances(run.runtime, s)
    scores = data.scores()
    pairs = sorted({(int(k), tuple(a)) for k, a, g in zip(runs["instance"], runs["alpha"],
                                                           runs["globally_optimal"]) if not g})
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
    scale = np.where(safe > 0, np.maximum(s["scale"], COMPETITOR_GAP / np.where(safe > 0, safe, 1.0)), s["scale"])
    eta = [STEP[pv] * (c / s["scale"]) ** (pv - 1) for pv, c in zip(p, scale)]
    step = MirrorDescent(model, p.tolist(), eta, normalized=True)
    marks = np.linspace(0, s["steps"], 31).round().astype(int)
    traj = run_trajectory(step, {"W": run.tensor(scale[:, None, None] * W_mm)}, s["steps"], {"W": lambda it: it.W},
                          checkpoints=marks)
    W = traj["W"]
    X = data.X[idx]
    kept = np.stack([np.all(selected_tokens(X, Wc) == alpha, axis=-1) for Wc in W])
    return dict(p=p, t=traj.t, D=divergence_curves(W, W_mm, p), tokens_kept=kept,
                local=np.array([tr["local"] for tr in trials]), safe=safe, scale=scale, **counts)


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
def joint_runs(run):
    r"""Normalized l_p-JointGD (each block normalized by its own dual norm) on the paper's joint
    example from (W, v) = 0, p in JOINT_P side by side (trial j = p index); exponential loss.
    Records W, v at 0, 1..100 and 40 evenly spaced checkpoints; the selected tokens at each;
    alpha = the tokens of the last iterate; the certified l_p-AttSVM W_mm_alpha and the l_p
    head SVM v_mm_alpha (min ||v||_p s.t. y_i x_{i,alpha_i}^T v >= 1) per p."""
    s = run.sizes
    P = len(JOINT_P)
    X = run.tensor(np.tile(JOINT_X, (P, 1, 1, 1)))
    model = TokenSelection(X, run.tensor(np.tile(JOINT_Y, (P, 1))))
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


def token_assignments(T: int, n: int) -> np.ndarray:
    """All T^n choices of one token per sample, (T^n, n)."""
    return np.stack(np.meshgrid(*[np.arange(T)] * n, indexing="ij"), -1).reshape(-1, n)


PATH_RADII = (2.0, 4.0, 8.0, 16.0)
"""Radii of the regularization path, in units of ||W_mm_opt||_p (the spec's; beyond 16 the
gradient is ~exp(-16) and L-BFGS cannot leave its start)."""


PATH_STOP = 3e-3
"""The path minimization stops once the kept start (the lower loss) of every (instance, p, R) has
relative projected gradient <= PATH_STOP, a third of the claim's precondition 1e-2."""


@shared_run(sizes={"quick": dict(SIZES["quick"], p=(2.0,)),
                   "full": dict(SIZES["full"], p=(1.5, 1.75, 2.0, 3.0))})
def regularization_path(run):
    r"""The regularization path W_R = argmin_{||W||_p <= R} L(W) at R = c ||W_mm_opt||_p, c in
    PATH_RADII, for every instance and p of the tier: two starts per (instance, p, c), the ray
    point R W_mm_opt/||W_mm_opt||_p and a Gaussian direction, minimizing log(L(W) - L_*) on the
    spheres side by side by the library's `lp_sphere_minimize` (L-BFGS, trial weights 1/R, no
    error when it stops short: the claim checks the projected gradients); the lower loss is kept.
    The minimum of the loss over the ball is on the sphere when the radius is large (the loss has
    no finite minimizer).  Returns W (I, C, d, d) with I = (p, instance)
    pairs, its loss, relative projected gradients, the certified W_mm_opt (I, d, d), p (I,),
    instance (I,), and which start won."""
    s = run.sizes
    data, _ = instances(run.runtime, s)
    K, C = data.K, len(PATH_RADII)
    pairs = [(pv, k) for pv in s["p"] for k in range(K)]
    W_mm = np.stack([solve_lp_wsvm(data.X[k], data.opt[k], pv, name="synthetic", trial=k).W for pv, k in pairs])
    p = np.array([pv for pv, _ in pairs])
    M = norms_along(W_mm[None], p)[0]
    rng = run.rng("path starts")
    ray = np.repeat(W_mm[:, None], C, axis=1).reshape((-1,) + W_mm.shape[1:])
    starts = np.concatenate([ray, rng.standard_normal(ray.shape)])        # (2 I C, d, d)
    idx = np.tile(np.repeat([k for _, k in pairs], C), 2)
    R = np.tile((M[:, None] * np.array(PATH_RADII)).ravel(), 2)
    P = np.tile(np.repeat(p, C), 2)
    t = data.to_torch(run.device, run.dtype)
    model = TokenSelection(t.X[idx], t.y[idx], t.u[idx])
    half = len(ray)

    def kept_converged(value, projected):
        kept = np.where(value[:half] <= value[half:], projected[:half], projected[half:])
        return kept.max() <= PATH_STOP

    def log_excess_and_gradient(W):
        value = model.log_excess_loss({"W": W})
        g = model.scaled_gradient({"W": W})["W"]
        return value, torch.exp(g.log_scale - value)[:, None, None] * g.direction

    # weights 1/R: near the path log(L - L_*) is ~linear in R, so its curvature in U grows like R
    found = lp_sphere_minimize(log_excess_and_gradient, R, P, starts, weights=1 / R, converged=kept_converged,
                               strict=False)
    W, value, projected = found.W, found.value, found.projected_gradient
    ray_wins = value[:half] <= value[half:]
    pick = np.where(ray_wins, np.arange(half), np.arange(half) + half)
    shape = (len(pairs), C)
    return dict(W=W[pick].reshape(shape + W_mm.shape[1:]), log_excess=value[pick].reshape(shape),
                projected=projected[pick].reshape(shape), ray_start_won=ray_wins.reshape(shape),
                W_mm=W_mm, p=p, instance=np.array([k for _, k in pairs]), radii=np.array(PATH_RADII))
