r"""vdt24, joint training of u and W: the loss landscape along Eq. (13) and the rates of the joint
runs (Section 4, Appendix B: Lemma 3, Theorems 2-4).

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738 (v1).  The model, the data model DM, Eq. (13), the batched
runs (`joint.joint_runs`), Condition 1 and the per-instance binomial acceptance at `JOINT_P`
are those of `test_joint.py` (its module docstring): every claim here reads the same runs.
"""
from __future__ import annotations

import numpy as np

from theorycheck import Control, claim
from theorycheck.checks import fit_slope
from theorycheck.models import score_coordinates

from .joint import (
    EQ13,
    joint_calibration,
    JOINT_SIZES,
    NO_TIME_FACTOR,
    SHORT_OPTIMAL_TOKEN,
    accept,
    condition1,
    hessian_ratio_along,
    other_token_alignment,
    run_of,
    safe_ratio,
    step_radii,
)
from .problems import PAPER


# ============================================================== Lemma 3


LOG_LIPSCHITZ_C = 2.0
"""C of Lemma 3 (b) (lost): the spec's 2, checked on --tc-seed 1-5, see `test_loss_landscape_properties`."""

FIRST_ORDER_RISE = 2.0
"""Lemma 3 (b)'s ``first_order_radius`` control claims C within the radius at which the
first-order rise of log L along the uphill ray is FIRST_ORDER_RISE ln C (= ln C^2): the radius
2 ln C L/||grad L||, where the loss ratio is about C^2 = 4 > C when log L rises linearly along the
ray."""

HESSIAN_TREND = 0.1
"""Lemma 3 (c)'s trend bound: the fitted power of ||u_t|| in ||grad^2 L||/L over the second half
of the run.  A self-bounded Hessian (C_H constant) has power 0; a Hessian growing with the
parameter norm, ||grad^2 L|| ~ ||u_t|| L, has power 1; 0.1 is ten times below that."""

SEGMENT_POINTS = (0.25, 0.5, 0.75, 1.0)
"""lambda in theta_t + lambda (end - theta_t) where Lemma 3 (b) is evaluated."""


