r"""Hard-margin programs with an entrywise l_p-norm objective, solved with cvxpy and certified.

The program (the l_p generalization of :mod:`theorycheck.solvers.margin`; the attention
instance is the l_p-AttSVM of Julistiono, Tarzanagh, Azizan 2024, arXiv 2410.14581)::

    minimize ||W||_p  (entrywise, 1 < p < inf)   s.t.   <F_k, W> = a_k^T W b_k >= 1,   k = 1..m.

With q = p/(p-1) and S(lambda) = sum_k lambda_k F_k, its Lagrange dual is

    maximize sum_k lambda_k   s.t.   lambda >= 0,  ||S(lambda)||_q <= 1,

and the KKT conditions of an optimal pair (W, lambda) are feasibility, lambda >= 0,
complementary slackness lambda_k (<F_k, W> - 1) = 0 and stationarity
grad psi(W/||W||_p) = S(lambda), grad psi(V) = sign(V)|V|^(p-1) (so ||S||_q = 1 and
sum lambda = ||W||_p).  Equivalently W/||W||_p = (grad psi)^-1(S(lambda)).  A candidate is judged
by :class:`LpMarginCertificate`, never by the solver's status:

* ``min_constraint`` = min_k <F_k, W>  (>= 1 - tol);
* ``min_multiplier`` = min_k lambda_k / ||W||_p  (>= -tol);
* ``complementary_slackness`` = max_k |lambda_k (<F_k, W> - 1)| / ||W||_p;
* ``stationarity``: for p >= 2 the primal form ||grad psi(W/||W||_p) - S/||S||_q||_q, for p < 2
  the dual form ||W/||W||_p - (grad psi)^-1(S/||S||_q)||_p -- each side is ill-conditioned on
  the other (|V|^(p-1) amplifies tiny entries when p < 2, |S|^(1/(p-1)) when p > 2);
* ``duality_gap`` = |||W||_p - sum lambda / ||S||_q| / ||W||_p: lambda/||S||_q is dual feasible, so
  this bounds the relative suboptimality of W (weak duality) and vanishes at the optimum.

CLARABEL's answer is 1e-8 to 1e-6 (relative) away from the KKT point for p != 2; it is
*polished* by projected Newton on the dual of min psi(W): with mu = lambda ||W||_p^(p-1) (the
multipliers of min psi(W)) and W(mu) = (grad psi)^-1(sum_k mu_k F_k), minimize
f(mu) = ||sum_k mu_k F_k||_q^q / q - sum_k mu_k over mu >= 0 (gradient <F_k, W(mu)> - 1), the free
set corrected as multipliers reach 0 or constraints are violated (`_polish`).  The polished pair replaces the solver's when its
certificate is better.

Infeasibility (Farkas): the program is infeasible iff 0 lies in the convex hull of the F_k
(independent of the norm), which :func:`theorycheck.solvers.margin.hull_distance` measures.
"""
from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import torch

from theorycheck.errors import InfeasibleProgramError, InvalidInputError, SolverAccuracyError
from theorycheck.lineage import computation
from theorycheck.optim.mirror import inverse_mirror_map, lp_norm, mirror_map
from theorycheck.solvers.margin import (
    INFEASIBILITY_TOL,
    SOLVER,
    MarginCertificate,
    SOLVER_OPTIONS,
    combine_constraints,
    constraint_values,
    hull_distance,
)
from theorycheck.solvers.svm import wsvm_constraint_factors

__all__ = ["LpMarginCertificate", "LpMarginSolution", "lp_certify", "solve_lp_margin_program",
           "solve_lp_hard_margin_svm", "solve_lp_wsvm", "solve_lp_usvm"]

CACHE_SIZE = 512
"""Most solutions kept in memory (the oldest is dropped first); keyed by a hash of A, B and p."""
ACTIVE_TOL = 1e-7
"""A constraint is active for polishing when lambda_k > ACTIVE_TOL * max lambda."""


def _np(fn, A, p):
    """A torch function of :mod:`theorycheck.optim.mirror` applied to one numpy matrix."""
    out = fn(torch.as_tensor(np.array(A, dtype=np.float64))[None], p)[0]
    return out.numpy() if out.dim() else float(out)


def lp(A, p) -> float:
    """Entrywise ||A||_p of one numpy array."""
    return _np(lp_norm, A, p)


