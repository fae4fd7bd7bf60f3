r"""Table 1 and Theorem 1 (sample complexity), at reduced scale: test error of the baseline,
attention and l1-regularised attention trained on data from a sparse-mask teacher."""
import numpy as np
import torch

from theorycheck import Control, claim, discrepancy
from theorycheck.models import RELU, BiasedAttentionNet, BiasedBaselineNet

from .sample_complexity import (SIZES, TABLE1, arms, decided_sizes, final_mse, first_size_reaching,
                                log_mse_auc)
from .setup import PAPER

ARMS = ("baseline", "attention", "regularised", "known")


@claim(
    f"{PAPER}.table1.sample_complexity_ordering",
    source="Table 1, Sec. 5.1.1 ('Regularization'), Theorem 1 and its remark",
    statement="On data from a sparse-mask teacher, at equal n the test MSE is ordered baseline > "
              "attention >= attention + l1 on a, and every arm's test MSE decreases with n.",
    provenance="derived",
    controls={
        "fourfold_samples": Control(
            "statement", breaks=["attention test MSE below the baseline's"],
            description="attention at n against the baseline at 4n: a fourfold sample saving, "
                        "far less than the (s0/p)^2 = 1/64 ratio of the bounds"),
    },
    sizes=SIZES,
)
def test_sample_complexity_ordering(tc):
    r"""Teacher (Sec. 5.1.1, reduced scale): ``x ~ N(0, I_p)``, ``y = relu((x * a*) W*) V*``
    with ``a*`` the indicator of ``k`` random inputs (``p = 32, k = 4``), teacher width 8, 4
    outputs, noise-free.  Students as in Table 1 (biases in both layers, several outputs;
    width 16): the baseline, the attention network with trainable ``a`` (from 1), and
    attention with ``1e-3 ||a||_1``; shared initialisation, full-batch Adam with a
    cosine-decayed step (the paper's SGD with 400k iterations is out of reach), test MSE over
    samples and outputs on fresh samples.  Pass, on the mean over trials at each n up to
    ORDERING_UP_TO = 10000 (the full tier's n = 20000 is recorded, not decided: the
    reconstruction's paper-scale run had every arm at the optimisation floor there): baseline
    at least 1.01 times attention (strict: an attention arm that ignored its mask would tie),
    regularised <= attention, and each arm's mean decreasing in n.  Thresholds: orderings
    as in the reconstruction (the 1% made strict after a planted defect tied); chosen on seeds 1, 2 (every trial
    ordered), checked on 0.  Per-trial orderings are recorded, not decided (three trials
    cannot give a binomial test power).  Table 1's printed values are compared with ours in
    ``table1.reported_values``.  The reconstruction saw the ordering reverse at n = 20000
    for a denser mask (k = 32) with a weak l1 term: a finite-sample effect, held here where
    the baseline has not interpolated.
    """
    s = tc.sizes
    runs = arms(tc, "baseline", "attention", "regularised")
    mean = {arm: final_mse(r) for arm, r in runs.items()}
    for arm, values in mean.items():
        tc.curve("Table 1 (reduced): test MSE against n", arm, s["n"], values, xscale="log",
                 yscale="log", ylabel="test MSE")
    tc.record("mean test MSE per n", mean)
    final = {arm: [r["test_mse"][:, -1] for r in rs] for arm, rs in runs.items()}
    tc.record("trials ordered baseline > attention > regularised, per n",
              [int(np.sum((b > a) & (a >= r))) for b, a, r in
               zip(final["baseline"], final["attention"], final["regularised"])])
    tc.precondition.at_most("teacher mask sparse (k < p)", s["k"], s["p"] - 1)
    decided = decided_sizes(s["n"])
    tc.record("n decided (the rest recorded: every arm at the optimisation floor)",
              [n for n, d in zip(s["n"], decided) if d])
    baseline, attention = mean["baseline"][decided], mean["attention"][decided]
    if tc.control == "fourfold_samples":
        # the pairs (n, 4n) of the grid; FIXED AFTER THE FULL-TIER RUN (flagged): sizes without
        # a 4n were NaN entries, and a check failing only through NaN counts as a misfire
        fourfold = [n for n in s["n"] if 4 * n in s["n"]]
        baseline = np.array([mean["baseline"][s["n"].index(4 * n)] for n in fourfold])
        attention = np.array([mean["attention"][s["n"].index(n)] for n in fourfold])
    tc.conclusion.at_least("attention test MSE below the baseline's", baseline / attention,
                           1.01, margin=0.0)
    tc.conclusion.at_most("regularised attention at most attention",
                          mean["regularised"][decided] - mean["attention"][decided], 0.0)
    for arm, values in mean.items():
        tc.conclusion.monotone(f"{arm} test MSE decreases with n", values[decided], increasing=False)