@claim(
    f"{PAPER}.lem3.loss_landscape_properties",
    source="Lemma 3 / Lemma 15",
    statement="Along Eq. (13) on DM the loss is (a) PL-like in u, ||grad_u L|| >= c L, witnessed by "
              "u_mm; (b) log-Lipschitz, L(theta') <= C L(theta_t) on [theta_t, theta_{t+1}]; "
              "(c) second-order self-bounded, ||grad^2 L|| <= C_H L.",
    provenance="inferred",
    controls={
        "short_optimal_token": Control(
            "hypothesis", breaks=["(a) witness: min_t mu_t > 0"],
            constants={"rho": SHORT_OPTIMAL_TOKEN.rho},
            description="rho = 0.5 (the designated token the shorter one, Condition 1 violated; "
                        "the joint runs' own rho = 0.5 batch, witnessed by its own u_mm): "
                        "attention leaves the designated token, so the attended margin of u_mm, "
                        "the witness of the PL inequality, turns negative"),
        "first_order_radius": Control(
            "statement", breaks=["(b) max over t, lambda of L(theta')/L(theta_t) within the step radius <= C"],
            constants={"first_order_rise": FIRST_ORDER_RISE, "C": LOG_LIPSCHITZ_C},
            description="the same C = 2 claimed within the radius 2 ln C L(theta_t)/||grad "
                        "L(theta_t)|| in place of the step radius (the uphill points recomputed "
                        "there): the first-order rise of log L there is ln C^2, so the ratio is "
                        "about C^2 > C -- the bound is tied to the lemma's radius, not vacuous"),
    },
    calibration=[
        "C = 2 of (b) is the spec's value for the descent segment; kept for the ball after "
        "checking it on --tc-seed 1-5, then checked at seed 0",
        "HESSIAN_TREND = 0.1 of (c) is set by the argument (a tenth of the linear growth), "
        "written after seeing seed 0's slopes (not held out), then checked on --tc-seed 1-5",
        "the first_order_radius control's radius is derived (a first-order rise of log L by "
        "2 ln C); it replaced 3 r_t, chosen on seed 0, which the full tier passed (ratio "
        "1.52-1.55 < C); the full tier measured a loss ratio near C^2 at the derived radius",
        *joint_calibration("(a) witness: min_t mu_t > 0"),
    ],
    sizes=JOINT_SIZES,
)
def test_loss_landscape_properties(tc):
    r"""On the Eq. (13) run (rho = 2, eta = 1), at every step t, per instance, each part
    accepted by the binomial test at `JOINT_P` over the instances:

    (a) PL: min_t ||grad_u L|| ||u_mm|| / L >= 0.25, i.e. c = a quarter of the max margin
        1/||u_mm|| (the spec's floor), with u_mm as the witness: mu_t = min_i y_i v^T X_i^T
        s_i(W_t) > 0 for all t, v = u_mm/||u_mm|| (mu_t ||u_mm|| is Lemma 14's attended margin).
        ||grad_u L||/L = sqrt(c^T G c), c_{i,t} = w_i y_i s_{i,t}, G the token Gram.  The chain
        ||grad_u L|| >= <-grad_u L, v> >= L mu_t is Cauchy-Schwarz, so its slack is a record.
    (b) Log-Lipschitz within the lemma's radius: the proof bounds L(theta') for every theta'
        with ||theta' - theta_t|| <= r_t = ||theta_{t+1} - theta_t|| (Eq. (13) moves each block
        by eta_t: r_t = sqrt(2) eta_t, eta_0 at t = 0), not only on the descent segment.  The
        first-order worst point of that ball is uphill, theta_t + r_t grad L/||grad L|| (joint
        norm); checked: L(theta_t + lam (end - theta_t)) / L(theta_t) <= C = `LOG_LIPSCHITZ_C`
        for lam in {0.25, 0.5, 0.75, 1}, end the uphill point and theta_{t+1}, at every t.
        C is lost; `LOG_LIPSCHITZ_C` = 2 is the spec's value for the descent segment, kept for
        the ball (calibration record).  Exact: gamma and z are linear along each segment.
    (c) Second-order self-bounded: ||grad^2 L(theta_t)||_2 / L(theta_t) at ~150 steps (exact,
        `theorycheck.models.score_coordinates.hessian_norm_over_loss`).  The u-u block alone is
        sum_i (l_i/nL) a_i a_i^T with ||a_i|| <= max ||x|| ~ rho, so C_H ~ rho^2 = 4 is the
        natural scale; the level check max_t ratio <= 10 (the spec's) allows the cross blocks.
        A level alone cannot tell a bounded ratio from a slowly growing one within the horizon,
        so the decision that carries the lemma is the trend: per instance, the least-squares
        slope of log(||grad^2 L||/L) against log ||u_t|| over the second half of the checked
        steps is <= `HESSIAN_TREND` = 0.1 (0 for a constant C_H, 1 for a Hessian growing like
        ||u_t|| L).  (The reduced formula equals the autograd Hessian of L in (u, W):
        tests/test_score_coordinates.py.)
    Controls: rho = 0.5 (hypothesis: the joint runs' rho = 0.5 batch, Condition 1's "optimal
    token longer" violated), where Eq. (13) moves the attention off the designated token and
    u_mm's attended margin mu_t, the witness of (a), turns negative -- the witness fails for the
    reason the lemma needs Condition 1; and C = 2 claimed within the radius
    2 ln C L/||grad L|| (statement: the uphill points recomputed there, where the first-order
    rise of log L is ln C^2).
    """
    variant = SHORT_OPTIMAL_TOKEN if tc.control == "short_optimal_token" else EQ13
    condition1(tc, variant)
    run = run_of(tc, variant)
    if tc.control != "first_order_radius":
        _pl_inequality(tc, run)
    if tc.control != "short_optimal_token":
        _log_lipschitz(tc, run)
    if tc.control is None:  # the controls break (a) or (b): the Hessians are the claim's alone
        _self_bounded(tc, run)


