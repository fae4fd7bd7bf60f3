r"""The manifold of balanced factorizations V Sigma K = W*: projection and local curvature.

Setting (softmax self-attention regression, `theorycheck.models.attention_regression`): with
the compact SVD W* = U D V_W^T (k >= d, D > 0), the manifold is
M = {theta_R = (U D^{1/2} R, Sigma^{-1} R^T D^{1/2} V_W^T) : R in O(d)}, with the
extended-covariance norm ||theta||^2 = ||V||_F^2 + tr(K^T Sigma K).

Projection.  ||theta - theta_R||^2 = ||V||^2 + tr(K^T Sigma K) + tr D + f(R) with

    f(R) = tr(D R A R^T) - 2 <G, R>_F,   A = Sigma^{-1},   G = D^{1/2}(U^T V + V_W^T K^T),

a weighted orthogonal Procrustes problem (no closed form unless A = cI, where
R* = polar(G)).  `weighted_procrustes` minimizes it by Riemannian Newton steps on O(d)
(the gradient and Hessian of w -> f(R exp(Omega(w))) over the skew-symmetric Omega, a Cayley
retraction), each taken only where that Hessian is positive definite and f does not rise,
else the majorize-minimize step R <- polar(c R - grad f(R)), c = 2 lambda_max(D) lambda_max(A)
the Lipschitz constant of grad f = 2 D R A - 2 G (which decreases f monotonically, but
contracts only like 1 - O(1/kappa(A)) per step), stopped on the first-order condition
(R^T grad f symmetric), multi-started from polar(G), polar(G) diag(1,..,1,-1) (the other
component of O(d)) and Haar-random starts (`scipy.stats.ortho_group`).

Local constants.  At theta_R the Hessian H of L_reg (`dense_hessian` of a one-trial model)
in row-major coordinates
(vec V, vec K), the metric Mbar = diag(I_{kd}, Sigma (x) I_d), the tangent directions
t_ab = (V_R A_ab, -Sigma^{-1} A_ab Sigma K_R) (A_ab = e_a e_b^T - e_b e_a^T) and the
Mbar-normal space N = null(T^T Mbar): alpha_loc = lambda_min and mu_max = lambda_max of the
pencil (N^T H N, N^T Mbar N) (`scipy.linalg.eigh`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.stats
import torch

from theorycheck.errors import InvalidInputError, ReferenceComputationError
from theorycheck.lineage import computation
from theorycheck.models.base import Model
from theorycheck.solvers.curvature import dense_hessian

__all__ = ["polar_factor", "procrustes_objective", "weighted_procrustes", "manifold_point",
           "ManifoldProjection", "project_to_manifold", "brute_force_projection",
           "LocalConstants", "local_constants", "symmetry_defect", "sigma_bar_distance"]


def polar_factor(M):
    r"""The orthogonal polar factor U_M V_M^T of a square matrix, or of each of a stack (the U
    of `scipy.linalg.polar`, computed from one LAPACK SVD without scipy's wrapper overhead: the
    majorize-minimize loop calls it ~10^3 times per projection)."""
    U, _, Vh = np.linalg.svd(M)
    return U @ Vh


def procrustes_objective(R, D, A, G):
    r"""f(R) = tr(D R A R^T) - 2 <G, R>_F for diagonal D given as a vector."""
    return float(_procrustes_values(R, D, A, G)[0])


def _procrustes_gradient(R, D, A, G):
    r"""grad f(R) = 2 D R A - 2 G, for one R or a stack (..., d, d)."""
    return 2 * (D[:, None] * R) @ A - 2 * G


def _riemannian_asymmetry(R, grad):
    r"""max |R^T grad - (R^T grad)^T| per R of a stack (..., d, d): zero at a critical point of f
    on O(d)."""
    S = np.swapaxes(R, -1, -2) @ grad
    return np.max(np.abs(S - np.swapaxes(S, -1, -2)), axis=(-2, -1))


def _skew_basis(d):
    r"""The basis E_ab = e_a e_b^T - e_b e_a^T (a < b) of the skew-symmetric d x d matrices,
    shape (d(d-1)/2, d, d)."""
    a, b = np.triu_indices(d, 1)
    E = np.zeros((len(a), d, d))
    E[np.arange(len(a)), a, b], E[np.arange(len(a)), b, a] = 1.0, -1.0
    return E


def _newton_system(R, D, A, G, E):
    r"""The gradient g and Hessian H of w -> f(R exp(sum_k w_k E_k)) at w = 0 for each R of a
    stack (..., d, d), in the basis E (`_skew_basis`).  With P = R^T diag(D) R, Q = R^T G and
    X = exp(Omega) = I + Omega + Omega^2/2 + O(3),

        f(R X) - f(R) = tr(Omega (A P - P A)) - 2 <Q, Omega>
                        - tr(P Omega A Omega) + tr(Omega^2 (A P + P A))/2 - tr(Q^T Omega^2) + O(3),

    so g_k = <E_k, (A P - P A)^T - 2 Q> and H = C + C^T with
    C_kl = -<P E_k, (A E_l)^T> + <E_k E_l, (A P + P A)/2 - Q> (each a product of flattened
    matrices)."""
    m, d = len(E), len(D)
    Rt = np.swapaxes(R, -1, -2)
    P, Q = Rt @ (D[:, None] * R), Rt @ G
    AP = A @ P
    PA = np.swapaxes(AP, -1, -2)
    flat = lambda M: M.reshape(*M.shape[:-2], d * d)                  # noqa: E731
    g = flat(np.swapaxes(AP - PA, -1, -2) - 2 * Q) @ flat(E).T
    curvature = -flat(P[..., None, :, :] @ E) @ flat(np.swapaxes(A @ E, -1, -2)).T
    pairs = flat((E[:, None] @ E[None]).reshape(m * m, d, d))           # E_k E_l, row k m + l
    C = curvature + (flat((AP + PA) / 2 - Q) @ pairs.T).reshape(*R.shape[:-2], m, m)
    return g, C + np.swapaxes(C, -1, -2)


def _cayley(Omega):
    r"""(I - Omega/2)^{-1} (I + Omega/2): orthogonal for skew Omega, exp(Omega) to second order."""
    half = Omega / 2
    identity = np.eye(Omega.shape[-1])
    return np.linalg.solve(identity - half, identity + half)


def _procrustes_values(R, D, A, G):
    r"""`procrustes_objective` of each R of a stack (..., d, d), and the scale of its terms
    (|tr(D R A R^T)| + 2|<G, R>|: the size of its round-off)."""
    quadratic = np.sum(((D[:, None] * R) @ A) * R, axis=(-2, -1))
    linear = 2 * np.sum(G * R, axis=(-2, -1))
    return quadratic - linear, np.abs(quadratic) + np.abs(linear)


#: a Newton candidate may raise f by at most this many ulps of the scale of its terms (at
#: convergence f's decrease is below its round-off)
NEWTON_SLACK_ULPS = 64


def _newton_or_majorize(R, grad, D, A, G, E, c):
    r"""One step for each R of a stack: the Riemannian Newton step R (I - Omega/2)^{-1}(I +
    Omega/2), Omega = sum_k w_k E_k with H w = -g (`_newton_system`), where H is positive
    definite and the step does not raise f beyond its round-off (`NEWTON_SLACK_ULPS`); the
    majorize-minimize step polar(c R - grad f) otherwise."""
    g, H = _newton_system(R, D, A, G, E)
    lowest, vectors = np.linalg.eigh(H)
    convex = lowest[..., 0] > 0
    inverse = np.where(convex[..., None], 1 / np.where(convex[..., None], lowest, 1.0), 0.0)
    w = -np.einsum("...ij,...j,...kj,...k->...i", vectors, inverse, vectors, g)
    candidate = R @ _cayley(np.einsum("...k,kij->...ij", w, E))
    before, scale = _procrustes_values(R, D, A, G)
    after, _ = _procrustes_values(candidate, D, A, G)
    accept = convex & (after <= before + NEWTON_SLACK_ULPS * np.finfo(float).eps * scale)
    stepped = np.array(candidate)
    if not accept.all():
        stepped[~accept] = polar_factor(c * R[~accept] - grad[~accept])
    return stepped


@computation('solver', inputs=('D', 'A', 'G', 'starts'))
def weighted_procrustes(D, A, G, starts, *, tol=1e-11, max_iter=20000):
    r"""argmin over R in O(d) of `procrustes_objective` from every start (all starts iterated
    together, each until its own first-order condition max|R^T grad f - (.)^T| <=
    tol max(1, max|G|)), by Riemannian Newton steps safeguarded by majorize-minimize
    (`_newton_or_majorize`: f never rises beyond round-off, so a start descends to a local
    minimum of its own, and converges quadratically there); returns (R, f(R)) of the best start
    that met it.  ReferenceComputationError if none did within ``max_iter`` iterations."""
    c = 2 * float(np.max(D)) * float(np.linalg.eigvalsh(A)[-1])
    scale = tol * max(1.0, float(np.max(np.abs(G))))
    E = _skew_basis(len(D))
    R = np.array([np.asarray(start, dtype=float) for start in starts])
    active = np.arange(len(R))
    converged = np.zeros(len(R), dtype=bool)
    for _ in range(max_iter):
        grad = _procrustes_gradient(R[active], D, A, G)
        done = _riemannian_asymmetry(R[active], grad) <= scale
        converged[active[done]] = True
        active = active[~done]
        if not active.size:
            break
        R[active] = _newton_or_majorize(R[active], grad[~done], D, A, G, E, c)
    values = [(procrustes_objective(R[i], D, A, G), i) for i in np.flatnonzero(converged)]
    if not values:
        raise ReferenceComputationError(f"weighted Procrustes: no start converged in {max_iter} "
                                        "iterations")
    value, best = min(values)
    return R[best], value


def _svd_factors(W):
    W = np.asarray(W)
    if W.ndim != 2 or W.shape[0] < W.shape[1]:
        raise InvalidInputError(f"W* must be a (k, d) matrix with k >= d (the manifold assumes "
                                f"W* of full column rank d), got shape {W.shape}")
    U, D, Vh = np.linalg.svd(W, full_matrices=False)
    if D[-1] <= 0:
        raise ReferenceComputationError("W* is rank deficient: the manifold needs sigma_d(W*) > 0")
    return U, D, Vh


def manifold_point(W, Sigma, R):
    r"""theta_R = (U D^{1/2} R, Sigma^{-1} R^T D^{1/2} V_W^T) (numpy)."""
    U, D, Vh = _svd_factors(W)
    d = W.shape[1]
    for name, M in (("Sigma", Sigma), ("R", R)):
        if np.shape(M) != (d, d):
            raise InvalidInputError(f"{name} must be (d, d) = ({d}, {d}) for W* of shape {W.shape}, "
                                    f"got {np.shape(M)}")
    root = np.sqrt(D)
    return (U * root) @ R, np.linalg.solve(Sigma, R.T @ (root[:, None] * Vh))


def sigma_bar_distance(V, K, V2, K2, Sigma):
    r"""||theta - theta'|| in the norm ||V||_F^2 + tr(K^T Omega K), Omega = ``Sigma``."""
    dK = K - K2
    return float(np.sqrt(np.sum((V - V2) ** 2) + np.trace(dK.T @ Sigma @ dK)))


