"""gsb26: boundary maps (`theorycheck.maps`) -- where the finite-n gap E Lhat_n - L stops decaying
like 1/n as the score tail mu(K) = ||Sigma^{1/2} K Sigma^{1/2}||^2 grows past A3's 1/2."""
import numpy as np
from scipy import optimize

from theorycheck import Calibrated, Control, claim
from theorycheck.checks import fit_slope
from theorycheck.maps import estimate_map, interval_power, mean_interval, record_map

from .population import MANIFOLD_GAP_SIZES, closed_form_loss, manifold_gap
from theorycheck.tails import TailBound

from .setup import (DECISION_CONFIDENCE, LIGHT_TAIL, PAPER, decide_recipe, record_assumptions, well_conditioned,
                    well_conditioned_kappa_tail)

SLOPE_WINDOW = (-1.25, -0.75)
"""The window of `gsb26.thm1.closed_form` ("gap E Lhat_n - L decays like 1/n": log-log slope over
the n grid in [-1.25, -0.75], the spec's window); its upper end is the map's stated value."""

#: the heavy_tails control's mu: off the quick and the full grids, between their points 1 and 2
HEAVY_TAIL = 1.75

#: kappa(Sigma) of the well-conditioned instance below which the closed form rounds to k sigma^2
KAPPA_CAP = 25.0
#: why L(theta_R0) = k sigma^2 holds bitwise, and with it every replicate's gap >= 0, on all but a
#: vanishingly rare draw
EXACT_OPTIMUM = TailBound(well_conditioned_kappa_tail(KAPPA_CAP), (
    "At theta_R0 = (U D^{1/2} R0, Sigma^{-1} R0^T D^{1/2} V_W^T) of c W*, V Sigma K = W* exactly, so the closed "
    "form is tr(E Sigma E^T) + k sigma^2 with E of round-off size: lambda_max(Sigma) = 1 and mu = ||Sigma^{1/2} K "
    "Sigma^{1/2}||^2 >= c sigma_1 / kappa, so c sigma_1 <= mu kappa <= 3 kappa (mu <= 3 on both tiers' grids), "
    "||V|| <= (3 kappa)^{1/2}, ||K|| <= kappa (3 kappa)^{1/2}; the SVD, the solve (kappa d u) and the products "
    "leave ||E|| <= about 50 u ||V|| ||K|| kappa <= 150 u kappa^3 (u = 2.2e-16), so tr(E Sigma E^T) <= 3 ||E||^2 "
    "<= 3.3e-27 kappa^6, below half an ulp of k sigma^2 = 0.04 (3.5e-18) for kappa <= 25 (8e-19): the sum rounds to k sigma^2, which both sides compute "
    "by the same two IEEE operations, so the precondition's error is 0.  The replicate gaps are then "
    "fl(fl(losses + o) - o) with losses a mean of squares (>= 0 in floating point): >= 0 by monotone rounding.  "
    "kappa(Sigma) > 25 needs chi-square(9) > 72 (well_conditioned_kappa_tail)"))


INSIDE_UPPER = ("gap decays like 1/n inside mu < 1/2: the slope is not above -0.75 "
                "(its lower 1 - 7.5e-5 bound <= -0.75)")
INSIDE_LOWER = ("gap decays like 1/n inside mu < 1/2: the slope is not below -1.25 "
                "(its upper 1 - 7.5e-5 bound >= -1.25)")

MAP_SIZES = {"quick": dict(MANIFOLD_GAP_SIZES["quick"], decided_rows=200_000, decided_groups=40,
                           mu_map=[0.1, 0.25, 0.5, 1.0, 2.0]),
             "full": dict(MANIFOLD_GAP_SIZES["full"], decided_rows=400_000, decided_groups=40,
                          mu_map=[0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0, 3.0])}
