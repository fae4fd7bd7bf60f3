r"""Block-preconditioned gradient descent over any model of the protocol, batched.

    theta_b <- theta_b - eta P_b grad_b L(theta),

with one fixed left preconditioner P_b (K, m_b, m_b) per block (identity for a block not
named).  With P_K = Sigma_hat^{-1} for a key-query block this is gradient descent in the
geometry of an (estimated) extended covariance diag(I, Sigma_hat).  ``schedule``, when given,
returns the model whose gradient is used at step t (a minibatch of a training set, a fresh
batch); by default every step uses ``model``.  ``eta`` is a number or one value per trial.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from theorycheck.errors import DeclarationError
from theorycheck.models.base import Model, per_trial
from theorycheck.optim.gradient import register_optimizer
from theorycheck.optim.step import Step

__all__ = ["Preconditioned"]


class Preconditioned(Step):
    """``step(t, params) -> params`` of the module docstring."""

    def __init__(self, model: Model, eta, preconditioners: Mapping[str, torch.Tensor] | None = None,
                 *, schedule: Callable[[int], Model] | None = None, name="preconditioned_gd"):
        self.model, self.name, self.schedule = model, name, schedule
        like, K = model.data_tensor(), model.trial_count()
        self.preconditioners = dict(preconditioners or {})
        unknown = set(self.preconditioners) - set(model.blocks)
        if unknown:
            raise DeclarationError(f"preconditioners for unknown blocks {sorted(unknown)}; the "
                                   f"model has {model.blocks}")
        model.require_entrywise("a preconditioner", self.preconditioners)
        for b, P in self.preconditioners.items():
            if P.dim() != 3 or P.shape[0] != K or P.shape[1] != P.shape[2]:
                raise DeclarationError(f"preconditioner of block {b!r} must be (K={K}, m, m), got "
                                       f"{tuple(P.shape)}")
        eta = torch.as_tensor(eta, dtype=like.dtype, device=like.device)
        if eta.dim() > 0 and eta.shape != (K,):
            raise DeclarationError(f"eta: {eta.numel()} values for {K} trials")
        self.eta = eta

    def __call__(self, t: int, params):
        model = self.model if self.schedule is None else self.schedule(t)
        grads = model.gradient(params)
        out = {}
        for b, value in params.items():
            g = grads[b]
            if b in self.preconditioners:
                g = self.preconditioners[b] @ g
            eta = self.eta if self.eta.dim() == 0 else per_trial(self.eta, g)
            out[b] = value - eta * g
        return out


# identity preconditioners: plain GD, so every model of the protocol can run it
register_optimizer("preconditioned_identity")(lambda model: Preconditioned(model, 0.3))
