r"""jta24: local directional convergence and cone invariance of l_p-AttGD (main-body local
theorem, reconstructed; its proof is appendix Lemmas 19-30, the induction being Lemma 28).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581.  Shared runs `local_candidates` and
`local_restarts`: a fixed pool of candidate token sets (the non-global alpha that the runs of
`normalized_mirror_runs` selected on the first 5 instances, then the constructed ones of the first 10
instances of the same stream, opt with one sample moved to its second-highest-score token), each with its hypotheses at
p in {1.75, 2, 3} (alpha locally optimal at p, delta_safe >= 0.05); the first 9 candidates that meet
them at some p are restarted, one restart each, at a p where they do (the p rotated over the
restarts), with normalized l_p-AttGD near the SVM ray at radius c ||W_mm_alpha||_p, c = max(5,
3/delta_safe) (eta scaled by (c/5)^(p-1)), 1000 steps (quick).  The radius depends on delta_safe because the theorem's
does (its cone constants are functions of delta): a higher-score non-support token has
exp(-delta_safe c) of a support token's attention on the ray, at most exp(-3).
D_k = D_psi_p(W_mm/||W_mm||_p, W(k)/||W(k)||_p).  The history of these choices is in the claims'
calibration records and docs/claims/jta24.md.
"""
from theorycheck import Calibrated, Control, TailBound, claim

from .local import LOCAL_SIZES, per_token_set, restarts
from .setup import PAPER

SET_RATE = 0.8
"""The per-token-set success rate decided by the local claims (binomial over the token sets
restarted: a token set succeeds when its restart, at one p of LOCAL_P, does what the statement says).
The theorem says every restart, which the encoded restarts meet only at a rate (a finding:
docs/claims/jta24.md); the restarts of one alpha at several p shared its instance and alpha and failed
together (the per-restart counts were over-dispersed), so each token set is restarted once
(`local.local_candidates`) and is the trial."""
SET_ALPHA = 0.01
"""Level of their binomial tests.  With the 9 token sets of almost every seed (`local.local_candidates`
scans up to SCAN_INSTANCES instances for them) the test at SET_RATE rejects at most 3 successes of 9
(at most 1 of 5 or 6, 2 of 7 or 8): the controls, whose restarts fail on (almost) every token set, miss
only when four or more succeed, and their miss bound reaches 1e-2 through the pooled trials of 50 seeds
(with 3 token sets the test rejected only 0 successes, and the miss bound needed some 300 seeds).  The claims' false-failure rate is bounded through the pooled
trials of their calibration (docs/calibration.md)."""
LOW_POWER = ("at most MAX_RESTARTS = 9 restarts a seed (the spec's CPU configuration), one per token set, 9 "
             "token sets on almost every seed: the test rejects only when most token sets fail; the evidence against a wrong "
             "hypothesis is the control, whose restarts fail on every one")



def restart_rate_history(decision: str, how: str) -> str:
    """The calibration note of a local claim's earlier binomial over the restarts (P >= 0.8 at level
    3e-4, blocks 1000-1024 and 2000-2024), before the token set became the trial."""
    return (f"until 2026-11-28 f: {decision!r} over the restarts, P >= 0.8 at level 3e-4 (rejects at "
            f"<= 1 of 9), calibrated on 1000-1024, validated on 2000-2024: {how}")


ONE_RESTART = ("token sets of three restarts -> one restart per token set (2026-11-30, fourteenth session): the "
               "restarts are chosen from a fixed candidate pool by the hypotheses alone (local.local_candidates, "
               "one p per token set, rotated), 9 token sets on almost every seed; SET_RATE and SET_ALPHA kept by "
               "SET_HISTORY's rule on the new trials (the set_rate_record on ONE_RESTART_BLOCKS).  The restarts' "
               "count is the binomial local.POOL over the pool (rule in local.POOL_RATE; its pool of 10 instances "
               "and the rule 'no candidate meets them' were set after smoke seeds 123000-123004, the start of the "
               "calibration block, showed the first rule, at least 5 of a pool of 5 instances, failing at a rate "
               "of order 1e-3: 7 to 17 of 30 to 33 candidates met the hypotheses)")
#: the calibration and validation blocks of the one-restart design (ONE_RESTART)
ONE_RESTART_BLOCKS = ("123000-123049", "123500-123549")
SET_HISTORY = ("every restart -> the token set as the trial (2026-11-28 f): the per-restart counts of both "
               "local claims were over-dispersed (Pearson dispersion p 1e-4 and 3e-3 over 40 unseen seeds: "
               "the restarts of one alpha fail together), so a token set (its restarts over p) is the trial. "
               "Rule stated before the blocks: SET_RATE keeps the restarts' 0.8 if the one-sided 99.9% "
               "Clopper-Pearson lower bound of the per-token-set rate on the calibration block is at least "
               "0.8, at level SET_ALPHA = 0.01 (the least round level at which 3 token sets can reject)")


