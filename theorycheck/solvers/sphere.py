r"""Minimization of smooth functions on entrywise l_p spheres, many problems side by side.

Problem j (a trial) is  min f_j(W)  subject to  ||W||_p = R_j  (entrywise norm of the block W_j,
p > 1).  The sphere is parametrized by W = R U/||U||_p, U != 0 free, and the sum over trials of
w_j f_j(W_j(U_j)) is minimized by L-BFGS (scipy) on U: the problems are separable, so one run
solves all of them, and the weights w_j act as a per-trial preconditioner (a problem whose
curvature in U is larger gets a smaller weight).  By the chain rule, with G = grad_W f_j,

    grad_U f_j = R_j [G/||U||_p - <G, U> grad psi(U)/||U||_p^(p+1)],   grad psi(U) = sign(U)|U|^(p-1).

Stationarity on the sphere is measured by the relative projected gradient

    ||G - <G, W> grad psi(W)/||W||_p^p||_F / ||G||_F,

zero exactly at a KKT point of the sphere-constrained problem (the normal of the sphere at W is
grad psi(W), and <grad psi(W), W> = ||W||_p^p).  L-BFGS finds a local minimizer; nothing here
certifies a global one for a nonconvex f.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from scipy import optimize

from theorycheck.errors import SolverAccuracyError, UsageError
from theorycheck.lineage import computation
from theorycheck.optim.mirror import lp_norm, mirror_map

__all__ = ["SphereMinimum", "lp_sphere_minimize", "sphere_projected_gradient"]


@dataclass(frozen=True)
class SphereMinimum:
    """Points W (J, ...) on the spheres, their values f_j(W_j) (J,), relative projected gradients
    (J,), the L-BFGS iterations used, and whether the stopping rule was met."""

    W: np.ndarray
    value: np.ndarray
    projected_gradient: np.ndarray
    iterations: int
    converged: bool


def sphere_projected_gradient(W: torch.Tensor, G: torch.Tensor, p: torch.Tensor) -> np.ndarray:
    r"""||G - <G, W> grad psi(W)/||W||_p^p||_F / ||G||_F per trial: the part of the gradient G
    (J, ...) tangent to the l_p sphere through W, relative to G (0 at a constrained KKT point)."""
    shape = (-1,) + (1,) * (W.dim() - 1)
    tangent = G - (G * W).flatten(1).sum(1).reshape(shape) * mirror_map(W, p) \
        / (lp_norm(W, p) ** p).reshape(shape)
    return (tangent.flatten(1).norm(dim=1) / G.flatten(1).norm(dim=1)).numpy()


def _check_inputs(R, p, W0):
    R, p, W0 = (np.asarray(a, dtype=np.float64) for a in (R, p, W0))
    J = W0.shape[0] if W0.ndim >= 2 else -1
    if W0.ndim < 2 or R.shape != (J,) or p.shape != (J,):
        raise UsageError(f"lp_sphere_minimize: need starts W0 (J, ...) with J >= 1 and radii R and exponents "
                         f"p of shape (J,); got W0 {W0.shape}, R {R.shape}, p {p.shape}")
    if not (np.all(np.isfinite(R)) and np.all(R > 0)):
        raise UsageError(f"lp_sphere_minimize: every radius must be finite and > 0, got {R}")
    if not (np.all(np.isfinite(p)) and np.all(p > 1)):
        raise UsageError(f"lp_sphere_minimize: every exponent p must be finite and > 1, got {p}")
    zero = ~np.any(W0.reshape(J, -1) != 0, axis=1)
    if not np.all(np.isfinite(W0)) or zero.any():
        raise UsageError(f"lp_sphere_minimize: every start must be finite and non-zero (trials "
                         f"{np.flatnonzero(zero | ~np.isfinite(W0.reshape(J, -1)).all(1)).tolist()} are not)")
    return R, p, W0


@computation('solver', inputs=('value_and_gradient', 'R', 'p', 'W0', 'weights'))
def lp_sphere_minimize(value_and_gradient: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
                       R, p, W0, *, weights=None, tol: float = 1e-6,
                       converged: Callable[[np.ndarray, np.ndarray], bool] | None = None,
                       max_iter: int = 2000, strict: bool = True) -> SphereMinimum:
    r"""Minimize f_j(W) over ||W_j||_p = R_j for every trial j at once (module docstring).

    ``value_and_gradient(W)`` takes W (J, ...) (float64 torch) and returns (f_j(W_j) (J,),
    grad_W f_j (J, ...)).  ``W0`` (J, ...): non-zero starts (only their directions matter);
    ``weights`` (J,): positive weights of the summed objective (default 1).  Stops after the first
    iteration at which ``converged(values (J,), relative projected gradients (J,))`` holds
    (default: every relative projected gradient <= ``tol``), or after ``max_iter`` iterations.
    Not meeting the rule raises `SolverAccuracyError` naming the worst trial when ``strict``;
    otherwise the result says ``converged=False`` and the caller decides.
    Bad shapes, radii <= 0, p <= 1 or zero / non-finite starts raise `UsageError`."""
    R, p, W0 = _check_inputs(R, p, W0)
    w = np.ones_like(R) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != R.shape or not np.all(w > 0):
        raise UsageError(f"lp_sphere_minimize: weights must be positive, of shape {R.shape}")
    rule = converged or (lambda values, projected: bool(projected.max() <= tol))
    shape, J = W0.shape, len(R)
    column = (J,) + (1,) * (W0.ndim - 1)
    Rt, pt, wt = torch.as_tensor(R), torch.as_tensor(p), torch.as_tensor(w)

    def evaluate(x):
        U = torch.as_tensor(x.reshape(shape))
        n = lp_norm(U, pt).reshape(column)
        W = Rt.reshape(column) * U / n
        value, G = value_and_gradient(W)
        return U, n, W, value, G

    last = {}

    def objective(x):
        U, n, W, value, G = evaluate(x)
        last.update(x=x.copy(), value=value, W=W, G=G)
        inner = (G * U).flatten(1).sum(1).reshape(column)
        grad = (wt * Rt).reshape(column) * (G / n - inner * mirror_map(U, pt)
                                             / n ** (pt.reshape(column) + 1))
        return float((wt * value).sum()), grad.numpy().ravel()

    state = {"met": False, "iterations": 0}

    def stop(intermediate_result):
        state["iterations"] += 1
        if not np.array_equal(last["x"], intermediate_result.x):     # not the last evaluation
            _, _, last["W"], last["value"], last["G"] = evaluate(intermediate_result.x)
        if rule(last["value"].numpy(), sphere_projected_gradient(last["W"], last["G"], pt)):
            state["met"] = True
            raise StopIteration

    U0 = W0 / lp_norm(torch.as_tensor(W0), pt).numpy().reshape(column)
    result = optimize.minimize(objective, U0.ravel(), jac=True, method="L-BFGS-B", callback=stop,
                               options=dict(maxiter=max_iter, gtol=1e-13, ftol=0.0))
    _, _, W, value, G = evaluate(result.x)
    projected = sphere_projected_gradient(W, G, pt)
    met = state["met"] or rule(value.numpy(), projected)
    if strict and not met:
        worst = int(np.argmax(projected))
        raise SolverAccuracyError(
            f"lp_sphere_minimize: the stopping rule was not met after {state['iterations']} L-BFGS "
            f"iterations (max_iter={max_iter}; scipy: {result.message}); worst relative projected "
            f"gradient {projected[worst]:.3g} at trial {worst}")
    return SphereMinimum(W=W.numpy(), value=value.numpy(), projected_gradient=projected,
                         iterations=state["iterations"], converged=bool(met))
