r"""Mirror descent with the entrywise l_p potential, over any model of the protocol, batched.

Potential (mirror map) of a block W, entrywise over all its entries (as in Sun, Ahn,
Thrampoulidis, Azizan 2022, arXiv 2205.12808, and Julistiono, Tarzanagh, Azizan 2024,
arXiv 2410.14581):

    psi(W)           = (1/p) ||W||_p^p,               p > 1,
    grad psi(W)      = sign(W) |W|^(p-1),             (mirror map)
    grad psi^-1(T)   = sign(T) |T|^(1/(p-1)),          (its inverse)
    D_psi(A, B)      = psi(A) - psi(B) - <grad psi(B), A - B>   >= 0   (Bregman divergence)

with the identities <grad psi(W), W> = ||W||_p^p, ||grad psi(W)||_q = ||W||_p^(p-1)
(q = p/(p-1)) and grad psi(cW) = c^(p-1) grad psi(W) for c > 0.  For unit-norm arguments
D_psi(A, B) = 1 - <grad psi(B), A>; the *directional* divergence of a matrix W from a reference
R is D_psi(R/||R||_p, W/||W||_p).

One mirror-descent step on every block b (gradient grad_b L = exp(M_b) G_b from the model's
`scaled_gradient`):

    plain:       grad psi(W') = grad psi(W) - eta exp(M_b) G_b
    normalized:  grad psi(W') = grad psi(W) - eta G_b / ||G_b||_q      (each block its own norm)

For p = 2 the plain step is the gradient step W - eta grad L.  Numerics:

* the normalized step never forms exp(M_b): G_b / ||G_b||_q is the exact direction however
  small the gradient (the model's log-domain gradient keeps G_b accurate);
* ||G||_q is computed scale-safely (G / max|G| first), so it neither underflows nor needs an
  epsilon; a block with zero gradient does not move;
* powers of negative numbers are formed as sign(x) |x|^e, never x^e.

``p`` and ``eta`` are one number for all trials or one value per trial ((K,) sequence or
tensor), so several exponents run side by side in one batch.
"""
from __future__ import annotations

import torch

from theorycheck.errors import DeclarationError
from theorycheck.models.base import Model, per_trial
from theorycheck.optim.gradient import register_optimizer
from theorycheck.optim.step import Step

__all__ = ["lp_norm", "dual_exponent", "potential", "mirror_map", "inverse_mirror_map",
           "bregman", "directional_bregman", "MirrorDescent"]


def _exponent(p, like):
    """``p`` as a float or a (K,) tensor broadcast against the block ``like`` (K, ...)."""
    if isinstance(p, torch.Tensor) and p.dim() > 0:
        return per_trial(p.to(like.dtype), like)
    return float(p)  # host: a scalar exponent given as a number


def dual_exponent(p):
    """q = p / (p - 1), the Hoelder conjugate of p (a number or a tensor)."""
    return p / (p - 1)


def lp_norm(A: torch.Tensor, p) -> torch.Tensor:
    r"""Entrywise ||A_k||_p of every trial, shape (K,), computed as m ||A/m||_p with m = max|A|
    (no underflow or overflow of |A|^p); 0 for a zero block."""
    size = A.flatten(1).abs()
    peak = size.amax(1)
    safe = torch.where(peak > 0, peak, 1.0)
    e = _exponent(p, size)
    return peak * ((size / safe[:, None]) ** e).sum(1) ** (1.0 / _exponent(p, peak))


def potential(W: torch.Tensor, p) -> torch.Tensor:
    r"""psi(W) = (1/p) ||W||_p^p per trial, shape (K,)."""
    e = _exponent(p, W)
    return (W.abs() ** e / e).flatten(1).sum(1)


def mirror_map(W: torch.Tensor, p) -> torch.Tensor:
    r"""grad psi(W) = sign(W) |W|^(p-1), entrywise."""
    return torch.sign(W) * W.abs() ** (_exponent(p, W) - 1)


def inverse_mirror_map(Theta: torch.Tensor, p) -> torch.Tensor:
    r"""(grad psi)^-1(Theta) = sign(Theta) |Theta|^(1/(p-1)), entrywise."""
    return torch.sign(Theta) * Theta.abs() ** (1.0 / (_exponent(p, Theta) - 1))