@dataclass(frozen=True)
class ManifoldProjection:
    """The projection (V*, K*) = theta_R of (V, K), its R and the distance."""

    R: np.ndarray
    V: np.ndarray
    K: np.ndarray
    distance: float


def _procrustes_data(V, K, Sigma, W, weight):
    r"""D, A = Sigma^{-1} Omega Sigma^{-1}, G = D^{1/2}(U^T V + V_W^T K^T Omega Sigma^{-1}) for the
    distance ||V - V_R||^2 + tr((K - K_R)^T Omega (K - K_R)) (Omega = Sigma: A = Sigma^{-1})."""
    U, D, Vh = _svd_factors(W)
    Sinv = np.linalg.inv(Sigma)
    G = np.sqrt(D)[:, None] * (U.T @ V + Vh @ K.T @ weight @ Sinv)
    return D, Sinv @ weight @ Sinv, G


def _projection(V, K, Sigma, W, R, weight):
    Vs, Ks = manifold_point(W, Sigma, R)
    return ManifoldProjection(R, Vs, Ks, sigma_bar_distance(V, K, Vs, Ks, weight))


@computation('solver', inputs=('V', 'K', 'Sigma', 'W', 'weight'))
def project_to_manifold(V, K, Sigma, W, rng, *, random_starts=8, weight=None, starts=(), polar_starts=True):
    r"""The projection of (V, K) onto the manifold of (W*, Sigma) in the norm
    ||V||^2 + tr(K^T Omega K), Omega = ``weight`` (default Sigma: the extended-covariance
    norm; the identity gives the Euclidean projection).  ``starts``: extra initial R (e.g.
    the previous projection along a trajectory); ``polar_starts=False`` drops the two polar
    starts (a warm start alone, for small moves along a trajectory)."""
    weight = Sigma if weight is None else weight
    D, A, G = _procrustes_data(V, K, Sigma, W, weight)
    starts = list(starts)
    if polar_starts:
        P = polar_factor(G)
        flip = np.ones(len(D))
        flip[-1] = -1
        starts += [P, P * flip]
    if not starts and not random_starts:
        raise ReferenceComputationError("project_to_manifold: no starting rotation")
    if random_starts:
        starts += list(scipy.stats.ortho_group.rvs(len(D), size=random_starts, random_state=rng)
                       .reshape(-1, len(D), len(D)))
    return _projection(V, K, Sigma, W, weighted_procrustes(D, A, G, starts)[0], weight)


