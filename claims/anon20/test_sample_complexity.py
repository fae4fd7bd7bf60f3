r"""Table 1 and Theorem 1 (sample complexity), at reduced scale: test error of the baseline,
attention and l1-regularised attention trained on data from a sparse-mask teacher."""
import numpy as np
import torch

from theorycheck import Control, claim, discrepancy, shared_run
from theorycheck.models import RELU, BaselineNet, GlobalAttentionNet
from theorycheck.optim import adam_steps, cosine_schedule

from .setup import PAPER, teacher_data

#: Table 1 as printed (Sec. 5.1.1; p = 256, 10 outputs, mean of 5 runs, SGD 400k iterations):
#: n -> test loss of (baseline, attention, regularised attention); cited, shown beside ours
TABLE1 = {10000: (2.1063, 0.5484, 0.0143), 14000: (0.4109, 0.0382, 0.0107),
          16000: (0.1811, 0.0211, 0.0100), 18000: (0.1072, 0.0163, 0.0122),
          20000: (0.0769, 0.0101, 0.0098), 50000: (0.0511, 0.0060, 0.0072)}
#: the l1 weight on a ("Regularization" paragraph of Sec. 5.1.1; the paper's value was lost)
L1_WEIGHT = 1e-3
SIZES = {"quick": {"n": [100, 400], "p": 32, "k": 4, "teacher_width": 8, "d": 16, "steps": 200,
                   "trials": 3, "test": 1000},
         "full": {"n": [100, 400, 1600], "p": 32, "k": 4, "teacher_width": 8, "d": 16,
                  "steps": 1000, "trials": 10, "test": 5000}}


class L1Attention(GlobalAttentionNet):
    """The attention network's loss plus ``L1_WEIGHT * ||a||_1`` (the regularised arm)."""

    def loss(self, params):
        return super().loss(params) + L1_WEIGHT * params["a"].abs().sum(-1)


@shared_run(sizes=SIZES)
def sample_complexity(run, *, n):
    """Test MSE per trial of the three arms trained on the same n teacher samples from one
    shared initialisation (W1, W2 ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), a = 1): full-batch
    Adam, lr 1e-2 with a cosine decay, float64; a fresh test set per trial."""
    s = run.sizes
    X, y = teacher_data(run.rng("teacher"), s["trials"], n + s["test"], s["p"], s0=s["k"],
                        width=s["teacher_width"], random_support=True)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    train, test = (X[:, :n], y[:, :n]), (X[:, n:], y[:, n:])
    rng = run.rng("init", n)
    K, p, d = s["trials"], s["p"], s["d"]
    W1 = torch.as_tensor(rng.uniform(-1, 1, (K, p, d)) / np.sqrt(p))
    W2 = torch.as_tensor(rng.uniform(-1, 1, (K, d)) / np.sqrt(d))
    ones = torch.ones(K, p, dtype=torch.float64)
    arms = {"baseline": (BaselineNet, {"W1": W1, "W2": W2}),
            "attention": (GlobalAttentionNet, {"a": ones, "W1": W1, "W2": W2}),
            "regularised": (L1Attention, {"a": ones, "W1": W1, "W2": W2})}
    out = {}
    for name, (cls, start) in arms.items():
        params = adam_steps(cls(*train, RELU), start, s["steps"], 1e-2,
                            schedule=cosine_schedule(s["steps"]))
        plain = BaselineNet if cls is BaselineNet else GlobalAttentionNet
        out[name] = (2 * plain(*test, RELU).loss(params)).numpy()
    return out


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
    r"""Teacher (Sec. 5.1.1, reduced scale): ``x ~ N(0, I_p)``, ``y = relu((x * a*) W*) v*``
    with ``a*`` the indicator of ``k`` random inputs (``p = 32, k = 4``), teacher width 8,
    noise-free.  Students (width 16, bias-free, scalar output: eq. (1)): the baseline, the
    attention network with trainable ``a`` (from 1), and attention with ``1e-3 ||a||_1``;
    shared initialisation, full-batch Adam with a cosine-decayed step (the paper's SGD with
    400k iterations is out of reach), test MSE on fresh samples.  Pass, on the mean over
    trials at each n: baseline > attention, regularised <= attention, and each arm's mean
    decreasing in n.  Thresholds: plain orderings (no margin), as in the reconstruction;
    seeds 1, 2 gave attention/baseline 0.84 .. 0.59 and regularised/attention 0.98 .. 0.11
    per trial at 300 steps, every trial ordered; checked on 0.  Per-trial orderings are
    recorded, not decided (three trials cannot give a binomial test power).  Table 1's
    printed values (p = 256, n >= 10000) are recorded beside ours: its setting (k, teacher,
    loss normalisation) was lost, so only the ordering is comparable.  The reconstruction
    saw the ordering reverse at n = 20000 for a denser mask (k = 32) with a weak l1 term:
    it is a finite-sample effect, held here where the baseline has not interpolated.
    """
    s = tc.sizes
    runs = {n: tc.use(sample_complexity, n=n) for n in s["n"]}
    mean = {arm: np.array([runs[n][arm].mean() for n in s["n"]])
            for arm in ("baseline", "attention", "regularised")}
    for arm, values in mean.items():
        tc.curve("Table 1 (reduced): test MSE against n", arm, s["n"], values, xscale="log",
                 yscale="log", ylabel="test MSE")
    tc.record("Table 1 as printed: n -> (baseline, attention, regularised)", TABLE1)
    tc.record("mean test MSE per n", {arm: v for arm, v in mean.items()})
    tc.record("trials ordered baseline > attention > regularised, per n",
              [int(np.sum((runs[n]["baseline"] > runs[n]["attention"])
                          & (runs[n]["attention"] >= runs[n]["regularised"]))) for n in s["n"]])
    tc.precondition.at_most("teacher mask sparse (k < p)", s["k"], s["p"] - 1)
    baseline = mean["baseline"]
    if tc.control == "fourfold_samples":
        baseline = np.array([runs[4 * n]["baseline"].mean() if 4 * n in runs else np.nan
                             for n in s["n"]])[:-1]
        attention = mean["attention"][:-1]
    else:
        attention = mean["attention"]
    tc.conclusion.at_least("attention test MSE below the baseline's", baseline - attention, 0.0,
                           margin=0.0)
    tc.conclusion.at_most("regularised attention at most attention",
                          mean["regularised"] - mean["attention"], 0.0)
    for arm, values in mean.items():
        tc.conclusion.monotone(f"{arm} test MSE decreases with n", values, increasing=False)


def _first_size_reaching(column: int, level: float):
    """The smallest tabulated n whose printed test loss in ``column`` is at most ``level``."""
    reached = [n for n in sorted(TABLE1) if TABLE1[n][column] <= level]
    return reached[0] if reached else None


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
    baseline, attention = _first_size_reaching(0, level), _first_size_reaching(1, level)
    tc.record("first tabulated n reaching the level: baseline, attention", [baseline, attention])
    tc.conclusion.at_least("baseline first reaches 0.07 after 20000 samples", baseline, 20001)
    tc.conclusion.close("attention first reaches the level at 14000", attention, 14000, atol=0.5)
