r"""Closed-form moments of Gaussian samples: the sample covariance and softmax averages.

Sample covariance.  For x_1..x_n iid N(0, Sigma) and Sigma_hat = (1/n) sum_i x_i x_i^T (known
zero mean), Isserlis' formula gives E[x x^T A x x^T] = Sigma A Sigma + Sigma A^T Sigma +
tr(A Sigma) Sigma, hence (the n(n-1) cross terms give Sigma A Sigma)

    E[Sigma_hat A Sigma_hat] = Sigma A Sigma + (1/n) (Sigma A^T Sigma + tr(A Sigma) Sigma).

Softmax averages over Gaussian keys.  For a query direction u (u = K x_i for attention scores
x_j^T K x_i) and keys x_j iid N(0, Sigma), the weights s_j = e^{u^T x_j} / sum_l e^{u^T x_l} and
the average a = sum_j s_j x_j.  With q = u^T Sigma u, exponential tilting gives
E e^{c u^T x} = e^{c^2 q/2} and, under the tilt e^{2 u^T x}, x ~ N(2 Sigma u, Sigma).  As
n -> infinity (a self-normalized importance-sampling average, delta method):

    n^2 E[s_j^2]           -> E[e^{2u^T x}] / (E e^{u^T x})^2 = e^{q},
    n E||a - Sigma u||^2   -> E[||x - Sigma u||^2 e^{2u^T x}] / (E e^{u^T x})^2
                            = e^{q} (tr Sigma + ||Sigma u||^2),

finite when the tilt exists (always for Gaussians; the corrections are O(1/n)).  A
non-asymptotic upper bound on E[s_j^2] follows from s_j <= e^{a_j} / sum_{l != j} e^{a_l} and
AM-GM, sum_{l != j} e^{a_l} >= (n-1) exp(mean_{l != j} a_l) (`softmax_weight_second_moment_bound`).
"""
from __future__ import annotations

import numpy as np

from theorycheck.errors import DeclarationError

__all__ = ["sample_covariance_quadratic_mean", "softmax_weight_second_moment_limit",
           "softmax_average_mse_limit", "softmax_weight_second_moment_bound"]


def sample_covariance_quadratic_mean(Sigma, A, n):
    r"""E[Sigma_hat A Sigma_hat] = Sigma A Sigma + (Sigma A^T Sigma + tr(A Sigma) Sigma)/n for
    Sigma_hat the zero-mean sample covariance of n Gaussian rows N(0, Sigma)."""
    if n < 1:
        raise DeclarationError(f"sample_covariance_quadratic_mean: n = {n} < 1 samples")
    Sigma, A = np.asarray(Sigma, dtype=float), np.asarray(A, dtype=float)
    return Sigma @ A @ Sigma + (Sigma @ A.T @ Sigma + np.trace(A @ Sigma) * Sigma) / n


def _score_variance(u, Sigma):
    u = np.asarray(u, dtype=float)
    return np.einsum("...i,ij,...j->...", u, Sigma, u)


def softmax_weight_second_moment_limit(u, Sigma):
    r"""lim n^2 E[s_j^2] = e^{q}, q = u^T Sigma u, for softmax weights over n Gaussian keys
    N(0, Sigma) with scores u^T x_j; ``u`` (..., d)."""
    return np.exp(_score_variance(u, Sigma))


def softmax_average_mse_limit(u, Sigma):
    r"""lim n E||a - Sigma u||^2 = e^{q} (tr Sigma + ||Sigma u||^2) for the softmax average a of
    n Gaussian keys N(0, Sigma) with scores u^T x_j; ``u`` (..., d)."""
    mean = np.asarray(u, dtype=float) @ np.asarray(Sigma).T
    return np.exp(_score_variance(u, Sigma)) * (np.trace(Sigma) + (mean * mean).sum(-1))


def softmax_weight_second_moment_bound(q, tau, n, *, self_weight=False):
    r"""AM-GM upper bounds on E[s_j^2] when one key is fixed (its score tau) and the n - 1 others
    are Gaussian with scores N(0, q):

    * a random key j (``self_weight=False``):
      (n-1)^{-2} exp(2q (1 + (n-2)/(n-1)^2) - 2 tau/(n-1));
    * the fixed key itself (``self_weight=True``): (n-1)^{-2} exp(2 tau + 2q/(n-1)).

    From s_j^2 <= (n-1)^{-2} exp(2 a_j - (2/(n-1)) sum_{l != j} a_l), E e^{2a} = e^{2q} and
    E e^{-2a/(n-1)} = e^{2q/(n-1)^2} for a ~ N(0, q)."""
    if n < 3:
        raise DeclarationError(f"softmax_weight_second_moment_bound: n = {n} < 3 keys")
    q, tau = np.asarray(q, dtype=float), np.asarray(tau, dtype=float)
    m = n - 1
    if self_weight:
        return np.exp(2 * tau + 2 * q / m) / m ** 2
    return np.exp(2 * q * (1 + (n - 2) / m ** 2) - 2 * tau / m) / m ** 2
