r"""vdt24, joint training of the decoder u and the key-query matrix W (Section 4, Appendix B).

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738 (v1).  Model f(X) = u^T X^T softmax(X W x_1), exponential
loss L(u, W) = (1/n) sum_i exp(-y_i f(X_i)).  Data model DM (T = 2): the designated optimal
token x_{i,opt} (index 1 here, the paper's x_{i,2}) ~ N(0, rho^2 I/d), the query/other token
~ N(0, I/d), y_i = sign <u*, x_{i,opt}>.  References: the u-SVM u_mm (max margin
1/||u_mm|| on the optimal tokens) and the W-SVM W_mm, both for the designated tokens.

Eq. (13), its variants and the batched runs are the paper's set-up (`joint`): one shared run
per variant (`joint_runs`: the paper's setting, rho = 2, eta = 1, on 60 DM instances; each
negative control's own setting -- rho = 0.5, Eq. (13) without the time factor, joint NGD
Eq. (2) -- on 20, a computation the claim's case does not make) serves every trajectory
claim here.  Each records the token scores gamma_t and the logits z_t,
of which the loss, the margins, the gradient, the loss anywhere on a segment and the Hessian
are exact functions (`theorycheck.models.score_coordinates`).  Lemma 13 has its own batch of
many instances (`lemma13.invariant_batch`).

**Condition 1 and "with high probability".**  Condition 1 is a condition on the parameters
(zero initialization, rho > 1, d large against n, small eta; `condition1`), checked as
preconditions; no instance is kept or dropped by what its trajectory does.  Under it the
paper's results hold with high probability over the draw of DM, so every trajectory claim
decides per instance and accepts by `tc.conclusion.binomial` at P >= `JOINT_P` over its
instances (the test's power is recorded with it: 0.84 at a true rate of JOINT_P - 0.15 with
60 instances; a control's run has fewer and says so).  The per-instance success rate of Lemma 13's
invariants is measured and plotted against d/n (`test_joint_invariants`); DM-S is d = 16n.
Which reading of "d large against n" a claim's precondition uses: Lemma 13's claim runs at the
corrected d = `lemma13.overparameterized_dimension` (n); the trajectory claims run on the
spec's DM sizes (d = 16 n: 128 at n = 8, 1024 at n = 64), below that d at both tiers, so their
precondition is named "Condition 1 read as the spec's sizes (below the derived d): d >= 16 n"
and gives the derived d in its detail (`problems.condition1_parameters`).
"""
from __future__ import annotations

import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck import data as datasets
from theorycheck.checks import fit_slope
from theorycheck.solvers import certify, solve_usvm
from theorycheck.tails import NullTest

