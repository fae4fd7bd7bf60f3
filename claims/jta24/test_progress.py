r"""jta24: the dual progress of plain l_p-AttGD towards the l_p-AttSVM direction (Lemma 27,
Appendix A.4) and the rate it gives in the norm (Lemma 29, Appendix A.5).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581.  Shared run `norm_growth_runs` (the one of
Lemma 30, on more instances): plain l_p-AttGD, eta = 10, p in {1.75, 2, 3} on 10 instances from
W(0) std 1, 2000 steps (quick; the full tier's 20 instances, 20000 steps); every iterate of the
last 200 steps and W(K/10) are kept.  alpha = the tokens of the last iterate, W_mm = its certified
l_p-AttSVM, bar W = W/||W||_p.  The lemmas hold for iterates in the cone of a locally optimal
alpha; after 2000 steps from W(0) std 1 some runs still select a non-locally-optimal alpha (they
have not reached a cone), so the runs meeting the hypotheses are counted and the others reported.
Re-derived after the 20-seed sweep: with the 3 instances of Lemma 30, 0 to 4 of the 9 runs met the
hypotheses on seeds 5, 6, 8, 15, 16 (hypotheses not met, or an error on an empty selection); the
10 instances (30 runs) give 13 to 27 runs meeting the hypotheses on seeds 0-19 (the counts are
recorded; MIN_RUNS = 5 is the value used before the sweep, not re-tuned).
"""
import numpy as np
import torch

from theorycheck import Control, claim
from theorycheck.optim import directional_bregman, lp_norm

from .setup import PAPER, PI, SIZES, excess_losses, instances_model, late_run

GROWTH_SIZES = {"quick": dict(SIZES["quick"], instances=10, steps=2000, eta=10.0),
                "full": dict(SIZES["full"], steps=20000, eta=10.0)}


