"""glls24: the elementary facts of Appendix A and the softmax perturbation bounds of Lemma B.1."""
import numpy as np
from scipy import stats

from claims.glls24.lemmas import (
    lemma_b1_ratios_chunked,
    lemma_b1_roundoff_tail,
    preactivation_event,
    symbolic_facts,
)
from claims.glls24.setup import (
    SIGMA,
    bounded_preactivation_level,
    decide_unit_ball,
    initialization,
    probe_regression_data,
    regression_instance,
)
from theorycheck import Control, TailBound, claim, discrepancy

GRID = 100_000

PART1_DELTA = 0.1
"""delta of Lemma B.1 Part 1 (the event holds with probability >= 1 - delta)."""

RADII = (1e-3, 1e-2)
"""The radii R of Lemma B.1's check, inside its hypothesis R < 0.01 (the endpoint included)."""

LARGE_RADIUS = 2.0
"""The radius of Lemma B.1's radius control: far beyond R < 0.01, where the first-order
linearisations behind Parts 6, 12 and 13 (|e^y - 1| <= 2|y| needs |y| <= 1.25) no longer hold."""

ROUNDOFF_PARTS = ("Part 2", "Part 3", "Part 5", "Part 7")
"""Lemma B.1's parts whose exact slack can approach 0 (a direction p_r nearly parallel to an input):
their stated bound `lemma_b1_roundoff_tail`; the others keep a slack of e^{O(B)} factors."""

WIDE_INIT = 4.0
"""Lemma B.1's event control draws W~ with this multiple of sigma while the bounds keep the
lemma's level B_delta of sigma: most pre-activations then exceed B."""

NARROW_FACTOR = 64
"""The control of the width counterexample shrinks each width m_C by this factor."""

def displacement_allowance_units(d_in):
    """The round-off of the construction ``p_r = g_r R / ||g_r||`` per unit R, in units of u:
    two norms of d_in entries (d_in + 2 each), the quotient, the products and the division by R (one
    each), rounded up: ``2 d_in + 8`` (`DISPLACEMENT_ROUNDOFF`)."""
    return 2 * d_in + 8


#: why "every neuron within R of W~" cannot fail on the claim's draw: a forward error analysis
DISPLACEMENT_ROUNDOFF = TailBound(0.0, (
    "p_r = g_r (R / ||g_r||) has ||p_r|| = R exactly in exact arithmetic; computed, ||g_r|| errs by at "
    "most (d_in + 2)u relative (d_in squares summed, a square root), R / ||g_r|| and each product by u, "
    "the second norm by (d_in + 2)u and the division by R by u: displacement <= 1 + (2 d_in + 7)u, "
    "below the allowance max(tol('exact'), (2 d_in + 8)u) at every d_in"))

#: why the claim's event "max |<w~_r, x_i>| <= B" cannot fail: B is that maximum, computed alike
EVENT_BY_CONSTRUCTION = TailBound(0.0, (
    "the claim's B is bounded_preactivation_level(X, W~) = max(1, max |einsum('kne,kem->knm', X, W~)|), "
    "and the excess is the same numpy einsum of the same float arrays minus B: identical operations on "
    "identical inputs give identical floats, so the excess is max - max(1, max) <= 0 exactly"))


@claim("glls24.factsA.elementary_inequalities", source="Facts A.3-A.8",
       statement="A.3 ||a - b||^2 = ||a||^2 - 2<a, b> + ||b||^2; A.4 <1, S> = 1 and d<exp(W^T x), 1>/dw_r "
                 "= exp(w_r^T x) x; A.5 sqrt(1 - x) <= 1 - x/2 on [0, 1]; A.6 |e^x - 1| <= 2|x| and A.8 "
                 "|e^x - 1 - x| <= x^2 for |x| <= 0.1; A.7 sum_s (1 - x)^s = 1/x, sum_s (1 - x/2)^{s/2} <= 4/x.",
       provenance="inferred",
       single_evidence="identities and inequalities between closed forms of one real variable (sympy and "
                       "a grid of the domain): there is no data, initialization or dynamics to perturb, "
                       "so the controls can only tighten the constants",
       controls={
           "tightened_sqrt_bound": Control(
               "statement", breaks=["Fact A.5 on the grid"],
               description="sqrt(1 - x) <= 1 - 0.6 x instead of 1 - x/2: false for small x > 0",
               constants={"slope": 0.6}),
           "tightened_exp_bound": Control(
               "statement", breaks=["Fact A.8 on the grid"],
               description="|e^x - 1 - x| <= 0.4 x^2 instead of x^2: false near x = 0, where the "
                           "ratio tends to 1/2", constants={"factor": 0.4}),
       },
       sizes={"quick": {"grid": GRID}, "full": {"grid": 100 * GRID}})