from .joint import (
    CONTROL_INSTANCES,
    CONTROL_LOW_POWER,
    EQ13,
    joint_calibration,
    JOINT_INSTANCES,
    JOINT_NGD,
    JOINT_SIZES,
    LEM13_GRID,
    SHORT_OPTIMAL_TOKEN,
    accept,
    binomial_rejection,
    condition1,
    dm_token_statistics,
    relative_distance,
    run_of,
    schedule,
)
from .lemma13 import (
    LEM13_SIZES,
    lemma13_batch,
    overparameterized_dimension,
    plot_rate_against_overparameterization,
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

RATE_TEST = NullTest(level=1e-4, count=1, sided="upper")
"""Lemma 11 (b)'s test of each of its two slopes: z = (slope + 1/2)/se, N(0, 1) at the rate's
edge (slope -1/2) by the delta method and stochastically below it inside (a steeper slope), rejected
beyond the upper 1e-4 quantile (z = 3.72); the two slopes' levels, 2e-4 together, are the claim's
share of its budget (`RATE_CALIBRATION`)."""
RATE_STATISTICS = ("max |cross|/rho^2", "max norm deviation")
"""Lemma 11's two statistics whose rate in d is tested (b)."""


def rate_decision(label: str) -> str:
    """The name of (b)'s decision on the rate of the statistic ``label``."""
    return f"rate in d of mean {label}: z of the log-log slope against -1/2"


RATE_CALIBRATION = [Calibrated(
    decision=rate_decision(label), threshold=f"z <= {RATE_TEST.critical:.4g} (RATE_TEST: level 1e-4, upper)",
    calibration_seeds="92000-92049", validation_seeds="92100-92149",
    how="the level (1e-4 per slope) is the claim's share of its budget, set before any seed; the blocks "
        "check the null, not a threshold. Calibration block (main at 7abc554: z from the recorded slope "
        "and standard error): z mean -0.08 (cross) and -0.13 (norms), sd 1.01 and 0.88, largest 2.34 "
        "and 1.60 of 50, fit to N(0, 1) (null_fit_p) 0.79 and 1; the replaced decisions (slope <= -1/2 "
        "+ 3.62 se, margins' normal model) gave 2.5e-3 + 1.6e-3 there (3.8 and 4.0 sd; the claim "
        "4.1e-3). A Monte Carlo outside the suite's seeds (generator seeds [92999, r, d], r < 1000, "
        "the quick sizes): z mean -0.23 and -0.18, sd 0.99 and 1.00, 3 and 4 of 1000 beyond the 1% "
        "quantile, 1 and 1 beyond the 0.1% quantile, largest 3.14 and 3.65. Validation block: z mean -0.09 "
        "and -0.15, sd 1.04 and 0.87, largest 1.83 and 2.39, null_fit_p 0.76 and 0.79; each decision "
        "1e-4 (stated bound), the claim 2.0e-4; both controls failed as declared on 50 of 50 "
        "(tiny_dimension 5e-199, common_direction 1.7e-12)") for label in RATE_STATISTICS]
"""How `RATE_TEST` was checked: the level is the budget's share, set before any seed."""


def log_mean_slope_error(dims, samples) -> float:
    """The standard error of the least-squares slope of log(mean of ``samples[d]``) against
    log d, by the delta method: var log m_d = (s_d / m_d)^2 / K_d."""
    x = np.log(np.asarray(dims, dtype=float))
    weights = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    relative = np.array([s.std(ddof=1) / (np.sqrt(s.size) * s.mean()) for s in samples])
    return float(np.sqrt(weights ** 2 @ relative ** 2))



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
            "reference", breaks=[rate_decision("max |cross|/rho^2")],
            constants={"shared_component_norm": 0.5},
            description="every token gets a shared component of norm 0.5: the inner products no "
                        "longer vanish like d^(-1/2)"),
    },
    calibration=[*RATE_CALIBRATION,
                 "the rate's tolerance is the slope's sampling error (delta method over the "
                 "instances); it replaced a slack 0.05 (bound -0.45) set after seeing the measured slopes",
                 "checked by a Monte Carlo on generator seeds 1000-1039 (not the suite's seeds): "
                 "mean slopes -0.498 (cross) and -0.503 (norms), spread 0.010 and 0.013 against "
                 "delta-method errors 0.010 and 0.013",
                 "2026-11-29 (issue 31, third session): a Monte Carlo of z = (slope + 1/2)/se outside "
                 "the suite's seeds (numpy generator seeds [7311, r], r < 300, the quick sizes) gave mean "
                 "-0.23 (cross) and -0.15 (norms), sd 0.99: stochastically below N(0, 1) at d = 64-1024 "
                 "(the slopes are a little steeper than -1/2), which the two-sided fit of that day "
                 "refuted; the fit is one-sided since (a conservative test keeps its level), so the "
                 "slopes are decided as a NullTest (RATE_CALIBRATION), where the margins' normal model "
                 "left 1.9e-4 + 2.9e-4 at 50 seeds"],
    sizes={"quick": dict(n=8, d=64, dims=[64, 256, 1024], instances=100, rho=2.0, delta=0.05),
           "full": dict(n=64, d=1024, dims=[256, 1024, 2048], instances=100, rho=2.0, delta=0.05)},
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
    (b) The rate: over d in `dims` (x4 steps), the fitted slope b of log(mean max |cross|/rho^2)
        and of log(mean max norm deviation) against log d is <= -1/2 (the bound's d^(-1/2))
        within its sampling error, as a one-sided test (`RATE_TEST`): z = (b + 1/2)/se, se =
        sqrt(sum_d w_d^2 (s_d / (sqrt(K) m_d))^2) by the delta method (w_d the least-squares
        weights of log d, m_d and s_d the mean and standard deviation of the statistic over the
        K instances at d), is N(0, 1) at the edge b = -1/2 and stochastically below it for a
        steeper rate, rejected at z > 3.72 (level 1e-4 for each slope; the calibration checks the
        recorded z against N(0, 1)).
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
    for label, column in zip(RATE_STATISTICS, (1, 0)):
        samples = [stats[d][column] for d in sizes["dims"]]
        means = np.array([sample.mean() for sample in samples])
        rate = fit_slope(dims, means, window=(dims[0], dims[-1])).slope
        se = log_mean_slope_error(dims, samples)
        tc.record(f"mean {label} over d={sizes['dims']}; slope; its standard error", [means, rate, se])
        tc.conclusion.at_most(rate_decision(label), (rate + 0.5) / se, RATE_TEST.critical, tail_bound=RATE_TEST.tail_bound)
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
    calibration=joint_calibration("Theta: ||u_t|| / sum_{s<t} eta_s >= 0.5 for t >= 1"),
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
    condition1(tc, variant)
    run = run_of(tc, variant)
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
    statement="Along Eq. (13) on DM under Condition 1 (overparameterization read as d >= 2 (1 + "
              "rho^2)^2/(rho^2 - 1)^2 n ln(n/delta), delta = 1 - JOINT_P), with high probability over "
              "the data, for all "
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
        "d = overparameterized_dimension(n) is derived (the Gaussian tail of the worst of n "
        "first-step gaps), not fitted; it replaced d = 16 n after the full tier (38068db) found "
        "Lemma 13 holding on 30/60 instances at n = 64, d = 16 n; the full tier's n moved from 64 "
        "to 32 for memory",
        *joint_calibration("(i)-(iii) hold on an instance, eta=1: P >= JOINT_P"),
    ],
    sizes=LEM13_SIZES,
)
def test_joint_invariants(tc):
    r"""Lemma 13 under Condition 1 holds with high probability over the draw of DM (through
    Lemma 11's concentration and d large against n), so it is tested as a probability: fresh
    DM instances at the tier's n (8 quick, 32 full) in dimension d =
    `lemma13.overparameterized_dimension` (n) = ceil(2 (1 + rho^2)^2/(rho^2 - 1)^2 n ln(n/delta)),
    delta = 1 - JOINT_P (177 at n = 8, 954 at n = 32: the d at which the base case of the
    induction holds with P >= JOINT_P in the Gaussian approximation of
    `vdt24.cond1.base_case_needs_n_log_n`) run Eq. (13) (`invariant_batch`: `instances` for
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
    `JOINT_P` (the other joint claims') rejects at the measured success rate.  Condition 1
    read linearly, d >= 16 n (the spec's sizes), is refuted at large n:
    `vdt24.lem13.DISCREPANCY_linear_overparameterization`.
    Control: rho = 0.5 violates "optimal token longer"; the invariants fail on every instance.
    """
    s = tc.sizes
    condition1_parameters(tc, EQ13.rho if tc.control is None else SHORT_OPTIMAL_TOKEN.rho, 1.0,
                          s["n"], s["d"], needed=overparameterized_dimension(s["n"]))
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
    calibration=joint_calibration("min_{t>=2} min_i y_i u_mm^T X_i^T s_i(W_t) >= 0.1"),
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
    variant = SHORT_OPTIMAL_TOKEN if tc.control else EQ13
    condition1(tc, variant)
    run = run_of(tc, variant)
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
