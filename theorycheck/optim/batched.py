r"""Several optimizers, or several step-size schedules, in one batched step.

The optimizers of `theorycheck.optim.steps` run one method with one setting on a batch of
trials.  The steppers here run different methods or schedules side by side along the trial
dimension, with one gradient evaluation per step for all of them, so that a figure's
methods (or a claim's variants) form a single trajectory.  For one method and one setting
each of them is the corresponding single-method optimizer (same formulas, in log space as
there); the claims that use them check that step for step.
"""

import functools
import math
from dataclasses import dataclass

import torch

from theorycheck.models.token_selection import (
    log_excess_loss,
    log_loss,
    scaled_grad_W,
    scaled_gradients,
    token_scores,
)
from theorycheck.optim.steps import GD, NGD, BlockNGD, NGDMomentum, Polyak, _norm, _per_trial

RULES = ("gd", "ngd", "block_ngd", "polyak")


@dataclass(frozen=True)
class Method:
    r"""One optimizer of a `MethodBatchStep`, named ``label``.

    ``rule``: "gd" (eta grad L), "ngd" (eta grad L/||grad L||, joint norm over the trained
    blocks, heavy ball V <- mu V + step when ``momentum``), "block_ngd" (Eq. (13): each block
    normalized by its own norm, eta_t = eta (t+1)^-alpha) or "polyak" ((L - L_*)/||grad L||^2,
    L_* = inf L; capped at ``eta_max``).
    """

    label: str
    rule: str
    eta: float = 1.0
    eta_max: float = math.inf
    momentum: float = 0.0
    alpha: float = 0.0

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"method {self.label!r}: unknown rule {self.rule!r}; use one of {RULES}")

    def library_step(self, X, y, train_u):
        """The same optimizer as a single-method step of `theorycheck.optim`."""
        if self.rule == "gd":
            return GD(X, y, self.eta, train_u=train_u)
        if self.rule == "polyak":
            return Polyak(X, y, eta_max=self.eta_max, train_u=train_u)
        if self.rule == "block_ngd":
            return BlockNGD(X, y, self.eta, alpha=self.alpha)
        if self.momentum:
            return NGDMomentum(X, y, self.eta, momentum=self.momentum, eta_max=self.eta_max,
                               train_u=train_u)
        return NGD(X, y, self.eta, eta_max=self.eta_max, train_u=train_u)


