r"""jta24: directional convergence of l_p-AttGD to the l_p-AttSVM, its rate, and the synthetic
Bregman-divergence curves.

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581: main-body directional-convergence and rate
theorems (reconstructed; proofs in appendix Lemmas 19-30 of the copy) and the synthetic
experiment (directional Bregman divergence D_psi(W_mm/||W_mm||_p, W(k)/||W(k)||_p) per (q, p)).

All three claims read the shared run `normalized_mirror_runs`: normalized l_p-AttGD for
p in {1.5, 1.75, 2, 3} (eta 0.1, 0.1, 0.1, 1.0) on the same 5 synthetic instances from W(0) std 1,
2000 steps (quick tier); alpha = the tokens selected by the last iterate; W_mm[q] = the
certified l_q-AttSVM for alpha.  Self-attention query and exponential loss (see setup.py).
"""
import numpy as np

from theorycheck import Control, claim
from theorycheck.data.selection import stable_tokens
from theorycheck.optim.directions import divergence_curves, norms_along

from .setup import (
    DIRECTION_STEPS,
    FAR_Q,
    P_VALUES,
    PAPER,
    SIZES,
    normalized_mirror_runs,
    own_index,
    per_p,
    reference_index,
    steps,
    wrong_token_references,
)

SHARED_SIZES = {tier: dict(SIZES[tier], steps=DIRECTION_STEPS[tier]) for tier in SIZES}


