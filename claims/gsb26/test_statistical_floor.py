r"""gsb26: the statistical term of Theorem 2, the floor of Algorithm 1 with the expected
gradient oracle, as a function of the sample size n.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 2 (statistical part: "the bias
decreases at rate O~(1/n)").
"""
import numpy as np

from theorycheck import Control, claim
from theorycheck.checks import fit_slope

from .setup import PAPER, log_factor_exponent, record_assumptions, statistical_floor_run


@claim(
    f"{PAPER}.thm2.statistical_floor",
    source="Theorem 2 (statistical term)",
    statement="With the expected-gradient oracle, the excess population loss of Algorithm 1 "
              "settles at a floor that is O~(1/n) in the number of samples n.",
    provenance="inferred",
    controls={
        "faster_rate": Control(
            "statement", breaks=["floor decays at least like log(n)/n^p"],
            description="the stronger statement: the floor is O~(1/n^3) (p = 3), beyond the "
                        "derived Theta(1/n^2) of a Theta(1/n) gradient bias through a quadratic loss"),
    },
    sizes={"quick": {}, "full": {}},
)
def test_statistical_floor(tc):
    r"""e(n) = L(theta_bar) - k sigma^2 at the average theta_bar of the iterates over t in
    [T/2, T] of Algorithm 1 (spectral initialization, regularizer R(.; Sigma_hat) with
    lambda = 1/4 and preconditioner Sigma_hat^{-1} from n training samples, eta =
    0.2/sigma_1(W*) = 1 at the recipe's scale) with the expected-gradient oracle, estimated
    at every step by 16 fresh training sets of size n (quick; `statistical_floor_run`), on the
    well-conditioned instance, n in {20, 32, 48, 64}, T = 400, 3 training sets per n, medians.
    The burn-in T/2 = 200 is ten times the 1/0.056 ~ 18-step time constant of the
    preconditioned contraction (the spec's e^{-0.056 t}), so theta_bar averages the stationary
    regime.  Reference: Theorem 2's statistical term C polylog(n)/n; the derived rate is
    Theta(1/n^2) (the gradient bias is Theta(1/n), `thm4.gradient_bias`, and the loss is
    quadratic near M), the spec's GPU run gave an exponent of about -1.47 over n = 32..256.
    Pass: the fitted log-log exponent of the median floor over the n window is at most
    -1 + 2/ln(n_c) = -0.44, the local exponent of log(n)^2/n at the window's centre n_c ~ 36
    (the polylog's degree is lost with the formulas; `LOG_DEGREE`); the exponent is recorded.  The spec's
    criterion e_T <= 0.3 e_0 tests the start, not the floor (the spectral start is itself only
    O(1/n) above it: 0.50 e_0 on seed 1 at n = 32) and is not used; e_0 is recorded.
    Design (after the parked draft): a fixed pool of M batches reused at every step (the spec's
    common random numbers) puts noise O(1/sqrt(M n)) into the fixed point, whose cross term
    with the O(1/n) bias moved the floor at n = 64 by 40-70% between M = 50 and 800 on seed 1;
    fresh batches with iterate averaging reproduce the floor within 5% across independent
    batch streams at 1/8 of the cost.  CHOSEN ON SEEDS 1-10 (flagged, the claim was new in the
    round of the 20-seed sweep): n >= 20 (1 of 3 trials diverged at n = 20 on seed 2 and at
    n = 16 on seed 10: the small-n spectral start is outside the theorem's regime); scratch
    exponents -0.84 to -1.55 on seeds 1, 3-10.  A diverged training set (a spectral start
    outside the basin: the theorem assumes n >= n_0) is counted and reported, and the floor at
    that n is the median over the converged ones; a majority must converge (precondition).
    DEGREE CHOSEN ON SEEDS 1-10 (flagged): with degree one (-0.72) the claim failed on seed 2
    (exponent -0.69: n e(n) grew from 0.019 to 0.026 over n = 20..64, no divergence), a
    finding: at n <= 64 the floor can decay more slowly than log(n)/n; degree two is the
    smallest that held on seeds 1-10.  The statement control (p = 3, -2.44) stays far from the
    measured exponents (-0.69 to -2.01 on seeds 0-19).
    CHANGED AFTER A HELD-OUT SEED (flagged): the first version required every trial to
    converge and met no hypotheses on seed 17 (1 of 3 diverged), which also misfired the
    statement control.  FINDING: on seed 8 the floor is nearly flat between n = 32 and 64 (3.6e-4, 3.0e-4,
    2.9e-4): the window's exponent passes only through n = 20.
    Preconditions A1-A3 and a majority of converged training sets per n.
    """
    rate = 3 if tc.control == "faster_rate" else 1
    run = tc.use(statistical_floor_run)
    record_assumptions(tc, run["problem"])
    converged = run["diverged_at"] < 0                                    # (len(ns), trials)
    tc.record("diverged trials per n", (~converged).sum(1))
    tc.precondition.at_least("a majority of the training sets converge at every n (n in the theorem's regime)",
                             converged.mean(1), 0.5, margin=1e-12)
    n = run["n"]
    floor = np.array([np.median(f[c]) if c.any() else np.nan for f, c in zip(run["floor"], converged)])
    tc.record("e_0 (median)", np.median(run["e0"], axis=1))
    tc.record("floor e(n) (median)", floor)
    tc.record("n e(n)", n * floor)
    if np.all(floor > 0):
        tc.record("fitted exponent of the floor in n", fit_slope(n, floor, window=(n[0], n[-1])).slope)
    tc.conclusion.slope("floor decays at least like log(n)/n^p", n, floor, window=(n[0], n[-1]),
                        at_most=log_factor_exponent(n, rate))
    tc.curve("floor", "e(n) at the averaged iterate", n, floor, xlabel="n", xscale="log", yscale="log",
             ylabel="L - k sigma^2")
    tc.curve("floor", "e_0(n) (spectral start)", n, np.median(run["e0"], axis=1), xscale="log", yscale="log")
