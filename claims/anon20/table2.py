r"""Table 2's run (Sec. 5.1.2) on a synthetic bag-of-words sentiment task (IMDB and GloVe
cannot be fetched here): the self-attention network and a flattened MLP trained on the same
sentences."""
from __future__ import annotations

import numpy as np
import torch
from scipy import stats

from theorycheck import shared_run
from theorycheck.models import RELU, BaselineNet, SelfAttentionNet
from theorycheck.optim import adam_steps, cosine_schedule

from .models import IdentityAttentionNet

SIZES = {"quick": {"n": [100, 400], "vocabulary": 100, "t": 8, "p": 16, "dq": 8, "dv": 8, "d": 32,
                   "steps": 150, "instances": 8, "n_test": 2000},
         "full": {"n": [100, 400, 1600], "vocabulary": 1000, "t": 8, "p": 64, "dq": 8, "dv": 8,
                  "d": 32, "steps": 600, "instances": 5, "n_test": 5000}}


def flatten(X):
    """``vec(X)`` column-stacked (word 1 first), (K, n, t p): the flattened MLP's input."""
    return X.transpose(-1, -2).flatten(-2)


def labels_follow_rule(labels: str) -> bool:
    """Whether `bag_of_words` sets its labels to the sign of the summed linear word sentiments:
    by construction exactly for ``labels = "linear"``, so the hypothesis is decided on the
    configuration before any run (the run's ``agreement``, the fraction of drawn labels equal
    to the rule, is then 1)."""
    return labels == "linear"


def sentences(run, n: int, labels: str, instances: int | None):
    r"""The draw of `bag_of_words` (its stream ``("sentences", n, labels)``): sentences of ``p``
    i.i.d. uniform words from a vocabulary of fixed embeddings ``e_v ~ N(0, I_t)``, as
    ``X (K, n + n_test, t, p)``; labels ``sign(sum_z s(v_z))`` with word sentiments ``s_v = <w,
    e_v>``, ``w ~ N(0, I_t)`` (``labels = "linear"``), or a fair coin independent of the sentence
    (``"independent"``); the rule's labels; and the initial weights of the self-attention network
    and of the flattened MLP, drawn in that order.  ``instances`` overrides the tier's trial
    count.  Returns ``(sizes, X, y, rule, sa_start, mlp_start)``."""
    s = dict(run.sizes, **({"instances": instances} if instances is not None else {}))
    rng = run.rng("sentences", n, labels)
    K, V, t, p = s["instances"], s["vocabulary"], s["t"], s["p"]
    E, w = rng.standard_normal((K, V, t)), rng.standard_normal((K, t))
    sentiment = np.einsum("kvt,kt->kv", E, w)
    words = rng.integers(0, V, (K, n + s["n_test"], p))
    X = torch.as_tensor(np.stack([E[k][words[k]] for k in range(K)]).transpose(0, 1, 3, 2))
    rule = np.sign(np.stack([sentiment[k][words[k]].sum(-1) for k in range(K)]))
    y = torch.as_tensor(rule if labels_follow_rule(labels) else rng.choice([-1.0, 1.0], rule.shape))
    normal = lambda *shape, fan_in: torch.as_tensor(  # noqa: E731
        rng.standard_normal((K, *shape)) / np.sqrt(fan_in))
    sa_start = {"W1": normal(p * s["dv"], s["d"], fan_in=p * s["dv"]), "W2": normal(s["d"], fan_in=s["d"]),
                "WQ": normal(s["dq"], t, fan_in=t), "WK": normal(s["dq"], t, fan_in=t),
                "WV": normal(s["dv"], t, fan_in=t)}
    mlp_start = {"W1": normal(t * p, s["d"], fan_in=t * p), "W2": normal(s["d"], fan_in=s["d"])}
    return s, X, y, rule, sa_start, mlp_start


def trained_accuracy(net, X, y, start, n: int, steps: int) -> np.ndarray:
    """Test accuracy per trial of ``sign f`` for ``net`` (a model class) trained on the first
    ``n`` samples of ``(X, y)`` from ``start`` by ``steps`` of full-batch Adam on the squared loss
    (lr 2e-2, cosine decay), tested on the rest."""
    train, test = slice(0, n), slice(n, None)
    params = adam_steps(net(X[:, train], y[:, train], RELU), start, steps, 2e-2,
                        schedule=cosine_schedule(steps))
    return (torch.sign(net(X[:, test], y[:, test], RELU).output(params)) == y[:, test]).double().mean(1).numpy()


@shared_run(sizes=SIZES)
def mlp_accuracy(run, *, n, labels, instances=None):
    """Test accuracy per trial of the flattened MLP of `bag_of_words` (bias-free, ReLU, width
    ``d``, on ``vec(X)``), on its sentences (`sentences`: the same stream, so the same data and
    initial weights whichever self-attention arm it is compared with)."""
    s, X, y, _, _, mlp_start = sentences(run, n, labels, instances)
    return trained_accuracy(BaselineNet, flatten(X), y, mlp_start, n, s["steps"])


@shared_run(sizes=SIZES)
def bag_of_words(run, *, n, labels, attention="softmax", instances=None):
    r"""Test accuracy per trial of the self-attention network and of the flattened MLP on the
    sentences of `sentences`.  Both bias-free, ReLU, width ``d``, trained on the squared loss
    against the +-1 labels by full-batch Adam (lr 2e-2, cosine decay); accuracy of ``sign f``
    on ``n_test`` fresh sentences.  Also the fraction of labels (train and test) equal to the
    sign of the summed linear sentiments (1 when the labels follow them).  ``attention =
    "identity"``: the self-attention arm is `IdentityAttentionNet` (``A = I``, the same data and
    the same initial ``W1, W2, W_V``); the baseline is the softmax run's (`mlp_accuracy`, the
    same stream, data and initial weights: one run, trained once), so the identity run alone
    compares the two.  ``instances`` overrides the tier's trial count (a run of its own: other
    draws)."""
    s, X, y, rule, sa_start, _ = sentences(run, n, labels, instances)
    net = IdentityAttentionNet if attention == "identity" else SelfAttentionNet
    if attention == "identity":
        del sa_start["WQ"], sa_start["WK"]
    return {"self-attention": trained_accuracy(net, X, y, sa_start, n, s["steps"]),
            "baseline": run.use(mlp_accuracy, n=n, labels=labels, instances=instances),
            "agreement": float((y.numpy() == rule).mean())}


def gap_z_statistics(gaps) -> np.ndarray:
    r"""Per sample size, the paired Student t statistic ``T = mean / (sd / sqrt(m))`` of ``m``
    per-trial gaps, as its standard-normal quantile ``z = Phi^{-1}(F_{t, m-1}(T))``: exactly
    N(0, 1) when the gaps are i.i.d. normal with mean 0, so sizes with different trial counts
    share one null, and ``z < -Phi^{-1}(1 - alpha)`` exactly when the one-sided upper
    Student-t bound of the mean at level ``alpha`` is below 0."""
    return np.array([stats.norm.isf(stats.ttest_1samp(g, 0.0, alternative="greater").pvalue) for g in gaps])
