"""One shared run outside pytest, with the settings a claim run uses: ``theorycheck run``.

``run_shared(target, tier=..., seed=..., device=...)`` resolves ``module:function`` (a
function declared with :func:`theorycheck.shared_run`), applies the runtime's settings (float64,
TF32 off, one CPU thread by default, freed memory kept; `Runtime.apply_torch_settings`) and
returns the run's value through the same disk cache the claims use.  :func:`summarize` lists
what the value holds (nested dicts, lists, dataclasses; arrays and tensors by shape, dtype and
range) and :func:`arrays_of` flattens its arrays for ``numpy.savez``.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .cache import SharedRun, SharedRunCache, DiskCache, default_cache_dir
from .errors import UsageError
from .runtime import Runtime

__all__ = ["resolve_shared_run", "run_shared", "summarize", "arrays_of", "parse_config"]


def resolve_shared_run(target: str) -> SharedRun:
    """``"claims.jta24.joint:joint_runs"`` (or ``claims/jta24/joint.py:joint_runs``) -> the
    declared :class:`~theorycheck.cache.SharedRun`; the current folder is importable."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{target!r}: expected MODULE:FUNCTION, e.g. claims.jta24.joint:joint_runs")
    if module_name.endswith(".py"):
        module_name = ".".join(Path(module_name).with_suffix("").parts)
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UsageError(f"{target!r}: cannot import {module_name!r} ({exc}); run from the "
                         "project's root") from None
    if not hasattr(module, attr):
        runs = sorted(k for k, v in vars(module).items() if isinstance(v, SharedRun))
        raise UsageError(f"{target!r}: {module_name} has no {attr!r}; its shared runs: {runs}")
    run = getattr(module, attr)
    if not isinstance(run, SharedRun):
        raise UsageError(f"{target!r} is a {type(run).__name__}, not a function declared with "
                         "@theorycheck.shared_run")
    return run


def parse_config(items: list[str]) -> dict[str, Any]:
    """``["eta=0.1", "rule=ngd", "etas=[0.1, 1]"]`` -> config: JSON values, else strings."""
    config = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--set {item!r}: expected NAME=VALUE")
        try:
            config[key] = json.loads(text)
        except json.JSONDecodeError:
            config[key] = text
    return config


def run_shared(target: str, *, tier: str = "quick", seed: int = 0, device: str = "auto",
               dtype: str = "float64", threads: int = 1, config: dict | None = None,
               cache_dir: str | Path | None = None, use_cache: bool = True) -> tuple[Any, dict]:
    """The value of the shared run ``target`` under these settings, and the record of the use
    (name, cache key, config, sizes, seed, source: computed or disk)."""
    run = resolve_shared_run(target)
    runtime = Runtime.from_options(tier=tier, device=device, dtype=dtype, seed=seed, threads=threads)
    runtime.apply_torch_settings()
    disk = DiskCache(Path(cache_dir) if cache_dir else default_cache_dir()) if use_cache else None
    if disk is not None:
        disk.check_adoptable()
    return SharedRunCache(disk).use(run, runtime, config or {})


def _items(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _items(v, f"{path}/{k}" if path else str(k))
    elif isinstance(value, (list, tuple)) and not _is_array(value):
        for i, v in enumerate(value):
            yield from _items(v, f"{path}/{i}" if path else str(i))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _items(getattr(value, f.name), f"{path}/{f.name}" if path else f.name)
    else:
        yield path or "value", value


def _is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(v, (int, float, bool, np.number)) for v in value)


def _as_numpy(value: Any) -> np.ndarray | None:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if _is_array(value) or (isinstance(value, (int, float, np.number)) and not isinstance(value, bool)):
        return np.asarray(value)
    return None


def arrays_of(value: Any) -> dict[str, np.ndarray]:
    """Every array, tensor or number in ``value`` as a numpy array keyed by its path
    (``runs/0/W``), for ``numpy.savez``."""
    return {path: a for path, v in _items(value, "") if (a := _as_numpy(v)) is not None}


def summarize(value: Any, limit: int = 60) -> list[str]:
    """One line per leaf of ``value``: path, then shape, dtype and range of an array or tensor
    (NaNs counted), else the type and a short repr."""
    lines = []
    for path, leaf in _items(value, ""):
        a = _as_numpy(leaf)
        if a is not None and a.ndim > 0 and a.dtype.kind in "fiub":
            finite = a[np.isfinite(a)] if a.dtype.kind == "f" else a
            span = (f" range [{finite.min():.4g}, {finite.max():.4g}]" if finite.size else "")
            nan = a.size - finite.size
            lines.append(f"{path}: {type(leaf).__name__} {a.shape} {a.dtype}{span}"
                         + (f", {nan} non-finite" if nan else ""))
        else:
            text = repr(leaf)
            lines.append(f"{path}: {type(leaf).__name__} {text[:70]}{'...' if len(text) > 70 else ''}")
    if len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more (--save writes them all)"]
    return lines
