r"""gsb26: the exponential-moment condition behind A3 (Lemma 7).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Lemma 7 (with Assumption A3).
"""
import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.stats

from theorycheck import Calibrated, Control, claim
from theorycheck.solvers import manifold_point
from theorycheck.tails import TailBound, bennett_tail
from theorycheck.tolerance import unit_roundoff

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

#: the unit round-off u of float64 (1.1e-16) and eps = 2 u, numpy's machine epsilon
U = unit_roundoff("float64")
EPS = 2 * U
#: the top eigenvalue lambda_max(Sigma^{1/2} sym(A) Sigma^{1/2}) the Gaussian A are scaled to: below
#: 1/4, so exp(x^T A x) has a finite variance, and below 1/8, so it has finite moments of every order
#: below 1/(2 TOP) = 5 (light enough upper tails for the Monte Carlo test's bound `exp_quadratic_critical`)
TOP = 0.1
#: the level of the Monte Carlo test: the z-scores (mean - closed form)/exact standard error of the
#: matrices, rejected two-sided at this level over the family (Bonferroni) beyond the critical value
#: that Bennett's inequality and a Chernoff tail give (`exp_quadratic_critical`)
MC_LEVEL = 1e-4
#: points of the grid of s in Chernoff's bound (`exp_quadratic_exceedance`)
CHERNOFF_GRID = 400
MC_DECISION = "Monte Carlo within the level-1e-4 critical value of the closed form (|z| per matrix)"
#: the well-conditioned recipe's kappa(Sigma) is at most KAPPA_CAP unless ||A||_F^2 > 3 (KAPPA_CAP - 1)
#: (`well_conditioned_kappa_tail`)
KAPPA_CAP = 25.0
KAPPA_TAIL = well_conditioned_kappa_tail(KAPPA_CAP)
#: ||A||_F of each scaled Gaussian A is at most FROBENIUS_CAP unless chi-square(9) > FROBENIUS_CAP^2
FROBENIUS_CAP = 30.0
FROBENIUS_TAIL = float(scipy.stats.chi2.sf(FROBENIUS_CAP ** 2, 9))
#: the relative round-off of the computed norm and bound of decision (b), in units of u, as a function
#: of kappa(Sigma) (the reason of `MANIFOLD_NORM_ROUNDOFF`)
NORM_ROUNDOFF = lambda kappa: 50 * kappa + 18 * np.sqrt(kappa) + 50
#: why ||Sigma^{1/2} K_R Sigma^{1/2}|| <= sqrt(kappa sigma_1) fails on no draw but a vanishingly rare one
MANIFOLD_NORM_ROUNDOFF = TailBound(KAPPA_TAIL, (
    "||Sigma^{1/2} Sigma^{-1} B Sigma^{1/2}|| <= lambda_min^{-1/2} ||B|| lambda_max^{1/2} = sqrt(kappa sigma_1) with "
    "B = R^T D^{1/2} V_W^T, ||B|| = sqrt(sigma_1), for every orthogonal R (submultiplicativity), so only round-off "
    "can break the decision.  Relative errors, u = 1.1e-16 the unit round-off, Sigma scaled to lambda_max = 1: "
    "B (SVD of W*, the orthogonal R, the scaling) <= 30 u; the solve, backward stable, (Sigma + E) K = B with "
    "||E|| <= 30 u ||Sigma|| (d = 3, partial pivoting), enters as (I + Sigma^{-1/2} E Sigma^{-1/2})^{-1}, "
    "<= 30 kappa u; sqrtm (Schur, SPD: ||root^2 - Sigma|| <= 10 u, so ||root error|| <= 5 u sqrt(kappa) through "
    "the Sylvester operator) moves the norm by <= 10 kappa u through its two factors; the two products <= "
    "2 d^2 u sqrt(kappa) = 18 sqrt(kappa) u; the SVD norm <= 10 u; the bound's eigvalsh (lambda_min to 10 u "
    "absolute) and SVD <= 10 kappa u + 10 u.  In all (50 kappa + 18 sqrt(kappa) + 50) u relative "
    f"(`NORM_ROUNDOFF`), {NORM_ROUNDOFF(KAPPA_CAP):.0f} u at kappa = KAPPA_CAP = {KAPPA_CAP:g}, times sqrt(kappa sigma_1) "
    f"<= sqrt(0.45) = 0.67: at most {NORM_ROUNDOFF(KAPPA_CAP) * np.sqrt(0.45):.0f} u absolute, "
    f"{2 ** 14 / (NORM_ROUNDOFF(KAPPA_CAP) * np.sqrt(0.45)):.0f} times below the allowance tc.tol('conditioned') = "
    "2^14 u = 1.8e-12; kappa <= 1 + "
    "||A||_F^2/3, so kappa > 25 needs chi-square(9) > 72"))


