"""The W-SVM and u-SVM references of token-selection attention.

W-SVM (the max-margin program of Tarzanagh et al. 2023, as used by Vasudeva, Deora,
Thrampoulidis 2024, arXiv 2402.05738)::

    W_mm = argmin_W ||W||_F   s.t.   (x_{i,opt_i} - x_{i,t})^T W z_i >= 1   for all i, t != opt_i,

with query ``z_i = x_{i,0}`` (self-attention; another query array gives cross-attention).  It
is the margin program of :mod:`theorycheck.solvers.margin` with ``a_k = x_{i,opt_i} - x_{i,t}``
and ``b_k = z_i`` for ``k = (i, t)``, ``m = n(T-1)`` constraints.

u-SVM (Vasudeva, Deora, Thrampoulidis 2024)::

    u_mm = argmin_u ||u||_2   s.t.   y_i u^T z_i >= 1   for all i,

on the optimal tokens ``z_i = x_{i,opt_i}``; the margin program with ``a_i = y_i z_i``, ``b_i = 1``
(``W = u`` as a ``d x 1`` matrix).  The max margin is ``1 / ||u_mm||``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorycheck.solvers.margin import MarginCertificate, MarginSolution, solve_margin_program
from theorycheck.errors import InvalidInputError
from theorycheck.lineage import computation

__all__ = ["USVMSolution", "solve_usvm", "solve_usvm_batch", "solve_wsvm", "solve_wsvm_batch",
           "wsvm_constraint_factors", "wsvm_orthonormal_closed_form"]


def _where(name: str, trial: int | None) -> str:
    return f"data set {name!r}" + ("" if trial is None else f" trial {trial}")


def wsvm_constraint_factors(X: np.ndarray, opt: np.ndarray, queries: np.ndarray | None = None):
    """Factors of the W-SVM constraints ``F_{(i,t)} = (x_{i,opt_i} - x_{i,t}) z_i^T``.

    Returns ``A (m, d)`` with rows ``x_{i,opt_i} - x_{i,t}``, ``B (m, d)`` with rows ``z_i``
    (``x_{i,0}`` unless ``queries (n, d)`` is given) and ``index (m, 2)`` with rows ``(i, t)``,
    ordered by ``i`` then ``t``, ``t != opt_i``.
    """
    X = np.asarray(X, dtype=np.float64)
    opt = np.asarray(opt)
    if X.ndim != 3 or opt.shape != X.shape[:1]:
        raise InvalidInputError(f"need X of shape (n, T, d) and opt of shape (n,), got {X.shape} and {opt.shape}")
    n, T, d = X.shape
    if opt.dtype.kind not in "iu":
        raise InvalidInputError(f"opt must hold integer token indices, got dtype {opt.dtype}")
    if T < 2 or opt.min() < 0 or opt.max() >= T:
        raise InvalidInputError(f"need T >= 2 and 0 <= opt < T={T}")
    if queries is None:
        queries = X[:, 0]
    else:
        queries = np.asarray(queries, dtype=np.float64)
        if queries.shape != (n, d):
            raise InvalidInputError(f"queries must be one query per sample, shape (n, d) = ({n}, {d}), "
                                    f"got {queries.shape}")
    index = np.argwhere(np.arange(T) != opt[:, None])
    samples, tokens = index.T
    return X[samples, opt[samples]] - X[samples, tokens], queries[samples], index


@computation('solver', inputs=('X', 'opt', 'queries'))
def solve_wsvm(
    X: np.ndarray,
    opt: np.ndarray,
    *,
    method: str = "dual",
    queries: np.ndarray | None = None,
    name: str = "unnamed",
    trial: int | None = None,
) -> MarginSolution:
    """Certified W-SVM solution for one instance ``X (n, T, d)``, ``opt (n,)``.

    ``solution.W`` is ``W_mm``; ``solution.multipliers[k]`` belongs to the constraint
    ``solution.constraint_index[k] = (i, t)``.  ``method`` is ``"dual"`` (Gram kernel, any
    ``d``) or ``"primal"`` (``d^2`` variables, small ``d``).  Raises
    ``InfeasibleProgramError`` / ``SolverAccuracyError`` naming ``name`` and ``trial``.
    """
    A, B, index = wsvm_constraint_factors(X, opt, queries)
    return solve_margin_program(A, B, index, method=method, program="W-SVM", where=_where(name, trial))


def _check_batch(X: np.ndarray, opt: np.ndarray, y: np.ndarray | None = None) -> None:
    if X.ndim != 4 or opt.shape != X.shape[:2] or (y is not None and y.shape != X.shape[:2]):
        shapes = f"X {X.shape}, opt {opt.shape}" + ("" if y is None else f", y {y.shape}")
        raise InvalidInputError(f"need X (K, n, T, d) and opt{'' if y is None else ', y'} (K, n), got {shapes}")


@computation('solver', inputs=('X', 'opt'))
def solve_wsvm_batch(
    X: np.ndarray, opt: np.ndarray, *, method: str = "dual", name: str = "unnamed"
) -> np.ndarray:
    """``W_mm`` of every trial of ``X (K, n, T, d)`` with optimal tokens ``opt (K, n)``, stacked
    ``(K, d, d)``; ``name`` names the data set in error messages (with the trial's index).

    Certificates are available per trial from :func:`solve_wsvm` (cached, so free afterwards).
    """
    X, opt = np.asarray(X, dtype=np.float64), np.asarray(opt)
    _check_batch(X, opt)
    return np.stack([solve_wsvm(X[k], opt[k], method=method, name=name, trial=k).W for k in range(len(X))])


@dataclass(frozen=True)
class USVMSolution:
    """Certified u-SVM solution: ``u (d,)``, one multiplier per sample, and the certificate."""

    u: np.ndarray
    multipliers: np.ndarray
    certificate: MarginCertificate

    @property
    def margin(self) -> float:
        """The max margin ``1 / ||u_mm||``."""
        return 1.0 / float(np.linalg.norm(self.u))


@computation('solver', inputs=('Z', 'y'))
def solve_usvm(
    Z: np.ndarray,
    y: np.ndarray,
    *,
    method: str = "primal",
    name: str = "unnamed",
    trial: int | None = None,
) -> USVMSolution:
    """Certified u-SVM ``min ||u|| s.t. y_i u^T z_i >= 1`` for ``Z (n, d)``, ``y (n,)`` in {-1, +1}.

    ``method``: ``"primal"`` or ``"dual"`` (kernel ``K_{ij} = y_i y_j <z_i, z_j>``,
    ``u = sum_i lambda_i y_i z_i``).  Raises ``InfeasibleProgramError`` when the labels are not
    linearly separable through the origin.
    """
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    solution = solve_margin_program(
        y[:, None] * Z,
        np.ones((len(y), 1)),
        np.arange(len(y))[:, None],
        method=method,
        program="u-SVM",
        where=_where(name, trial),
    )
    return USVMSolution(solution.W[:, 0], solution.multipliers, solution.certificate)


@computation('solver', inputs=('X', 'y', 'opt'))
def solve_usvm_batch(
    X: np.ndarray, y: np.ndarray, opt: np.ndarray, *, method: str = "primal", name: str = "unnamed"
) -> np.ndarray:
    """``u_mm`` of every trial of ``X (K, n, T, d)``, labels ``y (K, n)``, on its tokens
    ``x_{i,opt_i}`` (``opt (K, n)``), stacked ``(K, d)``; ``name`` names the data set in error
    messages (with the trial's index)."""
    X, y, opt = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), np.asarray(opt)
    _check_batch(X, opt, y)
    Z = np.take_along_axis(X, opt[:, :, None, None], axis=2)[:, :, 0]
    return np.stack([solve_usvm(Z[k], y[k], method=method, name=name, trial=k).u for k in range(len(X))])


def wsvm_orthonormal_closed_form(X: np.ndarray, opt: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """``W_mm`` in closed form when all ``nT`` tokens are orthogonal with a common norm ``r``.

        W_mm = r^{-4} sum_i (x_{i,opt_i} - (1/T) sum_t x_{i,t}) x_{i,0}^T,
        ||W_mm||_F^2 = n (T-1) / (T r^4).

    Derivation: with orthogonal tokens the kernel is block diagonal, one block
    ``r^4 (I + 11^T)`` of size ``T-1`` per sample, so all constraints are active with
    ``lambda_{i,t} = 1 / (T r^4) > 0``, which satisfies every KKT condition.  Raises
    ``ValueError`` unless the token Gram matrix is ``r^2 I`` to within ``tol r^2``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, T, d = X.shape
    tokens = X.reshape(n * T, d)
    gram = tokens @ tokens.T
    r2 = float(np.mean(np.diag(gram)))
    if np.max(np.abs(gram - r2 * np.eye(n * T))) > tol * r2:
        raise InvalidInputError("the closed form needs orthogonal tokens of equal norm")
    centred = X[np.arange(n), opt] - X.mean(axis=1)
    return centred.T @ X[:, 0] / r2**2
