r"""Table 1 and Theorem 1 (sample complexity), at reduced scale: test error of the baseline,
attention and l1-regularised attention trained on data from a sparse-mask teacher."""
import numpy as np

from theorycheck import Calibrated, Control, claim, discrepancy
from theorycheck.maps import mean_interval
from theorycheck.patterns import per_instance
from theorycheck.tails import NullTest

from .sample_complexity import (SIZES, TABLE1, arms, decided_sizes, dense_teacher_config,
                                final_mse, first_size_reaching, frozen_mask_is_teachers,
                                log_mse_auc, teacher_support)
from .setup import PAPER
from .table2 import gap_z_statistics

ARMS = ("baseline", "attention", "regularised", "known")
TRIAL_RATE, TRIAL_ALPHA = 0.95, 0.05
"""'regularised attention at most attention' per trial: the trial's ordering holds at every decided n
with probability at least TRIAL_RATE, by the exact one-sided binomial test at level TRIAL_ALPHA over
the independent trials (each its own teacher, data and start); both fixed from the framework's
defaults before any seed (the claim's false-failure rate is then the test's size at the measured
per-trial rate, far above TRIAL_RATE: calibration record)."""
TRIAL_LOW_POWER = ("the trials are the quick tier's shared runs of table1, prop1 and fig7 (24, and 6 "
                   "in the full tier), sized to the paper's 60 s; the dense_teacher control's 48 trials "
                   "have power above 0.9 at the 0.80 alternative, and its per-trial rate is far below it")