def top_eigenvalue_tail(matrices):
    """The stated bound of the precondition lambda_max(Sigma^{1/2} sym(A) Sigma^{1/2}) < 1/4 over
    ``matrices`` scaled Gaussian A (`top_eigenvalue_scaled` puts it at `TOP`).  The error analysis
    counts in eps = 2 u (numpy's machine epsilon), a unit twice the unit round-off u: its bound is
    conservative by that factor."""
    eta = 450 * EPS * KAPPA_CAP * FROBENIUS_CAP
    per_matrix = 3 * 2 * eta / np.sqrt(2 * np.pi / 3)
    return TailBound(min(1.0, matrices * (per_matrix + FROBENIUS_TAIL) + KAPPA_TAIL), (
        f"{matrices} Gaussian A, union bound.  top_eigenvalue_scaled sets the top eigenvalue of M = "
        f"Sigma^{{1/2}} sym(cA) Sigma^{{1/2}} to {TOP:g} with c = {TOP:g}/lead (lead the computed top, or bottom, "
        f"eigenvalue of M at c = 1, with the same computed root); the rescaled matrix and both eigvalsh "
        "calls carry an absolute error delta <= 10 d eps ||root||_F^2 ||A||_F <= 90 eps ||A||_F (tr Sigma <= 3; eps = "
        f"2 u = 2.2e-16, u the unit round-off), so the computed top is {TOP:g} (1 + O(delta/|lead|)) and exceeds 1/4 "
        "only if |lead| < 5 delta, which needs "
        "sigma_min(sym A) < 5 delta kappa(Sigma) <= eta = 450 eps KAPPA_CAP FROBENIUS_CAP = 7.5e-11 (kappa <= 25 "
        "and ||A||_F <= 30 outside chi-square(9) tails of 3e-12 and 6e-188).  The diagonal of sym A is "
        "i.i.d. N(0, 1), independent of its off-diagonal: sym A = B + g I with g ~ N(0, 1/3) (the diagonal's "
        "mean) independent of B, so the eigenvalues are mu_i(B) + g and P[some |mu_i + g| < eta] <= 3 * 2 "
        "eta / sqrt(2 pi/3) = 4.15 eta per matrix"))


def exp_quadratic_exceedance(eigenvalues, y):
    """Upper bounds on P[exp(x^T A x) > y], x ~ N(0, Sigma), for an array of ``y``, from the
    eigenvalues lambda_i of Sigma^{1/2} sym(A) Sigma^{1/2} (x^T A x = sum_i lambda_i g_i^2, g standard
    normal): Chernoff's, min over s in (0, 1/(2 lambda_max)) of E exp(s x^T A x) y^(-s) = prod_i
    (1 - 2 s lambda_i)^(-1/2) y^(-s), on a grid of s (every s gives a bound)."""
    eigenvalues = np.asarray(eigenvalues, dtype=float)
    s = np.linspace(0.0, 0.99 / (2 * eigenvalues.max()), CHERNOFF_GRID)[1:]
    log_mgf = -0.5 * np.log1p(-2 * s[:, None] * eigenvalues).sum(1)
    return np.exp(np.min(log_mgf[None, :] - s[None, :] * np.log(np.asarray(y, dtype=float))[:, None], axis=1))


