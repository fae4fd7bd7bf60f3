"""The hard-margin SVM of linear classifiers, and the W-SVM and u-SVM of token-selection attention.

Hard-margin SVM (through the origin; the limit direction of gradient descent on separable
data, Soudry, Hoffer, Nacson, Gunasekar, Srebro 2018, arXiv 1710.10345)::

    w_svm = argmin_w ||w||_2   s.t.   y_i <w, x_i> >= 1   for all i,

the margin program of :mod:`theorycheck.solvers.margin` with ``a_i = y_i x_i``, ``b_i = 1``;
the max margin is ``1 / ||w_svm||``.  A bias is a constant feature: the SVM of ``(x_i, 1)``
is the limit of GD on ``<w, x> + b``.  The l_p version is
`theorycheck.solvers.lp_margin.solve_lp_hard_margin_svm`.

W-SVM (the max-margin program of Tarzanagh et al. 2023, as used by Vasudeva, Deora,
Thrampoulidis 2024, arXiv 2402.05738)::

    W_mm = argmin_W ||W||_F   s.t.   (x_{i,opt_i} - x_{i,t})^T W z_i >= 1   for all i, t != opt_i,

with query ``z_i = x_{i,0}`` (self-attention; another query array gives cross-attention).  It
is the margin program of :mod:`theorycheck.solvers.margin` with ``a_k = x_{i,opt_i} - x_{i,t}``
and ``b_k = z_i`` for ``k = (i, t)``, ``m = n(T-1)`` constraints.

u-SVM (Vasudeva, Deora, Thrampoulidis 2024)::

    u_mm = argmin_u ||u||_2   s.t.   y_i u^T z_i >= 1   for all i,

the hard-margin SVM of the optimal tokens ``z_i = x_{i,opt_i}``: `solve_usvm` is
`solve_hard_margin_svm` under the paper's name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorycheck.solvers.margin import MarginCertificate, MarginSolution, solve_margin_program
from theorycheck.errors import InvalidInputError
from theorycheck.lineage import computation

__all__ = ["HardMarginSVMSolution", "USVMSolution", "solve_hard_margin_svm", "solve_hard_margin_svm_batch",
           "solve_usvm", "solve_usvm_batch", "solve_wsvm", "solve_wsvm_batch",
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
class HardMarginSVMSolution:
    """Certified hard-margin SVM solution: ``w (d,)``, one multiplier per sample, and the
    certificate."""

    w: np.ndarray
    multipliers: np.ndarray
    certificate: MarginCertificate

    @property
    def u(self) -> np.ndarray:
        """``w`` under the u-SVM's name (the decoder ``u_mm``)."""
        return self.w

    @property
    def margin(self) -> float:
        """The max margin ``1 / ||w_svm||``."""
        return 1.0 / float(np.linalg.norm(self.w))


#: the u-SVM's solution is the hard-margin SVM's
USVMSolution = HardMarginSVMSolution


@computation('solver', inputs=('X', 'y'))
def solve_hard_margin_svm(
    X: np.ndarray,
    y: np.ndarray,
    *,
    method: str = "primal",
    name: str = "unnamed",
    trial: int | None = None,
    program: str = "hard-margin SVM",
) -> HardMarginSVMSolution:
    """Certified hard-margin SVM ``min ||w|| s.t. y_i <w, x_i> >= 1`` for ``X (n, d)``, ``y (n,)``
    in {-1, +1} (through the origin; a bias is a constant column of ``X``).

    ``method``: ``"primal"`` or ``"dual"`` (kernel ``K_{ij} = y_i y_j <x_i, x_j>``,
    ``w = sum_i lambda_i y_i x_i``).  Raises ``InfeasibleProgramError`` naming ``program``,
    ``name`` and ``trial`` when the labels are not linearly separable through the origin.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != X.shape[:1]:
        raise InvalidInputError(f"{program}: need X (n, d) and y (n,), got {X.shape} and {y.shape}")
    solution = solve_margin_program(
        y[:, None] * X,
        np.ones((len(y), 1)),
        np.arange(len(y))[:, None],
        method=method,
        program=program,
        where=_where(name, trial),
    )
    return HardMarginSVMSolution(solution.W[:, 0], solution.multipliers, solution.certificate)


@computation('solver', inputs=('Z', 'y'))
def solve_usvm(Z: np.ndarray, y: np.ndarray, *, method: str = "primal", name: str = "unnamed",
               trial: int | None = None) -> HardMarginSVMSolution:
    """The u-SVM ``min ||u|| s.t. y_i u^T z_i >= 1`` of the tokens ``Z (n, d)``: `solve_hard_margin_svm`
    (the solution's ``u`` is its ``w``), named "u-SVM" in error messages."""
    return solve_hard_margin_svm(Z, y, method=method, name=name, trial=trial, program="u-SVM")


@computation('solver', inputs=('X', 'y'))
def solve_hard_margin_svm_batch(X: np.ndarray, y: np.ndarray, *, method: str = "primal",
                                name: str = "unnamed", program: str = "hard-margin SVM") -> np.ndarray:
    """``w_svm`` of every trial of ``X (K, n, d)``, labels ``y (K, n)``, stacked ``(K, d)``;
    ``name`` names the data set in error messages (with the trial's index)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if X.ndim != 3 or y.shape != X.shape[:2]:
        raise InvalidInputError(f"{program}: need X (K, n, d) and y (K, n), got {X.shape} and {y.shape}")
    return np.stack([solve_hard_margin_svm(X[k], y[k], method=method, name=name, trial=k, program=program).w
                     for k in range(len(X))])


@computation('solver', inputs=('X', 'y', 'opt'))
def solve_usvm_batch(
    X: np.ndarray, y: np.ndarray, opt: np.ndarray, *, method: str = "primal", name: str = "unnamed"
) -> np.ndarray:
    """``u_mm`` of every trial of ``X (K, n, T, d)``, labels ``y (K, n)``, on its tokens
    ``x_{i,opt_i}`` (``opt (K, n)``), stacked ``(K, d)``: `solve_hard_margin_svm_batch` of those
    tokens; ``name`` names the data set in error messages (with the trial's index)."""
    X, y, opt = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), np.asarray(opt)
    _check_batch(X, opt, y)
    Z = np.take_along_axis(X, opt[:, :, None, None], axis=2)[:, :, 0]
    return solve_hard_margin_svm_batch(Z, y, method=method, name=name, program="u-SVM")


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
