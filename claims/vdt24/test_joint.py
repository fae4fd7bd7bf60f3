r"""vdt24, joint training of the decoder u and the key-query matrix W (Section 4, Appendix B).

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738 (v1).  Model f(X) = u^T X^T softmax(X W x_1), exponential
loss L(u, W) = (1/n) sum_i exp(-y_i f(X_i)).  Data model DM (T = 2): the designated optimal
token x_{i,opt} (index 1 here, the paper's x_{i,2}) ~ N(0, rho^2 I/d), the query/other token
~ N(0, I/d), y_i = sign <u*, x_{i,opt}>.  References: the u-SVM u_mm (max margin
1/||u_mm|| on the optimal tokens) and the W-SVM W_mm, both for the designated tokens.

Eq. (13), its variants and the batched runs are the paper's set-up (`joint`): one batch
(`joint_runs`: the paper's setting on 60 DM instances, each control's setting on 20) serves
every trajectory claim here -- the paper's
setting (rho = 2, eta = 1) and the negative controls' own runs (rho = 0.5; Eq. (13) without
the time factor; joint NGD Eq. (2)).  It records the token scores gamma_t and the logits z_t,
of which the loss, the margins, the gradient, the loss anywhere on a segment and the Hessian
are exact functions (`theorycheck.models.score_coordinates`).  Lemma 13 has its own batch of
many instances (`joint.invariant_batch`).

**Condition 1 and "with high probability".**  Condition 1 is a condition on the parameters
(zero initialization, rho > 1, d large against n, small eta; `condition1`), checked as
preconditions; no instance is kept or dropped by what its trajectory does.  Under it the
paper's results hold with high probability over the draw of DM, so every trajectory claim
decides per instance and accepts by `tc.conclusion.binomial` at P >= `JOINT_P` over its
instances (the test's power is recorded with it: 0.84 at a true rate of JOINT_P - 0.15 with
60 instances; a control's run has fewer and says so).  The per-instance success rate of Lemma 13's
invariants is measured and plotted against d/n (`test_joint_invariants`); DM-S is d = 16n.
"""
from __future__ import annotations

import numpy as np

from theorycheck import Control, claim
from theorycheck import data as datasets
from theorycheck.checks import fit_slope
from theorycheck.models import score_coordinates
from theorycheck.solvers import certify, solve_usvm

from .joint import (
    CONTROL_INSTANCES,
    JOINT_CALIBRATION,
    JOINT_INSTANCES,
    binomial_rejection,
    CONTROL_LOW_POWER,
    EQ13,
    JOINT_NGD,
    JOINT_SIZES,
    LEM13_GRID,
    LEM13_SIZES,
    NO_TIME_FACTOR,
    SHORT_OPTIMAL_TOKEN,
    accept,
    condition1,
    dm_token_statistics,
    hessian_ratio_along,
    lemma13_batch,
    other_token_alignment,
    plot_rate_against_overparameterization,
    relative_distance,
    run_of,
    safe_ratio,
    schedule,
    step_radii,
    success_rate,
)
from .problems import DM_SIZES, JOINT_P, PAPER, condition1_parameters, dm


# ============================================================== u-SVM reference


