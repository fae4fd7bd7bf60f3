r"""gsb26: Lemma 5, the spectral point of perturbed (W, Sigma) is close to the manifold, linearly
in the perturbation.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Lemma 5 (deterministic perturbation bound
behind the initialization guarantee, Lemma 3).
"""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.solvers import project_to_manifold

from .estimators import spectral_point, unit_operator_norm
from .setup import decide_recipe, record_assumptions, well_conditioned

EPSILONS = (1e-1, 1e-2, 1e-3, 1e-4)
RATIO_BOUNDED = "dist ratio bounded: max over eps / min over eps <= 2"
#: the log-log slope's window [0.9, 1.1], decided as its two ends: one decision with the window's
#: margin min(slope - 0.9, 1.1 - slope) folds the slope about 1, a shape no tail model fits
SLOPE_AT_LEAST = "log max dist vs log eps: slope at least 0.9"
SLOPE_AT_MOST = "log max dist vs log eps: slope at most 1.1"
COMMON_DIRECTIONS_RECORD = (
    "Issue 31 (2026-11-30): fresh directions (E, S) were drawn at every eps, so the maxima compared across "
    "eps were maxima over different draws, and their spread was the draws' (the table's row on 51000-51049: "
    "margins not normal, Cantelli 0.034 and 0.043, claim 0.058).  Now the same directions at every eps "
    "(common random numbers; the cost unchanged), so the comparison sees the dependence on eps that Lemma 5 "
    "is about; thresholds unchanged.  Calibration block 95100-95199, run as two halves with the window "
    "[0.9, 1.1] still one decision: on 95100-95149 the claim read 7.7e-6 (both margins' normal model accepted, "
    "Shapiro-Wilk p 0.013 and 0.075: marginal), on 95150-95199 6.2e-4 (rejected: Cantelli 2.3e-4 for the "
    "ratio, 3.8e-4 for the window), pooled 3.4e-4; no failure, square_root_free failed as declared on 100 of "
    "100.  Max/min ratio 1.0005-1.045 (margin 0.495 +- 0.004, Cantelli 1.3e-4 over the 100); the slope "
    "itself 0.994-1.006, normal (Shapiro-Wilk p 0.55, mean 1.0001, sd 0.0018), while the window's margin "
    "min(slope - 0.9, 1.1 - slope) folds it about 1: so the window is decided at its two ends (each margin "
    "linear in the slope).  Validation 95200-95249 (fresh, the code as it is): no failure; slope ends "
    "normal (p 0.087) at 48.5 sd each (bound 0); the ratio 1.0001-1.055, Cantelli 3.3e-4 (93 sd, not "
    "normal): claim 3.3e-4, OVER the budget by the ratio alone; square_root_free failed as declared on 50 "
    "of 50 (miss 1.4e-7).  The ratio's computation is the same in all three blocks: over the 150 seeds "
    "95100-95249 its Cantelli bound is 1.45e-4, the claim's union then about 1.5e-4 (not yet a row: the "
    "first 100 seeds recorded the window as one decision).  A second validation block of the same code, "
    "95250-95299 (run by the lead), reads 0.040 (Cantelli: one seed's ratio margin 0.41, slope margins 0.07 "
    "and 0.11, far below the rest, normality rejected at p < 1e-10), and the row over 95200-95299 reads "
    "0.012: the common directions' max/min ratio has a heavier tail than the first blocks showed, so the "
    "claim stays over the budget")
ALIGNED_SIGNS_RECORD = (
    "Issue 31, 2026-11-30 (twelfth session, helper gsb26B): the heavy tail was the SVD's sign choice, not "
    "the second-order term; thresholds unchanged.  Calibration block 113000-113049 ran the grid a decade "
    "lower, (1e-2 .. 1e-5) sigma_d(W*), on the premise that the outliers were second order: seed 113025 "
    "read a max/min ratio 1.108 (margin 0.446 against 0.498 +- 0.008; slope 1.015), normality rejected "
    "(p 5e-15), claim 0.037 by Cantelli; square_root_free failed as declared on 50 of 50.  On that seed "
    "the ratio of one direction jumped between neighbouring eps (2.80 up to eps = 1.0e-5, 3.10 from "
    "2.2e-5, flat on either side; 50 projection starts agree, the optimal rotation changes component of "
    "O(3)): torch's SVD flips a singular pair's sign between two eps, and a flipped pair is another "
    "first-order branch (`aligned_signs`).  Redesigned: each pair of W~ signed as W*'s, the grid back at "
    "the spec's decades.  Validation 113100-113149 (fresh, the rule fixed before it: no failure, the "
    "control failing as declared on every seed): no failure; max/min ratio 1.0001-1.021 (margin "
    "0.4957 +- 0.0028, least 0.4895, normal, Shapiro-Wilk p 0.075), slope 0.997-1.003 (both ends normal, "
    "p 0.21, 74 sd); claim 5.9e-6 (the Sigma~ > 0 precondition's Cantelli bound), square_root_free failed "
    "as declared on 50 of 50 (miss 5.9e-6).  The table's row is the validation block.")

SPECTRAL_POINT_RECORD = (
    "Issue 31, 2026-11-30 (thirteenth session, helper gsb26B): the signing of the record above (`aligned_signs`, "
    "a second pass that re-signed the library's point with an extra solve) is now inside `spectral_point`: one "
    "SVD, each pair signed as W*'s before the point is formed, the control's point by the same formula at D's "
    "other power; the point is the same up to round-off, thresholds unchanged.  Row 120000-120049 (fresh, the "
    "code at 07bdf82): no failure; max/min ratio margin 0.4959 +- 0.0029 (least 0.4897; Shapiro-Wilk p 0.005, "
    "Cantelli 5.3e-5 at 171 sd), slope ends normal (p 0.20, 76 sd, bound 0), Sigma~ > 0 Cantelli 7.9e-6; claim "
    "6.1e-5; square_root_free failed as declared on 50 of 50 (miss 8.0e-6).  The table's row is this block.")


