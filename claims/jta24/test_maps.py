"""jta24: boundary maps (`theorycheck.maps`) -- where the local directional-convergence theorem
starts to hold as the restart radius (the initialization's scale along the SVM ray) is relaxed
below the encoded theorem's radius."""
from __future__ import annotations

import numpy as np

from theorycheck import Control, claim
from theorycheck.tails import TailBound
from theorycheck.maps import decide_inside, rate_map, record_map

from .local import MAP_P, MAP_POOL, SAFE_GAP, radius_map_alphas, radius_map_runs
from .setup import PAPER, SIZES, score_tie_tail

LEVEL = 0.9
"""The decided success rate: the theorem says every restart inside the region converges, but at
f = 1 a few restarts of 40 fail (counts in the claim's calibration record; a finding,
docs/claims/jta24.md), so the decision asks P >= 0.9 (binomial) and the map's transition is where the rate crosses 0.9."""
ALPHA = 3e-4
"""Level of the inside decision: the claim budget's false-failure rate when P >= LEVEL holds
(rejects at 27 successes of 40 or fewer; the control's success counts are in the calibration record)."""

THRESHOLD = 2e-2
"""Per-restart conclusion: D_psi_2(W_mm/||W_mm||, W(K)/||W(K)||) <= 2e-2, i.e. correlation
<W_mm, W(K)>/(||W_mm|| ||W(K)||) >= 0.98 (the threshold of `jta24.thm.lp_direction_local`)."""

REGION = 1.0
"""The stated region R >= R_thm: radius fraction f = R / R_thm >= 1, R_thm = max(5, 3/delta_safe)
||W_mm_alpha|| the encoded local theorem's radius (`restart_radius`)."""

CONTROL_P = 1.5
"""The dynamics control's exponent: normalized l_1.5-MD (1.5 is one of the paper's P_VALUES)."""

INSIDE = "at R = R_thm: tokens stay alpha and D_K <= THRESHOLD, P >= LEVEL"
"""The conclusion decided inside the stated region, at its boundary f = 1 (the larger f of the grid
restart the same instances, so they are not pooled)."""

MAP_SIZES = {
    "quick": dict(SIZES["quick"], instances=40, steps=300, radius_map=[0.125, 0.25, 0.5, 1.0, 2.0]),
    "full": dict(SIZES["full"], instances=100, steps=1000,
                 radius_map=[0.03125, 0.0625, 0.125, 0.25, 0.5, 0.707, 1.0, 1.414, 2.0]),
}
"""K = 40 restarts (one per fresh instance) and 300 normalized-GD steps in the quick tier, the grid of
f = R / R_thm from 1/8 to 2 (factors of 2); the full tier: 100 restarts, 1000 steps, f from 1/32 to 2
(factors of sqrt 2 near the region; not run on the development machine)."""


FOUND = "restarts found: qualifying / scanned instances >= 1/MAP_POOL"
"""The scan of `radius_map_alphas` found its K restarts before its pool of MAP_POOL K instances ran out:
with found <= K restarts of s <= MAP_POOL K instances scanned, found / s >= K / (MAP_POOL K) exactly when
found = K (found < K only when the whole pool was scanned, s = MAP_POOL K).  The ratio, unlike the count
(always K when it passes), varies from seed to seed with the instances the scan passed over."""
HYPOTHESES = "every restart: alpha locally optimal, non-global, delta_safe >= 0.05"


def hypotheses_tail(sizes) -> TailBound:
    """Why `HYPOTHESES` fails on no draw but a float64 tie of two token scores (`test_local_map_radius`)."""
    pool = score_tie_tail(dict(sizes, instances=MAP_POOL * sizes["instances"]))
    return TailBound(pool.probability, (
        "the scan keeps a restart only when the stored flags of its trial meet `meets_restart_hypotheses` "
        "(alpha locally optimal and delta_safe >= SAFE_GAP), and the decision reads those same stored "
        "values (no recomputation), so they cannot fail; alpha is non-global unless second_best_switches "
        "moved a sample to opt itself, i.e. argsort's second-highest index equals argmax, which needs the "
        "sample's top two scores equal in float64 (within the score round-off): over the pool's "
        "instances, " + pool.reason))


