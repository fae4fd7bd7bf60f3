r"""Reference quantities of the neural tangent kernel regime: infinite-width kernels of
two-layer networks and gradient descent on kernel regression in closed form.

Infinite-width limits for first-layer weights ``w ~ N(0, sigma^2 I)`` and second-layer
signs with ``E[a_{l1} a_{l2}] = delta_{l1 l2}`` (the networks of
`theorycheck.models.two_layer`), with ``g = <x, x'>``::

    softmax  K(x, x') = g exp(sigma^2 g)
             (``alpha(x)/m -> exp(sigma^2 |x|^2 / 2)``, so ``m S_r(x) -> exp(w_r^T x - sigma^2 |x|^2/2)``,
             and ``E exp(w^T (x + x')) = exp(sigma^2 |x + x'|^2 / 2)``; the input-norm factors cancel)
    exp      K(x, x') = g exp(sigma^2 |x + x'|^2 / 2)
    relu     K(x, x') = g (pi - theta) / (2 pi),   theta = angle(x, x')     (any sigma)

The Gram matrix of ``d`` outputs is ``I_d (x) K`` (`output_kernel`).

Kernel gradient descent from zero outputs: ``u(t+1) = u(t) - c H (u(t) - y)``, and at test
inputs ``f(t+1) = f(t) - c K_te (u(t) - y)``, ``f(0) = u(0) = 0``.  With ``H = V diag(mu) V^T``,

    f(T) = K_te V diag(phi_T(mu)) V^T y,    phi_T(mu) = (1 - (1 - c mu)^T) / mu   (= c T at mu = 0),

evaluated without cancellation for small ``c mu`` (`kernel_gd_predictions`).
"""
from __future__ import annotations

import math

import torch

from theorycheck.errors import DeclarationError
from theorycheck.lineage import computation

__all__ = ["softmax_limit_kernel", "exp_limit_kernel", "relu_limit_kernel", "LIMIT_KERNELS",
           "output_kernel", "kernel_gd_predictions", "spectral_filter"]


def _inputs_gram(X1, X2):
    if X1.dim() != 3 or X2.dim() != 3 or X1.shape[0] != X2.shape[0] or X1.shape[2] != X2.shape[2]:
        raise DeclarationError(f"need X1 (K,n1,d_in) and X2 (K,n2,d_in); got {tuple(X1.shape)}, "
                               f"{tuple(X2.shape)}")
    return torch.einsum("kie,kje->kij", X1, X2)


def softmax_limit_kernel(X1, X2, sigma):
    """``<x, x'> exp(sigma^2 <x, x'>)``, shape (K, n1, n2); formed in place, two (K, n1, n2)
    arrays at once instead of three (the same values: the products commute), unless gradients
    flow through the inputs."""
    G = _inputs_gram(X1, X2)
    if torch.is_grad_enabled() and G.requires_grad:
        return G * torch.exp(sigma**2 * G)
    return torch.mul(G, sigma**2).exp_().mul_(G)


def exp_limit_kernel(X1, X2, sigma):
    """``<x, x'> exp(sigma^2 |x + x'|^2 / 2)``, shape (K, n1, n2)."""
    G = _inputs_gram(X1, X2)
    sq1 = X1.pow(2).sum(-1)[:, :, None]
    sq2 = X2.pow(2).sum(-1)[:, None, :]
    return G * torch.exp(sigma**2 * (sq1 + sq2 + 2 * G) / 2)


def relu_limit_kernel(X1, X2, sigma=None):
    """``<x, x'> (pi - theta) / (2 pi)`` with theta the angle between x and x' (sigma unused)."""
    G = _inputs_gram(X1, X2)
    norms = torch.linalg.vector_norm(X1, dim=-1)[:, :, None] * torch.linalg.vector_norm(X2, dim=-1)[:, None, :]
    cos = torch.where(norms > 0, G / torch.where(norms > 0, norms, 1.0), 0.0).clamp(-1.0, 1.0)
    return G * (math.pi - torch.arccos(cos)) / (2 * math.pi)


LIMIT_KERNELS = {"softmax": softmax_limit_kernel, "exp": exp_limit_kernel, "relu": relu_limit_kernel}


def output_kernel(kernel, d):
    """``I_d (x) kernel``: the Gram matrix of ``d`` independent outputs, (K, d n1, d n2),
    rows and columns output-major (index ``l * n + i``)."""
    eye = torch.eye(d, dtype=kernel.dtype, device=kernel.device)
    K, n1, n2 = kernel.shape
    return torch.einsum("ab,kij->kaibj", eye, kernel).reshape(K, d * n1, d * n2)


def spectral_filter(mu, step, T):
    r"""``phi_T(mu) = (1 - (1 - c mu)^T) / mu`` (``c T`` at ``mu = 0``), elementwise; negative
    round-off eigenvalues are treated as 0."""
    mu = mu.clamp_min(0.0)
    x = step * mu
    small = x < 0.5
    safe_x = torch.where(small, x, 0.0)
    done_small = -torch.expm1(T * torch.log1p(-safe_x))                    # 1 - (1 - x)^T
    done = torch.where(small, done_small, 1.0 - torch.pow(1.0 - x, T))
    return torch.where(mu > 0, done / torch.where(mu > 0, mu, 1.0), step * T)


@computation('trajectory', inputs=('H', 'K_test', 'y', 'step'))
def kernel_gd_predictions(H, K_test, y, step, times):
    r"""``f(T)`` of kernel gradient descent from zero for every ``T`` in ``times``.

    ``H`` (K, N, N) the training Gram matrix, ``K_test`` (K, M, N) the kernel between test and
    training points (``H`` itself for the training outputs), ``y`` (K, N) the labels, ``step``
    the function-space step ``c`` (a number or (K,)).  Returns (len(times), K, M).  With ``H = V
    diag(mu) V^T``, ``f(T) = K_test V (phi_T(mu) * V^T y)``; the products are grouped as ``K_test (V
    Phi)`` when there are fewer times than test points (cost ``N^2 T + M N T``), else as ``(K_test
    V) Phi`` (``M N^2 + M N T``)."""
    if H.shape[-1] != H.shape[-2] or K_test.shape[-1] != H.shape[-1] or y.shape != H.shape[:2]:
        raise DeclarationError(f"kernel GD needs H (K,N,N), K_test (K,M,N), y (K,N); got "
                               f"{tuple(H.shape)}, {tuple(K_test.shape)}, {tuple(y.shape)}")
    mu, V = torch.linalg.eigh(H)
    coeff = torch.einsum("kji,kj->ki", V, y)                                 # V^T y
    c = torch.as_tensor(step, dtype=H.dtype, device=H.device).reshape(-1, 1)
    Phi = torch.stack([spectral_filter(mu, c, float(T)) * coeff for T in times], -1)   # (K, N, T)
    out = K_test @ (V @ Phi) if len(times) < K_test.shape[1] else (K_test @ V) @ Phi
    return out.permute(2, 0, 1)
