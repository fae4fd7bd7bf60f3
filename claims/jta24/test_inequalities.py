r"""jta24: the norm and Bregman inequalities of appendix A.2 and the three-point identity
(Lemmas 12-15, 26), as property claims: a seeded hypothesis search for a counterexample
(`theorycheck.patterns.property_search`), the worst instance recorded.

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581, Appendix A.2 (Lemmas 12-15) and A.4 (Lemma 26).
The copy lost every formula; the statements below are the spec's reconstructions (constants
re-derived), each verified here.  Inputs are built by construction from a drawn seed, shape and
exponent (well-conditioned: entries Gaussian times a heavy-tailed factor, some set to zero).
"""
import math

import numpy as np
from hypothesis import strategies as st

from theorycheck import Calibrated, Control, claim
from theorycheck.optim import bregman, lp_norm, mirror_map
from theorycheck.patterns import property_search
from theorycheck.tails import TailBound
from theorycheck.tolerance import unit_roundoff

from .properties import matrix, one_trial, power_ratio_terms, unit_pair
from .setup import PAPER

EXAMPLES = {"quick": dict(examples=80), "full": dict(examples=3000)}
BREGMAN_EXAMPLES = {"quick": dict(examples=160), "full": dict(examples=3000)}
"""Lemma 13's search: twice the quick tier's 80 examples, so that its control finds a pair
violating the stronger constants on a fresh seed with probability >= 99% (`BREGMAN_CALIBRATION`)."""


matrices = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 7), st.integers(1, 7),
                     st.floats(1.01, 6.0))


#: why Lemma 14's decision cannot fail on any draw: the true slack is >= 0, the computed one is within 1e-13
POWER_RATIO_ROUNDOFF = TailBound(0.0, (
    "the inequalities hold at the x actually used (fl(1 + 10^lu) >= 1), so min(b - a, c - b)/b + 1e-9 "
    "is negative only through round-off: a, b, c come from one log(x) (1 ulp) through expm1 of at most "
    "p log 11 < 15 (argument error amplified at most 15-fold) and a division, each within about 40u "
    "relative, so the slack over b moves by at most about 160u = 4e-14, far below the allowance 1e-9"))
#: why Lemma 15's decision cannot fail on any draw
MEAN_VALUE_ROUNDOFF = TailBound(0.0, (
    "the mean-value bounds hold for every u > 0 and p > 1, so min(middle - lo, hi - middle)/middle + 1e-8 "
    "is negative only through round-off: middle = expm1((p - 1) log1p(u)) and lo, hi = (p - 1) u, "
    "(p - 1) x^(p-2) u (x = fl(1 + u)) each carry at most about 30u relative (expm1's argument below 15), "
    "so the slack over middle moves by at most about 100u = 2e-14, far below the allowance 1e-8"))
#: why the Lemma 12 decision cannot fail on any draw: its margin's forward error is below its allowance
NORM_RATIO_ROUNDOFF = TailBound(0.0, (
    "the lemma holds for every W, so the margin min(rho - lo, hi - rho)/rho + tol('conditioned') can be "
    "negative only through round-off: lp_norm computes ||W||_p = m (sum (|w|/m)^p)^(1/p), m = max|w|, "
    "with relative error at most (p + 2)u per term, (N - 1)u for the sum of N <= 49 non-negative "
    "terms and then a 1/p power and a product (about 60u for p <= 6), so rho carries at most about "
    "121u and the end N^(1/p - 1/2) one pow (2u): far below tol('conditioned') = 2^14 u"))


