r"""vdt24, fixed decoder: the loss landscape behind global convergence, and its preconditions.

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738, Section 3 and Appendix A.  Only W is trained; u is the
decoder of the data set, L(W) = (1/n) sum_i exp(-gbar_i(W)), gbar_i = sum_t s_{i,t} gamma_{i,t}.

Under Assumption 2 (all non-optimal scores of a sample equal, gap Delta_i = gamma_{i,o} -
gamma_{i,t} > 0) the negative gradient has the closed form (G)

    -grad L(W) = (1/n) sum_i c_i(W) (x_{i,o} - xtilde_i) x_{i,1}^T,
    c_i = exp(-gbar_i) s_{i,o} (1 - s_{i,o}) Delta_i,
    xtilde_i = sum_{t != o} s_{i,t} x_{i,t} / (1 - s_{i,o}),

from which follow the gradient sandwich, the correlation with W_mm (Lemma 6) and, with
Assumption 1 and large norms, the cone condition (Lemma 2; those two in
`test_gradient_cone.py`).  Constants used below:
R_i = ||x_{i,1}|| max_{t != o} ||x_{i,o} - x_{i,t}|| and kappa = 1/(||W_mm||_F max_i R_i).

All quantities that involve the size of the gradient are formed in log space from the
library's scaled gradient grad L = exp(M) G, so they stay exact where the gradient
underflows (saturated attention); the naive textbook gradient (autograd) is used only as an
independent reference at unsaturated points.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from theorycheck import Calibrated, Control, claim
from theorycheck import data as datasets
from theorycheck.models import autograd_grad_W, closed_form_negative_grad_W, log_attention, logits, scaled_grad_W
from theorycheck.models.gradient_bounds import closed_form_allowance, gradient_bounds
from theorycheck.optim import NGD, alignment, frobenius_norm, relative_error, run_trajectory
from theorycheck.tails import TailBound

from .fixed_decoder import (
    FIXED_POINT_SCALES,
    GRADIENT_BOUNDS_EXACT,
    centring_statistic,
    counterexample_tensors,
    fixed_points,
    identity_test_points,
    initial_logit_radius,
    repeated,
    trapping_setup,
)
from .problems import (
    ASSUMPTION2_ALPHA,
    ASSUMPTION2_CALIBRATION,
    INIT_SCALE,
    NGD_ETA,
    PAPER,
    TRIALS,
    count_assumption2,
    e1,
    assumption2_then,
    e1_or_counterexample,
    restricted,
)
from .setup import ASSUMPTION2_TOL, counterexample, example1


# ---------------------------------------------------------------- Proposition: (G) and stationarity


FIXED_POINTS_IDENTITY = (f"(G) vs autograd at the fixed points W = c Wbar_mm, c in {FIXED_POINT_SCALES}: "
                         "relative Frobenius error <= its forward-error allowance")
"""The identity (G) at the seedless points of `fixed_decoder.fixed_points` (the decision the
counterexample control breaks, by its construction)."""
IDENTITY_EXACT = TailBound(0.0, (
    "(G) vs autograd at the fixed points is decided against theorycheck.models.gradient_bounds."
    "closed_form_allowance: ||(G)^ + grad^|| <= (forward error of each evaluation, < rho S with S the "
    "gradient's cancellation scale (1/n) sum_i |l'(gbar_i)| ||u|| max_t ||x_{i,t}||^2 ||x_{i,1}|| and rho = "
    "2^6 u (nT + d^2)(1 + Z), Z bounding the absolute terms of every logit and score) + (the exact "
    "difference of (G) and the gradient from the non-optimal score spread, capped at ASSUMPTION2_TOL, "
    "which every trial the claim reads meets), relative to the computed autograd norm; the points are "
    "unsaturated (W = c Wbar_mm, |c| <= 3), where the naive evaluation's exponentials do not underflow.  "
    "So the decision fails only if (G), the code or the allowance's algebra is wrong, on every draw"))
"""Why the identity (G) at the fixed points cannot fail but through a wrong derivation or code."""


@claim(
    f"{PAPER}.prop.grad_identity_and_stationarity",
    source="Section 3.1 remark (grad L = 0 iff the softmax is saturated), Eq. (7), Lemma 6",
    statement="Under Assumption 2 the gradient has the closed form (G), its norm is sandwiched "
              "between (1/(n||W_mm||)) sum c_i and (1/n) sum c_i R_i, hence grad L(W) = 0 iff "
              "every s_{i,opt}(1 - s_{i,opt}) = 0.",
    provenance="derived",
    controls={
        "counterexample": Control(
            "hypothesis", breaks=[FIXED_POINTS_IDENTITY],
            description="CE violates Assumption 2: (G) with Delta = gamma_o - max_{t!=o} gamma_t "
                        "must disagree with autograd (a relative error of order one, already at "
                        "W = 0), decided on CE's fixed construction before any draw (at the "
                        "random W it disagrees too, recorded)"),
    },
    calibration=[ASSUMPTION2_CALIBRATION,
                 "2026-11-29 (issue 31): (G) vs autograd at the fixed points W = c Wbar_mm, c in "
                 "{0, -1, -3}, added and decided first (the same tolerance); the counterexample "
                 "control breaks it, on CE's fixed construction before any draw. Block 72000-72049 "
                 "(quick): the control's miss bound 0 (seed-independent; was 0.053, Cantelli); the "
                 "claim stays out (0.017: the sandwich's left side, normal at 3.0 sd)",
                 "2026-11-30 h13 (issue 31): both sides of the sandwich are decided against the proven allowances "
                 "of theorycheck.models.gradient_bounds (the derivation for any scores; nothing chosen on data), "
                 "stated bound 0 (GRADIENT_BOUNDS_EXACT); they replace tol('accumulated'), which W_mm's solver "
                 "deficit and the round-off at saturated points could exceed. Block 121500-121549 (at 4f65cef): "
                 "0 of 50 failed; left ratio at least 1.025, right at most 0.43, allowances at most 1.6e-7; claim "
                 "0.0013 (was 0.017), now held out by '(G) vs autograd at the fixed points' (Cantelli at 36 sd: "
                 "its log-normal model, 5e-18 on 72000-72049, rejected on this block); counterexample 0",
                 "2026-11-30 h13 (issue 31): '(G) vs autograd at the fixed points' decided against the proven "
                 "allowance gradient_bounds.closed_form_allowance (forward errors times the gradient's cancellation "
                 "scale, and the spread term capped at ASSUMPTION2_TOL; nothing chosen on data), stated bound 0 "
                 "(IDENTITY_EXACT); it replaces tol('accumulated'). Block 121600-121649 (at 31313b2): 0 of 50 "
                 "failed, error / allowance at most 4.0e-7 (allowances of order 1e-8 to 1e-7); claim 1.0e-7 (was "
                 "0.0013; now the Assumption 2 binomial's pooled trials), counterexample 0 (seed-independent: "
                 "CE's error is 1.3e7 times its capped allowance)"],
    sizes={"quick": dict(random_per_instance=12, random_scales=[0.1, 1.0, 5.0],
                         saturation_multiples=[-12, -4, -1, 1, 4, 12, 40, 120, 400]),
           "full": dict(random_per_instance=2, random_scales=[0.1, 5.0],
                        saturation_multiples=[-12, -4, -1, 1, 4, 12, 40, 120, 400])},
)
def test_grad_identity_and_stationarity(tc):
    r"""(G) -grad L(W) = (1/n) sum_i c_i (x_{i,o} - xtilde_i) x_{i,1}^T (module docstring).

    Derivation: with gamma_t = gamma_o - Delta for t != o, gbar = gamma_o - (1 - s_o) Delta, so
    gamma_o - gbar = (1 - s_o) Delta and gamma_t - gbar = -s_o Delta; inserted into
    grad L = (1/n) sum_i l'(gbar_i) sum_t s_t (gamma_t - gbar_i) x_t x_1^T this is (G).  Since
    (x_o - xtilde)^T W_mm x_1 >= 1 (a convex combination of W-SVM constraints) and
    ||(x_o - xtilde) x_1^T|| <= R_i:
        (1/(n ||W_mm||)) sum c_i <= <-grad L, Wbar_mm> <= ||grad L|| <= (1/n) sum c_i R_i,
    so grad L = 0 iff every c_i = 0 iff every s_{i,o} in {0, 1}.

    Reference: autograd through the naive loss (``loss_autograd_reference``) at the fixed points
    W = c Wbar_mm, c in {0, -1, -3} (decided first: on the counterexample control's CE they are
    computed from its fixed construction before any draw, so its failure there is
    seed-independent) and at random points W = (scale/sqrt d) G, scales 0.1, 1, 5 (attention
    far from saturation, where autograd is accurate).  Pass at the fixed points: the relative
    Frobenius error of (G) <= its proven allowance `gradient_bounds.closed_form_allowance` (each
    evaluation's forward error, 2^6 u (nT + d^2)(1 + Z) times the gradient's cancellation scale
    (1/n) sum_i |l'(gbar_i)| ||u|| max_t ||x_{i,t}||^2 ||x_{i,1}||, plus the exact difference of (G) from
    the gradient under a non-optimal score spread, capped at ASSUMPTION2_TOL, the spread that
    Assumption 2 admits; relative to ||autograd||): it fails only if (G) or the code is wrong, the
    stated bound 0 (`IDENTITY_EXACT`).  The cap is what lets the counterexample control fail: CE's
    spread is O(1), uncapped the allowance would absorb it; capped, CE's (G) misses the gradient
    by O(1) against an allowance of order 1e-7.  At the random points: relative error <= tol('accumulated')
    (any algebraic slip is O(0.1)); the library's scaled gradient exp(M) G is held to the same there,
    since it is what the sandwich uses at saturated points.

    "Stationary iff saturated" is tested through the sandwich at the random points and along
    saturating rays W = rho W_mm + G/sqrt(d), rho in {-12, ..., 400} (every W-SVM logit gap
    about rho): (1/n) sum c_i spans ~200 orders of magnitude (s_o -> 1 for rho > 0, s_o -> 0
    for rho < 0) while ||grad L|| / ((1/n) sum c_i) stays in [1/||W_mm||, max R_i].  Pass:
    both ratios of `GradientBounds` on the right side of 1 within their allowances (the module
    docstring of `theorycheck.models.gradient_bounds`: the same derivation for any scores, so the
    data's spread of non-optimal scores, W_mm's deficit and the ratios' round-off enter exactly; under
    exact equal scores they are round-off sized), so a failure means a wrong
    derivation or code on every draw: the stated bound 0 (`fixed_decoder.GRADIENT_BOUNDS_EXACT`).

    Numerical finding (not a failure of the claim): the rho < 0 side is kept at rho >= -12.
    Assumption 2 holds in E1 only to round-off (least-squares decoder), and the gradient
    terms s_t (gamma_t - gamma_tau) of that residual dominate c_i once s_o is small enough:
    at rho = -40 ||grad L|| exceeds the right-hand bound (the ratio is recorded, not
    checked).  So the characterisation of stationarity at s_o -> 0 is not robust to
    perturbations of Assumption 2; at s_o -> 1 it is (checked along the rays up to rho = 400).
    """
    sizes = tc.sizes

    def identity_at_fixed_points(X, y, u, opt, W_mm):
        S = len(FIXED_POINT_SCALES)
        Xs, ys, us, opts = repeated(S, X, y, u, opt)
        Ws = fixed_points(W_mm)
        reference = autograd_grad_W(Xs, ys, us, Ws)
        err = relative_error(-closed_form_negative_grad_W(Xs, ys, us, Ws, opts), reference)
        allowance = closed_form_allowance(Xs, ys, us, Ws, opts, reference, spread_cap=ASSUMPTION2_TOL)
        tc.conclusion.at_most(FIXED_POINTS_IDENTITY, err, allowance, tail_bound=None if tc.control else IDENTITY_EXACT)
        tc.record("(G) vs autograd at the fixed points: largest error / allowance", (err / allowance).max())

    if tc.control == "counterexample":       # CE's fixed construction: before any seeded event
        identity_at_fixed_points(*counterexample_tensors(tc))
    prob, met = assumption2_then(tc, lambda: e1_or_counterexample(tc))
    prob = restricted(prob, met)
    if tc.control != "counterexample":
        identity_at_fixed_points(prob.X, prob.y, prob.u, prob.opt, prob.W_mm)
    P, rhos = sizes["random_per_instance"], sizes["saturation_multiples"]
    scales = np.resize(np.repeat(sizes["random_scales"], P // len(sizes["random_scales"])), P)
    W = identity_test_points(tc.rng("points"), prob, scales, rhos)
    X, y, u, opt, W_mm = repeated(P + len(rhos), prob.X, prob.y, prob.u, prob.opt, prob.W_mm)
    is_random = torch.as_tensor(np.tile(np.arange(P + len(rhos)) < P, prob.data.K), device=W.device)

    Xr, yr, ur, Wr = X[is_random], y[is_random], u[is_random], W[is_random]
    reference = autograd_grad_W(Xr, yr, ur, Wr)
    err_identity = relative_error(-closed_form_negative_grad_W(Xr, yr, ur, Wr, opt[is_random]), reference)
    M, G = scaled_grad_W(Xr, yr, ur, Wr)
    err_library = relative_error(torch.exp(M)[:, None, None] * G, reference)
    tc.conclusion.at_most("(G) vs autograd: relative Frobenius error (max over random W)",
                          err_identity.max(), tc.tol("accumulated"))
    tc.conclusion.at_most("library exp(M) G vs autograd: relative error (max over random W)",
                          err_library.max(), tc.tol("accumulated"))
    tc.record("(G) vs autograd relative error per point", err_identity)

    bounds = gradient_bounds(X, y, u, W, opt, W_mm)
    stated = None if tc.control else GRADIENT_BOUNDS_EXACT
    tc.conclusion.at_least("sandwich, left: ||grad L|| ||W_mm|| / ((1/n) sum c_i) >= 1", bounds.lower,
                           1.0 - bounds.lower_allowance, tail_bound=stated)
    tc.conclusion.at_most("sandwich, right: ||grad L|| / ((1/n) sum c_i R_i) <= 1", bounds.upper,
                          1.0 + bounds.upper_allowance, tail_bound=stated)
    tc.record("largest allowances of the sandwich (left, right)",
              [bounds.lower_allowance.max(), bounds.upper_allowance.max()])
    log10_c = bounds.log10_mean_c
    tc.record("log10 (1/n) sum c_i: range over the points", [log10_c.min(), log10_c.max()])
    tc.record("left ratio: min", bounds.lower.min())
    tc.record("right ratio: max", bounds.upper.max())
    W_below = identity_test_points(tc.rng("finding"), prob, [], [-40])
    tc.record("finding: right ratio at rho = -40 (s_o ~ 1e-19; Assumption 2 holds only to ~1e-14)",
              gradient_bounds(prob.X, prob.y, prob.u, W_below, prob.opt, prob.W_mm).upper)
    plot = dict(xlabel="log10 (1/n) sum_i c_i  (distance from stationarity)", ylabel="ratio",
                title="(G): ||grad L|| / sum c_i stays bounded while sum c_i -> 0")
    tc.curve("sandwich", "||grad L|| ||W_mm|| / mean c  (>= 1)", log10_c, bounds.lower, sort_x=True,
             **plot)
    tc.curve("sandwich", "||grad L|| / mean(c R)  (<= 1)", log10_c, bounds.upper, sort_x=True)
    tc.curve("sandwich", "1", [log10_c.min(), log10_c.max()], [1.0, 1.0], style="bound")


# ---------------------------------------------------------------- Lemma 4: small initialization


DOUBLED_INIT = 2.0
"""Factor on sigma_0 of the draws of Lemma 4's control (eps(delta) kept at sigma_0)."""


