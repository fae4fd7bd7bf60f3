"""glls24: the diffusion case study (Sec. 6): the denoising score-matching identity and score
estimation by GD-trained softmax networks in the NTK regime with early stopping (Theorem 6.6)."""
import numpy as np
import torch

from claims.glls24.diffusion import (
    CLAIM_G1_SIZES,
    RISK_TIMES,
    NETWORK_TIMES,
    claim_g1_fits,
    forward_process_moments,
    kernel_score_risks,
    limit_kernel_ridge,
    linearity_roundoff_bound,
    network_score_risks,
    risk,
    score_training_sets,
    unbiased_label_z,
)
from claims.glls24.setup import decide_pairing, denoising_samples
from theorycheck import Calibrated, Control, claim
from theorycheck.models import ntk_gram
from theorycheck.solvers import kernel_gd_predictions
from theorycheck.patterns import per_instance
from theorycheck.tails import NullTest, TailBound

DSM_LEVEL = 1e-4
"""The level of each of the DSM identity's two z-tests against N(0, 1) (their union within the
claim's 3e-4 budget): a false alarm on a fresh seed has probability at most this per decision."""

FORWARD_RATE = 2.0
"""The DSM control draws its samples from the forward process with this rate g (the reference: g = 1)."""

OVERFIT_FACTOR = {"quick": 1.55, "full": 1.1}
"""(i), per tier: the risk at the last time is at least this factor above the best risk over T
(calibrated at each tier's sizes: the claim's `Calibrated` records).  The factor depends on the
tier's n: the early-stopping time grows with n while the last time stays at 1e12, the float64
horizon of the largest n (below), so less noise is fitted between them at a larger n."""

RISK_FRACTION = 0.1
"""(iii): the best risk at the largest n is at most this fraction of E f*^2 (the risk of f = 0)."""

COUPLING_SLOPE = -2.0
"""Claim G.1 (iii): the coupling term is the square of Theorem F.2's O(1/m) gap."""

UNIT_BALL_EXACT = TailBound(0.0, (
    "diffusion_features maps every sample into the open unit ball: sqrt 3 z = (x/sqrt(4 + x^2), (t - T_0)/(T - T_0), "
    "1) with |x/sqrt(4 + x^2)| < 1 and (t - T_0)/(T - T_0) in [0, 1], so ||z||^2 < 1 on every draw in exact "
    "arithmetic; rounded, each coordinate of sqrt 3 z is still at most 1 in magnitude (1 itself for |x| >> 1), so "
    "the computed norm exceeds 1 by at most its own rounding, which the decision's margin tc.tol('exact') covers"))
"""Why Claim G.1's precondition on the features cannot fail but through a wrong feature map."""

CONTRACTION_EXACT = TailBound(0.0, (
    "kernel GD from 0 maps labels v to (I - (I - eta m H)^T) v at the training points, and eta = 1/(m "
    "lambda_max(H(0))) puts every eigenvalue of I - (I - eta m H)^T in [0, 1]: mean_i (f_K - f_K~)(z_i)^2 <= "
    "mean_i v_i^2 with v = f* - f_H on every draw; the computed sides differ from the exact ones by kernel GD's "
    "round-off (decision (ii)'s bound), far below the slack a v with components in H's damped directions keeps"))
"""Why Claim G.1's label-mismatch inequality (iv) cannot fail but through wrong code."""

NETWORK_TOLERANCE = 1e-3
"""(iv): |risk(network) - risk(kernel GD)| at most this fraction of E f*^2."""
NETWORK_LOW_POWER = ("GD on the network itself is the claim's main cost (20 sets, 1000 steps): at level 0.05 the "
                     "test over the 20 sets rejects at 15 or fewer (power 0.8 at a rate near 0.69); each set's "
                     "gap is recorded")


