r"""First-order optimizers for the token-selection model, batched over trials.

Model, loss and notation: `theorycheck.models.token_selection` (Vasudeva,
Deora, Thrampoulidis 2024, arXiv 2402.05738).  theta = (u, W); in the
fixed-decoder setting (the paper's Section 3, ``train_u=False``) only W moves,
in the joint setting (Section 4, ``train_u=True``) both do.

Every optimizer is a callable ``step(t, u, W) -> (u_next, W_next)`` taking the
iteration index t = 0, 1, ... and tensors with a leading trial dimension; it
never modifies its inputs and never synchronizes with the host.  Gradients come
in the scaled form grad = exp(M) * G of `scaled_gradients`, and step lengths are
formed in log space, so normalized and Polyak steps stay exact after attention
saturates and ||grad L|| underflows.  A zero gradient (e.g. grad_W at u = 0)
gives a zero step for that block instead of 0/0.
"""

import math

import torch

from theorycheck.models.token_selection import (
    log_excess_loss,
    log_loss,
    scaled_grad_W,
    scaled_gradients,
    token_scores,
)


def _per_trial(x, like):
    return x.reshape(x.shape + (1,) * (like.dim() - 1))


def _norm(G):
    return torch.linalg.vector_norm(G.flatten(1), dim=1)


def _log_step_size(eta, like):
    """log(eta) for a scalar step size, or per trial for a (K,) tensor of step sizes."""
    if isinstance(eta, torch.Tensor):
        return torch.log(eta.to(dtype=like.dtype, device=like.device))
    return math.log(eta)


def _unit(G):
    """G/||G|| per trial; 0 where G = 0."""
    norm = _per_trial(_norm(G), G)
    return G / torch.where(norm > 0, norm, 1.0)


class _GradientStep:
    r"""theta_{t+1} = theta_t - V_{t+1},  V_{t+1} = mu V_t + eta_t grad L(theta_t),  V_0 = 0.

    grad L is taken over the trained blocks and ||grad L|| is their joint norm,
    sqrt(||g_u||^2 + ||g_W||_F^2).  Subclasses give eta_t exp(M) (the factor
    applied to the scaled gradient G, grad = exp(M) G) in log space; the step
    size eta_t is capped at eta_max.  mu = 0 is the plain method.
    """

    name = ""

    def __init__(self, X, y, train_u=False, eta_max=math.inf, momentum=0.0):
        self.X, self.y, self.train_u = X, y, train_u
        self.log_eta_max, self.momentum = math.log(eta_max), momentum
        self._velocity = None

    def _gradient(self, u, W):
        """(M, [G_b], ||G||) with grad_b = exp(M) G_b for the trained blocks, one M per trial."""
        if not self.train_u:
            M, G = scaled_grad_W(self.X, self.y, u, W)
            return M, [G], _norm(G)
        blocks = scaled_gradients(self.X, self.y, u, W)
        M = torch.maximum(blocks[0][0], blocks[1][0])
        shift = M.nan_to_num(neginf=0.0)
        G = [g * _per_trial(torch.exp(m - shift), g) for m, g in blocks]
        return M, G, torch.hypot(_norm(G[0]), _norm(G[1]))

    def _capped(self, log_coef, M):
        """min(log_coef, log(eta_max) + M): the cap eta_t <= eta_max in terms of eta_t exp(M)."""
        return log_coef if self.log_eta_max == math.inf else torch.minimum(log_coef, self.log_eta_max + M)

    def _log_coef(self, u, W, M, norm):
        raise NotImplementedError

    def __call__(self, t, u, W):
        M, G, norm = self._gradient(u, W)
        coef = torch.where(norm > 0, torch.exp(self._log_coef(u, W, M, norm)), 0.0)
        steps = [_per_trial(coef, g) * g for g in G]
        if self.momentum:
            velocity = [0.0] * len(steps) if t == 0 or self._velocity is None else self._velocity
            steps = self._velocity = [self.momentum * v + s for v, s in zip(velocity, steps)]
        if self.train_u:
            return u - steps[0], W - steps[1]
        return u, W - steps[0]