@claim(
    f"{PAPER}.lem4.small_init_near_uniform",
    source="Lemma 4",
    statement="For W_0 = sigma_0 G with small sigma_0, with probability at least 1 - delta every "
              "initial logit is at most eps(delta) in absolute value, so every softmax entry lies "
              "in [exp(-2 eps)/T, exp(2 eps)/T], and ||W_0||_F is small.",
    provenance="derived",
    controls={
        "doubled_init": Control(
            "dynamics", breaks=["max |z_it| <= eps(delta)"],
            constants={"init_factor": DOUBLED_INIT},
            description="draw W_0 anew (its own stream) with 2 sigma_0 but keep eps(delta) of "
                        "sigma_0: a radius that "
                        "holds with probability 1 - delta for sigma_0 cannot hold for twice "
                        "the scale, unless the union bound is slack by a factor 2"),
    },
    calibration=[
        'the doubled_init control (2 sigma_0) was written after seeing seed 0 (not held out), then '
        'checked on --tc-seed 1-5',
    ],
    sizes={"quick": dict(draws_per_instance=40, delta=0.05), "full": dict(draws_per_instance=40, delta=0.05)},
)
def test_small_init_near_uniform(tc):
    r"""W_0 = sigma_0 G, sigma_0 = 0.01/sqrt(d), on Example 1 (5 data sets x 40 draws = 200).

    Each logit z_{i,t} = x_{i,t}^T W_0 x_{i,1} ~ N(0, sigma_0^2 ||x_{i,t}||^2 ||x_{i,1}||^2);
    the Gaussian tail P(|z| > eps) <= 2 exp(-eps^2 / (2 var)) and a union bound over the nT
    logits give P(max |z| > eps(delta)) <= delta for
        eps(delta) = sigma_0 max ||x_{i,t}|| max ||x_{i,1}|| sqrt(2 log(2nT/delta)).
    (The paper's own constant is stripped; it uses a spectral-norm bound, which is weaker.)
    On that event s_{i,t} = e^{z_t} / sum e^{z_tau} in [e^{-2 eps}/T, e^{2 eps}/T]
    deterministically.  ||W_0||_F = sigma_0 ||G||_F <= sigma_0 (d + sqrt(2 log(1/delta))) with
    probability >= 1 - delta (E||G||_F <= d and Gaussian concentration of a 1-Lipschitz map).

    "With high probability" is tested with K = 200 independent draws and the exact one-sided
    binomial test of P >= 1 - delta at level 0.05 (delta = 0.05), separately for the logit
    event, the softmax event and the norm event; the softmax bounds are also required on every
    draw where the logit event holds (deterministic part, must never fail), decided on its
    continuous margin: on every draw, with r = max(eps, max |z|) (so that every logit lies in
    [-r, r]; r = eps on the lemma's event), min(s_min T e^{2r}, e^{2r}/(T s_max)) >= 1.  Off
    the event this is the same deterministic step at the draw's own radius, so no draw is
    left out and the margin never sits on an atom.  The union bound
    and the max-norm factors are loose: the exceedance over a range of delta is plotted, and
    max |z|/eps(delta) is recorded.
    """
    sizes, delta = tc.sizes, tc.sizes["delta"]
    prob, D = tc.use(e1), sizes["draws_per_instance"]
    T, d = prob.X.shape[2:]
    sigma0 = INIT_SCALE / math.sqrt(d)
    doubled = tc.control == "doubled_init"
    sigma_drawn = DOUBLED_INIT * sigma0 if doubled else sigma0
    rng = tc.rng("W0", "doubled") if doubled else tc.rng("W0")  # the control's draws are its own
    max_logit, s_min, s_max, W0_norm = [], [], [], []
    for k in range(prob.data.K):  # D draws on one data set at a time (memory at d = 768)
        X = prob.X[k:k + 1].expand(D, -1, -1, -1)
        W0 = tc.tensor(sigma_drawn * rng.standard_normal((D, d, d)))
        s = log_attention(X, W0).exp().flatten(1)
        max_logit.append(logits(X, W0).abs().flatten(1).amax(1))
        s_min.append(s.amin(1))
        s_max.append(s.amax(1))
        W0_norm.append(frobenius_norm(W0))
    max_logit, s_min, s_max, W0_norm = map(torch.cat, (max_logit, s_min, s_max, W0_norm))

    def eps_of(level):
        return initial_logit_radius(prob.X, sigma0, level).repeat_interleave(D)

    eps = eps_of(delta)
    logit_event = max_logit <= eps
    softmax_event = (s_min >= torch.exp(-2 * eps) / T) & (s_max <= torch.exp(2 * eps) / T)
    norm_event = W0_norm <= sigma0 * (d + math.sqrt(2 * math.log(1 / delta)))
    tc.conclusion.binomial("max |z_it| <= eps(delta)", logit_event, p=1 - delta)
    tc.conclusion.binomial("softmax within [exp(-2 eps)/T, exp(2 eps)/T]", softmax_event, p=1 - delta)
    tc.conclusion.binomial("||W_0||_F <= sigma_0 (d + sqrt(2 log(1/delta)))", norm_event, p=1 - delta)
    radius = torch.maximum(eps, max_logit)   # eps on the lemma's event, the draw's own max |z| off it
    tc.conclusion.at_least("softmax bounds on every draw at radius max(eps, max |z|) (deterministic): "
                           "min of s_min T e^{2r} and e^{2r} / (T s_max)",
                           torch.minimum(s_min * T * torch.exp(2 * radius), torch.exp(2 * radius) / (T * s_max)),
                           1.0)
    deviation = torch.maximum(s_max - 1 / T, 1 / T - s_min)
    tc.record("draws", int(logit_event.numel()))
    tc.record("max over draws of max|z| / eps", (max_logit / eps).max())
    tc.record("max over draws of max_t |s - 1/T|", deviation.max())
    tc.record("(exp(2 eps(0.01)) - 1)/T, max over data sets", ((torch.exp(2 * eps_of(0.01)) - 1) / T).max())
    deltas = np.logspace(-3, 0, 13)
    exceed = [float((max_logit > eps_of(level)).double().mean()) for level in deltas]
    plot = dict(xscale="log", xlabel="delta", ylabel="fraction of draws with max|z| > eps(delta)",
                title="Lemma 4: P(max |z| > eps(delta)) <= delta")
    tc.curve("tail", "empirical exceedance (200 draws)", deltas, exceed, **plot)
    tc.curve("tail", "delta (the lemma's bound)", deltas, deltas, style="bound", xscale="log")


