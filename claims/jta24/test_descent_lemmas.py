r"""jta24: the per-step lemmas of plain l_p-AttGD (appendix A.4-A.5: Lemmas 22, 24 and the
main-body Lemma 4 proved in A.5), checked at every step of plain mirror-descent runs.

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581.  Shared run `plain_mirror_steps`: plain
l_p-AttGD for p in {1.25, 1.5, 1.75, 2, 3, 4} and eta in {0.1, 1, 10, 100} on the 5 synthetic
instances from W(0) std 1, 200 steps (quick); a = ||W_k||_p, b = ||W_{k+1}||_p, G = grad L(W_k).
The inequalities hold for every W (no cone assumption), so every step of every run counts.
"""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.tails import TailBound

from .plain_descent import plain_mirror_steps
from .setup import PAPER, SIZES

SMALL_ETA = 0.1
"""Largest step size of the run's grid (0.1, 1, 10, 100) at which Lemma 24 (ii) is decided: the
paper's unspecified eta_0, calibrated in a third round (`test_descent`'s Calibrated record; 10, the
second round's, failed on an unseen seed)."""
DESCENT_II = "instances on which (ii) L(W_{k+1}) <= L(W_k) - D_psi(W_k, W_{k+1})/eta at every step"
DESCENT_INSTANCES = 30
"""Instances (independent data sets and W(0)) of the runs on which (ii) is decided, both tiers: the trials of
its binomial (30: the test at DESCENT_RATE rejects at <= 22 of 30 successes, which a step size beyond most
instances' eta_0, the eta_1000 control's, reaches with room)."""
DESCENT_RATE = 0.95
"""The rate claimed for "(ii) holds at every step of every p's run at eta = SMALL_ETA" over the instances:
calibrated (`test_descent`'s Calibrated record)."""
DESCENT_ALPHA = 1e-4
"""Level of the exact binomial test at `DESCENT_RATE`: the decision's false-failure rate when the instances'
true rate is at least DESCENT_RATE, by construction."""
ETA_0_HOW = (
    "third round, rule stated before the block's lem24 results were read: the largest eta of the grid whose "
    "worst rho over the calibration block is >= 0 on every seed, whose normal model is accepted (Shapiro-Wilk "
    "p >= 0.01, as the calibration checks it) and whose normal-tail upper bound is at most 3e-5 (a tenth of the "
    "claim budget: the second round's 5 sd rule left a validation bound above it).  Worst rho on 71000-71049 "
    "(mean +- sd, least; Shapiro-Wilk p): eta 0.1 0.954 +- 0.017 (0.902; p 0.048, bound < 1e-300), eta 1 "
    "0.873 +- 0.035 (0.755; p 0.0013: normal model rejected), eta 10 0.506 +- 0.151 (-0.091: negative on seed "
    "71011, so (ii) at the second round's eta_0 = 10 FAILED on an unseen seed), eta 100 negative on all 50: "
    "eta_0 = 0.1.  Validation on 71500-71549: 0 of 50 failed, worst rho at eta 0.1 0.944 +- 0.038 "
    "(least 0.719) with a heavy lower tail (Shapiro-Wilk p 1e-10: the normal model rejected), so the row is "
    "Cantelli's 0.015, above the 3e-4 budget: eta_0 = 0.1 is NOT confirmed (FLAGGED).  The worst rho over "
    "steps is a minimum whose lower tail no model of 50 seeds fits; a binomial over the runs is the "
    "candidate.  Kept over 10, which failed")
DESCENT_RATE_HOW = (
    "2026-11-29 (issue 31): (ii) made a binomial over instances (it was the worst rho over the runs of 5 "
    "instances, Cantelli 0.015 on 71500-71549).  Rule stated before the block ran (that of jta24's LEVEL_RATE): "
    "DESCENT_RATE = the one-sided 99.9% Clopper-Pearson lower bound of the per-instance rate on the "
    "calibration block, rounded down to 0.05: 1500 of 1500 instances held (worst rho per instance at least "
    "0.851), bound 0.9954, so 0.95.  Validation: 0 of 50 seeds failed, 1500 of 1500 instances held (worst rho "
    "per instance at least 0.809); eta_1000 failed on 50 of 50, 0 of 1500 instances holding (the largest worst "
    "rho -0.63).  Rows on 77500-77549 (pooled trials): claim 1.4e-15 (was Cantelli 0.015 on 71500-71549), "
    "eta_1000 1.6e-56 (was counted, 0.058)")