class GD(_GradientStep):
    r"""Gradient descent, theta_{t+1} = theta_t - eta grad L(theta_t)."""

    name = "gd"

    def __init__(self, X, y, eta, train_u=False):
        super().__init__(X, y, train_u)
        self.log_eta = _log_step_size(eta, X)

    def _log_coef(self, u, W, M, norm):
        return self.log_eta + M


class NGD(_GradientStep):
    r"""Normalized GD (Eq. (2)): theta_{t+1} = theta_t - eta_t grad L, eta_t = min(eta/||grad L||, eta_max).

    Uncapped (eta_max = inf) every step has length exactly eta.  With
    ``train_u=True`` this is the paper's "joint NGD" (one joint norm).  With
    ``momentum`` mu > 0 it is heavy ball on the normalized step:
    V_{t+1} = mu V_t + eta_t grad L, theta_{t+1} = theta_t - V_{t+1}, V_0 = 0
    (the velocity restarts at t = 0).  ``eta`` is a number, or a (K,) tensor giving each
    trial its own step size.
    """

    name = "ngd"

    def __init__(self, X, y, eta, eta_max=math.inf, train_u=False, momentum=0.0):
        super().__init__(X, y, train_u, eta_max, momentum)
        self.log_eta = _log_step_size(eta, X)

    def _log_coef(self, u, W, M, norm):
        return self._capped(self.log_eta - torch.log(norm), M)


class NGDMomentum(NGD):
    r"""NGD with heavy-ball momentum ("NGD-mom" of Fig. 2), mu = 0.9 by default; see `NGD`."""

    name = "ngd_momentum"

    def __init__(self, X, y, eta, momentum=0.9, eta_max=math.inf, train_u=False):
        super().__init__(X, y, eta, eta_max, train_u, momentum)


class Polyak(_GradientStep):
    r"""Polyak step: theta_{t+1} = theta_t - eta_t grad L, eta_t = min((L - L_*)/||grad L||^2, eta_max).

    L_* is the infimum of L over the trained parameters: with a fixed decoder
    L_* = (1/n) sum_i exp(-max_t gamma_{i,t}) (all attention on the optimal
    tokens), in joint training L_* = 0.  The displacement
    exp(log(L - L_*) - M) G/||G||^2 is formed in log space, so the uncapped step
    (eta_max = inf, whose eta_t grows exponentially) keeps an O(1) displacement.
    """

    name = "polyak"

    def __init__(self, X, y, eta_max=math.inf, train_u=False):
        super().__init__(X, y, train_u, eta_max)

    def _log_coef(self, u, W, M, norm):
        if self.train_u:
            log_gap = log_loss(self.X, self.y, u, W)
        else:
            opt = token_scores(self.X, self.y, u).argmax(-1)
            log_gap = log_excess_loss(self.X, self.y, u, W, opt)
        return self._capped(log_gap - M - 2 * torch.log(norm), M)


class BlockNGD:
    r"""Per-block normalized GD with a time factor (Eq. (13)), joint (u, W) training.

        eta_t = eta (t+1)^(-alpha),
        u_{t+1} = u_t - eta_t grad_u L/||grad_u L||,  W_{t+1} = W_t - eta_t grad_W L/||grad_W L||_F.

    alpha = 2/3 is the paper's choice; alpha = 0 is "Eq. (13) without the time
    factor".  A block whose gradient is exactly zero is not moved (at u_0 = 0,
    grad_W L = 0, so the first W step is skipped).
    """

    name = "ngd_eq13"

    def __init__(self, X, y, eta, alpha=2.0 / 3.0):
        self.X, self.y, self.eta, self.alpha = X, y, eta, alpha

    def __call__(self, t, u, W):
        eta_t = self.eta * (t + 1) ** -self.alpha
        (_, G_u), (_, G_W) = scaled_gradients(self.X, self.y, u, W)
        return u - eta_t * _unit(G_u), W - eta_t * _unit(G_W)