@dataclass(frozen=True)
class LpMarginCertificate(MarginCertificate):
    """KKT residuals of a candidate ``(W, lambda)`` for the l_p program (module docstring): the
    entries of :class:`MarginCertificate` in the l_p geometry, for exponent ``p``."""

    p: float = 2.0


@dataclass(frozen=True)
class LpMarginSolution:
    """Certified solution ``W``, multipliers ``lambda`` (norm form, sum = ||W||_p; constraint k
    labelled by ``constraint_index[k]``) and the certificate."""

    W: np.ndarray
    multipliers: np.ndarray
    constraint_index: np.ndarray
    certificate: LpMarginCertificate
    p: float

    @property
    def norm(self) -> float:
        """``||W||_p``, the inverse of the l_p margin."""
        return lp(self.W, self.p)


def lp_certify(A, B, W, lam, p: float, status: str = "candidate") -> LpMarginCertificate:
    """The KKT residuals of ``(W, lambda)`` (see the module docstring)."""
    q = p / (p - 1)
    values = constraint_values(A, B, W)
    norm = max(lp(W, p), np.finfo(float).tiny)
    S = combine_constraints(A, B, lam)
    s_norm = lp(S, q)
    s_unit = S / s_norm if s_norm > 0 else S
    W_unit = W / norm
    if p >= 2:
        stationarity = lp(_np(mirror_map, W_unit, p) - s_unit, q)
    else:
        stationarity = lp(W_unit - _np(inverse_mirror_map, s_unit, p), p)
    dual = float(lam.sum()) / s_norm if s_norm > 0 else 0.0
    return LpMarginCertificate(
        p=float(p),
        min_constraint=float(values.min()),
        min_multiplier=float(lam.min()) / norm,
        complementary_slackness=float(np.max(np.abs(lam * (values - 1)))) / norm,
        stationarity=float(stationarity),
        duality_gap=abs(norm - dual) / norm,
        solver="CLARABEL",
        status=status,
    )


def _solve_conic(A, B, p):
    """cvxpy: ``min ||vec W||_p`` s.t. ``sum_j (A W)_{kj} B_{kj} >= 1``; (W, lambda, status).

    CLARABEL with tolerances 1e-10 first; if it fails outright (it does on rare instances at
    p = 1.1), once more with its default tolerances: the polish and the certificate decide."""
    W = cp.Variable((A.shape[1], B.shape[1]))
    margins = cp.sum(cp.multiply(A @ W, B), axis=1) >= 1
    problem = cp.Problem(cp.Minimize(cp.pnorm(cp.vec(W, order="F"), p)), [margins])
    status = "not solved"
    for options in (SOLVER_OPTIONS, {}):
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=SOLVER, **options)
            status = problem.status
        except cp.error.SolverError as error:
            status = f"solver error: {error}"
            continue
        if W.value is not None and margins.dual_value is not None:
            return W.value, np.asarray(margins.dual_value, dtype=float).reshape(-1), status
    return None, None, status


def _dual_value(A, B, mu, p):
    """The dual function of min psi(W) s.t. <F_k, W> >= 1, as a minimization over mu >= 0:
    f(mu) = ||sum_k mu_k F_k||_q^q / q - sum_k mu_k (q = p/(p-1)); convex, gradient
    <F_k, W(mu)> - 1, Hessian the Jacobian J of the module docstring."""
    q = p / (p - 1)
    return lp(combine_constraints(A, B, mu), q) ** q / q - float(mu.sum())


def _newton_step(A, B, mu, active, p):
    """Newton direction of f on the free set ``active`` and f's gradient (all constraints)."""
    theta = combine_constraints(A, B, mu)
    gradient = constraint_values(A, B, _np(inverse_mirror_map, theta, p)) - 1
    # dW/dmu_j = (1/(p-1)) |theta|^((2-p)/(p-1)) * F_j, entrywise
    weight = np.abs(theta) ** ((2 - p) / (p - 1)) / (p - 1)
    F = A[active][:, :, None] * B[active][:, None, :]
    J = np.einsum("kab,ab,jab->kj", F, weight, F)
    step = np.zeros_like(mu)
    step[active] = -np.linalg.solve(J, gradient[active])
    return step, gradient


