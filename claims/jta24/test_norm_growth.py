r"""jta24: logarithmic norm growth of plain l_p-AttGD (Lemma 30, Appendix A.5).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581: the index gaps k_{j+1} - k_j needed to reach
norm level j grow exponentially, hence ||W(k)||_p >= c log k - C and ||W(k)||_p -> infinity.
"""
import numpy as np

from theorycheck import Control, claim

from .plain_descent import norm_growth_runs
from .setup import PAPER, SIZES

GROWTH_SIZES = {"quick": dict(SIZES["quick"], instances=3, steps=2000),
                "full": dict(SIZES["full"], steps=20000)}


@claim(
    f"{PAPER}.lem30.norm_growth",
    source="Lemma 30 (Appendix A.5)",
    statement="For plain l_p-AttGD the norm grows logarithmically: ||W(k)||_p >= c log k - C and "
              "||W(k)||_p -> infinity; per e-fold of k it grows by about ||W_mm_alpha||_p.",
    provenance="stated",
    controls={
        "normalized": Control("dynamics", breaks=["growth per e-fold / ||W_mm||_p at most 1.3"],
                              description="normalized MD: ||W||_p^(p-1) ~ eta k grows polynomially"),
    },
    calibration=["K = 2000 (not 1000): at K = 1000 the p = 3 values were close to the window's lower end on "
                 "seeds 1, 2 (the -(p-2) log log term); the window is the spec's, not moved.",
                 "the zero_head control (v = 0: the gradient is exactly zero, so it failed by "
                 "construction) was removed after the review."],
    sizes=GROWTH_SIZES,
)
def test_norm_growth(tc):
    r"""Derived refinement (spec): along the SVM ray the gradient scales like
    exp(-||W||_p/||W_mm||_p), so d||W||^(p-1)/dk ~ eta c exp(-||W||/||W_mm||) and
    ||W(k)||_p = ||W_mm||_p log(eta k) - (p-2) ||W_mm||_p log log(eta k) + O(1).  Measure: plain
    MD, eta = 10, from W(0) std 1 (p in {1.75, 2, 3}, 3 instances), growth per e-fold
    g = (r_K - r_{K/10}) / ln 10 with r = ||W||_p, K = 2000.  Pass (every run): r_K > r_{K/10} and
    g / ||W_mm_alpha||_p in [0.5, 1.3] (the spec's window for K in {1e3, 1e4}, fixed before the
    data; K = 2000 keeps p = 3 away from the lower end, which the -(p-2) log log term approaches
    at small K).
    Precondition: every sample has distinct scores (a unique optimal token exists).  Control:
    normalized MD (dynamics: polynomial growth, g >> ||W_mm||).
    """
    r = tc.use(norm_growth_runs, n_instances=tc.sizes["instances"], normalized=tc.control == "normalized")
    tc.precondition.holds("every sample has distinct token scores", bool(np.all(r["distinct_scores"])))
    growth = (r["r"][-1] - r["r"][0]) / np.log(10)
    ratio = growth / r["svm_norm"]
    tc.record("growth per e-fold / ||W_mm||_p per run", ratio)
    tc.conclusion.at_least("r_K > r_{K/10}", r["r"][-1] - r["r"][0], 0.0)
    tc.conclusion.at_least("growth per e-fold / ||W_mm||_p at least 0.5", ratio.min(), 0.5)
    tc.conclusion.at_most("growth per e-fold / ||W_mm||_p at most 1.3", ratio.max(), 1.3)