PLAIN_SIZES = {"quick": dict(SIZES["quick"], steps=200), "full": dict(SIZES["full"], steps=1000)}
REL = "conditioned"
"""Tolerance kind of the relative round-off allowance of a per-step inequality between norms
(round-off of the p-th powers of <= 100 entries, times the conditioning of a difference of
norms; the tightest inequalities are equalities up to rounding): tc.tol(REL)."""



#: why Lemma 4's decisions cannot fail on any run: the triangle inequality holds for the computed iterates
#: up to a few u, and the computed slacks are within a few hundred u of the exact ones
NORM_INCREMENT_ROUNDOFF = TailBound(0.0, (
    "for the iterates the run computed, theta = fl(grad psi(W_k) - eta G) with G = exp(M) D the same "
    "scaled gradient that G_q measures (recomputed by the same CPU kernels on the same floats; the step's move "
    "fl(fl(eta exp(M)) D) is eta G within 2u per entry) "
    "and b^(p-1) = ||theta||_q for W_k+1 = grad psi^-1(theta) up to that pow's rounding: so b^(p-1) <= (1 + 4u)(a^(p-1) + "
    "eta ||G||_q) (the subtraction's rounding, the mirror map's pow within 2u), (ii) holds for the exact "
    "norms of these floats up to 4u of its scale, and (i) follows from it as in the proof (b <= a: trivial; "
    "b > a: the mean value theorem, b^(p-1) - a^(p-1) >= (p-1) min(a, b)^(p-2) (b - a) and b^(2-p) a^(p-1) "
    "<= b), its extra term at most 32u of b.  The computed a, b (lp_norm: peak times a sum of N <= 100 "
    "powers <= 5, then a 1/p power), their (p-1)-th powers and ||G||_q carry at most about 100u relative "
    "each, and the exponents 1/(p-1), 1/p, q, rounded once, add u |log x| per power of x (x within "
    "1e+-300: at most 700u, and only in entries far below the peak), and a^(p-1) <= b^(p-1) + eta ||G||_q "
    "(for (i): a <= 3.5 (rhs_i + b)), so each slack, normalized by rhs + b^(p-1) (resp. rhs_i + b), moves "
    "by at most about 2000u = 4.4e-13; underflow (subnormal gradients or entries) adds at "
    "most (eta + 2) N 2^-1074 < 1e-319 absolute against the floor 1e-300 of the normalization.  Both far "
    "below the allowance tol('conditioned') = 2^14 u = 3.6e-12"))
#: why Lemma 22's decision cannot fail on any run, its slack normalized by the scale of its round-off
NORM_MONOTONE_ROUNDOFF = TailBound(0.0, (
    "for the iterates the run computed, Hoelder on theta = fl(grad psi(W_k) - eta G) (G the scaled gradient "
    "the step uses, within 2u per entry of the move) and U = W_k / a gives b^(p-1) = ||theta||_q >= "
    "<theta, U> >= a^(p-1) + eta <-G, W_k>/a - 2u a^(p-1) - 2u eta ||G||_q - u b^(p-1) (the mirror map's "
    "pow, the move's and the subtraction's roundings; |<G, W_k>| <= ||G||_q a).  The computed a^(p-1), "
    "b^(p-1) carry about 100u relative each and <-G, W_k> at most N u ||G||_q a (N = 100 products), so "
    "the slack's error is at most about (200 + N) u (a^(p-1) + b^(p-1) + eta ||G||_q), and the exponents "
    "1/(p-1), 1/p rounded once add at most 700u relative per power (u |log x|, x within 1e+-300): "
    "normalized by that sum (the decision's scale) at most about 1500u = 3.3e-13 (underflow: < 1e-319 absolute against the "
    "floor 1e-300), far below tol('conditioned') = 2^14 u"))


