r"""gsb26: the manifold of global minima, the extended-covariance projection onto it (Lemma 1).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 1 (part 2) and Lemma 1.
"""
import numpy as np
import torch

from theorycheck import Control, claim
from theorycheck.models.attention_regression import (
    balance_regularizer,
    balance_regularizer_gradient,
    population_gradient,
    population_loss,
)
from theorycheck.solvers import (
    brute_force_projection,
    dense_hessian,
    manifold_point,
    project_to_manifold,
    sigma_bar_distance,
)
from theorycheck.tails import TailBound, gaussian_condition_tail

from .manifold import candidate, derivative_free_projection, projection_points, regularized_minimizers
from .setup import (PAPER, decide_recipe, haar_rotations, ill_conditioned, record_assumptions, regularized_model,
                    well_conditioned, well_conditioned_kappa_tail)

LAMBDAS = (0.0, 0.25, 1.0)
KERNEL_FLOOR = 1e-9
"""|eigenvalue| / lambda_max below which a Hessian eigenvalue counts as the kernel's: far above
the eigensolver's round-off (about d^2 u) and far below the spectral gap of the instances."""
OPTIMUM_ROUNDOFF = TailBound(0.0, (
    "L(theta_R) = tr(E Sigma E^T) + k sigma^2 with E = V Sigma K - W*. K comes from a backward-stable "
    "solve with Sigma, so ||E|| <= C d u ||V|| ||Sigma|| ||K|| <= C d u sigma_1(W*) kappa(Sigma) "
    "(lambda_max(Sigma) = 1, ||K|| <= kappa sqrt(sigma_1), ||V|| = sqrt(sigma_1)), and the well-conditioned "
    "recipe caps sigma_1 kappa at A3_TARGET = 0.45: tr(E Sigma E^T) <= ||E||_F^2 is about 1e-29, far "
    "below half an ulp of k sigma^2 = 0.04 (3.5e-18), so the sum rounds to k sigma^2 and both sides "
    "compute k sigma^2 by the same two IEEE operations: |L - k sigma^2| is 0 on every draw, against "
    "tc.tol('exact') = 1.4e-14"))

