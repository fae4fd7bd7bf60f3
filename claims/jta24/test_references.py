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

from .setup import CERT_P, PAPER, SIZES, certificates, instances


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
    data, W0 = instances(tc.runtime, tc.sizes)
    t = data.to_torch(tc.device, tc.dtype)
    model = TokenSelection(t.X, t.y, t.u)
    p = 3.0 if tc.control == "p3_vs_gd" else 2.0
    start, steps = {"W": tc.tensor(W0)}, tc.sizes["steps"]
    iterates = {"W": lambda it: it.W}
    md = run_trajectory(MirrorDescent(model, p, 1.0), start, steps, iterates, representation="given")
    gd = run_trajectory(GD(model, 1.0), start, steps, iterates, representation="given")
    a, b = torch.as_tensor(md["W"]), torch.as_tensor(gd["W"])                  # (steps + 1, K, d, d)
    worst = float(relative_error(a.flatten(0, 1), b.flatten(0, 1)).max())
    moved = relative_error(b[-1], tc.tensor(W0)).min()
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
    r"""Largest error of the margins m_k = <F_k, W> (F_k = a_k z_k^T) that the rounding of the
    multiplier combination alone causes when W is computed from it, W = ||W||_p (grad psi)^-1(V),
    V = S/||S||_q (the polish computes W this way): the sum S_e = sum_k lambda_k F_{k,e} of m terms
    is off by at most gamma_m T_e, gamma_m = m u/(1 - m u), T_e = sum_k |lambda_k F_{k,e}| (the
    forward error of a sum, Higham 2002, section 4.2); (grad psi)^-1 = sign |.|^(1/(p-1)) moves an
    entry by at most min(|V_e|^((2-p)/(p-1)) dV_e/(p-1), dV_e^(1/(p-1))) (first order, and its
    Hoelder bound where V_e is within dV_e of 0, which for p > 2 is far larger than round-off);
    summed with |F_{k,e}|.  Near-zero entries of V make this large for p > 2; for p <= 2 it is
    below round-off."""
    u = np.finfo(float).eps / 2
    gamma = len(lam) * u / (1 - len(lam) * u)
    F = np.abs(np.einsum("kr,kc->krc", a, z))
    dV = gamma * np.einsum("k,krc->rc", np.abs(lam), F) / Sn
    with np.errstate(divide="ignore", invalid="ignore"):
        first_order = np.abs(V) ** ((2 - p) / (p - 1)) * dV / (p - 1)
    dW = Wn * np.fmin(first_order, dV ** (1 / (p - 1)))
    return float(np.einsum("krc,rc->k", F, dW).max())


POLISHED = "polished: largest certificate residual <= tc.tol('iterative') + the margins' round-off floor"
NORM_FORM = ("norm-form multipliers: |sum(lambda) - ||W||_p| / ||W||_p <= tc.tol('iterative') + the "
             "margins' round-off floor")