@claim(
    f"{PAPER}.thm.lp_direction",
    source="main-body directional-convergence theorem (reconstructed) and synthetic experiment",
    statement="From a generic initialization, l_p-AttGD selects locally optimal tokens alpha, "
              "||W(k)||_p grows, and W(k)/||W(k)||_p converges to the l_p-AttSVM direction for "
              "alpha (not to the l_q one, q != p): the implicit bias depends on p.",
    provenance="derived",
    controls={
        "wrong_p": Control("reference", breaks=["median D to the l_p-AttSVM at K, per p"],
                           description="the l_q-AttSVM with a far q (3 for p < 3, 1.5 for p = 3) "
                                       "as the reference"),
        "wrong_tokens": Control("reference", breaks=["median D to the l_p-AttSVM at K, per p"],
                                description="the l_p-AttSVM of alpha with one sample moved to "
                                            "its lowest-score token"),
    },
    sizes={"quick": SHARED_SIZES["quick"], "full": SHARED_SIZES["full"]},
)
def test_lp_direction(tc):
    r"""Measure, per run j (5 instances x 4 values of p): D^(q)_k = D_psi_p(W_mm[q]/||.||_p,
    W(k)/||W(k)||_p) at k = K/2 and K.  Conclusions (thresholds chosen on --tc-seed 1 and 2,
    then checked on 0):
    * alpha locally optimal (its support tokens score below alpha_i): binomial at p = 0.8 over
      the 20 runs (power: rejects with probability 0.8 when the true rate is about 0.5);
    * median over instances of D^(p)_K <= 1e-2 for every p (observed 3e-4 to 6e-3; the spec's
      5e-3 was for the logistic loss with 3000 steps at p = 3);
    * median of min_{q != p} D^(q)_K / D^(p)_K >= 2 for every p (observed 2.5 to 40);
    * D^(p)_K < D^(p)_{K/2}: binomial at p = 0.8;
    * ||W(K)||_p >= 1.2 ||W(K/2)||_p in every run (growth without bound, as a shape: normalized MD
      moves the dual iterate by eta per step, so ||W||_p^(p-1) ~ eta k and the ratio tends to
      2^(1/(p-1)) >= 1.41 for p <= 3; 1.2 leaves room for the transient while the tokens are
      still being chosen.  ||W||_p need not be monotone step by step outside the cone, and on
      seed 1 it is not);
    * the dual norm ||grad psi(W)||_q = ||W||_p^(p-1) grows by at most eta per step between K/2
      and K, every run (exact: the normalized step moves the dual iterate by eta G/||G||_q, of
      q-norm eta; allowance 1e-9 relative).  Observed 0.99-0.999 eta for p >= 1.75 once aligned,
      0.5-0.7 eta for p = 1.5 (recorded);
    * per run, on the runs meeting the theorem's hypotheses (alpha locally optimal and stable
      over the last 30% of steps; their number is a precondition, >= 10 of 20): D^(p)_K <= 2e-2
      and D^(p)_K < min_{q != p} D^(q)_K, binomial at p = 0.8.
    """
    runs = tc.use(normalized_mirror_runs)
    p = runs["p"]
    J = len(p)
    t = runs["t"]
    half = np.searchsorted(t, t[-1] // 2)
    ref = reference_index(p, tc.control)
    D = np.stack([divergence_curves(runs["W"][[half, -1]], runs["W_mm"][iq], p) for iq in range(len(P_VALUES))])
    own = D[ref, :, np.arange(J)]                                   # (J, 2)
    if tc.control == "wrong_tokens":
        own = divergence_curves(runs["W"][[half, -1]], wrong_token_references(tc, runs), p).T
    others = np.array([np.min(np.delete(D[:, -1, j], ref[j])) for j in range(J)])
    ratio = others / own[:, -1]
    hypotheses = runs["locally_optimal"] & stable_tokens(runs["t"], runs["tokens"], runs["alpha"])
    r = norms_along(runs["W"][[half, -1]], p)
    tc.record("D^(p)_K per run", own[:, -1])
    tc.record("nearest wrong / correct per run", ratio)
    tc.record("globally optimal alpha per run", runs["globally_optimal"])
    tc.precondition.at_least("runs with stable, locally optimal tokens", int(hypotheses.sum()), J // 2)
    tc.conclusion.binomial("selected tokens are locally optimal", runs["locally_optimal"], p=0.8)
    tc.conclusion.at_most("median D to the l_p-AttSVM at K, per p", per_p(own[:, -1], p), 1e-2)
    tc.conclusion.at_least("median nearest-wrong / correct ratio, per p", per_p(ratio, p), 2.0)
    tc.conclusion.binomial("D decreases from K/2 to K", own[:, -1] < own[:, 0], p=0.8)
    tc.conclusion.at_least("||W||_p grows: ||W(K)||_p / ||W(K/2)||_p, every run", r[1] / r[0], 1.2)
    dual_rate = (r[1] ** (p - 1) - r[0] ** (p - 1)) / (steps(p) * (t[-1] - t[half]))
    tc.record("dual-norm growth per step / eta, K/2 to K, per run", dual_rate)
    tc.conclusion.at_most("dual-norm growth per step <= eta (triangle inequality), every run", dual_rate.max(), 1 + 1e-9)
    strict = (own[:, -1] <= 2e-2) & (own[:, -1] < others)
    tc.conclusion.binomial("per run (hypotheses met): D small and below every wrong q",
                           strict[hypotheses], p=0.8)


@claim(
    f"{PAPER}.thm.rate",
    source="main-body rate theorem (reconstructed); Lemma 29 eq. (28), Lemma 30",
    statement="The directional Bregman divergence decays at least polynomially in ||W(k)||_p: "
              "D_k <= C h_p(||W(k)||_p) with h_p(r) = r^(1-p) (p < 2), (log r)^2/r (p = 2), "
              "log r / r (p > 2), hence poly-logarithmically in k for plain l_p-AttGD.",
    provenance="inferred",
    controls={
        "wrong_p": Control("reference", breaks=["median slope of log D vs log ||W||_p, per p"],
                           description="the divergence to the far wrong l_q-AttSVM (it levels off)"),
        "faster_rate": Control("statement", breaks=["median slope of log D vs log ||W||_p, per p"],
                               description="a rate three times faster than the exponent "
                                           "min(1, p-1) (slope <= -3 min(1, p-1))"),
    },
    sizes={"quick": SHARED_SIZES["quick"], "full": SHARED_SIZES["full"]},
)
def test_rate(tc):
    r"""The theorem's h_p has log-log slope -(p-1) (p < 2) and -1 + o(1) (p >= 2) in r = ||W||_p,
    and the constant C is lost, so the rate is tested as a shape: on the 12 log-spaced
    checkpoints in [K/20, K], the least-squares slope s of log D^(p)_k against log r_k over
    the last 6 must satisfy s <= -min(1, p-1)/2 (half the bound's exponent: the log factors of
    h_p flatten the slope at moderate r), as the median over the runs of each p that meet the
    hypotheses (alpha locally optimal and stable over the last 30%; count >= 10 of 20 is a
    precondition); D^(p)_k decreasing over those checkpoints in >= 80% of the runs (binomial).
    The proven rate is loose: the fitted exponents are recorded; on seeds 1 and 2 the medians
    were -1.0, -1.5, -1.95, -2.0 for p = 1.5, 1.75, 2, 3, i.e. D ~ r^(-2 min(1, p-1)), twice the
    exponent of h_p.  Normalized MD (the paper's experimental algorithm) is used: plain MD
    grows ||W|| only like log k, which makes the window of r too short to fit in the quick tier.
    """
    runs = tc.use(normalized_mirror_runs)
    p, t = runs["p"], runs["t"]
    steps = t[-1]
    marks = np.searchsorted(t, np.geomspace(steps / 20, steps, 12).round().astype(int))[6:]
    ref = reference_index(p, tc.control)
    D = np.stack([divergence_curves(runs["W"][marks], runs["W_mm"][iq], p) for iq in range(len(P_VALUES))])
    own = D[ref, :, np.arange(len(p))].T                           # (6, J)
    r = norms_along(runs["W"][marks], p)
    slopes = np.array([np.polyfit(np.log(r[:, j]), np.log(own[:, j]), 1)[0] for j in range(len(p))])
    hypotheses = runs["locally_optimal"] & stable_tokens(runs["t"], runs["tokens"], runs["alpha"])
    factor = 3.0 if tc.control == "faster_rate" else 0.5
    bound = np.array([-factor * min(1.0, pv - 1) for pv in P_VALUES])
    medians = np.array([np.median(slopes[(p == pv) & hypotheses]) for pv in P_VALUES])
    tc.record("fitted slopes per run", slopes)
    tc.record("median fitted slope / min(1, p-1), per p", medians / np.array([min(1, pv - 1) for pv in P_VALUES]))
    tc.precondition.at_least("runs with stable, locally optimal tokens", int(hypotheses.sum()), len(p) // 2)
    tc.conclusion.at_most("median slope of log D vs log ||W||_p, per p", medians, bound)
    decreasing = np.all(np.diff(own, axis=0) < 0, axis=0)
    tc.conclusion.binomial("D decreasing over the window", decreasing[hypotheses], p=0.8)
    for pv in P_VALUES:
        j = int(np.flatnonzero(p == pv)[0])
        tc.curve("rate", f"p={pv:g}", r[:, j], own[:, j], xscale="log", yscale="log",
                 xlabel="||W(k)||_p", ylabel="D_psi")


@claim(
    f"{PAPER}.exp.synthetic_bregman_curves",
    source="synthetic experiment (directional Bregman divergence per (q, p); authors' code)",
    statement="On the synthetic data, the divergence of l_p-AttGD's direction from the "
              "l_q-AttSVM decays for q = p and levels off for q != p.",
    provenance="stated",
    controls={
        "gaussian_reference": Control("reference", breaks=["q = p curve decays from K/2 to K"],
                                      description="a Gaussian matrix in place of the l_p-AttSVM"),
    },
    sizes={"quick": SHARED_SIZES["quick"], "full": SHARED_SIZES["full"]},
)
def test_synthetic_bregman_curves(tc):
    r"""Mean over instances of D^(q)_k for every (q, p), q, p in {1.5, 1.75, 2, 3}, drawn per p
    (the paper's figure: mean over 100 data sets; here 5, scaled down).  What the figure shows,
    checked (thresholds from seeds 1, 2): for every p, (a) at K the q = p curve is the lowest of
    the four; (b) it decays: the median over instances of D^(p)_K / D^(p)_{K/2} <= 0.6 (observed
    0.1-0.55); (c) the far wrong q (3, or 1.5 for p = 3) levels off: median of
    D^(q)_K / D^(q)_{K/2} >= 0.7 (observed 0.8-1.0).  The control replaces the l_p-AttSVM by a
    Gaussian matrix (its divergence neither decays nor is the lowest).  The tokens are those
    of each run's own last iterate for every q (the spec's convention).
    """
    runs = tc.use(normalized_mirror_runs)
    p, t = runs["p"], runs["t"]
    refs = runs["W_mm"].copy()
    own = own_index(p)
    if tc.control == "gaussian_reference":
        noise = tc.rng("gaussian").standard_normal(refs.shape[1:])
        refs[own, np.arange(len(p))] = noise
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
