r"""Adam on the model protocol: ``step(t, params) -> params`` from the model's gradient.

Per coordinate (Kingma & Ba 2015, "Adam: a method for stochastic optimization")::

    m_t = b1 m_{t-1} + (1 - b1) g_t,   v_t = b2 v_{t-1} + (1 - b2) g_t^2,
    theta_t = theta_{t-1} - lr (m_t / (1 - b1^t)) / (sqrt(v_t / (1 - b2^t)) + eps)

with ``g_t`` the full-batch gradient of the model's loss and ``lr`` multiplied by
``schedule(t)`` when a schedule is given (e.g. :func:`cosine_schedule`, which removes the
late-phase spikes of constant-step Adam near zero loss).  Every operation is elementwise,
so the trials of a batch are independent problems (the batch equals trial by trial).
"""
from __future__ import annotations

import math
from typing import Mapping

import torch

from theorycheck.errors import DeclarationError
from theorycheck.lineage import computation
from theorycheck.models.base import Model
from theorycheck.optim.gradient import register_optimizer
from theorycheck.optim.step import Step

__all__ = ["Adam", "adam_steps", "cosine_schedule"]


class Adam(Step):
    """Full-batch Adam on every block of ``model``; call with ``t = 0, 1, 2, ...``."""

    def __init__(self, model: Model, lr: float, *, betas=(0.9, 0.999), eps: float = 1e-8,
                 schedule=None, name: str = "adam"):
        if not (lr > 0 and 0 <= betas[0] < 1 and 0 <= betas[1] < 1 and eps > 0):
            raise DeclarationError(f"Adam: needs lr > 0, betas in [0, 1), eps > 0; got lr={lr}, "
                                   f"betas={betas}, eps={eps}")
        model.require_entrywise("Adam")
        self.model, self.lr, self.betas, self.eps, self.name = model, lr, betas, eps, name
        self.schedule = schedule
        self.state: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self.count = 0

    def __call__(self, t: int, params: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        b1, b2 = self.betas
        grads = self.model.gradient(params)
        self.count += 1
        lr = self.lr * (1.0 if self.schedule is None else self.schedule(t))
        c1, c2 = 1 - b1 ** self.count, 1 - b2 ** self.count
        out = {}
        for block in self.model.blocks:
            g = grads[block]
            if block not in self.state:
                self.state[block] = (torch.zeros_like(g), torch.zeros_like(g))
            m, v = self.state[block]
            # the moments updated in place (the state owns them), with the roundings of
            # b1 m + (1 - b1) g and b2 v + (1 - b2) g g: the same bits, fewer temporaries
            m.mul_(b1).add_((1 - b1) * g)
            v.mul_(b2).add_(((1 - b2) * g).mul_(g))
            denominator = (v / c2).sqrt_().add_(self.eps)
            out[block] = params[block] - (m / c1).mul_(lr).div_(denominator)
        return out



register_optimizer("adam")(lambda model: Adam(model, 0.01))  # in the conformance suite

@computation('trajectory', inputs=('model', 'params', 'lr', 'options'))
def adam_steps(model: Model, params: Mapping[str, torch.Tensor], steps: int, lr: float,
               **options) -> dict[str, torch.Tensor]:
    """``params`` after ``steps`` Adam steps (no recording)."""
    step = Adam(model, lr, **options)
    current = dict(params)
    for t in range(steps):
        current = step(t, current)
    return current


def cosine_schedule(steps: int):
    """``t -> (1 + cos(pi t / steps)) / 2``: the step size decays from ``lr`` to 0 over ``steps``."""
    if steps < 1:
        raise DeclarationError(f"cosine_schedule: needs steps >= 1, got {steps}")
    return lambda t: 0.5 * (1.0 + math.cos(math.pi * min(t, steps) / steps))