def _pl_inequality(tc, run):
    """Lemma 3 (a), witnessed by the run's u_mm/||u_mm||."""
    unit_witness = run.u_mm / run.u_mm_norm[:, None]
    witnessed = run.attended_margins(unit_witness).min(axis=-1)  # mu_t, (steps+1, K)
    grad_u_over_loss, _ = run.gradient_norms_over_loss()
    tc.record("(a) Cauchy-Schwarz slack: min over t of ||grad_u L||/L - mu_t", (grad_u_over_loss - witnessed).min())
    accept(tc, "(a) witness: min_t mu_t > 0", witnessed.min(axis=0), witnessed.min(axis=0) > 0)
    pl = (grad_u_over_loss * run.u_mm_norm[None, :]).min(axis=0)
    accept(tc, "(a) PL: min_t ||grad_u L|| ||u_mm|| / L >= 0.25", pl, pl >= 0.25)
    t = run.t
    tc.curve("PL", "||grad_u L|| ||u_mm|| / L (seed 0)", t[1:], grad_u_over_loss[1:, 0] * run.u_mm_norm[0],
             xscale="log", title="Lemma 3 (a): PL-like inequality (seed 0)")
    tc.curve("PL", "witness mu_t ||u_mm|| (seed 0)", t[1:], witnessed[1:, 0] * run.u_mm_norm[0],
             style="bound", xscale="log")


def _log_lipschitz(tc, run):
    """Lemma 3 (b) within the step radius (the control: within 2 ln C L/||grad L||)."""
    if tc.control == "first_order_radius":
        radius = FIRST_ORDER_RISE * np.log(LOG_LIPSCHITZ_C) / np.hypot(*run.gradient_norms_over_loss())
    else:
        radius = np.broadcast_to(step_radii(run)[:, None], run.u_norm.shape)  # (steps+1, K)
    unit_gamma, unit_z = score_coordinates.uphill_points(run.gamma, run.z, run.data.y, run.data.X, run.is_opt,
                                                         np.ones(run.t.size))
    scale = radius[..., None, None]  # the displacement is linear in its length
    up_gamma, up_z = run.gamma + scale * (unit_gamma - run.gamma), run.z + scale * (unit_z - run.z)
    start_gamma, start_z = run.gamma[:-1], run.z[:-1]
    uphill = np.exp(score_coordinates.segment_log_ratios(start_gamma, start_z, up_gamma[:-1], up_z[:-1],
                                                         run.is_opt, SEGMENT_POINTS))
    if tc.control == "first_order_radius":  # the descent step does not depend on the radius
        descent = np.ones_like(uphill)
    else:
        descent = np.exp(score_coordinates.segment_log_ratios(start_gamma, start_z, run.gamma[1:], run.z[1:],
                                                              run.is_opt, SEGMENT_POINTS))
    worst = np.maximum(uphill.max(axis=(0, 1)), descent.max(axis=(0, 1)))  # (K,)
    tc.record("(b) max over t of L/L(theta_t) per lambda: uphill within r_t, descent step",
              [uphill.max(axis=(1, 2)), descent.max(axis=(1, 2))])
    accept(tc, "(b) max over t, lambda of L(theta')/L(theta_t) within the step radius <= C", worst,
           worst <= LOG_LIPSCHITZ_C)