@claim(
    f"{PAPER}.def.usvm_reference",
    source="(u-SVM), Section 4",
    statement="The u-SVM reference u_mm = argmin ||u|| s.t. y_i u^T x_{i,opt} >= 1 is computed "
              "correctly: feasible, KKT-certified, equal to the dual solution and to the "
              "minimum-norm interpolant of its support vectors.",
    provenance="stated",
    controls={
        "non_optimal_tokens": Control(
            "reference", breaks=[
                "min over trials of min_i y_i u^T x_{i,opt}",
                "relative distance to the dual solution",
            ],
            description="the same program solved on the non-optimal tokens (labels unchanged): "
                        "cosine about 0 with u_mm, constraints violated"),
    },
    sizes={"quick": dict(DM_SIZES["quick"]), "full": dict(DM_SIZES["full"])},
)
def test_usvm_reference(tc):
    r"""u_mm = argmin ||u||_2 s.t. y_i u^T z_i >= 1, z_i = x_{i,opt} (the optimal tokens).

    The candidate is the reference every joint claim uses (`dm_problem`: cvxpy/Clarabel
    primal).  It is judged against an independent dual solve
    max_{lambda >= 0} 1^T lambda - 1/2 lambda^T K lambda, K_ij = y_i y_j <z_i, z_j>,
    u = sum_i lambda_i y_i z_i, by
    (1) feasibility min_i y_i u^T z_i >= 1 - 1e-6;
    (2) the KKT certificate with the dual's multipliers (stationarity, slackness, duality gap,
        lambda >= 0) <= 1e-6 (`certify`; the solvers run at 1e-10);
    (3) relative distance to the dual solution <= 1e-6;
    (4) closed form on the support set S = {i: lambda_i > 1e-6 max lambda} of the dual: by KKT
        u_mm is the minimum-norm interpolant u = A_S^T (A_S A_S^T)^{-1} 1 (A = diag(y) Z), to
        1e-6.  With d >> n typically, not always, every sample is a support vector; then all
        margins y_i u_mm^T x_{i,opt} are equal, which is what keeps the loss ratios of
        Lemma 13 (i) bounded.  The count is recorded.
    The control solves the program on the non-optimal tokens; it violates (1), (2), (3), (4).
    """
    data, _, u_mm, _ = tc.use(dm, rho=EQ13.rho)
    worst = dict(min_constraint=np.inf, kkt=0.0, to_dual=0.0, to_closed_form=0.0, cosine=1.0)
    all_support_vectors = 0
    for k in range(data.K):
        inst = data.instance(k)
        Z, A = inst.optimal_tokens(), inst.y[:, None] * inst.optimal_tokens()
        candidate = u_mm[k].cpu().numpy()
        if tc.control == "non_optimal_tokens":
            candidate = solve_usvm(inst.X[np.arange(data.n), 1 - inst.opt], inst.y).u
        dual = solve_usvm(Z, inst.y, method="dual", name=data.name, trial=k)
        cert = certify(A, np.ones((data.n, 1)), candidate[:, None], dual.multipliers, "candidate")
        support = dual.multipliers > 1e-6 * dual.multipliers.max()
        all_support_vectors += int(support.all())
        closed_form = A[support].T @ np.linalg.solve(A[support] @ A[support].T, np.ones(support.sum()))
        worst["min_constraint"] = min(worst["min_constraint"], cert.min_constraint)
        worst["kkt"] = max(worst["kkt"], cert.stationarity, cert.complementary_slackness,
                           cert.duality_gap, -cert.min_multiplier)
        worst["to_dual"] = max(worst["to_dual"], relative_distance(candidate, dual.u))
        worst["to_closed_form"] = max(worst["to_closed_form"], relative_distance(candidate, closed_form))
        worst["cosine"] = min(worst["cosine"], candidate @ dual.u / np.linalg.norm(candidate)
                              / np.linalg.norm(dual.u))
    tc.record("worst over trials", worst)
    tc.record("max margin 1/||u_mm|| per trial", 1.0 / u_mm.norm(dim=1).cpu().numpy())
    tc.conclusion.at_least("min over trials of min_i y_i u^T x_{i,opt}", worst["min_constraint"], 1.0, margin=1e-6)
    tc.conclusion.at_most("worst KKT residual with the dual's multipliers", worst["kkt"], 1e-6)
    tc.conclusion.at_most("relative distance to the dual solution", worst["to_dual"], 1e-6)
    tc.record("trials in which every sample is a support vector", f"{all_support_vectors}/{data.K}")
    tc.conclusion.at_most("relative distance to the closed form on the support set", worst["to_closed_form"], 1e-6)


# ============================================================== Lemma 11