#: kappa(Sigma) and kappa(W*) below which `KERNEL_GAP`'s lower bound on the Hessian's spectral gap,
#: 1 / (10 kappa(Sigma)^3 kappa(W*)), is at least twice KERNEL_FLOOR
GAP_KAPPA_SIGMA = 20.0
GAP_KAPPA_W = 1.0 / (2 * KERNEL_FLOOR * 10 * GAP_KAPPA_SIGMA ** 3)
KERNEL_GAP = TailBound(well_conditioned_kappa_tail(GAP_KAPPA_SIGMA) + gaussian_condition_tail(4, 3, GAP_KAPPA_W), (
    "At theta_R (V Sigma K = W*, V^T V = P P^T with P = Sigma K) the Hessian of L_reg = L + lam R is "
    "2 (A^T A + lam B^T B), A(Y, Q) = (Y P + V Sigma Q) Sigma^{1/2}, B(Y, Q) = sym2(Y^T V) - sym2(Sigma Q P^T) "
    "(sym2(M) = M + M^T).  lambda_max(Sigma) = 1, lambda_min = 1/kappa (kappa = kappa(Sigma)), "
    "sigma_i(V)^2 = sigma_i(P)^2 = s_i = sigma_i(W*).  Largest eigenvalue: ||A||^2 <= ||M -> M Sigma^{1/2} P^T P "
    "Sigma^{1/2} + V Sigma^2 V^T M Sigma|| <= 2 s_1 and ||B||^2 <= 8 s_1, so lambda_max <= 2 (2 + 8 lam) s_1.  "
    "lam = 0: A A^T is that Sylvester operator, >= sigma_d(P Sigma^{1/2})^2 >= s_d / kappa, so the least nonzero "
    "eigenvalue is >= 2 s_d / kappa and the ratio >= 1 / (2 kappa kappa(W*)).  lam > 0: in G = Sigma Q "
    "(z = (Y, G), ||x|| = ||(Y, Q)|| <= kappa ||z|| since ||Q|| <= kappa ||G||) with N = [V; P^T], dN = [Y; G^T], Delta = dN N^T + N dN^T and M1 = V^T Y - P G^T, "
    "the balance N~^T N = V^T V - P P^T = 0 (N~ = [V; -P^T]) gives the identity 4 ||Y P + V G||^2 + "
    "||B||^2 = ||Delta||^2 + 2 ||M1||^2; writing dN = N X + N_perp E, ||Delta||^2 >= 4 sigma_d(N)^2 ||N sym(X)||^2 + "
    "2 sigma_d(N)^2 ||E||^2 >= 2 sigma_d(N)^2 dist(dN, {N Omega})^2 = 4 s_d dist^2, the kernel being {N Omega, "
    "Omega skew} (dimension d(d-1)/2).  So x^T H x / 2 >= ||Y P + V G||^2 / kappa + lam ||B||^2 >= min(1/kappa, 4 lam) s_d dist_z^2, which "
    "is >= min(1/kappa, 4 lam) s_d ||x||^2 / kappa^2 on the z-orthogonal complement of the kernel (codimension "
    "d(d-1)/2), and Courant-Fischer gives "
    "lambda_{N+1}(H) >= 2 min(1/kappa, 4 lam) s_d / kappa^2: the ratio is >= min(1/kappa, 4 lam) / ((2 + 8 lam) "
    "kappa^2 kappa(W*)) >= 1 / (10 kappa^3 kappa(W*)) for lam in {1/4, 1} (and for lam = 0).  That is >= 2 "
    "KERNEL_FLOOR unless kappa > GAP_KAPPA_SIGMA = 20 or kappa(W*) > GAP_KAPPA_W = 6250; the computed Hessian and "
    "eigvalsh err by a few hundred u lambda_max (Weyl), far below KERNEL_FLOOR lambda_max.  kappa(W*) = kappa(B), "
    "B 4 x 3 Gaussian (Chen-Dongarra tail), and kappa(Sigma) <= 1 + ||A||_F^2 / d (chi-square tail, "
    "well_conditioned_kappa_tail): their sum bounds the probability"))

#: the Gram bounds' allowance beyond 2 tc.tol("iterative") (relative, float64; eps = 2u): it covers
#: the round-off of forming and diagonalizing the Gram matrix, at most about 1000 u kappa(W*) <=
#: 1000 eps kappa(W*) of the lower bound (`GRAM_ROUNDOFF`), for kappa(W*) <= GRAM_KAPPA
GRAM_EXTRA = 2.0 ** 27 * np.finfo(float).eps
GRAM_KAPPA = GRAM_EXTRA / (1000 * np.finfo(float).eps)
GRAM_ROUNDOFF = TailBound(gaussian_condition_tail(4, 3, GRAM_KAPPA), (
    "Weyl's inequalities give lambda_min(V^T V + K^T Sigma K) >= sigma_d(V)^2 + sigma_d(Sigma K)^2 / "
    "lambda_max(Sigma) and lambda_max <= sigma_1(V)^2 + sigma_1(Sigma K)^2 / lambda_min(Sigma) for ANY (V, K) "
    "(K^T Sigma K = (Sigma K)^T Sigma^{-1} (Sigma K)); where the two singular-value decisions pass (their "
    "failures are their own bounds in the claim's union), every sigma_i(V), sigma_i(Sigma K) is within "
    "e <= tau = tc.tol('iterative') (plus the SVDs' d u sqrt(kappa(W*))) of sigma_i(W*)^{1/2}, so the exact "
    "ratios are >= (1 - e)^2 >= 1 - 2 tau and <= (1 + e)^2 <= 1 + 2 tau + tau^2.  The computed ratio adds the "
    "round-off of K^T Sigma K (||K|| <= 10 sigma_1^{1/2} on the ill-conditioned recipe, eig Sigma in [0.1, 1]: "
    "about 2 d u 100 sigma_1), of V^T V and of eigvalsh (d u ||G||, ||G|| <= 11 sigma_1) against the lower "
    "end 2 sigma_d: at most about 1000 u kappa(W*) relative, below 1000 eps kappa(W*) (eps = 2u) and so inside the extra allowance 2^27 eps unless "
    "kappa(W*) > 1.3e5; W* = c B/||B||, B 4 x 3 Gaussian, so that has probability at most the Chen-Dongarra "
    "tail (gaussian_condition_tail(4, 3, 1.3e5))"))

