r"""jta24: the l_p mirror-descent step and the l_p-AttSVM reference every theorem is about.

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581: l_p-AttGD (Section "Algorithm", reconstructed
from the authors' code) and the l_p-AttSVM
    W_mm_alpha = argmin ||W||_p  s.t.  (x_{i,alpha_i} - x_{i,t})^T W z_i >= 1  (t != alpha_i).
"""
import numpy as np
import torch

from theorycheck import Calibrated, Control, claim
from theorycheck.models import TokenSelection
from theorycheck.optim import GD, MirrorDescent, inverse_mirror_map, mirror_map, relative_error, run_trajectory
from theorycheck.solvers import solve_lp_wsvm, solve_wsvm
from theorycheck.tails import TailBound
from theorycheck.tolerance import unit_roundoff

from .setup import CERT_P, INSTANCES, PAPER, SIZES, certificates, instances


@claim(
    f"{PAPER}.alg.p2_is_gd",
    source="l_p-AttGD (main text; authors' code)",
    statement="For p = 2 the l_p-AttGD step is the gradient step W - eta grad L, and "
              "(grad psi)^-1(grad psi(W)) = W for every p > 1.",
    provenance="stated",
    controls={
        "p3_vs_gd": Control("dynamics", breaks=["MD(p) iterates equal GD iterates"],
                            description="mirror descent with p = 3 compared with GD: the iterates "
                                        "must differ far beyond round-off",
                            constants={"p": 3.0}),
    },
    nature="identity",
    sizes={"quick": dict(SIZES["quick"], steps=200), "full": dict(SIZES["full"], steps=2000)},
)
def test_p2_is_gd(tc):
    r"""grad psi(W) = sign(W)|W|^(p-1); at p = 2 it is the identity, so the mirror step
    grad psi(W') = grad psi(W) - eta grad L(W) is W' = W - eta grad L(W), the library's GD.
    Cross-paper consistency: the GD here is the same `theorycheck.optim.GD` on the same
    token-selection model (`TokenSelection`, fixed decoder) that vdt24's claims use, on the
    synthetic instances of this paper.  Measure: `steps` steps of MD(p = 2) and of GD with eta = 1
    side by side from W(0) std 1; the largest relative Frobenius difference of the iterates
    over all steps and instances must be <= tc.tol("conditioned") (the two compute eta exp(M) G
    in a different order: a few unit round-offs per step, accumulated over 200 steps on a
    contracting map).  Precondition: GD moves (||W_K - W_0||_F >= 1e-3
    relative), so the comparison is not vacuous.  Round trip: for p in {1.1, ..., 4} and entries
    of magnitude 10^U, U uniform in [-6, 3], ||inverse(grad psi(W)) - W|| / ||W|| <=
    tc.tol("conditioned") (a power and its inverse: ~1/(p-1) round-offs).  An identity of the
    algorithm (nature "identity"): the control runs MD with p = 3 in place of p = 2 (a run of its
    own: the dynamics whose mirror map is not the identity) and its iterates leave GD's.
    """
    data, W0 = instances(tc.paper_rng(INSTANCES), tc.sizes)
    t = data.to_torch(tc.device, tc.dtype)
    model = TokenSelection(t.X, t.y, t.u)
    p = 3.0 if tc.control == "p3_vs_gd" else 2.0
    start, steps = {"W": tc.tensor(W0)}, tc.sizes["steps"]
    iterates = {"W": lambda it: it.W}
    md = run_trajectory(MirrorDescent(model, p, 1.0), start, steps, iterates, representation="given")
    gd = run_trajectory(GD(model, 1.0), start, steps, iterates, representation="given")
    a, b = torch.as_tensor(md["W"]), torch.as_tensor(gd["W"])                  # (steps + 1, K, d, d)
    worst = float(relative_error(a.flatten(0, 1), b.flatten(0, 1)).max())
    moved = relative_error(b[-1], torch.as_tensor(W0)).min()                 # on the host, as b
    tc.precondition.at_least("GD moves away from W(0)", float(moved), 1e-3)
    tc.record("largest relative difference MD vs GD", worst)
    tc.conclusion.at_most("MD(p) iterates equal GD iterates", worst, tc.tol("conditioned"))

    rng = tc.rng("round trip")
    errors = []
    for pv in CERT_P:
        W = np.sign(rng.standard_normal((8, 10, 10))) * 10.0 ** rng.uniform(-6, 3, (8, 10, 10))
        W = tc.tensor(W)
        errors.append(float(relative_error(inverse_mirror_map(mirror_map(W, pv), pv), W).max()))
    tc.record("round-trip errors per p", dict(zip(CERT_P, errors)))
    tc.conclusion.at_most("round trip inverse(grad psi(W)) = W", max(errors), tc.tol("conditioned"))