@claim(
    f"{PAPER}.table1.sample_complexity_ordering",
    source="Table 1, Sec. 5.1.1 ('Regularization'), Theorem 1 and its remark",
    statement="On data from a sparse-mask teacher, at equal n the test MSE is ordered baseline > "
              "attention >= attention + l1 on a, and every arm's test MSE decreases with n (attention >= "
              "attention + l1 read as an ordering of single training runs, as Table 1 prints them, "
              "holding with high probability).",
    provenance="derived",
    constants={"strict": 1.01, "fourfold": 4, "trial_rate": TRIAL_RATE, "trial_alpha": TRIAL_ALPHA},
    controls={
        "dense_teacher": Control(
            "hypothesis", breaks=["regularised attention at most attention",
                                  "attention test MSE below the baseline's"],
            description="every arm rerun on a dense teacher that attends to all p inputs (k = p), "
                        "with the tier's dense_instances trials: the l1 term on a then pulls against a "
                        "mask that must stay dense, and Theorem 1 gives attention no advantage"),
        "fourfold_samples": Control(
            "statement", breaks=["attention test MSE below the baseline's"],
            description="attention at n against the baseline at fourfold n (the pairs of the "
                        "grid): a fourfold sample saving, far less than the (k/p)^2 ratio of "
                        "the bounds at the tier's sizes"),
    },
    calibration=[
        "ordering thresholds as in the reconstruction; the 1.01 (strict by 1%) was made strict "
        "after a planted defect tied; chosen on seeds 1, 2 (every trial ordered), checked on 0",
        "full tier, seed 0, CPU (2026-11-24): baseline/attention 1.12, 1.74, 1.25 at n = 2000, "
        "5000, 10000; every trial ordered; not held out",
        "the fourfold_samples control was fixed after the full-tier run (sizes without a 4n "
        "were NaN entries, a misfire): it now compares the pairs (n, 4n) of the grid",
        "dense_teacher control (issue 32, a real control: every arm rerun with k = p), quick "
        "tier, seeds 1000-1008: regularised minus attention mean test MSE +0.003 .. +0.027 at "
        "one n at least on all 9 (broken as declared); its first design, breaking the "
        "baseline/attention ordering, passed on 2 of 6 seeds (ratios 0.98 .. 1.024 at n = 100, "
        "1.13 .. 1.30 at n = 400): a finding: with a dense teacher attention still beats the "
        "baseline at n = 400, so part of the measured advantage is not sparsity (the "
        "multiplicative a speeds up Adam), which Theorem 1 does not predict",
        "calibration block 1000-1024 (25 seeds, quick tier; the claim costs > 5 s a seed): the "
        "claim held on all 25; the dense_teacher control broke 'regularised at most attention' "
        "on 22, the ratio alone on 1 (hence both declared) and nothing on 2 (1009, 1015: "
        "ratios 1.025, 1.043 at n = 100): a miss rate near 0.08, over the budget 1e-2; left "
        "open (a stronger perturbation or more trials is needed; not loosened)",
        "superseded design (the mean gap over 24 trials, 48 in the control, <= 0; calibration block "
        "5000-5024, validation 6000-6024): "
        "the threshold 0 is the statement's; the trial counts from the calibration block "
        "run at 24 trials (600 trials per arm and n, exchangeable): per-trial regularised "
        "minus attention final test MSE, sparse teacher: mean -0.117 sd 0.040 (n = 100), "
        "-0.0124 sd 0.0082 (n = 400: at 3 trials only 2.6 se below 0, a false-failure rate "
        "near 5e-3; at 24 trials 7.4 se); dense teacher: -0.0135 sd 0.043 (n = 100), "
        "+0.0048 sd 0.0116 (n = 400; positive on 25 of 25 seed means of 24 trials). The "
        "control misses when neither break fails at either n: subsampling the block's "
        "trials gave miss rates 0.039 (3 trials), 0.020 (6), 0.0096 (12), 0.0074 (16); at 48 "
        "the n = 400 break alone holds 2.9 se (normal model 2e-3), and the baseline/attention "
        "ratio at n = 100 (per-trial median 1.004 under the dense teacher) breaks about half "
        "of the rest. Calibration block measured with the shared run's function directly "
        "(600 trials per arm and n); validation block by theorycheck calibrate "
        "(docs/calibration.md): the claim held on 25 of 25 (regularised minus attention at "
        "n = 400: mean -0.0133, sd 0.0017 over seeds, 7.8 sd from 0), the dense_teacher "
        "control failed as declared on 25 of 25 (its n = 400 gap +0.0053, sd 0.0013, "
        "smallest +0.0028: 4.0 sd from 0), fourfold_samples on 25 of 25",
        "rows 2026-11-29 (issue 31/32), block 85500-85649 (150 seeds; 50 first, then 100 more for the "
        "control's bound, nothing changed): dense_teacher failed as declared on 150 of 150 and is bounded "
        "through its n = 400 gap alone (the least-element bound of docs/calibration.md: regularised minus "
        "attention +0.0051, sd 0.0016 over seeds, 3.2 sd, normal) at 0.0047; the claim's 'regularised "
        "attention at most attention' held on 150 of 150 (n = 400 element 6.5 sd from 0) but its margins "
        "are skewed (Shapiro-Wilk p 1e-5 at 150 seeds; 50 seeds had not seen it), so it is counted: 0.02, "
        "over the claim budget (open: more trials at n = 400, or a tail model of the mean gap).",
        Calibrated(
            decision="regularised attention at most attention",
            threshold="per trial, regularised final test MSE <= attention's at every decided n: P >= TRIAL_RATE = "
                      "0.95 by the exact binomial test at level TRIAL_ALPHA = 0.05 (24 trials: rejects at 4 "
                      "reversed trials; the dense_teacher control's 48: at 6)",
            calibration_seeds="150000-150024", validation_seeds="150100-150149",
            how="issue 31, 2026-12-05 (thirty-third session): the decision on the mean gap (above, counted at "
                "0.02: skewed margins) replaced by the per-trial ordering, the reading of Table 1's single runs; "
                "rate and level the framework's defaults (no threshold chosen on data). Scratch exploration on "
                "seeds 150000-150040 (the previous session, the shared run's function directly): every trial "
                "ordered at n = 100 and 400 on the sparse teacher; on the dense teacher the ordering held on "
                "0.52-0.83 of a seed's 48 trials at n = 100 and 0.12-0.27 at n = 400. Calibration block by "
                "theorycheck calibrate: the event held in 600 of 600 trials (claim bound 6.0e-6, pooled trials), "
                "dense_teacher held it in 0.139 of its trials (miss 1.8e-29, dispersion p 0.39), fourfold_samples "
                "1.1e-26. Validation block: 1198 of 1200 trials (one reversed on each of 150121 and 150122; dispersion "
                "p 0.51), the claim's bound 7.4e-6 within the budget; dense_teacher 0.139 (miss 4.2e-30), "
                "fourfold_samples 4.1e-60; every control failed as declared on 50 of 50"),
        "magnitude gap (a finding, recorded as 'baseline/attention ratio: ours per decided n' "
        "beside 'Table 1 as printed'): seed 0 quick tier ours 1.3 and 2.3 at n = 100, 400; "
        "full tier 1.12 .. 1.74; printed 3.84 .. 10.76 at n >= 10000",
    ],
    sizes=SIZES,
)
def test_sample_complexity_ordering(tc):
    r"""Teacher (Sec. 5.1.1, reduced scale): ``x ~ N(0, I_p)``, ``y = relu((x * a*) W*) V*``
    with ``a*`` the indicator of ``k`` random inputs (``p = 32, k = 4``), teacher width 8, 4
    outputs, noise-free.  Students as in Table 1 (biases in both layers, several outputs;
    width 16; at Table 1's shapes 256-128-10 they have the header's 34186 / 34442 parameters,
    rebuilt in ``model.param_counts``): the baseline, the attention network with trainable
    ``a`` (from 1), and attention with ``1e-3 ||a||_1``; shared initialisation, full-batch
    Adam with a cosine-decayed step (the paper's SGD with 400k iterations is out of reach),
    test MSE over samples and outputs on fresh samples.  Decided at each n up to
    ORDERING_UP_TO = 10000 (the full tier's n = 20000 is recorded, not decided: the
    reconstruction's paper-scale run had every arm at the optimisation floor there), on the
    means over trials (24 in the quick tier, 6 in the full): baseline at least ``strict = 1.01``
    times attention (strict: an attention arm that ignored its mask would tie), and each arm's
    mean decreasing in n (decided as every successive ratio of the means at most 1: for
    positive MSEs the same decision as a decreasing series, with the ratios' distance to 1 as
    its margin).  Regularised <= attention is decided per trial: Table 1 prints one training
    run per n, so the ordering it shows is one of single runs, read here as holding in a run
    (at every decided n) with probability at least ``TRIAL_RATE = 0.95``, accepted by the exact
    one-sided binomial test at level ``TRIAL_ALPHA = 0.05`` over the independent trials (the
    gap of the means is small against its spread over trials and skewed, so a threshold on the
    mean has no designed rate; the mean gap per n is recorded beside it).  Table 1 as printed (cited data: its six sizes have attention below the
    baseline, as decided here on our n) is recorded beside our ratio of means: the printed
    magnitudes are not reproduced (a finding, not a decision: k, the teacher, the loss
    normalisation and SGD's 400k iterations were lost, and the quick tier is reduced).  The
    reconstruction saw the ordering reverse at n = 20000 for a denser mask (k = 32) with a
    weak l1 term: a finite-sample effect, held here where the baseline has not interpolated.
    Controls: every arm rerun on a dense teacher (``k = p``, a hypothesis violated: the l1
    term then pulls against a mask that must stay dense, and regularised attention is no
    longer the best; ``dense_instances`` = 48 trials in the quick tier, `dense_teacher_config`);
    and attention at n against the baseline at 4n (discrimination).
    """
    s = tc.sizes
    config = dense_teacher_config(tc)
    tc.precondition.at_most("teacher mask sparse (k < p)", teacher_support(s, config.get("dense_teacher", False)), s["p"] - 1)
    runs = arms(tc, "baseline", "attention", "regularised", **config)
    mean = {arm: final_mse(r) for arm, r in runs.items()}
    for arm, values in mean.items():
        tc.curve("Table 1 (reduced): test MSE against n", arm, s["n"], values, xscale="log",
                 yscale="log", ylabel="test MSE")
    tc.record("mean test MSE per n", mean)
    final = {arm: [r["test_mse"][:, -1] for r in rs] for arm, rs in runs.items()}
    tc.record("trials ordered baseline > attention > regularised, per n",
              [int(np.sum((b > a) & (a >= r))) for b, a, r in
               zip(final["baseline"], final["attention"], final["regularised"])])
    decided = decided_sizes(s["n"])
    tc.record("n decided (the rest recorded: every arm at the optimisation floor)",
              [n for n, d in zip(s["n"], decided) if d])
    baseline, attention = mean["baseline"][decided], mean["attention"][decided]
    tc.record("Table 1 as printed: n -> (baseline, attention, regularised)", TABLE1)
    tc.record("finding: baseline/attention ratio, ours per decided n and Table 1's per printed n",
              {"ours": baseline / attention,
               "printed": np.array([TABLE1[n][0] / TABLE1[n][1] for n in sorted(TABLE1)])})
    if tc.control == "fourfold_samples":
        # the pairs (n, 4n) of the grid
        fourfold = [n for n in s["n"] if 4 * n in s["n"]]
        baseline = np.array([mean["baseline"][s["n"].index(4 * n)] for n in fourfold])
        attention = np.array([mean["attention"][s["n"].index(n)] for n in fourfold])
    tc.conclusion.at_least("attention test MSE below the baseline's", baseline / attention,
                           1.01, margin=0.0)
    tc.record("regularised minus attention mean test MSE per decided n",
              mean["regularised"][decided] - mean["attention"][decided])
    gaps = np.stack(final["regularised"])[decided] - np.stack(final["attention"])[decided]
    per_instance(tc, "regularised attention at most attention", gaps.T, (gaps <= 0).all(0),
                 p=tc.constants["trial_rate"], alpha=tc.constants["trial_alpha"], low_power=TRIAL_LOW_POWER)
    for arm, values in mean.items():
        tc.conclusion.at_most(f"{arm} test MSE decreases with n", successive_ratios(values[decided]), 1.0)


