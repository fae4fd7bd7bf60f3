r"""gsb26: the population loss of softmax self-attention regression and the finite-n gap.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 1 (part 1) and Section 3.
"""
import numpy as np
import scipy.stats

from theorycheck import Calibrated, Control, claim
from theorycheck.patterns import per_instance
from theorycheck.tails import NullTest

from .population import (OUT_OF_SAMPLE_SIZES, limit_z, manifold_gap_instances, out_of_sample, regime_tail,
                         symbolic_closed_form)
from .sampling import GAUSSIAN_KEYS
from .setup import (LIGHT_TAIL, PAPER, TEST_POINT_TAIL, decide_recipe, gaussian_precondition, record_assumptions,
                    well_conditioned)

#: mu(K) of `sec3.finite_n_gap` (a grid value of the quick map) and of its control, and the level
#: of its one-sided t test on each instance
SEC3_TAIL, SEC3_HEAVY_TAIL, GAP_ALPHA = 0.25, 2.0, 1e-4
#: the rates at which an instance of `sec3.finite_n_gap` meets its two statements (the t test, the
#: factor 1.5), each tested over the case's instances by the exact binomial test at level SEC3_ALPHA:
#: the one-sided 99.9% Clopper-Pearson lower bound of the per-instance rate on the calibration block,
#: rounded down to 0.05 (the record)
GAP_RATE, THETA_RATE, SEC3_ALPHA = 0.95, 0.90, 1e-4
GAP_POSITIVE = "the gap at the smallest n is positive on an instance (one-sided t test, level 1e-4)"
GAP_THETA = "n (E Lhat_n - L) varies by less than a factor 1.5 on an instance"
SEC3_LOW_POWER = ("8 instances a case on the quick tier (each a Monte Carlo of the gap at every n; their cost): at "
                  "level 1e-4 the test rejects when at most 3 of 8 instances hold (rate 0.95) or at most 2 (rate "
                  "0.9), not at a rate a little below; a gap of 0 fails the t test on every instance, and the "
                  "heavy_tails control the factor on almost every one")
#: thm1.closed_form's test of the softmax averages' law (`limit_z`): a two-sided NullTest family
#: over the tier's N at this level, a third of the claim budget (the other decisions are exact or
#: round-off)
OUT_OF_SAMPLE_LEVEL = 1e-4
LIMIT_LAW = ("softmax averages over N fresh keys tend to Sigma K x with the delta-method law: "
             "chi-square z within the level-1e-4 critical value at every N")