@computation('solver', inputs=('V', 'K', 'Sigma', 'W'))
def brute_force_projection(V, K, Sigma, W, rng, *, samples=20000):
    r"""The best theta_R over ``samples`` Haar-random R in O(d) (both components): an
    independent, derivative-free reference for `project_to_manifold` (small d only)."""
    D, A, G = _procrustes_data(V, K, Sigma, W, Sigma)
    Rs = scipy.stats.ortho_group.rvs(len(D), size=samples, random_state=rng)
    values = _procrustes_values(Rs, D, A, G)[0]
    return _projection(V, K, Sigma, W, Rs[int(np.argmin(values))], Sigma)


def symmetry_defect(V, K, projection: ManifoldProjection, Sigma):
    r"""||S - S^T||_F / ||S||_F for S = V*^T (V - V*) + Sigma K* (K - K*)^T, the first-order
    condition of the projection (zero at an exact projection)."""
    S = projection.V.T @ (V - projection.V) + Sigma @ projection.K @ (K - projection.K).T
    return float(np.linalg.norm(S - S.T) / np.linalg.norm(S))


@dataclass(frozen=True)
class LocalConstants:
    """alpha_loc, mu_max of the normal pencil at theta_R, the tangent-space residual
    max_ab ||H t_ab|| / ||H|| (zero on the manifold) and the pencil's generalized eigenvectors
    in (vec V, vec K) coordinates, columns by ascending eigenvalue (``modes[:, 0]``: the
    softest normal direction)."""

    alpha: float
    mu_max: float
    tangent_residual: float
    modes: np.ndarray