def exp_quadratic_critical(eigenvalues, mean, variance, draws, level):
    """The critical value, in exact standard errors sqrt(variance / draws), of |mean of ``draws``
    i.i.d. Y - E Y|, Y = exp(x^T A x) > 0 of the given ``mean`` and ``variance``, exceeded with
    probability at most ``level`` (``level`` / 2 on each side): below, Bennett's inequality for
    E Y - Y <= E Y; above, Y truncated at y (Bennett with bound y, variance and mean at most Y's)
    plus ``draws`` P[Y > y] (`exp_quadratic_exceedance`), the least over a grid of y."""
    se = np.sqrt(variance / draws)
    truncations = np.exp(np.linspace(0.0, 12.0, 241))
    exceed = draws * exp_quadratic_exceedance(eigenvalues, truncations)

    def lower(k):
        return bennett_tail(draws, variance, mean, k * se) - level / 2

    def upper(k):
        return np.min(exceed + bennett_tail(draws, variance, truncations, k * se)) - level / 2

    return max(scipy.optimize.brentq(side, 0.5, 100.0) for side in (lower, upper))


def monte_carlo_bound(matrices, draws):
    """The stated bound of the Monte Carlo test over ``matrices`` matrices of ``draws`` draws each."""
    return TailBound(MC_LEVEL, (
        f"{matrices} matrices A, each with lambda_max(M) = {TOP:g}, M = Sigma^{{1/2}} sym(A) Sigma^{{1/2}}: Y = "
        f"exp(x^T A x) > 0 over {draws} i.i.d. x ~ N(0, Sigma) has the exact mean and variance E Y^j = "
        "det(I - 2 j M)^{-1/2} (j = 1, 2) and the tail P[Y > y] <= min_s det(I - 2 s M)^{-1/2} y^{-s} "
        "(Chernoff, s < 1/(2 lambda_max)).  Lower tail of the mean: Bennett's inequality (E Y - Y <= E Y); "
        "upper: the mean of min(Y, y) (variance and mean at most Y's) by Bennett with bound y, plus "
        f"{draws} P[Y > y] (theorycheck.tails.bennett_tail; exp_quadratic_critical).  Level {MC_LEVEL:g} / "
        f"{matrices} on each matrix, half on each side; union bound.  No central limit theorem (the note "
        "'Skewed means' in setup.py); the determinants' round-off (relative 1e-14) is far below the "
        "critical deviation"))


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
            "reference", breaks=[MC_DECISION],
            description="the determinant formula with A in place of sym(A) for a non-symmetric A"),
        "uniform_inputs": Control(
            "hypothesis", breaks=[MC_DECISION],
            description="x drawn with the same covariance but uniform coordinates (a new draw: "
                        "L u, u_i uniform on [-sqrt 3, sqrt 3]): the determinant formula is the "
                        "Gaussian moment generating function of x^T A x, and the Monte Carlo mean "
                        "moves off it",
            constants={"half_width_squared": 3.0}),   # unit variance: (2 sqrt 3)^2 / 12 = 1
    },
    calibration=["top_eigenvalue_scaled: the Gaussian A were first scaled by top/lambda_max, which for a "
                 "sym(A) with no positive eigenvalue reverses the spectrum: the hypotheses were not met on "
                 "seeds 9, 18 of the 20-seed sweep; A is now flipped to -A there (no threshold involved).",
                 "Stated bounds (issue 31, 2026-11-29; no threshold or allowance changed): the scaled lambda_max "
                 "precondition (top_eigenvalue_tail, 9e-10) and the manifold norm bound (MANIFOLD_NORM_ROUNDOFF, "
                 "6e-12), both forward-error analyses of inequalities that hold at every draw.  Calibrated on "
                 "70000-70049: both at their stated bounds; the claim stays at 0.058 through the kurtosis "
                 "precondition (a Monte Carlo statistic: counted) and 3e-4 through the 4 s.e. test.",
                 "Issue 31, 2026-11-29 (helper gsb26b; no threshold chosen on data): MANIFOLD_NORM_ROUNDOFF "
                 "re-derived in the unit round-off u (its reason had called eps = 2.2e-16 u; counted in eps its "
                 "'100 u kappa^{3/2}' exceeded the allowance 2^14 u): (50 kappa + 18 sqrt(kappa) + 50) u relative, "
                 "932 u absolute at kappa = 25, 18 times below 2^14 u (probability unchanged, 6e-12); "
                 "top_eigenvalue_tail's analysis is in eps = 2u (conservative by 2).  The A are scaled to "
                 "lambda_max = 0.1 (was 0.2, where exp(x^T A x) has no third moment): the z-scores' N(0, 1) null "
                 "then holds in the tails (not at the 1e-5 quantile: the note 'Skewed means' in setup.py, found the same day by the "
                 "unseen sweep; the levels set the critical values, no longer the stated bounds).  The Monte Carlo test and the kurtosis precondition are NullTest "
                 "families at levels 1e-4 (critical 4.15 over 3 matrices, was 4.0) and 1e-5 (4.42, was 5).  "
                 "Calibration block 79000-79049: claim 0.058 -> 1.1e-4 "
                 "(both levels taken: KS null_p 0.23 and 0.79); uniform_inputs 2.1e-6 (least margin 5.9), "
                 "without_symmetrization 0.058 (its kurtosis precondition, no stated bound on a control: counted).",
                 Calibrated(decision=MC_DECISION, threshold="level 1e-4 (critical values from Bennett's inequality "
                                                           "and a Chernoff tail); 5 matrices at the quick tier",
                            calibration_seeds="90000-90049", validation_seeds="90100-90149",
                            how="issue 31, 2026-11-30 (helper h10): the levels are stated again, as proofs that need "
                                "no central limit theorem: the Monte Carlo z over the exact standard error against "
                                "exp_quadratic_critical (Bennett below, truncation + Bennett + Chernoff above), the "
                                "inputs' fourth moment against Markov on the exact moments of z^4 "
                                "(setup.gaussian_precondition).  Calibration block (3 matrices): claim 0.0099 (300 "
                                "seeds 83300-83599, counted) -> 1.1e-4; uniform_inputs 0.0018, but "
                                "without_symmetrization 0.058 (its lambda_max precondition counted: no stated "
                                "bound on a control) with its fails-as-declared part at 0.019: the upper critical "
                                "value (7-8 where the normal gave 4.15) misses a draw whose A is nearly symmetric "
                                "unless another matrix catches it.  Chosen there: 5 matrices (the full tier keeps "
                                "10), paid for by x^T A x as one product A @ x^T; the lambda_max bound stated in "
                                "every case (the scaling is the controls' too) and the Gaussian-rows bound where "
                                "the rows are drawn Gaussian.  Validation block: claim 1.1e-4 (Monte Carlo margins "
                                "0.81 +- 0.08, least 0.61), without_symmetrization 6.1e-4, uniform_inputs 1.2e-3, "
                                "both failing as declared on 50 of 50")],
    sizes={"quick": {"draws": 2000000, "matrices": 5, "rotations": 200},
           "full": {"draws": 40000000, "matrices": 10, "rotations": 5000}},
)
def test_integrability(tc):
    r"""(a) For 5 non-symmetric Gaussian A (quick tier; 10 in the full tier) scaled (`top_eigenvalue_scaled`) so that lambda_max(Sigma^{1/2} sym(A)
    Sigma^{1/2}) = TOP = 0.1 (< 1/8, so exp(x^T A x) has finite moments up to order 5), the mean of
    exp(x^T A x) over 2 10^6 draws equals the closed form (which integrates the Gaussian density
    against exp(x^T sym(A) x), x^T A x = x^T sym(A) x): the z-scores (mean - closed form) / exact
    standard error (the variance from the closed forms at A and 2A) at most the critical value that
    Bennett's inequality and a Chernoff tail of exp(x^T A x) give at level MC_LEVEL = 1e-4 over the
    matrices (`exp_quadratic_critical`: about 4.7 below and 7-8 above, where the normal would give
    4.3; stated as the decision's bound, `monte_carlo_bound`, a proof that needs no central limit
    theorem).  The inputs' Gaussianity (the closed form's hypothesis) is decided on their
    fourth-moment z-score (`gaussian_precondition`, level 1e-5, a bound from the exact moments of z^4).
    (b) For 200 Haar R, ||Sigma^{1/2} K_R Sigma^{1/2}|| <= sqrt(kappa(Sigma) sigma_1(W*)) (with
    K_R = Sigma^{-1} R^T D^{1/2} V_W^T the bound is lambda_min^{-1/2} sigma_1^{1/2}
    lambda_max^{1/2}); a margin of tc.tol("conditioned") for the round-off of a solve and a norm.  Under A3 (kappa sigma_1 <= 1/2,
    recorded) this gives mu = ||.||^2 <= 1/2 on the manifold.
    Both (b) and the scaling's lambda_max = TOP < 1/4 hold at every draw up to round-off: their
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
    gaussian_precondition(tc, "Gaussian inputs: |excess kurtosis z| within the level-1e-5 critical value",
                          *kurtosis_z(x, problem.Sigma),   # the closed form's hypothesis
                          drawn_gaussian=tc.control != "uniform_inputs")
    xt = np.ascontiguousarray(x.T)      # (d, draws): x^T A x of every draw as one product A @ xt
    del x
    matrices, draws = tc.sizes["matrices"], tc.sizes["draws"]
    z_scores, criticals, tops = [], [], []
    for _ in range(matrices):
        A = top_eigenvalue_scaled(rng.standard_normal((problem.d, problem.d)), root, TOP)
        values = np.exp(np.einsum("in,in->n", A @ xt, xt))
        eigenvalues = np.linalg.eigvalsh(root @ ((A + A.T) / 2) @ root)
        mean = gaussian_quadratic_mgf(A, problem.Sigma)
        variance = gaussian_quadratic_mgf(2 * A, problem.Sigma) - mean ** 2
        closed = gaussian_quadratic_mgf(A, problem.Sigma, tc.control != "without_symmetrization")
        z_scores.append((values.mean() - closed) / np.sqrt(variance / draws))
        criticals.append(exp_quadratic_critical(eigenvalues, mean, variance, draws, MC_LEVEL / matrices))
        tops.append(eigenvalues[-1])
    # the scaling is the same in every case (the controls change the inputs or the closed form)
    tc.precondition.at_most("lambda_max(Sigma^{1/2} sym(A) Sigma^{1/2}) < 1/4", tops, 0.25,
                            tail_bound=top_eigenvalue_tail(len(tops)))
    tc.record("(Monte Carlo mean - closed form) / exact standard error (matrix)", z_scores)
    tc.record("Monte Carlo critical values (exact standard errors)", criticals)
    tc.conclusion.at_most(MC_DECISION, np.abs(z_scores), criticals,
                          tail_bound=None if tc.control else monte_carlo_bound(matrices, draws))
    bound = np.sqrt(problem.a3_product())
    norms = [np.linalg.norm(root @ manifold_point(problem.W, problem.Sigma, R)[1] @ root, 2)
             for R in haar_rotations(tc.rng("rotations"), problem.d, tc.sizes["rotations"])]
    tc.record("max ||Sigma^{1/2} K* Sigma^{1/2}|| / bound", max(norms) / bound)
    tc.conclusion.at_most("||Sigma^{1/2} K* Sigma^{1/2}|| <= sqrt(kappa sigma_1) on the manifold",
                          norms, bound, margin=tc.tol("conditioned"),
                          tail_bound=None if tc.control else MANIFOLD_NORM_ROUNDOFF)