@claim(
    f"{PAPER}.lem11.dm_near_orthogonal",
    source="Lemma 11 (Bernstein bounds for DM)",
    statement="With probability >= 1 - delta, DM tokens have squared norms within "
              "O(sqrt(log(n/delta)/d)) of their means and pairwise inner products "
              "O(rho^2 sqrt(log(n/delta)/d)): nearly orthogonal for d >> log n.",
    provenance="inferred",
    controls={
        "tiny_dimension": Control(
            "statement", breaks=[
                "P[bounds hold and |cross|/rho^2 <= 0.5] >= 1 - delta (at the tier's d)",
            ],
            constants={"d": 4, "second_d": 16, "third_d": 64},
            description="d = 4 (grid 4, 16, 64): max |cross|/rho^2 far above 0.5, not nearly "
                        "orthogonal"),
        "common_direction": Control(
            "reference", breaks=["rate in d of mean max |cross|/rho^2 (log-log slope)"],
            constants={"shared_component_norm": 0.5},
            description="every token gets a shared component of norm 0.5: the inner products no "
                        "longer vanish like d^(-1/2)"),
    },
    calibration=["the slack 0.05 of the rate bound -0.45 was set after seeing the measured "
                 "slopes -- a threshold moved after seeing data (not held out)"],
    sizes={"quick": dict(n=8, d=64, dims=[64, 256, 1024], instances=100, rho=2.0, delta=0.05),
           "full": dict(n=64, d=1024, dims=[256, 1024, 2048], instances=20, rho=2.0, delta=0.05)},
)
def test_dm_near_orthogonal(tc):
    r"""DM with sigma = 1/sqrt(d): E||x_opt||^2 = rho^2, E||x_other||^2 = 1.  Lemma 11: with
    probability >= 1 - delta, for all tokens and all pairs of distinct tokens,

        | ||x||^2 / E||x||^2 - 1 | <= c sqrt(log(4n/delta)/d),
        |<x, x'>| / rho^2        <= c sqrt(log(4n^2/delta)/d).

    The constants are stripped; Bernstein for chi^2_d/d gives c = sqrt(8) for the norms (union
    over 2n tokens) and sub-exponential products give the same order for the 2n^2 pairs; c = 4
    (the spec's) covers both.  Checks, at delta = 0.05:
    (a) K = `instances` independent instances at the base d; success = both bounds hold and
        max |cross|/rho^2 <= 0.5 ("nearly orthogonal", what the proofs use).
        `tc.conclusion.binomial` rejects P[success] >= 1 - delta at level 0.05 (its power is
        recorded).
    (b) The rate: over d in `dims` (x4 steps), the fitted slope of log(mean max |cross|/rho^2)
        and of log(mean max norm deviation) against log d is <= -0.45 (the bound's d^(-1/2),
        minus 0.05 for the finite-d curvature of a maximum over a fixed number of pairs).
    The sqrt bounds alone are too loose (c = 4) to fail at tiny d, hence the 0.5 requirement,
    which d = 4 breaks (control).  A shared component of norm 0.5 in every token breaks the
    rate (control).  The base d = 8n is this claim's own size (Lemma 11 is about the data
    alone); the trajectory claims run DM at d = 16n.
    """
    sizes = dict(tc.sizes)
    n, rho, delta = sizes["n"], sizes["rho"], sizes["delta"]
    if tc.control == "tiny_dimension":
        sizes["d"], sizes["dims"] = 4, [4, 16, 64]
    stats = {d: dm_token_statistics(tc, n, d, rho, sizes["instances"]) for d in sizes["dims"]}
    norm_dev, cross = stats[sizes["d"]]  # the base d is one of `dims`
    norm_bound = 4 * np.sqrt(np.log(4 * n / delta) / sizes["d"])
    cross_bound = 4 * np.sqrt(np.log(4 * n**2 / delta) / sizes["d"])
    success = (norm_dev <= norm_bound) & (cross <= cross_bound) & (cross <= 0.5)
    tc.record("norm bound, cross bound at the base d", [norm_bound, cross_bound])
    tc.record("max over instances: norm deviation, |cross|/rho^2", [norm_dev.max(), cross.max()])
    tc.conclusion.binomial("P[bounds hold and |cross|/rho^2 <= 0.5] >= 1 - delta (at the tier's d)",
                           success, p=1 - delta, alpha=0.05)
    dims = np.asarray(sizes["dims"], dtype=float)
    for label, column in (("max |cross|/rho^2", 1), ("max norm deviation", 0)):
        means = np.array([stats[d][column].mean() for d in sizes["dims"]])
        tc.record(f"mean {label} over d={sizes['dims']}", means)
        tc.conclusion.slope(f"rate in d of mean {label} (log-log slope)", dims, means,
                            window=(dims[0], dims[-1]), at_most=-0.45)
        tc.curve("orthogonality", f"mean {label}", dims, means, xscale="log", yscale="log",
                 xlabel="d", title="Lemma 11: DM tokens nearly orthogonal")
    tc.curve("orthogonality", "cross bound 4 sqrt(log(4n^2/delta)/d)", dims,
             4 * np.sqrt(np.log(4 * n**2 / delta) / dims), style="bound", xscale="log", yscale="log")