@claim(
    f"{PAPER}.thm.lp_direction_local_map_radius",
    source="main-body local convergence theorem (reconstructed; W(0) in a cone at large norm R), "
           "at p = 2; proof Lemmas 19-30",
    statement="Restarted on the ray of the l_2-AttSVM W_mm_alpha of a locally optimal, non-global "
              "alpha at the encoded theorem's radius R_thm = max(5, 3/delta_safe) ||W_mm_alpha||, "
              "normalized l_2-AttGD keeps selecting alpha and reaches D_psi_2 <= 2e-2 to "
              "W_mm_alpha within the step budget with probability at least 0.9; below R_thm the "
              "success rate against R/R_thm is mapped and its crossing of 0.9 located (a finding).",
    provenance="inferred",
    constants={"level": LEVEL, "threshold": THRESHOLD, "region": REGION, "p": MAP_P,
               "safe_gap": SAFE_GAP, "control_p": CONTROL_P},
    controls={
        "other_mirror_map": Control(
            "dynamics", breaks=[INSIDE],
            description="normalized l_1.5 mirror descent (the mirror map of p = 1.5, one of the "
                        "paper's exponents) from the same restarts at R = R_thm and 2 R_thm, the "
                        "reference still the l_2-AttSVM: the iterates keep alpha but turn to the "
                        "l_1.5-AttSVM direction of alpha, so D_K to the l_2 one stays above the "
                        "threshold"),
    },
    calibration=[
        "prototype on seeds 1-3 (another instance stream; 40 restarts, grid 1/32 .. 2, 300 "
        "steps): D_K <= 2e-2 on 0-0.03 at f <= 1/16, 0.03-0.12 at 1/8, 0.17-0.35 at 1/4, 0.57-0.65 at "
        "1/2, 0.93-0.97 at 1, 1.0 at 2; the threshold 2e-2 is the local claim's; the l_3-MD "
        "control kept 0.93 at f = 1 (the l_3 and l_2 SVM directions are within 2e-2), the "
        "l_1.5-MD control 0 (D_K about 0.036), hence p = 1.5",
        "grid 1/8, 1/4, 1/2, 1, 2 (K = 40, 300 steps) chosen on --tc-seed 1-10: success rates "
        "0.05-0.2 at 1/8, 0.18-0.4 at 1/4, 0.57-0.72 at 1/2, 0.875-1.0 at 1, 1.0 at 2, so every "
        "seed's rate crosses 0.9 inside the grid (fitted transitions f = 0.73 .. 1.09); checked "
        "on seed 0 (0.1, 0.25, 0.75, 0.975, 1.0; transition 0.72 [0.58, 0.96]) and held out on "
        "seeds 11-19 (transitions 0.78 .. 1.05); successes at f = 1: 35-40 of 40 on seeds 0-19 "
        "(the test rejects at 32 or fewer); the l_1.5-MD control 0-0.05 at f = 1 and 0-0.075 "
        "at f = 2 on seeds 0-19 (D_K about 0.03-0.04)",
        "tokens kept at K (alpha still selected) 0.62-0.85 at f = 1/8 on seeds 0-19: below R_thm "
        "most failures are restarts that keep alpha but have not reached D_K <= 2e-2 within the "
        "300 steps (the transient of D grows as the radius shrinks); the map measures the "
        "conclusion within the step budget, not the basin alone",
        "full tier run once, seed 0 (K = 100, 1000 steps, f = 1/32 .. 2): rates 0.02, 0.14, "
        "0.23, 0.56, 0.86, 0.94, 0.98, 0.99, 1.0; transition 0.58 [0.50, 0.68]; tokens kept "
        "0.29 at f = 1/32 (with the longer budget the failures are restarts that lose alpha)",
        "2026-11-29 (issue 31): the two preconditions had no margin (the count is K whenever it passes; "
        "a holds) and kept the row at its counted 0.049.  Decided now with the same verdicts: `FOUND` as "
        "the qualifying fraction of the scanned instances (normal tail), `HYPOTHESES` as the least "
        "delta_safe with its stated bound (`hypotheses_tail`, 2.5e-10).  Calibrated on 71000-71049 "
        "(no threshold chosen): claim 2.9e-8, other_mirror_map 2.6e-10 (both within budget; the "
        "fraction 0.82 +- 0.06, least 0.70, against 1/3)",
    ],
    sizes=MAP_SIZES,
)
def test_local_map_radius(tc):
    r"""The local theorem (`jta24.thm.lp_direction_local`): for a locally optimal alpha and W(0)
    in a thin cone around W_mm_alpha with ||W(0)|| >= R (large enough), l_p-AttGD keeps selecting
    alpha and W(k)/||W(k)|| -> W_mm_alpha/||W_mm_alpha||.  The paper's R is a dataset constant that
    could not be recovered; the encoding (`local_restarts`) restarts at R_thm = c ||W_mm_alpha||,
    c = max(5, 3/delta_safe) (FLAGGED there: chosen after a full-tier failure), so that a
    higher-score non-support token has at most exp(-3) of a support token's attention.  This map
    asks how sharp that radius is.  At p = 2 (normalized l_2-MD = normalized GD, the l_2-AttSVM =
    the W-SVM, `radius_map_alphas`): K = 40 restarts, one per fresh instance of the authors'
    generator, alpha = opt with one sample moved to its second-highest-score token, the first such
    alpha that is locally optimal with delta_safe >= 0.05, scanning a pool of MAP_POOL K instances
    (preconditions: K restarts found before the pool ran out, decided as the qualifying fraction of
    the scanned instances >= 1/MAP_POOL, `FOUND`; every alpha locally optimal and non-global with
    delta_safe >= 0.05, decided as the least delta_safe of the restarts, -1 for a restart failing
    the other two, with its stated bound `hypotheses_tail`: true by the scan's construction but
    for a float64 tie of the top two scores).  At each radius fraction
    f = R / R_thm of the grid (quick 1/8, 1/4, 1/2, 1, 2; full 1/32 .. 2) every restart starts at
    W(0) = f R_thm W_mm_alpha/||W_mm_alpha|| (on the ray: D_0 = 0) and runs 300 steps (quick) of
    normalized GD with eta = 0.1 f c / 5 (the local claim's rule: the same relative move per step
    at every radius), `radius_map_runs`.  Per restart the conclusion: the tokens selected at K
    are alpha and D_K = D_psi_2(W_mm/||W_mm||, W(K)/||W(K)||) = 1 - corr <= 2e-2.  The map: the
    success rate per f with its exact 95% Clopper-Pearson interval (half-width at most about 0.16
    at K = 40); the transition where the logistic fit logit P = a + b log f (maximum likelihood;
    the grid points share their restarts, so the profile-likelihood interval treats dependent
    points as independent) crosses LEVEL = 0.9, with its 95% profile-likelihood interval.  Below
    f = 1 the map is a finding (the paper does not state R).  Decided inside the stated region
    f >= 1 at its boundary f = 1 (the 40 restarts there; f = 2 reuses them and is not pooled): the
    exact binomial test of P >= 0.9 at level ALPHA = 3e-4, the claim budget (rejects at 27
    successes or fewer; power at 0.75 about 0.18, recorded with the decision: the level, not the
    power, is what the suite's false-failure budget needs).  The
    theorem says every restart: P >= 0.9 is the rate the restarts meet, the gap a finding.  Control (dynamics): normalized l_1.5-MD from
    the same restarts at f = 1, 2, the reference unchanged: the iterates keep alpha but converge
    to the l_1.5-AttSVM direction, D_K to the l_2 one stays above 2e-2 and the inside decision
    fails.
    """
    s = tc.sizes
    alphas = tc.use(radius_map_alphas, instances=s["instances"])
    tc.record("instances scanned / W-SVM solves for the restarts",
              [int(alphas["instances_scanned"]), int(alphas["solves"])])
    tc.record("delta_safe per restart", alphas["safe"])
    found, scanned = len(alphas["alpha"]), max(int(alphas["instances_scanned"]), 1)
    tc.record("restarts found", found)
    tc.precondition.at_least(FOUND, found / scanned, s["instances"] / (MAP_POOL * s["instances"]))
    qualified = alphas["local"] & np.any(alphas["alpha"] != alphas["opt"], axis=-1)
    least_safe = float(np.min(np.where(qualified, alphas["safe"], -1.0))) if found else -1.0
    tc.precondition.at_least(HYPOTHESES, least_safe, SAFE_GAP, tail_bound=hypotheses_tail(s))
    control = tc.control == "other_mirror_map"
    grid = [f for f in s["radius_map"] if not control or f >= REGION]
    runs = tc.use(radius_map_runs, fractions=tuple(float(f) for f in grid), instances=s["instances"],
                  steps=s["steps"], dynamics_p=CONTROL_P if control else MAP_P)
    success = runs["tokens_kept"] & (runs["D"] <= THRESHOLD)
    tc.record("median D_K per radius fraction", np.median(runs["D"], axis=1))
    tc.record("tokens kept at K, fraction per radius fraction", runs["tokens_kept"].mean(1))
    m = rate_map(grid, list(success), level=LEVEL, parameter="R / R_thm", x_transform="log",
                 name="local theorem against the radius")
    if tc.control is None:   # the control decides inside the region only: no map of its own
        record_map(tc, "local directional convergence against R / R_thm", m, xscale="log",
                   region={"description": "R >= R_thm = max(5, 3/delta_safe) ||W_mm|| (the encoded "
                                          "local theorem's radius)", "lower": REGION},
                   finding="R / R_thm where the success rate crosses LEVEL (95% profile interval)")
    decide_inside(tc, INSIDE, m, lower=REGION, upper=REGION, p=LEVEL, alpha=ALPHA,
                  low_power="K = 40 restarts at f = 1 (one per fresh instance; 40 more cost a second "
                            "W-SVM screen): at level 3e-4 the test rejects at 27 or fewer; the control "
                            "(0-3 of 40) is far below")