#: why "min multiplier" cannot fail on any instance (the multipliers are the solver's in every case)
NONNEGATIVE_MULTIPLIERS = TailBound(0.0, (
    "solve_lp_wsvm's multipliers are either the polish's projected Newton iterate, mu = max(mu + t step, 0) "
    "(exactly >= 0, inactive constraints exactly 0), or CLARABEL's interior-point duals (strictly inside "
    "the nonnegative cone), in both cases divided by a positive norm: min lambda / ||W||_p >= 0 > -1e-6 "
    "whatever the instance"))


def kkt_residuals(X, alpha, p, W, lam):
    r"""The KKT residuals of min ||W||_p s.t. (x_{i,alpha_i} - x_{i,t})^T W x_{i,0} >= 1 at (W, lambda),
    by plain numpy arithmetic of this file (not the solver's certificate): the constraints are
    rebuilt from X in the solver's order (i, then t != alpha_i), S = sum_k lambda_k a_k z_k^T,
    q = p/(p-1).  Returns min margin, min lambda/||W||_p, max |lambda_k (m_k - 1)|/||W||_p,
    stationarity (p >= 2: ||sign(U)|U|^(p-1) - S/||S||_q||_q, U = W/||W||_p; p < 2: the dual form
    ||U - sign(V)|V|^(q-1)||_p, V = S/||S||_q), the duality gap (||W||_p - sum lambda/||S||_q)/||W||_p
    (lambda/||S||_q is feasible for the dual max sum mu s.t. mu >= 0, ||sum mu_k a_k z_k^T||_q <= 1,
    so the gap bounds W's suboptimality), |sum lambda - ||W||_p|/||W||_p (norm form) and the margins'
    round-off floor (`margin_roundoff`)."""
    q = p / (p - 1)
    a, z = [], []
    for i in range(X.shape[0]):
        for t in range(X.shape[1]):
            if t != alpha[i]:
                a.append(X[i, alpha[i]] - X[i, t]), z.append(X[i, 0])
    a, z = np.array(a), np.array(z)
    norm = lambda M, r: float(np.sum(np.abs(M) ** r) ** (1 / r))   # noqa: E731
    Wn = norm(W, p)
    m = np.einsum("kr,rc,kc->k", a, W, z)
    S = np.einsum("k,kr,kc->rc", lam, a, z)
    Sn = norm(S, q)
    U, V = W / Wn, S / Sn
    if p >= 2:
        stationarity = norm(np.sign(U) * np.abs(U) ** (p - 1) - V, q)
    else:
        stationarity = norm(U - np.sign(V) * np.abs(V) ** (q - 1), p)
    return dict(margin=float(m.min()), multiplier=float(lam.min()) / Wn,
                slackness=float(np.max(np.abs(lam * (m - 1)))) / Wn, stationarity=stationarity,
                gap=(Wn - float(lam.sum()) / Sn) / Wn, norm_form=abs(float(lam.sum()) - Wn) / Wn,
                roundoff=margin_roundoff(a, z, lam, S / Sn, Sn, Wn, p))


