r"""Table 2's claim (Sec. 5.1.2: self-attention needs fewer samples than a flattened MLP) on
a synthetic bag-of-words sentiment task (IMDB and GloVe cannot be fetched here), and its boundary
map (`theorycheck.maps`): where the advantage stops as the sample size n grows.  One file, the
claim first: the map's n = 400 point is the claim's run (same configuration), answered by the
process memo when the two run in one process, so the quick tier trains it once."""
import numpy as np
from scipy import stats

from theorycheck import Calibrated, Control, claim
from theorycheck.checks import binomial_power
from theorycheck.maps import estimate_map, interval_power, mean_interval, record_map
from theorycheck.tails import NullTest

from .setup import PAPER
from .table2 import SIZES, bag_of_words, gap_z_statistics, labels_follow_rule

INSIDE_INSTANCES = 16
"""Trials at the small n (50 and 100, inside the region n <= 100) in both tiers: the map's
inside decision (`test_advantage_map_n`'s calibration record chose the count) and the
surrogate claim's margin at its smallest n, n = 100, whose run is the map's (one run, trained
once when both claims run in one process)."""

SURROGATE_SIZES = {"quick": dict(SIZES["quick"], identity_instances=24, smallest_instances=INSIDE_INSTANCES),
                   "full": dict(SIZES["full"], identity_instances=16, smallest_instances=INSIDE_INSTANCES)}
"""Table 2's surrogate sizes, the claim's trial count at the smallest n (the map's inside
count: the same run), and the trial count of the identity_attention control, a run of
its own at the smallest n.  The identity network has no advantage to show, so the control's
mean gap is centred near 0 and its miss rate is the chance that a mean of this many paired
trials reaches the margin: the count is set by the spread of that mean (the calibration
record gives the block that chose it and the one that confirmed it; the full tier's 16 is the
map's inside count, not calibrated)."""


