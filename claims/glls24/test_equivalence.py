"""glls24: the trained softmax network against NTK regression at every training time (Theorem F.2)."""
import numpy as np

from claims.glls24.kernel import (
    kernel_drifts,
    ntk_regression_path,
    output_major,
    per_trial_width_slope_interval,
    predictor_distance_to_infinite_width,
)
from claims.glls24.setup import decide_pairing, decide_positive_kernel, gd_dims, paired_kernel_tail, softmax_gd
from theorycheck import Calibrated, Control, claim
from theorycheck.patterns import per_instance

CLT_SLOPE_ABOVE = "NTK predictor approaches the infinite-width predictor like m^-1/2 (mean slope >= -0.65)"
CLT_SLOPE_BELOW = "NTK predictor approaches the infinite-width predictor like m^-1/2 (mean slope <= -0.35)"
LIMIT_TOLERANCE = 1e-4
DRIFT_HYPOTHESIS = "data set meets Theorem F.2's hypothesis eps_H <= lambda / 2 at every width"
CONVERGED = ("data set meets the hypothesis and its NTK regression converged by the end of the run at some "
             "width >= 1024")
DATA_SET_RATE, DATA_SET_ALPHA = 0.8, 0.01
"""The hypotheses are properties of a data set (shared by the widths, so its trials are not independent;
the data sets are): each precondition is the exact binomial test of P[a data set meets it] >= 0.8 at
level 0.01 over the tier's data sets, which with the quick tier's 3 rejects exactly when none does
(P[Bin(3, 0.8) = 0] = 0.008 < 0.01 < P[Bin(3, 0.8) <= 1] = 0.104) and with the full tier's 5 when at
most one does; the conclusions read the data sets (trials) that meet them."""
DATA_SET_LOW_POWER = ("three data sets a seed on the quick tier (each trained at every width): the precondition "
                      "guards that the conclusions read some data set, rejecting when none meets the hypothesis; "
                      "its false-failure rate, (1 - theta)^3 for the rate theta of a data set, is the calibration "
                      "table's (pooled data sets)")
"""(iii)'s distance of the network at the end of the run to the NTK predictor."""
NTK_CONVERGED = 1e-8
"""(iii) reads the trials whose NTK regression (kernel GD with H(0), no network) is within this of
its limit at the end of the run: the run has the tier's fixed length, and where the regression
itself has not converged by then the network cannot be expected to have.  The regression is the
theorem's (step eta m) in the time_mismatch control too, whose own path has another step."""
PREDICTOR_SLOPE_CONFIDENCE = 0.999
"""The confidence of the recorded t interval of (iv)'s mean per-data-set slope (recorded, not decided)."""