# ============================================================== Lemma 12


@claim(
    f"{PAPER}.lem12.joint_norm_growth",
    source="Lemma 12",
    statement="Under Eq. (13), ||u_t|| <= sum_{s<t} eta_s <= 3 eta t^(1/3) and "
              "||W_t||_F <= sum_{1<=s<t} eta_s, and both norms are Theta(sum_s eta_s) = Theta(t^(1/3)).",
    provenance="inferred",
    controls={
        "joint_ngd": Control(
            "dynamics", breaks=["Theta: ||W_t|| / sum_{1<=s<t} eta_s >= 0.5 for t >= 2"],
            constants={"eta": JOINT_NGD.eta},
            description="joint NGD (Eq. (2), one norm over (u, W), eta = 0.1, no time factor): "
                        "the joint gradient is dominated by grad_u, so almost all of each step "
                        "goes to u and ||W_t|| falls far below half its budget"),
    },
    calibration=list(JOINT_CALIBRATION),
    sizes=JOINT_SIZES,
)
def test_joint_norm_growth(tc):
    r"""Each block moves by exactly eta_s = eta (s+1)^(-2/3) per step (the W block from s = 1
    on, its gradient being 0 at u_0 = 0).  The upper bounds ||u_t|| <= sum_{s<t} eta_s,
    ||W_t|| <= sum_{1<=s<t} eta_s are the triangle inequality over unit-direction steps, and
    sum_{s<t} (s+1)^(-2/3) <= 1 + int_1^t x^(-2/3) dx = 3 t^(1/3) - 2 is arithmetic of the
    schedule: neither can fail, so both are records (largest ratio over t).

    What depends on the run is Theta: the steps keep pointing the same way, so the norms are a
    constant fraction of the budgets.  Per instance, ||u_t|| / sum_{s<t} eta_s >= 0.5 for every
    t >= 1 and ||W_t|| / sum_{1<=s<t} eta_s >= 0.5 for every t >= 2 (the ratios are 1 at the
    start, where the first steps are collinear; 0.5 is the spec's floor), each accepted by the
    binomial test at `JOINT_P` over the instances.  (That the per-trial-schedule batch follows
    BlockNGD and NGD alone step for step is a test of the library: tests/conformance.)
    Control: joint NGD moves (u, W) by eta in total, almost all of it along u, so ||W_t|| lags.
    """
    variant = JOINT_NGD if tc.control == "joint_ngd" else EQ13
    run = run_of(tc, variant)
    condition1(tc, run)
    steps = run.steps
    cumulative = np.concatenate([[0.0], np.cumsum(schedule(variant, steps))])  # sum_{s<t}, t = 0..steps
    u_budget = cumulative[:, None]
    W_budget = (cumulative - schedule(variant, 1)[0]).clip(min=0.0)[:, None]  # sum_{1<=s<t}
    t = run.t
    u_ratio, W_ratio = run.u_norm[1:] / u_budget[1:], run.W_norm[2:] / W_budget[2:]
    tc.record("triangle inequality: max over t of ||u_t|| / sum_{s<t} eta_s, ||W_t|| / sum_{1<=s<t} "
              "eta_s", [u_ratio.max(), W_ratio.max()])
    tc.record("schedule: max over t >= 1 of sum_{s<t} eta_s / (3 eta t^(1/3))",
              (cumulative[1:] / (3 * variant.eta * t[1:] ** (1 / 3))).max())
    accept(tc, "Theta: ||u_t|| / sum_{s<t} eta_s >= 0.5 for t >= 1", u_ratio.min(axis=0),
                 u_ratio.min(axis=0) >= 0.5)
    accept(tc, "Theta: ||W_t|| / sum_{1<=s<t} eta_s >= 0.5 for t >= 2", W_ratio.min(axis=0),
                 W_ratio.min(axis=0) >= 0.5)
    tc.curve("norms", "||u_t|| (seed 0)", t[1:], run.u_norm[1:, 0], xscale="log", yscale="log",
             ylabel="norm", title="Lemma 12: norms under Eq. (13) (seed 0)")
    tc.curve("norms", "||W_t||_F (seed 0)", t[2:], run.W_norm[2:, 0], xscale="log", yscale="log")
    tc.curve("norms", "sum_{s<t} eta_s", t[1:], cumulative[1:], style="bound", xscale="log", yscale="log")
    tc.curve("norms", "3 eta t^(1/3)", t[1:], 3 * variant.eta * t[1:] ** (1 / 3), style="theory",
             xscale="log", yscale="log")