@claim("glls24.sec6.dsm_identity", source="Sec. 6.1, Eqs. (3)-(6)",
       statement="For dx = -g x dt + sqrt(2g) dB the label -xi/sigma(t) has conditional mean grad log "
                 "p_t(x(t)), so the denoising loss (6) equals the score-matching loss (5) plus a "
                 "constant independent of the estimator.",
       provenance="derived",
       calibration=["the two z families are NullTests against N(0, 1) at level DSM_LEVEL = 1e-4 each (critical "
                    "values from the level, none from seeds; was 5 standard errors, modelled: log-normal 1.2e-2 and "
                    "Cantelli 4.4e-2); the three estimators' z-scores now on disjoint thirds of the sample (they "
                    "shared it, and s_hat = 0 and f*/2 gave the same z). Block 75000-75049 (50 seeds, quick): no "
                    "failure, Kolmogorov-Smirnov of the pooled |z| against the folded normal p 0.59 (150) and 0.35 "
                    "(50), largest |z| 2.5; claim bound 2.0e-4, the three controls 0"],
       controls={
           "wrong_sign_label": Control(
               "reference", breaks=["denoising minus score-matching loss independent of the estimator"],
               description="the label +xi/sigma(t): its conditional mean is -grad log p_t"),
           "unscaled_label": Control(
               "reference", breaks=["denoising minus score-matching loss independent of the estimator"],
               description="the label -xi sigma(t): its conditional mean is sigma(t)^2 grad log p_t"),
           "other_forward_rate": Control(
               "dynamics", breaks=["denoising minus score-matching loss independent of the estimator"],
               description=f"samples of their own from the forward process with g = {FORWARD_RATE:g} "
                           f"while the score reference is that of g = 1: the label's conditional mean is "
                           f"the other process's score", constants={"g": FORWARD_RATE}),
       },
       sizes={"quick": {"draws": 200_000, "path_draws": 20_000},
              "full": {"draws": 10_000_000, "path_draws": 1_000_000}})
def test_dsm_identity(tc):
    r"""Forward process with ``g = 1``: ``x(t) = alpha x(0) + s xi``, ``alpha = e^{-t}``, ``s^2 = 1 -
    e^{-2t}``; p_0 the two-component mixture of the spec (``mu = +-0.5``, std 0.15); reference:
    the mixture score in closed form (`gaussian_mixture_score`).  For estimators ``s_hat`` in {0,
    f*/2, -x} (and f* itself), ``D(s_hat) = E(s_hat - y)^2 - E(s_hat - f*)^2`` must not depend on
    s_hat: ``D(s_hat) - D(f*) = 2 E[(f* - s_hat)(y - f*)]``.  Its z-score (the Monte Carlo mean of
    ``(y - f*)(f* - s_hat)`` over its standard error, `unbiased_label_z`) is N(0, 1) up to the CLT
    when the label's conditional mean is the score (``t ~ Unif[0.2, 1]``, 2e5 samples split into
    one disjoint third per estimator, so the three z-scores are independent).  Pass: the three
    |z| within the two-sided critical value of N(0, 1) at family level `DSM_LEVEL` (Bonferroni,
    `theorycheck.tails.NullTest`: about 4.15), and the z-score of ``E[(y - f*) f*]`` on the whole
    sample within the two-sided critical value at level `DSM_LEVEL` (about 3.89).  The closed-form
    marginal itself is checked against an Euler-Maruyama simulation of the SDE (moments at t = 1
    within 5 SE plus the O(dt) bias).  The controls use a label with the wrong conditional mean:
    samples drawn from the forward process with ``g = FORWARD_RATE`` against the score of ``g = 1``
    (a draw of its own: the identity needs the label and the score of one process), and the label
    formula's sign or scale changed (discrimination checks)."""
    if tc.control == "other_forward_rate":
        x0, x, t, label, score = denoising_samples(tc.rng("samples", "rate", FORWARD_RATE), tc.sizes["draws"],
                                                   rate=FORWARD_RATE)
    else:
        x0, x, t, label, score = denoising_samples(tc.rng("samples"), tc.sizes["draws"])
    s = np.sqrt(-np.expm1(-2 * t))[:, None]
    if tc.control == "wrong_sign_label":
        label = -label
    if tc.control == "unscaled_label":
        label = label * s**2
    tc.precondition.at_most("data in the unit ball up to a 1e-2 tail (Assumption 6.1)",
                            float(np.mean(np.abs(x0) > 1)), 1e-2)
    estimators = {"zero": np.zeros_like(score), "half_score": score / 2, "minus_x": -x}
    parts = np.array_split(np.arange(len(label)), len(estimators))   # one disjoint sample per estimator
    z = {name: unbiased_label_z(label[part], score[part], score[part] - est[part])
         for part, (name, est) in zip(parts, estimators.items())}
    differences = {name: float(np.mean((est - label) ** 2 - (est - score) ** 2) - np.mean((score - label) ** 2))
                   for name, est in estimators.items()}
    tc.record("D(s_hat) - D(f*)", differences)
    tc.record("z_scores", z)
    tc.record("D(f*) (the constant)", float(np.mean((score - label) ** 2)))
    family = NullTest(level=DSM_LEVEL, count=len(z))
    tc.conclusion.at_most("denoising minus score-matching loss independent of the estimator",
                          np.abs(list(z.values())), family.critical,
                          tail_bound=None if tc.control else family.tail_bound)
    single = NullTest(level=DSM_LEVEL, count=1)
    tc.conclusion.at_most("label noise uncorrelated with the score", abs(unbiased_label_z(label, score, score)),
                          single.critical, tail_bound=None if tc.control else single.tail_bound)
    simulated, predicted, tolerance = forward_process_moments(tc.rng("sde"), tc.sizes["path_draws"])
    tc.record("E[x(1) x(0)], E[x(1)^2]: Euler-Maruyama vs closed form", [simulated, predicted])
    tc.conclusion.at_most("closed-form marginal matches the forward SDE", np.abs(simulated - predicted), tolerance)