@claim("glls24.thmF_2.nn_ntk_equivalence", source="Definition F.1, Theorem F.2",
       statement="If the kernels move by at most eps_K (test) and eps_H <= lambda/2 (train), the trained "
                 "network and the time-matched NTK regression differ at every time T by "
                 "O(eps_K ||Y|| / lambda + k_0 eps_H ||Y|| log(lambda/eps_H) / lambda^2).",
       provenance="derived",
       calibration=["spec windows, checked on seeds 1, 2 and 0 (not re-chosen on seeds 1-10)",
                    "criterion (iv) uses predictor_instances fresh sets rather than the runs' 3 because with 3 "
                    "the rms was too noisy for a slope (seed 2 gave -0.37); with 20 it gave -0.48 and "
                    "-0.47 on seeds 1 and 2",
                    Calibrated(decision=CLT_SLOPE_BELOW,
                               threshold="mean per-data-set slope in [-0.65, -0.35] (the spec's window, kept)",
                               calibration_seeds="40000-40029", validation_seeds="41000-41049",
                               how="the window kept; the estimator changed after the pooled slope of 20 data "
                                   "sets left it on 26021 (-0.315; its margin rejected by both tail models over "
                                   "26000-26049). Calibration block (a script computing (iv) alone, 30 seeds): "
                                   "pooled slope with 20 data sets -0.498 +- 0.060 (range -0.66 to -0.39), mean "
                                   "per-data-set slope with 20: -0.486 +- 0.032, with 80: -0.489 +- 0.024 (range "
                                   "-0.539 to -0.444), so 80 data sets (5.8 sd from the window's nearer end). "
                                   "First validation 41000-41049, decided as one close(mean slope, -0.5, atol "
                                   "0.15): 0 of 50 outside, largest |mean slope + 0.5| 0.067, but the folded "
                                   "margin failed Shapiro-Wilk on both scales (counted, 0.058), so the window is "
                                   "now two one-sided decisions on the mean (linear in it), validated on "
                                   "43000-43049: 0 of 50 outside, margins normal, bounds 9.5e-8 (>= -0.65) and "
                                   "9.7e-6 (<= -0.35); the mean slope -0.486 +- 0.024 over the block (range -0.530 to -0.421)"),
                    Calibrated(decision="network converges to the NTK predictor",
                               threshold="LIMIT_TOLERANCE = 1e-4 on the trials with NTK_CONVERGED = 1e-8",
                               calibration_seeds="41000-41049,43000-43049", validation_seeds="47000-47049",
                               how="1e-4 kept; on 41049 the network ended 1.40e-4 from the NTK predictor where "
                                   "the NTK regression itself, same H(0), same 200 steps, ended 1.37e-4 from it "
                                   "(lambda_min(H(0)) 0.12 at that width, kappa ~ 25: neither had converged), "
                                   "the only failure over 41000-41049 (26000-26049: none, least margin 0.76). "
                                   "Tried on 43000-43049 with the tolerance added to the regression's own "
                                   "distance: no failure, but a least margin of 0.043 (the network then carries "
                                   "the regression's whole distance plus its own gap). On that block 9 of 300 "
                                   "trials had a regression beyond 1e-8 of its limit at T (two near 1e-3), 268 "
                                   "below 1e-12. Validation 47000-47049: no failure; 292 of 300 trials qualified "
                                   "(at least 4 of 6 a seed); the network's distance over 1e-4 log-normal, bound "
                                   "6e-7, least margin 0.95; (iv) on the same block: mean slope -0.488 +- 0.019, "
                                   "bounds 8.6e-12 and 6.1e-9. The claim's row stays counted through its "
                                   "preconditions lambda_min(H(0)) > 0 and the kernel drift, declared scale=log "
                                   "before this block and rejected by Shapiro-Wilk on it"),
                    "'lambda_min(H(0)) > 0' states two_output_kernel_tail's proved bound (2.6e-5 for the 3 trials"
                    " x 3 widths; was Cantelli 9e-4 on 84000-84299), every other decision identical at seed "
                    "111998; the row of 84000-84299 is kept (control time_mismatch is counted there: 300 seeds a "
                    "row). Tried and withdrawn (2026-11-30, twelfth session): the two counted preconditions as "
                    "exact binomials over the trials at level 1e-4 each, rates by vdt24's rule (99.9% Clopper-"
                    "Pearson lower bound, rounded down to 0.05) on 111000-111019: drift 180 of 180 trials (0.95),"
                    " NTK regression converged 113 of 120 (0.8). Validation 111500-111549 (50 seeds, no failure):"
                    " the drift held on 450 of 450 trials (pooled trials 1.6e-9), but the converged counts were "
                    "over-dispersed (dispersion p 5e-4: a trial's data set is shared by the widths), beta-"
                    "binomial 0.013, which also put time_mismatch's miss bound at 0.013, over 1e-2; and 'gap "
                    "decays at least like 1/m' left its normal model there (Shapiro-Wilk p 0.003, Cantelli 0.027;"
                    " normal on 84000-84299 and 111000-111019)",
                    Calibrated(decision=CONVERGED,
                               threshold="the hypotheses per data set: P[a data set meets them] >= 0.8 by the "
                                         "exact binomial test at level 0.01 over the 3 data sets (rejects when "
                                         "none does); (i) and (iii) read the data sets meeting them",
                               calibration_seeds="141000-141049", validation_seeds="141100-141399",
                               how="nothing chosen on a margin: the rate 0.8 and level 0.01 make the test reject "
                                   "only when no data set qualifies, and lie below the calibration block's 99.9% "
                                   "Clopper-Pearson lower bounds of the data sets' rates (drift 150 of 150: 0.955; "
                                   "converged 149 of 150: 0.940); the false-failure rate is the pooled data sets' "
                                   "(1 - theta)^3. The block also showed that (ii), first read on the qualifying "
                                   "data sets only, went unrecorded for independent_init on 6 of 50 seeds (its "
                                   "i.i.d. runs meet the drift hypothesis on no data set there): (ii) reads every "
                                   "data set again, as before. Validation 141100-141399 (300 seeds, final code): "
                                   "no failure; drift hypothesis 900 of 900 data sets (largest eps_H / lambda "
                                   "0.026), pooled trials 3.7e-8; converged 876 of 900 (at least 2 of 3 a seed, "
                                   "dispersion p 0.73), pooled trials 5.2e-5; claim bound 7.8e-5 (the stated "
                                   "lambda_min bound 2.6e-5 the next term); independent_init 9.1e-10, "
                                   "time_mismatch 7.8e-5, both failed as declared on 300 of 300")],
       controls={
           "independent_init": Control(
               "hypothesis", breaks=["gap decays at least like 1/m"],
               description="i.i.d. initialization: f_nn(0) != 0 = f_ntk(0), the gap is O(sqrt m)"),
           "time_mismatch": Control(
               "reference", breaks=["gap within the explicit bound", "gap decays at least like 1/m"],
               description="NTK regression run with the step eta instead of eta m: the wrong time scale"),
       },
       sizes={"quick": {"widths": [256, 1024, 4096], "predictor_instances": 80},
              "full": {"widths": [1024, 4096, 16384, 65536], "predictor_instances": 10}})