# ============================================================== Lemma 13


@claim(
    f"{PAPER}.lem13.joint_invariants",
    source="Lemma 13 (Eqs. (14)-(16); Introduction items (i)-(iii))",
    statement="Along Eq. (13) on DM under Condition 1, with high probability over the data, for all "
              "t >= 1: (i) the per-sample loss ratios l_i/l_j stay bounded; (ii) the score gap "
              "gamma_opt - gamma_other is positive and non-decreasing; (iii) s_opt >= 1/2 and "
              "non-decreasing.",
    provenance="stated",
    controls={
        "short_optimal_token": Control(
            "hypothesis", breaks=["(i)-(iii) hold on an instance, eta=1: P >= JOINT_P"],
            constants={"rho": SHORT_OPTIMAL_TOKEN.rho},
            description="rho = 0.5 (the designated token is the shorter one, Condition 1 "
                        "violated): the gap and s_opt decrease, s_opt -> 0"),
    },
    calibration=[
        "the horizon was first 150 steps at eta = 1, whose middle (t = 75) is barely past the "
        "transient: on --tc-seed 1 and 3 the plateau failed there on 1-2 instances whose other "
        "invariants held, so it was moved to 300 steps (middle t = 150) before seed 0 was looked "
        "at -- a window moved after seeing data on seeds other than 0",
        *JOINT_CALIBRATION,
    ],
    sizes=LEM13_SIZES,
)
def test_joint_invariants(tc):
    r"""Lemma 13 under Condition 1 holds with high probability over the draw of DM (through
    Lemma 11's concentration and d large against n), so it is tested as a probability: fresh
    DM instances at the tier's (n, d = 16n) run Eq. (13) (`invariant_batch`: `instances` for
    `steps` iterations at eta = 1, `small_step_instances` for `small_step_steps` at eta = 0.1),
    and an instance succeeds when all of

    (i) R_t = max_{i,j} l_i/l_j = exp(max_i gbar_i - min_i gbar_i) <= 20 for all t (the lemma's
        C is lost; 20 is the spec's), and, for a run past the transient (natural time
        sum_{s<t} eta_s >= 10 at mid-run: eta = 1 only), max R over the second half <= 1.05 x
        the max over the first half (a plateau may drift by 5%, not keep growing);
    (ii) g_i(t) = gamma_{i,opt} - gamma_{i,other} > 0 for t >= 1 and every increment >=
        -tol("accumulated") (round-off of scores accumulated over the steps);
    (iii) s_opt >= 1/2 - tol("accumulated"), every increment >= -tol("accumulated"), and
        log(1 - s_opt) (a logsumexp of the logits, exact where s_opt rounds to 1)
        non-increasing within 1e-9

    hold for every sample.  Criterion: the exact binomial test of P[success] >= `JOINT_P` at
    level 0.05 does not reject; with `JOINT_INSTANCES` = 60 instances it rejects at 45
    successes or fewer and has power 0.84 at a true rate of 0.70 (recorded with the decision).
    The thresholds 20, 1.05 are the spec's; the horizon's choice is in the calibration
    record.  The success rates at d/n = 4, 8, 16 (eta = 1) are recorded and plotted, with the
    rate of instances whose first u step widens every gap (the base case of the induction).
    Recorded beside them: the probability that a `JOINT_INSTANCES`-instance binomial test at
    `JOINT_P` (the other joint claims') rejects at the measured success rate.
    Control: rho = 0.5 violates "optimal token longer"; the invariants fail on every instance.
    """
    s = tc.sizes
    condition1_parameters(tc, EQ13.rho if tc.control is None else SHORT_OPTIMAL_TOKEN.rho, 1.0,
                          s["n"], s["d"])
    if tc.control == "short_optimal_token":
        invariants, _ = lemma13_batch(tc, SHORT_OPTIMAL_TOKEN, instances=CONTROL_INSTANCES)
        tc.conclusion.binomial("(i)-(iii) hold on an instance, eta=1: P >= JOINT_P",
                               success_rate(invariants), p=JOINT_P, low_power=CONTROL_LOW_POWER)
        return
    for variant in LEM13_GRID:
        invariants, widened = lemma13_batch(tc, variant)
        success = success_rate(invariants)
        for name, (value, holds) in invariants.items():
            tc.record(f"eta={variant.eta:g}: {name}: instances holding; values where it fails",
                      [f"{int(holds.sum())}/{holds.size}", value[~holds]])
        tc.record(f"eta={variant.eta:g}: success rate; among instances whose first step widens every "
                  "gap; among the others", [success.mean(), success[widened].mean() if widened.any() else None,
                                             success[~widened].mean() if (~widened).any() else None])
        tc.record(f"eta={variant.eta:g}: P[a {JOINT_INSTANCES}-instance test at JOINT_P rejects] at the "
                  "measured rate", binomial_rejection(JOINT_INSTANCES, JOINT_P, success.mean()))
        tc.conclusion.binomial(f"(i)-(iii) hold on an instance, eta={variant.eta:g}: P >= JOINT_P",
                               success, p=JOINT_P)
    plot_rate_against_overparameterization(tc)