def set_rate_record(decision: str, how: str, blocks: tuple[str, str]) -> Calibrated:
    """The calibration record of a local claim's binomial over the token sets (SET_RATE at level
    SET_ALPHA) on ``blocks`` (calibration, validation)."""
    return Calibrated(decision=decision, threshold=f"P >= SET_RATE = {SET_RATE} at level {SET_ALPHA}",
                      calibration_seeds=blocks[0], validation_seeds=blocks[1], how=how)


#: the calibration and validation blocks of the three-restart design (until 2026-11-30)
THREE_RESTART_BLOCKS = ("28000-28036", "28100-28147")


KEEPING = "token sets whose restarts keep alpha with D_K <= 2e-2 and D_K <= max_k D_k / 2"
STAYING = "token sets whose restarts stay in the cone D_k <= mu with constant tokens, every step"
NOT_LOCAL = Control("hypothesis", breaks=[KEEPING],
                    description="alpha' = alpha with one sample moved to its lowest-score token, "
                                "distinct per token set (not locally optimal), restarted on the ray "
                                "of W_mm_alpha' (the claim's restarts, with alpha' for alpha)")


@claim(
    f"{PAPER}.thm.lp_direction_local",
    source="main-body local convergence theorem (reconstructed); proof Lemmas 19-30",
    statement="If alpha is locally optimal and W(0) lies in a thin cone around W_mm_alpha at large "
              "norm, l_p-AttGD keeps selecting alpha and W(k)/||W(k)||_p -> W_mm_alpha/||W_mm_alpha||_p.",
    provenance="inferred",
    controls={"not_locally_optimal": NOT_LOCAL},
    calibration=["constructed candidates added after the 20-seed sweep (seed 12: every run selected opt, "
                 "no restart); radius c = max(5, 3/delta_safe) chosen after the full tier lost alpha on 2 of "
                 "9 restarts at c = 5 (seed 0; not held out).",
                 "D_K <= 2e-2 and D_K <= max_k D_k / 2 chosen on seeds 1, 2 (the spec's 1e-2 needs 1500 "
                 "steps at p = 3).",
                 "every restart -> binomial P >= 0.8 at level 3e-4 after the review: on 2 of 10 unseen "
                 "seeds a restart lost alpha (D_K 0.16); the gap to the theorem's 'every' is a finding.",
                 restart_rate_history("restarts keeping alpha with D_K <= 2e-2 and D_K <= max_k D_k / 2",
                             "25 + 25 seeds (a seed costs ~60 s): failed restarts 2 of 225 (calibration), "
                             "6 of 225 (validation; at most 2 in a seed: they cluster on one alpha "
                             "across p), fewest successes 8 and 7 of 9; 0.8 lies far below the "
                             "observed ~0.97 and the level is the claim budget; the control kept 0 "
                             "successes on every seed of both blocks"),
                 SET_HISTORY,
                 set_rate_record(KEEPING, "rule before the blocks (SET_HISTORY): calibration 28000-28036 (37 seeds, a seed's 9 restarts are 3 to 5 token sets): 5 of 129 token sets failed, 99.9% lower bound 0.878 >= 0.8, so SET_RATE = 0.8; dispersion p 0.58.  Validation 28100-28147 (48 seeds): 0 seeds failed, 7 of 170 token sets failed (dispersion p 0.29), fewest 2 successes of 3; the control failed as declared on 37 + 48 of 37 + 48.  Row: both blocks pooled (the rate was not changed between them)", THREE_RESTART_BLOCKS),
                 ONE_RESTART,
                 set_rate_record(KEEPING, "rule before the blocks (SET_HISTORY), on the one-restart token sets: calibration 123000-123049 (50 seeds, 9 token sets each): 24 of 450 failed (0.947), 99.9% lower bound 0.906 >= 0.8, so SET_RATE = 0.8 is kept; dispersion p 0.91, fewest 7 successes of 9.  Validation 123500-123549 (50 seeds): 0 seeds failed, 10 of 450 token sets failed (dispersion p 0.79), fewest 8 of 9; the control failed as declared on 50 + 50 of 50 + 50.  Row: both blocks pooled (nothing was changed between them)", ONE_RESTART_BLOCKS)],
    sizes=LOCAL_SIZES,
)
def test_lp_direction_local(tc):
    r"""Restarts exactly on the ray (D_0 = 0, ||W(0)||_p = c ||W_mm||_p, c = max(5, 3/delta_safe)
    as in the module docstring; FLAGGED: chosen after a full-tier failure, see calibration): D_k
    first rises (a finite-norm transient, the spec's P9) and then decays.  Pass on every restart
    (31 checkpoints): the selected tokens equal alpha at every checkpoint; D_K <= 2e-2; D_K <=
    max_k D_k / 2 (decaying after the transient; thresholds chosen on seeds 1, 2).  The theorem
    says every restart; on unseen seeds a restart occasionally loses alpha (counts in the
    calibration record), so the decision is a binomial over the token sets restarted, each once
    (the restarts of one alpha at several p shared its instance and failed together): P[the token
    set's restart keeps the tokens alpha at every checkpoint with D_K <= 2e-2 and D_K <= max_k D_k /
    2] >= SET_RATE at level SET_ALPHA (calibrated), the gap to "every" a finding (docs).  The
    hypotheses choose the restarts (`local.restarts`: the pool's binomial and the restarts' delta_safe).  The theorem's
    constants (mu, R, eta small) are lost: normalized MD (the paper's experimental algorithm)
    replaces the small-step plain MD, whose norm grows only like log k.  The control (hypothesis)
    restarts on alpha' (not locally optimal): the tokens leave alpha' (the spec: 15/15).
    """
    r = restarts(tc)
    if r is None:
        return
    D, kept = r["D"], r["tokens_kept"].all(0)
    tc.record("D_K per restart", D[-1])
    tc.record("restarts that lost alpha", int((~kept).sum()))
    converged = kept & (D[-1] <= 2e-2) & (D[-1] <= D.max(0) / 2)
    tc.conclusion.binomial(KEEPING, per_token_set(r["token_set"], converged), p=SET_RATE, alpha=SET_ALPHA,
                           low_power=LOW_POWER)
    for j in range(min(3, D.shape[1])):
        tc.curve("local restarts", f"restart {j} (p={r['p'][j]:g})", r["t"][1:], D[1:, j],
                 xscale="log", yscale="log", xlabel="step k", ylabel="D_k")