POLISHED_HOW = ("from the mathematics (the forward error of the multiplier sum, Higham 2002, through "
                "(grad psi)^-1), not from the data; the rule fixed before validation was 0 failures, the "
                "controls failing on every seed.  Calibration: the largest residual over 1750 certificates "
                "2.1e-10 against its allowance 1.7e-8; the decision's least margin 0.99 (14 seeds in the "
                "table's run).  Validation: 50/50 passed, least margin 0.99 (461 sd); perturbed and wrong_p "
                "failed on 50/50")


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
                 "failed on one seed (1.30e-10); over calibration seeds 14000-14049 (1750 certificates) the "
                 "largest residual was 1 - min margin at p = 4, 2.1e-10, every residual above 1e-12 at p = 4 "
                 "(for p <= 2 all below 1e-14): the round-off of the multiplier sum amplified by "
                 "(grad psi)^-1 near 0, which the floor bounds (1.7e-8 there).",
                 Calibrated(decision=POLISHED, threshold="tc.tol('iterative') + the margins' round-off floor",
                            calibration_seeds="14000-14049", validation_seeds="14100-14149", how=POLISHED_HOW),
                 "OPEN (lead, 2026-11-28 d): on a third block, 18200-18249 (run to validate the norm-form "
                 "decision, which passed 50 of 50, least margin 0.83), the polished decision failed on 1 of "
                 "50: seed 18218, a p = 4 certificate with residual 2.36e-9 against its floor 1.41e-9 plus "
                 "tc.tol('iterative'); the first-order floor is not an upper bound of the polish's error, "
                 "and the table's row is that block's (1 failure).  The unseen sweep 168935948-168935967 "
                 "also failed the norm-form decision on 168935957 under the old tolerance (1.9e-10 on a p = 4 "
                 "certificate whose round-off floor was 5.6e-10; judged per certificate since, above)."],
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
    <= 1e-6; |duality gap| <= 1e-6 (1e-6 is the W-SVM's certificate tolerance); and the polish's
    accuracy, per certificate the largest of these residuals <= tc.tol("iterative") plus the
    margins' round-off floor (`margin_roundoff`: the polish computes W from the multiplier
    combination, whose rounding (grad psi)^-1 amplifies at entries near 0 when p > 2, so no
    solver resolves the margins below it; for p <= 2 it is below round-off).  The divergence
    claims compare directions at D ~ 1e-5 to 1e-8; CLARABEL alone stops 1e-10 to 1e-6 away, so
    this catches a polish that fails silently.  The certificate is invariant to a rescaling of lambda, so the
    solver's normalization is checked on its own: in the norm form the multipliers sum to
    ||W_mm||_p (strong duality with ||S||_q = 1), relative, per certificate within the polish's
    accuracy tc.tol("iterative") plus the same round-off floor (the sum of the multipliers is
    the duality gap's other side, rounded alike).  Precondition:
    d^2 >= n(T-1) (generic feasibility).  Controls: a feasible non-optimal W (gap and stationarity
    fail) and the solution of another p (stationarity fails).
    """
    data, _ = instances(tc.runtime, tc.sizes)
    tc.precondition.at_least("d^2 >= n(T-1) (feasible for generic data)", data.d ** 2,
                             data.n * (data.T - 1))
    res = [kkt_residuals(*c) for c in certificates(tc, data)]
    get = lambda key: np.array([r[key] for r in res])                    # noqa: E731
    tc.conclusion.at_least("min margin", get("margin").min(), 1.0, margin=1e-6)
    tc.conclusion.at_least("min multiplier", get("multiplier").min(), 0.0, margin=1e-6)
    tc.conclusion.at_most("complementary slackness", get("slackness").max(), 1e-6)
    tc.conclusion.at_most("stationarity", get("stationarity").max(), 1e-6)
    tc.conclusion.at_most("duality gap", np.abs(get("gap")).max(), 1e-6)
    worst = np.max([np.abs(1 - get("margin")), np.maximum(-get("multiplier"), 0), get("slackness"),
                    get("stationarity"), np.abs(get("gap"))], axis=0)
    tc.record("largest residual and the margins' round-off floor per certificate", np.stack([worst, get("roundoff")]))
    tc.conclusion.at_most(POLISHED, worst, tc.tol("iterative") + get("roundoff"))
    tc.conclusion.at_most(NORM_FORM, get("norm_form"), tc.tol("iterative") + get("roundoff"))


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
    data, _ = instances(tc.runtime, tc.sizes)
    diffs = []
    for k in range(data.K):
        X, opt = data.X[k], data.opt[k]
        lp_W = solve_lp_wsvm(X, opt, 3.0 if tc.control == "l3" else 2.0, name="synthetic", trial=k).W
        F = solve_wsvm(X, opt, method="dual", name="synthetic", trial=k).W
        diffs.append(np.linalg.norm(lp_W - F) / np.linalg.norm(F))
    tc.record("relative differences", diffs)
    tc.conclusion.at_most("l_2 conic solution equals the W-SVM Gram dual", max(diffs), 1e-5)
