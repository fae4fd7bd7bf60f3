r"""Single-head softmax self-attention trained for multi-output linear regression, batched.

The model of Goel, Soltanolkotabi, Bartlett (arXiv 2603.01514, Section 3): covariates
x_i ~ N(0, Sigma) in R^d, responses y_i = W* x_i + eps_i in R^k, eps_i ~ N(0, sigma^2 I_k).
Parameters: value V in R^{k x d} and key-query product K in R^{d x d}.  Every training
covariate is a query, and the keys/values are all n training covariates (self included):

    s_ij(K) = exp(x_j^T K x_i) / sum_l exp(x_l^T K x_i),      a_i(K) = sum_j s_ij x_j,
    in-sample loss   Lhat_n(V, K) = (1/n) sum_i ||y_i - V a_i(K)||^2          (no factor 1/2).

As n -> infinity the softmax average becomes a ratio of Gaussian expectations,
E[x' e^{a^T x'}] / E[e^{a^T x'}] = Sigma a (a = K x), so the predictor becomes V Sigma K x and

    population loss  L(V, K) = tr((V Sigma K - W*) Sigma (V Sigma K - W*)^T) + k sigma^2,
    grad_V L = 2 (V Sigma K - W*) Sigma K^T Sigma,     grad_K L = 2 Sigma V^T (V Sigma K - W*) Sigma.

Balancing regularizer (Tu et al. 2016 style) with N = V^T V - Sigma K K^T Sigma:

    R(V, K; Sigma) = ||N||_F^2,   grad_V R = 4 V N,   grad_K R = -4 Sigma N Sigma K.

Its global minima together with L form the manifold of balanced factorizations: with the
compact SVD W* = U D V_W^T, theta_R = (U D^{1/2} R, Sigma^{-1} R^T D^{1/2} V_W^T), R in O(d)
(`balanced_point`).  The natural geometry is the extended covariance
Sigma_bar = diag(I_k, Sigma): ||theta||^2 = ||V||_F^2 + tr(K^T Sigma K) (`CovarianceWeighted`
for the K block).

Shapes: every function broadcasts over leading batch dimensions; X (..., n, d), Y (..., n, k),
V (..., k, d), K (..., d, d), Sigma (..., d, d).  Use float64.  The softmax is computed by
`torch.softmax` (max-subtracted), so large scores do not overflow.
"""
from __future__ import annotations

import torch

from theorycheck.batching import map_chunks
from theorycheck.errors import DeclarationError
from theorycheck.models.base import FROBENIUS, Geometry, Instance, Model, per_trial, register_model, scaled

__all__ = [
    "cross_attention_weights",
    "attention_weights",
    "attention_outputs",
    "predictor",
    "in_sample_loss",
    "in_sample_gradient",
    "population_loss",
    "population_gradient",
    "balance_regularizer",
    "balance_regularizer_gradient",
    "sample_covariance",
    "ols_estimate",
    "balanced_point",
    "CovarianceWeighted",
    "PopulationAttentionRegression",
    "EmpiricalAttentionRegression",
]


def _t(A):
    return A.transpose(-1, -2)


# ---------------------------------------------------------------- the forward pass


def cross_attention_weights(queries, keys, K):
    r"""s_ij = softmax_j(x_j^T K q_i) of queries q_i (..., m, d) over keys x_j (..., N, d),
    shape (..., m, N)."""
    scores = (queries @ _t(K)) @ _t(keys)     # [i, j] = (K q_i)^T x_j
    return torch.softmax(scores, dim=-1)


def attention_weights(X, K):
    r"""s_ij = softmax_j(x_j^T K x_i) over the n covariates of each batch, shape (..., n, n)."""
    return cross_attention_weights(X, X, K)


def predictor(queries, keys, V, K):
    r"""f(q; X) = V sum_j s_j(q) x_j for queries q (..., m, d) and keys X (..., N, d): the
    out-of-sample prediction, shape (..., m, k)."""
    return cross_attention_weights(queries, keys, K) @ keys @ _t(V)


def attention_outputs(X, K):
    r"""a_i = sum_j s_ij x_j, shape (..., n, d)."""
    return attention_weights(X, K) @ X


def in_sample_loss(X, Y, V, K):
    r"""Lhat_n = (1/n) sum_i ||y_i - V a_i(K)||^2, shape (...)."""
    residual = Y - attention_outputs(X, K) @ _t(V)
    return (residual * residual).sum(-1).mean(-1)