@claim(
    f"{PAPER}.table2.selfattention_surrogate",
    source="Sec. 5.1.2, Table 2 ('self-attention requires lower sample complexity')",
    statement="On a bag-of-words sentiment task, at the smallest sample size the self-attention "
              "network reaches a higher test accuracy than a flattened MLP of similar size, and "
              "at no sample size a lower one.",
    provenance="derived",
    constants={"margin": 0.03, "alpha": 1e-4},
    calibration=[
        "margin 0.03 at the smallest n: the reconstruction's; with 3 trials the mean gap failed "
        "on seed 6 of the 20-seed sweep (+0.012; seeds 1-19 spread +0.012 .. +0.11), so the "
        "trial count was raised to 8, margin unchanged; decided on seeds 1-10, held out on 0, "
        "11-19",
        "n = 400 (review of 2026-11-26: the claim had been narrowed to n = 100 after n = 400 "
        "failed the reconstruction's 'SA >= baseline - 0.01' on seeds 1, 2 with 300 steps: "
        "-0.02, -0.005): restored; the tolerance at every n is the margin itself (the claim's "
        "resolution on either side), chosen after seeing seeds 1, 2 at 8 trials and 150 steps "
        "(+0.003, +0.010) and a development draw (-0.009): not held out for seeds 1, 2; seeds "
        "0, 3-10 then gave -0.020 .. +0.017 at n = 400 (the reconstruction's -0.01 would have "
        "failed seed 3) and +0.073 .. +0.096 at n = 100",
        "the 'not below' tolerance (the margin, widened from the reconstruction's 0.01 after "
        "seeing seeds; review of 2026-11-28) replaced by a test with a known false-failure "
        "rate: it fails only when the one-sided Student-t upper bound of the paired mean gap "
        "at level alpha = 1e-4 per n is below 0 (alpha from the budget 3e-4 a claim over the "
        "three n of the full tier; no seed looked at to choose it)",
        "finding at n = 400: the advantage is gone (mean gap within the margin on either side), "
        "unlike Table 2, whose margin is at least 6.14 points at every printed n; recorded as "
        "'finding: mean gap at the larger n'",
        "identity_attention control (new): gaps -0.023 .. +0.021 at n = 100 on seeds 0-10",
        "independent_labels control: word sentiments drawn independently of the embeddings "
        "misfired on seed 12 (the label still a function of the bag of words); now labels "
        "independent of the sentences",
        "validation block 11100-11149 by theorycheck calibrate (50 seeds, no threshold changed): "
        "held on 50 of 50; mean gap at n = 100 mean 0.078, sd 0.013, smallest 0.042 (3.6 sd "
        "above 0.03: normal-tail bound 4e-3 at 95%); upper t-bounds at n = 100, 400 smallest "
        "0.113, 0.030 (3.2 sd above 0 at n = 400: bound 1e-2; the level alpha = 1e-4 holds only "
        "where the true gap is >= 0, and at n = 400 it is about 0): both OVER the claim budget "
        "3e-4, open (more trials); independent_labels failed as declared on 50 of 50 (miss bound "
        "5e-7), identity_attention on 50 of 50 (gap at n = 100 at most +0.019, 2.9 sd below "
        "0.03: miss bound 0.018, OVER the control budget 1e-2)",
        "identity_attention on 24 draws of its own (2026-11-29; identity_instances, the count chosen "
        "on block 29000-29049, where the 8-trial gap at n = 100 was about 0 with sd 0.016 over seeds: "
        "miss bound 0.053): validation block 87200-87259 (60 seeds, the claim's thresholds and runs "
        "unchanged), failed as declared on 60 of 60, its normal-tail miss bound 3.3e-4; the claim "
        "passed on 60 of 60 (bound 4.6e-3, the n = 400 'not below' decision, whose true gap is about "
        "0: still OVER the claim budget); independent_labels 1.8e-6",
        "helper h11 (2026-11-30): 'not below the baseline at any n' keeps its test (level alpha = 1e-4 "
        "per n, unchanged) and states the test's level as its bound (NullTest on the paired t "
        "statistics as normal quantiles, table2.gap_z_statistics; the same rejection region; 2e-4 "
        "in the quick tier, 3e-4 in the full tier's three n): the statement is the composite null "
        "'true gap >= 0', whose rejection probability is largest at the boundary 0, so the level "
        "bounds the false-failure rate wherever the statement holds; nothing chosen on seeds",
        Calibrated(
            decision="self-attention at least 0.03 above the baseline at the smallest n",
            threshold="margin 0.03 (unchanged) on the mean of 16 trials at n = 100 (smallest_instances)",
            calibration_seeds="93000-93040", validation_seeds="93100-93149",
            how="the count 16 is the map's inside_instances (advantage_map_n's calibration record), "
                "taken so that the claim's smallest n is the map's run, not chosen on these blocks; "
                "the 8-trial mean had been 4.3 sd from the margin (87200-87259, normal tail 4.1e-4). "
                "Calibration block 93000-93040 (41 seeds of a 50-seed block, stopped for the "
                "validation block's time; runs /work/calib11/anon20-93000) by theorycheck calibrate: "
                "the claim held on 41 of 41, the margin's relative slack mean 1.67 sd 0.29 over seeds, "
                "smallest 1.25 (5.8 sd; normal tail accepted, Shapiro-Wilk p 0.07: 8.1e-6), the "
                "NullTest's statistics fit the null (null_p 1.0): claim bound 2.1e-4, within the "
                "budget 3e-4; identity_attention failed as declared on 41 of 41 (miss bound 1.2e-3), "
                "independent_labels on 41 of 41 (1.4e-5). Validation block 93100-93149 (50 seeds, nothing changed; runs "
                "/work/calib11/anon20-93100): held on 50 of 50, slack mean 1.67 sd 0.26, smallest "
                "1.13 (6.4 sd; normal tail, Shapiro-Wilk p 0.88: 4.5e-7), null_p 1.0: claim bound "
                "2.0e-4 (the stated level), within the budget; identity_attention failed as declared "
                "on 50 of 50 (1.3e-4), independent_labels on 50 of 50 (1.8e-7)"),
    ],
    controls={
        "independent_labels": Control(
            "hypothesis", breaks=["self-attention at least 0.03 above the baseline at the smallest n"],
            description="labels fair coins independent of the sentences: both test accuracies "
                        "are 1/2 in expectation, and the mean gap is test-set noise of standard "
                        "deviation 1/sqrt(2 test trials), a small fraction of the margin"),
        "identity_attention": Control(
            "dynamics", breaks=["self-attention at least 0.03 above the baseline at the smallest n"],
            description="the attention matrix frozen at the identity (A = I: the value map W_V "
                        "shared across words, no mixing across words), trained with the MLP on "
                        "identity_instances draws of their own, both arms on the same sentences, "
                        "the network from the same initial W1, W2, W_V"),
    },
    sizes=SURROGATE_SIZES,
)
def test_selfattention_surrogate(tc):
    r"""The reconstruction's surrogate of Table 2 (IMDB and GloVe-100 are not available
    offline): vocabulary 100, embeddings of dimension ``t = 8``, sentences of ``p = 16``
    words, label the sign of the summed word sentiments ``<w, e_v>``.  Self-attention of
    Sec. 2 (``d_q = d_v = 8``, MLP ``128 -> 32 -> 1``, 4128 weights) against the MLP on
    ``vec(X)`` (``128 -> 32 -> 1``, 4128 weights), both without biases and trained on the
    squared loss against +-1 labels (the reconstruction used BCE with biases), 150 steps of
    full-batch Adam (lr 2e-2, cosine), 8 trials batched (``smallest_instances`` = 16 at the
    smallest n: the run of `test_advantage_map_n` at n = 100), 2000 test sentences, at every n
    of the tier (quick 100 and 400, the reconstruction's sizes; full 100, 400, 1600).
    Precondition: the labels are the sign of the summed linear sentiments, a property of the
    construction decided on its configuration before any run (`table2.labels_follow_rule`;
    the drawn labels' agreement with the rule, 1, is recorded).
    Pass: the mean accuracy of self-attention at least ``margin = 0.03`` above the
    baseline's at the smallest n (the reconstruction's margin; Table 2's smallest printed
    margin is 6.14 points), and at no n of the tier significantly below it: the one-sided
    Student-t upper bound of the paired mean gap at level ``alpha = 1e-4`` per n is at least
    0, decided on the paired t statistic as its standard-normal quantile ``z``
    (`table2.gap_z_statistics`: exactly N(0, 1) at a true gap of 0 for normal per-trial gaps)
    against ``-Phi^{-1}(1 - alpha)``, the same region.  If self-attention is at least as good
    at an n, this fails with probability at most alpha there, so the claim's false-failure
    rate from it is at most ``1e-4`` times the number of n, a test's level stated as the
    decision's bound (``NullTest``, its null checked by the calibration on the recorded
    ``z``); its power against a deficit of
    the margin, at the measured spread, is recorded: with 8 trials it is small (a finding:
    the quick tier can show an advantage at the smallest n, but "never lower" only up to the
    width of the interval, recorded as the upper bound).  At the larger n the surrogate's accuracies saturate and
    the gap there is recorded as a finding ("finding: mean gap at the larger n"): a tie is
    no advantage, unlike Table 2's margins at every printed n, though it does not contradict
    a lower sample complexity (a given accuracy reached with fewer samples).  Controls:
    labels independent of the sentences (no advantage can be learnt), and attention frozen at
    the identity (the reconstruction's control: part of the gain is the value map shared
    across words, the rest is the softmax mixing, which averages the words' embeddings);
    both run at the smallest n only, where the margin they break is decided, the second on
    ``identity_instances`` draws of its own (its mean gap is centred near 0, so its miss rate
    is set by the spread of that mean, hence a count of its own); the
    independent_labels control keeps the tier's 8 trials.  Table 2's
    printed accuracies are cited in ``docs/claims/anon20.md`` (not measurable here).
    """
    s = tc.sizes
    labels = "independent" if tc.control == "independent_labels" else "linear"
    tc.precondition.at_least("labels follow the summed linear word sentiments",
                             float(labels_follow_rule(labels)), 1.0)
    sizes = s["n"][:1] if tc.control else s["n"]     # the controls break the smallest n's margin
    if tc.control == "identity_attention":
        runs = [tc.use(bag_of_words, n=n, labels=labels, attention="identity", instances=s["identity_instances"])
                for n in sizes]
    else:
        runs = [tc.use(bag_of_words, n=n, labels=labels, attention="softmax",
                       instances=s["smallest_instances"] if i == 0 and tc.control is None else None)
                for i, n in enumerate(sizes)]
    mean = {arm: np.array([r[arm].mean() for r in runs]) for arm in ("self-attention", "baseline")}
    gap = mean["self-attention"] - mean["baseline"]
    tc.record("mean test accuracy per n", mean)
    tc.record("mean accuracy gap (self-attention - baseline) per n", gap)
    per_trial = [r["self-attention"] - r["baseline"] for r in runs]
    tc.record("per-trial accuracy gap per n", per_trial)
    for arm, values in mean.items():
        if len(sizes) > 1:    # the controls run one n: their values are records, not curves
            tc.curve("Table 2 surrogate: test accuracy against n", arm, sizes, values,
                     xscale="log", ylabel="test accuracy")
    tc.record("fraction of drawn labels following the rule", min(r["agreement"] for r in runs))
    tc.conclusion.at_least("self-attention at least 0.03 above the baseline at the smallest n",
                           gap[:1], 0.03)
    if len(gap) > 1:
        tc.record("finding: mean gap at the larger n", gap[1:])
    alpha = tc.constants["alpha"]
    upper = np.array([mean_interval(g, 1 - 2 * alpha)[2] for g in per_trial])
    tc.record("one-sided upper bound of the mean gap at level alpha, per n", upper)
    tc.record("power against a true gap of -margin at the measured spread, per n",
              [interval_power(-tc.constants["margin"], float(np.std(g, ddof=1)), g.size, upper=0.0,
                              confidence=1 - 2 * alpha) for g in per_trial])
    z = gap_z_statistics(per_trial)
    tc.record("paired t statistic of the mean gap as a standard-normal quantile, per n", z)
    test = NullTest(level=alpha * len(z), count=len(z), sided="lower")
    tc.conclusion.at_least("self-attention not below the baseline at any n", z, -test.critical,
                           tail_bound=test.tail_bound)