#: why the Lemma 13 decision cannot fail on any draw: the computed D is within its a-posteriori
#: round-off bound E_D, which the margin allows, and the rest of the margin's error is far below 1e-9
BREGMAN_LOWER_ROUNDOFF = TailBound(0.0, (
    "the bounds hold for every pair the search forms: for p >= 2 entrywise, phi_p(x, y) >= |x - y|^p/(p 2^p) "
    "for all real x, y (the case analysis; no norm needed), for p < 2 D >= (p-1)/2 sum xi^(p-2) (x - y)^2 "
    ">= (p-1)/2 ||W - V||_2^2 with |xi| <= max(|x|, |y|) <= 1 + 100u (W, V normalized in floating point), a "
    "relative deficit below 100u.  So (D + E_D)/bound - 1 + 1e-9 is negative only through round-off: D is a sum "
    "of N <= 36 terms |x|^p/p + (p-1)|y|^p/p - sign(y)|y|^(p-1) x, each formed within about 6u of the sum "
    "S_jk of its three magnitudes (pow within 2u, two products, a division, two additions) and summed within "
    "(N - 1)u sum S_jk, so |D_computed - D| <= (N + 6)u S <= E_D = 2(N + 8)u S (S computed, within (N + 6)u "
    "of itself), which the margin adds to D; the bound (fl(W - V) within u per entry, lp_norm within about "
    "100u, its p-th power, or a sum of N squares) carries at most about 600u = 1.3e-13 relative, and the "
    "normalization deficit 100u: far below the allowance 1e-9"))


@claim(
    f"{PAPER}.lem12.lp_vs_l2",
    source="Lemma 12 (Appendix A.2)",
    statement="For W != 0 with N entries: 1 <= ||W||_p/||W||_2 <= N^(1/p-1/2) if 1 < p <= 2, and "
              "N^(1/p-1/2) <= ||W||_p/||W||_2 <= 1 if p >= 2.",
    provenance="derived",
    controls={"half_exponent": Control("statement", breaks=["norm ratio inside the interval"],
                                       description="the end N^((1/p-1/2)/2): the exponent halved, "
                                                   "which matrices with many comparable entries pass")},
    single_evidence="an inequality between two norms of one matrix: it holds for every W, so there "
                    "is no data, reference or dynamics whose perturbation could break it for the "
                    "lemma's reason; the searched W are the evidence, the control shows that the "
                    "search reaches the matrices where the end N^(1/p-1/2) is nearly attained",
    sizes=EXAMPLES,
)
def test_lp_vs_l2(tc):
    r"""Subadditivity of t -> t^(p/2) (p <= 2) and the power-mean inequality give the interval.
    Margin of an instance: the smaller distance of rho = ||W||_p/||W||_2 to the ends of its
    interval, divided by rho, plus tc.tol("conditioned") (relative round-off of two norms of <= 49 entries);
    property_search over shapes 1..7 x 1..7 and p in [1.01, 6].  The end N^(1/p-1/2) is attained
    by a matrix with N entries of equal magnitude; the control halves its exponent (a non-empty
    interval, exact at N = 1), which only W with many comparable entries leave.
    """
    exponent_factor = 0.5 if tc.control == "half_exponent" else 1.0

    def margin(case):
        seed, m, n, p = case
        W = matrix(seed, m, n)
        rho = float(lp_norm(one_trial(W), p) / lp_norm(one_trial(W), 2.0))
        end = (W.size) ** (exponent_factor * (1 / p - 1 / 2))
        lo, hi = (1.0, end) if p <= 2 else (end, 1.0)
        return min(rho - lo, hi - rho) / rho + tc.tol("conditioned")

    property_search(tc, "norm ratio inside the interval", matrices, margin,
                    max_examples=tc.sizes["examples"], tail_bound=None if tc.control else NORM_RATIO_ROUNDOFF)


BREGMAN_CALIBRATION = Calibrated(
    decision="Bregman lower bound",
    threshold="160 examples a search (quick tier; 80 before)",
    calibration_seeds="157200-157349", validation_seeds="157400-157549",
    how=("the control stronger_constants passed (missed) on 2 of 70 fresh seeds at 80 examples "
         "(1740758184 of the sweep 1740758173-1740758192; 1 of 50 on 71500-71549 by the tail model "
         "8.6e-4, not seen), and on 4 of 800 hypothesis seeds of the same search run in one process "
         "(0.5%, over the 1% control budget's reach at 95%).  A pair violating the stronger constants "
         "is about 12% of uniform draws (p in [1.5, 2) and far pairs), fewer of hypothesis's, which "
         "favours the ends of the ranges.  Rule stated before the blocks: the least example count, "
         "doubling from 80, at which the control misses on no seed of the calibration block; "
         "160 missed on 0 of 600 in-process searches (Clopper-Pearson 95% upper bound 5e-3) and on 0 "
         "of the calibration block's 150 seeds, and on 0 of the validation block's 150 (the table's "
         "miss bound over both, 300 seeds: 9.9e-3, Clopper-Pearson; the worst margins fit no tail model).  The claim's decision is unchanged (its margin has "
         "the stated bound 0, BREGMAN_LOWER_ROUNDOFF, at any count)"))


