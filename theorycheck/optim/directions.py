r"""Directions of iterates against reference directions (e.g. a max-margin solution W_mm).

Directional convergence W_t/||W_t|| -> W_mm/||W_mm|| is measured by the alignment deficit
1 - al(W_t, W_mm) (Frobenius geometry: `direction_metrics` along a run, `certificate_bound`
for normalized steps) or, for l_p geometries, by the directional Bregman divergence
D_psi_p(W_mm/||W_mm||_p, W_t/||W_t||_p) of `theorycheck.optim.mirror` (`divergence_curves` and
`norms_along` over the checkpoints of many runs with one exponent p per run).
"""
from __future__ import annotations

import numpy as np
import torch

from theorycheck.errors import InvalidInputError
from theorycheck.optim.mirror import directional_bregman, lp_norm

__all__ = ["certificate_bound", "direction_metrics", "divergence_curves", "lp_unit", "norms_along", "unit"]


def unit(W: torch.Tensor) -> torch.Tensor:
    r"""Unit matrices: W/||W||_F for every matrix of a stack.

    Parameters
    ----------
    W : Tensor, shape (..., d, d')
        A stack of matrices (a zero matrix gives NaN).

    Returns
    -------
    Tensor, shape (..., d, d')
        Each matrix divided by its Frobenius norm.

    Raises
    ------
    InvalidInputError
        If W has fewer than two dimensions.
    """
    if W.dim() < 2:
        raise InvalidInputError(f"unit: need a stack of matrices (..., d, d'), got shape {tuple(W.shape)}")
    return W / W.flatten(-2).norm(dim=-1)[..., None, None]


def lp_unit(A: np.ndarray, p: float) -> np.ndarray:
    r"""Unit matrix in the entrywise l_p norm: A/||A||_p for one matrix.

    Parameters
    ----------
    A : ndarray, shape (d, d')
        A non-zero matrix.
    p : float
        The exponent (> 1), as in `theorycheck.optim.lp_norm`.

    Returns
    -------
    ndarray, shape (d, d')
        A divided by its entrywise l_p norm.

    Raises
    ------
    InvalidInputError
        If A is zero.
    """
    norm = float(lp_norm(torch.as_tensor(A)[None], p))
    if norm == 0:
        raise InvalidInputError("lp_unit: A is zero and has no direction")
    return A / norm


def _per_run(W, p, name):
    """W (C, J, ...) and the exponents p (J,) as tensors, or InvalidInputError."""
    W, p = np.asarray(W), np.asarray(p)
    if W.ndim < 3 or p.shape != W.shape[1:2]:
        raise InvalidInputError(f"{name}: need iterates W (C, J, ...) and one exponent per run p (J,), got W "
                                f"{W.shape} and p {p.shape}")
    return W, torch.as_tensor(p)


def norms_along(W: np.ndarray, p: np.ndarray) -> np.ndarray:
    r"""l_p norms along runs: ||W_{c,j}||_p (entrywise) with each run's own p_j.

    Parameters
    ----------
    W : ndarray, shape (C, J, ...)
        Iterates of J runs at C checkpoints.
    p : ndarray, shape (J,)
        The exponent of every run (> 1).

    Returns
    -------
    ndarray, shape (C, J)
        ||W_{c,j}||_{p_j}.

    Raises
    ------
    InvalidInputError
        If W is not (C, J, ...) with J = len(p).
    """
    W, pt = _per_run(W, p, "norms_along")
    return np.stack([lp_norm(torch.as_tensor(Wc), pt).numpy() for Wc in W])


