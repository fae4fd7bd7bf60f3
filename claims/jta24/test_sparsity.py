r"""jta24: sparsity of the l_q implicit bias (synthetic surrogate of the paper's real-data
observation that l_q-MD with q near 1 yields sparser weights and sharper token selection).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581, experiments on IMDb (weight histograms of
l_1.1-MD vs GD) -- those data cannot be fetched here; their reported numbers are kept as cited
data in docs/claims/jta24.md.  This claim checks the mechanism on the synthetic model.
"""
import numpy as np

from theorycheck import Control, claim
from theorycheck.solvers import solve_lp_wsvm

from .setup import PAPER, SIZES, SPARSITY_Q, instances, small_entry_fraction, sparsity_index, sparsity_runs

STRICT = 1e-6
"""A step of the index counts as an increase when it exceeds this (indices are O(1)-O(10))."""
SPARSITY_SIZES = {tier: dict(SIZES[tier], steps=1500) for tier in SIZES}


@claim(
    f"{PAPER}.exp.sparsity_vs_p",
    source="experiments (IMDb weight histograms; sparser weights for p near 1), synthetic surrogate",
    statement="The sparsity index ||W||_1/||W||_2 of the l_q-AttSVM solution and of the normalized "
              "l_q-AttGD iterate increases with q: smaller q gives sparser W.",
    provenance="derived",
    controls={
        "p2_for_all": Control("dynamics", breaks=["MD iterate: index strictly increasing in q, every instance"],
                              description="all four runs use p = 2 (only the label q changes)"),
    },
    sizes=SPARSITY_SIZES,
)
def test_sparsity_vs_p(tc):
    r"""Index s(W) = ||W||_1/||W||_2 in [1, d] (d^2 = 100 entries: a Gaussian matrix gives about
    sqrt(2 N / pi) = 8.0).  For q in {1.1, 1.5, 2, 3} and every instance: (a) the certified
    l_q-AttSVM for alpha = opt, (b) normalized l_q-AttGD (eta = 0.1) from W(0) = 0 after 1500
    steps (the paper's protocol, spec `jta24.exp.sparsity_vs_p`).  Pass: s strictly increasing in
    q for (a) and (b) on every instance; the fraction of entries below 1% of max|W| of the MD
    iterate is >= 0.5 at q = 1.1 and <= 0.1 at q = 2 (observed 0.61-0.76 and 0.00-0.05 on seeds 1,
    2).  The MD iterate need not be near the SVM solution for q = 1.1 after 1500 steps (its
    tokens can differ), so (a) and (b) are separate conclusions.  The control runs p = 2 for
    all four labels: the four indices coincide and the strict increase fails.
    """
    data, _ = instances(tc.runtime, tc.sizes)
    svm = np.array([[sparsity_index(solve_lp_wsvm(data.X[k], data.opt[k], q, name="synthetic",
                                                  trial=k).W[None])[0] for k in range(data.K)]
                    for q in SPARSITY_Q])                                    # (Q, K)
    q_run = (2.0,) * len(SPARSITY_Q) if tc.control == "p2_for_all" else SPARSITY_Q
    runs = tc.use(sparsity_runs, q_values=q_run)
    W = runs["W"]
    md = sparsity_index(W).reshape(len(SPARSITY_Q), -1)
    small = small_entry_fraction(W).reshape(len(SPARSITY_Q), -1)
    tc.record("SVM index per (q, instance)", svm)
    tc.record("MD index per (q, instance)", md)
    tc.record("small-entry fraction per (q, instance)", small)
    tc.conclusion.at_least("SVM: index strictly increasing in q, every instance", np.diff(svm, axis=0).min(), STRICT)
    tc.conclusion.at_least("MD iterate: index strictly increasing in q, every instance", np.diff(md, axis=0).min(),
                           STRICT)
    tc.conclusion.at_least("small-entry fraction at q = 1.1", small[SPARSITY_Q.index(1.1)], 0.5)
    tc.conclusion.at_most("small-entry fraction at q = 2", small[SPARSITY_Q.index(2.0)], 0.1)
    tc.curve("sparsity index vs q", "l_q-AttSVM (median)", SPARSITY_Q, np.median(svm, 1), xlabel="q",
             ylabel="||W||_1 / ||W||_2")
    tc.curve("sparsity index vs q", "normalized l_q-MD (median)", SPARSITY_Q, np.median(md, 1))