def _self_bounded(tc, run):
    """Lemma 3 (c): the level and the trend of ||grad^2 L||/L."""
    every, hessian_ratio = hessian_ratio_along(run)
    tc.record("(c) ||Hessian||/L at the first and last checked step (seed 0)",
              [hessian_ratio[0, 0], hessian_ratio[-1, 0]])
    accept(tc, "(c) max over t of ||grad^2 L||_2 / L <= 10", hessian_ratio.max(axis=0),
           hessian_ratio.max(axis=0) <= 10.0)
    checked = run.t[every]
    late = checked >= checked[-1] / 2
    log_norm, log_ratio = np.log(run.u_norm[every][late]), np.log(hessian_ratio[late])
    trend = np.array([np.polyfit(log_norm[:, k], log_ratio[:, k], 1)[0] for k in range(log_ratio.shape[1])])
    accept(tc, "(c) trend: slope of log(||grad^2 L||/L) vs log ||u_t|| over the second half <= 0.1",
           trend, trend <= HESSIAN_TREND)
    t = run.t
    tc.curve("self-bounded", "||grad^2 L|| / L (seed 0)", t[every], hessian_ratio[:, 0],
             title="Lemma 3 (c): second-order self-bounded (seed 0)")
    tc.curve("self-bounded", "||u_t|| (seed 0)", t[every], run.u_norm[every, 0], style="reference")


# ============================================================== Theorem 2