def gd_steps(conclusion: str) -> Control:
    """The dynamics control of Lemmas 4 and 22, breaking ``conclusion``: `plain_mirror_steps` with
    GD's mirror map in every arm (its own run), measured in each arm's l_p norms."""
    return Control("dynamics", breaks=[conclusion],
                   description="plain GD steps (the mirror map of p = 2) measured in the l_p norms of "
                               "each arm: the lemma rests on the mirror step grad psi(W(k+1)) = "
                               "grad psi(W(k)) - eta G", constants={"mirror_p": 2.0})


def plain_steps(tc):
    """The claim's `plain_mirror_steps`, or under ``gd_steps`` those with GD's mirror map."""
    return tc.use(plain_mirror_steps, mirror_p=2.0) if tc.control == "gd_steps" else tc.use(plain_mirror_steps)


@claim(
    f"{PAPER}.lem4.norm_increment",
    source="main-body Lemma 4 (proof in Appendix A.5: Lemmas 14, 15, 18, Hoelder)",
    statement="For plain l_p-AttGD with a = ||W(k)||_p, b = ||W(k+1)||_p, G = grad L(W(k)): "
              "(i) b - a <= eta ||G||_q (a + b) / ((p-1) a^(p-1)); (ii) b^(p-1) - a^(p-1) <= eta ||G||_q.",
    provenance="inferred",
    controls={"half_step": Control("statement", breaks=["(ii) b^(p-1) - a^(p-1) <= eta ||G||_q"],
                                   description="(ii) with eta ||G||_q / 2"),
              "gd_steps": gd_steps("(ii) b^(p-1) - a^(p-1) <= eta ||G||_q")},
    calibration=["2026-11-29 (issue 31): (i) and (ii) state bound 0 (`NORM_INCREMENT_ROUNDOFF`, a forward-error "
                 "analysis; no threshold changed).  Calibrated on 71500-71549: claim 0.049 -> 0 (0 of 50 "
                 "failed; least margin 1.0 for both, i.e. a slack of 0 at a step that does not move); the "
                 "controls half_step and gd_steps failed on 50 of 50 but their margins are not normal on this "
                 "block (counted, 0.058)"],
    sizes=PLAIN_SIZES,
)
def test_norm_increment(tc):
    r"""(ii): b^(p-1) = ||grad psi(W(k+1))||_q = ||grad psi(W(k)) - eta G||_q <= a^(p-1) + eta ||G||_q
    (triangle inequality; tight when the step is parallel to grad psi(W(k))).  (i) follows from
    (ii) with Lemma 15 (b^(p-1) - a^(p-1) >= (p-1) min(a,b)^(p-2) (b - a) type bounds) and
    Lemma 14; which of the equivalent forms the paper states is lost (provenance inferred).
    Pass: both at every step of every run with relative allowance tc.tol(REL) of the right
    side's scale; trivially true where b <= a (the proof's first case), checked anyway.  Both
    hold for every step of every run, so only round-off could break them: their stated bound
    (`NORM_INCREMENT_ROUNDOFF`, a forward-error analysis of the computed slacks).  The
    control halves the right side of (ii), which large steps (eta = 100) violate (discrimination);
    ``gd_steps`` reruns the steps with GD's mirror map in every arm (a dynamics of its own): for
    p > 2 b^(p-1) - a^(p-1) ~ (p-1) a^(p-2) (b - a) then exceeds eta ||G||_q at large a.
    """
    r = plain_steps(tc)
    a, b, Gq, p, eta = r["a"], r["b"], r["G_q"], r["p"], r["eta"]
    factor = 0.5 if tc.control == "half_step" else 1.0
    rhs_i = eta * Gq * (a + b) / ((p - 1) * a ** (p - 1))
    slack_i = (rhs_i - (b - a)) / np.maximum(rhs_i + b, 1e-300)
    rhs_ii = factor * eta * Gq
    slack_ii = (rhs_ii - (b ** (p - 1) - a ** (p - 1))) / np.maximum(rhs_ii + b ** (p - 1), 1e-300)
    tc.record("steps with b > a", int(np.sum(b > a)))
    stated = None if tc.control else NORM_INCREMENT_ROUNDOFF
    tc.conclusion.at_least("(i) b - a <= eta ||G||_q (a + b) / ((p-1) a^(p-1))", slack_i.min(), -tc.tol(REL),
                           tail_bound=stated)
    tc.conclusion.at_least("(ii) b^(p-1) - a^(p-1) <= eta ||G||_q", slack_ii.min(), -tc.tol(REL),
                           tail_bound=stated)


