r"""The networks of anon20 beyond the library's attention networks: the recurrent-attention
estimator of App. A (Theorem 6), Table 1's l1-regularised attention, and the parameter counts of
the experiment networks of Tables 1 and 2."""
from __future__ import annotations

import torch

from theorycheck.models import (RELU, Activation, BiasedAttentionNet, Instance, SelfAttentionNet,
                                register_model)
from theorycheck.models.attention_nets import hidden_features

nn = torch.nn

#: the l1 weight on a ("Regularization" paragraph of Sec. 5.1.1; the paper's value was lost)
L1_WEIGHT = 1e-3


class RecurrentAttention(nn.Module):
    r"""The recurrent-attention estimator of App. A on sentences ``X (n, t, p)`` (p words of
    dimension t): ``s_k = f(s_{k-1}, c_{k-1})`` (a GRU cell, state of dimension t),
    ``e_kj = score(s_{k-1}, x_j)``, ``alpha_k = softmax_j(e_k)``, ``c_k = sum_j alpha_kj x_j``
    (the sum runs over the p words: the copy's ``sum_{j=1}^t`` is an index slip) and ``y_hat =
    W2^T relu(W1^T c_T)`` with ``W1 (t, d)``, ``W2 (d,)``.  ``score = "dot"``: ``<s, x_j>``
    (no parameters); ``"mlp"``: ``w^T tanh(U [s; x_j] + b)`` with ``hidden`` units."""

    def __init__(self, t: int, d: int, *, score: str, hidden: int = 5, steps: int = 3):
        super().__init__()
        self.steps = steps
        self.update = nn.GRUCell(t, t, dtype=torch.float64)
        self.score = (None if score == "dot" else
                      nn.Sequential(nn.Linear(2 * t, hidden, dtype=torch.float64), nn.Tanh(),
                                    nn.Linear(hidden, 1, bias=False, dtype=torch.float64)))
        self.W1 = nn.Parameter(torch.randn(t, d, dtype=torch.float64) / t ** 0.5)
        self.W2 = nn.Parameter(torch.randn(d, dtype=torch.float64) / d ** 0.5)

    def scores(self, s, X):
        """``e_j = score(s, x_j)`` for every word, (n, p)."""
        if self.score is None:
            return torch.einsum("nt,ntp->np", s, X)
        pairs = torch.cat([s.unsqueeze(-1).expand_as(X), X], 1).transpose(1, 2)   # (n, p, 2t)
        return self.score(pairs).squeeze(-1)

    def forward(self, X):
        s = torch.zeros(X.shape[0], X.shape[1], dtype=X.dtype)
        c = X.mean(-1)
        for _ in range(self.steps):
            s_next = self.update(c, s)
            alpha = torch.softmax(self.scores(s, X), -1)
            c, s = torch.einsum("np,ntp->nt", alpha, X), s_next
        return torch.relu(c @ self.W1) @ self.W2


class L1Attention(BiasedAttentionNet):
    """The attention network's loss plus ``L1_WEIGHT * ||a||_1`` (the regularised arm)."""

    def loss(self, params):
        return super().loss(params) + L1_WEIGHT * params["a"].abs().sum(-1)


class IdentityAttentionNet(SelfAttentionNet):
    r"""The self-attention network with its attention matrix replaced by the identity, ``A(X) =
    I`` (no mixing across words): ``f(X) = W2^T phi(W1^T vec(W_V X))``, blocks W1, W2, WV.  It
    keeps the value map ``W_V`` shared across positions and removes only the softmax mixing
    (Table 2's control in the reconstruction)."""

    blocks = ("W1", "W2", "WV")

    def inputs(self, params) -> torch.Tensor:
        """``vec(W_V X_i)`` (K, n, p d_v), column-stacked (word 1's value vector first)."""
        return torch.einsum("kvt,kntp->knvp", params["WV"], self.X).transpose(-1, -2).flatten(-2)

    def output(self, params) -> torch.Tensor:
        return torch.einsum("knd,kd->kn", hidden_features(self.inputs(params), params["W1"], self.act),
                            params["W2"])

    def restrict(self, trials):
        return IdentityAttentionNet(self.X[trials], self.y[trials], self.act)


def numel(*modules):
    """The number of parameter entries of ``modules``."""
    return sum(p.numel() for m in modules for p in m.parameters())


def table_counts(value_width: int):
    """Parameter counts of the experiment networks, built on the meta device: Table 1
    (256 -> 128 -> 10 with biases, attention adds a in R^256) and Table 2 (embedding table
    25002 x 100, flattened 2142 x 100 input -> 256 -> 1 with biases; self-attention adds
    W_Q, W_K in R^{100 x 100} and W_V in R^{100 x value_width} without biases)."""
    meta = {"device": "meta"}
    base1 = numel(nn.Linear(256, 128, **meta), nn.Linear(128, 10, **meta))
    base2 = numel(nn.Embedding(25002, 100, **meta), nn.Linear(2142 * 100, 256, **meta),
                  nn.Linear(256, 1, **meta))
    qkv = numel(nn.Linear(100, 100, bias=False, **meta), nn.Linear(100, 100, bias=False, **meta),
                nn.Linear(value_width, 100, bias=False, **meta))
    return {"table1 baseline": base1, "table1 attention": base1 + 256,
            "table2 baseline": base2, "table2 self-attention": base2 + qkv}


@register_model("anon20_l1_attention")
def l1_attention_instance(K, seed):
    """A small `L1Attention` for the conformance suite (attention weights a away from 0,
    where ||a||_1 is differentiable)."""
    g = torch.Generator().manual_seed(seed)
    n, p, d, m = 6, 4, 3, 2
    X = torch.randn(K, n, p, generator=g, dtype=torch.float64)
    Y = torch.randn(K, n, m, generator=g, dtype=torch.float64)
    model = L1Attention(X, Y, Activation("softplus", 2.0))
    params = {"a": 0.5 + torch.rand(K, p, generator=g, dtype=torch.float64),
              "W1": 0.5 * torch.randn(K, p, d, generator=g, dtype=torch.float64),
              "b1": 0.5 * torch.randn(K, d, generator=g, dtype=torch.float64),
              "W2": 0.5 * torch.randn(K, d, m, generator=g, dtype=torch.float64),
              "b2": 0.5 * torch.randn(K, m, generator=g, dtype=torch.float64)}
    return Instance(model, params, None)


@register_model("anon20_identity_attention")
def identity_attention_instance(K, seed):
    """A small `IdentityAttentionNet` for the conformance suite (ReLU, random sentences)."""
    g = torch.Generator().manual_seed(seed)
    n, t, p, dv, d = 5, 3, 4, 2, 6
    X = torch.randn(K, n, t, p, generator=g, dtype=torch.float64)
    y = torch.randn(K, n, generator=g, dtype=torch.float64)
    params = {"W1": torch.randn(K, p * dv, d, generator=g, dtype=torch.float64) / (p * dv) ** 0.5,
              "W2": torch.randn(K, d, generator=g, dtype=torch.float64) / d ** 0.5,
              "WV": torch.randn(K, dv, t, generator=g, dtype=torch.float64) / t ** 0.5}
    return Instance(IdentityAttentionNet(X, y, RELU), params, None)
