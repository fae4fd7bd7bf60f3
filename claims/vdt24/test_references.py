r"""vdt24: the SVM references every theorem of the paper is about.

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738, Section 2 (the W-SVM of Tarzanagh et al.).
"""
import math

import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.solvers import (CERTIFICATE_TOL, certify, constraint_values, solve_wsvm,
                                 stationarity_multipliers, wsvm_constraint_factors,
                                 wsvm_orthonormal_closed_form)
from theorycheck.solvers.margin import SOLVER_OPTIONS

from .problems import E1_SIZES, PAPER, TRIALS, candidate, kkt_residual, problem
from .setup import orthonormal

SOLVER_AGREEMENT = 2 * math.sqrt(SOLVER_OPTIONS["tol_gap_rel"])
"""The most two certified solves of one W-SVM may differ by, relative to ||W_mm||_F: each stops
at a relative duality gap <= tol_gap_rel, and each is within sqrt(tol_gap_rel) of W_mm (see
`test_wsvm_reference`)."""
PRIMAL_KKT = "worst KKT residual with the primal solve's multipliers"
PRIMAL_DUAL = "relative Frobenius difference primal vs dual"


@claim(
    f"{PAPER}.def.wsvm_reference",
    source="(W-SVM), Section 2",
    statement="The W-SVM reference is computed correctly: primal and Gram-dual solutions agree, "
              "satisfy every margin constraint with a valid KKT certificate, and match the closed "
              "form on orthonormal tokens.",
    provenance="derived",
    controls={
        "perturbed": Control(
            "reference", breaks=[
                "worst KKT residual with the multipliers recovered from W (NNLS)",
                "ORTHO: relative error vs closed form",
            ],
            description="a random 1% relative perturbation of W_mm: constraints/KKT and the "
                        "closed form must reject it (the primal solve's certificate, recorded "
                        "at d <= 64 only, is not named: the full tier errored on it)"),
        "wrong_opt": Control(
            "reference", breaks=[
                "min over trials of the smallest margin constraint",
                "worst KKT residual with the multipliers recovered from W (NNLS)",
            ],
            description="the W-SVM solved for the wrong optimal set opt+1 mod T (another "
                        "program's solution, pointing away from the truth) must be rejected"),
    },
    calibration=[Calibrated(
        decision=PRIMAL_KKT, threshold=SOLVER_AGREEMENT + CERTIFICATE_TOL,
        calibration_seeds="16000-16049", validation_seeds="16100-16149",
        how="derived from the solver's stopping rule (docstring), replacing the library's certificate "
            "tolerance 1e-6, which a solver accuracy never controlled: failed by 13% on 1 of 20 "
            "unseen seeds (1.13e-6). Calibration block: heavy right tail (normal model rejected), "
            "median 2.0e-9, worst 6.2e-7 at seed 16028, where a support constraint has multiplier "
            "9e-6 ||W||^2 (near-degenerate): the primal and the dual W are 1.2e-7 and 7.3e-7 from "
            "the exact active-set solution; so 2 sqrt(tol_gap_rel) + 1e-6, not a quantile. Calibration "
            "block (theorycheck calibrate): no failure, least margin 0.971; validation block: no "
            "failure, least margin 0.997 (residual 7e-8); the margins' heavy tail rejects the normal "
            "model, so the table's bound is the count's (0.058; 0.03 over both blocks); the "
            "controls failed as declared on all 100 seeds"),
        Calibrated(
        decision=PRIMAL_DUAL, threshold=SOLVER_AGREEMENT,
        calibration_seeds="16000-16049", validation_seeds="16100-16149",
        how="the same derivation (the two solves' distance is what the residual above measures); "
            "it was sqrt(tol_gap_rel), one solve's accuracy, and the difference of two is bounded by twice it. "
            "Least margin 0.969 (calibration block), 0.997 (validation block), no failure")],
    sizes={"quick": dict(E1_SIZES["quick"]), "full": dict(E1_SIZES["full"])},
)
def test_wsvm_reference(tc):
    r"""W_mm = argmin ||W||_F s.t. (x_{i,o} - x_{i,t})^T W x_{i,1} >= 1 for all i, t != o.

    The candidate is the Gram-dual solution (cvxpy/Clarabel over the m = n(T-1) multipliers
    with kernel K_{(i,t),(j,s)} = <x_{i,o} - x_{i,t}, x_{j,o} - x_{j,s}> <x_{i,1}, x_{j,1}>,
    W = sum_k lambda_k (x_{i,o} - x_{i,t}) x_{i,1}^T).  It is judged by KKT certificates whose
    multipliers do *not* come from the dual solve, always against the true optimal set:

    * multipliers recovered from W alone by non-negative least squares on stationarity,
      argmin_{lambda >= 0} ||W - sum_k lambda_k F_k|| (`stationarity_multipliers`);
    * at d <= 64 also the multipliers of the primal solve (cvxpy over the d^2 entries of W:
      the constraint duals), and the relative Frobenius difference of the primal W and the
      candidate.

    The NNLS certificate holds when min constraint >= 1 - 1e-6, multipliers >= 0, and
    complementary slackness, stationarity W = sum lambda_k F_k and the duality gap (relative to
    ||W||^2) are <= 1e-6, the library's certificate tolerance.  The primal solve's multipliers
    certify the candidate only up to the distance between the two solutions, which is the
    solvers' accuracy, bounded from CLARABEL's stopping rule (relative duality gap <= tol_gap_rel
    = 1e-10): at a feasible W, f(W) - f(W_mm) = <W_mm, W - W_mm> + 1/2 ||W - W_mm||^2 with
    <W_mm, W - W_mm> = sum_k lambda*_k (<F_k, W> - 1) >= 0, so 1/2 ||W - W_mm||^2 <= gap
    <= tol_gap_rel ||W_mm||^2 / 2; the dual objective g(lambda) = 1^T lambda - 1/2 ||W(lambda)||^2
    obeys g(lambda*) - g(lambda) >= 1/2 ||W(lambda) - W_mm||^2 for lambda >= 0 in the same way.
    Each solve is within sqrt(tol_gap_rel) ||W_mm|| of W_mm, the two differ by at most
    SOLVER_AGREEMENT = 2 sqrt(tol_gap_rel) = 2e-5 relative (the bound on the Frobenius
    difference), and the stationarity entry of the mixed certificate, the one that distance
    enters, by at most SOLVER_AGREEMENT plus the primal's own certified stationarity (the
    bound on its worst KKT residual).  On orthonormal tokens (ORTHO; n = 6,
    T = 4) the closed form W_mm = sum_i (x_{i,o} - (1/T) sum_t x_{i,t}) x_{i,1}^T,
    ||W_mm||_F^2 = n(T-1)/T, holds to 1e-6.  The primal has d^2 variables, so in the full tier
    (d = 768) only the NNLS certificate runs.
    """
    sizes = tc.sizes
    prob = tc.use(problem, family="example1", sizes=sizes)
    rng = tc.rng("perturbation")
    with_primal = sizes["d"] <= 64
    worst = {"min_constraint": np.inf, "nnls": 0.0, "primal": 0.0, "primal_dual": 0.0}
    for k in range(TRIALS):
        inst = prob.data.instance(k)
        W = candidate(tc, inst.X, inst.opt, rng)
        A, B, _ = wsvm_constraint_factors(inst.X, inst.opt)
        nnls = certify(A, B, W, stationarity_multipliers(A, B, W), "candidate, NNLS multipliers")
        worst["min_constraint"] = min(worst["min_constraint"], nnls.min_constraint)
        worst["nnls"] = max(worst["nnls"], kkt_residual(nnls))
        if with_primal:
            primal = solve_wsvm(inst.X, inst.opt, method="primal")
            worst["primal"] = max(worst["primal"], kkt_residual(
                certify(A, B, W, primal.multipliers, "candidate, primal multipliers")))
            worst["primal_dual"] = max(worst["primal_dual"],
                                       np.linalg.norm(primal.W - W) / np.linalg.norm(primal.W))
    tc.conclusion.at_least("min over trials of the smallest margin constraint", worst["min_constraint"],
                           1.0, margin=1e-6)
    tc.conclusion.at_most("worst KKT residual with the multipliers recovered from W (NNLS)", worst["nnls"], 1e-6)
    if with_primal:
        tc.conclusion.at_most(PRIMAL_KKT, worst["primal"], SOLVER_AGREEMENT + CERTIFICATE_TOL)
        tc.conclusion.at_most(PRIMAL_DUAL, worst["primal_dual"], SOLVER_AGREEMENT)

    ortho = orthonormal(tc.paper_rng("orthonormal"), TRIALS, n=6, T=4, d=32)
    n, T = ortho.n, ortho.T
    errors, norms2 = [], []
    for k in range(TRIALS):
        inst = ortho.instance(k)
        W = candidate(tc, inst.X, inst.opt, rng)
        closed = wsvm_orthonormal_closed_form(inst.X, inst.opt)
        errors.append(np.linalg.norm(W - closed) / np.linalg.norm(closed))
        norms2.append(np.sum(W**2))
        worst["min_constraint"] = min(
            worst["min_constraint"],
            constraint_values(*wsvm_constraint_factors(inst.X, inst.opt)[:2], W).min())
    tc.record("orthonormal ||W_mm||_F^2", norms2)
    tc.record("orthonormal n(T-1)/T", n * (T - 1) / T)
    tc.conclusion.close("ORTHO: ||W_mm||_F^2 = n(T-1)/T", norms2, n * (T - 1) / T, atol=1e-6)
    tc.conclusion.at_most("ORTHO: relative error vs closed form", max(errors), 1e-6)
    tc.record("worst", worst)


