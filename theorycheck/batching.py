r"""Memory-bounded work over the leading (trial) dimension.

Claims batch their trials along the leading dimension; at the papers' scales one batch of
temporaries can outgrow the memory of the machine.  `chunk_slices` cuts ``range(total)``
into consecutive slices whose temporaries fit a byte budget, and `map_chunks` applies a
function to those slices of its arguments and concatenates the results, so that a
computation done per trial gives the same values in one batch or in chunks.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from theorycheck.errors import DeclarationError

__all__ = ["MEMORY_BUDGET", "chunk_slices", "map_chunks"]

MEMORY_BUDGET = 2 * 2**30
"""Default bytes of temporaries per chunk (2 GiB)."""


def chunk_slices(total: int, item_bytes: float, budget: float = MEMORY_BUDGET, *,
                 balanced: bool = False) -> list[slice]:
    """Consecutive slices covering ``range(total)``, each of at most ``budget // item_bytes``
    items (at least one item, even when a single item exceeds the budget): full slices and a
    remainder, or with ``balanced`` as few slices of sizes that differ by at most one (no small
    remainder: each slice then holds at least half of ``budget // item_bytes`` items, for
    kernels whose rounding differs on very few rows)."""
    if int(total) != total or total < 0:
        raise DeclarationError(f"chunk_slices needs a non-negative integer total, got {total!r}")
    if not item_bytes > 0 or not budget > 0:
        raise DeclarationError(f"chunk_slices needs positive item_bytes and budget, got "
                               f"item_bytes={item_bytes!r}, budget={budget!r}")
    size = max(1, int(budget // item_bytes))
    if balanced:
        parts = -(-int(total) // size)
        return [slice(total * i // parts, total * (i + 1) // parts) for i in range(parts)]
    return [slice(start, min(start + size, total)) for start in range(0, int(total), size)]


def _concatenate(parts: list) -> Any:
    first = parts[0]
    if isinstance(first, dict):
        return {key: _concatenate([p[key] for p in parts]) for key in first}
    if isinstance(first, torch.Tensor):
        return torch.cat(parts)
    return np.concatenate(parts)


def map_chunks(fn: Callable, *arrays, item_bytes: float, budget: float = MEMORY_BUDGET) -> Any:
    r"""``fn(*[a[s] for a in arrays])`` for the `chunk_slices` ``s`` of the common leading
    dimension, concatenated along it; ``fn`` returns an array, a tensor or a dict of them (dicts
    are concatenated key by key).  ``item_bytes`` is the memory ``fn`` needs per leading item."""
    if not arrays:
        raise DeclarationError("map_chunks needs at least one array to split")
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise DeclarationError(f"map_chunks needs arrays of one leading length, got "
                               f"{[tuple(a.shape) for a in arrays]}")
    parts = [fn(*(a[s] for a in arrays)) for s in chunk_slices(lengths.pop(), item_bytes, budget)]
    if not parts:
        raise DeclarationError("map_chunks got arrays with an empty leading dimension")
    return _concatenate(parts)