def test_elementary_inequalities(tc):
    r"""The identities symbolically with sympy (A.3 expanded to 0; A.4 ``sum_r S_r = 1`` simplified
    to 1 and the derivative of the normaliser; A.7's geometric series summed exactly at x in {1/7, 1/2, 1}), the
    inequalities on a grid of ``grid`` points of their domains: the worst margin (right side minus
    left side; for A.8 divided by x^2 and for A.7 multiplied by x, the scale of its sides) must be
    >= -1e2 unit round-offs (the functions are evaluated with relative error of a few ulps; the
    forms are the spec's reconstruction, so provenance is inferred).  Only the worst margin per
    grid is passed to the check, so the full tier's 1e7-point grids do not go into the report.  A.7's bound ``sum_{s>=0} (1 - x/2)^{s/2} = 1/(1 - sqrt(1 - x/2)) <= 4/x`` follows from
    A.5 and is checked on (0, 1].  The controls check tightened constants, which must fail."""
    n = tc.sizes["grid"]
    for name, holds in symbolic_facts().items():
        tc.conclusion.holds(name, holds)
    tol = tc.roundoff(1e2)
    unit = np.linspace(0.0, 1.0, n)
    slope = 0.6 if tc.control == "tightened_sqrt_bound" else 0.5
    small = np.linspace(-0.1, 0.1, n)
    small = small[small != 0]
    factor = 0.4 if tc.control == "tightened_exp_bound" else 1.0
    remainder = np.abs(np.expm1(small) - small)
    positive = unit[1:]
    worst = {   # the smallest relative margin (right side minus left side, over its scale) on each grid
        "Fact A.5 on the grid": np.min((1 - slope * unit) - np.sqrt(1 - unit)),
        "Fact A.6 on the grid": np.min(2 * np.abs(small) - np.abs(np.expm1(small))),
        "Fact A.8 on the grid": np.min(factor - remainder / small**2),
        "Fact A.7 bound on the grid": np.min(4 - positive / (1 - np.sqrt(1 - positive / 2))),
    }
    tc.record("worst margins", worst)
    for name, margin in worst.items():
        tc.conclusion.at_least(name, margin, -tol)
    tc.record("A.8 worst ratio |e^x - 1 - x| / x^2", float(np.max(remainder / small**2)))