def margin_roundoff(a, z, lam, V, Sn, Wn, p):
    r"""A bound on the error of the margins m_k = <F_k, W> (F_k = a_k z_k^T) that rounding alone
    causes when W is computed from the multipliers, W = ||W||_p f(V), f = (grad psi)^-1 =
    sign |.|^s, s = 1/(p-1), V = S/||S||_q, S = sum_k lambda_k F_k (the polish computes W this way).
    Every step is bounded, none linearized (u the unit round-off, gamma_n = n u/(1 - n u)):
    * the sum: each S_e is a dot product of m terms with products of two factors, so
      |fl(S_e) - S_e| <= gamma_(m+2) T_e, T_e = sum_k |lambda_k F_{k,e}| (Higham 2002, 3.1, 4.2);
      dV_e = gamma_(m+2) T_e / ||S||_q;
    * f over [V_e - dV_e, V_e + dV_e]: by the mean value theorem |f(V_e + d) - f(V_e)| <= dV_e
      sup |f'| on the interval, f'(v) = s |v|^(s-1), so for s < 1 (p > 2) the sup is at
      |V_e| - dV_e (when the interval excludes 0) and for s >= 1 at |V_e| + dV_e; for s < 1 also,
      at any entry, |f(x) - f(y)| <= 2^(1-s) |x - y|^s (Hoelder; the only bound when the
      interval contains 0), and the least of the valid bounds is taken;
    * the power and the two scalings of W: a relative error of at most 4 u per entry (the
      power's result within one ulp, plus three roundings), at most 5 u |W_e| with the entry's
      own deviation;
    * the margin itself, a dot product of d^2 terms with products of three factors:
      gamma_(d^2+3) sum_e |F_{k,e} W_e|.
    The bound of a margin is sum_e |F_{k,e}| dW_e plus the last term; returned is its largest
    value over k.  Near-zero entries of V make it large for p > 2 (f' unbounded at 0); for
    p <= 2 it is a few hundred round-offs."""
    u = unit_roundoff("float64")
    gamma = lambda n: n * u / (1 - n * u)                       # noqa: E731
    s = 1 / (p - 1)
    F = np.abs(np.einsum("kr,kc->krc", a, z))
    dV = gamma(len(lam) + 2) * np.einsum("k,krc->rc", np.abs(lam), F) / Sn
    x = np.abs(V)
    if s < 1:
        with np.errstate(divide="ignore"):
            mean_value = np.where(x > dV, s * dV * np.maximum(x - dV, 0.0) ** (s - 1), np.inf)
        step = np.fmin(mean_value, 2 ** (1 - s) * dV ** s)
    else:
        step = s * dV * (x + dV) ** (s - 1)
    W = Wn * x ** s
    dW = Wn * step + 5 * u * W
    margins = np.einsum("krc,rc->k", F, dW) + gamma(F[0].size + 3) * np.einsum("krc,rc->k", F, W)
    return float(margins.max())


EXACT_P = 3.0
"""Up to this p the polish's accuracy is decided on every certificate; above it (p = 4 of CERT_P)
at a rate (`POLISH_RATE`)."""
POLISH_RATE = 0.95
"""The rate claimed for "the polish reaches its round-off bound" on the certificates with p > EXACT_P
(calibrated: the claim's record)."""
POLISH_ALPHA = 1e-4
"""Level of the exact binomial test at POLISH_RATE: its false-failure rate when the true rate is at
least POLISH_RATE, by construction."""
POLISHED = ("polished, p <= 3: largest certificate residual <= tc.tol('iterative') + twice the margins' "
            "round-off bound")
NORM_FORM = ("norm-form multipliers, p <= 3: |sum(lambda) - ||W||_p| / ||W||_p <= tc.tol('iterative') + twice "
             "the margins' round-off bound")
POLISHED_RATE = "polished, p = 4: both residuals within the same bound, at a rate over the instances"

