r"""gsb26's manifold of global minima: the points of the claims of `test_manifold.py` (an
unbalanced minimizer off the manifold, points near it) and references for Lemma 1 computed
without the library's projection solver (a derivative-free projection, a BFGS minimizer of the
regularized loss).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 1 (part 2) and Lemma 1.
"""
from __future__ import annotations

import numpy as np

from theorycheck import shared_run
from theorycheck.solvers import manifold_point

from .setup import haar_rotations, ill_conditioned


def unbalanced_minimizer(problem, R, rng, spread=0.1):
    r"""(V* G, Sigma^{-1} G^{-1} Sigma K*), G = I + spread S/||S|| (S symmetric Gaussian), at
    theta* = theta_R: V Sigma K = W* (a global minimizer of L) but off the manifold."""
    V, K = manifold_point(problem.W, problem.Sigma, R)
    S = rng.standard_normal((problem.d, problem.d))
    G = np.eye(problem.d) + spread * (S + S.T) / np.linalg.norm(S + S.T, 2)
    return V @ G, np.linalg.solve(problem.Sigma, np.linalg.solve(G, problem.Sigma @ K))


def candidate(tc, problem, R, rng):
    """The point under test: theta_R, or (controls) an unbalanced minimizer / a wrong manifold."""
    if tc.control == "unbalanced_minimizer":
        return unbalanced_minimizer(problem, R, rng)
    V, K = manifold_point(problem.W, problem.Sigma, R)
    if tc.control == "missing_inverse_covariance":
        return V, problem.Sigma @ K
    return V, K


def projection_points(tc, problem, count):
    rng = tc.rng("projection_points")
    R0 = haar_rotations(rng, problem.d, 1)[0]
    V0, K0 = manifold_point(problem.W, problem.Sigma, R0)
    return [(V0 + 0.05 * rng.standard_normal(V0.shape), K0 + 0.05 * rng.standard_normal(K0.shape))
            for _ in range(count)]


# --- references for Lemma 1 computed without the library's projection solver

def _skew(x, d):
    """The skew-symmetric d x d matrix with upper-triangle entries x."""
    X = np.zeros((d, d))
    X[np.triu_indices(d, 1)] = x
    return X - X.T


def _expm_minus_identity(X, terms=18):
    """exp(X) - I by its power series (accurate to round-off relative to |X| for small X, which
    exp(X) - I computed as a difference is not)."""
    term, total = np.eye(len(X)), np.zeros_like(X)
    for j in range(1, terms + 1):
        term = term @ X / j
        total = total + term
    return total


def derivative_free_projection(V, K, Sigma, W, R0, *, weight=None, scales=(0.1, 1e-5, 1e-9)):
    r"""argmin over R of ||V - V_R||^2 + tr((K - K_R)^T Omega (K - K_R)) (Omega = ``weight``,
    default Sigma) by Nelder-Mead in exponential coordinates R = R0 exp(X(x)), X skew, from the
    rotation R0 (e.g. the best of a brute-force sample), re-centred after each round at
    the simplex scales ``scales``.  Up to constants the distance is
    f(R) = tr(D R A R^T) - 2 <G, R>_F with A = Sigma^{-1} Omega Sigma^{-1},
    G = D^{1/2}(U^T V + V_W^T K^T Omega Sigma^{-1}) (W* = U D V_W^T), and it is evaluated as the
    difference f(R0 E) - f(R0) = tr(D R0 (F A + A F^T + F A F^T) R0^T) - 2 <G, R0 F>, F = E - I
    from the series, so that it keeps its relative accuracy as the steps shrink.  Neither a
    gradient nor the first-order condition enters: the search stops on the simplex size.
    Returns R."""
    import scipy.optimize

    weight = Sigma if weight is None else weight
    U, D, Vh = np.linalg.svd(W, full_matrices=False)
    Sinv = np.linalg.inv(Sigma)
    A = Sinv @ weight @ Sinv
    G = np.sqrt(D)[:, None] * (U.T @ V + Vh @ K.T @ weight @ Sinv)
    d = len(D)
    R = np.asarray(R0, dtype=float)
    for scale in scales:
        def change(x, R=R):
            F = _expm_minus_identity(_skew(x, d))
            M = F @ A + A @ F.T + F @ A @ F.T
            return float(np.trace((D[:, None] * R) @ M @ R.T) - 2 * np.sum(G * (R @ F)))

        m = d * (d - 1) // 2
        simplex = np.vstack([np.zeros(m), scale * np.eye(m)])
        result = scipy.optimize.minimize(change, np.zeros(m), method="Nelder-Mead",
                                         options={"initial_simplex": simplex, "xatol": scale * 1e-4,
                                                  "fatol": np.inf, "maxiter": 4000 * m, "maxfev": 4000 * m})
        R = R @ (np.eye(d) + _expm_minus_identity(_skew(result.x, d)))
    return R


def minimize_regularized_loss(problem, V, K, lam, *, gtol=1e-14, max_iter=20000):
    r"""A minimizer of L_reg = L + lam R(.; Sigma) reached by BFGS (scipy) from (V, K), with the
    closed-form gradients (grad L = (2 E Sigma K^T Sigma, 2 Sigma V^T E Sigma), E = V Sigma K - W*;
    grad R = (4 V N, -4 Sigma N Sigma K), N = V^T V - Sigma K K^T Sigma): a point of
    argmin L_reg found without `manifold_point` or the projection.  Returns (V, K, the final
    gradient norm)."""
    import scipy.optimize

    S, W, k, d = problem.Sigma, problem.W, problem.k, problem.d

    def objective(x):
        Vx, Kx = x[: k * d].reshape(k, d), x[k * d:].reshape(d, d)
        E = Vx @ S @ Kx - W
        N = Vx.T @ Vx - S @ Kx @ Kx.T @ S
        value = np.sum((E @ S) * E) + lam * np.sum(N * N)
        gV = 2 * E @ S @ Kx.T @ S + lam * 4 * Vx @ N
        gK = 2 * S @ Vx.T @ E @ S - lam * 4 * S @ N @ S @ Kx
        return value, np.concatenate([gV.ravel(), gK.ravel()])

    x = np.concatenate([np.ravel(V), np.ravel(K)])
    for _ in range(3):   # BFGS restarted from its own end point (its curvature model resets)
        x = scipy.optimize.minimize(objective, x, jac=True, method="BFGS",
                                    options={"gtol": gtol, "maxiter": max_iter}).x
    return x[: k * d].reshape(k, d), x[k * d:].reshape(d, d), float(np.linalg.norm(objective(x)[1]))


@shared_run(sizes={"quick": {"points": 20}, "full": {"points": 200}})
def regularized_minimizers(run, *, lam):
    r"""`minimize_regularized_loss` with weight ``lam`` from ``points`` perturbed manifold points
    (`projection_points`) of the ill-conditioned instance: the minimizers reached, as arrays
    V (P, k, d), K (P, d, d), their final gradient norms, and the instance."""
    problem = ill_conditioned(run.rng("ill_conditioned"))
    V, K, grads = zip(*(minimize_regularized_loss(problem, V0, K0, lam)
                        for V0, K0 in projection_points(run, problem, run.sizes["points"])))
    return {"V": np.stack(V), "K": np.stack(K), "grad": np.array(grads), "problem": problem}