@claim(
    f"{PAPER}.thm1.closed_form",
    source="Theorem 1 (part 1), eq. (2)",
    statement="The population loss of softmax self-attention regression is "
              "||(V Sigma K - W*) Sigma^{1/2}||_F^2 + k sigma^2: the softmax average over the "
              "training covariates tends to Sigma K x, so the predictor tends to V Sigma K x.",
    provenance="derived",
    controls={
        "transposed_predictor": Control(
            "reference", breaks=[LIMIT_LAW],
            description="the limit of the other orientation, Sigma K^T x (predictor V Sigma K^T x), "
                        "for a non-symmetric K, against the claim's softmax averages: their "
                        "deviations from it do not shrink like N^{-1/2}"),
        "missing_sigma_sympy": Control(
            "reference", breaks=["sympy d=k=1: ratio-of-integrals loss minus closed form is 0"],
            description="the closed form with predictor V K x (missing Sigma): sympy leaves a "
                        "non-zero difference"),
        "skewed_keys": Control(
            "hypothesis", breaks=[LIMIT_LAW],
            description="the fresh keys drawn skewed (centered exponential coordinates) with the same "
                        "covariance Sigma instead of Gaussian (its own Monte Carlo): the tilted mean "
                        "E[x e^{x^T u}]/E[e^{x^T u}] is Sigma u only for Gaussian keys, off by about "
                        "the third cumulant times u^2 here, so the averages settle elsewhere"),
    },
    calibration=[
        "Gap slopes on seeds 1, 2, 3: -1.01, -1.01, -0.95 (standard errors 2-5% of the gap).",
        "Re-sized after the 20-seed sweep: the heavy_tails control had mu = 1.5 (slope -1.19 on seed 5, "
        "a misfire; -1.25 on seed 11); mu = 3 chosen on seeds 1-10 (slopes -0.22 .. +0.70), held out "
        "on 0 and 11-19 (slopes in [-0.21, 0.03]).",
        "The generic test point (setup.test_point): on seeds 0-19, 2 of 20 draws had mu(K) = 0.76, 0.80 "
        "> 1/2, outside the hypothesis; K is now shrunk to mu = 0.35 on such draws (a rule on Sigma and "
        "the draw, not on an outcome).",
        "The control unweighted_closed_form (the claim's Monte Carlo judged against the wrong closed "
        "form ||V Sigma K - W*||_F^2 + k sigma^2) was removed after the unseen sweep 955297912-955297931 "
        "at ccc3f9a: it passed on 2 of the first 16 seeds (955297913, 955297925; slope -0.89 inside the "
        "window) because |E Lhat_n - L_wrong| = |gap + (L - L_wrong)| decays like the gap whenever the "
        "two terms nearly cancel over the n window (its slope ranged -3.2 to +1.9): a miss rate near "
        "0.1, far over the 1e-2 budget, and a re-judging of the claim's own numbers. The 1/n law of "
        "the gap keeps heavy_tails (its own Monte Carlo) and the closed form missing_sigma_sympy.",
        "Until the unseen sweep 955297912-955297931 the gap's point slope was decided against the window "
        "[-1.25, -0.75] (no designed rate): it failed on one seed by 0.006.  On the calibration block "
        "(scratch, 15000-15009) the slope's sd from the Monte Carlo standard errors was 0.02-0.22 (a "
        "gap of 1.7 10^-2 at n = 64 with relative standard error 0.29 on 15008): the noise alone moves "
        "the point slope across the window's end at a rate far over the budget.",
        "Superseded 2026-12-03 (the decision left with (b2), last record): the gap's slope, threshold "
        "lower one-sided 1 - 7.5e-5 bound <= -0.75 (and the upper >= -1.25), calibration 15000-15009, "
        "validation 15100-15149: level from the claim budget (3e-4: 7.5e-5 for each end of the gap's slope, the "
        "rest left to the out-of-sample slope), the window the spec's: nothing chosen on "
        "seeds; the rule fixed before validation: 0 failures in 50 and both controls failing "
        "as declared on every seed. Calibration block cut to 10 seeds by the session's CPU "
        "(10/10 passed, least relative margins 0.36 and 0.23). Validation 15100-15149 (the "
        "table's rows): the claim passed 50/50 (least margins 0.25 and 0.24; skewed, the bound "
        "by counting); missing_sigma_sympy and transposed_predictor failed as declared 50/50; "
        "heavy_tails (then at the generic test point) MISSED on 15138 (misfire: only the "
        "light-tail precondition failed): at mu = 3 that instance's gap decayed with slope "
        "-0.81 (sd 0.065), inside the window; the unseen sweep 168935948-168935967 saw it "
        "misfire once more (168935963).  Redesigned: see the next record.",
        "Superseded 2026-12-03 (likewise): the gap's slope, threshold the claim's lower one-sided 1 - "
        "7.5e-5 bound <= -0.75, calibration 21000-21049, validation 21100-21149: the heavy_tails control "
        "moved from the generic test point (where the gap's 1/n "
        "coefficient has a cross term of either sign that can cancel the variance term, so "
        "|gap| had slopes from -0.81 to +0.70 at mu = 3) to the manifold point of "
        "thm1.gap_rate_map_mu (gap E||W* x - V a||^2 > 0 on every draw), its own Monte Carlo "
        "of 200000 rows per n over 40 groups; mu = 3 kept, no threshold changed (the "
        "claim's decision).  Rule fixed before validation: 0 misses in 50 on each block and a "
        "normal tail of the miss margin (mean over sd) below 1e-2.  Calibration 21000-21049: "
        "the claim passed 50/50 (least margins 0.23 and 0.25, out-of-sample 0.23); heavy_tails "
        "failed as declared 50/50 (the 1/n conclusion failed on each; relative miss margin "
        "mean -0.415, sd 0.065, nearest -0.315: 6.4 sd; slope -0.49 .. -0.26 with Monte "
        "Carlo sd 0.004-0.009, the spread the instances'); the other two controls 50/50.  "
        "Validation 21100-21149 (the table's rows; seeds 21133-21149 run again after a "
        "timeout, pooled with --from-runs): the claim passed 50/50 (least margins 0.34 and "
        "0.24, out-of-sample 0.25); heavy_tails failed as declared 50/50 (relative miss "
        "margin mean -0.418, sd 0.073, nearest -0.332: 5.7 sd; slope -0.48 .. -0.22); the "
        "other two controls 50/50.  The calibration table rejects the normal model of that "
        "miss margin (Shapiro-Wilk p 1e-6), so the stated rule's tail is not a bound: the "
        "table's miss row is the counted 0.058 (0 of 50), over the 1e-2 budget.",
        "2026-12-03 (issue 31, twenty-fifth session): redesigned, the thresholds from the mathematics.  "
        "Over budget until then (0.058 by counting, through the gap's slope at the generic test point, "
        "and the out-of-sample slope's Cantelli bound 0.055).  (b2), the in-sample gap's 1/n decay, left "
        "this claim: it is sec3.finite_n_gap's statement (Theta(1/n) with its heavy_tails control) and "
        "thm1.gap_rate_map_mu's, and at the generic test point its 1/n coefficient was derived exactly "
        "(scratch, seeds 136000-136001): c1 = E_x[e^q (tr V Sigma V^T + ||V Sigma K x||^2) - 2 e^q "
        "(E x)^T V Sigma K x + 2 e^{x^T K x - q/2} (E x)^T V (x - Sigma K x)] (E = V Sigma K - W*, "
        "q = x^T K^T Sigma K x; the ratio's bias, the softmax variance and the query's own key), "
        "Gaussian integrals in closed form (Monte Carlo of the integrand: 8.038 +- 0.013 against "
        "8.054), but (n - 1) times the Monte Carlo gap at n <= 256 stayed 4-7% under c1 on seed "
        "136001 (7.45 +- 0.15 at n = 64, 10^6 rows), and per query the next order is 10-20% at n = "
        "16: where mu(K) > 1/6 the 1/n^2 coefficient involves E_x e^{3q} = infinity, so no designed "
        "test of the gap against c1 is possible on the quick grid.  (b1) became the law of the "
        "softmax averages (the docstring): a chi-square with the delta-method covariance, its level "
        "the mathematics' (OUT_OF_SAMPLE_LEVEL), the regime rule from the skewness (SKEW_REGIME), "
        "no threshold from seeds.  The whitening needs independent keys per query: on scratch seeds "
        "136010-136019 the statistic of 20 queries sharing their keys, whitened with the exact joint "
        "covariance e^{a_i^T Sigma a_j}(Sigma + Sigma a_j a_i^T Sigma), reached z = 3.9 and 5.6 at "
        "N = 10^5 (near-singular joint covariance: its small directions carry the non-normal "
        "remainder), while with keys of their own T/df was 0.88-1.12.  Per query at fixed q "
        "(scratch, Sigma = I): the mean of N Delta^T C^{-1} Delta / d within 0.03 of 1 where e^{3q} "
        "<= N/100, off by -0.1 to -0.55 with a variance up to 15 times chi-square's beyond.  "
        "skewed_keys replaces heavy_tails, whose decision left with (b2); uniform keys (lem11's control) "
        "were weighed and not taken: their tilted mean is off by -0.2 u^3 per whitened coordinate only, "
        "so at the test point's smaller mu(K) (5% of draws below 0.066) the chi-square would not see "
        "them at N = 10^5, while centered exponentials (third cumulant 2) are off by u^2.",
        Calibrated(decision=LIMIT_LAW, threshold="|z| within the two-sided NullTest critical value "
                                                 "(level 1e-4 over the tier's N)",
                   calibration_seeds="136100-136149", validation_seeds="136200-136499",
                   how="Nothing in the decision is chosen on seeds: the level is the claim budget's "
                       "third, the sizes N the tier's, the regime rule SKEW_REGIME from the skewness.  "
                       "Calibration 136100-136149 (the code before three changes below): the claim "
                       "passed 50/50, max |z| 3.02 over the 100 z (mean |z| 0.895, fit to N(0, 1) p "
                       "0.20); transposed_predictor, missing_sigma_sympy and skewed_keys failed as "
                       "declared 50/50 (least z 206 and 671 at N = 1e4, 1e5 for transposed, 137 and "
                       "492 for skewed, against the critical value 4.06).  That block's table put the "
                       "claim at 7.3e-4, through two decisions outside the law: the torch-vs-numpy "
                       "round-off close (Cantelli 2.0e-4; removed, tests/test_attention_regression.py "
                       "holds it) and the regime precondition (Cantelli 4.2e-4; now its stated tail "
                       "regime_tail, 3.5e-131); and the law was declared scale='log' (z grows as "
                       "sqrt(N) times the effect; removed after the validation, with the calibrator "
                       "change it served, 866dbfe: the claim's row is the NullTest's stated level, the "
                       "controls' rows are on the linear margins, so it decided no bound).  Validation with the final code, first 136200-136249: the claim "
                       "passed 50/50, max |z| 2.61 over 100 (mean 0.749, null fit p 0.54), bound 1.1e-4; "
                       "the controls failed as declared 50/50, least z 161 and 535 (transposed), 124 and "
                       "382 (skewed), yet their miss bounds were 0.028 and 0.025 (normal tail of the "
                       "linear miss margins, 2.7 standard deviations from 0), over the 1e-2 budget: z "
                       "grows as sqrt(N) times an effect whose size varies with the instance (Sigma, "
                       "W*), so the margins spread widely though every z was at least 30 times the "
                       "critical value 4.06, and no larger perturbation narrows that.  The block was "
                       "then extended to 136200-136499 (the table's rows; no threshold, rule or model "
                       "changed, every seed counted): the claim passed 300/300, max |z| 3.13 over 600 "
                       "(null fit p 0.51), bound 1.1e-4; every control failed as declared 300/300 "
                       "(least z 55 and 205 transposed, 92 and 319 skewed): transposed_predictor "
                       "0.0075 (normal tail), skewed_keys 0.0099 (0 misses in 300, counted), "
                       "missing_sigma_sympy 1e-5."),
    ],
    sizes=OUT_OF_SAMPLE_SIZES,
)
def test_closed_form(tc):
    r"""L(V, K) = E_{x,eps} ||W* x + eps - V E_{x'}[x' e^{x'^T K x}] / E_{x'}[e^{x'^T K x}]||^2
    = tr((V Sigma K - W*) Sigma (V Sigma K - W*)^T) + k sigma^2, x, x' ~ N(0, Sigma).

    Reference (a): sympy derives the Gaussian moment-generating identities
    E e^{a^T x} = e^{a^T Sigma a/2} and E x e^{a^T x} = Sigma a e^{a^T Sigma a/2} for d in {1, 2}
    (symbolic Cholesky factor, d = 2; d = 1 is covered by the next step), and for d = k = 1
    integrates the whole loss (ratio of integrals inside, expectation outside): the difference to
    s (v s K - w)^2 + sigma^2 must simplify to 0.  The general formula is the numpy/torch
    `population_loss` (held to the factorization form by tests/test_attention_regression.py).
    Measurement (b): the limit the closed form rests on, with its law.  At a fixed theta (V = 0.5
    Z1, K = 0.3 Z2, `setup.test_point`) of the well-conditioned instance, Q = 200 fresh queries
    x_i, each with N fresh keys of its own (N = 10^4, 10^5 on the quick tier; `out_of_sample`):
    the softmax average a_N(x_i) = sum_j x_j e^{x_j^T K x_i} / sum_j e^{x_j^T K x_i} satisfies
    sqrt(N) (a_N(x_i) - Sigma K x_i) -> N(0, C_i), C_i = e^{q_i} (Sigma + Sigma K x_i x_i^T K^T
    Sigma), q_i = x_i^T K^T Sigma K x_i (the delta method on the ratio of two means; under the
    weight e^{2 u^T x} the keys are N(2 Sigma u, Sigma): `softmax_average_covariance_limit`).  So
    T_N = sum_i N Delta_i^T C_i^{-1} Delta_i, Delta_i = a_N(x_i) - Sigma K x_i, is chi-square with
    d times the number of queries (`limit_z`), over the queries in the normal regime at N,
    e^{3 q_i} <= N / SKEW_REGIME (from the query and K, before the Monte Carlo: the skewness of the
    weighted key terms is e^{3q/2}/sqrt(N); that some query is in it at every N is a precondition
    with its proven bound, `regime_tail`).  The predictor f(x; X_N) = V a_N(x) tends to V Sigma
    K x with it: V has full column rank (A2), so f - V Sigma K x = V Delta determines Delta.
    Pass: each T_N's z (its probability integral transform to N(0, 1)) within the two-sided
    critical value of a `NullTest` at level OUT_OF_SAMPLE_LEVEL = 1e-4 over the tier's N: a wrong
    limit (even by a few percent of ||Sigma K x||), a wrong covariance or a rate other than
    N^{-1/2} moves T_N by many standard deviations (sqrt(2 df) ~ 35), so the decision has power
    far below the level's scale.
    Controls: transposed_predictor (the other orientation's limit Sigma K^T x, judged on the
    claim's averages), missing_sigma_sympy (sympy on the closed form without Sigma), skewed_keys
    (its own Monte Carlo with skewed keys of the same covariance: the tilted mean is no longer
    Sigma u; the Gaussian-keys hypothesis is decided on the keys' fourth moments, as in lem11).
    Hypotheses A1-A3 and light score tails mu(K) < 1/2 (by construction of the
    test point) are the theorem's; the limit (b) holds for any K.
    """
    decide_recipe(tc, well_conditioned)
    # the test point's K is shrunk to mu <= TEST_POINT_TAIL (`test_point`): light tails by construction
    tc.precondition.at_most("light score tails: mu(K) < 1/2", TEST_POINT_TAIL, LIGHT_TAIL)
    symbolic = tc.use(symbolic_closed_form, missing_sigma=tc.control == "missing_sigma_sympy")
    tc.conclusion.holds("sympy d=2: E exp(a^T x) identity", symbolic["mgf"] == "0",
                        detail={"difference": symbolic["mgf"]})
    tc.conclusion.holds("sympy d=2: E x exp(a^T x) identity", symbolic["first_moment"] == ["0", "0"],
                        detail={"difference": symbolic["first_moment"]})
    tc.conclusion.holds("sympy d=k=1: ratio-of-integrals loss minus closed form is 0",
                        symbolic["scalar_loss"] == "0", detail={"difference": symbolic["scalar_loss"]})

    keys_drawn = "skewed" if tc.control == "skewed_keys" else "gaussian"
    run = tc.use(out_of_sample, keys=keys_drawn)
    problem, V, K = run["problem"], run["V"], run["K"]
    record_assumptions(tc, problem)
    gaussian_precondition(tc, GAUSSIAN_KEYS, run["key_kurtosis_z"], run["key_coordinates"],
                          drawn_gaussian=keys_drawn == "gaussian")
    tc.record("mu(K)", run["mu"])

    limit = run["queries"] @ (problem.Sigma @ (K.T if tc.control == "transposed_predictor" else K)).T
    keys = run["keys"]
    tests = [limit_z(a, run["queries"], K, problem.Sigma, limit, N) for a, N in zip(run["averages"], keys)]
    z, tested, ratio = (np.array(v) for v in zip(*tests))
    tc.record("queries in the normal regime e^{3q} <= N/100, per N", tested)
    tc.record("T_N / df per N", ratio)
    tc.precondition.at_least("a query in the normal regime at every N", tested.min(), 1,
                             tail_bound=regime_tail(keys, len(run["queries"]), problem.d))
    test = NullTest(level=OUT_OF_SAMPLE_LEVEL, count=len(keys))
    tc.conclusion.at_most(LIMIT_LAW, np.abs(z), test.critical,
                          tail_bound=None if tc.control else test.tail_bound)
    errors = np.linalg.norm((run["averages"] - limit) @ V.T, axis=-1).mean(-1)
    tc.record("mean ||f(x; X_N) - V Sigma K x|| per N", errors)
    tc.curve("out-of-sample", "mean ||f(x; X_N) - V Sigma K x||", keys, errors, xscale="log", yscale="log")
    tc.curve("out-of-sample", "N^{-1/2} (shape)", keys, errors[0] * np.sqrt(keys[0] / keys), style="theory",
             xscale="log", yscale="log")


