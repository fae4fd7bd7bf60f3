r"""gsb26's spectral initialization, the start of Algorithm 1, and the helpers of the claims about
it: the norm ratios of Lemma 4 (`test_estimators.py`) and the spectral point of Lemma 5
(`test_init_perturbation.py`).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Algorithm 1 and Lemmas 3-5.
"""
from __future__ import annotations

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.models.attention_regression import balanced_point, ols_estimate, sample_covariance

from .setup import gaussian_rows, training_set, well_conditioned


def spectral_initialization(problem, n, rng, tensor=torch.as_tensor):
    """(V0, K0, Sigma_hat) (numpy) from n samples: the balanced point of (W_hat OLS, Sigma_hat),
    computed on the tensors ``tensor`` places (a run's device)."""
    X, Y = training_set(problem, n, rng)
    Sigma_hat = sample_covariance(tensor(X))
    V0, K0 = balanced_point(ols_estimate(tensor(X), tensor(Y)), Sigma_hat)
    return V0.cpu().numpy(), K0.cpu().numpy(), Sigma_hat.cpu().numpy()


def ratios(problem, Sigma_hat, thetas):
    """||theta||^2 in Sigma_hat over ||theta||^2 in Sigma, and the same for the dual norms."""
    V, K = thetas
    primal = lambda S: (V ** 2).sum((1, 2)) + np.einsum("tij,ik,tkj->t", K, S, K)
    dual = lambda S: (V ** 2).sum((1, 2)) + np.einsum("tij,ik,tkj->t", K, np.linalg.inv(S), K)
    return primal(Sigma_hat) / primal(problem.Sigma), dual(Sigma_hat) / dual(problem.Sigma)


def unit_operator_norm(A):
    return A / np.linalg.norm(A, 2)


def spectral_point(tc, W, Sigma_inv, reference):
    r"""The spectral point (U D^{1/2}, Sigma^{-1} D^{1/2} V^T) of (W, Sigma), or (control) the
    square-root-free point (U D, Sigma^{-1} V^T), which also has V Sigma K = W but is unbalanced,
    from the compact SVD W = U D V^T with each singular pair (u_i, v_i) signed so that
    u_i^T r_i >= 0 (r_i the columns of ``reference``: W*'s left singular vectors).  The SVD fixes
    a pair only up to its sign, and flipping it moves the point by O(||W - W*||), not along M:
    (V F, Sigma^{-1} F Sigma K) for F = diag(+-1) is close to theta_F, but at Sigma != Sigma* its
    distance to M has another first-order coefficient, and the library's sign choice can flip
    between two nearby W.  Signed as W*'s pairs, the point is the continuous branch of the map
    (W, Sigma) -> theta_0 through theta_I at (W*, Sigma*), whose linearization Lemma 5 bounds."""
    U, D, Vh = np.linalg.svd(W, full_matrices=False)
    signs = np.where(np.einsum("ij,ij->j", U, reference) >= 0, 1.0, -1.0)
    power = 1.0 if tc.control == "square_root_free" else 0.5
    return U * (signs * D ** power), Sigma_inv @ ((signs * D ** (1 - power))[:, None] * Vh)


#: the estimators of W* compared by `ols_errors`: OLS (Lemma 6), and the cross moment
#: (1/n) sum y_i x_i^T without Sigma_hat^{-1}, which tends to W* Sigma
W_ESTIMATORS = {"ols": ols_estimate, "cross_moment": lambda X, Y: Y.transpose(1, 2) @ X / X.shape[1]}


@shared_run(sizes={"quick": {"ns": [100, 400, 1600, 6400], "instances": 20},
                   "full": {"ns": [100, 400, 1600, 6400, 25600, 102400], "instances": 50}})
def ols_errors(run, *, estimator="ols"):
    """||W_hat - W*|| (operator norm) of ``estimator`` (`W_ESTIMATORS`) on ``instances`` independent
    training sets per n of ``ns`` (batched), well-conditioned instance: n, errors (len(ns),
    seeds) and the instance."""
    problem = well_conditioned(run.rng("well_conditioned"))
    rng = run.rng("ols")
    errors = []
    for n in run.sizes["ns"]:
        X = torch.as_tensor(gaussian_rows(rng, problem.Sigma, (run.sizes["instances"], n)))
        Y = X @ torch.as_tensor(problem.W).T + problem.noise * torch.as_tensor(
            rng.standard_normal((run.sizes["instances"], n, problem.k)))
        W_hat = W_ESTIMATORS[estimator](X, Y)
        errors.append(torch.linalg.matrix_norm(W_hat - torch.as_tensor(problem.W), ord=2).numpy())
    return {"n": np.array(run.sizes["ns"]), "errors": np.array(errors), "problem": problem}