@claim("glls24.thm6_6.score_estimation", source="Theorem 6.6 = G.2; Assumptions 6.1-6.5",
       statement="A GD-trained softmax network in the NTK regime, stopped early, learns the score: its "
                 "risk is bounded by coupling + label mismatch + an early-stopping term that "
                 "vanishes as n grows + approximation; without early stopping noisy labels are fitted.",
       provenance="inferred",
       constants={"overfit_factor_quick": OVERFIT_FACTOR["quick"], "overfit_factor_full": OVERFIT_FACTOR["full"],
                  "risk_fraction": RISK_FRACTION,
                  "network_tolerance": NETWORK_TOLERANCE, "rate": 0.9, "family_level": 0.05},
       calibration=[
           Calibrated(
               decision="early stopping beats training to the end", threshold=OVERFIT_FACTOR["quick"],
               calibration_seeds="5000-5009", validation_seeds="6000-6009",
               how="the largest factor F on the 0.05 grid at which the 95% Clopper-Pearson lower bound of "
                   "P[final risk >= F x best risk] over the calibration block's pooled sets (10 seeds x 80 "
                   "sets at n = 128, 256) reaches q* = 0.9456, the true rate at which the exact test of "
                   "P >= 0.9 over 80 sets rejects with probability 1e-4 (it rejects at 66 or fewer); per "
                   "seed 75-80 of 80 sets reached 1.55 on that block. It replaces 1.1, set after seed 2 of "
                   "an earlier 10-set design gave 1.16 (the spec's value was 1.5). Clean labels give "
                   "exactly 1 (the minimum at the last time), so the control is untouched. Validation block: "
                   "every claim run passed (77-80 of 80 sets at 1.55 per seed) and both controls failed "
                   "as declared on every seed"),
           Calibrated(
               decision="early stopping beats training to the end", threshold=OVERFIT_FACTOR["full"],
               calibration_seeds="63000-63009", validation_seeds="64000-64009", tier="full",
               how="the quick tier's rule at the full tier's sizes (n = 512, 2048; 40 sets each): the largest "
                   "factor F on the 0.05 grid at which the 95% Clopper-Pearson lower bound of P[final risk >= "
                   "F x best risk] over the calibration block's pooled sets (10 seeds x 80) reaches q* = "
                   "0.9456; the risks from the claim's own functions (score_training_sets, "
                   "kernel_score_risks) at full sizes, the network part (iv) not run. 777 of the 800 pooled sets reached 1.1 (lower bound 0.960; 1.15: 756, 0.930); per seed the least ratio at n = 2048 was 1.00-1.15. It replaces "
                   "the quick tier's 1.55, which the full tier failed at 9295b86 (a factor calibrated at n = "
                   "128, 256 carried to n = 2048). Validation block: every seed passed, 75-80 of 80 sets at 1.1 (the test rejects at 66 or fewer). Clean labels give exactly 1 "
                   "at the full tier too (seed 0, 9295b86), below any F > 1"),
           "the last time 1e12 replaced 1e8 after the full tier's n = 2048 still had its best risk at "
           "1e8: chosen on full-tier runs (not held out)",
           "the decrease test (ii) compared one training set per n until the 20-seed sweep (failed on "
           "seeds 5, 10, 16: single sets spread by a factor 4); re-cast on many sets",
           "'training labels unbiased for the score' is a NullTest against N(0, 1) at level DSM_LEVEL = 1e-4 over "
           "the three n (critical 4.15 from the level; was 5, log-normal 9.4e-3 on 67000-67049). Block "
           "75000-75049 (50 seeds, quick): no failure, Kolmogorov-Smirnov of the 150 pooled |z| against the "
           "folded normal p 0.74; the claim stays out of budget (0.055) through 'best risk decreases with n' "
           "(log-normal 5.5e-2), its controls counted (0.058)",
           "the quick tier moved to ns = 32, 128, 256 with 40 sets per n and 1000 test points so that "
           "the binomials (i) and (iii) reach power 0.8 within the paper's time budget; the thresholds "
           "were kept and checked on seeds 1-10, then seed 0 (network tolerance: the review's 1e-3, "
           "taken relative to E f*^2)",
           Calibrated(
               decision="best risk decreases with n",
               threshold="Welch p <= 0.025 per pair (kept), decided as z = Phi^{-1}(1 - p) >= 1.96; 80 training "
                         "sets per n on the quick tier (was 40)",
               calibration_seeds="130600-130615", validation_seeds="144000-144299",
               how="the count of sets from the calibration block (16 seeds, the kernel risks alone by a script): "
                   "the second pair's Welch t was -5.6 +- 1.0 at 40 sets, 3.4 sd from the critical value, a miss "
                   "rate of order 5e-4 at the test's own power; t grows like the square root of the sets, so 80. "
                   "The p-value's normal quantile as the margin's scale was fixed before the validation block "
                   "(the Welch statistic is about normal over seeds, the p-value spans decades). The same block "
                   "made (iv), every set within the tolerance, a binomial over the 20 network sets at the "
                   "theorem's rate 0.9 (as (i) and (iii); the sets are independent), chosen from the statement, "
                   "not from margins. Validation 144000-144299 (300 seeds, the row): no failure; the second "
                   "pair's z 7.05 +- 0.87 (least 4.76; first pair 12.0 +- 0.7), normal (Shapiro-Wilk p 0.24), "
                   "7.7e-8; (iv) 6000 of 6000 sets within the tolerance (largest gap 1.8e-4 E f*^2 against "
                   "1e-3), pooled trials 4.8e-13; claim 1.1e-4 (the stated DSM_LEVEL 1e-4 its main term); "
                   "clean_labels and shuffled_labels failed as declared on 300 of 300 (0.0099 each, counted: "
                   "the violated hypothesis and the failing decision have no spread)"),
       ],
       controls={
           "clean_labels": Control(
               "hypothesis", breaks=["early stopping beats training to the end"],
               description="train on the true scores instead of the denoising labels (no label "
                           "noise): the risk only decreases with T, no early stopping needed"),
           "shuffled_labels": Control(
               "hypothesis", breaks=["best risk decreases with n", "best risk at the largest n below 0.1 E f*^2"],
               description="labels permuted across samples: E[y | z] = f* fails (the DSM identity), "
                           "the risk stays near E f*^2"),
       },
       sizes={"quick": {"ns": [32, 128, 256], "width": 256, "n_test": 1000, "training_sets": 80,
                        "network_sets": 20},
              "full": {"ns": [128, 512, 2048], "width": 4096, "n_test": 5000, "training_sets": 40,
                       "network_sets": 20}})