def perturbation_directions(rng, problem, count):
    """``count`` perturbation directions (E, S): E Gaussian shaped like W*, S symmetric Gaussian,
    each scaled to operator norm 1."""
    directions = []
    for _ in range(count):
        E = unit_operator_norm(rng.standard_normal(problem.W.shape))
        S = rng.standard_normal(problem.Sigma.shape)
        directions.append((E, unit_operator_norm(S + S.T)))
    return directions


@claim(
    "gsb26.lem5.init_perturbation",
    source="Lemma 5",
    statement="The spectral point built from any (W~, Sigma~) near (W*, Sigma) is within "
              "C_5 (||W~ - W*|| + ||Sigma~^{-1} - Sigma^{-1}||) of the manifold, C_5 depending "
              "only on sigma_d(W*), ||W*|| and ||Sigma||.",
    provenance="inferred",
    controls={
        "square_root_free": Control(
            "dynamics", breaks=[RATIO_BOUNDED, SLOPE_AT_LEAST],
            description="the square-root-free initialization (U D, Sigma~^{-1} V^T): it fits "
                        "W~ but is unbalanced, so its distance to M does not vanish with eps"),
    },
    calibration=["Criteria from the spec (factor 2), checked on seeds 1, 2 and 0.",
                 *(Calibrated(decision=decision, threshold="the spec's, unchanged", calibration_seeds="95100-95199",
                              validation_seeds="95200-95299", how=COMMON_DIRECTIONS_RECORD)
                   for decision in (RATIO_BOUNDED, SLOPE_AT_LEAST, SLOPE_AT_MOST)),
                 *(Calibrated(decision=decision, threshold="the spec's, unchanged", calibration_seeds="113000-113049",
                              validation_seeds="113100-113149", how=ALIGNED_SIGNS_RECORD)
                   for decision in (RATIO_BOUNDED, SLOPE_AT_LEAST, SLOPE_AT_MOST)),
                 SPECTRAL_POINT_RECORD],
    sizes={"quick": {"instances": 10}, "full": {"instances": 50}},
)
def test_init_perturbation(tc):
    r"""W~ = W* + eps E, Sigma~^{-1} = Sigma^{-1} + eps S (E Gaussian, S symmetric Gaussian, each
    scaled to operator norm 1), eps = sigma_d(W*) x {1e-1, ..., 1e-4} (small relative to the
    smallest singular value, the lemma's regime), 10 directions (E, S) (50 full) on the
    well-conditioned instance, the same directions at every eps (common random numbers: the
    comparison across eps then sees the eps-dependence of the distance, not a fresh draw's
    spread of directions), each singular pair of W~ signed as W*'s (`spectral_point`: the
    continuous branch of the spectral map, which the SVD's sign convention alone does not
    give).  dist = dist_{Sigma_bar}(theta_0(W~, Sigma~), M) by the multi-start weighted
    Procrustes projection; ratio = dist / (||W~ - W*|| + ||Sigma~^{-1} - Sigma^{-1}||).  C_5 is
    not recoverable, so the lemma is tested as its shape: the maximum ratio over draws is
    bounded uniformly in eps (varies by less than a factor 2 across the four decades: a
    first-order bound has a constant limit as eps -> 0) and the maximum distance falls linearly
    in eps (log-log slope in [0.9, 1.1], decided at each end; a map with a bounded derivative at
    the manifold).  Recorded: the maximum ratio per eps.  Preconditions: A1, A2 and Sigma~ > 0.
    Criteria from the spec (factor 2).
    """
    decide_recipe(tc, well_conditioned, a3=False)
    problem = well_conditioned(tc.rng("well_conditioned"))
    record_assumptions(tc, problem)
    rng = tc.rng("perturbations")
    eps = problem.singular_values()[-1] * np.array(EPSILONS)
    Sinv = np.linalg.inv(problem.Sigma)
    U_star = np.linalg.svd(problem.W, full_matrices=False)[0]
    directions = perturbation_directions(rng, problem, tc.sizes["instances"])
    worst_ratio, worst_dist, lowest = [], [], []
    for e in eps:
        ratios, dists = [], []
        for E, S in directions:
            tilde_inv = Sinv + e * S
            lowest.append(np.linalg.eigvalsh(tilde_inv)[0])
            V, K = spectral_point(tc, problem.W + e * E, tilde_inv, U_star)
            dist = project_to_manifold(V, K, problem.Sigma, problem.W, rng, random_starts=2).distance
            dists.append(dist)
            ratios.append(dist / (2 * e))
        worst_ratio.append(max(ratios))
        worst_dist.append(max(dists))
    tc.precondition.at_least("Sigma~ > 0 (lambda_min of Sigma~^{-1})", lowest, 0.0)
    worst_ratio = np.array(worst_ratio)
    tc.conclusion.at_most(RATIO_BOUNDED, worst_ratio.max() / worst_ratio.min(), 2.0)
    tc.conclusion.slope(SLOPE_AT_LEAST, eps, worst_dist, window=(eps.min(), eps.max()), at_least=0.9)
    tc.conclusion.slope(SLOPE_AT_MOST, eps, worst_dist, window=(eps.min(), eps.max()), at_most=1.1)
    tc.record("max ratio per eps", worst_ratio)
    tc.curve("dist", "max dist(theta_0, M)", eps, worst_dist, xlabel="eps", xscale="log", yscale="log")