@claim(
    f"{PAPER}.lem22.norm_monotone",
    source="Lemma 22 (Appendix A.4)",
    statement="For plain l_p-AttGD: ||W(k+1)||_p^(p-1) >= ||W(k)||_p^(p-1) + eta <-grad L(W(k)), "
              "W(k)> / ||W(k)||_p; so the norm does not decrease while <-grad L, W(k)> >= 0.",
    provenance="inferred",
    controls={"doubled": Control("statement", breaks=["b^(p-1) >= a^(p-1) + eta <-G, W_k>/a"],
                                 description="the eta term doubled"),
              "gd_steps": gd_steps("b^(p-1) >= a^(p-1) + eta <-G, W_k>/a")},
    calibration=["the spec observed a worst relative slack of -1.7e-9 before the rounding allowance "
                 "(equality up to rounding at small steps); the allowance tc.tol(REL) is the "
                 "framework's, not chosen on data",
                 "2026-11-29 (issue 31): the slack relative to b^(p-1) + a^(p-1) + eta ||G||_q (the scale of "
                 "its round-off; was b^(p-1)) and a stated bound 0 (`NORM_MONOTONE_ROUNDOFF`).  Calibrated on "
                 "71500-71549: claim 0.049 -> 0 (0 of 50 failed), doubled 6.8e-8, gd_steps 5.0e-8"],
    sizes=PLAIN_SIZES,
)
def test_norm_monotone(tc):
    r"""With U = W(k)/a (||U||_p = 1), Hoelder gives b^(p-1) = ||grad psi(W(k+1))||_q >=
    <grad psi(W(k+1)), U> = <grad psi(W(k)) - eta G, U> = a^(p-1) + eta <-G, W(k)>/a.  Holds for
    every W (no assumption); nearly tight (equality up to rounding when the step is small; the
    spec's observation is in the calibration record).  Pass: slack relative to
    b^(p-1) + a^(p-1) + eta ||G||_q >= -tc.tol(REL) at every step: that sum is the scale of the
    slack's round-off (the forward-error analysis of its stated bound, `NORM_MONOTONE_ROUNDOFF`),
    where b^(p-1) alone is not when a large step nearly cancels the dual iterate (b^(p-1) << eta
    ||G||_q).  The control doubles the eta term (violated whenever
    <-G, W(k)> > 0 and the step is small; discrimination); ``gd_steps`` reruns the steps with GD's
    mirror map in every arm (a dynamics of its own), where Hoelder's step no longer applies.
    """
    r = plain_steps(tc)
    a, b, p, eta, ngw, Gq = r["a"], r["b"], r["p"], r["eta"], r["neg_G_W"], r["G_q"]
    factor = 2.0 if tc.control == "doubled" else 1.0
    rhs = a ** (p - 1) + factor * eta * ngw / a
    scale = b ** (p - 1) + a ** (p - 1) + eta * Gq             # the scale of the slack's round-off
    slack = (b ** (p - 1) - rhs) / np.maximum(scale, 1e-300)
    tc.record("fraction of steps with <-G, W_k> >= 0", float(np.mean(ngw >= 0)))
    tc.conclusion.at_least("b^(p-1) >= a^(p-1) + eta <-G, W_k>/a", slack.min(), -tc.tol(REL),
                           tail_bound=None if tc.control else NORM_MONOTONE_ROUNDOFF)