def test_score_estimation(tc):
    r"""Shape of Theorem 6.6 (its constants, A(R_H) and Gamma(delta) are lost; provenance inferred).
    Instance of the spec (Sec. 4): d = 1, the mixture p_0, g = 1, ``[T_0, T] = [0.2, 1]``, features
    ``z = (x/sqrt(4 + x^2), (t - T_0)/(T - T_0), 1)/sqrt 3`` (`diffusion_features`), a softmax network
    of width m with sigma = 1 and symmetric initialization, trained by GD with ``eta = 1/(m
    lambda_max(H(0)))``.  By Theorem F.2 (`glls24.thmF_2.nn_ntk_equivalence`) the network follows
    kernel GD with its NTK H(0) and function step ``eta m``; the risk ``E(f(T) - f*)^2`` of that
    predictor is computed in closed form in T (one eigendecomposition per set,
    `kernel_score_risks`) for T = 10, ..., 1e12 and by Monte Carlo on ``n_test`` test points,
    for ``training_sets`` independent training sets (and initializations) per n.  Here
    ``lambda_min(H(0))`` is at round-off level: Theorem 4.2's hypothesis fails numerically and the
    guarantee rests on early stopping (Assumption 6.5).  The theorem holds with probability >= 1 -
    delta, delta < 0.1, over the training data, so the per-set statements are binomial with null
    rate 0.9 (exact test at level 0.05, power recorded).  Pass: (i) with noisy labels, at every n
    but the smallest, the risk at T = 1e12 is >= `OVERFIT_FACTOR` (of the tier) x the best risk
    over T (an interior minimum: early stopping matters) on a fraction >= 0.9 of the sets.  T =
    1e12 is the float64 horizon at the full tier's largest n: kernel GD with function step ``1 /
    lambda_max`` has fitted the eigendirections with ``mu / lambda_max >= 1/T``, and eigenvalues
    below about ``n u lambda_max`` (2.3e-13 at n = 2048) are round-off, so a later time would fit
    round-off, not noise; (ii) the best risk decreases with n:
    for each adjacent pair of n, a one-sided Welch t-test of ``log best risk`` (smaller at the
    larger n) has p-value <= 0.025 (Bonferroni over the two pairs at family level 0.05), decided
    on the p-value's normal quantile ``z = Phi^{-1}(1 - p) >= Phi^{-1}(1 - 0.025)`` (the same
    decision; z is about the Welch statistic, whose spread over seeds is about normal, where the
    p-value spans decades); (iii) at
    the largest n the best risk is <= 0.1 E f*^2 on a fraction >= 0.9 of the sets; (iv) the trained
    network itself (GD on W, ``network_sets`` sets at the middle n, T = 10, 100, 1000) has a test
    risk within ``1e-3 E f*^2`` of kernel GD's at the same T, on a fraction >= 0.9 of the sets (the
    three T of a set together; the theorem's probability over the data, as (i) and (iii)): the theorem's predictor is
    the network, and kernel GD stands for it in (i)-(iii) only within that tolerance (a tolerance
    far below the risks compared, so that the ordering statements carry over).  (iv) covers the
    early times only: the sets' early-stopping times (argmin over T of the risk, recorded per n)
    lie mostly beyond T = 1000 at the middle n, and GD on the network that long does not fit the quick
    tier's budget, so the network is not checked at each set's early-stopping time (a gap, said
    here).  Preconditions: the
    training labels are unbiased for the score (per n, the z-score of E[(y - f*) f*] pooled over
    the ``training_sets`` x n samples, N(0, 1) by the central limit theorem and independent across
    n, within the two-sided critical value of N(0, 1) at family level `DSM_LEVEL` over the three n,
    `theorycheck.tails.NullTest`; per set, over n samples, the heavy-tailed product made the z far
    from normal) and, per set, are the denoising labels of Eq. (6), which carry noise (``E(y -
    f*)^2 >= 1e-3 E f*^2``; clean labels have 0): Theorem 6.6 is about the objective (6), and its
    early-stopping term, which (i) tests, comes from that noise."""
    from scipy import stats

    s = tc.sizes
    labels = {"clean_labels": "clean", "shuffled_labels": "shuffled"}.get(tc.control, "noisy")
    best, overfit, z, noise = [], [], [], []
    energy = None
    for n in s["ns"]:
        data = score_training_sets(tc, n, s["width"], s["training_sets"], labels)
        risks, z_n, noise_n, energy = kernel_score_risks(tc, data)
        noise.append(noise_n)
        best.append(risks.min(1))
        tc.record(f"n={n}: early-stopping time argmin_T risk per set", np.asarray(RISK_TIMES)[risks.argmin(1)])
        overfit.append(risks[:, -1] / risks.min(1))
        z.append(z_n)
        tc.curve("score risk vs early-stopping time", f"n={n} (median over sets)", RISK_TIMES,
                 np.median(risks, axis=0), xscale="log", yscale="log")
        if n == s["ns"][1] and tc.control is None:
            network = network_score_risks(tc, data, s["network_sets"])
            kernel = risks[: s["network_sets"], [RISK_TIMES.index(T) for T in NETWORK_TIMES]]
    decrease = [stats.ttest_ind(np.log(b), np.log(a), equal_var=False, alternative="less").pvalue
                for a, b in zip(best, best[1:])]
    tc.record("median_best_risk", dict(zip(map(str, s["ns"]), map(float, np.median(best, axis=1)))))
    tc.record("min_final_over_best_risk", [float(o.min()) for o in overfit])
    tc.record("final over best risk per set, n > smallest", np.ravel(overfit[1:]))
    tc.record("decrease_p_values", decrease)
    tc.record("E f*^2", energy)
    tc.record("max label noise E(y - f*)^2 / E f*^2", float(np.max(noise) / energy))
    unbiased = NullTest(level=DSM_LEVEL, count=len(z))
    tc.precondition.at_most("training labels unbiased for the score", np.abs(np.ravel(z)), unbiased.critical,
                            tail_bound=None if tc.control else unbiased.tail_bound)
    tc.precondition.at_least("training labels are denoising labels (noise E(y - f*)^2 > 0)",
                             np.ravel(noise) / energy, 1e-3)
    tc.conclusion.binomial("early stopping beats training to the end",
                           np.ravel(overfit[1:]) >= OVERFIT_FACTOR[tc.tier], p=0.9)
    tc.conclusion.at_least("best risk decreases with n", stats.norm.isf(decrease), stats.norm.isf(0.05 / len(decrease)))
    tc.conclusion.binomial("best risk at the largest n below 0.1 E f*^2", best[-1] <= RISK_FRACTION * energy,
                           p=0.9)
    if tc.control is None:
        tc.record("network and kernel GD risks at T = 10, 100, 1000", {"network": network, "kernel": kernel})
        gap = np.abs(network - kernel).max(1) / energy
        per_instance(tc, "trained network's risk within 1e-3 E f*^2 of kernel GD's", gap, gap <= NETWORK_TOLERANCE,
                     p=0.9, low_power=NETWORK_LOW_POWER)