@claim(
    f"{PAPER}.prop1.known_mask",
    source="Proposition 1 (known attention, objective (5)), Sec. 5.1.1",
    statement="Given the true mask a* (only W1, W2 trained), the test MSE is at most that of "
              "learned attention at equal n: no covering of a is needed.",
    provenance="inferred",
    controls={
        "wrong_mask": Control(
            "hypothesis", breaks=["known mask at most learned attention"],
            description="the 'known' mask is k inputs outside the teacher's support (A3 fails "
                        "for the known-mask model)"),
    },
    sizes=SIZES,
)
def test_known_mask(tc):
    r"""Prop. 1 drops the covering of ``a`` from Theorem 1: with ``a = a*`` known, the
    bound has ``pd + d`` parameters instead of ``pd + p + d`` (``N_prop1 < N_att``, checked
    as algebra in ``thm1.bound_algebra``); the measurable consequence is that the known-mask
    model is at least as good as learned attention.  Runs of ``table1.sample_complexity_
    ordering`` (same data and initialisation; the known arm is the baseline network on
    ``x * a*``).  Precondition: the frozen mask is the teacher's in every trial.  Pass: mean
    test MSE known ``<=`` attention at every n up to ORDERING_UP_TO = 10000 (plain ordering,
    as the reconstruction; in the full tier n = 20000 is recorded, not decided: every arm at
    the optimisation floor there in the reconstruction's run; seeds
    1, 2 gave ratios far below 1, checked on 0).  The control freezes a wrong mask.
    """
    arm = "known_wrong" if tc.control == "wrong_mask" else "known"
    runs = arms(tc, arm, "attention")
    decided = decided_sizes(tc.sizes["n"])
    known, attention = final_mse(runs[arm])[decided], final_mse(runs["attention"])[decided]
    tc.record("mean test MSE per n: known mask, attention", {"known": known, "attention": attention})
    tc.precondition.at_least("frozen mask is the teacher's in every trial",
                             float(np.mean([r["mask_is_teachers"].mean() for r in runs[arm]])), 1.0)
    tc.conclusion.at_most("known mask at most learned attention", known - attention, 0.0)