POLISH_ROUNDOFF = 16 * np.finfo(float).eps
"""The polish stops at a Newton step below POLISH_ROUNDOFF max|mu| with no constraint outside the
free set violated by more than POLISH_ROUNDOFF (<F_k, W(mu)> >= 1 - POLISH_ROUNDOFF): once Newton
has converged (quadratically, from the solver's multipliers) its further steps move mu by
round-off only, so more iterations change nothing but the last bits; a polish whose steps never
fall below it runs its ``iterations``."""


def _polish(A, B, W, lam, p, iterations=60):
    """Projected Newton on the dual function f(mu) over mu >= 0 (`_dual_value`), started from the
    solver's multipliers: Newton steps on the free set (constraints with mu > 0) with backtracking
    on f (up to f's rounding: near the optimum f changes by ~ residual^2, below it) and projection onto mu >= 0; a multiplier driven to 0 leaves the free set, and a
    violated constraint (negative gradient <F_k, W(mu)> - 1 < 0 at mu_k = 0) joins it, so a
    wrongly guessed active set (a weakly active constraint, a multiplier CLARABEL left at 1e-7) is
    corrected.  Stops once a Newton step is round-off (`POLISH_ROUNDOFF`).  Returns (W, lambda)
    with lambda in the norm form."""
    mu = np.where(lam > ACTIVE_TOL * lam.max(), lam, 0.0) * lp(W, p) ** (p - 1)
    value = _dual_value(A, B, mu, p)
    for _ in range(iterations):
        active = mu > 0
        try:
            step, gradient = _newton_step(A, B, mu, active, p)
        except np.linalg.LinAlgError:
            break
        joining = ~active & (gradient < 0)
        if joining.any() and np.abs(gradient[active]).max(initial=0.0) < -gradient[joining].min():
            active[np.argmin(np.where(joining, gradient, np.inf))] = True
            step, gradient = _newton_step(A, B, mu, active, p)
        left_out = gradient[~active].min(initial=0.0)            # the most violated constraint outside the set
        if np.abs(step).max() <= POLISH_ROUNDOFF * np.abs(mu).max() and left_out >= -POLISH_ROUNDOFF:
            break
        for t in 0.5 ** np.arange(30):
            trial = np.maximum(mu + t * step, 0.0)
            trial_value = _dual_value(A, B, trial, p)
            if trial_value <= value + 4 * np.finfo(float).eps * abs(value):   # f's resolution
                break
        else:
            break
        if np.array_equal(trial, mu):
            break
        mu, value = trial, trial_value
    Wm = _np(inverse_mirror_map, combine_constraints(A, B, mu), p)
    return Wm, mu / lp(Wm, p) ** (p - 1)


@computation('solver', inputs=('A', 'B', 'index', 'p'))
def solve_lp_margin_program(A, B, index, p: float, *, program="l_p margin program",
                            where="an unnamed instance") -> LpMarginSolution:
    """Certified solution of ``min ||W||_p s.t. a_k^T W b_k >= 1`` (module docstring).

    ``A (m, r)`` and ``B (m, c)`` hold the factors of the constraint matrices, ``index`` labels
    them in messages.  Raises ``ValueError`` for p outside (1, inf) or malformed arrays,
    :class:`InfeasibleProgramError` (with a Farkas combination) or :class:`SolverAccuracyError`.
    Solutions are cached in-process (at most ``CACHE_SIZE``; arrays read-only).
    """
    if not (np.isfinite(p) and p > 1):
        raise InvalidInputError(f"{program}: need 1 < p < inf, got p = {p}")
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[0] or A.shape[0] == 0:
        raise InvalidInputError(f"{program}: need A (m, r) and B (m, c) with m >= 1, got {A.shape}, {B.shape}")
    key = _cache_key(A, B, p)
    if key in _CACHE:
        W, lam, certificate = _CACHE[key]
        return LpMarginSolution(W=W, multipliers=lam, constraint_index=np.asarray(index),
                                certificate=certificate, p=float(p))
    W, lam, status = _solve_conic(A, B, p)
    if W is None:
        raise _failure(A, B, index, program, where, f"no solution, status {status!r}")
    certificate = lp_certify(A, B, W, lam, p, status)
    if lam.max() > 0:
        W2, lam2 = _polish(A, B, W, lam, p)
        polished = lp_certify(A, B, W2, lam2, p, status + " (polished)")
        if np.isfinite(polished.worst()) and polished.worst() < certificate.worst():
            W, lam, certificate = W2, lam2, polished
    if not certificate.ok:
        raise _failure(A, B, index, program, where,
                       f"status {status!r}: " + "; ".join(certificate.failures()))
    for array in (W, lam):
        array.flags.writeable = False
    if len(_CACHE) >= CACHE_SIZE:
        del _CACHE[next(iter(_CACHE))]
    _CACHE[key] = (W, lam, certificate)
    return LpMarginSolution(W=W, multipliers=lam, constraint_index=np.asarray(index),
                            certificate=certificate, p=float(p))


