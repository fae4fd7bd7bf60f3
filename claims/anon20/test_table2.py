r"""Table 2's claim (Sec. 5.1.2: self-attention needs fewer samples than a flattened MLP) on
a synthetic bag-of-words sentiment task: IMDB and GloVe cannot be fetched here."""
import numpy as np

from theorycheck import Control, claim

from .setup import PAPER
from .table2 import SIZES, bag_of_words


@claim(
    f"{PAPER}.table2.selfattention_surrogate",
    source="Sec. 5.1.2, Table 2 ('self-attention requires lower sample complexity')",
    statement="On a bag-of-words sentiment task, at a small sample size the self-attention "
              "network reaches a higher test accuracy than a flattened MLP of similar size.",
    provenance="derived",
    controls={
        "independent_labels": Control(
            "hypothesis", breaks=["self-attention at least 0.03 above the baseline"],
            description="labels fair coins independent of the sentences: both test accuracies "
                        "are 1/2 in expectation, the mean gap has standard deviation "
                        "sqrt(2 * 0.25 / (test * trials)) = 0.0056, the margin 0.03 is 5.4 of them"),
    },
    sizes=SIZES,
)
def test_selfattention_surrogate(tc):
    r"""The reconstruction's surrogate of Table 2 (IMDB and GloVe-100 are not available
    offline): vocabulary 100, embeddings of dimension ``t = 8``, sentences of ``p = 16``
    words, label the sign of the summed word sentiments ``<w, e_v>``.  Self-attention of
    Sec. 2 (``d_q = d_v = 8``, MLP ``128 -> 32 -> 1``, 4128 weights) against the MLP on
    ``vec(X)`` (``128 -> 32 -> 1``, 4128 weights), both without biases and trained on the
    squared loss against +-1 labels (the reconstruction used BCE with biases), 150 steps of
    full-batch Adam (lr 2e-2, cosine), 8 trials batched, 2000 test sentences.
    Precondition: the labels are the sign of the summed linear sentiments (agreement 1).
    Pass: mean accuracy of self-attention at least 0.03 above the baseline's at the
    smallest n (100), the reconstruction's margin.  RE-DERIVED AFTER THE 20-SEED SWEEP: with
    3 trials the mean gap failed on seed 6 (+0.012; seeds 1-19 spread +0.012 .. +0.11, a
    per-seed standard deviation of about 0.026), so the trial count was raised to 8 (standard
    deviation of the mean about 0.016, the seeds 1-10 mean gap 0.063 about 2 of them above
    0.03); the margin is unchanged; decided on seeds 1-10, held out on 0, 11-19.  The control
    was word sentiments drawn independently of the embeddings, but the label is still a
    function of the bag of words that both networks partly learn (gaps -0.006 .. +0.044 on
    seeds 1-19, a misfire on seed 12); it is now labels independent of the sentences, whose
    gap is pure test-set noise with the derived standard deviation in its description.  At
    n = 400 seeds 1 and 2 gave -0.02 and -0.005 (300 steps): the advantage is a small-sample
    effect here, so larger n (full tier) are recorded, not decided.  Table 2's printed
    accuracies are cited in ``docs/claims/anon20.md`` (not measurable here).
    """
    s = tc.sizes
    labels = "independent" if tc.control == "independent_labels" else "linear"
    runs = [tc.use(bag_of_words, n=n, labels=labels) for n in s["n"]]
    mean = {arm: np.array([r[arm].mean() for r in runs]) for arm in ("self-attention", "baseline")}
    tc.record("mean test accuracy per n", mean)
    tc.record("per-trial accuracy gap at the smallest n", runs[0]["self-attention"] - runs[0]["baseline"])
    for arm, values in mean.items():
        tc.curve("Table 2 surrogate: test accuracy against n", arm, s["n"], values,
                 xscale="log", ylabel="test accuracy")
    tc.precondition.at_least("labels follow the summed linear word sentiments",
                             runs[0]["agreement"], 1.0)
    tc.conclusion.at_least("self-attention at least 0.03 above the baseline",
                           mean["self-attention"][0] - mean["baseline"][0], 0.03)