POLISHED_HOW = ("from the derivation (the docstring), not from the data: the rule fixed before validation was 0 "
               "failures and the controls failing on every seed.  Calibration (1750 certificates, by the claim's "
               "kkt_residuals on the solver's certificates): p <= 3 largest residual / bound 1e-3 (p = 3: "
               "1.0e-13 against >= 1.2e-10); p = 4: 250 of 250 within, largest residual / bound 0.14. "
               "Validation: 50/50 passed, p <= 3 largest residual / bound 1.3e-4; both controls failed on 50 of "
               "50.  Spent seed 18218 (a check only): its p = 4 certificate 2.36e-9 against tol + 2 R = 3.06e-9 "
               "(0.77 of it; against tol + R it fails)")
POLISH_RATE_HOW = ("rule stated before validation: POLISH_RATE = the one-sided 99.9% Clopper-Pearson lower bound of "
               "the p = 4 rate on the calibration block, rounded down to 0.05: 250 of 250 within (bound 0.973), "
               "so 0.95; with 5 instances the test rejects at <= 1 within (size 3e-5 at 0.95; by construction <= "
               "1e-4 when the rate holds).  Validation: 250 of 250 within (5 of 5 on every seed), largest "
               "residual / bound 0.046.  The calibration table bounds this binomial through its pooled trials")


