r"""gsb26: the exponential-moment condition behind A3 (Lemma 7).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Lemma 7 (with Assumption A3).
"""
import numpy as np
import scipy.linalg
import scipy.stats

from theorycheck import Control, claim
from theorycheck.solvers import manifold_point
from theorycheck.tails import TailBound

from .setup import (
    PAPER,
    decide_recipe,
    gaussian_precondition,
    gaussian_quadratic_mgf,
    gaussian_rows,
    haar_rotations,
    kurtosis_z,
    record_assumptions,
    top_eigenvalue_scaled,
    uniform_rows,
    well_conditioned,
    well_conditioned_kappa_tail,
)

U = np.finfo(float).eps
#: the well-conditioned recipe's kappa(Sigma) is at most KAPPA_CAP unless ||A||_F^2 > 3 (KAPPA_CAP - 1)
#: (`well_conditioned_kappa_tail`)
KAPPA_CAP = 25.0
KAPPA_TAIL = well_conditioned_kappa_tail(KAPPA_CAP)
#: ||A||_F of each scaled Gaussian A is at most FROBENIUS_CAP unless chi-square(9) > FROBENIUS_CAP^2
FROBENIUS_CAP = 30.0
FROBENIUS_TAIL = float(scipy.stats.chi2.sf(FROBENIUS_CAP ** 2, 9))
#: why ||Sigma^{1/2} K_R Sigma^{1/2}|| <= sqrt(kappa sigma_1) fails on no draw but a vanishingly rare one
MANIFOLD_NORM_ROUNDOFF = TailBound(KAPPA_TAIL, (
    "||Sigma^{1/2} Sigma^{-1} R^T D^{1/2} V_W^T Sigma^{1/2}|| <= lambda_min^{-1/2} sigma_1^{1/2} lambda_max^{1/2} "
    "for every orthogonal R (submultiplicativity), so only round-off can break the decision.  Sigma is scaled to "
    "lambda_max = 1, ||K_R|| <= kappa sigma_1^{1/2}; the solve (kappa d u relative), sqrtm (Schur, SPD: a few "
    "d u), two products, the SVD norm and the bound's eigvalsh (d u kappa relative) move the two sides by "
    "at most about 100 u kappa^{3/2} (kappa sigma_1 <= 0.45), below the allowance tc.tol('conditioned') = "
    "2^14 u (u = 2.2e-16 here) while kappa <= KAPPA_CAP = 25 (100 u 125 < 2^14 u); kappa <= 1 + ||A||_F^2/3, so kappa > 25 needs chi-square(9) > 72"))


def top_eigenvalue_tail(matrices):
    """The stated bound of the precondition lambda_max(Sigma^{1/2} sym(A) Sigma^{1/2}) < 1/4 over
    ``matrices`` scaled Gaussian A (`top_eigenvalue_scaled` puts it at 0.2)."""
    eta = 450 * U * KAPPA_CAP * FROBENIUS_CAP
    per_matrix = 3 * 2 * eta / np.sqrt(2 * np.pi / 3)
    return TailBound(min(1.0, matrices * (per_matrix + FROBENIUS_TAIL) + KAPPA_TAIL), (
        f"{matrices} Gaussian A, union bound.  top_eigenvalue_scaled sets the top eigenvalue of M = "
        "Sigma^{1/2} sym(cA) Sigma^{1/2} to 0.2 with c = 0.2/lead (lead the computed top, or bottom, "
        "eigenvalue of M at c = 1, with the same computed root); the rescaled matrix and both eigvalsh "
        "calls carry an absolute error eps <= 10 d u ||root||_F^2 ||A||_F <= 90 u ||A||_F (tr Sigma <= 3), so "
        "the computed top is 0.2 (1 + O(eps/|lead|)) and exceeds 1/4 only if |lead| < 5 eps, which needs "
        "sigma_min(sym A) < 5 eps kappa(Sigma) <= eta = 450 u KAPPA_CAP FROBENIUS_CAP = 7.5e-11 (u = 2.2e-16, kappa <= 25 "
        "and ||A||_F <= 30 outside chi-square(9) tails of 3e-12 and 6e-188).  The diagonal of sym A is "
        "i.i.d. N(0, 1), independent of its off-diagonal: sym A = B + g I with g ~ N(0, 1/3) (the diagonal's "
        "mean) independent of B, so the eigenvalues are mu_i(B) + g and P[some |mu_i + g| < eta] <= 3 * 2 "
        "eta / sqrt(2 pi/3) = 4.15 eta per matrix"))


