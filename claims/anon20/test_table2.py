r"""Table 2's claim (Sec. 5.1.2: self-attention needs fewer samples than a flattened MLP) on
a synthetic bag-of-words sentiment task: IMDB and GloVe cannot be fetched here."""
import numpy as np
import torch

from theorycheck import Control, claim, shared_run
from theorycheck.models import RELU, BaselineNet, SelfAttentionNet
from theorycheck.optim import adam_steps, cosine_schedule

from .setup import PAPER

SIZES = {"quick": {"n": [100], "vocabulary": 100, "t": 8, "p": 16, "dq": 8, "dv": 8, "d": 32,
                   "steps": 150, "trials": 3, "test": 2000},
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
    N(0, I_t)`` (``labels = "linear"``) or ``s_v ~ N(0, 1)`` independent of the embeddings
    (``"random"``).  Both bias-free, ReLU, width ``d``, trained on the squared loss against
    the +-1 labels by full-batch Adam (lr 2e-2, cosine decay); accuracy of ``sign f`` on
    ``test`` fresh sentences.  Also the relative least-squares residual of the sentiments
    on the embeddings (0 when they are linear in them)."""
    s = run.sizes
    rng = run.rng("sentences", n, labels)
    K, V, t, p = s["trials"], s["vocabulary"], s["t"], s["p"]
    E, w = rng.standard_normal((K, V, t)), rng.standard_normal((K, t))
    sentiment = np.einsum("kvt,kt->kv", E, w) if labels == "linear" else rng.standard_normal((K, V))
    residual = max(np.linalg.norm(sv - Ek @ np.linalg.lstsq(Ek, sv, rcond=None)[0]) / np.linalg.norm(sv)
                   for Ek, sv in zip(E, sentiment))
    words = rng.integers(0, V, (K, n + s["test"], p))
    X = torch.as_tensor(np.stack([E[k][words[k]] for k in range(K)]).transpose(0, 1, 3, 2))
    y = torch.as_tensor(np.sign(np.stack([sentiment[k][words[k]].sum(-1) for k in range(K)])))
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
            "residual": float(residual)}


@claim(
    f"{PAPER}.table2.selfattention_surrogate",
    source="Sec. 5.1.2, Table 2 ('self-attention requires lower sample complexity')",
    statement="On a bag-of-words sentiment task, at a small sample size the self-attention "
              "network reaches a higher test accuracy than a flattened MLP of similar size.",
    provenance="derived",
    controls={
        "random_sentiments": Control(
            "hypothesis", breaks=["self-attention at least 0.03 above the baseline"],
            description="word sentiments independent of the embeddings: the label is no "
                        "function of the attended bag of embeddings, neither model learns"),
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
    full-batch Adam (lr 2e-2, cosine), 3 trials, 2000 test sentences.  Precondition: the sentiments are linear
    in the embeddings (relative least-squares residual ``<= 1e-8``).  Pass: mean accuracy of
    self-attention at least 0.03 above the baseline's at the smallest n (100), the
    reconstruction's margin; seeds 1 and 2 gave +0.058 and +0.055, checked on 0.  At n = 400
    seeds 1 and 2 gave -0.02 and -0.005 (300 steps): the advantage is a small-sample effect
    here, so larger n (full tier) are recorded, not decided.  The control's margin is thin
    (+0.017, -0.017 and +0.023 on seeds 1, 2, 0 against 0.03).  Table 2's printed
    accuracies are cited in ``docs/claims/anon20.md`` (not measurable here).
    """
    s = tc.sizes
    labels = "random" if tc.control == "random_sentiments" else "linear"
    runs = [tc.use(bag_of_words, n=n, labels=labels) for n in s["n"]]
    mean = {arm: np.array([r[arm].mean() for r in runs]) for arm in ("self-attention", "baseline")}
    tc.record("mean test accuracy per n", mean)
    for arm, values in mean.items():
        tc.curve("Table 2 surrogate: test accuracy against n", arm, s["n"], values,
                 xscale="log", ylabel="test accuracy")
    tc.precondition.at_most("word sentiments linear in the embeddings", runs[0]["residual"], 1e-8)
    tc.conclusion.at_least("self-attention at least 0.03 above the baseline",
                           mean["self-attention"][0] - mean["baseline"][0], 0.03)
