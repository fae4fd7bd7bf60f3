r"""Quantities measured along trajectories of any model, batched over trials.

A metric is a callable ``metric(it: Iterate) -> Tensor`` of shape (K, ...).  Norms, inner
products, alignment and displacement take the geometry of the block they measure (Frobenius
unless given).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import torch

from theorycheck.models.base import FROBENIUS, Geometry, Model

__all__ = ["Iterate", "frobenius_norm", "inner", "alignment", "relative_error", "displacement",
           "once_per_iterate", "standard_metrics"]


@dataclass(frozen=True)
class Iterate:
    """The iterate theta_t (``params``) at iteration ``t`` and the optimizer's next iterate
    theta_{t+1} (``next``); ``it.W`` is ``it.params["W"]``."""

    t: int
    params: Mapping[str, torch.Tensor]
    next: Mapping[str, torch.Tensor]

    def __getattr__(self, block):
        params = self.__dict__.get("params")
        if params is not None and block in params:
            return params[block]
        raise AttributeError(f"iterate has no attribute or parameter block {block!r}")


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
        squares = [model.geometry(b).norm(it.next[b] - it.params[b]) ** 2 for b in model.blocks]
        return torch.sqrt(sum(squares))

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
            raise KeyError(f"reference for {b!r}, but the model's blocks are {model.blocks}")
        metrics[f"{b}_alignment"] = _block_alignment(model, b, ref)
    if iterates:
        metrics.update({b: _block_value(b) for b in model.blocks})
    return metrics


def _block_norm(model, b):
    return lambda it: model.geometry(b).norm(it.params[b])


def _block_alignment(model, b, ref):
    return lambda it: alignment(it.params[b], ref, model.geometry(b))


def _block_value(b):
    return lambda it: it.params[b]