def successive_ratios(values: np.ndarray) -> np.ndarray:
    """``values[i + 1] / values[i]``: a positive series is non-increasing exactly when every
    ratio is at most 1."""
    return values[1:] / values[:-1]


KNOWN_MASK_ALPHA = 1e-4
"""Level of Prop. 1's test over the decided n together (Bonferroni): a third of the claim budget
3e-4, fixed from the budget before any seed; the stated false-failure bound of the claim."""


@claim(
    f"{PAPER}.prop1.known_mask",
    source="Proposition 1 (known attention, objective (5)), Sec. 5.1.1",
    statement="Given the true mask a* (only W1, W2 trained), the test MSE is at most that of "
              "learned attention at equal n: no covering of a is needed.",
    provenance="inferred",
    constants={"alpha": KNOWN_MASK_ALPHA},
    controls={
        "wrong_mask": Control(
            "hypothesis", breaks=["known mask at most learned attention"],
            description="the 'known' mask is k inputs outside the teacher's support (A3 fails "
                        "for the known-mask model)"),
    },
    calibration=["plain ordering (threshold 0) as in the reconstruction; seeds 1, 2 gave "
                 "ratios far below 1, checked on 0",
                 "trials 3 -> 24 (the runs of table1.sample_complexity_ordering, redesigned there); "
                 "validation block 6000-6024 by theorycheck calibrate: held on 25 of 25, known minus "
                 "attention at n = 400 mean -0.022, sd 0.0043 over seeds (5.2 sd from 0); wrong_mask "
                 "failed as declared on 25 of 25",
                 "helper h12 (2026-11-30): the plain ordering of the means (counted, 0.058 on "
                 "29000-29049: margins 4.7 sd from 0, not normal) replaced by a one-sided paired t test "
                 "of the statement as one about expectations, its level alpha = 1e-4 (from the budget, "
                 "not from seeds) stated as the bound (NullTest on the paired t statistics as normal "
                 "quantiles, table2.gap_z_statistics, as table2.selfattention_surrogate); nothing chosen "
                 "on seeds"],
    sizes=SIZES,
)
def test_known_mask(tc):
    r"""Prop. 1 drops the covering of ``a`` from Theorem 1: with ``a = a*`` known, the
    bound has ``pd + d`` parameters instead of ``pd + p + d`` (``N_prop1 < N_att``, checked
    as algebra in ``thm1.bound_algebra``); the measurable consequence is that the known-mask
    model is at least as good as learned attention.  Runs of ``table1.sample_complexity_
    ordering`` (same data and initialisation; the known arm is the baseline network on
    ``x * a*``).  Precondition: the frozen mask is the teacher's in every trial, a property of
    the arm's rule (`sample_complexity.frozen_mask`) decided on the configuration before any
    run (seed-independent); the fraction over the drawn masks is recorded.  The statement is
    one about expected test MSE, ``E[known - attention] <= 0`` at every n up to ORDERING_UP_TO
    = 10000 (in the full tier n = 20000 is recorded, not decided: every arm at the
    optimisation floor there in the reconstruction's run), decided on the paired per-trial
    gaps (known - attention, final test MSE; the arms share data and start) by a one-sided
    Student t test per decided n: the paired t statistic as its standard-normal quantile
    ``z`` (`table2.gap_z_statistics`, exactly N(0, 1) at a true gap of 0 for normal gaps) must
    stay at most ``Phi^{-1}(1 - KNOWN_MASK_ALPHA / count)`` (Bonferroni over the decided n).
    The null "gap <= 0" is composite and the rejection probability is largest at its boundary
    0, so wherever the statement holds the claim fails with probability at most
    ``KNOWN_MASK_ALPHA``, the decision's stated bound (``NullTest``, its null checked by the
    calibration on the recorded ``z``).  The mean ordering (known ``<=`` attention) is
    recorded.  The control freezes a wrong mask, which raises the known arm's test MSE far
    above attention's.
    """
    arm = "known_wrong" if tc.control == "wrong_mask" else "known"
    tc.precondition.at_least("frozen mask is the teacher's in every trial",
                             float(frozen_mask_is_teachers(tc.sizes, arm)), 1.0)
    runs = arms(tc, arm, "attention")
    decided = decided_sizes(tc.sizes["n"])
    known, attention = final_mse(runs[arm])[decided], final_mse(runs["attention"])[decided]
    tc.record("mean test MSE per n: known mask, attention", {"known": known, "attention": attention})
    tc.record("fraction of trials whose frozen mask is the teacher's (drawn masks)",
              float(np.mean([r["mask_is_teachers"].mean() for r in runs[arm]])))
    tc.record("mean ordering known - attention per decided n (not decided)", known - attention)
    z = gap_z_statistics([k["test_mse"][:, -1] - a["test_mse"][:, -1]
                          for k, a, kept in zip(runs[arm], runs["attention"], decided) if kept])
    tc.record("paired t statistic of known - attention as a standard-normal quantile, per n", z)
    test = NullTest(level=tc.constants["alpha"], count=len(z), sided="upper")
    tc.conclusion.at_most("known mask at most learned attention", z, test.critical,
                          tail_bound=test.tail_bound)


