r"""jta24: sparsity of the l_q implicit bias (synthetic surrogate of the paper's real-data
observation that l_q-MD with q near 1 yields sparser weights and sharper token selection).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581, experiments on IMDb (weight histograms of
l_1.1-MD vs GD) -- those data cannot be fetched here; their reported numbers are kept as cited
data in docs/claims/jta24.md.  This claim checks the mechanism on the synthetic model.
"""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.solvers import solve_lp_wsvm

from .setup import INSTANCES, PAPER, SIZES, instances
from .sparsity import SPARSITY_Q, small_entry_fraction, sparsity_index, sparsity_runs

STRICT = 1e-6
"""A step of the index counts as an increase when it exceeds this (indices are O(1)-O(10))."""
SPARSITY_SIZES = {tier: dict(SIZES[tier], steps=1500) for tier in SIZES}
SPARSE_FRACTION = 0.5
"""Least small-entry fraction of the MD iterate at q = 1.1 on an instance (chosen on seeds 1, 2)."""
DENSE_FRACTION = 0.1
"""Largest small-entry fraction of the MD iterate at q = 2 on an instance (chosen on seeds 1, 2)."""
FRACTION_RATE = 0.9
FRACTION_ALPHA = 0.01
"""The fraction conclusions are binomials over the instances: P[an instance meets its fraction] >=
FRACTION_RATE, rejected at level FRACTION_ALPHA (the least round level at which 5 instances can reject:
at <= 2 of 5; 20 instances: at <= 13)."""
FRACTION_LOW_POWER = ("the tier's instances are the paper-wide synthetic ones (5 quick, 20 full); the test "
                      "rejects only when most instances miss their fraction; the ordering in q on every "
                      "instance is decided by the sparsity index, and its control breaks it")
FRACTION_CAL = "91000-91049"
FRACTION_VAL = "91050-91099"