@claim("glls24.lemB_1.softmax_perturbation_bounds", source="Lemma B.1, Parts 1-13",
       statement="On the event |<w~_r, x_i>| <= B (probability >= 1 - delta), every W with ||w_r - w~_r|| "
                 "<= R < 0.01 has bounded pre-activations, exponentials, normalisers and softmax "
                 "entries, each perturbed by O(R) with factors e^{O(B)} (Parts 2-13).  Finding: with "
                 "the e^R factors kept, only Part 6 needs R small; the others hold at every R.",
       provenance="derived",
       constants={"large_radius": LARGE_RADIUS},
       calibration=["radius_exceeded's miss rate is derived, not fitted: at R = 2, Part 6's ratio exceeds 1 "
                    "as soon as one neuron's direction has cosine > ln(9)/4 = 0.549 with one unit input "
                    "(e^{4 cos} - 1 > 8R), probability 0.063 per neuron for a uniform direction in d_in = 8, "
                    "so every one of the quick tier's 20 x (64 + 1024) neurons misses with probability "
                    "below 1e-600; seeds 5000-5005 (a check, not a calibration): ratio 5.6-6.3, every "
                    "claim run passed",
                    "event_violated's miss rate is derived: with W~ of scale 4 sigma = 2, a pre-activation "
                    "exceeds B + R (B_delta of sigma, 2.38 at m = 1024 and 2.07 at m = 64) with probability "
                    "above 0.2 per pair, so Part 2 fails unless every one of 20 x 4 x 1088 pairs stays "
                    "below: probability below 1e-900",
                    "Parts 2, 3, 5 and 7 are proof bounds, not thresholds (Cauchy-Schwarz with ||x_i|| <= 1, "
                    "||w_r - w~_r|| = R and B = B_emp): on 17000-17049 / 17100-17149 (50 + 50 seeds, no "
                    "failure) their least margins 4e-5 / 6e-5 (Part 2), 7e-3 / 3e-3 (Part 3), 8e-5 / 2e-4 "
                    "(Part 5) and 0.08 / 0.04 (Part 7) sit 2.6-3.6 sd from 0 under the table's normal model, "
                    "which overstates their rate: Part 2's margin at the pair attaining B is R (1 - cos) / "
                    "(B + R), cos between the random direction and x_i in d_in = 8, so it reaches round-off "
                    "(1e-15) only if 1 - cos < 3e-12, probability about (6e-12)^3.5 < 1e-39 a pair; no threshold "
                    "changed. Controls: "
                    "every one failed as declared on all 100 seeds",
                    "that argument is now the stated bound of Parts 2, 3, 5 and 7 (`lemma_b1_roundoff_tail`, "
                    "1.4e-29 at the quick tier), and the two constructed preconditions state 0 (forward error: "
                    "`DISPLACEMENT_ROUNDOFF`, whose allowance max(tol('exact'), (2 d_in + 8)u) equals tol('exact') "
                    "at the quick tier, and `EVENT_BY_CONSTRUCTION`); no check, threshold or control changed. "
                    "Block 69000-69049 (50 seeds, quick): no failure, the claim's bound 0.058 -> 1.5e-4, now "
                    "carried by Part 8 (Cantelli at 116 sd: its normal model rejected on this block, 0 on "
                    "26000-26049). B_without_width and event_violated stay counted at 0.058 (the former's two "
                    "preconditions are the claim's, but a control states no bound; the latter's break margin "
                    "is rejected by both shapes): each needs about 300 seeds of counting"],
       controls={"B_without_width": Control(
           "statement", breaks=["Part 1: the event holds with probability >= 1 - delta"],
           description="B = sigma sqrt(log(nd/delta)) (C = 1, no m in the union bound): at the largest "
                       "width the event fails far more often than delta"),
                 "radius_exceeded": Control(
           "hypothesis", breaks=["Lemma B.1 Part 6"],
           description="a fresh draw of directions at the radius R = 2 with ||w_r - w~_r|| = R exactly (the "
                       "bounds evaluated at that R): the hypothesis R < 0.01 fails, the pre-activation "
                       "shifts leave the range where e^y - 1 is linear in y, and the exponential "
                       "perturbation of Part 6 outgrows its 4R bound",
           constants={"large_radius": LARGE_RADIUS}),
                 "event_violated": Control(
           "hypothesis", breaks=["Lemma B.1 Part 2", "Lemma B.1 Part 5", "Lemma B.1 Part 7",
                                 "Lemma B.1 Part 10", "Lemma B.1 Part 11"],
           description="W~ drawn afresh with 4 sigma while B stays the lemma's level B_delta of sigma "
                       "(Part 1's): the event |<w~_r, x_i>| <= B fails, the pre-activations and their "
                       "exponentials outgrow Parts 2, 5, 7, and the softmax over the neurons "
                       "concentrates on the largest ones, so Parts 10, 11 (S <= e^{2B}/m) fail",
           constants={"init_scale": WIDE_INIT})},
       sizes={"quick": {"n": 4, "d_in": 8, "d": 2, "instances": 20, "widths": [64, 1024], "instances_p1": 200},
              "full": {"n": 32, "d_in": 64, "d": 4, "instances": 20, "widths": [64, 1024, 16384], "instances_p1": 1000}})