def extended_metric(Sigma, k: int):
    r"""The extended-covariance metric ``G = diag(I_{k d}, Sigma (x) I_d)`` on the row-major
    coordinates (vec V, vec K) of theta = (V, K), V (k, d), K (d, d): ``delta^T G delta = ||dV||^2 +
    tr(dK^T Sigma dK)``, the norm of `project_to_manifold` and of the normal pencil of
    `local_constants`."""
    d = np.asarray(Sigma).shape[0]
    return scipy.linalg.block_diag(np.eye(k * d), np.kron(Sigma, np.eye(d)))


def local_constants(model: Model, V, K, Sigma) -> LocalConstants:
    r"""alpha_loc and mu_max at theta_R = (V, K) (numpy (k, d), (d, d)) for the objective of a
    one-trial ``model`` with blocks ("V", "K"), from its autograd Hessian (`dense_hessian`,
    row-major coordinates (vec V, vec K))."""
    k, d = V.shape
    like = model.data_tensor()
    point = {b: torch.as_tensor(a, dtype=like.dtype, device=like.device)[None]
             for b, a in (("V", V), ("K", K))}
    H = dense_hessian(model, point).cpu().numpy()
    metric = extended_metric(Sigma, k)
    Sinv = np.linalg.inv(Sigma)
    tangents = []
    for a in range(d):
        for b in range(a + 1, d):
            A = np.zeros((d, d))
            A[a, b], A[b, a] = 1.0, -1.0
            tangents.append(np.concatenate([(V @ A).ravel(), (-Sinv @ A @ Sigma @ K).ravel()]))
    T = np.array(tangents).T.reshape(k * d + d * d, -1)
    residual = max((np.linalg.norm(H @ t) / np.linalg.norm(t) for t in T.T), default=0.0)
    N = scipy.linalg.null_space(T.T @ metric) if T.shape[1] else np.eye(k * d + d * d)
    values, vectors = scipy.linalg.eigh(N.T @ H @ N, N.T @ metric @ N)
    return LocalConstants(float(values[0]), float(values[-1]),
                          float(residual / np.linalg.norm(H, 2)), N @ vectors)
