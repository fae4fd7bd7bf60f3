"""Hard-margin programs with rank-one constraint matrices, solved with cvxpy and certified.

The program (both the W-SVM and the u-SVM of :mod:`theorycheck.solvers.svm` are instances)::

    minimize  1/2 ||W||_F^2   over W in R^{p x q}
    s.t.      <F_k, W> = a_k^T W b_k >= 1,     F_k = a_k b_k^T,   k = 1..m.

Its Lagrange dual is ``max_{lambda >= 0} 1^T lambda - 1/2 lambda^T K lambda`` with the Gram
kernel ``K_{kl} = <F_k, F_l> = <a_k, a_l> <b_k, b_l>``, and the KKT conditions are

* feasibility ``<F_k, W> >= 1`` and ``lambda >= 0``;
* stationarity ``W = sum_k lambda_k F_k``;
* complementary slackness ``lambda_k (<F_k, W> - 1) = 0``;

so the duality gap ``1/2 ||W||^2 - (1^T lambda - 1/2 ||sum_k lambda_k F_k||^2)`` vanishes at the
optimum.  A solution is accepted on this certificate, never on the solver's status string.

Two methods: ``"primal"`` (cvxpy variable of shape ``(p, q)``; the multipliers are the
constraint's dual values) and ``"dual"`` (the QP above in ``m`` variables with the kernel
regularized to ``K + 1e-12 tr(K)/m I``; ``W`` is recovered by stationarity, so it never forms
``pq``-dimensional features).  Both use CLARABEL in float64 with tolerances 1e-10.  (An entrywise l_p-norm
objective, as in the l_p-AttSVM of Julistiono et al. 2024, replaces the primal's objective; its
dual is no longer this QP.)

Infeasibility (Farkas): the program is feasible iff ``0`` is not in the convex hull of the
``F_k``, and then ``||W*||_F = 1 / dist(0, conv{F_k})``.  When a solve fails its certificate this
distance is computed (a small SOCP in the Gram kernel) to tell an infeasible program from an
inaccurate solve.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.linalg

from theorycheck.errors import InfeasibleProgramError, InvalidInputError, SolverAccuracyError
from theorycheck.lineage import computation

__all__ = ["MarginCertificate", "MarginSolution", "certify", "clear_cache", "combine_constraints",
           "constraint_values", "gram_kernel", "hull_distance", "solve_margin_program",
           "stationarity_multipliers"]

CERTIFICATE_TOL = 1e-6
"""Tolerance of every certificate entry: ``min_k <F_k, W> >= 1 - tol`` and relative residuals <= tol."""

INFEASIBILITY_TOL = 1e-6
"""The program counts as infeasible when ``dist(0, conv{F_k}) <= tol * max_k ||F_k||_F``."""

SOLVER = "CLARABEL"
SOLVER_OPTIONS = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}
"""Tighter than CLARABEL's defaults (1e-8): primal and dual then agree to about 1e-8."""
CACHE_SIZE = 64
"""Most solutions kept in memory (the oldest is dropped first)."""


@dataclass(frozen=True)
class MarginCertificate:
    """KKT residuals of a candidate ``(W, lambda)``; relative entries are scaled by ``||W||_F^2``.

    ``min_constraint = min_k <F_k, W>``; ``min_multiplier = min_k lambda_k / ||W||^2``;
    ``complementary_slackness = max_k |lambda_k (<F_k, W> - 1)| / ||W||^2``;
    ``stationarity = ||W - sum_k lambda_k F_k||_F / ||W||_F``;
    ``duality_gap = |primal - dual objective| / (||W||^2 / 2)``.
    """

    min_constraint: float
    min_multiplier: float
    complementary_slackness: float
    stationarity: float
    duality_gap: float
    solver: str
    status: str

    def failures(self, tol: float = CERTIFICATE_TOL) -> list[str]:
        """The violated entries, as readable strings (empty when the certificate holds)."""
        entries = [
            ("min constraint", self.min_constraint, ">=", 1 - tol),
            ("min multiplier", self.min_multiplier, ">=", -tol),
            ("complementary slackness", self.complementary_slackness, "<=", tol),
            ("stationarity", self.stationarity, "<=", tol),
            ("duality gap", self.duality_gap, "<=", tol),
        ]
        return [
            f"{name} = {value:.3e} (needs {sign} {bound:.7g})"
            for name, value, sign, bound in entries
            if not (value >= bound if sign == ">=" else value <= bound)  # NaN fails both
        ]

    @property
    def ok(self) -> bool:
        return not self.failures()

    def worst(self) -> float:
        """The largest residual (a scalar to compare candidates by)."""
        return max(1 - self.min_constraint, -self.min_multiplier, self.complementary_slackness,
                   self.stationarity, self.duality_gap)


