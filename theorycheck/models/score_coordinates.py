r"""The token-selection loss as a function of its scores and logits.

For f(X) = u^T X^T softmax(X W x_1) with the exponential loss
L = (1/n) sum_i exp(-y_i f(X_i)) (`theorycheck.models.token_selection`), the loss depends on
theta = (u, W) only through the token scores gamma_{i,t} = y_i u^T x_{i,t} and the logits
z_{i,t} = x_{i,t}^T W x_{i,1}, and both are linear in theta.  A trajectory recorded as
(gamma_t, z_t) -- arrays of size nT however large d is -- therefore determines the margins,
the loss, the gradient's coordinates, the loss anywhere on a segment between two points, and
the Hessian's spectral norm (through the Gram matrices of the two linear maps).

Arrays: ``gamma``, ``z`` of shape (..., K, n, T) (any leading axes, e.g. the steps of a run),
``is_opt`` a boolean mask (K, n, T) of the designated tokens, ``y`` (K, n), ``X`` (K, n, T, d).
Every function is numpy and exact in saturation: margins and deviations are sums of
non-negative (or signed log-domain) terms, never differences of nearly equal numbers.  The
test suite checks each against torch autograd on the parameters.

Every function is pointwise along the leading axes, and those whose temporaries are several
arrays of the points' size (the gradient norms, the uphill points, the segment ratios, the
Hessian norms) evaluate them over chunks of the first leading axis of at most `CHUNK_BYTES`
(`theorycheck.batching.map_chunks`), with the Gram matrices formed once: the values are those
of one batch, while a run's 5001 steps at n = 64 (vdt24's full tier) hold 0.3 GB per array.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import logsumexp

from theorycheck.batching import map_chunks

from .token_selection import score_deviations, span_kernel

__all__ = ["token_gram", "log_softmax", "margins", "log_loss", "weights_and_deviations", "gradient_coordinates",
           "token_map_grams", "quadratic_form", "gradient_norms_over_loss", "uphill_points",
           "segment_log_ratios", "sample_hessians_over_loss", "hessian_norm_over_loss"]


#: bytes of temporaries per chunk of points (see the module docstring)
CHUNK_BYTES = 2**30
#: arrays of the points' size that `gradient_coordinates` holds at once (attention, deviations,
#: their logs and signs, the weighted products)
GRADIENT_TEMPORARIES = 12


def _by_points(fn, *arrays, temporaries: float):
    """``fn(*arrays)`` over chunks of the first leading axis of the points ``arrays[0]`` (S, ..., K,
    n, T) and of the other arrays (points of the same shape, or one value per point), each chunk
    with about ``temporaries`` arrays of its points' size alive at once; at once where the points
    have no leading axis or the others broadcast against them.  ``fn`` returns an array or a dict."""
    points = arrays[0]
    if points.ndim <= 3 or any(a.ndim not in (1, points.ndim) or len(a) != len(points) for a in arrays):
        return fn(*arrays)
    return map_chunks(fn, *arrays, item_bytes=temporaries * arrays[0][0].nbytes, budget=CHUNK_BYTES)


def token_gram(X: np.ndarray) -> np.ndarray:
    """Gram matrix ``<x_{i,t}, x_{j,s}>`` of all ``nT`` tokens of each trial: ``(..., nT, nT)``."""
    tokens = X.reshape(*X.shape[:-3], -1, X.shape[-1])
    return tokens @ np.swapaxes(tokens, -1, -2)


def log_softmax(z: np.ndarray) -> np.ndarray:
    """log s = z - logsumexp(z) over the tokens."""
    return z - logsumexp(z, axis=-1, keepdims=True)


def margins(gamma: np.ndarray, log_s: np.ndarray, is_opt: np.ndarray) -> np.ndarray:
    r"""gbar_i = y_i f(X_i) = gamma_{i,o} - sum_{t != o} s_t (gamma_{i,o} - gamma_{i,t}), (..., K, n).

    With o the designated token, written as the designated score minus a sum of terms that are
    non-negative where o is the top-scoring token, so it stays exact when s_o -> 1."""
    gamma_o = np.sum(gamma, axis=-1, where=is_opt, keepdims=True)
    return gamma_o[..., 0] - np.sum(np.exp(log_s) * (gamma_o - gamma), axis=-1, where=~is_opt)


def log_loss(gamma: np.ndarray, z: np.ndarray, is_opt: np.ndarray) -> np.ndarray:
    """log L = log((1/n) sum_i exp(-gbar_i)), (..., K), without overflow."""
    m = margins(gamma, log_softmax(z), is_opt)
    return logsumexp(-m, axis=-1) - math.log(m.shape[-1])


def weights_and_deviations(gamma: np.ndarray, z: np.ndarray, is_opt: np.ndarray):
    r"""(s, w, delta): attention s_{i,t}, loss weights w_i = l_i / sum_j l_j and deviations
    delta_{i,t} = gamma_{i,t} - gbar_i (from `score_deviations`, a signed log-domain sum that
    is exact when s concentrates on one token)."""
    log_s = torch.log_softmax(torch.as_tensor(z), dim=-1)
    scores = torch.as_tensor(gamma)
    log_dev, sign = score_deviations(scores, log_s, scores)
    gbar = margins(gamma, log_s.numpy(), is_opt)
    w = np.exp(-gbar - logsumexp(-gbar, axis=-1, keepdims=True))
    return log_s.exp().numpy(), w, (sign * log_dev.exp()).numpy()


def gradient_coordinates(gamma, z, y, is_opt):
    r"""dL/dp and dL/dz divided by L, with p_{i,t} = u^T x_{i,t}:

        (dL/dp_{i,t})/L = -w_i y_i s_{i,t},  (dL/dz_{i,t})/L = -w_i s_{i,t} delta_{i,t}.

    Shapes (..., K, n*T), ordered (i, t) -> i*T + t like `token_map_grams`."""
    s, w, delta = weights_and_deviations(gamma, z, is_opt)
    flat = lambda a: a.reshape(*a.shape[:-2], -1)  # noqa: E731
    return flat(-w[..., None] * y[..., None] * s), flat(-w[..., None] * s * delta)


def token_map_grams(X: np.ndarray):
    r"""Gram matrices of the linear maps u -> p = (u^T x_{i,t}) and W -> z = (x_{i,t}^T W x_{i,1}):
    G_{(i,t),(j,r)} = <x_{i,t}, x_{j,r}> (`token_gram`) and K_W, the Gram matrix of the
    matrices x_{i,t} x_{i,1}^T (`span_kernel`).  (K, nT, nT) each."""
    X = np.asarray(X)
    return token_gram(X), span_kernel(torch.tensor(X)).numpy()


def quadratic_form(v: np.ndarray, M: np.ndarray) -> np.ndarray:
    """v^T M v over the last axis; v (..., K, m), M (K, m, m)."""
    return np.einsum("...km,kmr,...kr->...k", v, M, v)


def gradient_norms_over_loss(gamma, z, y, X, is_opt):
    """(||grad_u L||/L, ||grad_W L||_F/L), each (..., K): sqrt(dp^T G dp), sqrt(dz^T K_W dz)."""
    G, KW = token_map_grams(X)

    def norms(gamma, z):
        dp, dz = gradient_coordinates(gamma, z, y, is_opt)
        return {"u": np.sqrt(quadratic_form(dp, G)), "W": np.sqrt(quadratic_form(dz, KW))}
    both = _by_points(norms, gamma, z, temporaries=GRADIENT_TEMPORARIES)
    return both["u"], both["W"]


def uphill_points(gamma, z, y, X, is_opt, length):
    r"""(gamma, z) at theta + length grad L(theta)/||grad L(theta)|| (one norm over (u, W)) for
    the points (gamma, z) (S, K, n, T) and lengths (S,): the displacement in the coordinates
    (p, z) is length (G dp, K_W dz)/sqrt(dp^T G dp + dz^T K_W dz)."""
    G, KW = token_map_grams(X)

    def moved(gamma, z, length):
        dp, dz = gradient_coordinates(gamma, z, y, is_opt)
        norm = np.sqrt(quadratic_form(dp, G) + quadratic_form(dz, KW))[..., None] / length[:, None, None]
        move_p = (np.einsum("kmr,...kr->...km", G, dp) / norm).reshape(gamma.shape)
        move_z = (np.einsum("kmr,...kr->...km", KW, dz) / norm).reshape(gamma.shape)
        return {"gamma": gamma + y[..., None] * move_p, "z": z + move_z}
    points = _by_points(moved, gamma, z, np.asarray(length), temporaries=GRADIENT_TEMPORARIES + 4)
    return points["gamma"], points["z"]


def segment_log_ratios(gamma, z, end_gamma, end_z, is_opt, lambdas):
    """log L(theta + lam (end - theta)) - log L(theta) for each lam of ``lambdas``:
    (len(lambdas), ..., K).  Exact: gamma and z are linear along a segment."""
    def ratios(gamma, z, end_gamma, end_z):
        start = log_loss(gamma, z, is_opt)
        return np.stack([log_loss(gamma + lam * (end_gamma - gamma), z + lam * (end_z - z), is_opt)
                         for lam in lambdas], axis=-1) - start[..., None]
    return np.moveaxis(_by_points(ratios, gamma, z, end_gamma, end_z, temporaries=8), -1, 0)


def sample_hessians_over_loss(gamma, z, y, is_opt):
    r"""Per-sample Hessians of L in the coordinates (p_i, z_i) divided by L: (..., n, 2T, 2T).

    L = (1/n) sum_i exp(-m_i), m_i = y_i sum_t s_t(z_i) p_{i,t}, so the block of sample i is
    (l_i/(nL)) (grad m grad m^T - grad^2 m) with grad_p m = y s, grad_z m = s * delta,
    d^2 m/dp_t dz_r = y s_t (1[t=r] - s_r) and
    d^2 m/dz_r dz_q = 1[r=q] s_r delta_r - s_r s_q (delta_r + delta_q)."""
    s, w, delta = weights_and_deviations(gamma, z, is_opt)
    y = np.broadcast_to(y[..., None], s.shape)
    eye = np.eye(s.shape[-1])
    grad = np.concatenate([y * s, s * delta], axis=-1)
    mixed = (y * s)[..., :, None] * (eye - s[..., None, :])
    sd = s * delta
    zz = eye * sd[..., None, :] - s[..., :, None] * sd[..., None, :] - sd[..., :, None] * s[..., None, :]
    second = np.concatenate([np.concatenate([np.zeros_like(mixed), mixed], axis=-1),
                             np.concatenate([np.swapaxes(mixed, -1, -2), zz], axis=-1)], axis=-2)
    return w[..., None, None] * (grad[..., :, None] * grad[..., None, :] - second)


def _psd_sqrt(M: torch.Tensor) -> torch.Tensor:
    values, vectors = torch.linalg.eigh(M)
    return (vectors * values.clamp(min=0.0).sqrt()[..., None, :]) @ vectors.transpose(-1, -2)


def hessian_norm_over_loss(gamma, z, y, X, is_opt) -> np.ndarray:
    r"""||grad^2 L(theta)||_2 / L(theta) at the points (gamma, z) (S, K, n, T): (S, K).

    grad^2 L = J^T A J with J: theta -> (p, z) linear and A = grad^2_{(p,z)} L block diagonal
    (one 2T x 2T block per sample, `sample_hessians_over_loss`).  The non-zero spectrum of
    J^T A J is that of S^{1/2} A S^{1/2} with S = J J^T = diag(G, K_W) (`token_map_grams`): a
    2nT x 2nT eigenproblem however large d is.  The eigen-solves run in torch, which keeps to
    the process's thread setting.  Over chunks of the points (the module docstring): four
    2nT x 2nT matrices per point and instance are alive at once (A, the two products, the
    solver's copy)."""
    _, K, n, T = gamma.shape
    G, KW = (torch.as_tensor(M) for M in token_map_grams(X))
    root = torch.zeros((K, 2 * n * T, 2 * n * T), dtype=torch.float64)
    root[:, : n * T, : n * T], root[:, n * T:, n * T:] = _psd_sqrt(G), _psd_sqrt(KW)

    def norms(gamma, z):
        steps = len(gamma)
        blocks = sample_hessians_over_loss(gamma, z, y, is_opt).reshape(steps, K, n, 2, T, 2, T)
        A = np.zeros((steps, K, 2, n, T, 2, n, T))
        for i in range(n):
            A[:, :, :, i, :, :, i, :] = blocks[:, :, i]
        A = torch.as_tensor(A.reshape(steps, K, 2 * n * T, 2 * n * T))
        return torch.linalg.eigvalsh(root @ A @ root).abs().amax(dim=-1).numpy()
    return _by_points(norms, gamma, z, temporaries=4 * (2 * n * T) ** 2 / (n * T))