@claim("glls24.claimG_1.loss_decomposition", source="Claim G.1",
       statement="E(f_W - f*) <= 4 [E(f_W - f_{K,gamma}) + E(f_{K,gamma} - f_{K,gamma~}) + E(f_{K,gamma~} - f_H) "
                 "+ E(f_H - f*)] (coupling, label mismatch, early stopping, approximation); the label "
                 "mismatch depends on the training data only through f* - f_H.",
       provenance="derived",
       constants={"coupling_slope": COUPLING_SLOPE},
       calibration=["the coupling slope bound -2 is Theorem F.2's O(1/m) gap squared, not fitted; with one "
                    "initialization per width the fitted slope was -1.85 on seed 10 (steeper on seeds 0-9), "
                    "so the term is averaged over inits initializations per width; re-checked on seeds "
                    "1-10 and seed 0",
                    "(ii) was judged against tc.tol('conditioned') = 1.8e-12, which the full tier exceeded "
                    "(n = 2048: 1.1e-12 to 3.9e-12); it is now the round-off bound linearity_roundoff_bound "
                    "derived from the computation, not from the errors seen; one full-size evaluation of (ii) "
                    "alone (n = 2048, m = 4096, T = 1e4, 2000 auxiliary points, seed 3000): error 3.2e-12, "
                    "bound 1.9e-7 (a worst-case bound; cond(H) there is ~1e15, so cond(H) n u would bound nothing)",
                    "Unseen sweeps of 2026-12-04 (issue 31; nothing changed): the coupling slope failed once in "
                    "each, -1.89 on seed 314596304 (89f5efb) and -1.79 on seed 125487516 (7eb05d8), 2 of 40 "
                    "seeds (rate 0.05, one-sided 95% Clopper-Pearson upper bound 0.15): the slope's tail is "
                    "heavier than the row's model (0.0078 on 65000-65049) says; redesigned in the record below",
                    Calibrated(
                        decision="coupling term decays at least like m^-2",
                        threshold="slope -2 (Theorem F.2, not fitted); the sizes: widths 64, 256, 1024, 4096 and 4 "
                                  "instances, each its own training set and initialization",
                        calibration_seeds="149100-149149", validation_seeds="149200-149299",
                        how="issue 31, 2026-12-04: a scratch measurement (60 data sets x 3 initializations at the 7 "
                            "widths 64-4096, numpy streams 149000-149079, none of the claim's) split one instance's "
                            "slope variance over 4 widths into its initialization's 0.15 and its data set's about "
                            "0.04, and showed the log-linear decay unchanged down to m = 64; a least-squares slope "
                            "over three widths equally spaced in log m reads the two ends only. So: 4 widths from "
                            "64 (spread 9.6 against 3.8 in sum of squared deviations of ln m) and 4 instances with "
                            "their own data (the mean averages both parts), predicted 5.5 sd from -2; the "
                            "by-construction decisions (unit ball, contraction) state their zero bounds. "
                            "Calibration 149100-149149: 50/50, slope -3.20 +- 0.19 (at most -2.65), bound 1.2e-5; "
                            "controls 50/50. Validation 149200-149299 (the row): 100/100, slope -3.15 +- 0.25 (at "
                            "most -2.36), margin 4.6 sd, normal model accepted (Shapiro-Wilk p 0.16), bound 8.4e-5; "
                            "limit_kernel_gd -0.72 +- 0.14 (at most -0.40) and independent_init +1.03 +- 0.12, "
                            "100/100 each, miss bounds 2e-14 and 4e-96")],
       controls={"limit_kernel_gd": Control(
           "reference", breaks=["coupling term decays at least like m^-2"],
           description="f_{K,gamma} computed by kernel GD with the infinite-width kernel K_sigma in place "
                       "of the network's own NTK H(0): the network then differs from it by the "
                       "finite-width fluctuation of the kernel, O(m^-1/2), so the coupling term decays "
                       "like m^-1, not m^-2"),
                 "independent_init": Control(
           "hypothesis", breaks=["coupling term decays at least like m^-2"],
           description="i.i.d. (unpaired) initialization at every width: f_W(0) != 0 = f_{K,gamma}(0), "
                       "so the network and kernel GD differ by the initial outputs, which do not "
                       "vanish as m grows")},
       sizes=CLAIM_G1_SIZES)