# ---------------------------------------------------------------- Lemma 8: Example 1's assumptions


@claim(
    f"{PAPER}.lem8.example1_assumptions",
    source="Example 1 and Lemma 8",
    statement="The tokens of the Example 1 generator become nearly orthogonal as d grows, "
              "rho_perp = O(sqrt(log(nT)/d)); its least-squares decoder meets Assumption 2 when "
              "d >= nT.",
    provenance="inferred",
    controls={
        "rate_1_over_d": Control(
            "statement", breaks=["slope of log mean rho_perp vs log d"],
            description="the faster rate rho_perp = O(1/d) (slope <= -1) instead of "
                        "O(sqrt(log(nT)/d))"),
        "common_component": Control(
            "hypothesis", breaks=["mean rho_perp at the largest d", "slope of log mean rho_perp vs log d"],
            description="a fresh draw (its own stream) with the same unit vector e_1 added to every "
                        "token: the tokens are not "
                        "centred (the centring precondition fails) and rho_perp tends to about "
                        "1/2 instead of 0"),
    },
    calibration=[Calibrated(
        decision="mean rho_perp decreases in d", threshold="non-increasing (tolerance 0); mean over 40 instances",
        calibration_seeds="16000-16049", validation_seeds="16100-16149",
        how="the thresholds are the rate's and the spec's; the instance count per d was 5 (the paper-wide "
            "TRIALS), whose mean left the monotone decision 3.1 sd from failing on the unseen sweep "
            "(tail bound 0.035) and the slope 5.4 sd. Chosen on the calibration block (a script over the "
            "generator, 5/20/40/80 instances): 40 puts the monotone margin at 9.0 sd and the slope's "
            "(<= -1/2) at 11.8 sd, normal model kept (Shapiro p 0.91, 0.71); the full tier, more "
            "concentrated at d >= 768, takes 10 (memory), not calibrated here. Validation block "
            "(theorycheck calibrate, with the grid's precondition decided before the draws): no "
            "failure, monotone least margin 0.147 at 8.4 sd, slope 11.8 sd, claim bound 4.3e-11; "
            "the controls failed as declared on all 50 seeds (miss bounds 7e-18, 2e-219)")],
    sizes={"quick": dict(n=6, T=4, dims=[32, 64, 128, 256, 512], rho_max=0.25, instances=40),
           "full": dict(n=64, T=8, dims=[768, 1536, 3072], rho_max=0.25, instances=10)},
)
def test_example1_assumptions(tc):
    r"""E1 (``claims.vdt24.setup.example1``; the paper's generator is not fully specified):
    x_{i,t} ~ N(0, I_d/d) i.i.d., u the minimum-norm solution of u^T x_{i,opt} = zeta y_i,
    u^T x_{i,t} = 0 (t != opt), zeta = 3.

    Assumption 2: for d >= nT the nT x d system has full row rank and lstsq solves it exactly,
    so gamma_opt = zeta and gamma_non-opt = 0.  That is an identity of the generator (no
    model, no run), so it is recorded (max |gamma_non-opt|, max |gamma_opt - zeta|, the
    Assumption-2 count), not decided.

    Preconditions (the generator's hypotheses): every d of the grid is >= nT, and the tokens
    are centred, nT ||mean token||^2 / mean ||x||^2 <= 3 in every trial (the statistic is
    chi^2_d / d under the hypothesis, whose 0.9999 quantile is below 3 for d >= 32).

    Conclusions, for the grid of d (``instances`` data sets each, more than the paper-wide K = 5,
    whose mean leaves the ordering of neighbouring d to chance: the calibration record):
    (b) the mean over trials of rho_perp = max |<x, x'>| / min ||x||^2 decreases in d
        and is <= 0.25 at the largest d (the spec's threshold);
    (c) the O(sqrt(log(nT)/d)) shape: the least-squares slope of log mean rho_perp against
        log d is <= -1/2.  Leading order, rho_perp ~ sqrt(2 log(#pairs)/d) / min ||x||^2 and
        min ||x||^2 -> 1 from below as d grows, so finite-d slopes are steeper than -1/2; a
        slope above -1/2 would contradict the rate, and one above -1 refutes the faster
        O(1/d) (the statement control).  The thresholds are the spec's (0.25) and the rate's
        (-1/2, -1); the centring bound 3 is the chi^2 quantile above; all were checked on base
        seeds 1-9 besides the default 0.
    """
    sizes, n, T, K = tc.sizes, tc.sizes["n"], tc.sizes["T"], tc.sizes["instances"]
    dims = sizes["dims"]
    tc.precondition.holds("every d of the grid is >= nT (the generator's hypothesis)",
                          [d >= n * T for d in dims], detail={"nT": n * T, "dims": dims})
    rho_mean, centring, nonopt_max, opt_err, met = [], [], [], [], 0
    for d in dims:
        if tc.control == "common_component":  # its own draw, every token shifted by e_1
            data = example1(tc.rng("data", d, "common_component"), K, n=n, T=T, d=d, zeta=3.0)
            X = data.X + np.eye(d)[0]
        else:
            data = example1(tc.rng("data", d), K, n=n, T=T, d=d, zeta=3.0)
            X = data.X
        rho_mean.append(datasets.orthogonality_ratio(X).mean())
        centring.append(centring_statistic(X).max())
        scores, is_opt = data.scores(), np.arange(T) == data.designated_opt[..., None]
        nonopt_max.append(np.abs(scores[~is_opt]).max())
        opt_err.append(np.abs(scores[is_opt] - 3.0).max())
        met += data.assumptions.count("assumption2")
    tc.precondition.at_most("tokens centred: max nT ||mean x||^2 / mean ||x||^2", max(centring), 3.0)
    tc.record("dimensions", dims)
    tc.record("mean rho_perp per d", rho_mean)
    tc.record("identity of lstsq (d >= nT): max |gamma_non-opt| per d", nonopt_max)
    tc.record("identity of lstsq (d >= nT): max |gamma_opt - zeta| per d", opt_err)
    tc.record("identity of lstsq (d >= nT): instances meeting Assumption 2", f"{met}/{K * len(dims)}")
    tc.conclusion.monotone("mean rho_perp decreases in d", rho_mean, increasing=False)
    tc.conclusion.at_most("mean rho_perp at the largest d", rho_mean[-1], sizes["rho_max"])
    tc.conclusion.slope("slope of log mean rho_perp vs log d", dims, rho_mean, window=(dims[0], dims[-1]),
                        at_most=-1.0 if tc.control == "rate_1_over_d" else -0.5)
    pairs = n * T * (n * T - 1) / 2
    plot = dict(xscale="log", yscale="log", xlabel="d", ylabel="rho_perp",
                title="Example 1: near-orthogonality improves with d")
    tc.curve("rho", f"mean rho_perp ({K} instances)", dims, rho_mean, **plot)
    tc.curve("rho", "sqrt(2 log(#pairs)/d) (leading order)", dims,
             np.sqrt(2 * np.log(pairs) / np.asarray(dims, dtype=float)), style="theory", xscale="log", yscale="log")