def test_nn_ntk_equivalence(tc):
    r"""Def. F.1 (reconstructed): features ``Phi(x)_l = (dF_l(W(0), x)/dw_r)_r``, NTK regression by
    GD from 0 with step eta, i.e. in function space ``f_ntk(t+1) = f_ntk(t) - eta m K_0 (u(t) - vec
    Y)`` (time-matched with the network; `kernel_gd_predictions`).  Theorem F.2's explicit
    gradient-flow form derived in the spec: ``|f_nn - f_ntk| <= 2 eps_K ||Y||_F / lambda + 4 k_0
    eps_H ||Y||_F (1 + log(lambda/eps_H)) / lambda^2`` at every T, with eps_H the Frobenius drift (>=
    the operator norm, so the bound is conservative) tracked over the dense steps and at the end.
    Measure on 5 unit test points, 3 data sets (each trained at every width), every width, the gap
    ``max_{t, l, x_te} |f_nn - f_ntk|``.  Theorem F.2's hypothesis eps_H <= lambda/2 is a property
    of a data set's runs, decided per data set (at every width) before any conclusion reads it: a
    precondition accepts P[a data set meets it] >= `DATA_SET_RATE` by the exact binomial test over
    the data sets (`DATA_SET_ALPHA`; with 3 it rejects only when none does), and (i) and (iii) read
    the data sets that meet it.  Pass: (i) gap <= bound on every such trial; (ii) the log-log slope
    of the geometric-mean gap over all data sets vs m is <= -1 (Theorem F.2's O(1/m) gap, as the
    drift vanishes with m; symmetric init makes the drift second order, so the measured slope is
    steeper); (iii) at widths >= 1024
    ``|f_nn(T) - K_0 H(0)^{-1} vec Y| <= 1e-4`` (T the end of the run, `LIMIT_TOLERANCE`) on the
    trials whose NTK regression has itself converged by T (within `NTK_CONVERGED` of its limit; a
    property of H(0), Y and T, computed without the network, so the trials are chosen by the
    hypothesis "the run is long enough", never by the network's distance; a second precondition,
    the same binomial over the data sets, that some width >= 1024 of a data set meeting the drift
    hypothesis qualifies): the run has the tier's fixed length, and on a trial whose H(0) is
    ill-conditioned neither the network nor the kernel regression has converged by then
    (calibration record); (iv) the NTK predictor
    ``f*_ntk = K_0 H(0)^{-1} vec Y`` approaches the infinite-width predictor ``f^inf = (I_d (x)
    K_sigma(x_te, X)) H_inf^{-1} vec Y`` at the CLT rate: the log-log slope of ``rms |f*_ntk -
    f^inf|`` (over ``predictor_instances`` fresh data sets and initializations, test points and
    outputs) vs m is within [-0.65, -0.35] (the CLT rate -1/2 within the spec's window), slope
    fitted per data set (data set k the same at every width, its level removed) and averaged over
    the ``predictor_instances`` data sets (two one-sided decisions on that mean, `CLT_SLOPE_ABOVE`
    and `CLT_SLOPE_BELOW`): no training is needed, so the data sets are cheap, and
    the pooled rms of one fit over all of them is carried by the few data sets whose kernels are
    ill-conditioned (a heavy tail; calibration record).  Def. 3.7's pairing is decided on the
    constructor's probe before the runs (`decide_pairing`; the drawn weights are checked
    exactly).  Precondition lambda > 0 states its bound on the symmetric runs (`paired_kernel_tail`,
    i.e. `two_output_kernel_tail` at d = 2)."""
    init = "independent" if tc.control == "independent_init" else "symmetric"
    widths = tc.sizes["widths"]
    if init == "independent":            # the lazy-regime control's runs: three doublings
        widths = [widths[0] * 2**k for k in range(3)]
    step_factor = (lambda m: 1.0) if tc.control == "time_mismatch" else (lambda m: m)
    decide_pairing(tc, [(*gd_dims(tc), m) for m in widths], init)
    gaps, ratios, limits, unfinished, eps_rel, kernels = [], [], [], [], [], []
    for m in widths:
        run = tc.use(softmax_gd, m=m, init=init)
        path, limit = ntk_regression_path(tc, run, step_factor(m))
        f_nn = output_major(run["test_outputs"])
        gap = np.abs(f_nn - path).max(axis=(0, 2))
        eps_H, eps_K, k0 = kernel_drifts(run)
        lam = run["lambda"]
        y_norm = np.linalg.norm(run["Y"].reshape(len(lam), -1), axis=1)
        bound = 2 * eps_K * y_norm / lam + 4 * k0 * eps_H * y_norm * (1 + np.log(lam / eps_H)) / lam**2
        gaps.append(gap)
        ratios.append(gap / bound)
        eps_rel.append(eps_H / lam)
        kernels.append(run)
        if m >= 1024:
            limits.append(np.abs(f_nn[-1] - limit).max(1))
            theorems = path if step_factor(m) == m else ntk_regression_path(tc, run, m)[0]   # step eta m
            unfinished.append(np.abs(theorems[-1] - limit).max(1))
    # Def. 3.7's pairing, +-1 signs, unit inputs: the proved bound (none for the i.i.d. control)
    decide_positive_kernel(tc, kernels, tail_bound=paired_kernel_tail(kernels) if init == "symmetric" else None)
    drift = np.max(eps_rel, axis=0)
    meets = drift <= 0.5
    per_instance(tc, DRIFT_HYPOTHESIS, drift, meets, p=DATA_SET_RATE, alpha=DATA_SET_ALPHA, role="precondition",
                 low_power=DATA_SET_LOW_POWER)
    tc.record("gap", {str(m): g for m, g in zip(widths, gaps)})
    tc.record("gap_over_bound", ratios)
    if meets.any():      # (i) on the data sets meeting the hypothesis (else its test has rejected)
        tc.conclusion.at_most("gap within the explicit bound", np.ravel([r[meets] for r in ratios]), 1.0)
    mean_gap = [float(np.exp(np.mean(np.log(g)))) for g in gaps]
    tc.curve("network vs NTK regression", "max gap (geometric mean over the data sets)", widths, mean_gap,
             xscale="log", yscale="log")
    tc.conclusion.slope("gap decays at least like 1/m", widths, mean_gap, window=(widths[0], widths[-1]),
                        at_most=-1.0)
    converged = (np.asarray(unfinished) <= NTK_CONVERGED) & meets
    tc.record("NTK regression's own distance to its limit at the end of the run", unfinished)
    tc.record("distance_to_ntk_limit", limits)
    per_instance(tc, CONVERGED, np.min(unfinished, axis=0), converged.any(axis=0), p=DATA_SET_RATE,
                 alpha=DATA_SET_ALPHA, role="precondition", low_power=DATA_SET_LOW_POWER)
    if converged.any():
        tc.conclusion.at_most("network converges to the NTK predictor", np.asarray(limits)[converged],
                              LIMIT_TOLERANCE, scale="log")
    shape = run["X"].shape[1:] + run["Y"].shape[2:] + run["X_test"].shape[1:2]
    to_infinite = predictor_distance_to_infinite_width(tc, shape, widths, tc.sizes["predictor_instances"])
    pooled = [float(np.sqrt(np.mean(v**2))) for v in to_infinite.values()]
    tc.record("rms_ntk_predictor_minus_infinite_width", dict(zip(map(str, widths), pooled)))
    tc.curve("NTK predictor vs infinite width", "rms over the data sets", widths, pooled, xscale="log", yscale="log")
    fit = per_trial_width_slope_interval(to_infinite, PREDICTOR_SLOPE_CONFIDENCE)
    tc.record("per-data-set slopes of log rms |f*_ntk - f^inf| against log m (mean, t interval)", fit)
    tc.conclusion.at_least(CLT_SLOPE_ABOVE, fit["slope"], -0.65)
    tc.conclusion.at_most(CLT_SLOPE_BELOW, fit["slope"], -0.35)