MARGIN = 0.03
"""The stated value: `anon20.table2.selfattention_surrogate`'s margin (the claim's resolution on
either side of the mean gap)."""

REGION_N = 100
"""The stated region n <= 100: the smallest sample size of the reconstruction, where the encoded
claim decides the advantage (Table 2 prints an advantage at every n; the surrogate keeps it only
at small n)."""

AHEAD_RATE = 0.8
"""The stated rate of the inside decision: at each n <= 100 a draw (sentences, embeddings, labels'
direction, initial weights) has self-attention ahead of the flattened MLP by at least the margin
with probability at least AHEAD_RATE (chosen on a calibration block: calibration record)."""

AHEAD_ALPHA = 1e-4
"""Level of the inside decision's exact binomial test of ``P[ahead] >= AHEAD_RATE``: a third of the
claim budget 3e-4, fixed from the budget before any seed (the test's false-failure rate wherever
the stated rate holds)."""

INSIDE = "self-attention ahead by at least the margin 0.03 inside n <= 100, at a rate >= 0.8 over draws"

MAP_SIZES = {"quick": dict(SIZES["quick"], n_map=[50, 100, 400], inside_instances=INSIDE_INSTANCES),
             "full": dict(SIZES["full"], n_map=[50, 100, 200, 400, 800, 1600], inside_instances=INSIDE_INSTANCES)}