#: why the refined projection never loses to the brute-force sample it starts from
BRUTE_FORCE_ROUNDOFF = TailBound(1e-40, (
    "derivative_free_projection starts at the brute-force sample's rotation R_b, and each Nelder-Mead "
    "round starts from a simplex containing x = 0, whose evaluated change f(R E) - f(R) is exactly 0, and "
    "returns its best vertex: every round's evaluated change is <= 0, by construction, at every draw.  "
    "So d(R) - d(R_b) (both by manifold_point and sigma_bar_distance) exceeds 0 only through round-off: "
    "(i) the evaluated changes err by about 10 u (||D|| ||A|| + ||G||) ||F|| per round (||A|| = "
    "||Sigma^{-1}|| = 10, ||D|| = 0.2, ||G|| <= 0.45 (||V|| + ||K||) <= 5, ||F|| <= 1: below 2e-14 over the "
    "three rounds), so d(R)^2 <= d(R_b)^2 + 2e-14 and d(R) - d(R_b) <= 1e-14 / d; (ii) the exp series' "
    "loss of orthogonality (a few u per round) and the computed distances (norms of differences of points "
    "of norm <= 10: about 1e-13 absolute) add below 1e-12.  Both stay below tc.tol('iterative') = 2.3e-10 "
    "unless d < 1e-4, a point theta_R0 + 0.05 Z within 1e-4 of the 3-dimensional manifold in R^21: Gaussian "
    "density <= (2 pi 0.0025)^{-21/2} = 1e19 times the tube's volume (vol M <= 2e5, times the 18-ball's "
    "0.082 r^18 = 8e-74) is below 2e-49 per point, far below 1e-40 for the 10 points; points of norm > 10 "
    "need ||0.05 Z||^2 > 5, a chi-square(21) tail beyond 2000"))