FIG7_ALPHA = 1e-2
"""One-sided level of Fig. 7's orderings: each is decided by the lower Student-t bound of the
mean per-trial speed gap at this level, so two arms that tie (equal speed in expectation) pass
with probability at most FIG7_ALPHA, the control budget (a tie is what the orderings exclude)."""


@claim(
    f"{PAPER}.fig7.regression_convergence",
    source="App. F.2, Fig. 7 (test loss during training on the Table 1 task)",
    statement="On the Table 1 task, regularised attention converges fastest, then attention, "
              "then the baseline; the known mask is faster than learned attention.",
    provenance="inferred",
    constants={"alpha": FIG7_ALPHA},
    controls={
        "dense_teacher": Control(
            "hypothesis", breaks=["regularised converges faster than attention",
                                  "known mask converges faster than attention"],
            description="every arm rerun on a dense teacher that attends to all p inputs (k = p), "
                        "with the tier's dense_instances trials: no sparsity for the l1 term to find, "
                        "and the known mask is all ones"),
        "regularised_as_fast_as_known": Control(
            "statement", breaks=["regularised converges faster than attention"],
            description="regularised attention as fast as knowing the mask (its speed gap to the "
                        "known mask's)"),
    },
    calibration=["margin 0.01 chosen on seeds 1 and 2, checked on 0; the reconstruction saw "
                 "AUC -0.68 (regularised) against -4.53 (known) at n = 200",
                 "dense_teacher control (issue 32, a real control: every arm rerun with k = p), "
                 "quick tier, seeds 1000-1008: the regularised-minus-attention speed gap -0.007 .. "
                 "+0.014 (below the 0.01 margin at one n at least on all 9), and the known mask "
                 "(all ones) is the baseline itself; attention stays faster than the baseline "
                 "(gaps 0.02 .. 0.19, a finding: not from sparsity)",
                 "calibration block 1000-1024 (25 seeds, quick tier, 3 trials, AUC of the "
                 "trial-mean curve >= 0.01 ahead): the dense_teacher control broke as declared on "
                 "all 25; the claim failed once ('known mask converges faster than attention')",
                 Calibrated(
                     decision="known mask converges faster than attention",
                     threshold="lower one-sided t-bound at level 1e-2 of the mean per-trial gap > 0, "
                               "24 trials",
                     calibration_seeds="5000-5024", validation_seeds="6000-6024",
                     how="why it failed: the per-trial speed gap (attention - known mask, mean log "
                         "test MSE over the checkpoints) at n = 400 has mean 0.457, sd 0.250 and a "
                         "left tail (2.5% of 600 trials of the calibration block below 0: trials "
                         "where the multiplicative a makes Adam faster than the known mask), so 3 "
                         "trials held it only about 3 se above the 0.01 margin. Redesign: a mean over "
                         "24 trials (all arms, shared with table1 and prop1) with its interval; the "
                         "level 1e-2 is the control budget (a tie), not chosen on data; the trial "
                         "count from the calibration block's per-trial moments: the weakest "
                         "ordering (known vs attention at n = 400) has mean / se = 9.0 at 24 trials, "
                         "so the lower bound (t_{23, 0.99} = 2.50 se) leaves 6.5 se (normal model: "
                         "< 1e-10); the others: regularised vs attention 0.196 / 0.110 (n = 400) "
                         "and 0.211 / 0.114 (n = 100), attention vs baseline 0.233 / 0.088 (n = 100): "
                         "mean / sd per trial (calibration block measured with the shared run's "
                         "function directly, 600 trials per arm and n). Validation block by "
                         "theorycheck calibrate (docs/calibration.md): the claim held on 25 of 25, "
                         "its weakest lower bound (regularised vs attention, n = 100) mean 0.157, sd "
                         "0.020 over seeds (7.8 sd from 0), known vs attention at n = 400 0.327, sd "
                         "0.040; the dense_teacher control failed as declared on 25 of 25 (known vs "
                         "attention lower bounds -0.033 and -0.156, 8.3 and 16.9 sd below 0)"),
                 "full tier, trials 3 -> 6 (2026-11-29): with 3 trials the one-sided t-bounds at "
                 "level 1e-2 had 2 degrees of freedom (t = 6.96) and 'attention converges faster "
                 "than the baseline' failed at the full tier's seed 0 (commit f8cb94a) with every "
                 "mean gap positive; 6 is the count the dense_teacher control already ran, chosen "
                 "for its 5 degrees of freedom (t = 3.36), the level unchanged; not calibrated on a "
                 "block of seeds (a full-tier seed costs hours of CPU for these arms)"],
    sizes=SIZES,
)
def test_regression_convergence(tc):
    r"""Speed per trial as the area under the log test-MSE curve: ``AUC = mean_t log MSE_t``,
    checkpoints every 20 of 200 Adam steps (full: every 200 of 2000), runs of
    ``table1.sample_complexity_ordering`` and ``prop1.known_mask`` (the trials are independent
    draws of teacher, data and initialisation; every arm of a trial shares them).  Pass, at
    every n, for each of ``AUC_reg < AUC_att``, ``AUC_att < AUC_base`` and ``AUC_known <
    AUC_att``: the lower one-sided Student-t bound, at level ``alpha = FIG7_ALPHA = 1e-2``, of
    the mean over trials of the paired per-trial gap is positive (strict: two arms that tie
    fail with probability at least 1 - alpha).  The claim's false-failure rate is the test's
    power deficit at the measured gaps (calibration record).  The trial-mean curves are
    plotted.  Controls: every arm rerun on a dense teacher (``k = p``, with the tier's
    ``dense_instances`` trials: the l1 term has nothing to prune, and the known mask, all ones, is
    the baseline), and the regularised arm asked to be as fast as the known mask
    (discrimination).  The full tier's 6 trials give the t-bound 5 degrees of freedom (not
    calibrated: a full-tier seed costs hours).
    """
    s = tc.sizes
    config = dense_teacher_config(tc)
    tc.precondition.at_most("teacher mask sparse (k < p)", teacher_support(s, config.get("dense_teacher", False)), s["p"] - 1)
    runs = arms(tc, *ARMS, **config)
    auc = {arm: log_mse_auc(r) for arm, r in runs.items()}
    tc.record("mean over trials of the AUC (mean log test MSE) per n", {a: v.mean(1) for a, v in auc.items()})
    steps = s["every"] * np.arange(1, s["steps"] // s["every"] + 1)
    for arm, r in runs.items():
        tc.curve(f"Fig. 7 (reduced): test MSE during training, n = {s['n'][-1]}", arm, steps,
                 r[-1]["test_mse"].mean(0), yscale="log", ylabel="test MSE")
    faster = "known" if tc.control == "regularised_as_fast_as_known" else "attention"
    orderings = {"attention converges faster than the baseline": ("baseline", "attention"),
                 "regularised converges faster than attention": (faster, "regularised"),
                 "known mask converges faster than attention": ("attention", "known")}
    for name, (slow, fast) in orderings.items():
        gaps = auc[slow] - auc[fast]
        est, lower, _ = np.array([mean_interval(g, 1 - 2 * tc.constants["alpha"]) for g in gaps]).T
        tc.record(f"{name}: mean per-trial AUC gap per n", est)
        tc.conclusion.at_least(name, lower, 0.0)


@discrepancy(
    f"{PAPER}.table1.DISCREPANCY_threshold_007",
    source="Sec. 5.1.1 text vs Table 1",
    statement="To attain the desired error 0.07, attention models need 14000 samples, whereas "
              "baseline models need 20000.",
    corrected_by=f"{PAPER}.table1.sample_complexity_ordering",
    provenance="stated",
    constants={"level": 0.07, "text_level": 0.08},
    single_evidence="two printed statements of the paper (the text's sample sizes and Table 1) "
                    "compared with each other: no computation of ours to perturb",
    controls={
        "text_threshold_008": Control(
            "statement", breaks=["baseline first reaches 0.07 after 20000 samples"],
            description="the level 0.08 instead of 0.07: the baseline then reaches it at 20000, "
                        "as the text says"),
    },
    sizes={"quick": {}, "full": {}},
)
def test_threshold_discrepancy(tc):
    r"""The text's sample sizes against the paper's own Table 1 (cited data, TABLE1): the
    baseline's printed test loss at n = 20000 is 0.0769 > 0.07, and the first tabulated size
    where it is at most 0.07 is 50000 (0.0511); attention first reaches it at 14000 (0.0382),
    as the text says.  This compares two statements of the paper with each other (no
    measurement of ours can reproduce the lost setting); the ordering the sentence
    illustrates is what `table1.sample_complexity_ordering` checks on our runs.  Pass: the
    first baseline size reaching 0.07 exceeds 20000, and attention's is 14000 (exact, sizes
    are integers).  The control takes the level 0.08, where the text's 20000 is right.
    """
    level = 0.08 if tc.control == "text_threshold_008" else 0.07
    baseline, attention = first_size_reaching(0, level), first_size_reaching(1, level)
    tc.record("first tabulated n reaching the level: baseline, attention", [baseline, attention])
    tc.conclusion.at_least("baseline first reaches 0.07 after 20000 samples", baseline, 20001)
    tc.conclusion.close("attention first reaches the level at 14000", attention, 14000, atol=0.5)