# ============================================================== Lemma 14


ATTENTION_MOVES = 2
"""The first step at which W_t (hence the attention) has moved under Eq. (13) from zero: W_1 = 0
because grad_W L = 0 at u_0 = 0."""


@claim(
    f"{PAPER}.lem14.attended_features_separable",
    source="Lemma 14",
    statement="Along Eq. (13), u_mm separates the attended features X_i^T s_i(W_t) with a positive "
              "margin: min_t min_i y_i u_mm^T X_i^T s_i(W_t) >= c > 0 (with high probability over DM).",
    provenance="inferred",
    controls={
        "short_optimal_token": Control(
            "hypothesis", breaks=["min_{t>=2} min_i y_i u_mm^T X_i^T s_i(W_t) >= 0.1"],
            description="the designated token the shorter one (Condition 1 violated): attention "
                        "leaves it and the attended margin turns negative"),
    },
    calibration=list(JOINT_CALIBRATION),
    sizes=JOINT_SIZES,
)
def test_attended_features_separable(tc):
    r"""a_i(t) = y_i u_mm^T X_i^T s_i(W_t) = s_opt y_i u_mm^T x_{i,opt} + (1 - s_opt) y_i u_mm^T x_{i,other}.

    With T = 2, a_i is linear in s_opt, so while s_opt in [1/2, 1] (Lemma 13 (iii))
    a_i(t) >= c_data := min_i min(A_i, (A_i + B_i)/2), A_i = y_i u_mm^T x_{i,opt} (= 1 for a
    support vector), B_i = y_i u_mm^T x_{i,other}; c_data > 0 as soon as |u_mm^T x_{i,other}| < 1,
    i.e. near-orthogonality (Lemma 11).  At t = 0 and t = 1 the attention is uniform by
    construction (W_0 = 0, and W's first step is skipped because grad_W L = 0 at u_0 = 0), so
    a_i = (A_i + B_i)/2 there and the minimum over all t would be c_data by arithmetic.  The
    decisions therefore read t >= `ATTENTION_MOVES` = 2, where s(W_t) depends on the run.
    Per instance of the Eq. (13) run (eta = 1), each accepted by the binomial test at
    `JOINT_P` over the instances:
    (a) min_{t>=2} min_i a_i(t) >= 0.1 (Lemma 14's c is lost; 0.1 is the spec's floor);
    (b) min_{t>=2} min_i a_i(t) >= c_data - `tc.tol("accumulated")`, the derived certificate,
        which fails where some s_opt drops below 1/2;
    (c) the margin improves on the uniform attention: min_i a_i(t_end) > min_i a_i(0), i.e.
        attention moving to the designated token raises u_mm's margin (A_i > B_i);
    and, the data's part, c_data > 0.
    Control: rho = 0.5 (Condition 1 violated): attention leaves the designated token.
    """
    run = run_of(tc, SHORT_OPTIMAL_TOKEN if tc.control else EQ13)
    condition1(tc, run)
    margins = run.attended_margins(run.u_mm).min(axis=-1)  # min_i a_i(t), (steps+1, K)
    attended = margins[ATTENTION_MOVES:].min(axis=0)  # (K,)
    projections = datasets.token_scores(run.data.X, run.data.y, run.u_mm)  # (K, n, 2)
    on_opt = np.sum(projections, axis=-1, where=run.is_opt)
    c_data = np.minimum(on_opt, projections.mean(axis=-1)).min(axis=-1)
    tc.record("min_i a_i at t = 0 (uniform attention) per instance", margins[0])
    accept(tc, "min_{t>=2} min_i y_i u_mm^T X_i^T s_i(W_t) >= 0.1", attended, attended >= 0.1)
    accept(tc, "min_{t>=2} attended margin >= c_data", attended - c_data,
           attended >= c_data - tc.tol("accumulated"))
    gain = margins[-1] - margins[0]
    accept(tc, "attended margin at t_end > at t = 0 (uniform attention)", gain, gain > 0)
    accept(tc, "c_data > 0", c_data, c_data > 0)
    t = run.t[1:]
    tc.curve("attended", "min_i y_i u_mm^T X_i^T s_i(W_t) (seed 0)", t, margins[1:, 0], xscale="log",
             ylabel="attended margin", title=f"Lemma 14: u_mm separates attended features, {run.variant.label}")
    tc.curve("attended", "certificate c_data (seed 0)", t, np.full(t.size, c_data[0]), style="bound",
             xscale="log")


