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

from theorycheck import Calibrated, Control, claim
from theorycheck.data.selection import stable_tokens
from theorycheck.optim.directions import divergence_curves, norms_along

from .direction import (
    AUTHORS_DECAY_DECISION,
    AUTHORS_DECAY_RATE,
    AUTHORS_INSTANCES,
    AUTHORS_LEVEL_RATE,
    AUTHORS_LOWEST_RATE,
    AUTHORS_RATIOS,
    BREGMAN_CALIBRATION,
    DECAY_DECISION,
    DECAY_RATIO,
    DIRECTION_SIZES,
    LEVEL_ALPHA,
    LEVEL_DECISION,
    LEVEL_RATE,
    LEVEL_RATE_DECISION,
    LEVEL_RATIO,
    LOWEST_ALPHA,
    LOWEST_RATE,
    LOWEST_RATE_DECISION,
    P_VALUES,
    bregman_curve_checks,
    normalized_mirror_runs,
    per_p,
    reference_index,
    steps,
    wrong_token_references,
)
from .local import per_token_set
from .plain_descent import rate_profile
from .setup import PAPER

SHARED_SIZES = DIRECTION_SIZES
#: The rate claimed for "||W(K)||_p >= 1.2 ||W(K/2)||_p" over the runs meeting the hypotheses, and
#: for "||W(K)||_p > ||W(K/2)||_p" over all runs (`GROWS`).
GROWTH_P0 = 0.9
GROWS = "||W||_p grows: ||W(K)||_p > ||W(K/2)||_p, runs"
"""The theorem's "||W(k)||_p grows" at the finite K, a binomial over all runs at GROWTH_P0 (level 0.05).
The statement is asymptotic (the norm diverges); the growth over one window [K/2, K] follows from
Lemma 22 (||W(k+1)||_p^(p-1) >= ||W(k)||_p^(p-1) + eta <-G, W(k)> / (||W(k)||_p ||G||_q) for the
normalized step) only while <-grad L(W(k)), W(k)> >= 0, which holds in the cone but not along a run
whose tokens still switch after K/2 (a generic start; the hypotheses are measured, not assumed, on
all runs).  So "every run at K" claims more than the theorem, and the window's growth is a rate over
the runs: GROWTH_P0, the rate of its stronger in-cone form (ratio >= 1.2), chosen before any seed."""
SUBSET_POWER = ("quick tier: the runs meeting the hypotheses are a subset of the 60 (power 0.8 needs "
                "about 60); the full tier's 80 runs reach power 0.88 or more")

PER_INSTANCE = "per instance (its runs meeting the hypotheses): D small and below every wrong q"
"""The per-run decision "D^(p)_K <= 2e-2 and below every wrong q" read per instance: an instance
succeeds when each of its runs meeting the hypotheses does (instances with none are no trial).  The
runs of one instance (its 4 values of p) share its data and fail together (the per-run counts were
over-dispersed: calibration record), so they are not the binomial's independent trials; the instances
are."""
INSTANCE_POWER = ("the trials are the instances with a run meeting the hypotheses (at most 15 quick, 20 "
                  "full), not their runs, which fail together; the controls break the median decisions, "
                  "on every instance")

SETTLED = "runs with stable, locally optimal tokens"
HALF = 0.5
"""At least half of the runs meet the hypotheses (`_settled`): the exact one-sided binomial test of
P >= HALF at level HALF rejects exactly the counts below J/2 (P[Bin(J, 1/2) <= J/2 - 1] < 1/2 <=
P[Bin(J, 1/2) <= J/2] for even J: 60 runs quick, 80 full), the decision `at_least(count, J // 2)`
was; as a binomial its calibration row is bounded through the runs (pooled trials) instead of by
counting seeds."""