def divergence_curves(W: np.ndarray, references: np.ndarray, p: np.ndarray) -> np.ndarray:
    r"""Directional divergences along runs: D_psi_p(R_j/||R_j||_p, W_{c,j}/||W_{c,j}||_p), each run's own p_j.

    D_psi_p(A, B) = 1 - <grad psi_p(B), A> for unit A, B (`theorycheck.optim.directional_bregman`),
    psi_p(W) = ||W||_p^p / p: 0 when W_{c,j} points along R_j, in [0, 2].

    Parameters
    ----------
    W : ndarray, shape (C, J, ...)
        Iterates of J runs at C checkpoints.
    references : ndarray, shape (J, ...)
        One reference R_j per run (e.g. its l_p-AttSVM solution).
    p : ndarray, shape (J,)
        The exponent of every run (> 1).

    Returns
    -------
    ndarray, shape (C, J)
        The divergence of every run at every checkpoint.

    Raises
    ------
    InvalidInputError
        If W is not (C, J, ...) with J = len(p) or references is not W.shape[1:].
    """
    W, pt = _per_run(W, p, "divergence_curves")
    if np.shape(references) != W.shape[1:]:
        raise InvalidInputError(f"divergence_curves: need one reference per run, shape {W.shape[1:]}, got "
                                f"{np.shape(references)}")
    refs = torch.as_tensor(references)
    return np.stack([directional_bregman(refs, torch.as_tensor(Wc), pt).numpy() for Wc in W])


def direction_metrics(W_ref: torch.Tensor) -> dict:
    r"""Per-step direction metrics: ||W_t||_F and al(W_t, W_ref) = <W_t, W_ref>/(||W_t||_F ||W_ref||_F).

    Measured in the run's coordinates (`theorycheck.optim.Iterate.norm` and ``alignment``),
    for `theorycheck.optim.run_trajectory`.

    Parameters
    ----------
    W_ref : Tensor, shape (K, ...)
        One reference of the block W per trial (pass the same object at every call: the model
        keeps its representer per tensor).

    Returns
    -------
    dict
        ``{"W_norm": metric, "W_alignment": metric}``, each ``metric(it) -> (K,)``.
    """
    return {"W_norm": lambda it: it.norm("W"), "W_alignment": lambda it: it.alignment("W", W_ref)}


def certificate_bound(norms: np.ndarray, align: np.ndarray, eta, t0: int) -> np.ndarray:
    r"""Alignment certificate: 1 - al(W_t, Wbar) <= B(t) = (||W_t0|| - <W_t0, Wbar> + sum_{s=t0}^{t-1} eta_s^2/(2||W_s||))/||W_t||.

    B(t), t > t0, bounds the alignment deficit of normalized steps
    W_{s+1} = W_s - eta_s G_s/||G_s|| (NGD; Polyak with its displacement as eta_s); it is valid
    whenever <-grad L, W_s/||W_s||> <= <-grad L, Wbar> for all s >= t0 (the cone condition with
    eps = 0 of Vasudeva, Deora, Thrampoulidis 2024, whose NGD rate this bound makes executable),
    Wbar a unit reference.

    Parameters
    ----------
    norms : ndarray, shape (steps+1, K)
        ||W_t|| at every step t = 0..steps of K trials.
    align : ndarray, shape (steps+1, K)
        al(W_t, Wbar) at every step.
    eta : float or ndarray, shape (steps-t0, K)
        The step length: a number (NGD), or the lengths eta_s of steps t0..steps-1.
    t0 : int
        The step from which the condition is assumed, 0 <= t0 < steps.

    Returns
    -------
    ndarray, shape (steps-t0, K)
        B(t) for t = t0+1..steps (rows), trials (columns).

    Raises
    ------
    InvalidInputError
        If norms and align differ in shape or t0 is out of range.
    """
    norms, align = np.asarray(norms), np.asarray(align)
    if norms.ndim != 2 or align.shape != norms.shape or not 0 <= t0 < len(norms) - 1:
        raise InvalidInputError(f"certificate_bound: need norms and align of one shape (steps+1, K) and "
                                f"0 <= t0 < steps, got {norms.shape}, {align.shape} and t0={t0}")
    head = norms[t0] * (1.0 - align[t0])
    increments = np.cumsum(eta**2 / (2.0 * norms[t0:-1]), axis=0)
    return (head + increments) / norms[t0 + 1:]