def test_loss_decomposition(tc):
    r"""Claim G.1 on the diffusion instance (spec Sec. 4): ``f_W`` the softmax network (width m,
    sigma = 1, symmetric init) after ``steps`` GD steps with ``eta = 1/(m lambda_max(H(0)))`` on n
    noisy denoising samples; ``f_{K,gamma}`` kernel GD with its NTK H(0) and step ``eta m`` on the
    same data for the same T; ``f_H`` kernel ridge regression of f* with the limit kernel K_sigma
    (`softmax_limit_kernel`, sigma = 1) on ``auxiliary`` clean points, ridge 1e-3 (an RKHS
    function); ``f_{K,gamma~}`` kernel GD on the pseudo labels ``y~_i = f_H(z_i) + (y_i - f*(z_i))``.
    Risks E by Monte Carlo on fresh test points (shared), at each width of ``widths`` and for
    ``instances`` independent instances per width, each with its own n training samples (the same
    at every width) and its own initialization.  Def. 3.7's pairing is a property of
    the constructor, decided on its probe at every width before any draw (`decide_pairing`); the
    drawn symmetric weights are checked exactly (`initialization`).
    Pass: (i) the inequality at every width (Cauchy-Schwarz: ``(a+b+c+d)^2 <= 4(a^2+b^2+c^2+d^2)``
    pointwise, so it cannot fail for parts that sum to ``f_W - f*``; it is recorded as the claim's
    statement, and the evidence is in (ii)-(iv)); (ii) ``f_{K,gamma} - f_{K,gamma~}`` equals kernel
    GD on the labels ``f*(z_i) - f_H(z_i)`` at every width (kernel GD is linear in the labels, the
    shared noise cancels) up to round-off, relative error at most `linearity_roundoff_bound` (the
    computed map is one fixed matrix, so only the products with the labels round);
    (iii) each term against an expectation computed apart from the decomposition: the coupling
    term ``E(f_W - f_{K,gamma})^2`` is the square of Theorem F.2's gap, which is ``O(1/m)``, so the
    log-log slope of its geometric mean over the instances against m is at most -2 (the mean over
    instances: a single instance's term fluctuates by factors of several, and the slope with it,
    through its initialization and, less, its data); (iv) the label mismatch at an instance's
    training points is at most the approximation error there, ``mean_i (f_K - f_K~)(z_i)^2 <= mean_i (f* -
    f_H)(z_i)^2``: kernel GD from 0 with ``0 <= eta m H <= I`` maps labels v to ``(I - (I - eta m
    H)^T) v``, a contraction.  (i), (ii) and (iv) hold by construction; the evidence is (iii).  (iv)
    and the features' unit-ball precondition state that as a zero tail bound (`CONTRACTION_EXACT`,
    `UNIT_BALL_EXACT`): the calibration does not model their margins as chance.
    Controls: the columns drawn i.i.d. (the symmetric pairing fails, ``f_W(0)`` no longer
    vanishes, and the coupling term stops decaying); ``f_{K,gamma}`` by kernel GD on the limit
    kernel ``K_sigma`` instead of H(0) (a recomputation on another kernel: the coupling term keeps
    the kernel's O(m^-1/2) fluctuation, slope about -1)."""
    from scipy.stats import gmean

    from theorycheck.solvers import softmax_limit_kernel

    s = tc.sizes
    init = "independent" if tc.control == "independent_init" else "symmetric"
    decide_pairing(tc, [(3, 1, m) for m in s["widths"]], init)
    first = claim_g1_fits(tc, s["widths"][0], init)
    label, score, score_te, score_aux = first["label"][..., 0], first["score"][..., 0], first["score_te"], first["score_aux"]
    Z, Z_te, Z_aux = tc.tensor(first["Z"]), tc.tensor(first["Z_te"][None]), tc.tensor(first["Z_aux"][None])
    coef = limit_kernel_ridge(Z_aux, tc.tensor(score_aux[:, 0]), 1e-3 * s["auxiliary"])  # before the wider networks
    fits = [first] + [claim_g1_fits(tc, m, init) for m in s["widths"][1:]]

    def f_H(points):
        return (softmax_limit_kernel(points.reshape(1, -1, points.shape[-1]), Z_aux, 1.0)[0] @ coef
                ).reshape(points.shape[:2]).cpu().numpy()

    f_H_te, f_H_train, target = f_H(Z_te)[0], f_H(Z), score_te[:, 0]
    approximation_train = np.mean((score - f_H_train) ** 2, axis=1)              # per instance
    K, M = len(score), len(target)
    totals, terms, linearity, linearity_bound, coupling, mismatch_train = [], [], [], [], [], []
    points = torch.cat([Z_te.expand(K, -1, -1), Z], dim=1)
    y, y_tilde, v = label, f_H_train + (label - score), score - f_H_train
    limit = tc.control == "limit_kernel_gd"     # the network's NTK is not formed: it is not used
    if limit:                                   # the limit kernel does not depend on the width
        H_limit, K_all_limit = softmax_limit_kernel(Z, Z, 1.0), softmax_limit_kernel(points, Z, 1.0)
    for fit in fits:
        eta = tc.tensor(fit["eta"]) * fit["m"]
        if limit:
            H, K_all = H_limit, K_all_limit
        else:
            H, K_all = tc.tensor(fit["H"]), ntk_gram(points, Z, tc.tensor(fit["W0"]), tc.tensor(fit["A"]))

        def kernel_gd(labels):
            return kernel_gd_predictions(H, K_all, tc.tensor(labels), eta, [s["steps"]])[0].cpu().numpy()  # (K, M + n)

        f_K, f_K_tilde, from_labels = kernel_gd(y), kernel_gd(y_tilde), kernel_gd(v)
        linearity_bound.extend(linearity_roundoff_bound(H, K_all, eta, s["steps"], (y, y_tilde, v), from_labels,
                                                        tc.roundoff(1.0)))
        for k in range(K):
            f_W = fit["f_W"][k]
            parts = [f_W - f_K[k, :M], f_K[k, :M] - f_K_tilde[k, :M], f_K_tilde[k, :M] - f_H_te, f_H_te - target]
            terms.append([float(np.mean(p**2)) for p in parts])
            totals.append(risk(f_W, target))
            mismatch = f_K[k] - f_K_tilde[k]
            linearity.append(float(np.linalg.norm(mismatch - from_labels[k]) / np.linalg.norm(from_labels[k])))
            mismatch_train.append(float(np.mean(mismatch[M:] ** 2)))
        coupling.append(float(gmean([t[0] for t in terms[-K:]])))
    tc.record("risk", totals)
    tc.record("coupling, label mismatch, early stopping, approximation", terms)
    tc.record("relative error of the mismatch against kernel GD on f* - f_H", linearity)
    tc.record("label mismatch and approximation error at the training points", [mismatch_train, approximation_train.tolist()])
    tc.record("coupling term per width (geometric mean over the instances)", coupling)
    if tc.control is None:        # the unpaired runs lie orders of magnitude above the claim's axes
        tc.curve("coupling term vs width", "E(f_W - f_K)^2", s["widths"], coupling, xscale="log", yscale="log")
    tc.precondition.at_most("features in the unit ball", float(np.linalg.norm(first["Z"], axis=-1).max()), 1.0,
                            margin=tc.tol("exact"), tail_bound=UNIT_BALL_EXACT)
    tc.conclusion.at_most("risk at most 4 x the sum of the four terms", totals, [4 * sum(t) for t in terms])
    tc.record("round-off bound of the linearity error", linearity_bound)
    tc.conclusion.at_most("label mismatch is kernel GD on f* - f_H", linearity, linearity_bound)
    tc.conclusion.slope("coupling term decays at least like m^-2", s["widths"], coupling,
                        window=(s["widths"][0], s["widths"][-1]), at_most=COUPLING_SLOPE)
    tc.conclusion.at_most("label mismatch at most the approximation error at the training points",
                          mismatch_train, np.tile(approximation_train, len(fits)), tail_bound=CONTRACTION_EXACT)