def test_softmax_perturbation_bounds(tc):
    r"""Lemma B.1 with the spec's derived constants (the paper's exact powers of e^B, e^R in Parts 9,
    12, 13 may differ): P2 ``|<w_r, x_i>| <= B + R``; P3 ``|<w_r - w~_r, x_i + x_j>| <= 2R``; P5 ``e^{<w_r,
    x_i>} <= e^{B+R}``; P6 ``|e^{<w_r - w~_r, x_i + x_j>} - 1| <= 4R``; P7 ``|e^{<w_r,x_i>} - e^{<w~_r,x_i>}|
    <= R e^{B+R}``; P8 ``|alpha_i - alpha~_i| <= m R e^{B+R}``; P9 ``|1/alpha_i - 1/alpha~_i| <= R e^{3B+2R}/m``;
    P10 ``S~_{i,r} <= e^{2B}/m``; P11 ``S_{i,r} <= e^{2B+2R}/m``; P12 ``|S_{i,r} - S~_{i,r}| <= 2R e^{4B+2R}/m``;
    P13 ``|<v_{l,r}, S_i - S~_i>| <= 4R e^{4B+2R}``.  Deterministic given Part 1's event, so B = B_emp
    (the event itself); 20 seeds x R in {1e-3, 1e-2} x widths, random directions with ``||w_r -
    w~_r|| = R`` exactly, i.i.d. W~.  Pass: every ratio <= 1 (proof bounds, no tolerance; on the
    claim's draw Parts 2, 3, 5 and 7 can approach 1 only where a direction p_r is nearly parallel to
    an input, their stated bound `lemma_b1_roundoff_tail`, and the two preconditions below hold by
    the construction up to a forward-error allowance, `DISPLACEMENT_ROUNDOFF` and
    `EVENT_BY_CONSTRUCTION`).  Part 1:
    with ``B_delta = sigma sqrt(2 log(2nm/delta))`` (Gaussian tail + union bound over nm pairs), the
    event ``max |<w~_r, x_i>| <= B_delta`` holds in each of ``instances_p1`` independent draws at the
    largest width with probability >= 1 - delta, delta = 0.1: exact binomial test at level 0.05
    (its power is recorded).

    Which hypothesis each part needs: with the e^R factors kept (the spec's derived constants),
    Parts 2, 3, 5 and 7-13 follow from ``||w_r - w~_r|| <= R``, ``||x_i|| <= 1`` and the event by
    Cauchy-Schwarz and the mean value theorem at every R; only Part 6 linearises (Fact A.6, ``|e^y -
    1| <= 2|y|`` for small |y|), so the radius hypothesis R < 0.01 is what Part 6 needs.  Control
    ``radius_exceeded``: a fresh draw of directions at R = ``LARGE_RADIUS`` (``||w_r - w~_r|| = R``
    exactly, the bounds at that R), where ``|<w_r - w~_r, x_i + x_j>|`` reaches several units and
    ``e^y - 1`` outgrows ``4R``: Part 6 fails for the lemma's reason while Part 3 (linear in the
    displacement) still holds, which shows the failure is not a rescaling.  Parts 8-13 hold at
    every radius, so no radius control breaks them (a finding, recorded in the claim's statement).
    Control ``event_violated``: W~ drawn afresh with ``WIDE_INIT`` sigma while B is Part 1's level
    ``B_delta`` of sigma (the event fails: a precondition); Parts 2, 5, 7, 10 and 11 need the
    event and fail.  Parts 8, 9, 12 and 13 carry factors e^{2B} or more of slack (or sum
    cancelling terms) and keep no control of their own.  The inputs' unit ball is a property of the
    data's construction, decided on its probe before any draw (`probe_regression_data`; the drawn
    data are checked exactly by `regression_instance`)."""
    s = tc.sizes
    radii = (LARGE_RADIUS,) if tc.control == "radius_exceeded" else RADII
    tc.precondition.at_most("radius below 0.01", max(radii), 0.01)
    decide_unit_ball(tc, "inputs in the unit ball", probe_regression_data(n=s["n"], d_in=s["d_in"], d=s["d"])[0])
    X, _ = regression_instance(tc, n=s["n"], d_in=s["d_in"], d=s["d"], K=s["instances"])
    Xt = tc.tensor(X)
    worst, displacement, event_excess = {}, 0.0, []
    for m in s["widths"]:
        if tc.control == "event_violated":   # a wider initialization of its own, B kept at sigma's B_delta
            W_tilde, A = initialization(tc, d_in=s["d_in"], d=s["d"], m=m, K=s["instances"], init="independent",
                                        sigma=WIDE_INIT * SIGMA, stream=("wide",))
            B = np.full(s["instances"], max(1.0, part1_level(s["n"], m)))
        else:
            W_tilde, A = initialization(tc, d_in=s["d_in"], d=s["d"], m=m, K=s["instances"], init="independent")
            B = bounded_preactivation_level(X, W_tilde)
        event_excess.append(float((np.abs(np.einsum("kne,kem->knm", X, W_tilde)).max(axis=(1, 2)) - B).max()))
        for R in radii:
            P = tc.rng("direction", m, R).standard_normal(W_tilde.shape)
            P *= R / np.linalg.norm(P, axis=1, keepdims=True)
            displacement = max(displacement, float(np.linalg.norm(P, axis=1).max() / R))
            ratios = lemma_b1_ratios_chunked(Xt, tc.tensor(W_tilde), tc.tensor(W_tilde + P), tc.tensor(A),
                                             tc.tensor(B), R)
            for part, value in ratios.items():
                worst[part] = max(worst.get(part, 0.0), float(value.max()))
    tc.record("worst_ratio_per_part", worst)
    claim_case = tc.control is None
    tc.precondition.at_most("every neuron within R of W~ (per unit R)", displacement, 1.0,
                            margin=max(tc.tol("exact"), tc.roundoff(displacement_allowance_units(s["d_in"]))),
                            tail_bound=DISPLACEMENT_ROUNDOFF if claim_case else None)
    tc.precondition.at_most("the event max |<w~_r, x_i>| <= B (excess over B)", event_excess, 0.0,
                            margin=tc.tol("exact"), tail_bound=EVENT_BY_CONSTRUCTION if claim_case else None)
    roundoff_tail = lemma_b1_roundoff_tail(s["n"], s["d_in"], s["instances"], s["widths"], radii)
    for part, value in worst.items():
        stated = claim_case and part in ROUNDOFF_PARTS
        tc.conclusion.at_most(f"Lemma B.1 {part}", value, 1.0, tail_bound=roundoff_tail if stated else None)
    n, m = s["n"], s["widths"][-1]
    B_delta = part1_level(n, m)
    if tc.control == "B_without_width":
        B_delta = SIGMA * np.sqrt(np.log(n * s["d"] / PART1_DELTA))
    event = preactivation_event(tc.rng("part 1"), X[0], s["instances_p1"], m, B_delta)
    tc.record("part1_event_frequency", float(event.mean()))
    tc.conclusion.binomial("Part 1: the event holds with probability >= 1 - delta", event, p=1 - PART1_DELTA)