@claim(
    f"{PAPER}.sec3.finite_n_gap",
    source="Section 3 (remark after eq. (2)); Theorem 4",
    statement="At finite n the expected in-sample loss differs from the population loss "
              "(an expectation of a ratio is not a ratio of expectations), by Theta(1/n) "
              "when the softmax scores have light tails.",
    provenance="stated",
    controls={
        "heavy_tails": Control(
            "hypothesis", breaks=[GAP_THETA],
            description=f"mu(K) = {SEC3_HEAVY_TAIL} (light tails violated; its own Monte Carlo, 1000 rows per n "
                        "on each instance): E_x e^q is infinite and the gap decays only like n^{-1/(2 mu)}, so "
                        "n times the gap grows over the n grid on most instances",
            constants={"mu": SEC3_HEAVY_TAIL}),
    },
    constants={"gap_rate": GAP_RATE, "theta_rate": THETA_RATE},
    calibration=[
        "Seeds 1, 2, 3: max/min of n (E Lhat_n - L) 1.02, 1.03, 1.08 (the spec's factor 1.5).",
        "Until 2026-11-28 decided at the generic test point of thm1.closed_form: there the 1/n "
        "coefficient of the gap changes sign with the draw (see thm1.gap_rate_map_mu), so on some "
        "draws the gap is near 0 at these n and neither '10 standard errors' nor the factor 1.5 holds "
        "(calibration block 1000-1049: 1 failure in 50, factor 2.29; ten unseen seeds: 8.1 s.e., "
        "factor 2.6).  Redesigned (review 2026-11-28): at the manifold point with mu(K) = 1/4 "
        "(inside the region), where the gap E||W* x - V a||^2 is positive with a 1/n coefficient "
        "bounded away from 0; the 'not equal' decision is a one-sided t test over the 10 replicate "
        "groups at level 1e-4 (the claim's false-failure budget), no tuned count of standard errors.  "
        "Controls sample_average (degenerate at a minimizer: the population predictor's loss is 0 "
        "on every sample) and faster_rate (a re-judgment of the claim's numbers) replaced by heavy_tails.",
        "History (one instance a seed, 5 10^4 rows per n): calibration block 1000-1049: 0 failures in 50; "
        "t statistic margins mean 11.9, sd 3.1; factor-1.5 margins mean 0.25, least 0.095; heavy_tails "
        "failed as declared on 50 of 50.  Validation 2000-2049: 0 failures in 50; t margins mean 12.2, "
        "least 6.7; factor margins least 0.209.  Row 73000-73299: 0 failures of 300, but both margins' "
        "normal models rejected (t margins 12.0 +- 3.8, least 5.8; factor margins 0.25 +- 0.038, least "
        "0.088), so counted: 9.9e-3, over the budget.",
        "Redesign (2026-12-01, issue 31): both statements over instances (the recipe of "
        "thm2.statistical_floor).  Neither is an inequality on every instance with a stated tail: the "
        "t test's false failure is its type II error at the instance's signal-to-noise ratio (its level "
        "bounds only the other side), and the factor 1.5 is the spec's criterion on a pre-asymptotic "
        "n grid, met by the instance's O(1/n^2) term plus Monte Carlo noise at a rate.  Each case draws "
        "8 independent instances side by side (`manifold_gap_instances`, the first the seed's own draw), "
        "at the cost of the one instance before (3000 rows per n each instead of 5 10^4; the control "
        "1000), decides both statements on each and accepts each by the exact binomial test of "
        "P[holds] >= GAP_RATE (the t test) or THETA_RATE (the factor) at level 1e-4.  The level of the "
        "t test, the factor 1.5 and the n grid are unchanged.",
        Calibrated(
            decision=GAP_THETA, threshold="THETA_RATE = 0.9 at level 1e-4 over 8 instances (the spec's factor 1.5 "
                                          "on the grid n = 16, 32, 64)",
            calibration_seeds="127000-127049", validation_seeds="127100-127149",
            how="the rule (99.9% Clopper-Pearson lower bound of the per-instance rate, rounded down to 0.05) fixed "
                "before the block ran, tried at 0.95: on the calibration block 392 of 400 instances met the factor "
                "(largest 1.633), lower bound 0.948 -> 0.9; every case passed; heavy_tails failed as declared on "
                "50 of 50 (6 of its 400 instances below the factor, least 1.433).  Validation (the table's row): "
                "392 of 400 (largest 1.822), every case passed, claim bound 5.7e-8 (pooled trials); heavy_tails "
                "failed as declared on 50 of 50 (7 of 400 instances below the factor, least 1.324), miss bound "
                "1.7e-3 (pooled trials)"),
        Calibrated(
            decision=GAP_POSITIVE, threshold="GAP_RATE = 0.95 at level 1e-4 over 8 instances (the t test's level "
                                             "1e-4 on each, t_9 critical value 6.01)",
            calibration_seeds="127000-127049", validation_seeds="127100-127149",
            how="the same rule: 400 of 400 instances rejected gap = 0 on the calibration block (least t 8.75, 1.46 "
                "critical values), lower bound 0.983 -> 0.95; validation 400 of 400 (least t 7.73, 1.29 critical "
                "values), bound 1.3e-9 (pooled trials)"),
    ],
    sizes={"quick": {"heavy_tail_rows": 1000}, "full": {"heavy_tail_rows": 12500}},
)
def test_finite_n_gap(tc):
    r"""E Lhat_n - L at the manifold point of `thm1.gap_rate_map_mu` with mu(K) = SEC3_TAIL =
    1/4, on 8 independent draws of the well-conditioned recipe side by side (shared run
    `manifold_gap_instances`: W* of each rescaled to mu(K) = 1/4, the noise integrated out
    exactly, 10 independent replicate groups per n and instance, n = 16, 32, 64 on the quick
    tier, 3000 covariate rows per n and instance).  There L = k sigma^2 and the gap is
    E||W* x_i - V a_i||^2 >= 0.

    Per instance: (1) the gap at the smallest n is not 0: the one-sided Student-t statistic of
    the replicate group means is at least t_{groups-1}(1 - 1e-4); (2) Theta(1/n): n (E Lhat_n -
    L) (mean over the groups) varies by less than a factor 1.5 across the n grid (the spec's
    criterion).  Neither holds on every instance with a stated probability: (1) fails by the t
    test's type II error (its power at the instance's signal-to-noise ratio, not its level), (2)
    where the instance's O(1/n^2) term and the Monte Carlo noise reach the factor 1.5 at these
    pre-asymptotic n.  So each is a rate over instances: pass when the exact binomial test of
    P[holds] >= p over the instances does not reject at level 1e-4, p = `GAP_RATE` = 0.95 for (1)
    (with 8 instances: at least 4 hold) and `THETA_RATE` = 0.9 for (2) (at least 3 hold).  A
    code error that makes the gap 0 fails (1) on every instance (the t test then holds with
    probability 1e-4 each), a gap decaying slower than 1/n fails (2) on most.
    Hypothesis: light score tails, mu(K) < 1/2 (precondition, decided on the configured tail
    before the run; the run's mu(K) held to it on every instance); the control moves mu(K) to
    SEC3_HEAVY_TAIL = 2 (its own Monte Carlo, `heavy_tail_rows` rows per n and instance).
    """
    heavy = tc.control == "heavy_tails"
    tail = SEC3_HEAVY_TAIL if heavy else SEC3_TAIL
    decide_recipe(tc, well_conditioned, a3=False)      # W* rescaled by the run: A1 and k >= d are the recipe's
    # the run rescales W* so that mu(K) is the configured tail: decided on it before the run, and
    # the run's mu held to it (round-off)
    tc.precondition.at_most("light score tails: mu(K) < 1/2", tail, LIGHT_TAIL)
    gap = tc.use(manifold_gap_instances, tail=tail, **({"rows": tc.sizes["heavy_tail_rows"]} if heavy else {}))
    record_assumptions(tc, gap["problems"])
    tc.precondition.close("mu(K) at the manifold point equals the configured value", gap["mu"],
                          np.full(len(gap["mu"]), tail), rtol=tc.tol("accumulated"))
    groups = gap["losses"]                                  # (instances, n, groups): E Lhat_n - L per group
    first = groups[:, 0]
    t_stat = first.mean(1) / (first.std(1, ddof=1) / np.sqrt(first.shape[1]))
    tc.record("E Lhat_n - L per instance (mean over groups)", groups.mean(2))
    per_instance(tc, GAP_POSITIVE, t_stat, t_stat >= scipy.stats.t.ppf(1 - GAP_ALPHA, first.shape[1] - 1),
                 p=GAP_RATE, alpha=SEC3_ALPHA, low_power=SEC3_LOW_POWER)
    scaled = gap["n"] * groups.mean(2)
    tc.record("n (E Lhat_n - L) per instance", scaled)
    factor = scaled.max(1) / scaled.min(1)
    per_instance(tc, GAP_THETA, factor, factor < 1.5, p=THETA_RATE, alpha=SEC3_ALPHA, low_power=SEC3_LOW_POWER)
    for j, row in enumerate(scaled):
        tc.curve("n gap", f"n (E Lhat_n - L), instance {j}", gap["n"], row, xscale="log")
