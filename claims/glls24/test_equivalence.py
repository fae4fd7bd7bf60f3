"""glls24: the trained softmax network against NTK regression at every training time (Theorem F.2)."""
import numpy as np

from claims.glls24.kernel import (
    kernel_drifts,
    ntk_regression_path,
    output_major,
    predictor_distance_to_infinite_width,
)
from claims.glls24.setup import decide_pairing, gd_dims, softmax_gd
from theorycheck import Control, claim


@claim("glls24.thmF_2.nn_ntk_equivalence", source="Definition F.1, Theorem F.2",
       statement="If the kernels move by at most eps_K (test) and eps_H <= lambda/2 (train), the trained "
                 "network and the time-matched NTK regression differ at every time T by "
                 "O(eps_K ||Y|| / lambda + k_0 eps_H ||Y|| log(lambda/eps_H) / lambda^2).",
       provenance="derived",
       calibration=["spec windows, checked on seeds 1, 2 and 0 (not re-chosen on seeds 1-10)",
                    "criterion (iv) uses predictor_instances fresh sets rather than the runs' 3 because with 3 "
                    "the rms was too noisy for a slope (seed 2 gave -0.37); with 20 it gave -0.48 and "
                    "-0.47 on seeds 1 and 2"],
       controls={
           "independent_init": Control(
               "hypothesis", breaks=["gap decays at least like 1/m"],
               description="i.i.d. initialization: f_nn(0) != 0 = f_ntk(0), the gap is O(sqrt m)"),
           "time_mismatch": Control(
               "reference", breaks=["gap within the explicit bound", "gap decays at least like 1/m"],
               description="NTK regression run with the step eta instead of eta m: the wrong time scale"),
       },
       sizes={"quick": {"widths": [256, 1024, 4096], "predictor_instances": 20},
              "full": {"widths": [1024, 4096, 16384, 65536], "predictor_instances": 10}})
def test_nn_ntk_equivalence(tc):
    r"""Def. F.1 (reconstructed): features ``Phi(x)_l = (dF_l(W(0), x)/dw_r)_r``, NTK regression by
    GD from 0 with step eta, i.e. in function space ``f_ntk(t+1) = f_ntk(t) - eta m K_0 (u(t) - vec
    Y)`` (time-matched with the network; `kernel_gd_predictions`).  Theorem F.2's explicit
    gradient-flow form derived in the spec: ``|f_nn - f_ntk| <= 2 eps_K ||Y||_F / lambda + 4 k_0
    eps_H ||Y||_F (1 + log(lambda/eps_H)) / lambda^2`` at every T, with eps_H the Frobenius drift (>=
    the operator norm, so the bound is conservative) tracked over the dense steps and at the end.
    Measure on 5 unit test points, 3 seeds, every width, the gap ``max_{t, l, x_te} |f_nn - f_ntk|``.
    Pass: (i) gap <= bound for every trial; (ii) the log-log slope of the geometric-mean gap vs m
    is <= -1 (Theorem F.2's O(1/m) gap; symmetric init makes the drift second order, so the
    measured slope is steeper); (iii) at widths >= 1024
    ``|f_nn(T) - K_0 H(0)^{-1} vec Y| <= 1e-4`` (T the end of the run); (iv) the NTK predictor
    ``f*_ntk = K_0 H(0)^{-1} vec Y`` approaches the infinite-width predictor ``f^inf = (I_d (x)
    K_sigma(x_te, X)) H_inf^{-1} vec Y`` at the CLT rate: the log-log slope of ``rms |f*_ntk -
    f^inf|`` (over ``predictor_instances`` fresh data sets and initializations, test points and
    outputs; no training is needed) vs m lies in [-0.65, -0.35] (the CLT rate -1/2, the spec's
    window).  Def. 3.7's pairing is decided on the constructor's probe before the runs
    (`decide_pairing`; the drawn weights are checked exactly)."""
    init = "independent" if tc.control == "independent_init" else "symmetric"
    widths = tc.sizes["widths"]
    if init == "independent":            # the lazy-regime control's runs: three doublings
        widths = [widths[0] * 2**k for k in range(3)]
    step_factor = (lambda m: 1.0) if tc.control == "time_mismatch" else (lambda m: m)
    decide_pairing(tc, [(*gd_dims(tc), m) for m in widths], init)
    gaps, ratios, limits, eps_rel, lam_all = [], [], [], [], []
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
        lam_all.append(lam)
        if m >= 1024:
            limits.append(np.abs(f_nn[-1] - limit).max(1))
    tc.precondition.at_least("lambda_min(H(0)) > 0", np.concatenate(lam_all), 1e-8)
    tc.precondition.at_most("kernel drift eps_H <= lambda / 2", np.ravel(eps_rel), 0.5)
    mean_gap = [float(np.exp(np.mean(np.log(g)))) for g in gaps]
    tc.record("gap", {str(m): g for m, g in zip(widths, gaps)})
    tc.record("gap_over_bound", ratios)
    tc.record("distance_to_ntk_limit", limits)
    tc.curve("network vs NTK regression", "max gap (geometric mean over seeds)", widths, mean_gap,
             xscale="log", yscale="log")
    tc.conclusion.at_most("gap within the explicit bound", np.ravel(ratios), 1.0)
    tc.conclusion.slope("gap decays at least like 1/m", widths, mean_gap, window=(widths[0], widths[-1]),
                        at_most=-1.0)
    tc.conclusion.at_most("network converges to the NTK predictor", np.ravel(limits), 1e-4)
    shape = run["X"].shape[1:] + run["Y"].shape[2:] + run["X_test"].shape[1:2]
    to_infinite = predictor_distance_to_infinite_width(tc, shape, widths, tc.sizes["predictor_instances"])
    tc.record("rms_ntk_predictor_minus_infinite_width", dict(zip(map(str, widths), to_infinite)))
    tc.curve("NTK predictor vs infinite width", "rms over seeds", widths, to_infinite, xscale="log", yscale="log")
    tc.conclusion.slope("NTK predictor approaches the infinite-width predictor like m^-1/2", widths,
                        to_infinite, window=(widths[0], widths[-1]), at_least=-0.65, at_most=-0.35)