def part1_level(n, m):
    """Part 1's ``B_delta = sigma sqrt(2 log(2 n m / delta))`` (Gaussian tail and a union bound over
    the n m pre-activations), delta = `PART1_DELTA`."""
    return SIGMA * np.sqrt(2 * np.log(2 * n * m / PART1_DELTA))


def width_free_level(C, n, d, delta):
    r"""Def. 4.1's ``B = max{C sigma sqrt(log(nd/delta)), 1}`` (no m), the probability ``P_C = 2
    Phi(-B/sigma)`` that one unit-norm pre-activation exceeds it, and the width ``m_C``: the
    smallest power of two at which the union bound ``n m P_C`` reaches 2."""
    B = max(C * SIGMA * np.sqrt(np.log(n * d / delta)), 1.0)
    tail = 2 * stats.norm.sf(B / SIGMA)
    return B, tail, int(2 ** np.ceil(np.log2(2 / (n * tail))))


@discrepancy("glls24.def4_1.DISCREPANCY_bound_without_width", source="Definition 4.1; Lemma B.1 Part 1",
             statement="Refutes Def. 4.1 as reconstructed (its formula was lost): B = max{C sigma "
                       "sqrt(log(nd/delta)), 1}, with no dependence on the width m, bounds every |<w_r(0), "
                       "x_i>| with probability >= 1 - delta.  For each constant C tried, the event fails more "
                       "often than delta once m is large enough.",
             corrected_by="glls24.lemB_1.softmax_perturbation_bounds",
             provenance="inferred",
             constants={"delta": 0.1, "union_target": 2, "shrink": NARROW_FACTOR},
             calibration=["the constants C and the width rule (smallest power of two with union bound "
                          ">= 2) are fixed by the union-bound arithmetic, not fitted; checked on seeds 1-10 "
                          "and seed 0"],
             controls={"narrow_network": Control(
                 "hypothesis", breaks=["the event fails more often than delta at every C"],
                 description="each C at its width m_C divided by 64: the union bound n m P(|<w, x>| > B) "
                             "falls below delta, the same B covers all n m pre-activations and no "
                             "counterexample exists", constants={"shrink": NARROW_FACTOR})},
             sizes={"quick": {"n": 4, "d_in": 8, "d": 2, "Cs": [1.5, 1.75, 2.0], "instances": 100},
                    "full": {"n": 32, "d_in": 64, "d": 4, "Cs": [1.5, 1.75], "instances": 200}})