@claim(
    f"{PAPER}.fig7.regression_convergence",
    source="App. F.2, Fig. 7 (test loss during training on the Table 1 task)",
    statement="On the Table 1 task, regularised attention converges fastest, then attention, "
              "then the baseline; the known mask is faster than learned attention.",
    provenance="inferred",
    controls={
        "regularised_as_fast_as_known": Control(
            "statement", breaks=["regularised converges faster than attention"],
            description="regularised attention as fast as knowing the mask (its area below the "
                        "known mask's)"),
    },
    sizes=SIZES,
)
def test_regression_convergence(tc):
    r"""Speed as the area under the log test-MSE curve: ``AUC = mean_t log(mean over trials
    of the test MSE at checkpoint t)``, checkpoints every 20 of 200 Adam steps (full: every
    200 of 2000), runs of ``table1.sample_complexity_ordering`` and ``prop1.known_mask``.
    Pass, at every n: ``AUC_reg < AUC_att < AUC_base`` and ``AUC_known < AUC_att``, each by
    at least 0.01 in log MSE (1%: strict, so that arms that tie fail; the reconstruction's
    orderings; chosen on seeds 1 and 2, checked on 0).  The
    curves are plotted.  The control asks the regularised arm to be as fast as the known mask
    (the reconstruction saw -0.68 against -4.53 at n = 200).
    """
    s = tc.sizes
    runs = arms(tc, *ARMS)
    auc = {arm: log_mse_auc(r) for arm, r in runs.items()}
    tc.record("AUC (mean log test MSE) per n", auc)
    steps = s["every"] * np.arange(1, s["steps"] // s["every"] + 1)
    for arm, r in runs.items():
        tc.curve(f"Fig. 7 (reduced): test MSE during training, n = {s['n'][-1]}", arm, steps,
                 r[-1]["test_mse"].mean(0), yscale="log", ylabel="test MSE")
    tc.precondition.at_most("teacher mask sparse (k < p)", s["k"], s["p"] - 1)
    tc.conclusion.at_least("attention converges faster than the baseline",
                           auc["baseline"] - auc["attention"], 0.01, margin=0.0)
    faster = auc["known"] if tc.control == "regularised_as_fast_as_known" else auc["attention"]
    tc.conclusion.at_least("regularised converges faster than attention",
                           faster - auc["regularised"], 0.01, margin=0.0)
    tc.conclusion.at_least("known mask converges faster than attention",
                           auc["attention"] - auc["known"], 0.01, margin=0.0)


#: Table 1's networks (Sec. 5.1.1 header): input p = 256, width 128, 10 outputs
TABLE1_SHAPES = {"p": 256, "d": 128, "outputs": 10}
#: the parameter counts printed in Table 1's header
TABLE1_COUNTS = {"baseline": 34186, "attention": 34442}
#: the smallest baseline/attention ratio of the printed test losses (n = 10000: 2.1063/0.5484)
TABLE1_SMALLEST_RATIO = 3.84


@claim(
    f"{PAPER}.table1.reported_values",
    source="Table 1 (Sec. 5.1.1): parameter counts and test losses",
    statement="Table 1's networks have 34186 (baseline) and 34442 (attention) parameters, and "
              "attention has the lower test loss at every tabulated n.",
    provenance="stated",
    controls={
        "printed_magnitude": Control(
            "statement", breaks=["baseline/attention test-MSE ratio above the threshold"],
            description="the printed magnitude: baseline at least 3.84 times attention (Table "
                        "1's smallest ratio) at every n of our reduced run"),
    },
    sizes=SIZES,
)
def test_reported_values(tc):
    r"""Our measurements against the printed Table 1.  (1) Parameter counts: the blocks of
    ``BiasedBaselineNet`` / ``BiasedAttentionNet`` at Table 1's shapes (p = 256, width 128,
    10 outputs, biases) have ``256*128 + 128 + 128*10 + 10 = 34186`` and ``34186 + 256 =
    34442`` entries; pass: exact integers against the header.  (2) The printed test losses
    have attention below the baseline at all 6 sizes; our runs (``table1.sample_complexity_
    ordering``) must show the same at every n up to ORDERING_UP_TO = 10000 (ratio of means at
    least 1.01; in the full tier n = 20000 is recorded, not decided).  The printed
    magnitudes (ratios 3.84 .. 10.76, losses 0.006 .. 2.1) are not comparable: k, the
    teacher, the loss normalisation and SGD's 400k iterations were lost, and our quick tier
    is reduced (p = 32); the printed values are recorded beside ours, and the control shows
    that our reduced run does not reach the printed ratio (it is no evidence for it).
    Threshold 1.01 (the ordering, strict by 1%), chosen on seeds 1 and 2, checked on 0.
    """
    K = 1
    shapes = {"a": (K, TABLE1_SHAPES["p"]), "W1": (K, TABLE1_SHAPES["p"], TABLE1_SHAPES["d"]),
              "b1": (K, TABLE1_SHAPES["d"]), "W2": (K, TABLE1_SHAPES["d"], TABLE1_SHAPES["outputs"]),
              "b2": (K, TABLE1_SHAPES["outputs"])}
    counts = {}
    for name, cls in (("baseline", BiasedBaselineNet), ("attention", BiasedAttentionNet)):
        params = {b: torch.zeros(shapes[b], dtype=torch.float64) for b in cls.blocks}
        net = cls(torch.zeros(K, 1, TABLE1_SHAPES["p"], dtype=torch.float64),
                  torch.zeros(K, 1, TABLE1_SHAPES["outputs"], dtype=torch.float64), RELU)
        net.loss(params)                                    # the shapes fit the network
        counts[name] = sum(params[b][0].numel() for b in cls.blocks)
    tc.record("our parameter counts at Table 1's shapes", counts)
    tc.conclusion.close("parameter counts equal Table 1's header",
                        [counts["baseline"], counts["attention"]],
                        [TABLE1_COUNTS["baseline"], TABLE1_COUNTS["attention"]], atol=0.5)
    runs = arms(tc, "baseline", "attention")
    ratio = (final_mse(runs["baseline"]) / final_mse(runs["attention"]))[decided_sizes(tc.sizes["n"])]
    printed = np.array([TABLE1[n][0] / TABLE1[n][1] for n in sorted(TABLE1)])
    tc.record("Table 1 as printed: n -> (baseline, attention, regularised)", TABLE1)
    tc.record("baseline/attention ratio: ours per n, printed per n", {"ours": ratio, "printed": printed})
    threshold = TABLE1_SMALLEST_RATIO if tc.control == "printed_magnitude" else 1.01
    tc.conclusion.at_least("baseline/attention test-MSE ratio above the threshold", ratio,
                           threshold, margin=0.0)


@discrepancy(
    f"{PAPER}.table1.DISCREPANCY_threshold_007",
    source="Sec. 5.1.1 text vs Table 1",
    statement="To attain the desired error 0.07, attention models need 14000 samples, whereas "
              "baseline models need 20000.",
    corrected_by=f"{PAPER}.table1.sample_complexity_ordering",
    provenance="stated",
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
