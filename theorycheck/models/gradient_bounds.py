r"""Bounds on the W-gradient of the token-selection model under equal non-optimal scores.

With a fixed decoder and equal non-optimal scores (every gamma_{i,t}, t != o_i, equal; gap
Delta_i = gamma_{i,o} - gamma_{i,t}), the negative gradient has the closed form
(`closed_form_negative_grad_W`)

    -grad_W L = (1/n) sum_i c_i (x_{i,o} - xtilde_i) x_{i,1}^T,
    c_i = exp(-gbar_i) s_{i,o} (1 - s_{i,o}) Delta_i                 (`log_gradient_weights`),

a combination of the margin-constraint matrices (x_{i,o} - x_{i,t}) x_{i,1}^T.  For any W_ref
that satisfies every margin constraint (x_{i,o} - x_{i,t})^T W_ref x_{i,1} >= 1 -- the W-SVM
solution W_mm, say -- and R_i = ||x_{i,1}|| max_{t != o} ||x_{i,o} - x_{i,t}||
(`constraint_radii`) this gives

    (1/n) sum_i c_i <= <-grad L, W_ref>,
    (1/(n ||W_ref||)) sum_i c_i <= ||grad L|| <= (1/n) sum_i c_i R_i,
    <-grad L, W_ref/||W_ref||> / ||grad L|| >= kappa = 1/(||W_ref|| max_i R_i).

The ratios below are >= 1 (or <= 1) exactly when these hold; they are formed from the
scaled gradient exp(M) G in log space, so they stay exact where the gradient underflows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .base import FROBENIUS
from .token_selection import constraint_radii, log_gradient_weights, scaled_grad_W

__all__ = ["GradientBounds", "correlation_floor", "gradient_bounds"]


def correlation_floor(X, opt, W_ref):
    r"""kappa = 1/(||W_ref||_F max_i R_i) per trial, shape (K,)."""
    return 1.0 / (FROBENIUS.norm(W_ref) * constraint_radii(X, opt).amax(-1))


@dataclass
class GradientBounds:
    r"""Ratios that are >= 1 (or <= 1) exactly when the bounds of the module docstring hold.

    ``lower``   ||grad L|| ||W_ref|| / ((1/n) sum c_i)            >= 1
    ``upper``   ||grad L|| / ((1/n) sum c_i R_i)                  <= 1
    ``correlation`` <-grad L, W_ref> / ((1/n) sum c_i)            >= 1
    ``cosine``  <-grad L, W_ref> / (||grad L|| ||W_ref||)          >= kappa
    ``log10_mean_c`` log10((1/n) sum_i c_i), how far from stationary the point is.
    """

    lower: torch.Tensor
    upper: torch.Tensor
    correlation: torch.Tensor
    cosine: torch.Tensor
    log10_mean_c: torch.Tensor


def gradient_bounds(X, y, u, W, opt, W_ref) -> GradientBounds:
    """The ratios of `GradientBounds` at ``W`` (K,d,d) for designated tokens ``opt`` (K,n)."""
    M, G = scaled_grad_W(X, y, u, W)
    log_c = log_gradient_weights(X, y, u, W, opt)
    log_n = math.log(X.shape[1])
    log_mean_c = log_c.logsumexp(-1) - log_n
    log_mean_cR = (log_c + constraint_radii(X, opt).log()).logsumexp(-1) - log_n
    norm_G, ref_norm, corr_G = FROBENIUS.norm(G), FROBENIUS.norm(W_ref), FROBENIUS.inner(-G, W_ref)
    return GradientBounds(lower=norm_G * torch.exp(M - log_mean_c) * ref_norm,
                          upper=norm_G * torch.exp(M - log_mean_cR),
                          correlation=corr_G * torch.exp(M - log_mean_c),
                          cosine=corr_G / (norm_G * ref_norm),
                          log10_mean_c=log_mean_c / math.log(10.0))