@claim(
    f"{PAPER}.exp.sparsity_vs_p",
    source="experiments (IMDb weight histograms; sparser weights for p near 1), synthetic surrogate",
    statement="The sparsity index ||W||_1/||W||_2 of the l_q-AttSVM solution and of the normalized "
              "l_q-AttGD iterate increases with q: smaller q gives sparser W.",
    provenance="derived",
    controls={
        "rotated_basis": Control(
            "dynamics", breaks=["SVM: index strictly increasing in q, every instance",
                                "MD iterate: index strictly increasing in q, every instance"],
            description="the same programs and runs with the l_q geometry acting in a random "
                        "orthogonal basis of the tokens (x -> Q^T x, v -> Q^T v, the same model), "
                        "the sparsity index measured on the original entries Q W' Q^T"),
    },
    calibration=["small-entry fractions 0.5 (q = 1.1) and 0.1 (q = 2) chosen on seeds 1, 2 (not held out).",
                 "switched to the authors' logistic loss (issue 22 item 5); the thresholds unchanged, "
                 "passing on seeds 0-10",
                 "every instance -> binomial over the instances (2026-11-30): over seeds 81000-81299 (1500 "
                 "instances) the per-instance fraction at q = 2 had mean 0.026, sd 0.016, and exceeded 0.1 "
                 "once (0.11, seed 81246, instance 3: a dense rank-6 iterate, no row or column of small "
                 "entries, 0.65 at q = 1.1 on the same instance); at q = 1.1 mean 0.69, least 0.52.  A "
                 "false failure of an every-instance threshold on a count of 100 entries, not of the claim",
                 Calibrated(decision="instances with small-entry fraction >= 0.5 at q = 1.1",
                            threshold=f"P >= {FRACTION_RATE} at level {FRACTION_ALPHA}",
                            calibration_seeds=FRACTION_CAL, validation_seeds=FRACTION_VAL,
                            how="rate and level stated before the blocks; kept if the 95% Clopper-Pearson "
                                "lower bound of the per-instance rate on the calibration block is >= 0.9: "
                                "250 of 250 instances (fraction 0.693 +- 0.053, least 0.54), bound 0.988.  "
                                "Validation: 0 of 50 seeds failed, 250 of 250 (0.689 +- 0.053, least 0.53); "
                                "rows 3.3e-5 on each block "
                                "(pooled trials; rotated_basis failed on 100 of 100, miss bound 0.011 and "
                                "0.016 per block, 0.0071 over both)"),
                 Calibrated(decision="instances with small-entry fraction <= 0.1 at q = 2",
                            threshold=f"P >= {FRACTION_RATE} at level {FRACTION_ALPHA}",
                            calibration_seeds=FRACTION_CAL, validation_seeds=FRACTION_VAL,
                            how="rate and level stated before the blocks; kept if the 95% Clopper-Pearson "
                                "lower bound of the per-instance rate on the calibration block is >= 0.9: "
                                "250 of 250 instances (fraction 0.025 +- 0.017, largest 0.08), bound 0.988.  "
                                "Validation: 0 of 50 seeds failed, 250 of 250 (0.024 +- 0.015, largest 0.07)")],
    sizes=SPARSITY_SIZES,
)
def test_sparsity_vs_p(tc):
    r"""Index s(W) = ||W||_1/||W||_2 in [1, d] (d^2 = 100 entries: a Gaussian matrix gives about
    sqrt(2 N / pi) = 8.0).  For q in {1.1, 1.5, 2, 3} and every instance: (a) the certified
    l_q-AttSVM for alpha = opt, (b) normalized l_q-AttGD (eta = 0.1) from W(0) = 0 after 1500
    steps (the paper's protocol, spec `jta24.exp.sparsity_vs_p`; the runs use the logistic loss of
    the authors' instance S -- the SVM does not depend on the loss).  Pass: s strictly increasing in
    q for (a) and (b) on every instance; the fraction of entries below 1% of max|W| of the MD
    iterate is >= 0.5 at q = 1.1 and <= 0.1 at q = 2 (chosen on seeds 1, 2) on an instance with
    probability >= 0.9: a binomial over the instances at level 0.01 (a count of 100 entries of a
    dense iterate has a tail beyond any fixed threshold, so "every instance" is decided by the index
    alone).  The MD iterate need not be near the SVM solution for q = 1.1 after 1500
    steps (its tokens can differ), so (a) and (b) are separate conclusions.  The reason of the
    claim is that the l_q geometry acts entrywise in the basis in which sparsity is measured; the
    control (dynamics) keeps the model and the data but lets the l_q geometry act in a random
    orthogonal basis of the tokens (program and MD on X Q, v Q; W = Q W' Q^T): the q = 2 solution
    is the same, the others are sparse only in the rotated basis, and the ordering in q of the
    original entries' index breaks.
    """
    data, _ = instances(tc.paper_rng(INSTANCES), tc.sizes)
    Q = np.eye(data.d)
    if tc.control == "rotated_basis":
        Q = np.linalg.qr(tc.rng("rotation").standard_normal((data.d, data.d)))[0]
    svm = np.array([[sparsity_index((Q @ solve_lp_wsvm(data.X[k] @ Q, data.opt[k], q, name="synthetic",
                                                       trial=k).W @ Q.T)[None])[0] for k in range(data.K)]
                    for q in SPARSITY_Q])                                    # (Q, K)
    runs = (tc.use(sparsity_runs, rotation=Q, loss="logistic") if tc.control == "rotated_basis"
            else tc.use(sparsity_runs, loss="logistic"))
    W = runs["W"]
    md = sparsity_index(W).reshape(len(SPARSITY_Q), -1)
    small = small_entry_fraction(W).reshape(len(SPARSITY_Q), -1)
    tc.record("SVM index per (q, instance)", svm)
    tc.record("MD index per (q, instance)", md)
    tc.record("small-entry fraction per (q, instance)", small)
    tc.conclusion.at_least("SVM: index strictly increasing in q, every instance", np.diff(svm, axis=0).min(), STRICT)
    tc.conclusion.at_least("MD iterate: index strictly increasing in q, every instance", np.diff(md, axis=0).min(),
                           STRICT)
    tc.conclusion.binomial("instances with small-entry fraction >= 0.5 at q = 1.1",
                           small[SPARSITY_Q.index(1.1)] >= SPARSE_FRACTION, p=FRACTION_RATE, alpha=FRACTION_ALPHA,
                           low_power=FRACTION_LOW_POWER)
    tc.conclusion.binomial("instances with small-entry fraction <= 0.1 at q = 2",
                           small[SPARSITY_Q.index(2.0)] <= DENSE_FRACTION, p=FRACTION_RATE, alpha=FRACTION_ALPHA,
                           low_power=FRACTION_LOW_POWER)
    tc.curve("sparsity index vs q", "l_q-AttSVM (median)", SPARSITY_Q, np.median(svm, 1), xlabel="q",
             ylabel="||W||_1 / ||W||_2")
    tc.curve("sparsity index vs q", "normalized l_q-MD (median)", SPARSITY_Q, np.median(md, 1))