@claim(
    f"{PAPER}.lem7.integrability",
    source="Lemma 7 (with A3)",
    statement="E exp(x^T A x) = det(I - 2 Sigma^{1/2} sym(A) Sigma^{1/2})^{-1/2} is finite iff "
              "lambda_max(Sigma^{1/2} sym(A) Sigma^{1/2}) < 1/2; on the manifold "
              "||Sigma^{1/2} K* Sigma^{1/2}|| <= sqrt(kappa(Sigma) sigma_1(W*)), so A3 keeps the "
              "softmax scores' exponential moments finite near the manifold.",
    provenance="derived",
    controls={
        "without_symmetrization": Control(
            "reference", breaks=["Monte Carlo within 4 standard errors of the closed form"],
            description="the determinant formula with A in place of sym(A) for a non-symmetric A"),
        "uniform_inputs": Control(
            "hypothesis", breaks=["Monte Carlo within 4 standard errors of the closed form"],
            description="x drawn with the same covariance but uniform coordinates (a new draw: "
                        "L u, u_i uniform on [-sqrt 3, sqrt 3]): the determinant formula is the "
                        "Gaussian moment generating function of x^T A x, and the Monte Carlo mean "
                        "moves off it"),
    },
    calibration=["top_eigenvalue_scaled: the Gaussian A were first scaled by top/lambda_max, which for a "
                 "sym(A) with no positive eigenvalue reverses the spectrum: the hypotheses were not met on "
                 "seeds 9, 18 of the 20-seed sweep; A is now flipped to -A there (no threshold involved).",
                 "Stated bounds (issue 31, 2026-11-29; no threshold or allowance changed): the scaled lambda_max "
                 "precondition (top_eigenvalue_tail, 9e-10) and the manifold norm bound (MANIFOLD_NORM_ROUNDOFF, "
                 "6e-12), both forward-error analyses of inequalities that hold at every draw.  Calibrated on "
                 "70000-70049: both at their stated bounds; the claim stays at 0.058 through the kurtosis "
                 "precondition (a Monte Carlo statistic: counted) and 3e-4 through the 4 s.e. test."],
    sizes={"quick": {"draws": 2000000, "matrices": 3, "rotations": 200},
           "full": {"draws": 40000000, "matrices": 10, "rotations": 5000}},
)
def test_integrability(tc):
    r"""(a) For 3 non-symmetric Gaussian A scaled (`top_eigenvalue_scaled`) so that lambda_max(Sigma^{1/2} sym(A)
    Sigma^{1/2}) = 0.2 (< 1/4, so exp(x^T A x) has finite variance and the Monte Carlo standard
    error is meaningful), the mean of exp(x^T A x) over 2 10^6 draws is within 4 standard
    errors of the closed form (4 s.e.: false alarm < 2e-4 over the 3 matrices; the closed form
    integrates the Gaussian density against exp(x^T sym(A) x), x^T A x = x^T sym(A) x).
    (b) For 200 Haar R, ||Sigma^{1/2} K_R Sigma^{1/2}|| <= sqrt(kappa(Sigma) sigma_1(W*)) (with
    K_R = Sigma^{-1} R^T D^{1/2} V_W^T the bound is lambda_min^{-1/2} sigma_1^{1/2}
    lambda_max^{1/2}); a margin of tc.tol("conditioned") for the round-off of a solve and a norm.  Under A3 (kappa sigma_1 <= 1/2,
    recorded) this gives mu = ||.||^2 <= 1/2 on the manifold.
    Both (b) and the scaling's lambda_max = 0.2 < 1/4 hold at every draw up to round-off: their
    stated bounds (`MANIFOLD_NORM_ROUNDOFF`, `top_eigenvalue_tail`) bound the draws where round-off
    could reach the allowance.
    """
    decide_recipe(tc, well_conditioned)
    problem = well_conditioned(tc.rng("well_conditioned"))
    record_assumptions(tc, problem)
    rng = tc.rng("integrability")
    root = scipy.linalg.sqrtm(problem.Sigma).real
    if tc.control == "uniform_inputs":      # a new draw, of non-Gaussian inputs
        x = uniform_rows(tc.rng("integrability", "uniform_inputs"), problem.Sigma, (tc.sizes["draws"],))
    else:
        x = gaussian_rows(rng, problem.Sigma, (tc.sizes["draws"],))
    gaussian_precondition(tc, "Gaussian inputs: |excess kurtosis| <= 5 standard errors", kurtosis_z(x, problem.Sigma))   # the closed form's hypothesis
    z_scores, tops = [], []
    for _ in range(tc.sizes["matrices"]):
        A = top_eigenvalue_scaled(rng.standard_normal((problem.d, problem.d)), root, 0.2)
        tops.append(np.linalg.eigvalsh(root @ ((A + A.T) / 2) @ root)[-1])
        values = np.exp(np.einsum("ni,ij,nj->n", x, A, x))
        closed = gaussian_quadratic_mgf(A, problem.Sigma, tc.control != "without_symmetrization")
        z_scores.append(abs(values.mean() - closed) / (values.std() / np.sqrt(len(values))))
    tc.precondition.at_most("lambda_max(Sigma^{1/2} sym(A) Sigma^{1/2}) < 1/4", tops, 0.25,
                            tail_bound=None if tc.control else top_eigenvalue_tail(len(tops)))
    tc.conclusion.at_most("Monte Carlo within 4 standard errors of the closed form", z_scores, 4.0)
    bound = np.sqrt(problem.a3_product())
    norms = [np.linalg.norm(root @ manifold_point(problem.W, problem.Sigma, R)[1] @ root, 2)
             for R in haar_rotations(tc.rng("rotations"), problem.d, tc.sizes["rotations"])]
    tc.record("max ||Sigma^{1/2} K* Sigma^{1/2}|| / bound", max(norms) / bound)
    tc.conclusion.at_most("||Sigma^{1/2} K* Sigma^{1/2}|| <= sqrt(kappa sigma_1) on the manifold",
                          norms, bound, margin=tc.tol("conditioned"),
                          tail_bound=None if tc.control else MANIFOLD_NORM_ROUNDOFF)