def in_sample_gradient(X, Y, V, K):
    r"""(grad_V Lhat_n, grad_K Lhat_n) in closed form, with r_i = y_i - V a_i, c_i = V^T r_i:

        grad_V = -(2/n) sum_i r_i a_i^T,
        grad_K = -(2/n) sum_ij G_ij x_j x_i^T,   G_ij = s_ij c_i^T (x_j - a_i)

    (dLhat/ds-scores through a_i = sum_j s_ij x_j; the score x_j^T K x_i has dK = x_j x_i^T).
    Summed over j first, grad_K = -(2/n) sum_i u_i x_i^T with u_i = M_i c_i - (c_i^T a_i) a_i
    and M_i = sum_j s_ij x_j x_j^T (one product of S with the n covariates and their outer
    products x_j x_j^T side by side, in place of three passes over an n x n matrix G).  Shapes
    as `in_sample_loss`: (..., k, d) and (..., d, d)."""
    n, d = X.shape[-2:]
    outer = (X[..., :, None] * X[..., None, :]).reshape(*X.shape[:-1], d * d)
    mixed = attention_weights(X, K) @ torch.cat([X, outer], -1)      # one pass over S for a and M
    a = mixed[..., :d]
    M = mixed[..., d:].reshape(*X.shape[:-1], d, d)                  # M_i = sum_j s_ij x_j x_j^T
    r = Y - a @ _t(V)
    c = r @ V                                                        # (..., n, d): c_i = V^T r_i
    u = (M @ c[..., None])[..., 0] - (c * a).sum(-1, keepdim=True) * a
    return -2 / n * _t(r) @ a, -2 / n * _t(u) @ X


# ---------------------------------------------------------------- population closed forms


def _prediction_error(V, K, Sigma, W):
    return V @ Sigma @ K - W


def population_loss(V, K, Sigma, W, noise):
    r"""L = tr(E Sigma E^T) + k sigma^2 with E = V Sigma K - W*, shape (...).

    ``noise`` is sigma (a number or a tensor broadcasting against the batch)."""
    E = _prediction_error(V, K, Sigma, W)
    return ((E @ Sigma) * E).sum((-1, -2)) + W.shape[-2] * torch.as_tensor(noise, dtype=W.dtype) ** 2


def population_gradient(V, K, Sigma, W):
    r"""(grad_V L, grad_K L) = (2 E Sigma K^T Sigma, 2 Sigma V^T E Sigma), E = V Sigma K - W*."""
    E = _prediction_error(V, K, Sigma, W)
    return 2 * E @ Sigma @ _t(K) @ Sigma, 2 * Sigma @ _t(V) @ E @ Sigma


def _imbalance(V, K, Sigma):
    SK = Sigma @ K
    return _t(V) @ V - SK @ _t(SK)


def balance_regularizer(V, K, Sigma):
    r"""R = ||V^T V - Sigma K K^T Sigma||_F^2, shape (...)."""
    N = _imbalance(V, K, Sigma)
    return (N * N).sum((-1, -2))


def balance_regularizer_gradient(V, K, Sigma):
    r"""(grad_V R, grad_K R) = (4 V N, -4 Sigma N Sigma K), N = V^T V - Sigma K K^T Sigma."""
    N = _imbalance(V, K, Sigma)
    return 4 * V @ N, -4 * Sigma @ N @ Sigma @ K


# ---------------------------------------------------------------- estimators and the manifold


def sample_covariance(X):
    r"""Sigma_hat = (1/n) sum_i x_i x_i^T (known zero mean: no centering), shape (..., d, d)."""
    return _t(X) @ X / X.shape[-2]


def ols_estimate(X, Y):
    r"""W_hat = (sum_i y_i x_i^T)(sum_i x_i x_i^T)^{-1}, shape (..., k, d)."""
    return _t(torch.linalg.solve(_t(X) @ X, _t(X) @ Y))


def balanced_point(W, Sigma, R=None):
    r"""(V, K) = (U D^{1/2} R, Sigma^{-1} R^T D^{1/2} V_W^T) from the compact SVD W = U D V_W^T.

    With R = I (the default) and (W, Sigma) = (W_hat, Sigma_hat) this is the spectral
    initialization; with (W*, Sigma) it is the point theta_R of the manifold of minima."""
    U, D, Vh = torch.linalg.svd(W, full_matrices=False)
    root = D.sqrt()
    V = U * root[..., None, :]
    B = root[..., :, None] * Vh                 # D^{1/2} V_W^T
    if R is not None:
        V, B = V @ R, _t(R) @ B
    return V, torch.linalg.solve(Sigma, B)


# ---------------------------------------------------------------- the model on the protocol


class CovarianceWeighted(Geometry):
    r"""<A, B> = tr(A^T Sigma B) per trial for blocks (K, d, m) and Sigma (K, d, d)."""

    name = "covariance_weighted"

    def __init__(self, Sigma):
        self.Sigma = Sigma

    def inner(self, A, B):
        return (A * (self.Sigma @ B)).flatten(1).sum(1)