@claim(
    f"{PAPER}.svm.certificate",
    source="l_p-AttSVM (main text; authors' code); duality derived",
    statement="The computed l_p-AttSVM solution is certified: feasible, multipliers >= 0, "
              "complementary slackness, stationarity through the dual norm q = p/(p-1), and "
              "strong duality sum(lambda) = ||W_mm||_p.",
    provenance="derived",
    controls={
        "perturbed": Control("reference", breaks=["duality gap", "stationarity"],
                             description="W_mm plus Gaussian noise of 1% of mean|W_mm|, rescaled "
                                         "to be feasible: a feasible non-optimal W",
                             constants={"noise_percent": 1.0}),
        "wrong_p": Control("reference", breaks=["stationarity"],
                           description="the l_4.5 (or l_1.35 for p >= 3) solution, a program the "
                                       "claim does not solve, certified as the l_p one",
                           constants={"p_switch": 3.0}),
    },
    calibration=["1e-6: the W-SVM's certificate tolerance, fixed before the data; the polish's "
                 "tc.tol('iterative') replaces the literal 1e-10 (the end of an iterative solve).",
                 "unseen sweep 955297912-955297931: the polished decision against tc.tol('iterative') alone "
                 "failed on one seed (1.30e-10); over 14000-14049 (1750 certificates) the largest residual "
                 "was 1 - min margin at p = 4 (2.1e-10; for p <= 2 all below 1e-14): the round-off of the "
                 "multiplier sum amplified by (grad psi)^-1 near 0.  A first-order floor of it was added "
                 "(validated on 14100-14149, 50/50).",
                 "the first-order floor failed on 1 of 50 seeds of 18200-18249 (seed 18218, a p = 4 "
                 "certificate: residual 2.36e-9 against 1.41e-9 plus tc.tol('iterative')), and the unseen "
                 "sweep 168935948-168935967 failed the norm-form decision on 168935957 under the old "
                 "tolerance.  Redesigned (2026-11-28 e): the floor made a bound of the rounding of one "
                 "evaluation (mean value theorem / Hoelder in place of the linearization, the power, the "
                 "scalings and the margin's own dot product included; `margin_roundoff`), doubled for the "
                 "two evaluations the polish's last Newton step carries (the test's docstring); decided on "
                 "every certificate for p <= 3, and at p = 4, where the doubling rests on the last step "
                 "being a full Newton step, as a binomial at POLISH_RATE.  Seed 18218 (spent) passes.",
                 Calibrated(decision=POLISHED, threshold="tc.tol('iterative') + 2 x the margins' round-off bound",
                            calibration_seeds="20000-20049", validation_seeds="20100-20149",
                            how=POLISHED_HOW),
                 Calibrated(decision=POLISHED_RATE,
                            threshold=f"binomial at POLISH_RATE = {POLISH_RATE} (level {POLISH_ALPHA})",
                            calibration_seeds="20000-20049", validation_seeds="20100-20149",
                            how=POLISH_RATE_HOW)],
    sizes={"quick": dict(SIZES["quick"]), "full": dict(SIZES["full"])},
)
def test_certificate(tc):
    r"""Dual of min ||W||_p s.t. <A_k, W> >= 1 (A_k = (x_{i,alpha_i} - x_{i,t}) x_{i,0}^T):
    max sum(lambda) s.t. lambda >= 0, ||S||_q <= 1, S = sum lambda_k A_k.  KKT: feasibility,
    lambda >= 0, lambda_k (m_k - 1) = 0, grad psi(W/||W||_p) = S/||S||_q.  The solution and its
    multipliers come from `theorycheck.solvers.solve_lp_wsvm` (cvxpy + CLARABEL, polished by
    projected Newton), which raises when its own certificate fails; so the certificate is
    recomputed here by code independent of the solver (`kkt_residuals`: the constraints rebuilt
    from X, the dual point's objective by a second route, the l_q dual norm of the multiplier
    combination).  Pass, for every instance and p in {1.1, 1.25, 1.5, 1.75, 2, 3, 4} with
    alpha = opt: min margin >= 1 - 1e-6; min lambda/||W||_p >= -1e-6; slackness <= 1e-6;
    stationarity (primal form for p >= 2, dual form for p < 2, each well conditioned on its side)
    <= 1e-6; |duality gap| <= 1e-6 (1e-6 is the W-SVM's certificate tolerance).
    The polish's accuracy: per certificate the largest of these residuals, and the norm form's
    |sum(lambda) - ||W||_p| / ||W||_p (the certificate is invariant to a rescaling of lambda, so the
    solver's normalization is checked on its own; the sum of the multipliers is the duality gap's
    other side, rounded alike), <= tc.tol("iterative") + 2 R, R the bound of the rounding of one
    evaluation of the margins from the multipliers (`margin_roundoff`: the polish computes W from
    the multiplier combination, whose rounding (grad psi)^-1 amplifies at entries near 0 when
    p > 2; for p <= 2 it is a few hundred round-offs).  Why twice: the polish's last Newton step s
    solves J s = -g~(mu), g~ the computed gradient <F_k, W~(mu)> - 1 = g(mu) + e(mu) with
    |e(mu)| <= R, so the exact residual after it is g(mu + s) = g(mu) + J s + O(|s|^2) =
    -e(mu) + O(|s|^2), and the residual computed here adds the rounding of the final
    evaluation: |g~(mu + s)| <= 2 R + O(|s|^2) (tc.tol("iterative") allows the second-order
    term and the linear solve).  This needs the last step to be a full Newton step: decided on
    every certificate for p <= 3 (EXACT_P); at p = 4, where |.|^(1/3) makes the dual function so
    ill-conditioned near V_e = 0 that the last step may be cut, at a rate: P[both residuals
    within the bound] >= POLISH_RATE, exact binomial over the instances at level 1e-4 (the
    decision's false-failure rate when the rate holds).  The divergence claims compare
    directions at D ~ 1e-5 to 1e-8; CLARABEL alone stops 1e-10 to 1e-6 away, so this catches a
    polish that fails silently.  Precondition:
    d^2 >= n(T-1) (generic feasibility).  Controls: a feasible non-optimal W (gap and stationarity
    fail) and the solution of another p (stationarity fails).
    """
    s = tc.sizes
    tc.precondition.at_least("d^2 >= n(T-1) (feasible for generic data)", s["d"] ** 2, s["n"] * (s["T"] - 1))
    data, _ = instances(tc.paper_rng(INSTANCES), s)
    certs = certificates(tc, data)
    res = [kkt_residuals(*c) for c in certs]
    get = lambda key: np.array([r[key] for r in res])                    # noqa: E731
    tc.conclusion.at_least("min margin", get("margin").min(), 1.0, margin=1e-6)
    tc.conclusion.at_least("min multiplier", get("multiplier").min(), 0.0, margin=1e-6,
                           tail_bound=NONNEGATIVE_MULTIPLIERS)
    tc.conclusion.at_most("complementary slackness", get("slackness").max(), 1e-6)
    tc.conclusion.at_most("stationarity", get("stationarity").max(), 1e-6)
    tc.conclusion.at_most("duality gap", np.abs(get("gap")).max(), 1e-6)
    worst = np.max([np.abs(1 - get("margin")), np.maximum(-get("multiplier"), 0), get("slackness"),
                    get("stationarity"), np.abs(get("gap"))], axis=0)
    tc.record("largest residual and the margins' round-off bound per certificate", np.stack([worst, get("roundoff")]))
    bound = tc.tol("iterative") + 2 * get("roundoff")
    exact = np.array([c[2] for c in certs]) <= EXACT_P
    tc.conclusion.at_most(POLISHED, worst[exact], bound[exact])
    tc.conclusion.at_most(NORM_FORM, get("norm_form")[exact], bound[exact])
    within = (worst <= bound) & (get("norm_form") <= bound)
    tc.conclusion.binomial(POLISHED_RATE, within[~exact], p=POLISH_RATE, alpha=POLISH_ALPHA,
                           low_power="the alternative is a polish that fails silently (no certificate "
                                     "within its bound), which the test rejects; the quick tier's 5 "
                                     "instances cannot resolve a rate 0.15 below POLISH_RATE at level 1e-4")


