r"""Scores of an Ornstein-Uhlenbeck forward process started at a Gaussian mixture.

Forward process ``dx = -g x dt + sqrt(2 g) dB`` with a constant rate ``g``: ``x(t) = alpha x(0) +
s xi`` in law, ``alpha = exp(-g t)``, ``s^2 = 1 - alpha^2``, ``xi ~ N(0, I)``.  For
``p_0 = sum_k pi_k N(mu_k, s_k^2 I)`` the marginal is ``p_t = sum_k pi_k N(alpha mu_k, v_k I)``,
``v_k = alpha^2 s_k^2 + s^2``, and its score is

    grad log p_t(x) = sum_k w_k(x) (-(x - alpha mu_k) / v_k),   w_k propto pi_k N(x; alpha mu_k, v_k I).

The denoising target ``-xi / s`` has conditional mean ``grad log p_t(x(t))`` (Vincent 2011).
"""
from __future__ import annotations

import numpy as np

from theorycheck.errors import DeclarationError

__all__ = ["ou_coefficients", "gaussian_mixture_score"]


def ou_coefficients(t, rate=1.0):
    """``(alpha(t), s(t))`` of the forward process with constant rate ``g = rate``."""
    t = np.asarray(t, dtype=float)
    if np.any(t < 0):
        raise DeclarationError("the forward process is defined for t >= 0")
    alpha = np.exp(-rate * t)
    return alpha, np.sqrt(-np.expm1(-2 * rate * t))


def gaussian_mixture_score(x, t, weights, means, stds, rate=1.0):
    r"""``grad log p_t(x)``, x (N, d), t (N,) -> (N, d); mixture ``weights`` (k,), ``means``
    (k, d), isotropic ``stds`` (k,)."""
    x = np.asarray(x, dtype=float)
    means = np.atleast_2d(np.asarray(means, dtype=float))
    weights, stds = np.asarray(weights, dtype=float), np.asarray(stds, dtype=float)
    if x.ndim != 2 or means.shape[1] != x.shape[1] or not len(weights) == len(stds) == len(means):
        raise DeclarationError(f"need x (N,d), means (k,d), weights (k,), stds (k,); got "
                               f"{x.shape}, {means.shape}, {weights.shape}, {stds.shape}")
    alpha, s = ou_coefficients(t, rate)
    v = alpha[:, None] ** 2 * stds[None] ** 2 + s[:, None] ** 2                         # (N,k)
    diff = x[:, None, :] - alpha[:, None, None] * means[None]                          # (N,k,d)
    d = x.shape[1]
    log_w = np.log(weights)[None] - 0.5 * d * np.log(v) - 0.5 * (diff**2).sum(-1) / v
    log_w -= log_w.max(1, keepdims=True)
    w = np.exp(log_w)
    w /= w.sum(1, keepdims=True)
    return -(w[..., None] * diff / v[..., None]).sum(1)