_CACHE: dict = {}


def _cache_key(A, B, p) -> tuple:
    digest = hashlib.blake2b(A.tobytes(), digest_size=32)
    digest.update(B.tobytes())
    return (float(p), A.shape, B.shape, digest.hexdigest())


def _failure(A, B, index, program, where, reason) -> Exception:
    distance, v = hull_distance(A, B)
    scale = float(np.sqrt(np.max(np.sum(A * A, 1) * np.sum(B * B, 1))))
    if distance <= INFEASIBILITY_TOL * scale:
        support = [tuple(int(j) for j in np.atleast_1d(index[k])) for k in np.flatnonzero(v > 1e-6 * v.max())]
        return InfeasibleProgramError(
            f"{program} infeasible for {where}: 0 lies in the convex hull of the constraint matrices "
            f"(distance {distance:.2e}); a Farkas combination uses the constraints {support[:10]} "
            f"(0-based labels; {reason})")
    return SolverAccuracyError(f"{program} solve for {where} failed its certificate although the "
                               f"program is feasible (hull distance {distance:.3e}): {reason}")


@computation('solver', inputs=('X', 'opt', 'p', 'queries'))
def solve_lp_wsvm(X, opt, p: float, *, queries=None, name="unnamed", trial=None) -> LpMarginSolution:
    r"""Certified l_p W-SVM ``min ||W||_p s.t. (x_{i,opt_i} - x_{i,t})^T W z_i >= 1`` (t != opt_i)
    for one instance ``X (n, T, d)``, designated tokens ``opt (n,)``, queries ``z_i = x_{i,0}``
    unless ``queries (n, d)`` is given; constraint k is labelled ``(i, t)``."""
    A, B, index = wsvm_constraint_factors(X, opt, queries)
    where = f"data set {name!r}" + ("" if trial is None else f" trial {trial}")
    return solve_lp_margin_program(A, B, index, p, program=f"l_{p:g} W-SVM", where=where)


@computation('solver', inputs=('X', 'y', 'p'))
def solve_lp_hard_margin_svm(X, y, p: float, *, name="unnamed", trial=None,
                             program="hard-margin SVM") -> LpMarginSolution:
    r"""Certified l_p hard-margin SVM ``min ||w||_p s.t. y_i <w, x_i> >= 1`` of a linear classifier
    for ``X (n, d)``, ``y (n,)`` in {-1, +1} (the limit direction of l_p mirror descent on
    separable data); ``solution.W`` is ``w`` as a ``(d, 1)`` matrix, ``1 / solution.norm`` the l_p
    margin.  p = 2 is `theorycheck.solvers.svm.solve_hard_margin_svm`."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != X.shape[:1]:
        raise InvalidInputError(f"l_{p:g} {program}: need X (n, d) and y (n,), got {X.shape} and {y.shape}")
    where = f"data set {name!r}" + ("" if trial is None else f" trial {trial}")
    return solve_lp_margin_program(y[:, None] * X, np.ones((len(y), 1)), np.arange(len(y))[:, None],
                                   p, program=f"l_{p:g} {program}", where=where)


@computation('solver', inputs=('Z', 'y', 'p'))
def solve_lp_usvm(Z, y, p: float, *, name="unnamed", trial=None) -> LpMarginSolution:
    r"""Certified l_p u-SVM ``min ||u||_p s.t. y_i u^T z_i >= 1`` for the tokens ``Z (n, d)``:
    `solve_lp_hard_margin_svm` under the u-SVM's name; ``solution.W`` is ``u`` as a ``(d, 1)``
    matrix."""
    return solve_lp_hard_margin_svm(Z, y, p, name=name, trial=trial, program="u-SVM")
