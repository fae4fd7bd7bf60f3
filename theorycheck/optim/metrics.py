r"""Quantities measured along trajectories of any model, batched over trials.

A metric is a callable ``metric(it: Iterate) -> Tensor`` of shape (K, ...).  Norms, inner
products, alignment and displacement take the geometry of the block they measure (Frobenius
unless given).  A run may step in another representation of the model than the plain blocks
(`theorycheck.models.base.Model.cheapest`, e.g. coefficients over the span of the data); the
metrics here measure in the run's own coordinates (``it.coordinates`` with the geometry and
`~theorycheck.models.base.Model.representer` of ``it.model``), so they cost what a step costs,
while a metric that reads the plain blocks (``it.params``, ``it.W``) gets them expanded.
"""
from __future__ import annotations

from functools import cached_property
from typing import Mapping

import torch

from theorycheck.models.base import FROBENIUS, Geometry, Model
from theorycheck.errors import InvalidInputError, UnknownNameError

__all__ = ["Iterate", "frobenius_norm", "inner", "alignment", "relative_error", "displacement",
           "once_per_iterate", "standard_metrics"]


class Iterate:
    """The iterate theta_t at iteration ``t`` and the optimizer's next iterate theta_{t+1}.

    ``coordinates`` and ``next_coordinates`` hold them as the run steps them, in the
    representation ``model`` (None: the plain blocks); ``params`` and ``next`` are the plain
    blocks (``model.dense``, expanded on first use); ``it.W`` is ``it.params["W"]``.
    `norm`, `inner` and `alignment` measure in the run's coordinates."""

    def __init__(self, t: int, coordinates: Mapping[str, torch.Tensor],
                 next_coordinates: Mapping[str, torch.Tensor], model: Model | None = None):
        self.t, self.coordinates, self.next_coordinates, self.model = t, coordinates, next_coordinates, model

    @cached_property
    def params(self) -> Mapping[str, torch.Tensor]:
        return self.coordinates if self.model is None else self.model.dense(self.coordinates)

    @cached_property
    def next(self) -> Mapping[str, torch.Tensor]:
        return self.next_coordinates if self.model is None else self.model.dense(self.next_coordinates)

    @cached_property
    def step_coordinates(self) -> Mapping[str, torch.Tensor]:
        """theta_{t+1} - theta_t in the run's coordinates (formed once: the model keeps products
        keyed by the tensor)."""
        return {b: self.next_coordinates[b] - v for b, v in self.coordinates.items()}

    def __getattr__(self, block):
        if block.startswith("_") or block in ("t", "coordinates", "next_coordinates", "model"):
            raise AttributeError(block)
        if block in self.coordinates:
            return self.params[block]
        raise AttributeError(f"iterate has no attribute or parameter block {block!r}")

    def geometry(self, block: str) -> Geometry:
        """The geometry of ``block``'s coordinates in the run's representation."""
        return FROBENIUS if self.model is None else self.model.geometry(block)

    def norm(self, block: str, of: str = "params") -> torch.Tensor:
        r"""||theta_t|| of ``block`` (``of="step"``: ||theta_{t+1} - theta_t||), shape (K,)."""
        return self.geometry(block).norm(self._vector(block, of))

    def inner(self, block: str, value: torch.Tensor, of: str = "params") -> torch.Tensor:
        r"""<theta_t, value>_F of ``block`` (``of="step"``: of theta_{t+1} - theta_t) for a plain
        tensor ``value`` (K, ...) of the block's shape, shape (K,).  The model computes the
        representer of ``value`` once per tensor object: pass the same object at every
        checkpoint (not a fresh view or copy)."""
        r = value if self.model is None else self.model.representer(block, value)
        return (self._vector(block, of) * r).flatten(1).sum(1)

    def alignment(self, block: str, value: torch.Tensor, of: str = "params") -> torch.Tensor:
        r"""al(theta_t, value) = <theta_t, value>/(||theta_t|| ||value||_F) of ``block``
        (``of="step"``: of theta_{t+1} - theta_t), shape (K,)."""
        return self.inner(block, value, of) / (self.norm(block, of) * frobenius_norm(value))

    def _vector(self, block, of):
        if of == "params":
            return self.coordinates[block]
        if of == "step":
            return self.step_coordinates[block]
        raise InvalidInputError(f"of={of!r}: use 'params' or 'step'")


def frobenius_norm(A):
    r"""||A_k||_F for every trial k, shape (K,)."""
    return FROBENIUS.norm(A)


def inner(A, B, geometry: Geometry = FROBENIUS):
    r"""<A_k, B_k> in ``geometry`` for every trial k, shape (K,)."""
    return geometry.inner(A, B)


def alignment(A, B, geometry: Geometry = FROBENIUS):
    r"""al(A, B) = <A, B>/(||A|| ||B||) per trial in ``geometry``; A, B of equal shape (K, ...)."""
    return geometry.inner(A, B) / (geometry.norm(A) * geometry.norm(B))


def relative_error(A, B, geometry: Geometry = FROBENIUS):
    r"""||A_k - B_k|| / ||B_k|| for every trial k in ``geometry``, shape (K,)."""
    return geometry.norm(A - B) / geometry.norm(B)


def displacement(model: Model):
    r"""The metric ||theta_{t+1} - theta_t|| = sqrt(sum_b ||theta_{t+1,b} - theta_{t,b}||_b^2)
    over the blocks of ``model`` in their geometries, shape (K,)."""

    def measure(it):
        it = _bound(it, model)
        return torch.sqrt(sum(it.norm(b, of="step") ** 2 for b in model.blocks))

    return measure


def once_per_iterate(fn):
    """``fn(it)``, evaluated once per `Iterate`: the metrics of one checkpoint that call the
    returned function share a single evaluation (the last one is kept until the next)."""
    last = {}

    def shared(it):
        if last.get("it") is not it:
            last.clear()
            last.update(it=it, value=fn(it))
        return last["value"]

    return shared


def standard_metrics(model: Model, refs: Mapping[str, torch.Tensor] | None = None,
                     iterates: bool = False, **model_options):
    r"""The usual metrics as a dict name -> callable (each returns a (K, ...) tensor).

    For every block b: "b_norm" ||theta_b||; "displacement" ||theta_{t+1} - theta_t||; the
    model's own metrics (``model.metrics(**model_options)``: at least "log_loss").  With
    ``refs`` {b: reference (K, ...)}: "b_alignment" al(theta_b, reference).  With
    ``iterates``: every block itself under its name.
    """
    metrics = {f"{b}_norm": _block_norm(model, b) for b in model.blocks}
    metrics["displacement"] = displacement(model)
    metrics.update(model.metrics(**model_options))
    for b, ref in (refs or {}).items():
        if b not in model.blocks:
            raise UnknownNameError(f"reference for {b!r}, but the model's blocks are {model.blocks}")
        metrics[f"{b}_alignment"] = _block_alignment(model, b, ref)
    if iterates:
        metrics.update({b: _block_value(b) for b in model.blocks})
    return metrics


def _bound(it, model):
    """``it`` measured in ``model``'s coordinates where the run did not say its own model."""
    return it if it.model is not None else Iterate(it.t, it.coordinates, it.next_coordinates, model)


def _block_norm(model, b):
    return lambda it: _bound(it, model).norm(b)


def _block_alignment(model, b, ref):
    return lambda it: _bound(it, model).alignment(b, ref)


def _block_value(b):
    return lambda it: it.params[b]