def test_bound_without_width(tc):
    r"""Def. 4.1 (reconstructed) sets ``B = max{C sigma sqrt(log(nd/delta)), 1}`` with a "sufficiently
    large" constant C and no m; Lemma B.1 Part 1 uses it for all ``nm`` pairs ``(i, r)``.  For a
    fixed C each unit-norm pre-activation ``<w_r, x_i> ~ N(0, sigma^2)`` exceeds B with probability
    ``P_C = 2 Phi(-B/sigma)``, and the neurons are independent, so ``P[event] <= (1 - P_C)^m -> 0``
    as m grows: no C works for every width (the union bound needs ``B >= sigma sqrt(2
    log(2nm/delta))``, with m inside the log).  For each C of ``Cs`` (delta = 0.1) the width ``m_C``
    is the smallest power of two at which the union bound ``n m P_C`` reaches 2 (the event then
    fails with probability near ``1 - e^{-2}``), and the event ``max_{i,r} |<w_r, x_i>| <= B`` is
    sampled over ``instances`` independent initializations at ``m_C / 64``, ``m_C / 8`` and ``m_C`` (the
    frequencies recorded, m growing).  Pass (the counterexample): at ``m_C``, for every C, the exact
    binomial test of ``P[event] >= 1 - delta`` rejects at level ``0.05 / len(Cs)`` (Bonferroni over
    the C), decided on the log of its p-value ``log P[Bin(instances, 1 - delta) <= #events]``
    (`stats.binom.logcdf`; the same test, whose p-values of ~1e-60 would leave the linear margin
    no spread).  The inputs' unit ball is a property of the data's construction, decided on its
    probe before any draw (`probe_regression_data`; the drawn data are checked exactly).  The corrected statement (B_delta with m inside the log) is Part 1 of
    `glls24.lemB_1.softmax_perturbation_bounds`.  Precondition of the counterexample: the union
    bound exceeds delta at every tested width (otherwise the event holds with probability >= 1 -
    delta and no counterexample exists).  Control: every C at ``m_C / 64``, where the union bound
    is below delta, on ``instances`` initializations of its own (a stream the claim does not draw):
    the precondition fails and the counterexample vanishes."""
    s = tc.sizes
    delta = 0.1
    levels = {C: width_free_level(C, s["n"], s["d"], delta) for C in s["Cs"]}
    tested = {C: m_C // NARROW_FACTOR if tc.control == "narrow_network" else m_C for C, (_, _, m_C) in levels.items()}
    unions = [s["n"] * tested[C] * tail for C, (_, tail, _) in levels.items()]
    tc.record("m_C", {str(C): m_C for C, (_, _, m_C) in levels.items()})
    tc.record("union bound n m P(|<w, x>| > B) at the tested width", unions)
    tc.precondition.at_least("union bound over the n m pre-activations exceeds delta", unions, delta)
    decide_unit_ball(tc, "inputs in the unit ball", probe_regression_data(n=s["n"], d_in=s["d_in"], d=s["d"])[0])
    X, _ = regression_instance(tc, n=s["n"], d_in=s["d_in"], d=s["d"], K=1)
    log_p_values, frequencies = [], {}
    for C, (B, _, m_C) in levels.items():
        events = {m: preactivation_event(tc.rng("part 1", C, m), X[0], s["instances"], m, B)
                  for m in (m_C // NARROW_FACTOR, m_C // 8, m_C)}
        frequencies[str(C)] = {str(m): float(e.mean()) for m, e in events.items()}
        event = events[m_C]
        if tc.control == "narrow_network":   # fresh initializations at the narrow width
            event = preactivation_event(tc.rng("part 1", C, tested[C], "narrow control"), X[0], s["instances"],
                                        tested[C], B)
        log_p_values.append(stats.binom.logcdf(int(event.sum()), s["instances"], 1 - delta))
    tc.record("event_frequency by C and m", frequencies)
    tc.record("p_values", np.exp(log_p_values))
    tc.conclusion.at_most("the event fails more often than delta at every C", log_p_values,
                          np.log(0.05 / len(s["Cs"])))
