r"""jta24: the dual progress of plain l_p-AttGD towards the l_p-AttSVM direction (Lemma 27,
Appendix A.4) and the rate it gives in the norm (Lemma 29, Appendix A.5).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581.  Shared run `norm_growth_runs` (the one of
Lemma 30): plain l_p-AttGD, eta = 10, p in {1.75, 2, 3} on 32 instances from
W(0) std 1, 2000 steps (quick; the full tier's 20 instances, 20000
steps); every iterate of the
last 200 steps and W(K/10) are kept.  alpha = the tokens of the last iterate, W_mm = its certified
l_p-AttSVM, bar W = W/||W||_p.  The lemmas hold for iterates in the cone of a locally optimal
alpha; after 2000 steps from W(0) std 1 some runs still select a non-locally-optimal alpha (they
have not reached a cone), so the runs meeting the hypotheses are counted and the others reported
(see the claims' calibration records for why).
"""
import numpy as np
import torch

from theorycheck import Calibrated, Control, claim
from theorycheck.optim import directional_bregman, lp_norm, mirror_map

from theorycheck.patterns import per_instance

from .plain_descent import PI, excess_losses, instances_model, late_run
from .setup import PAPER, SIZES

SETTLED_POWER = ("the settled runs are a subset of the 96 (quick) or 60 (full) runs, about two thirds "
                 "of them settle at K = 2000: power 0.8 at p = 0.8 needs about 60")

PROGRESS_SIZES = {"quick": dict(SIZES["quick"], instances=32, steps=2000),
                  "full": dict(SIZES["full"], steps=20000)}
"""Both lemmas' runs: 32 instances x 3 p in the quick tier.  Lemma 27's binomial over the settled
runs: about 60 settle (power 0.8 at 0.65; the counts at 10 instances are in the claim's calibration
record); Lemma 29: about a third of the runs meet its hypotheses over the whole span from K/10."""


@claim(
    f"{PAPER}.lem27.dual_progress",
    source="Lemma 27 (Appendix A.4), eq. (25); adapted from Sun et al. 2022, eq. (12)",
    statement="For W(k) in C_{p,mu,R_pi}(W_mm) and small eta, with a = ||W(k)||_p, b = ||W(k+1)||_p: "
              "<grad psi(W(k+1)) - grad psi(W(k)), bar W_mm> >= (1/(1+pi)) [b^(p-1) - a^(p-1) - "
              "(eta/a)(L(W(k)) - L(W(k+1)))].",
    provenance="inferred",
    controls={"lowest_tokens": Control(
        "reference", breaks=["(25) at every late step, per settled run"],
        description="bar W_mm replaced by the l_p-AttSVM direction of alpha_bad = argmin_t gamma "
                    "(the spec: violated at every late iterate)")},
    calibration=["Lemma 21's alignment was a run-selection hypothesis (added after seed 3 of the 20-seed "
                 "sweep had one settled but misaligned run violating (25)); replaced by the binomial over "
                 "all settled runs after the review: no threshold moved.",
                 "instances 10 -> 32 in the quick tier after the second review (19 of 30 runs settled "
                 "on 10 instances: power 0.33 at 0.65)."],
    sizes=PROGRESS_SIZES,
)
def test_dual_progress(tc):
    r"""Chain of the proof: Lemma 21 (alignment, pi) -> Lemma 24 (descent) -> Lemma 22 (b >= a)
    -> Lemma 14.  The left side is eta <-grad L(W(k)), bar W_mm> (the MD step in the dual),
    computed from the log-domain gradient; L(W(k)) - L(W(k+1)) from the exact excess losses.
    The cone C_{p,mu,R_pi} has lost dataset constants (mu ~ 1e-9 in the reconstruction), so
    membership is tested by what can be measured independently of (25): the late iterates (the
    last 200 of K = 2000 steps, eta = 10, pi = 0.1), with alpha locally optimal and selected at
    every late iterate (the runs failing this are counted).  Lemma 21's alignment, the proof's
    own step, is NOT used to select runs (it would select by the chain's first link); it is
    recorded per run.  A run whose late iterates lie outside the cone although its tokens are
    settled can violate (25), so the statement is decided as "with high probability over the
    settled runs": per run, relative slack (LHS - RHS)/|LHS| >= -1e-9 at every late step
    (b^(p-1) - a^(p-1) is a difference of norms of size ~10-50 whose steps are ~1e-4 of them:
    1e-9 covers the rounding), accepted by a binomial test at p = 0.8 over all settled runs.
    The control (reference kind) puts the direction of the l_p-AttSVM of alpha_bad in place of
    bar W_mm: its left side is negative on every run.
    """
    late = late_run(tc, tc.control == "lowest_tokens")
    if late is None:
        return
    W, r, p, eta = late["W"], late["r"], late["p"], late["eta"]
    model = instances_model(late["data"], late["inst"])
    refs = torch.as_tensor(late["refs"])
    unit_mm = refs / lp_norm(refs, torch.as_tensor(p))[:, None, None]
    lhs = []
    for Wc in W[:-1]:
        g = model.scaled_gradient({"W": torch.as_tensor(Wc)})["W"]
        lhs.append((eta * g.log_scale.exp() * -(g.direction * unit_mm).flatten(1).sum(1)).numpy())
    lhs = np.array(lhs)
    loss = excess_losses(model, W)
    a, b = r[:-1], r[1:]
    rhs = (b ** (p - 1) - a ** (p - 1) - eta / a * (loss[:-1] - loss[1:])) / (1 + PI)
    slack = (lhs - rhs) / np.abs(lhs)
    D = directional_bregman(refs, torch.as_tensor(W[0]), torch.as_tensor(p)).numpy()
    tc.record("directional divergence at the window's start per run", D)
    tc.record("Lemma 21 aligned at every late step, per run (recorded, not selected on)", late["aligned"])
    per_instance(tc, "(25) at every late step, per settled run", slack.min(0), slack.min(0) >= -1e-9, p=0.8,
                 low_power=SETTLED_POWER)


