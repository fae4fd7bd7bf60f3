r"""Table 2's claim (Sec. 5.1.2: self-attention needs fewer samples than a flattened MLP) on
a synthetic bag-of-words sentiment task: IMDB and GloVe cannot be fetched here."""
import numpy as np
import torch

from theorycheck import Control, claim, shared_run
from theorycheck.models import RELU, BaselineNet, SelfAttentionNet
from theorycheck.optim import adam_steps, cosine_schedule

from .setup import PAPER

SIZES = {"quick": {"n": [100], "vocabulary": 100, "t": 8, "p": 16, "dq": 8, "dv": 8, "d": 32,
                   "steps": 150, "trials": 8, "test": 2000},
         "full": {"n": [100, 400, 1600], "vocabulary": 1000, "t": 8, "p": 64, "dq": 8, "dv": 8,
                  "d": 32, "steps": 600, "trials": 5, "test": 5000}}


def _flatten(X):
    """``vec(X)`` column-stacked (word 1 first), (K, n, t p): the flattened MLP's input."""
    return X.transpose(-1, -2).flatten(-2)


@shared_run(sizes=SIZES)
def bag_of_words(run, *, n, labels):
    r"""Test accuracy per trial of the self-attention network and of the flattened MLP on
    sentences of ``p`` i.i.d. uniform words from a vocabulary of fixed embeddings ``e_v ~
    N(0, I_t)``; label ``sign(sum_z s(v_z))`` with word sentiments ``s_v = <w, e_v>``, ``w ~
    N(0, I_t)`` (``labels = "linear"``), or a fair coin independent of the sentence
    (``"independent"``).  Both bias-free, ReLU, width ``d``, trained on the squared loss
    against the +-1 labels by full-batch Adam (lr 2e-2, cosine decay); accuracy of ``sign f``
    on ``test`` fresh sentences.  Also the fraction of labels (train and test) equal to the
    sign of the summed linear sentiments (1 when the labels follow them)."""
    s = run.sizes
    rng = run.rng("sentences", n, labels)
    K, V, t, p = s["trials"], s["vocabulary"], s["t"], s["p"]
    E, w = rng.standard_normal((K, V, t)), rng.standard_normal((K, t))
    sentiment = np.einsum("kvt,kt->kv", E, w)
    words = rng.integers(0, V, (K, n + s["test"], p))
    X = torch.as_tensor(np.stack([E[k][words[k]] for k in range(K)]).transpose(0, 1, 3, 2))
    rule = np.sign(np.stack([sentiment[k][words[k]].sum(-1) for k in range(K)]))
    y = torch.as_tensor(rule if labels == "linear" else rng.choice([-1.0, 1.0], rule.shape))
    normal = lambda *shape, fan_in: torch.as_tensor(  # noqa: E731
        rng.standard_normal((K, *shape)) / np.sqrt(fan_in))
    sa_start = {"W1": normal(p * s["dv"], s["d"], fan_in=p * s["dv"]), "W2": normal(s["d"], fan_in=s["d"]),
                "WQ": normal(s["dq"], t, fan_in=t), "WK": normal(s["dq"], t, fan_in=t),
                "WV": normal(s["dv"], t, fan_in=t)}
    base_start = {"W1": normal(t * p, s["d"], fan_in=t * p), "W2": normal(s["d"], fan_in=s["d"])}
    train, test = slice(0, n), slice(n, None)
    options = {"schedule": cosine_schedule(s["steps"])}
    sa = adam_steps(SelfAttentionNet(X[:, train], y[:, train], RELU), sa_start, s["steps"], 2e-2, **options)
    flat = _flatten(X)
    base = adam_steps(BaselineNet(flat[:, train], y[:, train], RELU), base_start, s["steps"], 2e-2,
                      **options)
    accuracy = lambda f: (torch.sign(f) == y[:, test]).double().mean(1).numpy()  # noqa: E731
    return {"self-attention": accuracy(SelfAttentionNet(X[:, test], y[:, test], RELU).output(sa)),
            "baseline": accuracy(BaselineNet(flat[:, test], y[:, test], RELU).output(base)),
            "agreement": float((y.numpy() == rule).mean())}


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