# ============================================================== Lemma 3


LOG_LIPSCHITZ_C = 2.0
"""C of Lemma 3 (b) (lost): the spec's 2, checked on --tc-seed 1-5, see `test_loss_landscape_properties`."""

RADIUS_FACTOR = 3.0
"""Factor on the step radius in Lemma 3 (b)'s ``triple_radius`` control."""

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
        "random_witness": Control(
            "reference", breaks=["(a) witness: min_t mu_t > 0"],
            description="a random unit vector in place of u_mm/||u_mm||: the witnessed PL "
                        "constant turns negative"),
        "triple_radius": Control(
            "statement", breaks=["(b) max over t, lambda of L(theta')/L(theta_t) within the step radius <= C"],
            constants={"radius_factor": RADIUS_FACTOR, "C": LOG_LIPSCHITZ_C},
            description="the same C = 2 claimed within 3 times the step radius (the uphill points "
                        "recomputed there): log L rises about linearly along the uphill ray, so "
                        "a C that holds within r_t with room to spare cannot hold within 3 r_t "
                        "-- the bound is tied to the lemma's radius, not vacuous"),
    },
    calibration=[
        "C = 2 of (b) is the spec's value for the descent segment; kept for the ball after "
        "checking it on --tc-seed 1-5, then checked at seed 0",
        "HESSIAN_TREND = 0.1 of (c) is set by the argument (a tenth of the linear growth), "
        "written after seeing seed 0's slopes (not held out), then checked on --tc-seed 1-5",
        "RADIUS_FACTOR = 3 of the triple_radius control: chosen on seed 0 (not held out), then "
        "checked on --tc-seed 1-5",
        *JOINT_CALIBRATION,
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
    Controls: a random witness (reference), and C = 2 claimed within three times the step
    radius (statement: the uphill points recomputed at 3 r_t).
    """
    run = run_of(tc, EQ13)
    condition1(tc, run)
    if tc.control != "triple_radius":
        _pl_inequality(tc, run)
    if tc.control != "random_witness":
        _log_lipschitz(tc, run)
    if tc.control is None:  # the controls break (a) or (b): the Hessians are the claim's alone
        _self_bounded(tc, run)


def _pl_inequality(tc, run):
    """Lemma 3 (a), witnessed by u_mm/||u_mm|| (a random unit vector for the control)."""
    unit_witness = run.u_mm / run.u_mm_norm[:, None]
    if tc.control == "random_witness":
        v = tc.rng("witness").standard_normal(run.u_mm.shape)
        unit_witness = v / np.linalg.norm(v, axis=-1, keepdims=True)
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
    """Lemma 3 (b) within the step radius (three times it for the control)."""
    radius = step_radii(run) * (RADIUS_FACTOR if tc.control == "triple_radius" else 1.0)
    up_gamma, up_z = score_coordinates.uphill_points(run.gamma, run.z, run.data.y, run.data.X, run.is_opt,
                                                     radius)
    start_gamma, start_z = run.gamma[:-1], run.z[:-1]
    uphill = np.exp(score_coordinates.segment_log_ratios(start_gamma, start_z, up_gamma[:-1], up_z[:-1],
                                                         run.is_opt, SEGMENT_POINTS))
    if tc.control == "triple_radius":  # the descent step does not depend on the radius
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
    calibration=list(JOINT_CALIBRATION),
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
    run = run_of(tc, NO_TIME_FACTOR if tc.control else EQ13)
    condition1(tc, run)
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
        "wrong_token_svm": Control(
            "reference", breaks=["dev_W at the last step <= 1e-3"],
            description="the W-SVM solved for the other (non-designated) token in place of W_mm: "
                        "it ranks the two tokens the other way round, so a W_t that converges to "
                        "W_mm's direction must miss its direction"),
    },
    calibration=list(JOINT_CALIBRATION),
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
    Controls: rho = 0.5 (Condition 1 violated) drives W_t to the W-SVM of the other token (its
    alignment with that SVM is recorded); that SVM as the reference (solved anew, recorded
    at the snapshot steps of the run) must leave a deficit far above 1e-3.
    """
    run = run_of(tc, SHORT_OPTIMAL_TOKEN if tc.control == "short_optimal_token" else EQ13)
    condition1(tc, run)
    checkpoints = np.asarray(tc.sizes["checkpoints"])
    alignment = run.W_alignment("other" if tc.control == "wrong_token_svm" else "W_mm")
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
    calibration=list(JOINT_CALIBRATION),
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
    run = run_of(tc, SHORT_OPTIMAL_TOKEN if tc.control else EQ13)
    condition1(tc, run)
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