"""Table 2's surrogate sizes (8 trials, 150 Adam steps, 2000 test sentences in the quick tier)
and the grid of n: coarse in the quick tier (the decided n <= 100 and the n = 400 run of
`anon20.table2.selfattention_surrogate`, which bracket the crossing; n = 200, a point of the
map's finding only, left to the full tier for the quick tier's 60 s), fine in the full tier (vocabulary 1000, p = 64, 5
trials; not run on the development machine); ``inside_instances`` trials at the decided n <= 100
(runs of their own; the full tier's is not calibrated)."""


@claim(
    f"{PAPER}.table2.advantage_map_n",
    source="Sec. 5.1.2, Table 2 ('self-attention requires lower sample complexity')",
    statement="On the bag-of-words surrogate, self-attention's test accuracy is ahead of the "
              "flattened MLP's by at least the margin 0.03 on most draws (at a rate of at least "
              "0.8) inside the stated region n <= 100; the mean advantage's decay with n is mapped "
              "and the n where it falls below the margin located (a finding).",
    provenance="derived",
    constants={"margin": MARGIN, "region_n": REGION_N, "rate": AHEAD_RATE, "alpha": AHEAD_ALPHA},
    controls={
        "identity_attention": Control(
            "dynamics", breaks=[INSIDE],
            description="the attention matrix frozen at the identity (A = I), trained on the same "
                        "sentences from the same initial W1, W2, W_V at n = 50 and 100: the "
                        "advantage disappears (gaps centred near 0, a draw ahead by the margin at "
                        "a rate far below 0.8), with the claim's inside_instances trials"),
    },
    calibration=[
        "grid 50, 100, 200, 400 chosen on --tc-seed 1, 2 (mean gaps +0.116/+0.075 at 50, "
        "+0.096/+0.081 at 100, +0.028/+0.043 at 200, +0.003/+0.010 at 400) and the claim "
        "`table2.selfattention_surrogate`'s record of seeds 3-10 (-0.020 .. +0.017 at 400); "
        "then run on seeds 1-10: +0.063 .. +0.143 at 50, +0.073 .. +0.096 at 100, +0.020 .. "
        "+0.043 at 200, -0.020 .. +0.017 at 400, so the gap crosses the margin 0.03 inside the "
        "grid on every seed (at n = 186 .. 281); checked on seed 0 (+0.102, +0.084, +0.037, "
        "-0.009; crossing 230 [150, 342])",
        "stated value 0.03, the claim's margin; the gap's crossing of 0 is not bracketed by "
        "n <= 1600 on every seed (the gap at 400-800 is 0 within +-0.02), so it is not mapped",
        "the inside decision was the lower 95% t-bound over 8 trials (region and grid chosen on "
        "seeds 1-2); it failed on 1 of 10 unseen seeds of the review (-6.8e-4 at n = 100)",
        "superseded design (2026-12-01: the binomial inside decision replaced it), the decision 'self-"
        "attention ahead inside n <= 100: lower one-sided t-bound of the mean gap > 0', threshold "
        "'lower one-sided t-bound at level 1e-2 > 0, 16 trials at n = 50 and 100', calibration "
        "block 5000-5007, validation blocks 6000-6019 and 11100-11149: the level 1e-2 is the control budget (a network with no advantage passes at most "
        "that often), not chosen on data; the trial count from the calibration block, run "
        "with the shared run's function at 24 trials (192 exchangeable trials per n): "
        "per-trial gap mean 0.111, sd 0.049, minimum -0.047 (n = 50); mean 0.090, sd "
        "0.038, minimum -0.038 (n = 100); resampling those trials, the decision fails "
        "per n at about 5e-3 with 8 trials (the review's failure), 5e-6 and 1e-5 with 12, "
        "none in 2e5 with 16 (normal model: 6.5 and 6.9 sd of room); the identity control's "
        "per-trial gaps mean -0.014 (sd 0.044) and -0.004 (sd 0.047), resampled passes "
        "2e-4 and 7e-3 per n at 16 trials (it misses only when both pass). Validation block "
        "6000-6019 by theorycheck calibrate (20 seeds, cut from 25 for time): the claim "
        "held on 20 of 20 (lower bounds at n = 50, 100: mean 0.079, 0.059, sd 0.020, 0.010 "
        "over seeds, smallest 0.033, 0.042: 3.9 and 5.9 sd from 0), the identity control "
        "failed as declared on 20 of 20 (its lower bounds at most -0.016 and -0.020)). Second "
        "validation block 11100-11149 by theorycheck calibrate (50 seeds; the table's rows): "
        "the claim held on 50 of 50 (lower bounds at n = 50, 100: mean 0.080, 0.053, sd "
        "0.014, 0.013, smallest 0.042, 0.0069: 4.1 sd from 0 at n = 100, a normal-tail "
        "bound 1.2e-3 at 95%, OVER the claim budget 3e-4: open, more inside trials needed), "
        "the identity control failed as declared on 50 of 50 (lower bounds at most -0.013 "
        "and -0.014; miss bound 2e-5 from its 5.4 sd)",
        Calibrated(
            decision=INSIDE,
            threshold="exact one-sided binomial test of P[gap >= 0.03] >= 0.8 over the 32 inside draws "
                      "(16 at n = 50, 16 at n = 100), level 1e-4: rejects at 15 or fewer",
            calibration_seeds="131200-131249", validation_seeds="131300-131349",
            how="helper anon (2026-12-01, issue 31). The level 1e-4 is from the budget, the margin "
                "0.03 the claim's, the trials unchanged; the rate 0.8 chosen on the calibration "
                "block (theorycheck calibrate of the t-bound design, per-trial gaps from its "
                "records; runs /work/runs/h20-anon/runs-map-131200): draws ahead by the margin "
                "0.935 (n = 50) and 0.911 (n = 100) for self-attention, 0.166 and 0.184 for the "
                "identity control (800 draws each); pooled 0.923 (Clopper-Pearson 95% lower 0.911: "
                "the test at 0.8 fails there with probability 2e-10) and 0.175 (upper 0.191: passes "
                "with probability 8e-5). The NullTest of 'E gap >= 0.03' at level 1e-4 per n was "
                "rejected on the same block: the control's statistics average -3.3 and -3.1 against "
                "the critical value -3.72. Validation block 131300-131349 (nothing changed; runs "
                "/work/runs/h20-anon/runs-map-131300): the claim held on 50 of 50, ahead on 26 to 32 "
                "of 32 draws a seed, pooled rate 0.9225 (dispersion p 0.54): claim bound 2.2e-10 "
                "(pooled trials), within the budget; identity_attention failed as declared on 50 of "
                "50, 1 to 10 draws ahead, pooled 0.172 (dispersion p 0.17): miss bound 6.7e-5"),
    ],
    sizes=MAP_SIZES,
)
def test_advantage_map_n(tc):
    r"""Table 2 states that self-attention needs fewer samples than a flattened MLP of similar
    size; on the reconstruction's surrogate (`bag_of_words`: vocabulary 100, t = 8, p = 16, both
    nets 4128 weights, 150 steps of full-batch Adam, 8 trials batched, 2000 test sentences) the
    advantage is clear at n = 100 and gone at n = 400. The map: at each n of the grid the
    per-trial gap g = acc(self-attention) - acc(MLP) (paired: same sentences), its mean with the
    95% Student-t interval over the 8 trials, and where the mean gap
    falls below the margin 0.03 (linear interpolation between the bracketing n; interval where
    the band's edges cross 0.03). Outside n <= 100 the map is a finding. Decided inside the
    stated region n <= 100 (grid points 50, 100, each with ``inside_instances`` trials of its own,
    every trial an independent draw): a trial is *ahead* when its gap is at least the margin
    0.03, an event of probability ``q_n`` at each n; the statement ``q_n >= AHEAD_RATE = 0.8``
    at every inside n is decided by the exact one-sided binomial test over the pooled inside
    trials (``checks.binomial``, level ``AHEAD_ALPHA = 1e-4``: a sum of independent Bernoulli
    trials with rates at least 0.8 is stochastically at least Bin(K, 0.8), so wherever the
    statement holds the claim fails with probability at most 1e-4).  A mean gap is a skewed
    statistic over draws (a draw where self-attention trains badly is a far outlier) and its
    lower t-bound's false-failure rate is a power deficit at an unknown gap, not a level; the
    count of draws ahead is binomial by construction.  The paper's Table 2 states a margin at
    every n; a rate below 1 is the surrogate's finding (some draws are not ahead).  Power: a
    network without advantage has gaps centred at 0, ahead at the rate ``P[N(0, sd^2) >=
    0.03]`` at the measured per-trial spread (about each n's mean), where the test rejects with the probability
    recorded (the binomial decision also records the rate at which it rejects with probability
    0.8).
    Precondition: the labels are the sign of the summed linear sentiments (decided on the
    construction's configuration before any run; the drawn agreement is recorded). Control (dynamics):
    attention frozen at the identity, trained on the same data from the same start: without
    its attention the network has no advantage to show, and the lower bounds fall below 0.
    """
    s = tc.sizes
    tc.precondition.at_least("labels follow the summed linear word sentiments",
                             float(labels_follow_rule("linear")), 1.0)
    grid = [n for n in s["n_map"] if tc.control is None or n <= REGION_N]
    trials = [s["inside_instances"] if n <= REGION_N else None for n in grid]
    attention = "identity" if tc.control == "identity_attention" else "softmax"
    runs = [tc.use(bag_of_words, n=n, labels="linear", attention=attention, instances=k)
            for n, k in zip(grid, trials)]
    tc.record("fraction of drawn labels following the rule", min(r["agreement"] for r in runs))
    gaps = [r["self-attention"] - r["baseline"] for r in runs]
    est, lo, hi = np.array([mean_interval(g, 0.95) for g in gaps]).T
    tc.record("per-trial accuracy gap per n", gaps)
    if tc.control is None:
        m = estimate_map(grid, est, lo, hi, value=MARGIN, parameter="n", samples=[g.size for g in gaps],
                         interval_method="paired Student t", name="self-attention advantage")
        record_map(tc, "self-attention advantage against n", m, xscale="log",
                   ylabel="mean accuracy gap (self-attention - MLP)",
                   region={"description": f"n <= {REGION_N} (where the claim decides)", "upper": REGION_N},
                   finding="n where the mean gap falls below 0.03 (band crossings)")
    inside = [gaps[i] for i, n in enumerate(grid) if n <= REGION_N]
    rate, alpha = tc.constants["rate"], tc.constants["alpha"]
    tc.record("inside n <= 100: trials ahead by at least the margin, of the trials, per n",
              [[int(np.sum(g >= MARGIN)), g.size] for g in inside])
    ahead = np.concatenate(inside) >= MARGIN
    spread = np.std(np.concatenate([g - g.mean() for g in inside]), ddof=len(inside))
    no_advantage = float(stats.norm.sf(MARGIN / spread))
    tc.record("inside n <= 100: rate ahead without advantage (gaps centred at 0, measured spread) "
              "and the test's power there", [no_advantage, binomial_power(ahead.size, rate, alpha, rate - no_advantage)])
    tc.conclusion.binomial(INSIDE, ahead, p=rate, alpha=alpha,
                           low_power="the alternative the decision must reject is no advantage, a rate "
                                     "near 0.2 (recorded with its power); a rate 0.15 below 0.8 is not "
                                     "resolved by the quick tier's 32 inside draws at this level")