MU = 0.05
MU_THIN = 0.005
THIN_START_ROUNDOFF = TailBound(0.0, (
    "by construction up to round-off: `local._on_cone_boundary` bisects s until its computed D(lo) < mu'_j <= "
    "MU_THIN (mu'_j = MU_THIN min(1, delta_safe)^max(2, p) rounds to at most MU_THIN, a product with a factor "
    "<= 1; lo = 0 gives D about u); the start W(0) is that direction times a scalar, and D_0 is "
    "1 - <grad psi(unit W(0)), unit W_mm> computed again (`divergence_curves`).  The two computed unit "
    "directions of each argument differ entrywise by at most 2(N + 5)u relatively (a normalization "
    "(sum_i |a_i|^p)^(1/p) of N = d^2 = 100 terms is within (N + 4)u, the rescaling u), which moves the exact "
    "D by at most (p - 1 + 1) 2(N + 5)u sum_i |u_i| |v_i|^(p-1) <= 2p(N + 5)u (Hoelder: the sum is <= 1 for "
    "unit u, v), and each evaluation of D errs by at most (N + 6)u S, S <= 2 (the `lem13` analysis, "
    "BREGMAN_LOWER_ROUNDOFF); so computed D_0 < MU_THIN + (2p(N + 5) + 4(N + 6))u <= MU_THIN + 1054u "
    "(p <= 3), below the allowance MU_THIN (1 + tol('iterative')) = MU_THIN + 5243u"))