"""`manifold_gap`'s sizes (n = 16, 32, 64, 5 10^4 covariate rows per n split over 10 replicate
groups in the quick tier; n = 16 .. 256, 4 10^5 rows in the full tier), the grid of mu (coarse in
the quick tier, fine in the full tier) and the sizes of the decided values (mu < 1/2 and the
control's): 2 10^5 rows over 40 groups in the quick tier, so that the heavy_tails control fails
at level `END_LEVEL` (10 groups leave the t quantile too wide for it: the claim's calibration
record)."""


def rejection_power(mean, sd, m):
    """P[the lower `END_LEVEL` bound of the mean of ``m`` replicate slopes with standard
    deviation ``sd`` lies above -0.75, the upper end of `SLOPE_WINDOW`] at a true slope ``mean``
    (`interval_power`): the probability that the inside decision fails."""
    return interval_power(mean, sd, m, lower=SLOPE_WINDOW[1], confidence=DECISION_CONFIDENCE)


def detectable_slope(sd, m, power=0.8):
    """The true slope in [-0.75, 0] at which `rejection_power` is ``power`` (the decision's
    resolution above the window; 0 if even there the power is lower)."""
    f = lambda s: rejection_power(s, sd, m) - power  # noqa: E731
    return 0.0 if f(0.0) < 0 else float(optimize.brentq(f, SLOPE_WINDOW[1], 0.0))