def _check_shapes(name, Sigma, W):
    if Sigma.dim() != 3 or Sigma.shape[-1] != Sigma.shape[-2]:
        raise DeclarationError(f"{name}: Sigma must be (K, d, d), got {tuple(Sigma.shape)}")
    if W is not None and (W.dim() != 3 or W.shape[-1] != Sigma.shape[-1] or W.shape[0] != Sigma.shape[0]):
        raise DeclarationError(f"{name}: W* must be (K, k, d) with d = {Sigma.shape[-1]}, got "
                               f"{tuple(W.shape)}")


class PopulationAttentionRegression(Model):
    r"""L_reg(V, K) = L(V, K) + lambda R(V, K; Sigma_R) per trial, L the population closed form.

    ``Sigma`` (K, d, d), ``W`` (K, k, d), ``noise`` sigma (a float), ``lam`` lambda >= 0,
    ``reg_Sigma`` the covariance inside the regularizer (default ``Sigma``; the empirical
    Sigma_hat gives the regularized objective Algorithm-1-style methods use).  Gradients are
    the closed forms of the module docstring; ``infimum`` = k sigma^2 (attained on the manifold
    when reg_Sigma = Sigma, or lambda = 0).  The K block's geometry is `CovarianceWeighted`
    with the true Sigma, so that norms are the Sigma_bar norm.
    """

    blocks = ("V", "K")

    def __init__(self, Sigma, W, noise, lam=0.25, reg_Sigma=None):
        _check_shapes("PopulationAttentionRegression", Sigma, W)
        if lam < 0:
            raise DeclarationError(f"PopulationAttentionRegression: lambda = {lam} < 0")
        self.Sigma, self.W, self.noise, self.lam = Sigma, W, float(noise), float(lam)  # host: construction
        self.reg_Sigma = Sigma if reg_Sigma is None else reg_Sigma
        self.infimum = W.shape[-2] * self.noise ** 2

    def restrict(self, trials):
        return PopulationAttentionRegression(self.Sigma[trials], self.W[trials], self.noise,
                                             self.lam, self.reg_Sigma[trials])

    def loss(self, params):
        V, K = params["V"], params["K"]
        value = population_loss(V, K, self.Sigma, self.W, self.noise)
        if self.lam:
            value = value + self.lam * balance_regularizer(V, K, self.reg_Sigma)
        return value

    def log_loss(self, params):
        return self.loss(params).log()

    def log_excess_loss(self, params):
        V, K = params["V"], params["K"]
        E = _prediction_error(V, K, self.Sigma, self.W)
        excess = ((E @ self.Sigma) * E).sum((-1, -2))
        if self.lam:
            excess = excess + self.lam * balance_regularizer(V, K, self.reg_Sigma)
        return excess.log()

    def gradient(self, params):
        V, K = params["V"], params["K"]
        gV, gK = population_gradient(V, K, self.Sigma, self.W)
        if self.lam:
            rV, rK = balance_regularizer_gradient(V, K, self.reg_Sigma)
            gV, gK = gV + self.lam * rV, gK + self.lam * rK
        return {"V": gV, "K": gK}

    def scaled_gradient(self, params):
        return {b: scaled(g) for b, g in self.gradient(params).items()}

    def geometry(self, block):
        return CovarianceWeighted(self.Sigma) if block == "K" else FROBENIUS

    def data_tensor(self):
        return self.Sigma


#: bytes of attention weights a CPU gradient of `EmpiricalAttentionRegression` computes at once:
#: its trials go in chunks whose (batches, n, n) weights stay in a core's cache, so the softmax
#: and the products that follow it read them from cache rather than memory (each trial's
#: arithmetic is the same either way; the timings are in BENCHMARKS.md)
CACHE_BUDGET = 2 * 2**20


def _batch_mean_gradient(X, Y, V, K):
    r"""(grad_V, grad_K) of the in-sample loss averaged over the batches of each trial: X (K, B,
    n, d), Y (K, B, n, k), V (K, k, d), K (K, d, d)."""
    gV, gK = in_sample_gradient(X, Y, V[:, None], K[:, None])
    return {"V": gV.mean(1), "K": gK.mean(1)}