@claim(
    f"{PAPER}.lem24.descent",
    source="Lemma 24 (Appendix A.4), after Sun et al. 2022",
    statement="(i) eta <-grad L(W(k)), W(k)> = (p-1)[psi(W(k+1)) - psi(W(k))] - D_psi(W(k), W(k+1)); "
              "(ii) for small eta, L(W(k+1)) <= L(W(k)) - D_psi(W(k), W(k+1)) / eta.",
    provenance="inferred",
    controls={"eta_1000": Control("dynamics", breaks=[DESCENT_II],
                                  description="step size eta = 1000, beyond the small-step condition")},
    calibration=["eta <= 10 for (ii) was first chosen after seeing seeds 1, 2 (eta = 100 violated (ii) on "
                 "the first steps for p in {1.25, 1.5, 4}).",
                 "the spec (logistic loss) observed the eta = 1000 control's (ii) violated by +0.09 to "
                 "+0.8 relative",
                 "a first calibration on seeds 13000-13049 decided (ii) as its worst slack relative to "
                 "L(W_k), rule stated before: the largest eta of the grid whose worst slack is >= 0 on "
                 "every seed and >= 5 sd above 0 on the block's mean.  Worst slack (mean +- sd over the block): eta 0.1 6.0e-5 +- 1.6e-5, eta 1 5.7e-5 +- 1.6e-5, eta 10 2.7e-6 +- 7.4e-7 (3.5-3.7 sd); eta 100 failed on all 50.  No eta met 5 sd: the "
                 "worst slack is a minimum over steps of a quantity that goes to 0+ as the steps "
                 "shrink, whose spread does not measure the distance to eta_0; (ii) is now decided as "
                 "rho (the test's docstring), recalibrated on 13200-13249 (the second-round block)",
                 "second round (eta_0 = 10, calibrated on 13200-13249, validated on 13100-13149), now "
                 "history: rule stated before the block ran: the largest eta of the grid whose worst "
                 "rho is >= 0 on every calibration seed and >= 5 sd above 0 on the block's mean. "
                 "Worst rho (mean +- sd, least): eta 0.1 0.95 +- 0.02 (0.86), eta 1 0.87 +- "
                 "0.04 (0.74), eta 10 0.52 +- 0.10 (0.25; 5.2 sd), eta 100 -0.73 +- 0.16 "
                 "(negative on all 50): eta_0 = 10 (the first design's value, now "
                 "calibrated; 13100-13149 was never run on this claim).  Validation: 0 of 50 failed, but worst rho at eta 10 0.49 +- 0.13 (least 0.19) is 3.9 sd from 0: the tail bound 1.8e-3 exceeds the 3e-4 budget, so eta_0 = 10 is NOT confirmed (FLAGGED); eta 1 held 0.86 +- 0.05 (17.8 sd), the candidate for a third round on fresh blocks",
                 Calibrated(decision=DESCENT_II, threshold=f"eta_0 = SMALL_ETA = {SMALL_ETA:g}",
                            calibration_seeds="71000-71049", validation_seeds="71500-71549",
                            how=ETA_0_HOW),
                 Calibrated(decision=DESCENT_II,
                            threshold=f"binomial at DESCENT_RATE = {DESCENT_RATE} (level {DESCENT_ALPHA}) over "
                                      f"DESCENT_INSTANCES = {DESCENT_INSTANCES} instances at eta_0 = SMALL_ETA",
                            calibration_seeds="77000-77049", validation_seeds="77500-77549",
                            how=DESCENT_RATE_HOW)],
    sizes=PLAIN_SIZES,
)
def test_descent(tc):
    r"""(i) is exact: D_psi(W, W') = psi(W) - psi(W') - <grad psi(W'), W - W'> with
    <grad psi(W'), W'> = p psi(W') and <grad psi(W'), W> = p psi(W) - eta <G, W>.  Pass: residual
    <= tc.tol("iterative") relative to (p-1)(psi(W') + psi(W)) (cancellation of two potentials of size up to
    ~10^3).  (ii) is the mirror-descent descent lemma when psi - eta L is convex along the step
    ("eta small enough", a threshold eta_0 the paper leaves unspecified).  With the mirror step
    grad psi(W') = grad psi(W) - eta G, L(W) - L(W') = <G, W - W'> - D_L(W', W) and
    eta <G, W - W'> = D_psi(W, W') + D_psi(W', W), so eta [L(W) - D_psi(W, W')/eta - L(W')] =
    D_{psi - eta L}(W', W) and (ii) holds exactly when
    rho_k = D_{psi - eta L}(W_{k+1}, W_k) / D_psi(W_{k+1}, W_k) = 1 - eta D_L / D_psi >= 0, the
    step's distance to its edge eta_c(k) (rho_k = 1 - eta / eta_c(k) for the smoothness of L
    relative to psi along the step).  A bound on eta from the mathematics has no value computable
    from the instance before the run: psi's Hessian diag((p-1)|W_ij|^(p-2)) has no positive lower
    bound for p > 2 (entries crossing 0) and shrinks as ||W|| grows for p < 2.  So eta_0 =
    SMALL_ETA is calibrated (the Calibrated record), and since eta_0 is the instance's (its
    relative smoothness along its run), a fixed eta lies below it at a rate over the instances:
    (ii) is decided as a binomial over DESCENT_INSTANCES = 30 instances (independent data sets and
    W(0); their own run of `plain_mirror_steps` at eta = SMALL_ETA, every p of the grid, the
    instance the trial since its p share its data).  An instance succeeds when rho_k, its
    numerator given the allowance tc.tol(REL) eta L(W_k) (the round-off of L), is >= 0 at every
    step of every p's run; P[success] >= DESCENT_RATE is decided by the exact one-sided binomial
    test at level DESCENT_ALPHA = 1e-4 (rejects at <= 22 of 30), so its false-failure rate is at
    most 1e-4 whenever the instances' rate is at least DESCENT_RATE (calibrated: the record).  The
    worst rho per instance, and on the 5-instance grid run the min rho per eta, are recorded.
    The control (dynamics kind) runs eta = 1000: (ii) then fails on the first steps of every
    instance (the spec's observation: the calibration record), which the test rejects.
    """
    control = tc.control == "eta_1000"
    r = tc.use(plain_mirror_steps, etas=(1000.0,)) if control else tc.use(plain_mirror_steps)
    p, eta = r["p"], r["eta"]
    lhs = eta * r["neg_G_W"]
    rhs = (p - 1) * (r["psi_next"] - r["psi"]) - r["D_step"]
    scale = (p - 1) * (r["psi_next"] + r["psi"])
    tc.conclusion.at_most("(i) exact identity, relative residual", (np.abs(lhs - rhs) / scale).max(), tc.tol("iterative"))
    tc.record("worst rho per eta", {float(e): float(_rho(tc, r)[:, eta == e].min()) for e in np.unique(eta)})
    r2 = tc.use(plain_mirror_steps, etas=(1000.0 if control else SMALL_ETA,), n_instances=DESCENT_INSTANCES)
    worst = _rho(tc, r2).min(0)                                        # per run
    per_instance = np.array([worst[r2["instance"] == k].min() for k in range(DESCENT_INSTANCES)])
    tc.record("worst rho per instance, eta = SMALL_ETA (eta = 1000 under eta_1000)", per_instance)
    tc.conclusion.binomial(DESCENT_II, per_instance >= 0, p=DESCENT_RATE, alpha=DESCENT_ALPHA,
                           low_power="the alternative is a step size beyond the instances' eta_0, at which "
                                     "(ii) fails on the first steps of most instances (the control), which the "
                                     "test rejects; 30 instances cannot resolve a rate 0.15 below DESCENT_RATE "
                                     "at level 1e-4")


def _rho(tc, r):
    r"""rho_k = D_{psi - eta L}(W_{k+1}, W_k) / D_psi(W_{k+1}, W_k) per step and run of a
    `plain_mirror_steps` run, its numerator given the allowance tc.tol(REL) eta L(W_k) (the
    round-off of L): (ii) holds at step k exactly when rho_k >= 0 (`test_descent`)."""
    eta = r["eta"]
    D_back = eta * r["G_step"] - r["D_step"]                          # D_psi(W_{k+1}, W_k)
    gap = eta * (r["L"] - r["L_next"]) - r["D_step"]                  # D_{psi - eta L}(W_{k+1}, W_k)
    return (gap + tc.tol(REL) * eta * r["L"]) / D_back