@claim(
    f"{PAPER}.thm1.gap_rate_map_mu",
    source="Theorem 1 (part 1) and Section 3 (the finite-n gap), under A3 in its Lemma-7 form "
           "mu(K) < 1/2",
    statement="At a minimizer of the population loss the finite-n gap E Lhat_n - L decays like 1/n "
              "(log-log slope over n in [-1.25, -0.75]) inside the stated region mu(K) < 1/2; "
              "above it the slope against mu is mapped and the mu where it crosses -0.75 located "
              "(a finding).",
    provenance="derived",
    constants={"slope_low": SLOPE_WINDOW[0], "slope_high": SLOPE_WINDOW[1], "light_tail": LIGHT_TAIL},
    controls={
        "heavy_tails": Control(
            "hypothesis", breaks=[INSIDE_UPPER],
            description="the inside decision made at mu = 1.75 (A3's light-tail condition mu < 1/2 "
                        "violated; its own Monte Carlo, a grid value the claim does not compute): "
                        "E_x e^q is infinite, the gap decays only like n^{-1/(2 mu)} and the slope's "
                        "lower one-sided bound lies above -0.75",
            constants={"mu": HEAVY_TAIL}),
    },
    calibration=[
        "Quantity: the gap at the generic test point of `thm1.closed_form` (`in_sample_gap`, K "
        "rescaled to mu) was tried first (scratch, 2 10^5 rows per n): its 1/n coefficient changes "
        "sign as K is scaled (seed 1: gap at n = 16 +0.147 at mu = 0.25, +0.038 at 0.5, -0.380 at 1; "
        "seed 5: +0.33 at 1.5, -0.11 at 3, where |gap| has slope +0.69; seed 11 changes sign between "
        "n = 32 and 64 at mu = 1.5), so log |gap| has no slope there -- the likely cause of the "
        "heavy_tails control's misfire at mu = 1.5 (slope -1.19 on seed 5). The map uses the manifold "
        "point, where the gap is E||W* x - V a||^2 >= 0.",
        "Grid 0.1, 0.25, 0.5, 1, 2 and K = 10 replicate groups (5 10^4 rows per n) chosen on seeds "
        "1-10 (scratch, fine grid 0.1 .. 3 at the same sizes: slopes -0.97 .. -1.01 at 0.1, -0.86 .. "
        "-0.95 at 0.3, -0.78 .. -0.90 at 0.45, -0.67 .. -0.81 at 0.75, -0.41 .. -0.48 at 3). Stated "
        "value -0.75, the end of `thm1.closed_form`'s window: the slope reaches -1 only near mu = 0.1 "
        "at these n, so a crossing of -1 is not located by the grid.",
        "Encoded map on seeds 1-10: mean slopes -0.95 .. -1.05 at 0.1, -0.90 .. -0.98 at 0.25, "
        "-0.76 .. -0.86 at 0.5, -0.63 .. -0.75 at 1, -0.50 .. -0.58 at 2 (half-widths 0.03 .. 0.09); "
        "crossing of -0.75 at mu = 0.56 .. 1.00 (seed 4 on the grid point 1), bracketed on every "
        "seed; the claim passed and the control failed as declared 10/10. Checked on seed 0: 0.675 "
        "[0.603, 0.762]. Held out on seeds 11-19: 0.58 .. 0.84 (band ends 0.41 .. 1.04), 9/9 passed, "
        "the control failed as declared 9/9.",
        "Inside decision: largest upper 95% bound over seeds 0-19 -0.90 at 0.1, -0.82 at 0.25 "
        "(-0.71 at 0.5, on the region's edge, not decided); power at a true slope of -1 about 1 on "
        "every seed; seed 0: power 0.8 at a true slope of -0.80 (0.1) and -0.78 (0.25).",
        "Control noise_free_reference: slopes -0.03 .. -0.16 at 0.1 and -0.08 .. -0.36 at 0.25 over "
        "seeds 0-19. Rejected wrong references: the unweighted closed form equals L at a minimizer "
        "(V Sigma K = W*); the other orientation V Sigma K^T is offset from L by less than the gap "
        "on some seeds (0.0010 and 0.0008 against gaps 0.014 and 0.007 at n = 16, mu = 0.1, seeds "
        "15, 19), so it would not break the decision.",
        "Control noise_free_reference (k sigma^2 left out of the reference: a constant added to the "
        "claim's own gaps, discrimination by arithmetic) replaced (2026-11-28, review section 3) by "
        "heavy_tails: the inside decision at mu = 1.25 on its own Monte Carlo (slope interval upper end "
        "-0.57 on seed 0, not tuned: 1.25 is the midpoint of the quick grid's 1 and 2 above the region, "
        "a value the claim never computes).",
        "Inside decision before the unseen sweep: the 95% interval had to lie inside the window (an "
        "equivalence test: its false-failure rate is the chance that an interval reaches -0.75, about "
        "5% at a true slope near -0.85); on seed 630279474 it failed at mu = 0.25 (upper bound -0.7265).",
        Calibrated(decision=INSIDE_UPPER, threshold="lower one-sided 1 - 7.5e-5 t bound <= -0.75",
                   calibration_seeds="7000-7007", validation_seeds="8000-8007",
                   how="level from the claim budget (3e-4 over two grid values and two ends), not read "
                       "off seeds; 40 groups of 2 10^5 rows chosen on seeds 7000-7003 for the control "
                       "(at 10 groups its lower bound was -0.739 .. -0.647). The control moved from mu = 1.25 "
                       "to 1.75 (off the quick and the full grids) after seeds 7000-7008 and 8000: at 1.25 the "
                       "instance's own slope is -0.60 .. -0.68, so the lower bound lay only 0.06-0.17 above "
                       "-0.75 (a normal tail of about 1% misses). At 1.75 on 7000-7007 and 8000-8007 (8 + 8 seeds, "
                       "cut by the session's CPU): no claim failure (smallest margin 0.23), the control failed "
                       "as declared on all 16 (margins -0.60 .. -0.64 relative)."),
        "Stated bound (issue 31, 2026-11-29; no threshold changed): the closed-form optimum and the replicate "
        "gaps' sign are exact at every draw with kappa(Sigma) <= 25 (EXACT_OPTIMUM, 6e-12).  Calibrated on "
        "70000-70049: claim 2.2e-8, heavy_tails control 3.1e-4.",
        "Full tier, seed 0 only (n = 16 .. 256, 4 10^5 rows, 17 s): crossing 0.637 [0.602, 0.673]; "
        "slopes -0.99 at 0.05 and 0.1, -0.92 at 0.3, -0.81 at 0.5, -0.65 at 1, -0.41 at 3 (the "
        "asymptotic -1/(2 mu) is -0.17 at 3: these n are pre-asymptotic above the threshold).",
    ],
    sizes=MAP_SIZES,
)
def test_gap_rate_map_mu(tc):
    r"""Theorem 1's closed form L = ||(V Sigma K - W*) Sigma^{1/2}||_F^2 + k sigma^2 is the limit
    of E Lhat_n; Section 3 says the gap is Theta(1/n) for light score tails. Why mu = 1/2: the
    softmax average a_i of n keys is a ratio estimator whose variance given the query is
    C(x_i)/n, C(x) = e^{q(x)} (tr Sigma + ||Sigma u||^2) to leading order, u = K x, q = u^T Sigma u;
    E_x e^{q} is finite iff mu(K) < 1/2, above it the gap decays only like n^{-1/(2 mu)} (up to
    logarithms). The quantity mapped: the gap at the manifold point theta_R0 (the point of
    `lem9`/`lem11`) of the well-conditioned instance with W* rescaled so that mu(K_R0) = mu
    (`manifold_gap`; V, K scale like sqrt(c), so mu is linear in the scale c): there L = k sigma^2
    and the gap is E||W* x_i - V a_i||^2 >= 0, the noise integrated out exactly. (At the generic
    test point (`setup.test_point`) the 1/n coefficient of the gap changes sign as K is scaled,
    so a log-log slope is undefined there.) The map: per mu of the grid (quick 0.1 .. 2, full
    0.05 .. 3), K = 10 independent replicate groups (5 10^4 covariate rows per n split over them,
    n = 16, 32, 64 in the quick tier; 40 groups of 2 10^5 rows at the decided values mu < 1/2 and
    the control's), per group the least-squares log-log slope of the gap over
    the n grid, and the mean slope with its 95% Student-t interval over the replicates
    (its half-width recorded); the transition is where the mean slope crosses
    -0.75, the upper end of `thm1.closed_form`'s window (linear interpolation between the
    bracketing grid values; interval where the band's edges cross). Above mu = 1/2 the map is a
    finding (A3's light-tail threshold is a sufficient condition; the paper does not claim it is
    sharp). Decided inside the stated region mu < 1/2 (quick grid values 0.1, 0.25): at each, the
    data must not show the slope outside [-1.25, -0.75]: the claim fails when the one-sided
    Student-t bound at level END_LEVEL = 7.5e-5 excludes the window (lower bound above -0.75, or
    upper bound below -1.25; two conclusions, one per end).  Four one-sided tests at 7.5e-5 make
    the false-failure rate at most the claim budget 3e-4 whenever the slope at these n lies in the
    window, by construction of the t test, not by a threshold
    read off seeds.  The probability that the decision fails (non-central t) is recorded per grid
    value at a true slope of -0.6 and at the measured mean, with the measured spread of the
    replicates, and the true slope at which it fails with probability 0.8. Preconditions: A1, A2 (A3's kappa(Sigma) sigma_1(W*) is recorded:
    it grows with mu), mu(K) equal to the grid value, the minimizer's L - k sigma^2 at round-off,
    and every replicate's gap positive (the closed form rounds to k sigma^2 bitwise unless kappa(Sigma)
    > 25, and the gaps are then means of squares: `EXACT_OPTIMUM`, their stated bound). Control (hypothesis): the inside decision made at
    mu = HEAVY_TAIL = 1.75, its own Monte Carlo (A3 violated, the decided value outside the
    region): the slope's lower bound lies above -0.75.
    """
    grid = [HEAVY_TAIL] if tc.control == "heavy_tails" else tc.sizes["mu_map"]
    decided = {"rows": tc.sizes["decided_rows"], "groups": tc.sizes["decided_groups"]}
    decide_recipe(tc, well_conditioned, a3=False)      # W* rescaled below: A1 and k >= d are the recipe's
    # the decided grid values: those inside mu < 1/2 (the control: its heavy-tailed value)
    inside = list(range(len(grid))) if tc.control == "heavy_tails" else [i for i, mu in enumerate(grid) if mu < LIGHT_TAIL]
    tc.precondition.at_most("the decided grid values lie in the light-tail region mu <= 1/2", [grid[i] for i in inside],
                            LIGHT_TAIL)
    runs = [tc.use(manifold_gap, tail=mu, **(decided if tc.control or mu < LIGHT_TAIL else {})) for mu in grid]
    record_assumptions(tc, [r["problem"] for r in runs])
    tc.precondition.close("mu(K) at the manifold point equals the grid value", [r["mu"] for r in runs], grid,
                          rtol=tc.tol("accumulated"))
    optimum = [r["problem"].optimum for r in runs]
    closed = [closed_form_loss(r["problem"], r["V"], r["K"], tc.tensor) for r in runs]
    exact = None if tc.control else EXACT_OPTIMUM
    tc.precondition.close("a minimizer: L = k sigma^2 (closed form)", closed, optimum, rtol=tc.roundoff(1e3),
                          tail_bound=exact)
    gaps = [r["losses"] + o - c for r, o, c in zip(runs, optimum, closed)]   # (n, groups) per mu
    tc.precondition.at_least("every replicate's gap is positive (the log-log fit is defined)",
                             np.concatenate([g.ravel() for g in gaps]), 0.0, tail_bound=exact)
    n = runs[0]["n"]
    slopes = [np.array([fit_slope(n, g[:, j], window=(n[0], n[-1])).slope for j in range(g.shape[1])])
              for g in gaps]
    est, lo, hi = np.array([mean_interval(s, 0.95) for s in slopes]).T
    tc.record("replicate slopes per mu", {str(mu): s for mu, s in zip(grid, slopes)})
    tc.record("mean slope and 95% interval per mu", {str(mu): [e, a, b] for mu, e, a, b in zip(grid, est, lo, hi)})
    tc.record("kappa(Sigma) sigma_1(W*) per mu", {str(mu): r["problem"].a3_product() for mu, r in zip(grid, runs)})
    tc.record("n (E Lhat_n - L) per mu (mean over replicates)",
              {str(mu): n * g.mean(1) for mu, g in zip(grid, gaps)})
    if tc.control is None:
        m = estimate_map(grid, est, lo, hi, value=SLOPE_WINDOW[1], parameter="mu",
                         samples=[s.size for s in slopes], interval_method="Student t over replicate slopes",
                         name="gap exponent against mu")
        record_map(tc, "finite-n gap exponent against mu", m, xscale="log",
                   ylabel="log-log slope of E Lhat_n - L over n",
                   region={"description": "mu < 1/2 (A3, Lemma-7 form)", "upper": LIGHT_TAIL},
                   finding="mu where the gap's slope crosses -0.75 (band crossings)")
        for mu, g in zip(grid, gaps):
            tc.curve("n gap", f"mu = {mu:g}", n, n * g.mean(1), xscale="log", yscale="log", xlabel="n",
                     ylabel="n (E Lhat_n - L)")
    sd = [float(np.std(slopes[i], ddof=1)) for i in inside]
    tc.record("inside mu < 1/2: probability that the decision fails at a true slope of -0.6 (the heavy "
              "tail's); at the measured mean", [[rejection_power(-0.6, v, slopes[i].size) for v, i in zip(sd, inside)],
                                                 [rejection_power(est[i], v, slopes[i].size) for v, i in zip(sd, inside)]])
    tc.record("inside mu < 1/2: true slope above -0.75 at which the decision fails with probability 0.8",
              [detectable_slope(v, slopes[i].size) for v, i in zip(sd, inside)])
    bounds = np.array([mean_interval(slopes[i], DECISION_CONFIDENCE)[1:] for i in inside])
    tc.record("inside mu < 1/2: one-sided 1 - 7.5e-5 bounds of the slope", bounds)
    tc.conclusion.at_most(INSIDE_UPPER, bounds[:, 0], SLOPE_WINDOW[1])
    tc.conclusion.at_least(INSIDE_LOWER, bounds[:, 1], SLOPE_WINDOW[0])
