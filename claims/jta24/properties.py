r"""The inputs of jta24's property claims: the seeded matrices of the norm and Bregman
inequalities (Lemmas 12-15, 26; `test_inequalities`) and the instances, matrices and Lemma 17's
gradient formula of the loss and gradient lemmas (Lemmas 16-18, 23; `test_loss_lemmas`).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581, Appendix A.2-A.4.  Each claim searches these
inputs for a counterexample with `theorycheck.patterns.property_search`.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import strategies as st

from theorycheck.models import TokenSelection, log_attention, token_scores
from theorycheck.optim import lp_norm

from .setup import INSTANCES, instances

# ---------------------------------------------------------------- norm and Bregman inequalities


def matrix(seed, m, n):
    """An m x n matrix: Gaussian entries times 10^U (U uniform in [-2, 2]), about 20% zeroed
    (at least one entry non-zero)."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((m, n)) * 10.0 ** rng.uniform(-2, 2, (m, n))
    W[rng.random((m, n)) < 0.2] = 0.0
    if not W.any():
        W[0, 0] = 1.0
    return W


def one_trial(A):
    """A as a torch batch of one trial, (1, ...)."""
    return torch.as_tensor(A)[None]


def unit_pair(seed, m, n, p, log_scale):
    """W and V = W + noise of size 10^log_scale, both scaled to unit l_p norm."""
    W = matrix(seed, m, n)
    V = W + 10.0 ** log_scale * np.abs(W).max() * np.random.default_rng(seed + 1).standard_normal(W.shape)
    return W / float(lp_norm(one_trial(W), p)), V / float(lp_norm(one_trial(V), p))


def power_ratio_terms(x, p):
    """((x^(p-1) - 1)/(p-1), (x^p - 1)/p, x (x^(p-1) - 1)/(p-1)) with expm1/log1p."""
    lx = math.log(x)
    a = math.expm1((p - 1) * lx) / (p - 1)
    return a, math.expm1(p * lx) / p, x * a


# ---------------------------------------------------------------- loss and gradient lemmas


def instance_models(tc):
    """One fixed-decoder model per instance, and the tensors (X, y, v)."""
    data, _ = instances(tc.paper_rng(INSTANCES), tc.sizes)
    t = data.to_torch(tc.device, tc.dtype)
    return [TokenSelection(t.X[k:k + 1], t.y[k:k + 1], t.u[k:k + 1]) for k in range(data.K)], t


def random_W(seed, d, log_scale, dtype, device):
    """W = 10^log_scale G/sqrt(d), G a standard normal (1, d, d) drawn on the CPU from the torch seed
    ``seed`` (the same numbers on every device), on ``device``."""
    g = torch.Generator().manual_seed(seed)
    return (10.0**log_scale * torch.randn(1, d, d, generator=g, dtype=dtype) / math.sqrt(d)).to(device)


def cases(K):
    """Search cases (instance < K, seed of W, log10 of the scale of W in [-2, 2])."""
    return st.tuples(st.integers(0, K - 1), st.integers(0, 2**31 - 1), st.floats(-2.0, 2.0))


def lemma17_gradient(X, y, v, W, drop_outer=False):
    r"""grad L = (1/n) sum_i l'(gamma_i^T s_i) X_i^T S'(X_i W z_i) gamma_i z_i^T, written as in the
    lemma (S'(a) = diag(s) - s s^T; ``drop_outer`` omits - s s^T), z_i = x_{i,0}, l' = -exp(-u)."""
    s = log_attention(X, W).exp()                                     # (1, n, T)
    gamma = token_scores(X, y, v)
    Sprime = torch.diag_embed(s) - (0.0 if drop_outer else s[..., :, None] * s[..., None, :])
    inner = torch.einsum("knts,kns->knt", Sprime, gamma)              # S' gamma
    lprime = -torch.exp(-(s * gamma).sum(-1))                         # (1, n)
    return torch.einsum("kn,kntd,knt,kne->kde", lprime, X, inner, X[:, :, 0]) / X.shape[1]