@claim(
    f"{PAPER}.lem13.bregman_lower_bounds",
    source="Lemma 13 (Appendix A.2), per-entry function phi_p of eq. (11)",
    statement="For ||W||_p = ||V||_p = 1: D_psi(W, V) >= ||W - V||_p^p / (p 2^p) if p >= 2, and "
              "D_psi(W, V) >= ((p-1)/2) ||W - V||_2^2 if 1 < p < 2.",
    provenance="inferred",
    controls={"stronger_constants": Control(
        "statement", breaks=["Bregman lower bound"],
        description="constants 1/p (p >= 2) and p - 1 (p < 2) in place of 1/(p 2^p) and (p-1)/2")},
    single_evidence="an inequality between closed-form expressions of two unit-norm matrices: it "
                    "holds for every pair, so there is no data, reference or dynamics whose "
                    "perturbation could break it for the lemma's reason; the searched pairs are the "
                    "evidence, the control shows that the search reaches the pairs where the "
                    "constants are sharp",
    calibration=["the noise range was s in [-3, 0]; on seed 18 the search found no pair violating the "
                 "control's constants (the control passed).  Widened to [-3, 1], the whole statement "
                 "(far pairs, where the constants are sharp), not a threshold: claim passes and control "
                 "fails on seeds 0-19.",
                 "2026-11-29 (issue 31): the margin adds E_D, the computed D's round-off bound, and states "
                 "bound 0 (`BREGMAN_LOWER_ROUNDOFF`).  Calibrated on 71500-71549: claim 0.049 -> 0 (0 of 50 "
                 "failed; least margin 0.0031), stronger_constants 0.049 -> 8.6e-4 (normal on this block)",
                 BREGMAN_CALIBRATION],
    sizes=BREGMAN_EXAMPLES,
)
def test_bregman_lower_bounds(tc):
    r"""D_psi(W, V) = sum_jk phi_p(W_jk, V_jk), phi_p(x, y) = |x|^p/p + (p-1)|y|^p/p - sign(y)|y|^(p-1) x.
    The case analysis (same / opposite signs) gives phi_p >= |x - y|^p/(p 2^p) for p >= 2; for
    p < 2 the second-order bound uses |x|, |y| <= 1 (unit norm) and gives (p-1)/2 (sharp).  The
    constants are the spec's reconstruction (the paper's were stripped): provenance inferred.
    Margin: (D + E_D) / bound - 1 + 1e-9, over unit pairs (V = W + noise of relative size 10^s,
    s in [-3, 1], both normalized; both argument orders), skipping ||W - V||_p < 1e-3 where D
    is below the Bregman cancellation floor (absolute error ~1e-16, P5).  E_D = 2 (N + 8) u S,
    S the sum of the magnitudes of D's 3 N terms, bounds the round-off of the computed D (its
    forward-error analysis is the stated bound `BREGMAN_LOWER_ROUNDOFF`): D cancels terms of size
    up to 1 down to 1e-9 and less on near pairs, so 1e-9 relative alone does not cover it there;
    E_D is about 1e-14, so it decides nothing on far pairs, where the constants are sharp.  The lemma holds for
    every unit pair, so the search covers far pairs too (s up to 1: entries of V of either sign
    relative to W): that is where the constants are sharp (an entry with opposite signs,
    x = -y: phi_p = 2|y|^p against |x - y|^p/p = 2^p |y|^p/p, so 1/p fails for p > 2; for p < 2
    a dominant entry |y| near 1).  The control uses the constants 1/p and p - 1, which such pairs
    violate.
    """
    strong = tc.control == "stronger_constants"
    cases = st.tuples(st.integers(0, 2**32 - 2), st.integers(1, 6), st.integers(1, 6),
                      st.floats(1.05, 5.0), st.floats(-3.0, 1.0), st.booleans())

    def margin(case):
        seed, m, n, p, s, swap = case
        W, V = unit_pair(seed, m, n, p, s)
        if swap:
            W, V = V, W
        if float(lp_norm(one_trial(W - V), p)) < 1e-3:
            return math.inf
        A, B = one_trial(W), one_trial(V)
        D = float(bregman(A, B, p))
        S = float((A.abs() ** p / p + (p - 1) / p * B.abs() ** p + B.abs() ** (p - 1) * A.abs()).sum())
        E_D = 2 * (W.size + 8) * unit_roundoff("float64") * S       # round-off of the computed D
        if p >= 2:
            bound = float(lp_norm(one_trial(W - V), p)) ** p / (p if strong else p * 2**p)
        else:
            bound = (p - 1) * (1.0 if strong else 0.5) * float(np.sum((W - V) ** 2))
        return (D + E_D) / bound - 1 + 1e-9

    property_search(tc, "Bregman lower bound", cases, margin, max_examples=tc.sizes["examples"],
                    tail_bound=None if tc.control else BREGMAN_LOWER_ROUNDOFF)