SUMMED_BOUND = "summed bound (27) from k0 = K/10 at every late k, per run meeting the hypotheses"
SUMMED_POWER = ("the runs meeting the hypotheses over the whole span are a subset of the 96 (quick) or 60 "
                "(full) runs, about 40% of them at K = 2000: power 0.8 at p = 0.8 needs about 60")


@claim(
    f"{PAPER}.lem29.rate_in_norm",
    source="Lemma 29 (Appendix A.5), eqs. (27)-(29)",
    statement="Summing Lemma 27 from k0 (in the cone): D_k <= pi/(1+pi) + (||W(k0)||_p/||W(k)||_p)^(p-1) "
              "(D_k0 - pi/(1+pi)) + eta (L(W(k0)) - L(W(k))) / ((1+pi) ||W(k0)||_p ||W(k)||_p^(p-1)), "
              "so D_k <= pi/(1+pi) + O(||W(k)||_p^(1-p)).",
    provenance="inferred",
    controls={
        "lowest_tokens": Control("reference", breaks=[SUMMED_BOUND],
                                 description="the divergence from the l_p-AttSVM of alpha_bad = argmin_t gamma"),
    },
    calibration=["instances 3 -> 10 after the 20-seed sweep (0 to 4 of 9 runs met the hypotheses on seeds 5, "
                 "6, 8, 15, 16); MIN_RUNS = 5 kept from before.",
                 "rate_in_steps control: its floor pi/(1+pi) was dropped after it passed on seed 8 (every "
                 "qualifying run had D_K below the floor); removed after the review (a statement typed "
                 "into the claim, re-judging its own divergences).",
                 "unseen sweep seed 955297915: (27) violated by 7e-3 (bound - D = -0.007 at a late k) on the "
                 "run p = 3, instance 1, which met the hypotheses over the late 200 steps only: replayed "
                 "with every iterate kept, it was outside Lemma 21's alignment on 1517 of the steps 200-2000 "
                 "(last at 1729), so not in the cone over the summed span; every run meeting them over the "
                 "whole span held the bound (least bound - D 0.039).  Not a counterexample: the hypothesis "
                 "check now covers the span (K/200-th steps from K/10, then every late step).",
                 "instances 10 -> 32 (the run Lemma 27 already computes) with the span check: on 10 instances "
                 "as few as 5 of 30 runs met the hypotheses over the span (calibration seeds 14000-14008), "
                 "at the precondition's MIN_RUNS.",
                 "until 2026-11-30 the decision was 'summed bound (27) from k0 = K/10, every late k and run' "
                 "(the least slack over every late k and run >= -1e-9, the allowance round-off, fixed before the "
                 "data), calibrated on 14000-14003, 14010-14013 (0 failures, 26-47 of the 96 runs met the "
                 "hypotheses, least bound - D 0.023-0.050; lowest_tokens failed on 8/8) and validated on "
                 "14100-14149 (50/50 passed, lowest_tokens failed on 50/50); its row there: Cantelli 3.6e-2 (the "
                 "least slack 8.0 sd from failing, Shapiro-Wilk p 2e-5: a heavy lower tail, no tail model), the "
                 "precondition (at least 5 runs meeting the hypotheses) 4.4e-4 (normal tail, 4.4 sd).  Both "
                 "replaced (2026-11-30) by binomials over the runs: the bound per run meeting the hypotheses at "
                 "p = 0.8 (Lemma 27's decision on its settled runs, the same rate, nothing chosen on data) and "
                 "the precondition at MIN_RATE (plain_descent.py: the former count in the quick tier).  A log "
                 "scale for the least slack against the round-off allowance was tried on 96000-96049 and "
                 "dropped: the slack can cross 0 (it did on a run outside the cone, above), so a log-normal "
                 "model of it has no reason, and its lowest_tokens control, whose ratio is negative, was left "
                 "to Cantelli (1.4e-2, over its budget)",
                 Calibrated(decision=SUMMED_BOUND, threshold="binomial at p = 0.8 (level 0.05) over the runs "
                                                             "meeting the hypotheses, per run slack >= -1e-9",
                            calibration_seeds="96000-96049",
                            validation_seeds="96100-96149",
                            how="nothing chosen on data (Lemma 27's rate, the round-off allowance fixed before "
                                "the data); the calibration block is the one the log-scale variant ran on, where "
                                "1818 of 4800 runs met the hypotheses and every one held the bound (least slack "
                                "0.024).  Validation: 0 of 50 seeds failed; 1781 of 4800 runs met the hypotheses (23 to 55 a seed; the "
                                "precondition's beta-binomial, dispersion p 1e-8), every one of them held (27) at "
                                "every late k; lowest_tokens failed on 50 of 50 (held on 0 runs).  Row: 2.8e-6 (the "
                                "precondition, beta-binomial; the bound's binomial 2.1e-19, pooled trials); "
                                "lowest_tokens 2.8e-6")],
    sizes=PROGRESS_SIZES,
)
def test_rate_in_norm(tc):
    r"""Derivation (spec, consequence (27)): sum (25) over k0 <= j < k, use a_j >= ||W(k0)||_p
    (Lemma 22) and that L decreases (Lemma 24), and write <grad psi(W(k)), bar W_mm> =
    ||W(k)||_p^(p-1) (1 - D_k).  Distinct from Lemma 27's per-step test: it is the norm form of the
    rate over a long span, k0 = K/10 = 200 to every k of the last 200 steps (K = 2000, plain MD,
    eta = 10, pi = 0.1), D_k = D_psi_p(bar W_mm, bar W(k)).  Pass: D_k <= bound(k) with absolute
    allowance 1e-9 (D is a difference of O(1) terms, P5) at every late k of every run meeting the
    hypotheses over the whole summation span (alpha locally optimal, and alpha selected and
    Lemma 21's alignment at every kept iterate from k0 = K/10 on: every K/200-th step, then every
    late step; the lemma sums Lemma 27, which needs every iterate of the span in the cone).  As
    Lemma 27's per-step inequality on its settled runs, the lemma's "every run in the cone" is
    decided per run at a rate: a run meeting the hypotheses succeeds when D_k <= bound(k) at every
    late k, accepted by the exact binomial test of P >= 0.8 at level 0.05 over those runs (the
    hypotheses are measured, not known: a run outside the cone for part of the span can violate
    the bound, see the calibration record).  The bound is loose (D_K, the bound and the least
    bound - D per run are recorded).  Control: reference (the SVM of alpha_bad, solved in the
    control's case: its D stays near D_k0 while the bound shrinks with the norm ratio, on every
    run).
    """
    late = late_run(tc, tc.control == "lowest_tokens", summed=True)
    if late is None:
        return
    W, r, p, eta = late["W"], late["r"], late["p"], late["eta"]
    model = instances_model(late["data"], late["inst"])
    refs, pt = torch.as_tensor(late["refs"]), torch.as_tensor(p)
    D0 = directional_bregman(refs, torch.as_tensor(late["W_tenth"]), pt).numpy()
    D = np.stack([directional_bregman(refs, torch.as_tensor(Wc), pt).numpy() for Wc in W])
    loss0 = excess_losses(model, late["W_tenth"][None])[0]
    loss = excess_losses(model, W)
    r0 = late["r_tenth"]
    floor = PI / (1 + PI)
    bound = floor + (r0 / r) ** (p - 1) * (D0 - floor) + eta * (loss0 - loss) / ((1 + PI) * r0 * r ** (p - 1))
    tc.record("D at k0 = K/10 and at K per run", np.stack([D0, D[-1]]))
    tc.record("bound at K per run", bound[-1])
    # the identity the derivation writes: <grad psi(W(k)), bar W_mm> = ||W(k)||_p^(p-1) (1 - D_k),
    # with D_k = D_psi_p(bar W_mm, bar W(k)) (the divergence's argument order matters)
    unit_refs = refs / lp_norm(refs, pt)[:, None, None]
    pairing = np.stack([(mirror_map(torch.as_tensor(Wc), pt) * unit_refs).sum((-1, -2)).numpy() for Wc in W])
    tc.conclusion.at_most("identity <grad psi(W(k)), bar W_mm> = ||W(k)||_p^(p-1) (1 - D_k), every late k",
                          np.abs(pairing - r ** (p - 1) * (1 - D)) / r ** (p - 1), tc.tol("accumulated"))
    slack = (bound - D).min(0)                                      # least bound - D over the late steps
    per_instance(tc, SUMMED_BOUND, slack, slack >= -1e-9, p=0.8, low_power=SUMMED_POWER)
