"""anon20: boundary maps (`theorycheck.maps`) -- where Table 2's self-attention advantage stops as
the sample size n grows, on the reconstruction's bag-of-words surrogate."""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.maps import estimate_map, interval_power, mean_interval, record_map

from .setup import PAPER
from .table2 import SIZES, bag_of_words

MARGIN = 0.03
"""The stated value: `anon20.table2.selfattention_surrogate`'s margin (the claim's resolution on
either side of the mean gap)."""

REGION_N = 100
"""The stated region n <= 100: the smallest sample size of the reconstruction, where the encoded
claim decides the advantage (Table 2 prints an advantage at every n; the surrogate keeps it only
at small n)."""

INSIDE_ALPHA = 1e-2
"""One-sided level of the inside decision: the lower Student-t bound of the mean paired gap at
this level must be > 0, so a network with no advantage (true mean gap <= 0) passes with
probability at most INSIDE_ALPHA, the control budget.  The claim's false-failure rate is the
bound's power deficit at the true gap, set by the inside trial count (calibration record)."""

INSIDE = "self-attention ahead inside n <= 100: lower one-sided t-bound of the mean gap > 0"

MAP_SIZES = {"quick": dict(SIZES["quick"], n_map=[50, 100, 200, 400], inside_instances=16),
             "full": dict(SIZES["full"], n_map=[50, 100, 200, 400, 800, 1600], inside_instances=16)}
"""Table 2's surrogate sizes (8 trials, 150 Adam steps, 2000 test sentences in the quick tier)
and the grid of n: coarse in the quick tier (reusing the n = 400 run of
`anon20.table2.selfattention_surrogate`), fine in the full tier (vocabulary 1000, p = 64, 5
trials; not run on the development machine); ``inside_instances`` trials at the decided n <= 100
(runs of their own; the full tier's is not calibrated)."""


@claim(
    f"{PAPER}.table2.advantage_map_n",
    source="Sec. 5.1.2, Table 2 ('self-attention requires lower sample complexity')",
    statement="On the bag-of-words surrogate, self-attention's mean test-accuracy advantage over "
              "the flattened MLP is positive inside the stated region n <= 100; its decay with n "
              "is mapped and the n where it falls below the margin 0.03 located (a finding).",
    provenance="derived",
    constants={"margin": MARGIN, "region_n": REGION_N, "alpha": INSIDE_ALPHA},
    controls={
        "identity_attention": Control(
            "dynamics", breaks=[INSIDE],
            description="the attention matrix frozen at the identity (A = I), trained on the same "
                        "sentences from the same initial W1, W2, W_V at n = 50 and 100: the "
                        "advantage disappears (mean gaps about 0, lower bounds negative), with the "
                        "claim's inside_instances trials"),
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
        Calibrated(
            decision=INSIDE,
            threshold="lower one-sided t-bound at level 1e-2 > 0, 16 trials at n = 50 and 100",
            calibration_seeds="5000-5007", validation_seeds="6000-6019",
            how="the level 1e-2 is the control budget (a network with no advantage passes at most "
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
                "failed as declared on 20 of 20 (its lower bounds at most -0.016 and -0.020)"),
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
    stated region n <= 100 (grid points 50, 100, each with ``inside_instances`` trials of its own):
    at each, the lower one-sided Student-t bound of the mean gap at level ``alpha =
    INSIDE_ALPHA = 1e-2`` is > 0 (a network without advantage passes with probability at most
    1e-2); its power is recorded per n at a true gap equal to the margin 0.03 and at the
    measured mean, both at the measured spread.
    Precondition: the labels are the sign of the summed linear sentiments. Control (dynamics):
    attention frozen at the identity, trained on the same data from the same start: without
    its attention the network has no advantage to show, and the lower bounds fall below 0.
    """
    s = tc.sizes
    grid = [n for n in s["n_map"] if tc.control is None or n <= REGION_N]
    trials = [s["inside_instances"] if n <= REGION_N else None for n in grid]
    runs = [tc.use(bag_of_words, n=n, labels="linear", instances=k) for n, k in zip(grid, trials)]
    if tc.control == "identity_attention":
        frozen = [tc.use(bag_of_words, n=n, labels="linear", attention="identity", instances=k)
                  for n, k in zip(grid, trials)]
        runs = [dict(r, **{"self-attention": f["self-attention"]}) for r, f in zip(runs, frozen)]
    tc.precondition.at_least("labels follow the summed linear word sentiments",
                             min(r["agreement"] for r in runs), 1.0)
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
    inside = [i for i, n in enumerate(grid) if n <= REGION_N]
    confidence = 1 - 2 * tc.constants["alpha"]
    sd = [float(np.std(gaps[i], ddof=1)) for i in inside]
    lower = [mean_interval(gaps[i], confidence)[1] for i in inside]
    tc.record("inside n <= 100: power of the t-bound at a true gap of 0.03; at the measured mean",
              [[interval_power(MARGIN, v, gaps[i].size, lower=0.0, confidence=confidence)
                for v, i in zip(sd, inside)],
               [interval_power(max(est[i], 0.0), v, gaps[i].size, lower=0.0, confidence=confidence)
                for v, i in zip(sd, inside)]])
    tc.record("inside n <= 100: lower one-sided t-bound at level alpha", lower)
    tc.conclusion.at_least(INSIDE, lower, 0.0)
