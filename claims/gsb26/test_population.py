r"""gsb26: the population loss of softmax self-attention regression and the finite-n gap.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 1 (part 1) and Section 3.
"""
import numpy as np

from theorycheck import Control, claim

from .population import in_sample_gap, out_of_sample, symbolic_closed_form
from .setup import LIGHT_TAIL, PAPER, record_assumptions

#: mu(K) of the heavy_tails control (re-sized after the 20-seed sweep: see `test_closed_form`)
HEAVY_TAIL_MU = 3.0
GAP_SIZES = {"quick": {"ns": [16, 32, 64], "rows": 200000},
             "full": {"ns": [16, 32, 64, 128, 256, 512], "rows": 1000000}}


@claim(
    f"{PAPER}.thm1.closed_form",
    source="Theorem 1 (part 1), eq. (2)",
    statement="The population loss of softmax self-attention regression is "
              "||(V Sigma K - W*) Sigma^{1/2}||_F^2 + k sigma^2: the softmax average over the "
              "training covariates tends to Sigma K x, so the predictor tends to V Sigma K x.",
    provenance="derived",
    controls={
        "transposed_predictor": Control(
            "reference", breaks=["out-of-sample predictor error decays with N"],
            description="the closed form of the other orientation, V Sigma K^T x, for a "
                        "non-symmetric K: the attention predictor does not approach it"),
        "unweighted_closed_form": Control(
            "reference", breaks=["gap E Lhat_n - L decays like 1/n"],
            description="the wrong closed form ||V Sigma K - W*||_F^2 + k sigma^2 (missing the "
                        "Sigma weight): the Monte Carlo gap to it does not vanish"),
        "missing_sigma_sympy": Control(
            "reference", breaks=["sympy d=k=1: ratio-of-integrals loss minus closed form is 0"],
            description="the closed form with predictor V K x (missing Sigma): sympy leaves a "
                        "non-zero difference"),
        "heavy_tails": Control(
            "hypothesis", breaks=["gap E Lhat_n - L decays like 1/n"],
            description="K rescaled so that mu = ||Sigma^{1/2} K Sigma^{1/2}||^2 = HEAVY_TAIL_MU = 3 > 1/2: "
                        "the softmax weights are heavy-tailed and the gap decays more slowly",
            constants={"mu": HEAVY_TAIL_MU}),
    },
    calibration=[
        "Gap slopes on seeds 1, 2, 3: -1.01, -1.01, -0.95 (standard errors 2-5% of the gap).",
        "Re-sized after the 20-seed sweep: the heavy_tails control had mu = 1.5 (slope -1.19 on seed 5, "
        "a misfire; -1.25 on seed 11); mu = 3 chosen on seeds 1-10 (slopes -0.22 .. +0.70), held out "
        "on 0 and 11-19 (slopes in [-0.21, 0.03]).",
    ],
    sizes=GAP_SIZES,
)
def test_closed_form(tc):
    r"""L(V, K) = E_{x,eps} ||W* x + eps - V E_{x'}[x' e^{x'^T K x}] / E_{x'}[e^{x'^T K x}]||^2
    = tr((V Sigma K - W*) Sigma (V Sigma K - W*)^T) + k sigma^2, x, x' ~ N(0, Sigma).

    Reference (a): sympy derives the Gaussian moment-generating identities
    E e^{a^T x} = e^{a^T Sigma a/2} and E x e^{a^T x} = Sigma a e^{a^T Sigma a/2} for d in {1, 2}
    (symbolic Cholesky factor, d = 2; d = 1 is covered by the next step), and for d = k = 1 integrates the whole loss (ratio of integrals
    inside, expectation outside): the difference to s (v s K - w)^2 + sigma^2 must simplify to 0.
    The general formula is the numpy/torch `population_loss`.
    Measurements (b1) the out-of-sample predictor with N fresh keys, mean of
    ||f(x; X_N) - V Sigma K x|| over fresh queries and repetitions, for N = 10^3, 10^4, 10^5:
    a Monte Carlo average of N terms, error ~ N^{-1/2}; pass: log-log slope in [-0.7, -0.3].
    (b2) E Lhat_n by Monte Carlo (2 10^5 query rows per n on the quick tier, n = 16, 32, 64) at a
    fixed theta (V = 0.5 Z1, K = 0.3 Z2) of the well-conditioned instance: the gap
    |E Lhat_n - L| must decay like 1/n, slope in [-1.25, -0.75] (the spec's window).
    Hypothesis: the scores have light tails, mu(K) = ||Sigma^{1/2} K Sigma^{1/2}||^2 < 1/2 (the
    Lemma-7 form of A3; with mu > 1/2 the gap decays more slowly, the heavy_tails control at
    mu = `HEAVY_TAIL_MU`).
    """
    symbolic = tc.use(symbolic_closed_form, missing_sigma=tc.control == "missing_sigma_sympy")
    tc.conclusion.holds("sympy d=2: E exp(a^T x) identity", symbolic["mgf"] == "0",
                        detail={"difference": symbolic["mgf"]})
    tc.conclusion.holds("sympy d=2: E x exp(a^T x) identity", symbolic["first_moment"] == ["0", "0"],
                        detail={"difference": symbolic["first_moment"]})
    tc.conclusion.holds("sympy d=k=1: ratio-of-integrals loss minus closed form is 0",
                        symbolic["scalar_loss"] == "0", detail={"difference": symbolic["scalar_loss"]})

    gap = tc.use(in_sample_gap, tail=HEAVY_TAIL_MU if tc.control == "heavy_tails" else None)
    problem, V, K = gap["problem"], gap["V"], gap["K"]
    record_assumptions(tc, problem)
    tc.precondition.at_most("light score tails: mu(K) < 1/2", gap["mu"], LIGHT_TAIL)
    tc.record("mu(K)", gap["mu"])

    E = V @ problem.Sigma @ K - problem.W
    L = gap["L"]
    if tc.control == "unweighted_closed_form":
        L = float(np.sum(E * E)) + problem.optimum
    tc.conclusion.close("torch closed form equals tr(E Sigma E^T) + k sigma^2", gap["L"],
                        float(np.trace(E @ problem.Sigma @ E.T)) + problem.optimum, rtol=tc.roundoff(100))
    residual = np.abs(gap["mean"] - L)
    tc.record("E Lhat_n - L", gap["mean"] - L)
    tc.record("standard errors", gap["se"])
    tc.conclusion.slope("gap E Lhat_n - L decays like 1/n", gap["n"], residual,
                        window=(gap["n"][0], gap["n"][-1]), at_least=-1.25, at_most=-0.75)
    tc.curve("gap", "|E Lhat_n - L|", gap["n"], residual, xscale="log", yscale="log")
    tc.curve("gap", "1/n (shape)", gap["n"], residual[0] * gap["n"][0] / gap["n"], style="theory",
             xscale="log", yscale="log")

    keys, errors = tc.use(out_of_sample, transposed=tc.control == "transposed_predictor")
    tc.record("out-of-sample errors", errors)
    tc.conclusion.slope("out-of-sample predictor error decays with N", keys, errors,
                        window=(keys[0], keys[-1]), at_least=-0.7, at_most=-0.3)
    tc.curve("out-of-sample", "||f(x; X_N) - V Sigma K x||", keys, errors, xscale="log", yscale="log")