@dataclass(frozen=True)
class MarginSolution:
    """Certified solution: ``W (p, q)``, multipliers ``lambda (m,)`` (constraint k labelled by
    ``constraint_index[k]``), and the certificate."""

    W: np.ndarray
    multipliers: np.ndarray
    constraint_index: np.ndarray
    certificate: MarginCertificate

    @property
    def norm(self) -> float:
        """``||W||_F``, the inverse of the margin."""
        return float(np.linalg.norm(self.W))


def constraint_values(A: np.ndarray, B: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``<F_k, W> = a_k^T W b_k`` for the rows ``a_k`` of ``A (m, p)`` and ``b_k`` of ``B (m, q)``."""
    return np.sum((A @ W) * B, axis=1)


def combine_constraints(A: np.ndarray, B: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``sum_k lambda_k a_k b_k^T``, shape ``(p, q)``."""
    return A.T @ (lam[:, None] * B)


def gram_kernel(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``K_{kl} = <a_k b_k^T, a_l b_l^T> = <a_k, a_l> <b_k, b_l>``, shape ``(m, m)``."""
    return (A @ A.T) * (B @ B.T)


def dual_curvature(A: np.ndarray, B: np.ndarray, lam: np.ndarray) -> float:
    """``mu_max``, the largest eigenvalue of ``Lambda^(1/2) K Lambda^(1/2)`` (``K`` the Gram
    kernel, ``Lambda = diag(lambda)``) at the multipliers ``lambda (m,)`` of a solution.

    At the optimum ``K lambda = 1`` on the support, so ``sqrt(lambda)`` is an eigenvector with
    eigenvalue 1 and ``mu_max >= 1``; inactive constraints (``lambda_k = 0``) add zeros.  It is
    the curvature that decides whether a step of length ``||W*||_F`` along the normalized
    weighted sum of the active constraints settles at ``W*``'s direction: on exponentially
    weighted constraints, weights ``p_k ~ exp(-<F_k, W>)``, the map ``log p_k -= (K p)_k /
    p^T K p`` has the fixed point ``p ~ lambda`` with Jacobian ``I - K Lambda`` (modulo the
    neutral shift), whose eigenvalues ``1 - mu`` lie inside (-1, 1) iff ``mu_max < 2``.
    """
    lam = np.asarray(lam, dtype=np.float64)
    if lam.ndim != 1 or lam.shape[0] != A.shape[0] or np.any(lam < 0):
        raise InvalidInputError(f"need one nonnegative multiplier per constraint ({A.shape[0]}), got shape "
                                f"{lam.shape}" + (" with negative entries" if lam.ndim == 1 and np.any(lam < 0) else ""))
    root = np.sqrt(lam)
    return float(scipy.linalg.eigvalsh(root[:, None] * gram_kernel(A, B) * root[None, :],
                                       subset_by_index=[A.shape[0] - 1, A.shape[0] - 1])[0])


def _regularized(K: np.ndarray) -> np.ndarray:
    """``K + 1e-12 tr(K)/m I``: positive definite even when ``K`` is singular."""
    m = K.shape[0]
    return K + 1e-12 * np.trace(K) / m * np.eye(m)


def certify(A, B, W, lam, status: str) -> MarginCertificate:
    """Evaluate the KKT residuals of ``(W, lambda)`` (see :class:`MarginCertificate`)."""
    values = constraint_values(A, B, W)
    combination = combine_constraints(A, B, lam)
    sq_norm = max(float(np.sum(W * W)), np.finfo(float).tiny)
    primal = 0.5 * sq_norm
    dual = float(lam.sum()) - 0.5 * float(np.sum(combination * combination))
    return MarginCertificate(
        min_constraint=float(values.min()),
        min_multiplier=float(lam.min()) / sq_norm,
        complementary_slackness=float(np.max(np.abs(lam * (values - 1)))) / sq_norm,
        stationarity=float(np.linalg.norm(W - combination) / np.sqrt(sq_norm)),
        duality_gap=abs(primal - dual) / primal,
        solver=SOLVER,
        status=status,
    )


def stationarity_multipliers(A: np.ndarray, B: np.ndarray, W: np.ndarray) -> np.ndarray:
    r"""The multipliers ``lambda >= 0`` that best explain ``W`` as ``sum_k lambda_k F_k``.

    ``argmin_{lambda >= 0} ||W - sum_k lambda_k a_k b_k^T||_F``, from ``W`` alone (no solver's
    multipliers): with ``c_k = <F_k, W>`` and the Gram kernel ``K = L L^T`` the objective is
    ``||L^T lambda - L^{-1} c||^2`` up to a constant, a non-negative least-squares problem in
    ``m`` unknowns (scipy's NNLS; ``K`` regularized as in the dual solve).  At a KKT point the
    result is its multiplier vector, so :func:`certify` with it is a certificate of ``W`` that
    does not trust the route ``W`` came from; when ``W`` is no non-negative combination of the
    ``F_k`` the stationarity residual says by how much.
    """
    from scipy.optimize import nnls
    from scipy.linalg import solve_triangular

    L = np.linalg.cholesky(_regularized(gram_kernel(A, B)))
    target = solve_triangular(L, constraint_values(A, B, W), lower=True)
    return nnls(L.T, target, maxiter=50 * A.shape[0])[0]


def _run(problem: cp.Problem) -> str:
    """Solve with CLARABEL and return the status; solver errors become a status string.

    cvxpy's "Solution may be inaccurate" warning is silenced: the certificate decides.
    """
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            problem.solve(solver=SOLVER, **SOLVER_OPTIONS)
    except cp.error.SolverError as error:
        return f"solver error: {error}"
    return problem.status


def _solve_primal(A, B):
    """cvxpy primal: ``min 1/2 ||W||^2`` s.t. ``sum_j (A W)_{kj} B_{kj} >= 1``."""
    W = cp.Variable((A.shape[1], B.shape[1]))
    margins = cp.sum(cp.multiply(A @ W, B), axis=1) >= 1
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W)), [margins])
    status = _run(problem)
    if W.value is None or margins.dual_value is None:
        return None, None, status
    return W.value, np.asarray(margins.dual_value, dtype=float).reshape(-1), status


def _solve_dual(A, B):
    """cvxpy dual ``max_{lambda >= 0} 1^T lambda - 1/2 lambda^T (K + eps I) lambda``; then
    ``W = sum_k lambda_k F_k``.

    The quadratic form is handed to the solver as its matrix (``psd_wrap``), which compiles
    faster than ``sum_squares`` of a Cholesky factor and gives the same solution.
    """
    lam = cp.Variable(A.shape[0], nonneg=True)
    kernel = cp.psd_wrap(_regularized(gram_kernel(A, B)))
    problem = cp.Problem(cp.Maximize(cp.sum(lam) - 0.5 * cp.quad_form(lam, kernel)))
    status = _run(problem)
    if lam.value is None:
        return None, None, status
    return combine_constraints(A, B, lam.value), lam.value, status


METHODS = {"primal": _solve_primal, "dual": _solve_dual}


@computation('solver', inputs=('A', 'B'))
def hull_distance(A: np.ndarray, B: np.ndarray) -> tuple[float, np.ndarray]:
    """``dist(0, conv{F_k}) = min_{v >= 0, 1^T v = 1} ||sum_k v_k F_k||_F`` and its minimizer ``v``.

    Zero iff the program is infeasible (Farkas); otherwise the optimal norm is ``1 / dist``.
    Returns ``(nan, nan-array)`` when the SOCP itself fails.
    """
    K = gram_kernel(A, B)
    v = cp.Variable(A.shape[0], nonneg=True)
    factor = np.linalg.cholesky(_regularized(K))
    problem = cp.Problem(cp.Minimize(cp.norm(factor.T @ v)), [cp.sum(v) == 1])
    _run(problem)
    if v.value is None:
        return float("nan"), np.full(A.shape[0], np.nan)
    return float(np.sqrt(max(v.value @ K @ v.value, 0.0))), v.value


def _failure(A, B, index, program: str, where: str, reason: str) -> Exception:
    """Decide, via the hull distance, whether a failed solve means infeasible or inaccurate."""
    distance, v = hull_distance(A, B)
    scale = float(np.sqrt(np.max(np.sum(A * A, 1) * np.sum(B * B, 1))))
    if distance <= INFEASIBILITY_TOL * scale:
        support = [tuple(int(j) for j in index[k]) for k in np.flatnonzero(v > 1e-6 * v.max())]
        return InfeasibleProgramError(
            f"{program} infeasible for {where}: 0 lies in the convex hull of the constraint matrices "
            f"(distance {distance:.2e} <= {INFEASIBILITY_TOL:g} * max ||F_k|| = {scale:.2e}); "
            f"a Farkas combination uses the constraints {support[:10]}"
            f"{' ...' if len(support) > 10 else ''} (0-based labels; {reason})"
        )
    return SolverAccuracyError(
        f"{program} solve for {where} failed its certificate although the program is feasible "
        f"(hull distance {distance:.3e}, so ||W*|| = {1 / distance:.6g}): {reason}"
    )


_CACHE: dict[tuple, tuple[np.ndarray, np.ndarray, MarginCertificate]] = {}


def clear_cache() -> None:
    """Forget every cached solution."""
    _CACHE.clear()


def _cache_key(A, B, method) -> tuple:
    digest = hashlib.blake2b(A.tobytes(), digest_size=32)
    digest.update(B.tobytes())
    return (method, A.shape, B.shape, digest.hexdigest())


@computation('solver', inputs=('A', 'B', 'index'))
def solve_margin_program(
    A: np.ndarray,
    B: np.ndarray,
    index: np.ndarray,
    *,
    method: str = "dual",
    program: str = "margin program",
    where: str = "an unnamed instance",
) -> MarginSolution:
    """Certified solution of ``min 1/2 ||W||^2 s.t. a_k^T W b_k >= 1`` (see the module docstring).

    ``A (m, p)`` and ``B (m, q)`` hold the factors of the constraint matrices, ``index (m, r)``
    labels them in messages.  Raises :class:`InfeasibleProgramError` or
    :class:`SolverAccuracyError`; ``program`` and ``where`` name the instance in those messages.
    Results are cached in-process (at most ``CACHE_SIZE``) by a hash of ``A``, ``B`` and the method.
    """
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    key = _cache_key(A, B, method)
    if key not in _CACHE:
        W, lam, status = METHODS[method](A, B)
        if W is None:
            reason = f"{method} solve returned no solution, status {status!r}"
            raise _failure(A, B, index, program, where, reason)
        certificate = certify(A, B, W, lam, status)
        if not certificate.ok:
            reason = f"{method} solve, status {status!r}: " + "; ".join(certificate.failures())
            raise _failure(A, B, index, program, where, reason)
        for array in (W, lam):
            array.flags.writeable = False
        if len(_CACHE) >= CACHE_SIZE:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = (W, lam, certificate)
    W, lam, certificate = _CACHE[key]
    return MarginSolution(W=W, multipliers=lam, constraint_index=index, certificate=certificate)