class MethodBatchStep:
    r"""Several optimizers in one batched step: trials [mK, (m+1)K) follow ``methods[m]``.

    The data (K trials) is repeated once per method; the iterates passed to the step have
    M*K trials.  One scaled gradient (grad_b = exp(M_b) G_b per block b) serves every method.
    With M = max_b M_b and w_b = exp(M_b - M) the joint norm is
    ||grad L|| = exp(M) sqrt(sum_b (w_b ||G_b||)^2), and each method's step on block b is
    c_b G_b with, in log space (as in `theorycheck.optim.steps`):

        gd: log c = log eta_t + M,   ngd: log c = log eta_t - log||G||,
        polyak: log c = log(L - L_*) - M - 2 log||G||,   then log c <= log eta_max + M,
        c_b = c w_b;   block_ngd: c_b = eta_t/||G_b||,   eta_t = eta (t+1)^-alpha.

    Heavy ball: V_{t+1} = mu V_t + c_b G_b, V_0 = 0 (mu = 0 for the plain methods).  A zero
    gradient gives a zero step.  L_* of Polyak: 0 in joint training (``train_u``), the loss
    with all attention on the argmax tokens of the fixed decoder otherwise.
    """

    name = "method_batch"

    def __init__(self, X, y, methods, train_u):
        K, groups = X.shape[0], len(methods)
        self.X, self.y, self.train_u = X.repeat(groups, 1, 1, 1), y.repeat(groups, 1), train_u

        def per_trial(values, dtype=X.dtype):
            return torch.tensor(values, dtype=dtype, device=X.device).repeat_interleave(K)

        self.is_gd = per_trial([m.rule == "gd" for m in methods], torch.bool)
        self.is_polyak = per_trial([m.rule == "polyak" for m in methods], torch.bool)
        self.is_block = per_trial([m.rule == "block_ngd" for m in methods], torch.bool)
        self.log_eta = per_trial([math.log(m.eta) for m in methods])
        self.alpha = per_trial([m.alpha for m in methods])
        self.log_cap = per_trial([math.log(m.eta_max) for m in methods])  # +inf: no cap
        self.mu = per_trial([m.momentum for m in methods])
        self.uses = {flag: any(test(m) for m in methods) for flag, test in (
            ("polyak", lambda m: m.rule == "polyak"), ("block", lambda m: m.rule == "block_ngd"),
            ("cap", lambda m: m.eta_max < math.inf), ("momentum", lambda m: m.momentum),
            ("time factor", lambda m: m.alpha))}
        self._opt = None
        self._velocity = None

    def _blocks(self, u, W):
        """[(M_b, G_b)] for the trained blocks (u then W, or W alone)."""
        if self.train_u:
            return list(scaled_gradients(self.X, self.y, u, W))
        return [scaled_grad_W(self.X, self.y, u, W)]

    @staticmethod
    def _joint_scale(blocks):
        """(M, [w_b], [||G_b||], ||G||): M = max_b M_b, w_b = exp(M_b - M) (None for one block)."""
        norms = [_norm(G_b) for _, G_b in blocks]
        if len(blocks) == 1:
            return blocks[0][0], [None], norms, norms[0]
        M = functools.reduce(torch.maximum, [M_b for M_b, _ in blocks])
        shift = M.nan_to_num(neginf=0.0)
        weights = [torch.exp(M_b - shift) for M_b, _ in blocks]
        return M, weights, norms, torch.sqrt(sum((w * n) ** 2 for w, n in zip(weights, norms)))

    def _log_gap(self, u, W):
        """log(L - L_*): L_* = 0 in joint training, the all-optimal-token loss otherwise."""
        if self.train_u:
            return log_loss(self.X, self.y, u, W)
        if self._opt is None:  # u is fixed, so the optimal tokens are too
            self._opt = token_scores(self.X, self.y, u).argmax(-1)
        return log_excess_loss(self.X, self.y, u, W, self._opt)

    def _log_coef(self, u, W, log_eta, M, norm):
        """log c of the jointly normalized rules (gd, ngd, polyak), capped; NaN only where the
        gradient is zero (M = -inf), which the caller maps to a zero step."""
        log_norm = torch.log(norm)
        log_coef = torch.where(self.is_gd, log_eta + M, log_eta - log_norm)
        if self.uses["polyak"]:
            log_coef = torch.where(self.is_polyak, self._log_gap(u, W) - M - 2 * log_norm, log_coef)
        if self.uses["cap"]:
            log_coef = torch.minimum(log_coef, self.log_cap + M)
        return log_coef

    def __call__(self, t, u, W):
        blocks = self._blocks(u, W)
        M, weights, norms, norm = self._joint_scale(blocks)
        log_eta = self.log_eta - self.alpha * math.log(t + 1) if self.uses["time factor"] else self.log_eta
        coef = torch.where(norm > 0, torch.exp(self._log_coef(u, W, log_eta, M, norm)), 0.0)
        steps = []
        for (_, G_b), w, n in zip(blocks, weights, norms):
            c_b = coef if w is None else coef * w
            if self.uses["block"]:
                c_b = torch.where(self.is_block, torch.where(n > 0, torch.exp(log_eta) / n, 0.0), c_b)
            steps.append(_per_trial(c_b, G_b) * G_b)
        if self.uses["momentum"]:
            if t > 0:
                steps = [_per_trial(self.mu, s) * v + s for v, s in zip(self._velocity, steps)]
            self._velocity = steps
        if self.train_u:
            return u - steps[0], W - steps[1]
        return u, W - steps[0]


class ScheduledNormalizedGD:
    r"""Normalized GD on theta = (u, W) with a per-trial schedule eta_{t,k} = eta_k (t+1)^(-alpha_k).

    Per trial k either per-block normalization (Eq. (13)):

        u_{t+1} = u_t - eta_{t,k} g_u/||g_u||,   W_{t+1} = W_t - eta_{t,k} g_W/||g_W||_F,

    or (``joint[k]``) one joint norm (Eq. (2) with the time factor):

        theta_{t+1} = theta_t - eta_{t,k} g/||g||,   ||g||^2 = ||g_u||^2 + ||g_W||_F^2.

    ``eta``, ``alpha``: (K,) float tensors, ``joint``: (K,) bool.  Gradients come scaled,
    g_b = exp(M_b) G_b, and the joint norm is formed in log space; a zero block gradient gives
    a zero step for that block (per-block normalization).  For one setting it is
    `theorycheck.optim.BlockNGD` (joint = False) or ``NGD(train_u=True)`` (joint = True,
    alpha = 0).
    """

    name = "scheduled_ngd"

    def __init__(self, X, y, eta, alpha, joint):
        self.X, self.y, self.eta, self.alpha, self.joint = X, y, eta, alpha, joint

    def _factors(self, M_u, norm_u, M_W, norm_W):
        """Per trial, the factors f_b with step_b = eta_t f_b G_b."""
        log_u, log_W = M_u + norm_u.log(), M_W + norm_W.log()
        log_joint = 0.5 * torch.logaddexp(2 * log_u, 2 * log_W)
        factors = []
        for M, norm in ((M_u, norm_u), (M_W, norm_W)):
            per_block = torch.where(norm > 0, 1.0 / norm, 0.0)
            factors.append(torch.where(self.joint, torch.exp(M - log_joint), per_block))
        return factors

    def __call__(self, t, u, W):
        rate = self.eta * (t + 1.0) ** -self.alpha
        (M_u, G_u), (M_W, G_W) = scaled_gradients(self.X, self.y, u, W)
        f_u, f_W = self._factors(M_u, _norm(G_u), M_W, _norm(G_W))
        return (torch.addcmul(u, -(rate * f_u)[:, None], G_u),
                torch.addcmul(W, -(rate * f_W)[:, None, None], G_W))  # one pass over the d x d blocks
