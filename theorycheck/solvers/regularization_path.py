r"""The regularization path of a loss over entrywise l_p balls, many problems side by side.

Problem j (a trial) is the regularized problem

    W_{R_j} = argmin_{||W||_p <= R_j} L_j(W)      (entrywise l_p norm, p > 1),

whose solutions along a sequence of radii R form the regularization path (Tarzanagh et al.
2023 for the W-SVM; Julistiono, Tarzanagh, Azizan 2024 for l_p).  For a loss without a finite
minimizer (separable data, an exponential-tailed loss) the minimum over the ball lies on its
sphere ||W||_p = R_j, so the path is computed on the spheres by `lp_sphere_minimize`, on the
objective log(L_j(W) - L_j*) (the model's exact ``log_excess_loss``), whose gradient
grad L/(L - L*) stays representable deep in saturation.  Each problem is solved from several
starts and the start with the lower objective is kept: nothing certifies a global minimizer of
a nonconvex L.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from theorycheck.errors import InvalidInputError
from theorycheck.lineage import computation
from theorycheck.models.base import Model
from theorycheck.solvers.sphere import lp_sphere_minimize

__all__ = ["RegularizationPath", "lp_regularization_path"]


@dataclass(frozen=True)
class RegularizationPath:
    """Kept path points: W_j on ||W||_p = R_j (J, ...), log(L_j(W_j) - L_j*) (J,), the relative
    projected gradient on the sphere (J,), and the index of the start each came from (J,)."""

    W: np.ndarray
    log_excess: np.ndarray
    projected_gradient: np.ndarray
    start: np.ndarray


def _kept_starts(values: np.ndarray, S: int) -> np.ndarray:
    """Index (J,) of the start with the lowest of ``values`` (S J,) per problem (the first on ties)."""
    values = values.reshape(S, -1)
    pick = np.zeros(values.shape[1], dtype=int)
    for s in range(1, S):
        pick = np.where(values[pick, np.arange(values.shape[1])] <= values[s], pick, s)
    return pick


def _check(model, R, p, starts):
    R, p = np.asarray(R, dtype=np.float64), np.asarray(p, dtype=np.float64)
    shapes = {np.shape(W0) for W0 in starts}
    if not starts or len(shapes) != 1 or R.shape != p.shape or R.shape != next(iter(shapes))[:1] \
            or model.trial_count() != len(R):
        raise InvalidInputError(f"lp_regularization_path: need one radius and one exponent per problem (J,), a "
                                f"model of J trials and starts of one shape (J, ...); got R {R.shape}, p "
                                f"{p.shape}, {model.trial_count()} trials and starts {sorted(shapes)}")
    return R, p


@computation('solver', inputs=('model', 'R', 'p', 'starts'))
def lp_regularization_path(model: Model, R, p, starts, *, tol: float, max_iter: int = 2000) -> RegularizationPath:
    r"""Regularization path over l_p balls: W_{R_j} = argmin_{||W||_p <= R_j} L_j(W), on the sphere ||W||_p = R_j.

    All problems and starts run as one L-BFGS problem (`lp_sphere_minimize`) on
    log(L_j(W) - L_j*), trial weights 1/R_j (near the path log(L - L*) is about linear in R, so
    its curvature in the sphere's coordinates grows like R), stopping once the kept point of
    every problem (the start with the lower objective) has relative projected gradient
    <= ``tol``, or after ``max_iter`` iterations without an error: the caller checks
    ``projected_gradient``.

    Parameters
    ----------
    model : Model
        J trials with the one block "W" and an exact ``log_excess_loss`` (e.g.
        `theorycheck.models.TokenSelection` with a fixed decoder); trial j is problem j.  Its
        values are computed on the model's device and dtype.
    R : array_like, shape (J,)
        The radius of every problem (> 0); a path is J problems with one trial's data at
        several radii.
    p : array_like, shape (J,)
        The exponent of every problem (> 1).
    starts : sequence of ndarray, each shape (J, ...)
        S >= 1 non-zero starts per problem (only their directions matter).
    tol : float
        The stopping threshold of the kept points' relative projected gradients.
    max_iter : int, optional
        The L-BFGS iteration limit (default 2000).

    Returns
    -------
    RegularizationPath
        The kept point of every problem: ``W`` (J, ...), ``log_excess`` log(L - L*),
        ``projected_gradient`` and ``start`` (which start won; the first on ties).

    Raises
    ------
    InvalidInputError
        If R, p, the starts and the model's trials do not all count J problems.
    UsageError
        From `lp_sphere_minimize`: radii <= 0, p <= 1, zero or non-finite starts.
    """
    R, p = _check(model, R, p, starts)
    S, like = len(starts), model.data_tensor()
    tiled = model.tiled(S)

    def kept_converged(value, projected):
        pick = _kept_starts(value, S)
        return projected.reshape(S, -1)[pick, np.arange(len(pick))].max() <= tol

    def log_excess_and_gradient(W):
        W = W.to(device=like.device, dtype=like.dtype)
        value = tiled.log_excess_loss({"W": W})
        g = tiled.scaled_gradient({"W": W})["W"]
        scale = torch.exp(g.log_scale - value).reshape((-1,) + (1,) * (g.direction.dim() - 1))
        return value.to("cpu", torch.float64), (scale * g.direction).to("cpu", torch.float64)

    R_all, p_all = np.tile(R, S), np.tile(p, S)
    found = lp_sphere_minimize(log_excess_and_gradient, R_all, p_all, np.concatenate(list(starts)),
                               weights=1 / R_all, converged=kept_converged, max_iter=max_iter, strict=False)
    pick = _kept_starts(found.value, S)
    flat = pick * len(R) + np.arange(len(R))
    return RegularizationPath(W=found.W[flat], log_excess=found.value[flat],
                              projected_gradient=found.projected_gradient[flat], start=pick)