@claim(
    f"{PAPER}.lem28.cone_invariance",
    source="Lemma 28 (Appendix A.4)",
    statement="For locally optimal alpha there are a cone C_{p,mu,R}(W_mm_alpha) and a thinner one "
              "such that iterates started in the thinner cone stay in the wider one forever.",
    provenance="stated",
    controls={"not_locally_optimal": Control(
        "hypothesis", breaks=[STAYING],
        description="alpha' = alpha with one sample moved to its lowest-score token (distinct per "
                    "token set), started on the thinner cone of its own l_p-AttSVM")},
    constants={"mu": MU, "mu_thin": MU_THIN},
    calibration=["mu = 0.05 is the spec's choice (fixed before the data).  The thinner cone was first "
                 "mu' = mu/10 for every restart; on seed 7 a restart with delta_safe 0.076 (p = 1.75) left "
                 "the cone from it.  Re-chosen on seeds 1-10 for the lemma's reason (its thinner cone depends "
                 "on delta): mu' = (mu/10) min(1, delta_safe)^max(2, p), then checked on seeds 0, 11-19.",
                 "every restart -> binomial P >= 0.8 at level 3e-4 after the review: on 3 of 10 unseen "
                 "seeds a restart left the cone (max D 0.12-0.17); the gap to 'forever' is a finding; mu' "
                 "not re-chosen.",
                 restart_rate_history("restarts staying in the cone D_k <= mu with constant tokens, every step",
                             "25 + 25 seeds (a seed costs ~60 s): restarts leaving the cone 1 of 225 "
                             "(calibration), 5 of 225 (validation; 3 in one seed, on one alpha "
                             "across p), fewest successes 8 and 6 of 9; 0.8 lies below the observed "
                             "~0.97 and the level is the claim budget; the control failed as declared "
                             "on every seed of both blocks"),
                 SET_HISTORY,
                 set_rate_record(STAYING, "rule before the blocks (SET_HISTORY): calibration 28000-28036 (37 seeds, 3 to 5 token sets a seed): 5 of 129 token sets left the cone, 99.9% lower bound 0.878 >= 0.8, so SET_RATE = 0.8; dispersion p 0.58.  Validation 28100-28147 (48 seeds): 0 seeds failed, 5 of 170 token sets failed (dispersion p 0.70), fewest 2 successes of 3; the control failed as declared on 37 + 48 of 37 + 48.  Row: both blocks pooled (the rate was not changed between them)", THREE_RESTART_BLOCKS),
                 ONE_RESTART,
                 set_rate_record(STAYING, "rule before the blocks (SET_HISTORY), on the one-restart token sets: calibration 123000-123049 (50 seeds, 9 token sets each): 23 of 450 left the cone (0.949), 99.9% lower bound 0.909 >= 0.8, so SET_RATE = 0.8 is kept; dispersion p 0.88, fewest 7 successes of 9.  Validation 123500-123549 (50 seeds): 0 seeds failed, 9 of 450 token sets failed (dispersion p 0.76), fewest 8 of 9; the control failed as declared on 50 + 50 of 50 + 50.  Row: both blocks pooled (nothing was changed between them)", ONE_RESTART_BLOCKS)],
    sizes=LOCAL_SIZES,
)
def test_cone_invariance(tc):
    r"""The cone S_{p,mu} = {W : D_psi(W_mm/||W_mm||_p, W/||W||_p) <= mu}.  The paper's mu, R are
    dataset constants that could not be recovered (and are tiny, ~1e-9, in the reconstruction);
    the behaviour is tested with the spec's mu = 0.05 and an explicit thinner cone mu' = mu/10:
    each restart (the local theorem's restarts, module docstring) starts on the boundary of its
    thinner cone, D_0 = mu'_j = (mu/10) min(1, delta_safe)^max(2, p) (`local.thin_cone_widths`:
    Lemma 28's thinner cone depends on the instance's delta through Lemma 19's mu(delta) ~ eps^2
    or eps^p, eps proportional to delta; off the SVM ray, in a Gaussian direction; a precondition
    checks D_0 <= mu/10), at radius c ||W_mm||_p, c = max(5, 3/delta_safe) (FLAGGED, see the module
    docstring; the precondition's allowance tol("iterative") relative covers D_0's round-off, so
    it states bound 0 on the claim's case, `THIN_START_ROUNDOFF`).  Per restart, at EVERY step
    k <= K: D_k <= mu and the selected tokens stay alpha.  The lemma says every restart; on unseen
    seeds a restart occasionally leaves the cone (counts in the calibration record), so the
    decision is a binomial over the token sets restarted, each once (a token set succeeds when its
    restart stays), P >= SET_RATE at level SET_ALPHA (calibrated), the gap a finding (docs).  The control (hypothesis) restarts on alpha' (not locally optimal) from
    its own thinner cone: the iterates leave the cone.
    """
    r = restarts(tc, thin_cone=MU_THIN)
    if r is None:
        return
    tc.record("D_0 per restart (the thinner cone's width)", r["D"][0])
    tc.precondition.at_most("start in the thinner cone: D_0 <= mu', every restart", r["D"][0], MU_THIN,
                            rmargin=tc.tol("iterative"), tail_bound=None if tc.control else THIN_START_ROUNDOFF)
    tc.record("max_k D_k per restart", r["D"].max(0))
    tc.record("steps checked", len(r["t"]))
    inside = (r["D"].max(0) <= MU) & r["tokens_kept"].all(0)
    tc.record("restarts that left the cone or changed tokens", int((~inside).sum()))
    tc.conclusion.binomial(STAYING, per_token_set(r["token_set"], inside), p=SET_RATE, alpha=SET_ALPHA,
                           low_power=LOW_POWER)