# ---------------------------------------------------------------- Remark 1: local directions


ASSUMPTION2_VIOLATED = ("Assumption 2 violated on every trial: min over trials of the non-optimal score "
                        "spread (a trial whose optimal token is not the unique argmax counts as violating) "
                        ">= ASSUMPTION2_TOL")
"""Remark 1's hypothesis (no trial meets Assumption 2), decided on the quantity whose threshold
defines Assumption 2 (`setup.ASSUMPTION2_TOL`), not on the count of trials meeting it."""


TRAP_DECISION = "trap noises with al(W_T, W_alpha) >= 0.999 at every scale (binomial)"
TRAP_RATE = 0.95
"""The rate of trap noises (a start's noise G, used at every scale c) whose starts all converge to
W_alpha, that Remark 1's binomial accepts (calibrated: `TRAP_CALIBRATION`)."""
TRAP_CALIBRATION = Calibrated(
    decision=TRAP_DECISION, threshold=f"binomial at TRAP_RATE = {TRAP_RATE} (level {ASSUMPTION2_ALPHA})",
    calibration_seeds="72000-72049", validation_seeds="78500-78549",
    how="replaces 'every trap start: min al(W_T, W_alpha) >= 0.999' (Cantelli 2.5e-4 on 72000-72049: "
        "margins near 0.001 with one seed far low, no model). One outcome per noise draw G (5 per seed), "
        "not per start: the 3 scales reuse each trial's G, so the 15 starts are not independent. Rule "
        "stated before validation (that of ASSUMPTION2_RATE): TRAP_RATE = the one-sided 99.9% "
        "Clopper-Pearson lower bound of the per-noise rate on the calibration block, rounded down to "
        "0.05. The kept runs of 72000-72049 record al(W_T, W_alpha) per start: 250 of 250 noises "
        "converged at every scale (least 0.99997), bound 0.973, so 0.95. Validation block 78500-78549: "
        "250 of 250 noises (claim 1.0e-7, pooled trials; 'trap starts: max al(W_T, W_mm)' within it on this "
        "block, Cantelli 2.2e-4 on 72000-72049); the assumptions_hold control 6e-9 (its starts leave "
        "W_alpha: 0 of 250)")