def _settled(tc, runs):
    """Runs meeting the theorem's measurable hypotheses: alpha locally optimal and selected over
    the last 30% of the steps; the precondition that at least half of the runs do (`HALF`)."""
    settled = runs["locally_optimal"] & stable_tokens(runs["t"], runs["tokens"], runs["alpha"])
    tc.precondition.binomial(SETTLED, settled, p=HALF, alpha=HALF)
    return settled


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
                                       "as the reference", constants={"far_q": 3.0, "far_q_at_3": 1.5}),
        "wrong_tokens": Control("reference", breaks=["median D to the l_p-AttSVM at K, per p"],
                                description="the l_p-AttSVM of alpha with one sample moved to "
                                            "its lowest-score token"),
    },
    constants={"growth_ratio": 1.2, "p0": 0.8, "growth_p0": GROWTH_P0},
    calibration=[
        "D thresholds (median D <= 1e-2, nearest-wrong/correct >= 2, per-run D <= 2e-2) chosen on "
        "seeds 1, 2 and checked on seed 0 with 5 instances (before the instances were raised to 15).",
        "growth ratio 1.2: chosen on seeds 1, 2 as an every-run check; seed 9 failed it on one p = 3 "
        "run whose tokens were not yet stable (ratio 1.17, hypotheses not met).  Re-decided for the "
        "theorem's reason: every run must grow (ratio > 1, the statement), the 1.2 is required on "
        "the runs meeting the hypotheses (in the cone the dual norm grows at about eta per step); "
        "checked with 15 instances on seeds 0-19.",
        "instances 5 -> 15 in the quick tier (60 runs) for binomial power >= 0.8 at p = 0.8.",
        "growth ratio 1.2 'every run meeting the hypotheses' -> a binomial at GROWTH_P0 = 0.9 "
        "(2026-11-28 d): over the unseen block 955297912-955297931 (1200 runs, all of them) the "
        "ratio's lower tail is not normal: at p = 3 mean 1.421, sd 0.04 (the asymptotic "
        "2^(1/2) = 1.414), yet 3 runs at 1.212-1.218 (about 5 sd below), so a run below 1.2 has a "
        "rate near 1e-3 and 'every one of about 58 runs' fails a seed at a rate of a few 1e-2.  "
        "1.2 is this claim's derivation, not the paper's statement, so the decision is the rate: at "
        "a per-run rate of 0.997 the binomial at 0.9 fails with probability far below 1e-10.",
        Calibrated(
            decision="in the cone: ||W(K)||_p / ||W(K/2)||_p >= 1.2 on the runs meeting the hypotheses",
            threshold="binomial at GROWTH_P0 = 0.9 (level 0.05), the ratio 1.2 unchanged",
            calibration_seeds="955297912-955297931", validation_seeds="18000-18049",
            how="the rate was read off the unseen sweep block (20 seeds, after that sweep; nothing "
                "chosen beyond replacing 'every run' by the rate); validation: 2,907 runs meeting "
                "the hypotheses over 50 seeds (53 to 60 a seed), none below 1.2; over all 3,000 runs "
                "2 below 1.2 (1.078, 1.152), neither meeting the hypotheses; p = 3 ratios mean "
                "1.428, sd 0.038 (the asymptotic 2^(1/2)); both controls failed as declared on 50 "
                "of 50"),
        "2026-11-30 h12 (issue 31): 'every run grows' (the least ||W(K)||_p - ||W(K/2)||_p over the runs, "
        "counted at 0.058 on 66000-66049, Shapiro-Wilk p 3e-7) -> GROWS, a binomial over all runs at "
        "GROWTH_P0 (level 0.05), for Lemma 22's reason (its docstring); nothing chosen on data.  Block "
        "114000-114049 (that change alone): 0 of 50 failed, 3000 of 3000 runs grew (pooled trials 3.2e-22); "
        "the row was 6.2e-4 through 'per run (hypotheses met): D small and below every wrong q', whose "
        "per-run counts were over-dispersed (Pearson p 5e-6: 9 failing runs of 2912, three of them one "
        "instance of seed 114019 at different p; beta-binomial), so the instance became its trial "
        "(PER_INSTANCE; p = 0.8 unchanged).",
        "2026-11-30 h12: validation block 114100-114149 at both changes (nothing chosen on data): 0 of 50 "
        "failed; 3000 of 3000 runs grew (fewest 60 of 60 a seed), 740 of 750 instances met PER_INSTANCE "
        "(fewest 13 of 15, dispersion p 0.41); claim row 5.0e-5 (the dual-norm growth 2.7e-5 and the "
        "nearest-wrong ratio 2.3e-5, normal tails; GROWS 3.2e-22, PER_INSTANCE 1.6e-8, pooled trials), "
        "wrong_p 3.3e-33, wrong_tokens 3.4e-13.",
    ],
    sizes={"quick": SHARED_SIZES["quick"], "full": SHARED_SIZES["full"]},
)
def test_lp_direction(tc):
    r"""Measure, per run j (instances x 4 values of p): D^(q)_k = D_psi_p(W_mm[q]/||.||_p,
    W(k)/||W(k)||_p) at k = K/2 and K.  Conclusions:
    * alpha locally optimal (its support tokens score below alpha_i): binomial at p = 0.8 over
      all runs;
    * median over instances of D^(p)_K <= 1e-2 for every p (the spec's 5e-3 was for the logistic
      loss with 3000 steps at p = 3; the exponential loss converges more slowly in direction);
    * median of min_{q != p} D^(q)_K / D^(p)_K >= 2 for every p (the l_p SVM is the nearest by a
      factor, not by round-off);
    * D^(p)_K < D^(p)_{K/2}: binomial at p = 0.8 over all runs;
    * ||W||_p grows: ||W(K)||_p > ||W(K/2)||_p, binomial at GROWTH_P0 over all runs (the statement:
      the norm diverges; over the finite window [K/2, K] Lemma 22 gives growth only while
      <-G, W> >= 0, so outside the cone it holds at a rate: `GROWS`);
    * in the cone it grows at the rate of the step: on the runs meeting the hypotheses (alpha
      locally optimal and stable over the last 30% of steps; a precondition: at least half
      of the runs meet them, the binomial at p = 1/2, level 1/2 of `HALF`) ||W(K)||_p >= 1.2 ||W(K/2)||_p, binomial at GROWTH_P0 = 0.9 (a run
      whose iterate leaves the cone between K/2 and K grows less; its rate is in the
      calibration record).  Normalized MD moves the dual iterate
      by eta G/||G||_q per step; once the gradient is aligned with grad psi(W) (inside the cone)
      ||W||_p^(p-1) grows by about eta per step, so the ratio tends to 2^(1/(p-1)) >= 1.41 for
      p <= 3; 1.2 leaves room for the offset ||W(0)||_p.  Outside the cone (tokens still
      switching) the alignment and so the growth rate can be lower: only growth is claimed there;
    * the dual norm ||grad psi(W)||_q = ||W||_p^(p-1) grows by at most eta per step between K/2
      and K, every run (exact: the normalized step moves the dual iterate by eta G/||G||_q, of
      q-norm eta; allowance tc.tol("iterative") relative to 1);
    * per instance, on the runs meeting the hypotheses: D^(p)_K <= 2e-2 and D^(p)_K < min_{q != p}
      D^(q)_K at each of its runs that meet them, binomial at p = 0.8 over the instances with such a
      run (`PER_INSTANCE`: the runs of one instance share its data and fail together).
    Binomials over all runs have power >= 0.8 at p = 0.65 (60 runs quick, 80 full); the subset
    binomial states its power.
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
    hypotheses = _settled(tc, runs)
    r = norms_along(runs["W"][[half, -1]], p)
    tc.record("D^(p)_K per run", own[:, -1])
    tc.record("nearest wrong / correct per run", ratio)
    tc.record("globally optimal alpha per run", runs["globally_optimal"])
    tc.record("||W(K)||_p / ||W(K/2)||_p per run", r[1] / r[0])
    tc.conclusion.binomial("selected tokens are locally optimal", runs["locally_optimal"], p=0.8)
    tc.conclusion.at_most("median D to the l_p-AttSVM at K, per p", per_p(own[:, -1], p), 1e-2)
    tc.conclusion.at_least("median nearest-wrong / correct ratio, per p", per_p(ratio, p), 2.0)
    tc.conclusion.binomial("D decreases from K/2 to K", own[:, -1] < own[:, 0], p=0.8)
    tc.conclusion.binomial(GROWS, r[1] > r[0], p=GROWTH_P0)
    tc.conclusion.binomial("in the cone: ||W(K)||_p / ||W(K/2)||_p >= 1.2 on the runs meeting the hypotheses",
                           (r[1] / r[0])[hypotheses] >= 1.2, p=GROWTH_P0, low_power=SUBSET_POWER)
    dual_rate = (r[1] ** (p - 1) - r[0] ** (p - 1)) / (steps(p) * (t[-1] - t[half]))
    tc.record("dual-norm growth per step / eta, K/2 to K, per run", dual_rate)
    tc.conclusion.at_most("dual-norm growth per step <= eta (triangle inequality), every run", dual_rate.max(), 1.0,
                          margin=tc.tol("iterative"))
    strict = (own[:, -1] <= 2e-2) & (own[:, -1] < others)
    tc.conclusion.binomial(PER_INSTANCE, per_token_set(runs["instance"][hypotheses], strict[hypotheses]),
                           p=0.8, low_power=INSTANCE_POWER)


@claim(
    f"{PAPER}.thm.rate",
    source="main-body rate theorem (reconstructed); Lemma 29 eq. (28), Lemma 30",
    statement="The directional Bregman divergence decays at least polynomially in ||W(k)||_p: "
              "D_k <= C h_p(||W(k)||_p) with h_p(r) = r^(1-p) (p < 2), (log r)^2/r (p = 2), "
              "log r / r (p > 2), hence poly-logarithmically in k for plain l_p-AttGD.",
    provenance="inferred",
    controls={
        "wrong_p": Control("reference", breaks=["median slope of log D vs log ||W||_p, per p"],
                           description="the divergence to the far wrong l_q-AttSVM of the shared run "
                                       "(it levels off)"),
        "wrong_tokens": Control("reference", breaks=["median slope of log D vs log ||W||_p, per p"],
                                description="the divergence to the l_p-AttSVM of alpha with one sample "
                                            "moved to its lowest-score token (solved in the control's "
                                            "case: not locally optimal, so D levels off)"),
    },
    calibration=[
        "slope bound: was -min(1, p-1)/2 (half the exponent, chosen on seeds 1, 2); replaced by the "
        "log-log slope of h_p itself over the same window (no free factor); not re-tuned.",
        "the anchored plain-MD check (D_K <= D_k0 h_p(r_K)/h_p(r_k0)) was removed after the review: "
        "over [K/10, K] plain MD moves ||W||_p by a factor ~1.3 only and it held against a wrong "
        "reference too, so it could not fail; the factor-3 faster_rate control (next to an observed "
        "factor ~2) was replaced by wrong_tokens.",
    ],
    sizes=SHARED_SIZES,
)
def test_rate(tc):
    r"""The constant C is lost, so the rate is tested as a shape, on two algorithms.

    Normalized MD (the paper's experimental algorithm; `normalized_mirror_runs`): on the 12
    log-spaced checkpoints in [K/20, K], the least-squares slope s of log D^(p)_k against log r_k
    (r = ||W||_p) over the last 6 must be at most the slope of log h_p(r_k) against log r_k over
    the same checkpoints (h_p's own log-log slope: -(p-1) for p < 2; -1 + 2/log r (p = 2) and
    -1 + 1/log r (p > 2) at the window's r), as the median over the runs of each p that meet
    the hypotheses (alpha locally optimal and stable over the last 30%; a precondition: at
    least half of the runs meet them, the binomial of `HALF`).  D^(p)_k decreasing over those checkpoints: binomial at p = 0.8 over
    the runs meeting the hypotheses.

    Plain MD (the theorem's algorithm) is not tested here: its norm grows only like log k
    (Lemma 30), so over any affordable run r changes by a factor ~1.3, too little for a slope,
    and an anchored bound held against a wrong reference too (it could not fail).  Its per-step
    ingredients are tested on plain MD by Lemmas 27, 29 and 30.  The fitted decay is faster than
    h_p (the records hold the slopes): the bound is what is tested.
    Controls: the far wrong l_q-AttSVM of the shared run as reference (discrimination: the same
    runs against another of their references), and the l_p-AttSVM of a wrong token choice
    (alpha with one sample moved to its lowest-score token), solved in the control's case: the
    divergence to either levels off, so the slope is far above h_p's.
    """
    runs = tc.use(normalized_mirror_runs)
    p, t = runs["p"], runs["t"]
    steps = t[-1]
    marks = np.searchsorted(t, np.geomspace(steps / 20, steps, 12).round().astype(int))[6:]
    refs = runs["W_mm"][reference_index(p, tc.control), np.arange(len(p))]
    if tc.control == "wrong_tokens":
        refs = wrong_token_references(tc, runs)
    own = divergence_curves(runs["W"][marks], refs, p)                # (6, J)
    r = norms_along(runs["W"][marks], p)
    slopes = np.array([np.polyfit(np.log(r[:, j]), np.log(own[:, j]), 1)[0] for j in range(len(p))])
    h_slopes = np.array([np.polyfit(np.log(r[:, j]), np.log(rate_profile(p[j:j + 1], r[:, j:j + 1])[:, 0]), 1)[0]
                         for j in range(len(p))])
    hypotheses = _settled(tc, runs)
    bound = np.array([np.median(h_slopes[(p == pv) & hypotheses]) for pv in P_VALUES])
    medians = np.array([np.median(slopes[(p == pv) & hypotheses]) for pv in P_VALUES])
    tc.record("fitted slopes per run", slopes)
    tc.record("median fitted slope / min(1, p-1), per p", medians / np.array([min(1, pv - 1) for pv in P_VALUES]))
    tc.conclusion.at_most("median slope of log D vs log ||W||_p, per p", medians, bound)
    decreasing = np.all(np.diff(own, axis=0) < 0, axis=0)
    tc.conclusion.binomial("D decreasing over the window", decreasing[hypotheses], p=0.8, low_power=SUBSET_POWER)
    for pv in P_VALUES:
        j = int(np.flatnonzero(p == pv)[0])
        tc.curve("rate", f"p={pv:g}", r[:, j], own[:, j], xscale="log", yscale="log",
                 xlabel="||W(k)||_p", ylabel="D_psi")


WRONG_TOKENS = Control("reference", breaks=["q = p curve decays from K/2 to K"],
                       description="the l_p-AttSVM of alpha with one sample moved to its "
                                   "lowest-score token in place of the l_p-AttSVM of alpha")
"""The reference control of the synthetic Bregman figure (`exp.synthetic_bregman_curves`)."""
AUTHORS_WRONG_TOKENS = Control("reference", breaks=[AUTHORS_DECAY_DECISION],
                               description=WRONG_TOKENS.description)
"""`WRONG_TOKENS` in the authors' setting, against its decay decision over the instances."""


BREGMAN_LOWEST_VALIDATION = ("Validation on 91150-91199: 0 of 50 seeds failed; 750 of 750 instances had the q = p "
                             "curve lowest at K for every p (15 on every seed); row 6.9e-6 (the binomial 1.9e-11, "
                             "pooled trials; decay 5.1e-6, normal tail, 5.8 sd); wrong_tokens failed on 50 of 50")
"""The validation of `LOWEST_RATE` (exp.synthetic_bregman_curves, on 91150-91199)."""


@claim(
    f"{PAPER}.exp.synthetic_bregman_curves",
    source="synthetic experiment (directional Bregman divergence per (q, p); authors' code)",
    statement="On the synthetic data, the divergence of l_p-AttGD's direction from the "
              "l_q-AttSVM decays for q = p and levels off for q != p.",
    provenance="stated",
    controls={"wrong_tokens": WRONG_TOKENS},
    sizes={"quick": SHARED_SIZES["quick"], "full": SHARED_SIZES["full"]},
    calibration=["the thresholds were first 0.6 / 0.7, chosen on seeds 1, 2 with 5 instances (not "
                 "held out); replaced by the calibrated DECAY_RATIO / LEVEL_RATIO", *BREGMAN_CALIBRATION,
                 "the level decision was 'the min over p of the far q's median ratio over instances >= "
                 "0.71' (mean - 5 sd on 13000-13049, validated on 13100-13149) until the unseen sweep "
                 "168935948-168935967 (2026-11-28 d) failed it on 168935963 (0.673): the normal rule "
                 "ignored a heavy lower tail (least 0.716 on its own calibration block); at the quick "
                 "tier's K a far q's divergence can still fall by a half on an instance whose two SVM "
                 "directions are close, so 'levels off' holds at a rate over instances.  Replaced "
                 "(2026-11-28 e) by the binomial below, with a per-run threshold from the mathematics.",
                 Calibrated(decision=LEVEL_RATE_DECISION,
                            threshold=f"binomial at LEVEL_RATE = {LEVEL_RATE} (level {LEVEL_ALPHA}), per-run "
                                      "ratio >= LEVEL_RATIO = 2^(-1/2)",
                            calibration_seeds="20000-20049", validation_seeds="20100-20149",
                            how=("rule stated before validation: LEVEL_RATE = the one-sided 99.9% Clopper-Pearson lower bound "
                                 "of the per-instance rate on the calibration block, rounded down to 0.05: 615 of 750 "
                                 "instances level off (0.820; per run 0.943), bound 0.773, so 0.75; with 15 instances the test "
                                 "rejects at <= 3 (size 1.2e-5 at 0.75, <= 1e-4 by construction when the rate holds); fewest "
                                 "per seed 8.  The own q in place of the far q (a decaying curve): 0 of 750 instances, so the "
                                 "decision fails there.  Validation: 0 of 50 failed, 614 of 750 (0.819), fewest per seed 8; "
                                 "wrong_tokens failed on 50 of 50.  The calibration table bounds this decision through its "
                                 "pooled trials (dispersion test passed)")),
                 "'q = p curve lowest at K, every p' was the least over p of the mean curves' ratio (the "
                 "lowest other q over the q = p one) >= 1: normal tail 2.1e-2 on 53000-53049 (2.8 sd), too "
                 "noisy for the budget; per instance the q = p curve was the lowest at K for every p on 403 "
                 "of 405 instances of 77000-77026.  Replaced (2026-11-30) by the binomial over the instances "
                 "of the authors' setting (the same helper), its rate by the same rule",
                 Calibrated(decision=LOWEST_RATE_DECISION,
                            threshold=f"binomial at LOWEST_RATE = {LOWEST_RATE} (level {LOWEST_ALPHA})",
                            calibration_seeds="91100-91149", validation_seeds="91150-91199",
                            how=("rule stated before the blocks (that of LEVEL_RATE): the rate = the one-sided "
                                 "99.9% Clopper-Pearson lower bound of the per-instance rate on the calibration "
                                 "block, rounded down to 0.05: 750 of 750 instances had the q = p curve lowest at "
                                 "K for every p, bound 0.9908, so 0.95 (the test rejects at <= 9 of 15); row "
                                 "7.5e-7 (the binomial 1.9e-11, pooled trials; decay 1.6e-7, normal tail, 6.6 "
                                 "sd); wrong_tokens failed on 50 of 50.  " + BREGMAN_LOWEST_VALIDATION))],
)
def test_synthetic_bregman_curves(tc):
    r"""Mean over instances of D^(q)_k for every (q, p), q, p in {1.5, 1.75, 2, 3}, drawn per p
    (the paper's figure: mean over 100 data sets; here the tier's instances, scaled down).  What
    the figure shows, checked (thresholds: `direction.BREGMAN_CALIBRATION`):
    for every p, (a) at K the q = p curve is the lowest of the four, at a rate over the instances
    (independent data sets; the runs of the four p of one instance share its data, so the instance
    is the trial): an instance succeeds when for every p its own D^(p)_K is below D^(q)_K of every
    other q, and P[success] >= LOWEST_RATE is decided by the exact one-sided binomial test at level
    LOWEST_ALPHA = 1e-4 (calibrated; the mean curves' ratio is recorded); (b) it decays: the median
    over instances of D^(p)_K / D^(p)_{K/2} <= DECAY_RATIO; (c) the far wrong q (3, or 1.5 for
    p = 3) levels off, at a rate over the instances (independent data sets; the runs of the four
    p of one instance share its data, so the instance is the trial): an instance levels off when
    for every p its far q's ratio D^(q)_K / D^(q)_{K/2} >= LEVEL_RATIO = 2^(-1/2) (the geometric
    midpoint of a constant curve and one decaying like 1/k), and P[an instance levels off] >=
    LEVEL_RATE is decided by the exact one-sided binomial test at level LEVEL_ALPHA = 1e-4, so the
    decision's false-failure rate is at most 1e-4 whenever the true rate is at least LEVEL_RATE
    (calibrated).  It fails when the far curves decay like the q = p one (no instance levels
    off).  The control replaces the l_p-AttSVM of
    alpha by that of a wrong token choice (alpha with one sample moved to its lowest-score token,
    not locally optimal): the iterates do not converge to it, so its divergence levels off.  The
    tokens are those of each run's own last iterate for every q (the spec's convention).
    """
    decay, level = bregman_curve_checks(tc, tc.use(normalized_mirror_runs), LOWEST_RATE)
    tc.conclusion.at_most(DECAY_DECISION, np.median(decay, axis=1), DECAY_RATIO)
    tc.conclusion.binomial(LEVEL_RATE_DECISION, (level >= LEVEL_RATIO).all(0), p=LEVEL_RATE, alpha=LEVEL_ALPHA,
                           low_power="the alternative is a far curve that decays like the q = p one (no "
                                     "instance levels off), which the test rejects; 15 instances cannot "
                                     "resolve a rate 0.15 below LEVEL_RATE at level 1e-4")


AUTHORS_VALIDATION = ('Validation on 77500-77549: 0 of 50 seeds failed; 749 of 750 instances had the q = p curve lowest (fewest per seed 14), 627 of 750 levelled off (0.836, fewest per seed 8; dispersion p 0.017, the pooled trials kept); wrong_tokens failed on 50 of 50 (lowest on 0 of 750 instances).  Rows on 77500-77549: lowest 3.0e-10, level 5.0e-7 (pooled trials)')
"""The validation of the authors'-setting rates (both on 77500-77549)."""


@claim(
    f"{PAPER}.exp.synthetic_bregman_curves_authors_setting",
    source="synthetic experiment in the authors' code: logistic loss, a query token z_i per sample",
    statement="In the authors' setting (logistic loss, cross-attention), the divergence of l_p-AttGD's "
              "direction from the l_q-AttSVM decays for q = p and levels off for q != p.",
    provenance="stated",
    controls={"wrong_tokens": AUTHORS_WRONG_TOKENS},
    sizes={"quick": dict(SHARED_SIZES["quick"], instances=AUTHORS_INSTANCES["quick"]),
           "full": dict(SHARED_SIZES["full"], instances=AUTHORS_INSTANCES["full"])},
    calibration=[
        "First design: the thresholds (0.6, 0.7) of "
        "exp.synthetic_bregman_curves' first design, chosen there on seeds 1, 2 (FLAGGED).  On the calibration block 13000-13049 (5 instances) the claim failed on 2 of 50 seeds, both on (c) (e.g. 13036: p = 2's far q ratio 0.48; the level statistic 0.82 +- 0.08, least 0.48): over the 3e-4 budget.  Not calibrated: the medians over 5 instances are too noisy; the fix is the exp setting's 15 instances (3x its cost) and a calibration of its own",
        f"the decay decision was '{DECAY_DECISION}': the max over p of the median decay ratio over the "
        f"instances <= {AUTHORS_RATIOS[0]}, calibrated on 13300-13324 (15 instances; rule stated before "
        "validation, DECAY_RATIO's: mean + 5 sd of 0.498 +- 0.011, largest 0.517, rounded up) and validated on "
        "13400-13424 (25/25 passed, 0.496 +- 0.013, largest 0.518; wrong_tokens failed 25/25 on both blocks), "
        "until its row on 77500-77549 read 3.0e-3 (normal tail, 3.7 sd: a median of 15 instances is too noisy "
        "for the 3e-4 budget).  Replaced (2026-11-30) by the binomial over the instances below, its per-run "
        "threshold LEVEL_RATIO from the mathematics (not calibrated)",
        f"the level decision was '{LEVEL_DECISION}': the min over p of the far q's median ratio >= "
        f"{AUTHORS_RATIOS[1]} (mean - 5 sd of 0.844 +- 0.015 on 13300-13324, validated on 13400-13424: 0.851 "
        "+- 0.013), until its row on 53000-53049 was counted (Shapiro-Wilk rejected its margins, 0.091) and "
        "it failed on an unseen seed; the lowest decision was the least over p of the mean curves' ratio >= 1 "
        "(normal tail 0.021 on 53000-53049, 2.8 sd).  Both replaced (2026-11-29, issue 31) by binomials over "
        "the instances (the level's as in exp.synthetic_bregman_curves; records below)",
        Calibrated(decision=LOWEST_RATE_DECISION,
                   threshold=f"binomial at AUTHORS_LOWEST_RATE = {AUTHORS_LOWEST_RATE} (level {LOWEST_ALPHA})",
                   calibration_seeds="77000-77049", validation_seeds="77500-77549",
                   how=("rule stated before validation (that of LEVEL_RATE): the rate = the one-sided 99.9% "
                        "Clopper-Pearson lower bound of the per-instance rate on the calibration block, rounded "
                        "down to 0.05: 750 of 750 instances had the q = p curve lowest at K for every p, bound "
                        "0.9908, so 0.95 (the test rejects at <= 9 of 15).  " + AUTHORS_VALIDATION)),
        Calibrated(decision=AUTHORS_DECAY_DECISION,
                   threshold=f"binomial at AUTHORS_DECAY_RATE = {AUTHORS_DECAY_RATE} (level {LOWEST_ALPHA}), per-run "
                             "ratio < LEVEL_RATIO = 2^(-1/2) (from the mathematics, not calibrated)",
                   calibration_seeds="96000-96049", validation_seeds="96100-96149",
                   how=("rule stated before the blocks (that of LEVEL_RATE): the rate = the one-sided 99.9% "
                        "Clopper-Pearson lower bound of the per-instance rate on the calibration block (run at a "
                        "provisional 0.75), rounded down to 0.05: 744 of 750 instances decayed for every p, bound "
                        "0.976, so 0.95 (the test rejects at <= 9 of 15).  Validation on 96100-96149: 0 of 50 seeds "
                        "failed, 741 of 750 instances decayed (fewest per seed 13; dispersion p 0.33); lowest 748 and "
                        "level 625 of 750; wrong_tokens failed on 50 of 50 (decayed on 0 of 750 instances).  Row on "
                        "96100-96149: 9.4e-7 (decay 3.5e-7, level 5.9e-7, lowest 1.6e-9: pooled trials); "
                        "wrong_tokens 3e-21")),
        Calibrated(decision=LEVEL_RATE_DECISION,
                   threshold=f"binomial at AUTHORS_LEVEL_RATE = {AUTHORS_LEVEL_RATE} (level {LEVEL_ALPHA}), per-run "
                             "ratio >= LEVEL_RATIO = 2^(-1/2)",
                   calibration_seeds="77000-77049", validation_seeds="77500-77549",
                   how=("rule stated before validation (that of LEVEL_RATE): 619 of 750 instances level off "
                        "(0.825; per p 742, 720, 641, 734 of 750), bound 0.779, so 0.75 (the test rejects at <= 3 "
                        "of 15); fewest per seed 8.  " + AUTHORS_VALIDATION)),
    ],
)
def test_synthetic_bregman_curves_authors_setting(tc):
    r"""The figure of `exp.synthetic_bregman_curves` in the setting of the authors' code: loss
    l(m) = log(1 + e^{-m}) instead of e^{-m}, and cross-attention logits x_{i,t}^T W z_i with a
    query z_i per sample (unit Gaussian) instead of z_i = x_{i,0}; the l_q-AttSVM programs use
    the same queries. An added parametrization, not a replacement: the theorems the other jta24
    claims test are stated for a general decreasing loss and query, and the exponential
    self-attention runs are the ones the spec's reproduction numbers refer to. Decided as
    there, over 15 instances (independent data sets; the runs of the four p of one instance share
    its data, so the instance is the trial): for every p, (a) the q = p curve lowest at K, P[an
    instance's q = p curves are the lowest at K, every p] >= AUTHORS_LOWEST_RATE, (b) it decays,
    P[an instance's q = p curves decay, D^(p)_K / D^(p)_{K/2} < LEVEL_RATIO = 2^(-1/2) (nearer to
    a 1/k decay than to a constant), every p] >= AUTHORS_DECAY_RATE, (c) P[an instance's far wrong
    q curves level off (ratio >= LEVEL_RATIO), every p] >= AUTHORS_LEVEL_RATE, the three rates by
    the exact binomial at level 1e-4 (calibrated: the records; each decision's false-failure rate
    is at most 1e-4 whenever the instances' true rate is at least the claimed one).  The median
    decay ratio over the instances per p is recorded.  The control replaces the l_p-AttSVM of
    alpha by that of a wrong token choice (not locally optimal): the divergence levels off, so no
    instance decays.
    """
    runs = tc.use(normalized_mirror_runs, loss="logistic", cross_attention=True, instances=tc.sizes["instances"])
    decay, level = bregman_curve_checks(tc, runs, AUTHORS_LOWEST_RATE)
    tc.record("median q = p ratio D_K / D_K/2 over the instances, per p", np.median(decay, axis=1))
    tc.conclusion.binomial(AUTHORS_DECAY_DECISION, (decay < LEVEL_RATIO).all(0), p=AUTHORS_DECAY_RATE,
                           alpha=LOWEST_ALPHA,
                           low_power="the alternative is a q = p curve that levels off (the control's wrong "
                                     "reference: no instance decays), which the test rejects; 15 instances "
                                     "cannot resolve a rate 0.15 below AUTHORS_DECAY_RATE at level 1e-4")
    tc.conclusion.binomial(LEVEL_RATE_DECISION, (level >= LEVEL_RATIO).all(0), p=AUTHORS_LEVEL_RATE,
                           alpha=LEVEL_ALPHA,
                           low_power="the alternative is a far curve that decays like the q = p one (no "
                                     "instance levels off), which the test rejects; 15 instances cannot "
                                     "resolve a rate 0.15 below AUTHORS_LEVEL_RATE at level 1e-4")