def _inner(A, B):
    return (A * B).flatten(1).sum(1)


def bregman(A: torch.Tensor, B: torch.Tensor, p) -> torch.Tensor:
    r"""D_psi(A, B) = (1/p)||A||_p^p + ((p-1)/p)||B||_p^p - <grad psi(B), A> per trial, (K,)."""
    e = _exponent(p, A)
    terms = A.abs() ** e / e + (e - 1) / e * B.abs() ** e - mirror_map(B, p) * A
    return terms.flatten(1).sum(1)


def directional_bregman(reference: torch.Tensor, W: torch.Tensor, p) -> torch.Tensor:
    r"""D_psi(R/||R||_p, W/||W||_p) = 1 - <grad psi(W/||W||_p), R/||R||_p> per trial, (K,):
    the divergence of the direction of W from that of the reference R (in [0, 2])."""
    def unit(A):
        return A / per_trial(lp_norm(A, p), A)

    return 1.0 - _inner(mirror_map(unit(W), p), unit(reference))


class MirrorDescent(Step):
    r"""The l_p mirror-descent step of the module docstring for ``model``:
    ``step(t, params) -> params``.

    ``p`` (> 1) and ``eta`` (> 0): numbers or one value per trial.  ``normalized``: divide each
    block's gradient by its dual norm ||.||_q.  ``name`` labels the run in error messages.
    """

    def __init__(self, model: Model, p, eta, *, normalized: bool = False, name: str | None = None):
        self.model = model
        like, K = model.data_tensor(), model.trial_count()
        self.p = self._setting("p", p, K, like)
        self.eta = self._setting("eta", eta, K, like)
        if bool(torch.any(torch.as_tensor(self.p) <= 1)):  # host: construction (validating p)
            raise DeclarationError(f"mirror descent needs p > 1, got {p}")
        if bool(torch.any(torch.as_tensor(self.eta) <= 0)):  # host: construction (validating eta)
            raise DeclarationError(f"mirror descent needs eta > 0, got {eta}")
        model.require_entrywise("mirror descent")
        self.normalized = normalized
        self.name = name or ("normalized_" if normalized else "") + "mirror_descent"

    @staticmethod
    def _setting(name, value, K, like):
        if isinstance(value, (list, tuple)) or isinstance(value, torch.Tensor) and value.dim() > 0:
            tensor = torch.as_tensor(value, dtype=like.dtype, device=like.device)
            if tensor.shape != (K,):
                raise DeclarationError(f"mirror descent setting {name!r}: {tensor.numel()} values "
                                       f"for {K} trials")
            return tensor
        return float(value)  # host: construction (a scalar setting)

    def _move(self, g):
        """The dual-space move eta * (gradient or normalized gradient) of one block."""
        eta = self.eta if isinstance(self.eta, float) else per_trial(self.eta, g.direction)
        if self.normalized:
            q = dual_exponent(self.p)
            norm = lp_norm(g.direction, q)
            inv = torch.where(norm > 0, 1.0 / torch.where(norm > 0, norm, 1.0), 0.0)
            return eta * per_trial(inv, g.direction) * g.direction
        scale = torch.exp(g.log_scale)          # 0 where the gradient is exactly 0
        return eta * per_trial(scale, g.direction) * g.direction

    def __call__(self, t: int, params):
        grads = self.model.scaled_gradient(params)
        new = dict(params)
        for b, g in grads.items():
            theta = mirror_map(params[b], self.p) - self._move(g)
            moved = per_trial(g.log_scale > -torch.inf, g.direction)
            new[b] = torch.where(moved, inverse_mirror_map(theta, self.p), params[b])
        return new


# mirror descent, plain and normalized, p below and above 2, in the conformance suite
register_optimizer("mirror_p1_5")(lambda model: MirrorDescent(model, 1.5, 0.3))
register_optimizer("mirror_p3")(lambda model: MirrorDescent(model, 3.0, 0.3))
register_optimizer("mirror_p1_75_normalized")(lambda model: MirrorDescent(model, 1.75, 0.1, normalized=True))