@claim(
    f"{PAPER}.lem27.dual_progress",
    source="Lemma 27 (Appendix A.4), eq. (25); adapted from Sun et al. 2022, eq. (12)",
    statement="For W(k) in C_{p,mu,R_pi}(W_mm) and small eta, with a = ||W(k)||_p, b = ||W(k+1)||_p: "
              "<grad psi(W(k+1)) - grad psi(W(k)), bar W_mm> >= (1/(1+pi)) [b^(p-1) - a^(p-1) - "
              "(eta/a)(L(W(k)) - L(W(k+1)))].",
    provenance="inferred",
    controls={"lowest_tokens": Control(
        "reference", breaks=["(25) at every late step, every run"],
        description="bar W_mm replaced by the l_p-AttSVM direction of alpha_bad = argmin_t gamma "
                    "(the spec: violated at every late iterate)")},
    sizes=GROWTH_SIZES,
)
def test_dual_progress(tc):
    r"""Chain of the proof: Lemma 21 (alignment, pi) -> Lemma 24 (descent) -> Lemma 22 (b >= a)
    -> Lemma 14.  The left side is eta <-grad L(W(k)), bar W_mm> (the MD step in the dual),
    computed from the log-domain gradient; L(W(k)) - L(W(k+1)) from the exact excess losses.
    The cone condition (mu, R_pi) is a lost dataset constant: the late iterates are used (the
    spec's reading: k in the last 200 of K = 2000 steps, eta = 10; their directional divergence
    is recorded), alpha locally optimal and stable there, and, the measurable content of
    W(k) in C_{p,mu,R_pi} that the proof uses, Lemma 21's alignment <-G, bar W(k)> <= (1 + pi)
    <-G, bar W_mm> at every late step (hypotheses per run; the runs failing them are counted).
    The alignment was added after the 20-seed sweep: on seed 3 one locally optimal, stable run
    (p = 1.75, instance 7, alpha != opt in two samples, excess loss 0.018) moved away from
    W_mm_alpha, <-G, bar W_mm> < 0 at all 200 late steps (relative slack down to -242): its
    iterates were not in the cone (Lemma 21 fails there), which tokens alone cannot tell.  Given
    the alignment, the claim still tests the rest of the chain (Lemma 24's descent, Lemma 22's
    b >= a and Lemma 14), which carries the loss and norm terms.  Pass: relative slack
    (LHS - RHS)/|LHS| >= -1e-9 at every late step of every run (b^(p-1) - a^(p-1) is a difference
    of norms of size ~10-50 whose steps are ~1e-4 of them: 1e-9 covers the rounding; the spec
    observed RHS - LHS <= -2.6e-5 absolute).  Seeds 0-19: 13 to 27 of the 30 runs meet the
    hypotheses (10 instances after the 20-seed sweep, where 3 instances left 0-4 of 9 on five
    seeds); the claim passes on all 20 seeds, worst relative slack 0.062 (seed 3), and the
    control fails on all 20 (worst slack -5.7 or below).  The control (reference kind) puts the direction of
    the l_p-AttSVM of alpha_bad in place of bar W_mm: its left side is negative.
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
    tc.record("worst relative slack per run", slack.min(0))
    tc.conclusion.at_least("(25) at every late step, every run", float(slack.min()), -1e-9)


@claim(
    f"{PAPER}.lem29.rate_in_norm",
    source="Lemma 29 (Appendix A.5), eqs. (27)-(29)",
    statement="Summing Lemma 27 from k0 (in the cone): D_k <= pi/(1+pi) + (||W(k0)||_p/||W(k)||_p)^(p-1) "
              "(D_k0 - pi/(1+pi)) + eta (L(W(k0)) - L(W(k))) / ((1+pi) ||W(k0)||_p ||W(k)||_p^(p-1)), "
              "so D_k <= pi/(1+pi) + O(||W(k)||_p^(1-p)).",
    provenance="inferred",
    controls={
        "lowest_tokens": Control("reference", breaks=["summed bound (27) from k0 = K/10, every late k and run"],
                                 description="the divergence from the l_p-AttSVM of alpha_bad = argmin_t gamma"),
        "rate_in_steps": Control("statement", breaks=["summed bound (27) from k0 = K/10, every late k and run"],
                                 description="D_k -> 0 at a rate polynomial in k: the step ratio (k0/k)^(p-1) "
                                             "in place of the norm ratio and no floor (pi -> 0)"),
    },
    sizes=GROWTH_SIZES,
)
def test_rate_in_norm(tc):
    r"""Derivation (spec, consequence (27)): sum (25) over k0 <= j < k, use a_j >= ||W(k0)||_p
    (Lemma 22) and that L decreases (Lemma 24), and write <grad psi(W(k)), bar W_mm> =
    ||W(k)||_p^(p-1) (1 - D_k).  Distinct from Lemma 27's per-step test: it is the norm form of the
    rate over a long span, k0 = K/10 = 200 to every k of the last 200 steps (K = 2000, plain MD,
    eta = 10, pi = 0.1), D_k = D_psi_p(bar W_mm, bar W(k)).  Pass: D_k <= bound(k) with absolute
    allowance 1e-9 (D is a difference of O(1) terms, P5) at every late k of every run.  The bound
    is loose: on seed 0 it also holds with pi = 0 and with the norm ratio to the power 3(p-1)
    (D_K and the bound are recorded).  Controls: reference (the SVM of alpha_bad: its D stays near
    D_k0 while the bound shrinks with the norm ratio) and statement: D_k -> 0 at a rate polynomial
    in k, the step ratio (k0/k)^(p-1) in place of the norm ratio and no floor (pi -> 0), i.e.
    D_K <= 10^(1-p) D_k0 + (loss term) at K = 10 k0 (fails on seeds 0-19, margin -0.10 to -0.27;
    the claim passes on all 20, slack 0.036 to 0.063).  Its margin is derived, not tuned: by Lemma
    30 the norm grows logarithmically, r_K/r_k0 ~ log(eta K)/log(eta k0) ~ 1.3, and D decays like
    a power <= 2(p-1) of 1/r (the fitted rate of thm.rate), so D_K/D_k0 >= 1.3^(-2(p-1)) (0.67,
    0.59, 0.35 for p = 1.75, 2, 3) against 10^(1-p) (0.18, 0.1, 0.01).  (Before the 20-seed
    sweep the control kept the floor pi/(1+pi) = 0.091; on seed 8 every qualifying run had
    D_K < 0.091 and the control passed on them.)
    """
    late = late_run(tc, tc.control == "lowest_tokens")
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
    in_steps = tc.control == "rate_in_steps"
    ratio = late["k0"] / late["t"][:, None] if in_steps else r0 / r
    floor = 0.0 if in_steps else PI / (1 + PI)
    bound = floor + ratio ** (p - 1) * (D0 - floor) + eta * (loss0 - loss) / ((1 + PI) * r0 * r ** (p - 1))
    tc.record("D at k0 = K/10 and at K per run", np.stack([D0, D[-1]]))
    tc.record("bound at K per run", bound[-1])
    tc.conclusion.at_least("summed bound (27) from k0 = K/10, every late k and run", float((bound - D).min()), -1e-9)