class EmpiricalAttentionRegression(Model):
    r"""Lhat(V, K) = mean over batches of Lhat_n + lambda R(V, K; reg_Sigma), per trial.

    ``X`` (K, B, n, d) and ``Y`` (K, B, n, k): B batches of n samples per trial (B = 1: one
    training set; B > 1: the average over B fresh batches, a Monte Carlo of the expected
    empirical gradient E[grad Lhat_n], which is linear).  ``lam`` lambda >= 0, a number or one
    value per trial (K,) (regularized and unregularized methods side by side in one batch).
    ``reg_Sigma`` (K, d, d) is required when some lambda > 0 (typically Sigma_hat of the
    training set).  Gradients in closed form (`in_sample_gradient`); ``reference_loss`` (the
    loss) gives the autograd cross-check.
    """

    blocks = ("V", "K")

    def __init__(self, X, Y, lam=0.0, reg_Sigma=None):
        if X.dim() != 4 or Y.dim() != 4 or X.shape[:3] != Y.shape[:3]:
            raise DeclarationError("EmpiricalAttentionRegression: X must be (K, B, n, d) and Y "
                                   f"(K, B, n, k), got {tuple(X.shape)} and {tuple(Y.shape)}")
        lam = torch.as_tensor(lam, dtype=X.dtype, device=X.device)
        if lam.dim() > 1 or (lam.dim() == 1 and lam.shape[0] != X.shape[0]):
            raise DeclarationError(f"EmpiricalAttentionRegression: lambda must be a number or one "
                                   f"value per trial ({X.shape[0]}), got shape {tuple(lam.shape)}")
        if bool((lam < 0).any()):  # host: construction (validating lambda)
            raise DeclarationError("EmpiricalAttentionRegression: lambda < 0")
        if bool((lam > 0).any()) and reg_Sigma is None:  # host: construction
            raise DeclarationError("EmpiricalAttentionRegression: lambda > 0 needs reg_Sigma")
        self.X, self.Y, self.lam, self.reg_Sigma = X, Y, lam, reg_Sigma

    def restrict(self, trials):
        return EmpiricalAttentionRegression(self.X[trials], self.Y[trials],
                                            self.lam if self.lam.dim() == 0 else self.lam[trials],
                                            None if self.reg_Sigma is None else self.reg_Sigma[trials])

    def loss(self, params):
        V, K = params["V"], params["K"]
        value = in_sample_loss(self.X, self.Y, V[:, None], K[:, None]).mean(-1)
        if self.reg_Sigma is not None:
            value = value + self.lam * balance_regularizer(V, K, self.reg_Sigma)
        return value

    def log_loss(self, params):
        return self.loss(params).log()

    def _in_sample_gradient(self, X, Y, V, K):
        gV, gK = in_sample_gradient(X, Y, V[:, None], K[:, None])
        return {"V": gV.mean(1), "K": gK.mean(1)}

    def gradient(self, params):
        V, K = params["V"], params["K"]
        if self.X.device.type == "cpu":     # trials in chunks whose n x n weights stay in cache
            scores = self.X.shape[1] * self.X.shape[2] ** 2 * self.X.element_size()
            mean = map_chunks(_batch_mean_gradient, self.X, self.Y, V, K, item_bytes=scores,
                              budget=CACHE_BUDGET)
        else:
            mean = _batch_mean_gradient(self.X, self.Y, V, K)
        gV, gK = mean["V"], mean["K"]
        if self.reg_Sigma is not None:
            rV, rK = balance_regularizer_gradient(V, K, self.reg_Sigma)
            lam = self.lam if self.lam.dim() == 0 else per_trial(self.lam, V)
            gV, gK = gV + lam * rV, gK + lam * rK
        return {"V": gV, "K": gK}

    def scaled_gradient(self, params):
        return {b: scaled(g) for b, g in self.gradient(params).items()}


# ---------------------------------------------------------------- conformance instances


def _instance_data(K, seed, d=3, k=4):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(K, d, d, generator=g, dtype=torch.float64)
    Sigma = A @ _t(A) / d + torch.eye(d, dtype=torch.float64)
    W = 0.2 * torch.randn(K, k, d, generator=g, dtype=torch.float64)
    params = {"V": 0.5 * torch.randn(K, k, d, generator=g, dtype=torch.float64),
              "K": 0.3 * torch.randn(K, d, d, generator=g, dtype=torch.float64)}
    return g, Sigma, W, params


def _population_instance(K, seed):
    _, Sigma, W, params = _instance_data(K, seed)
    return Instance(PopulationAttentionRegression(Sigma, W, 0.1, lam=0.25), params)


def _empirical_instance(K, seed):
    g, Sigma, W, params = _instance_data(K, seed)
    n, B = 6, 2
    X = torch.randn(K, B, n, 3, generator=g, dtype=torch.float64) @ _t(torch.linalg.cholesky(Sigma))[:, None]
    Y = X @ _t(W)[:, None] + 0.1 * torch.randn(K, B, n, 4, generator=g, dtype=torch.float64)
    return Instance(EmpiricalAttentionRegression(X, Y, lam=0.25, reg_Sigma=Sigma), params)


register_model("attention_regression_population")(_population_instance)
register_model("attention_regression_empirical")(_empirical_instance)