@claim(
    f"{PAPER}.rem1.local_directions_without_assumptions",
    source="Remark 1 and Section 3.1 (local W-SVM directions, Tarzanagh et al.)",
    statement="Without Assumptions 1-2 convergence can be local: on CE, NGD started near the "
              "locally optimal direction W_alpha converges to W_alpha (not W_mm), while a small "
              "initialization converges to W_mm.",
    provenance="derived",
    controls={
        "assumptions_hold": Control(
            "hypothesis", breaks=[
                "not every start converges to W_mm: min al(W_T, W_mm) over the trap starts",
                "trap starts: max al(W_T, W_mm)",
            ],
            description="the spec's control: the same protocol on Example 1 (Assumption 2 holds)"
                        " with random unit directions in place of Wbar_alpha: every start "
                        "converges to W_mm"),
    },
    calibration=[
        TRAP_CALIBRATION,
        "the spec's thresholds, checked on base seeds 1-9 besides the default 0",
        "2026-11-29 (issue 31): the hypothesis decided on the score spread against ASSUMPTION2_TOL "
        "(the same event as 'no trial meets Assumption 2', with a margin). Block 72000-72049 "
        "(quick): the assumptions_hold control's miss bound 0 (normal tail; was 0.049, a count "
        "without spread); the claim's row 4.7e-4 (Cantelli on the trap starts' alignments, whose "
        "margins were normal on 27000-27030,27100-27128 and are not on this block: one seed "
        "6.5 sd low)",
    ],
    sizes={"quick": dict(steps=1000, trap_scales=[0.5, 1.0, 3.0]),
           "full": dict(steps=10000, trap_scales=[0.5, 1.0, 3.0])},
)
def test_local_directions_without_assumptions(tc):
    r"""CE (``claims.vdt24.setup.counterexample``, constructed for this spec; the paper gives no
    instance): n = 1, T = 3, scores (-1, 0.5, 1), token 1 (0-based) is locally optimal; its
    W-SVM direction W_alpha has cosine -3/sqrt(10) = -0.949 with W_mm.  Starts (5 trials each,
    one batch): the trap starts W_0 = c Wbar_alpha + (0.01/sqrt d) G, c in {0.5, 1, 3}, and the
    small start W_0 = (0.01/sqrt d) G.  NGD, eta = 0.1, 1000 steps (quick; spec: 3000) /
    10000 (full).

    Precondition: no instance meets Assumption 2 (the remark is about data violating it),
    decided as "the least non-optimal score spread over the trials is >= ASSUMPTION2_TOL" (a
    trial whose optimal token is not the unique argmax violates it whatever its spread): the
    same event as "no trial meets Assumption 2", with a margin (a count of trials has none).
    CE is a fixed instance (no draw; spread 1.5), so the precondition is decided on it before
    any draw or run of the case: seed-independent.
    Conclusions: (a) the remark itself -- not every start converges to W_mm: the worst final
    al(W_T, W_mm) over the trap starts is below 0.99, the spec's convergence threshold;
    (b) the trap starts converge to the local direction: al(W_T, W_alpha) >= 0.999 at every
    scale c for a fraction >= TRAP_RATE of the noise draws G (the exact binomial test at level
    ASSUMPTION2_ALPHA, one outcome per G: the trials' G are drawn independently, and each is
    used at the three scales; a remark about starts near W_alpha states a rate over them; the
    rate: calibration record), and
    al(W_T, W_mm) <= -0.9 for every trap start; (c) the small start still converges to W_mm,
    al(W_T, W_mm) >= 0.999.  The thresholds are the spec's; al(W_alpha, W_mm) (recorded) is
    far from both.

    Control (the spec's): Example 1, where Assumption 2 holds, with random unit directions in
    Wbar_alpha's place at the same scales (15 starts; spec: 20 of norm 0.5).  Every start
    converges to W_mm -- the worst final alignment is >= 0.99 -- so (a) and the W_mm part of (b)
    fail, and the Assumption-2 precondition fails with them.
    """
    sizes = tc.sizes
    data = tc.use(e1).data if tc.control == "assumptions_hold" else counterexample(TRIALS)
    count_assumption2(tc, data)
    report = data.assumptions
    spread = np.where(report.per_trial["opt_unique_argmax"], report.details["assumption2_residual"],
                      np.finfo(float).max)
    tc.precondition.at_least(ASSUMPTION2_VIOLATED, spread.min(), ASSUMPTION2_TOL)
    prob, trap = trapping_setup(tc)
    scales = sizes["trap_scales"]
    S = len(scales) + 1  # the trap starts, then the small start
    coef = prob.W0.new_tensor(np.repeat(scales + [0.0], TRIALS))[:, None, None]
    W0 = coef * trap.repeat(S, 1, 1) + prob.W0.repeat(S, 1, 1)
    W_mm, W_trap = prob.W_mm.repeat(S, 1, 1), trap.repeat(S, 1, 1)
    checkpoints = np.unique(np.r_[0, np.geomspace(1, sizes["steps"], 60).astype(int)])
    traj = run_trajectory(NGD(prob.model.tiled(S), NGD_ETA), {"W": W0}, sizes["steps"],
                          {"al_mm": lambda it: it.alignment("W", W_mm), "al_trap": lambda it: it.alignment("W", W_trap)},
                          checkpoints=checkpoints)
    trapped = slice(0, len(scales) * TRIALS)
    small = slice(len(scales) * TRIALS, S * TRIALS)
    final_mm, final_trap = traj["al_mm"][-1], traj["al_trap"][-1]
    tc.conclusion.at_most("not every start converges to W_mm: min al(W_T, W_mm) over the trap starts",
                          final_mm[trapped].min(), 0.99)
    tc.record("trap starts: min al(W_T, W_alpha)", final_trap[trapped].min())
    per_noise = (final_trap[trapped] >= 0.999).reshape(len(scales), TRIALS).all(0)   # start s*TRIALS + k
    tc.conclusion.binomial(TRAP_DECISION, per_noise, p=TRAP_RATE, alpha=ASSUMPTION2_ALPHA,
                           low_power="the alternative is starts that leave W_alpha (Example 1: every start), "
                                     "which the test rejects; 5 noise draws cannot resolve a rate 0.15 below "
                                     "TRAP_RATE at this level")
    tc.conclusion.at_most("trap starts: max al(W_T, W_mm)", final_mm[trapped].max(), -0.9)
    tc.conclusion.at_least("small starts: min al(W_T, W_mm)", final_mm[small].min(), 0.999)
    tc.record("al(trap direction, W_mm)", alignment(trap, prob.W_mm))
    tc.record("final al(W_T, W_mm) per start", final_mm)
    tc.record("final al(W_T, trap direction) per start", final_trap)
    plot = dict(xscale="log", ylabel="al(W_t, W_mm)", title="Remark 1: the limit direction depends on W_0")
    for s, label in enumerate([f"W_0 = {c:g} x trap direction + noise" for c in scales] + ["small W_0"]):
        tc.curve("alignment", label + " (first trial)", traj.t[1:], traj["al_mm"][1:, s * TRIALS], **plot)
