r"""The set-up of jta24: its synthetic data, its assumptions, its sizes and the certified references.

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

from theorycheck.data import AssumptionReport, TokenSelectionData, opt_is_argmax, token_scores, trial_generators
from theorycheck.solvers import solve_lp_wsvm
from theorycheck.solvers.svm import wsvm_constraint_factors
from theorycheck.tails import TailBound, sphere_gap_tail
from theorycheck.tolerance import unit_roundoff

PAPER = "jta24"
SIZES = {"quick": dict(n=6, T=8, d=10, instances=5), "full": dict(n=6, T=8, d=10, instances=20)}


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


def score_tie_resolution(d: int) -> float:
    """The round-off of a token score ``y x^T v`` of two unit vectors of ``R^d`` computed in float64
    (the dot product's ``d u`` and the normalizations'), doubled for a difference of two scores:
    a top-two gap above it is resolved, so the designated token is the unique argmax."""
    return 4 * (d + 2) * unit_roundoff("float64")


def score_tie_tail(sizes) -> TailBound:
    """The probability that some sample's two token scores lie within `score_tie_resolution` of each
    other on a draw of the tier's instances (`theorycheck.tails.sphere_gap_tail`: tokens and head
    are uniform unit vectors, the label a common sign; every pair of a sample's T tokens)."""
    d, pairs = sizes["d"], sizes["instances"] * sizes["n"] * sizes["T"] * (sizes["T"] - 1) // 2
    eps = score_tie_resolution(d)
    return TailBound(sphere_gap_tail(d, pairs, eps), (
        f"{pairs} pairs of token scores y x^T v of uniform unit vectors in R^{d}: each difference has a "
        f"density at most c_d, so it lies within {eps:.1e} with probability at most 2 eps c_d (union bound)"))


#: the paper-wide stream of the synthetic instances: ``run.rng(INSTANCES)`` in a shared run,
#: ``tc.paper_rng(INSTANCES)`` in a claim (the same numbers)
INSTANCES = "synthetic"


def instances(rng, sizes):
    """The paper-wide synthetic instances of a tier drawn from ``rng``, the generator of the
    stream `INSTANCES` (so every claim and shared run sees the same instances): ``(data, W0)``."""
    return synthetic(rng, sizes["instances"], sizes["n"], sizes["T"], sizes["d"])


def lowest_token_svm(data, k: int, p: float):
    """(alpha_bad, W_mm of alpha_bad): alpha_bad_i = argmin_t gamma_{i,t} (not locally optimal)
    and its certified l_p-AttSVM, instance k of ``data``."""
    bad = data.scores()[k].argmin(-1)
    return bad, solve_lp_wsvm(data.X[k], bad, float(p), name="synthetic", trial=int(k)).W


CERT_P = (1.1, 1.25, 1.5, 1.75, 2.0, 3.0, 4.0)
WRONG_P = {False: 4.5, True: 1.35}
"""The exponent certified in place of p under the ``wrong_p`` control, for p < 3 and p >= 3."""


def certificates(tc, data):
    """Per (instance, p of CERT_P): (X, opt, p, W, lambda) with W the solver's certified
    l_p-AttSVM for opt (replaced under the controls: ``perturbed``, a feasible non-optimal W;
    ``wrong_p``, the solution of WRONG_P[p >= 3], an exponent outside CERT_P, so a program the
    claim does not solve) and lambda its norm-form multipliers.  The perturbation draws from its
    own stream, in the control's case only."""
    rng = tc.rng("perturbation") if tc.control == "perturbed" else None
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
                W = solve_lp_wsvm(X, opt, WRONG_P[p >= 3], name="synthetic", trial=k).W
            out.append((X, opt, p, W, sol.multipliers))
    return out