@claim(
    f"{PAPER}.lem14.power_ratio",
    source="Lemma 14 (Appendix A.2)",
    statement="For x >= 1 and p > 1: (x^(p-1) - 1)/(p-1) <= (x^p - 1)/p <= x (x^(p-1) - 1)/(p-1).",
    provenance="inferred",
    controls={"sqrt_x_factor": Control("statement", breaks=["power-ratio inequalities"],
                                       description="the upper bound with the factor sqrt(x) in place "
                                                   "of x: false for large x, true near x = 1")},
    single_evidence="an inequality between three scalar expressions of x and p: there is no data, "
                    "reference or dynamics to perturb; the searched (x, p) are the evidence, and the "
                    "control only shows that the search reaches the x where the factor x is needed",
    sizes=EXAMPLES,
)
def test_power_ratio(tc):
    r"""Both differences vanish at x = 1 and have derivatives x^(p-2)(x - 1) >= 0 (middle minus
    left) and (x^(p-1) - 1)/(p-1) >= 0 (right minus middle) for x >= 1, so both hold.  Margin: the
    smaller of the two differences divided by the middle term, plus 1e-9 (relative; the terms
    are formed with expm1 so x = 1 + 1e-4 keeps full precision); x = 1 + u with log10 u uniform
    in [-4, 1], p in [1.01, 6].  The exact form is the spec's reconstruction: provenance
    inferred.  The control weakens the upper bound's factor x to sqrt(x): near x = 1 all three
    terms agree to second order in x - 1, but for large x the middle term grows like x^p/p and
    sqrt(x) (x^(p-1) - 1)/(p-1) only like x^(p-1/2), so the control fails there (x = 11 at every
    p of the range) and nowhere near x = 1.
    """
    factor = (lambda x: math.sqrt(x)) if tc.control == "sqrt_x_factor" else (lambda x: x)
    cases = st.tuples(st.floats(-4.0, 1.0), st.floats(1.01, 6.0))

    def margin(case):
        lu, p = case
        x = 1 + 10.0**lu
        a, b, c = power_ratio_terms(x, p)
        c = c * factor(x) / x
        return min(b - a, c - b) / b + 1e-9

    property_search(tc, "power-ratio inequalities", cases, margin, max_examples=tc.sizes["examples"],
                    tail_bound=None if tc.control else POWER_RATIO_ROUNDOFF)