@claim(
    f"{PAPER}.thm1.manifold_global_min",
    source="Theorem 1 (part 2)",
    statement="Every theta_R = (U D^{1/2} R, Sigma^{-1} R^T D^{1/2} V_W^T), R in O(d), is a global "
              "minimizer of the regularized population loss: V Sigma K = W*, zero regularizer, "
              "loss k sigma^2, zero gradient; the Hessian is PSD with a kernel of dimension "
              "d(d-1)/2 (the tangent space) for lambda > 0 and d^2 for lambda = 0.",
    provenance="derived",
    controls={
        "unbalanced_minimizer": Control(
            "reference", breaks=["regularizer vanishes", "gradient of L_reg vanishes"],
            description="(V* G, Sigma^{-1} G^{-1} Sigma K*), G = I + 0.1 S: a minimizer of L "
                        "alone, off the manifold (unbalanced)",
            constants={"spread": 0.1}),
        "missing_inverse_covariance": Control(
            "reference", breaks=["gradient of L_reg vanishes", "V Sigma K = W*"],
            description="the wrong manifold K_R = R^T D^{1/2} V_W^T (Sigma^{-1} missing)"),
    },
    sizes={"quick": {"rotations": 3}, "full": {"rotations": 20}},
    calibration=["no threshold is fitted (round-off tolerances, KERNEL_FLOOR, OPTIMUM_ROUNDOFF, KERNEL_GAP); the scales "
                 "were: the N-th smallest |eigenvalue|, the regularizer, the gradient and the fit were first "
                 "declared on the log scale, whose margins failed Shapiro-Wilk on 59000-59049 (the log of "
                 "round-off is not normal); they are on the linear scale, the (N+1)-th eigenvalue (a gap "
                 "spanning decades) on the log scale",
                 "Issue 31, 2026-11-30 (helper gsb26A; no threshold chosen): the (N+1)-th eigenvalue, counted "
                 "before (Cantelli 0.0044 over 73000-73299: its log skewed, the small-ball tail of kappa(W*)), "
                 "states KERNEL_GAP, derived by hand and checked on 60 instances with kappa(Sigma) up to 300 and "
                 "kappa(W*) up to 1000 (least measured ratio over the bound 1.01 at lambda = 0, 2.1 at 1/4, 1.3 "
                 "at 1).  Rows over 112000-112099 (the claim's bound is then its other decisions')."],
)
def test_manifold_global_min(tc):
    r"""At theta_R (R Haar, the first with det +1, the second with det -1) for lambda in
    {0, 1/4, 1}: ||grad L_reg||_F <= tc.tol("accumulated") (closed-form gradients, products of
    a few O(1) matrices), |L - k sigma^2| <= tc.tol("exact"), R <= 1e-24 (squares of
    round-off-level imbalances), ||V Sigma K - W*|| <= tc.tol("accumulated").  Hessian of L_reg
    from torch.func (float64): PSD (smallest eigenvalue >= -tc.tol("conditioned") lambda_max,
    an eigenproblem) and the number
    of eigenvalues with |.| < `KERNEL_FLOOR` lambda_max equals N = d(d-1)/2 for lambda > 0 (the
    dimension of O(d)) and d^2 for lambda = 0 (the GL(d) orbit of minimizers of L alone), decided
    as its two halves, each with a margin: the N-th smallest |eigenvalue| / lambda_max at most the
    floor (the kernel has at least N dimensions) and the (N+1)-th at least the floor (at most N).
    The (N+1)-th is a spectral gap far above the floor, a ratio spanning decades (``scale="log"``),
    at least 1 / (10 kappa(Sigma)^3 kappa(W*)) at every lambda here (`KERNEL_GAP`, its stated
    bound: the tails of the two condition numbers);
    the N-th, like the vanishing regularizer, gradient and fit, is round-off far below its
    tolerance (a margin near 1 with a small spread: the linear scale; the log of round-off is
    not normal).  |L - k sigma^2| is exact on every draw of the
    recipe (`OPTIMUM_ROUNDOFF`, its stated bound).  Hypotheses A1, A2 (A3 is not used).
    """
    decide_recipe(tc, well_conditioned, a3=False)
    problem = well_conditioned(tc.rng("well_conditioned"))
    record_assumptions(tc, problem)
    rng = tc.rng("rotations")
    d = problem.d
    S, W = tc.tensor(problem.Sigma), tc.tensor(problem.W)
    grads, losses, regs, fits, kernel_tops, rest_bottoms, lowest = [], [], [], [], [], [], []
    for R in haar_rotations(rng, d, tc.sizes["rotations"]):
        V, K = candidate(tc, problem, R, rng)
        Vt, Kt = tc.tensor(V), tc.tensor(K)
        fits.append(np.linalg.norm(V @ problem.Sigma @ K - problem.W))
        losses.append(abs(float(population_loss(Vt, Kt, S, W, problem.noise)) - problem.optimum))
        regs.append(float(balance_regularizer(Vt, Kt, S)))
        for lam in LAMBDAS:
            gV, gK = population_gradient(Vt, Kt, S, W)
            rV, rK = balance_regularizer_gradient(Vt, Kt, S)
            grads.append(float(torch.sqrt(((gV + lam * rV) ** 2).sum() + ((gK + lam * rK) ** 2).sum())))
            ev = np.linalg.eigvalsh(dense_hessian(regularized_model(problem, lam, tc.tensor),
                                                  {"V": tc.tensor(V)[None], "K": tc.tensor(K)[None]}).cpu().numpy())
            kernel = d * (d - 1) // 2 if lam > 0 else d * d
            magnitudes = np.sort(np.abs(ev)) / ev[-1]
            kernel_tops.append(magnitudes[kernel - 1])
            rest_bottoms.append(magnitudes[kernel])
            lowest.append(ev[0] / ev[-1])
    tc.conclusion.at_most("V Sigma K = W*", fits, tc.tol("accumulated"))
    tc.conclusion.at_most("|L - k sigma^2| at theta_R", losses, tc.tol("exact"),
                          tail_bound=None if tc.control else OPTIMUM_ROUNDOFF)
    tc.conclusion.at_most("regularizer vanishes", regs, 1e-24)
    tc.conclusion.at_most("gradient of L_reg vanishes", grads, tc.tol("accumulated"))
    tc.conclusion.at_least("Hessian PSD (lambda_min / lambda_max)", lowest, -tc.tol("conditioned"))
    tc.conclusion.at_most("Hessian kernel of at least the tangent dimension (N-th smallest |eigenvalue|)",
                          kernel_tops, KERNEL_FLOOR)
    tc.conclusion.at_least("Hessian kernel of at most the tangent dimension ((N+1)-th smallest |eigenvalue|)",
                           rest_bottoms, KERNEL_FLOOR, scale="log", tail_bound=None if tc.control else KERNEL_GAP)