@claim(
    f"{PAPER}.thm2.joint_loss_rate",
    source="Theorem 2 / Theorem 8",
    statement="Under Eq. (13) with alpha = 2/3 on DM the training loss decays as exp(-Theta(t^(1/3))); "
              "sharply, log L_t = -3 eta (t+1)^(1/3)/||u_mm|| + O(1).",
    provenance="stated",
    controls={
        "no_time_factor": Control(
            "dynamics", breaks=["slope of log L vs (t+1)^(1/3) over the second half = -3 eta/||u_mm|| "
                                "within 2%, R^2 >= 0.999"],
            description="Eq. (13) without the time factor (alpha = 0): log L falls like "
                        "-eta t/||u_mm||, linearly in t, so its fit against (t+1)^(1/3) has "
                        "neither the predicted slope nor a straight line"),
    },
    calibration=joint_calibration("Theorem 2's form: c* > 0 (L_t < L_0 for all t >= 1)"),
    sizes=JOINT_SIZES,
)
def test_joint_loss_rate(tc):
    r"""Theorem 2: L(theta_t) <= L(theta_0) exp(-c eta t^(1/3)), L(theta_0) = 1, c lost.

    Derived sharp form (spec, verified): once s_opt ~ 1 and u_t ~ ||u_t|| u_mm/||u_mm|| with
    all samples support vectors (`test_usvm_reference`), every margin is ||u_t||/||u_mm||, and
    ||u_t|| ~ sum_{s<t} eta_s ~ eta (t+1)^(1-alpha)/(1-alpha), so
    log L_t = -eta (t+1)^(1/3)/((1-alpha) ||u_mm||) + O(1).
    Check per instance: the least-squares slope of log L_t against (t+1)^(1/3) over the second
    half of the run (every 50 steps at T = 1500: 16 points) equals -3 eta/||u_mm|| within 2%
    with R^2 >= 0.999 (the spec's tolerances: 2% absorbs the O(1) term's slow drift; the
    exponent shows in R^2), and the theorem's literal form c* = min_{t>=1} -log L_t/(eta t^(1/3))
    > 0, i.e. L_t < L_0 = 1; each accepted by the binomial test at `JOINT_P` over the
    instances (Condition 1 gives the result with high probability over DM).
    """
    variant = NO_TIME_FACTOR if tc.control else EQ13
    condition1(tc, variant)
    run = run_of(tc, variant)
    t, steps = run.t, run.steps
    grid = t[steps // 2::max(1, steps // 30)]
    expected = -EQ13.eta / ((1 - EQ13.alpha) * run.u_mm_norm)
    c_star = (-run.log_loss[1:] / (EQ13.eta * t[1:, None] ** (1 / 3))).min(axis=0)
    accept(tc, "Theorem 2's form: c* > 0 (L_t < L_0 for all t >= 1)", c_star, c_star > 0)
    fits = [fit_slope(grid + 1.0, run.log_loss[grid, k], window=(grid[0] + 1.0, grid[-1] + 1.0),
                      x_transform=1 / 3, y_transform="linear") for k in range(run.data.K)]
    slopes, r2 = np.array([f.slope for f in fits]), np.array([f.r2 for f in fits])
    tc.record("R^2 of the fits per instance", r2)
    accept(tc, "slope of log L vs (t+1)^(1/3) over the second half = -3 eta/||u_mm|| within 2%, "
                 "R^2 >= 0.999", slopes, (np.abs(slopes / expected - 1) <= 0.02) & (r2 >= 0.999))
    tc.record("predicted slopes -3 eta/||u_mm||", expected)
    x = (t + 1.0) ** (1 / 3)
    anchor = run.log_loss[steps // 2, 0] - expected[0] * x[steps // 2]
    tc.curve("loss", "log L_t (seed 0)", x, run.log_loss[:, 0], xlabel="(t+1)^(1/3)", ylabel="log L",
             title="Theorem 2: log L vs (t+1)^(1/3) (seed 0)")
    tc.curve("loss", "slope -3 eta/||u_mm||", x, anchor + expected[0] * x, style="theory",
             xlabel="(t+1)^(1/3)")


# ============================================================== Theorem 3


@claim(
    f"{PAPER}.thm3.joint_W_direction_rate",
    source="Theorem 3 / Theorem 9; footnote 1",
    statement="Under Eq. (13) on DM, W_t converges in direction to W_mm (built on the optimal "
              "tokens): 1 - <W_t/||W_t||, W_mm/||W_mm||> <= C log t / t^(1/3).",
    provenance="inferred",
    controls={
        "short_optimal_token": Control(
            "hypothesis", breaks=["dev_W at the last step <= 1e-3"],
            description="the designated token the shorter one (Condition 1 violated): W_t turns "
                        "to the other token's SVM, away from the designated W_mm"),
    },
    calibration=joint_calibration("dev_W at the last step <= 1e-3"),
    sizes=JOINT_SIZES,
)
def test_joint_W_direction_rate(tc):
    r"""dev_t = 1 - al(W_t, W_mm).  The bound's order is inferred (||W_t|| = Theta(t^(1/3)) in
    the proof pattern of Theorem 1); the measured decay is faster (pitfall P8 of the spec), so
    the checks are one-sided, per instance, each accepted by the binomial test at `JOINT_P`:
    (a) dev at the last step <= 1e-3 (the spec's threshold);
    (b) c_J(t) = dev_t t^(1/3)/ln t grows by at most 10% between consecutive checkpoints
        (`checkpoints`), i.e. dev decays at least as fast as log t/t^(1/3); 10% (the spec's)
        absorbs the wiggle of dev at the start of the run.
    Control: rho = 0.5 (Condition 1 violated) drives W_t to the W-SVM of the other token (its
    alignment with that SVM is recorded).  (A reference control with the other token's W-SVM
    was removed: with T = 2 that SVM is exactly -W_mm, so it failed by arithmetic.)
    """
    variant = SHORT_OPTIMAL_TOKEN if tc.control == "short_optimal_token" else EQ13
    condition1(tc, variant)
    run = run_of(tc, variant)
    checkpoints = np.asarray(tc.sizes["checkpoints"])
    alignment = run.W_alignment()
    if tc.control == "short_optimal_token":
        tc.record("rho=0.5: al(W_T, W-SVM of the other token) per seed", other_token_alignment(run))
    dev = 1.0 - alignment
    c_J = dev[checkpoints] * checkpoints[:, None] ** (1 / 3) / np.log(checkpoints)[:, None]
    tc.record("dev at the checkpoints (per seed)", dev[checkpoints])
    tc.record("c_J at the checkpoints (seed 0)", c_J[:, 0])
    accept(tc, "dev_W at the last step <= 1e-3", dev[-1], dev[-1] <= 1e-3)
    growth = (c_J[1:] / c_J[:-1]).max(axis=0)
    accept(tc, "c_J(t_k+1)/c_J(t_k) <= 1.1 at consecutive checkpoints", growth, growth <= 1.1)
    recorded = np.flatnonzero(np.isfinite(dev[:, 0]))  # the snapshot steps
    tc.curve("dev", "1 - al(W_t, W_mm) (seed 0)", run.t[recorded], dev[recorded, 0], xscale="log",
             yscale="log", ylabel="alignment deficit",
             title="Theorem 3: direction of W_t under joint training (seed 0)")
    t = run.t[2:]
    tc.curve("dev", "c_J(100) log t / t^(1/3)", t, c_J[0, 0] * np.log(t) / t ** (1 / 3), style="theory",
             xscale="log", yscale="log")


# ============================================================== Theorem 4


@claim(
    f"{PAPER}.thm4.u_margin_rate",
    source="Theorem 4 / Theorem 10; Introduction",
    statement="Under Eq. (13) on DM the decoder's normalized margin on the optimal tokens reaches a "
              "constant fraction of the max margin 1/||u_mm|| (and u_t -> u_mm in direction).",
    provenance="inferred",
    controls={
        "short_optimal_token": Control(
            "hypothesis", breaks=[
                "(a) m_t at the last step >= 0.5",
                "(c) 1 - al(u_T, u_mm) <= 5e-3",
            ],
            description="the designated token the shorter one (Condition 1 violated): u_t "
                        "separates the other tokens, its margin ratio on the designated ones "
                        "stays far below the fraction and u_t away from u_mm"),
    },
    calibration=joint_calibration("(a) m_t at the last step >= 0.5"),
    sizes=JOINT_SIZES,
)
def test_u_margin_rate(tc):
    r"""m_t = ||u_mm|| min_i y_i u_t^T x_{i,opt} / ||u_t||, the margin of u_t/||u_t|| on the
    optimal tokens relative to the max margin 1/||u_mm|| (so m_t <= 1 with equality iff
    u_t || u_mm).  The paper's fraction is lost; empirically m_t -> 1.  Checks per instance,
    each accepted by the binomial test at `JOINT_P` (the spec's thresholds):
    (a) m_T >= 0.5 at the last step -- 0.5 is the spec's stand-in for the lost fraction;
    (b) m_t non-decreasing over the checkpoints t >= 100 (tolerance 0);
    (c) 1 - al(u_T, u_mm) <= 5e-3 (the Introduction's u_t -> u_mm); values recorded.
    """
    variant = SHORT_OPTIMAL_TOKEN if tc.control else EQ13
    condition1(tc, variant)
    run = run_of(tc, variant)
    checkpoints = np.asarray(tc.sizes["checkpoints"])
    on_opt = np.sum(run.gamma, axis=-1, where=run.is_opt)  # y_i u_t^T x_{i,opt}
    m = safe_ratio(run.u_mm_norm * on_opt.min(axis=-1), run.u_norm)
    tc.record("m_t at the checkpoints (per seed)", m[checkpoints])
    accept(tc, "(a) m_t at the last step >= 0.5", m[-1], m[-1] >= 0.5)
    increments = np.diff(m[checkpoints], axis=0).min(axis=0)
    accept(tc, "(b) m_t non-decreasing over the checkpoints", increments, increments >= 0.0)
    dev_u = 1.0 - run.u_alignment[-1]
    accept(tc, "(c) 1 - al(u_T, u_mm) <= 5e-3", dev_u, dev_u <= 5e-3)
    t = run.t[1:]
    tc.curve("margin", "m_t (seed 0)", t, m[1:, 0], xscale="log", ylabel="margin ratio",
             title="Theorem 4: decoder margin / max margin (seed 0)")
    tc.curve("margin", "max margin (m = 1)", t, np.ones(t.size), style="theory", xscale="log")
    tc.curve("margin", "constant fraction 0.5", t, np.full(t.size, 0.5), style="bound", xscale="log")