@claim(
    f"{PAPER}.sec3.finite_n_gap",
    source="Section 3 (remark after eq. (2)); Theorem 4",
    statement="At finite n the expected in-sample loss differs from the population loss "
              "(an expectation of a ratio is not a ratio of expectations), by Theta(1/n) "
              "when the softmax scores have light tails.",
    provenance="stated",
    controls={
        "sample_average": Control(
            "reference", breaks=["gap at the smallest n exceeds 10 standard errors"],
            description="the sample average of the population predictor's loss, "
                        "(1/n) sum ||y_i - V Sigma K x_i||^2, whose mean is L exactly"),
        "faster_rate": Control(
            "statement", breaks=["n^p |E Lhat_n - L| varies by less than a factor 1.5"],
            description="the stronger statement gap = Theta(1/n^2): p = 2 instead of 1"),
    },
    calibration=["Seeds 1, 2, 3: max/min of n (E Lhat_n - L) 1.02, 1.03, 1.08 (the spec's factor 1.5)."],
    sizes=GAP_SIZES,
)
def test_finite_n_gap(tc):
    r"""E Lhat_n(theta) - L(theta) at the fixed theta of `thm1.closed_form` (same Monte Carlo,
    shared run), n = 16, 32, 64 on the quick tier.

    Pass: at the smallest n the gap exceeds 10 Monte Carlo standard errors (the statement "not
    equal" with a margin that a zero-mean estimator fails: at 10 s.e. a false positive has
    probability < 1e-20), and n (E Lhat_n - L) varies by less than a factor 1.5 across n (the
    spec's criterion for Theta(1/n)).  The
    sign of the gap is not part of the claim (it can be negative on other instances).
    Hypothesis: light score tails, mu(K) < 1/2, recorded as a precondition.
    """
    rate = 2 if tc.control == "faster_rate" else 1
    estimator = "population_predictor" if tc.control == "sample_average" else "attention"
    gap = tc.use(in_sample_gap, estimator=estimator)
    record_assumptions(tc, gap["problem"])
    tc.precondition.at_most("light score tails: mu(K) < 1/2", gap["mu"], LIGHT_TAIL)
    excess = gap["mean"] - gap["L"]
    tc.record("E Lhat_n - L", excess)
    tc.conclusion.at_least("gap at the smallest n exceeds 10 standard errors",
                           abs(excess[0]) / gap["se"][0], 10.0)
    scaled = np.abs(excess) * gap["n"] ** rate
    tc.record("n^rate |gap|", scaled)
    tc.conclusion.at_most("n^p |E Lhat_n - L| varies by less than a factor 1.5",
                          scaled.max() / scaled.min(), 1.5)
    tc.curve("n gap", "n (E Lhat_n - L)", gap["n"], excess * gap["n"], xscale="log")