@claim(
    f"{PAPER}.lem1.symmetry",
    source="Lemma 1 (part 1)",
    statement="At the extended-covariance projection theta* = P_M(theta), the matrix "
              "S = V*^T (V - V*) + Sigma K* (K - K*)^T is symmetric (first-order condition of "
              "the weighted orthogonal Procrustes problem).",
    provenance="derived",
    controls={
        "random_rotation": Control(
            "reference", breaks=["relative asymmetry of S at the projection",
                                 "brute force never beats the projection"],
            description="theta_R for a Haar-random R in place of the projection"),
        "euclidean_projection": Control(
            "reference", breaks=["relative asymmetry of S at the projection"],
            description="the Euclidean projection (minimizing ||V - V_R||^2 + ||K - K_R||^2 by "
                        "the same derivative-free search) in place of the extended-covariance one"),
    },
    calibration=[
        "The projection is found by a derivative-free search (brute force, then Nelder-Mead in "
        "exponential coordinates) since the review (2026-11-26): the former reference was the "
        "majorize-minimize solver, whose stopping quantity is this asymmetry.  The tolerance is the "
        "framework's 'iterative' kind, not tuned; run on seeds 1-10 and 0: max asymmetry at most 1.5e-11, "
        "the library solver within 1.7e-11 of the same rotation; both controls failed as declared.",
        "Stated bound (issue 31, 2026-11-29; no tolerance changed): 'brute force never beats the projection' "
        "holds by the search's construction (it starts at the best sample and keeps its best vertex), so only "
        "round-off can break it (BRUTE_FORCE_ROUNDOFF, 1e-40).  Calibrated on 70000-70049: claim 2.4e-8, the "
        "library-projection agreement on its log-normal tail (1.7e-8; on 51000-51049 that model was rejected "
        "and Cantelli gave 5.2e-3), controls 2.1e-4 and 3.8e-9.",
    ],
    sizes={"quick": {"points": 10, "draws": 20000, "random_starts": 2},
           "full": {"points": 50, "draws": 40000, "random_starts": 8}},
)
def test_symmetry(tc):
    r"""Points theta = theta_{R0} + 0.05 Z on the ill-conditioned instance (eig Sigma =
    geomspace(0.1, 1, 3), so the projection has no closed form).  The projection is found
    without the first-order condition: the best of ``draws`` Haar rotations (both components
    of O(d)), refined by Nelder-Mead on f(R) = ||theta - theta_R||^2_{Sigma_bar} + const in
    exponential coordinates R = R_b exp(X), X skew, re-centred at shrinking simplex scales
    (`derivative_free_projection`: it evaluates f as a difference from the centre, so the
    search resolves R to round-off; its stopping rule is the simplex size, not S).  Pass:
    ||S - S^T||_F/||S||_F <= tc.tol("iterative") at every point (the end of an iterative search
    run to round-off; a wrong projection gives an O(1) asymmetry), the brute-force sample never
    beats the refined projection's distance by more than tc.tol("iterative") (the search starts
    at the best sample and never accepts a worse vertex: only round-off could break it,
    `BRUTE_FORCE_ROUNDOFF`), and the library's
    multi-start projection (`project_to_manifold`, which stops on this very
    asymmetry) lands on the same rotation (a cross-check of the solver, entrywise to
    tc.tol("iterative"), the entries of R being O(1)).
    Hypotheses A1, A2 (A3 plays no role in this geometric lemma).
    """
    decide_recipe(tc, ill_conditioned, a3=False)
    problem = ill_conditioned(tc.rng("ill_conditioned"))
    record_assumptions(tc, problem)
    rng = tc.rng("projection")
    defects, beaten, solver_gap = [], [], []
    for V, K in projection_points(tc, problem, tc.sizes["points"]):
        brute = brute_force_projection(V, K, problem.Sigma, problem.W, rng, samples=tc.sizes["draws"])
        if tc.control == "random_rotation":   # a new draw: a rotation the claim never sees
            R = haar_rotations(tc.rng("projection", "random_rotation"), problem.d, 1)[0]
        elif tc.control == "euclidean_projection":
            R = derivative_free_projection(V, K, problem.Sigma, problem.W, brute.R, weight=np.eye(problem.d))
        else:
            R = derivative_free_projection(V, K, problem.Sigma, problem.W, brute.R)
        Vs, Ks = manifold_point(problem.W, problem.Sigma, R)
        S = Vs.T @ (V - Vs) + problem.Sigma @ Ks @ (K - Ks).T
        defects.append(np.linalg.norm(S - S.T) / np.linalg.norm(S))
        beaten.append(sigma_bar_distance(V, K, Vs, Ks, problem.Sigma) - brute.distance)
        if tc.control is None:
            solver = project_to_manifold(V, K, problem.Sigma, problem.W, rng,
                                         random_starts=tc.sizes["random_starts"])
            solver_gap.append(np.max(np.abs(solver.R - R)))
    tc.conclusion.at_most("relative asymmetry of S at the projection", defects, tc.tol("iterative"))
    tc.conclusion.at_most("brute force never beats the projection", beaten, tc.tol("iterative"),
                          tail_bound=None if tc.control else BRUTE_FORCE_ROUNDOFF)
    tc.record("max asymmetry", max(defects))
    tc.record("max (projection - brute force) distance", max(beaten))
    if tc.control is None:
        tc.record("max |R_solver - R| (library projection against the derivative-free one)", max(solver_gap))
        tc.conclusion.at_most("the library's projection finds the same rotation", solver_gap, tc.tol("iterative"))


