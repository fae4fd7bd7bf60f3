r"""Monte Carlo estimates of a bias from independent group averages.

Given G independent group averages g_1..g_G of an estimator's error (each the mean over M
independent draws, so E g_j = b, the bias), the plain ||g_bar||^2 overestimates ||b||^2 by the
variance of g_bar.  Subtracting the per-coordinate sample variance across groups over G,

    ||b||^2_hat = ||g_bar||^2 - (1/G) sum_coords s^2_coord,

is unbiased for ||b||^2 (E||g_bar||^2 = ||b||^2 + tr Cov(g)/G, E s^2 = Var per coordinate).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorycheck.errors import DeclarationError

__all__ = ["SquaredBias", "debiased_squared_norm"]


@dataclass(frozen=True)
class SquaredBias:
    """``estimate`` of ||b||^2 (unbiased, may be negative when the bias is below the noise),
    ``noise`` the subtracted variance term tr Cov(g_bar), ``mean`` the group mean g_bar."""

    estimate: float
    noise: float
    mean: np.ndarray


def debiased_squared_norm(groups) -> SquaredBias:
    r"""The unbiased estimate of ||E g||^2 from group averages ``groups`` (G, ...), G >= 2."""
    g = np.asarray(groups, dtype=float).reshape(len(groups), -1)
    if g.shape[0] < 2:
        raise DeclarationError(f"debiased_squared_norm: {g.shape[0]} group(s); the variance "
                               "correction needs at least 2")
    mean = g.mean(0)
    noise = float(g.var(0, ddof=1).sum() / g.shape[0])
    return SquaredBias(float(mean @ mean) - noise, noise, mean.reshape(np.shape(groups)[1:]))