@claim(
    f"{PAPER}.lem15.power_mvt",
    source="Lemma 15 (Appendix A.2), cases p >= 2 and p < 2",
    statement="For x >= y > 0: (p-1) y^(p-2) (x-y) <= x^(p-1) - y^(p-1) <= (p-1) x^(p-2) (x-y) if "
              "p >= 2; the outer bounds swap if 1 < p < 2.",
    provenance="inferred",
    controls={"constant_p": Control(
        "statement", breaks=["mean-value bounds"],
        description="the constant p in place of p - 1 in both bounds: the lower bound fails near "
                    "x = y, where the mean-value bounds are tight")},
    single_evidence="an inequality between closed-form expressions of x, y and p: it holds for every "
                    "input, so there is no data, reference or dynamics whose perturbation could break "
                    "it for the lemma's reason; the searched (x, p) are the evidence, the control shows "
                    "that the search reaches x near y, where the bounds are tight",
    calibration=["the rounding allowance 1e-8: the spec observed relative slacks of -2.4e-9 near p = 2"],
    sizes=EXAMPLES,
)
def test_power_mvt(tc):
    r"""Mean value theorem: x^(p-1) - y^(p-1) = (p-1) xi^(p-2) (x - y) for some xi in [y, x], and
    t^(p-2) is increasing for p >= 2, decreasing for p < 2.  Margin: the smaller slack divided by
    the middle term, plus 1e-8 (rounding near p = 2: the calibration record); y = 1, x = 1 + u
    with log10 u in [-4, 1] (the inequality is homogeneous, so y = 1 loses nothing), p in
    [1.01, 6].  The control puts the constant p in place of p - 1 (the derivative's constant):
    the lower bound then exceeds the middle term near x = y (both ~ (p-1) u there), while far
    from it (large u) the control's bounds can still hold.
    """
    constant = (lambda p: p) if tc.control == "constant_p" else (lambda p: p - 1)
    cases = st.tuples(st.floats(-4.0, 1.0), st.floats(1.01, 6.0))

    def margin(case):
        lu, p = case
        u = 10.0**lu
        x = 1 + u
        middle = math.expm1((p - 1) * math.log1p(u))
        lo, hi = constant(p) * u, constant(p) * x ** (p - 2) * u
        if p < 2:
            lo, hi = hi, lo
        return min(middle - lo, hi - middle) / middle + 1e-8

    property_search(tc, "mean-value bounds", cases, margin, max_examples=tc.sizes["examples"],
                    tail_bound=None if tc.control else MEAN_VALUE_ROUNDOFF)


@claim(
    f"{PAPER}.lem26.three_point",
    source="Lemma 26 (Appendix A.4), Bregman 'cosine law'",
    statement="D_psi(A, B) + D_psi(B, C) - D_psi(A, C) = <grad psi(C) - grad psi(B), A - B> for all "
              "A, B, C.",
    provenance="derived",
    controls={"swapped_rhs": Control("statement", breaks=["three-point identity"],
                                     description="right side <grad psi(B) - grad psi(C), A - C>")},
    single_evidence="an identity between closed-form expressions of three matrices: it holds for every "
                    "triple, so there is no data, reference or dynamics whose perturbation could break "
                    "it; the searched triples are the evidence, the control shows that the residual "
                    "resolves a wrong right side",
    sizes=EXAMPLES,
)
def test_three_point(tc):
    r"""Expanding the three divergences, psi(A), psi(B), psi(C) cancel and the inner products
    leave <grad psi(C) - grad psi(B), A - B>.  Margin: tc.tol("conditioned") minus the residual divided by
    the largest of |D(A,B)|, |D(B,C)|, |D(A,C)| and the right side's terms (relative round-off of
    sums of <= 36 terms of magnitude ~10^(2p)); random 1..6 x 1..6 triples with entries of
    magnitude 10^[-2,2], p in [1.05, 5].  The control's swapped right side leaves residuals of
    order one.
    """
    swapped = tc.control == "swapped_rhs"
    cases = st.tuples(st.integers(0, 2**32 - 3), st.integers(1, 6), st.integers(1, 6), st.floats(1.05, 5.0))

    def margin(case):
        seed, m, n, p = case
        A, B, C = (one_trial(matrix(seed + i, m, n)) for i in range(3))
        lhs = bregman(A, B, p) + bregman(B, C, p) - bregman(A, C, p)
        if swapped:
            rhs = ((mirror_map(B, p) - mirror_map(C, p)) * (A - C)).sum()
        else:
            rhs = ((mirror_map(C, p) - mirror_map(B, p)) * (A - B)).sum()
        scale = max(float(bregman(X, Y, p).abs()) for X, Y in ((A, B), (B, C), (A, C)))
        scale = max(scale, float(((mirror_map(C, p).abs() + mirror_map(B, p).abs()) * (A - B).abs()).sum()))
        return tc.tol("conditioned") - float((lhs - rhs).abs()) / max(scale, 1e-300)    # A = B = C: both sides 0

    property_search(tc, "three-point identity", cases, margin, max_examples=tc.sizes["examples"])