@claim(
    f"{PAPER}.lem1.singular_values",
    source="Lemma 1 (part 2)",
    statement="On the manifold, sigma_i(V*) = sigma_i(Sigma K*) = sigma_i(W*)^{1/2}, and the "
              "extended-covariance Gram matrix V*^T V* + K*^T Sigma K* has its spectrum in "
              "[sigma_d(W*)(1 + 1/lambda_max(Sigma)), sigma_1(W*)(1 + 1/lambda_min(Sigma))].",
    provenance="inferred",
    controls={
        "no_regularizer": Control(
            "hypothesis", breaks=["sigma_i(V*) = sigma_i(W*)^{1/2}"],
            description="lambda = 0: the minimizers reached from the same points are those of L "
                        "alone (the GL(d) orbit of V Sigma K = W*), unbalanced, not on M"),
    },
    calibration=[
        "Since the review (2026-11-26) the points are minimizers of L_reg reached by BFGS from "
        "perturbed points (formerly theta_R = manifold_point(R) for Haar R, where the equalities "
        "are identities of the construction); the tolerance is the framework's 'iterative' kind, "
        "not tuned; run on seeds 1-10 and 0: final gradient norms about 2e-14, passed; the "
        "no_regularizer control failed as declared.",
        "Gram bounds (issue 31, 2026-11-29): they were decided without an allowance on the BFGS points, which "
        "lie off M by up to tc.tol('iterative'); the allowance 2 tc.tol('iterative') + 2^27 eps (eps = 2u) is derived (Weyl "
        "and the singular-value decisions' tolerance, plus the Gram matrix's round-off), never read off seeds, "
        "and both carry the stated bound GRAM_ROUNDOFF (3.6e-9).  Calibrated on 70000-70049: claim 7.3e-9 (the "
        "singular-value decisions on their log-normal tails; on 51000-51049 sigma_i(V*) had fallen to "
        "Cantelli, 5.2e-4).",
    ],
    sizes={"quick": {}, "full": {}},
)
def test_singular_values(tc):
    r"""The points of M are reached as minimizers of L_reg = L + lambda R(.; Sigma), lambda = 1/4
    (Theorem 1: argmin L_reg = M), by BFGS with the closed-form gradients from theta_{R0} +
    0.05 Z (`minimize_regularized_loss`; neither `manifold_point` nor the projection is used),
    on the ill-conditioned instance.  Pass: the singular values of V* and of Sigma K* equal
    those of W*^{1/2} (relative error <= tc.tol("iterative"): the end of an iterative
    minimization, whose distance to M is of the order of its final gradient norm over the
    local curvature), and the Gram bounds hold (lower ratio >= 1, upper ratio <= 1; they follow
    from K*^T Sigma K* = (Sigma K*)^T Sigma^{-1} (Sigma K*) and sigma(Sigma K*) =
    sigma(W*)^{1/2}; Weyl's inequalities make them hold for any (V, K) whose singular values are those,
    so on the BFGS points they hold up to the singular values' relative error, 2 tc.tol("iterative")
    of the ratio, plus the Gram matrix's round-off, `GRAM_EXTRA`: the allowance, and the decisions'
    stated bound `GRAM_ROUNDOFF`).  The paper's exact constants were lost: this is the derived reading
    (provenance inferred).  Hypotheses A1, A2 and lambda > 0 (the balancing that selects M).
    """
    lam = 0.0 if tc.control == "no_regularizer" else 0.25
    decide_recipe(tc, ill_conditioned, a3=False)
    tc.precondition.holds("regularizer weight lambda > 0", lam > 0)
    run = tc.use(regularized_minimizers, lam=lam)      # the control's lambda = 0: its own minimizations
    problem = run["problem"]
    record_assumptions(tc, problem)
    root = np.sqrt(problem.singular_values())
    ev = problem.covariance_eigenvalues()
    lower = root[-1] ** 2 * (1 + 1 / ev[-1])
    upper = root[0] ** 2 * (1 + 1 / ev[0])
    v_err, k_err, low, high = [], [], [], []
    for V, K in zip(run["V"], run["K"]):
        v_err.append(np.max(np.abs(np.linalg.svd(V, compute_uv=False) / root - 1)))
        k_err.append(np.max(np.abs(np.linalg.svd(problem.Sigma @ K, compute_uv=False) / root - 1)))
        gram = np.linalg.eigvalsh(V.T @ V + K.T @ problem.Sigma @ K)
        low.append(gram[0] / lower)
        high.append(gram[-1] / upper)
    tc.record("max final gradient norm", run["grad"].max())
    tc.conclusion.at_most("sigma_i(V*) = sigma_i(W*)^{1/2}", v_err, tc.tol("iterative"))
    tc.conclusion.at_most("sigma_i(Sigma K*) = sigma_i(W*)^{1/2}", k_err, tc.tol("iterative"))
    allowance = 2 * tc.tol("iterative") + GRAM_EXTRA      # the points' distance to M and round-off
    tc.conclusion.at_least("Gram lower bound (ratio)", low, 1.0, rmargin=allowance,
                           tail_bound=None if tc.control else GRAM_ROUNDOFF)
    tc.conclusion.at_most("Gram upper bound (ratio)", high, 1.0, rmargin=allowance,
                          tail_bound=None if tc.control else GRAM_ROUNDOFF)
    tc.record("min lower ratio", min(low))
    tc.record("max upper ratio", max(high))