@claim(
    f"{PAPER}.svm.p2_is_frobenius",
    source="l_p-AttSVM at p = 2 (main text: the W-SVM of Tarzanagh et al. 2308.16898)",
    statement="The l_2-AttSVM is the Frobenius-norm W-SVM: the conic l_p route at p = 2 and the "
              "W-SVM's Gram dual give the same matrix.",
    provenance="stated",
    controls={
        "l3": Control("reference", breaks=["l_2 conic solution equals the W-SVM Gram dual"],
                      description="the l_3 solution compared with the W-SVM"),
    },
    nature="identity",
    sizes={"quick": dict(SIZES["quick"]), "full": dict(SIZES["full"])},
)
def test_p2_is_frobenius(tc):
    r"""||W||_2 (entrywise) = ||W||_F, so min ||W||_2 and min (1/2)||W||_F^2 under the same
    constraints have the same minimizer.  Two independent routes: the conic program
    min ||vec W||_p (cvxpy pnorm, p = 2, polished, `solve_lp_wsvm`) and the W-SVM of
    `theorycheck.solvers.solve_wsvm` (QP in the Gram kernel of the constraints, W by
    stationarity).  Pass: relative Frobenius difference <= 1e-5 on every instance (the W-SVM
    is certified to 1e-6).  Cross-paper consistency: this is the W-SVM the vdt24 claims use.  An
    identity of the programs (nature "identity"): the control swaps in the l_3 solution and only
    shows that the comparison resolves a change of the norm.
    """
    data, _ = instances(tc.paper_rng(INSTANCES), tc.sizes)
    diffs = []
    for k in range(data.K):
        X, opt = data.X[k], data.opt[k]
        lp_W = solve_lp_wsvm(X, opt, 3.0 if tc.control == "l3" else 2.0, name="synthetic", trial=k).W
        F = solve_wsvm(X, opt, method="dual", name="synthetic", trial=k).W
        diffs.append(np.linalg.norm(lp_W - F) / np.linalg.norm(F))
    tc.record("relative differences", diffs)
    tc.conclusion.at_most("l_2 conic solution equals the W-SVM Gram dual", max(diffs), 1e-5)
