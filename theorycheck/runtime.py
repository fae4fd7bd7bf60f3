"""Run-wide settings: tier, device, dtype, base seed; seed derivation.

A run is reproducible from its base seed: every random stream a claim uses is seeded by
a hash of ``(base seed, claim id, stream name)`` (the benchopt convention), so adding a
claim or reordering tests never changes another claim's numbers, and a control of a claim
sees the same data as the claim itself.  Nothing is seeded globally.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import UsageError

__all__ = ["Runtime", "RuntimeConfigError", "OnRuntime", "TIERS", "DEVICES", "DTYPES",
           "resolve_device", "keep_freed_memory", "release_freed_memory", "derive_seed", "generator",
           "default_options_from_env", "parse_count", "MAX_SEED", "MAX_THREADS"]

TIERS = ("quick", "full")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float64", "float32")
#: the largest base seed: seeds are 63-bit (what a numpy int64 and the derived seeds hold)
MAX_SEED = 2**63 - 1
#: the most CPU threads a run may ask for: more than any machine it runs on has cores (torch
#: and the BLAS would start that many threads; an absurd count is refused, not attempted)
MAX_THREADS = 1024


class RuntimeConfigError(UsageError):
    """An unknown or unusable tier, device or dtype was asked for."""


def _choose(kind: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise RuntimeConfigError(f"unknown {kind} {value!r}; choose one of {', '.join(allowed)}")
    return value


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cuda`` without a GPU is an error."""
    import torch

    _choose("device", requested, DEVICES)
    has_cuda = torch.cuda.is_available()
    if requested == "auto":
        return "cuda" if has_cuda else "cpu"
    if requested == "cuda" and not has_cuda:
        raise RuntimeConfigError("device 'cuda' was requested but torch.cuda.is_available() "
                                 "is False (CPU-only torch build or no GPU visible)")
    return requested


@dataclass(frozen=True)
class Runtime:
    """The settings every claim of one run shares."""

    tier: str = "quick"
    device: str = "cpu"
    dtype: str = "float64"
    seed: int = 0
    threads: int = 1
    #: a check that cannot discriminate (a decision carrying warnings) fails the case
    strict: bool = False

    def __post_init__(self):
        _choose("tier", self.tier, TIERS)
        _choose("device", self.device, ("cpu", "cuda"))
        _choose("dtype", self.dtype, DTYPES)
        _check_count("seed", self.seed, 0, MAX_SEED)
        _check_count("threads", self.threads, 1, MAX_THREADS)

    @classmethod
    def from_options(cls, tier: str, device: str, dtype: str, seed: int, threads: int,
                     strict: bool = False) -> "Runtime":
        return cls(tier=_choose("tier", tier, TIERS), device=resolve_device(device),
                   dtype=_choose("dtype", dtype, DTYPES), seed=seed, threads=threads,
                   strict=strict)

    @property
    def torch_dtype(self):
        import torch

        return getattr(torch, self.dtype)

    def apply_torch_settings(self) -> None:
        """Float64 by default, TF32 off on CUDA, a fixed number of CPU threads, freed memory
        kept for reuse (`keep_freed_memory`).

        Tiny batched problems run many times faster with one thread than with two
        (thread hand-off dominates), hence ``threads=1`` by default.  The limit covers torch
        and the BLAS/OpenMP pools under numpy and scipy (least squares, cvxpy's solvers):
        with several pytest-xdist workers, each worker's default of one thread per core
        oversubscribes the machine.
        """
        import torch
        from threadpoolctl import threadpool_limits

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_num_threads(self.threads)
        threadpool_limits(limits=self.threads)
        keep_freed_memory()

    def to_json(self) -> dict:
        """The settings a results document records: every one a shared run's cache key holds
        (:func:`theorycheck.cache.cache_key`), so that the run can be repeated -- or its shared
        runs computed ahead (:func:`theorycheck.shards.warm_commands`) -- into entries it reads."""
        return {"tier": self.tier, "device": self.device, "dtype": self.dtype, "seed": self.seed,
                "threads": self.threads}


#: glibc's mallopt parameters M_TRIM_THRESHOLD and M_MMAP_THRESHOLD, and the values set
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
TRIM_THRESHOLD, MMAP_THRESHOLD = 2 ** 31 - 1, 2 ** 30


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep and reuse freed memory (True where set, False on other C libraries).

    A training step frees its large temporaries and allocates them again in the next step.
    By default glibc serves blocks above its mmap threshold (at most 32 MiB) by a fresh mmap
    and gives freed memory above the trim threshold back to the system, so every step
    page-faults its temporaries in again, which can cost more system time than the step's
    arithmetic (measured in BENCHMARKS.md).  Here blocks up to `MMAP_THRESHOLD` come from the
    heap and freed memory is kept up to `TRIM_THRESHOLD`.  The cost: a process keeps the
    memory of its peak until it exits.  Computed values do not change."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def release_freed_memory() -> bool:
    """Give the C library's free memory back to the system (glibc: ``malloc_trim(0)``, which
    also releases the free pages inside the heap).  Under `keep_freed_memory` a computation's
    freed temporaries otherwise stay resident, and the next computation's arrays of other sizes
    do not fit the holes they leave: the resident set grows by each phase's temporaries (glls24
    Claim G.1's nine networks left 3 GB behind at a third of the full widths).  Called between
    computations (a shared run, a claim case), never per step.  False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def reset_peak_memory() -> bool:
    """`release_freed_memory`, then reset the process's resident high-water mark (Linux: ``5``
    into ``/proc/self/clear_refs``), so that :func:`peak_memory_mb` reads the peak since this
    call.  False where unsupported.  (The reset also resets what ``getrusage``'s ``ru_maxrss``
    and ``/usr/bin/time -v`` read: in a run of several cases they report the last case's peak.)"""
    if not release_freed_memory():
        return False
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_memory_mb() -> float | None:
    """The process's resident high-water mark in MiB (``VmHWM``; since the last
    :func:`reset_peak_memory`), or None where the system does not report it."""
    try:
        with open("/proc/self/status") as status:
            line = next((row for row in status if row.startswith("VmHWM:")), None)
    except OSError:
        return None
    return None if line is None else round(int(line.split()[1]) / 1024, 1)


class OnRuntime:
    """Placement shared by the contexts that carry a :class:`Runtime` as ``self.runtime``: the
    tier, the torch device and dtype, and tensors placed there."""

    runtime: Runtime

    @property
    def tier(self) -> str:
        return self.runtime.tier

    @property
    def device(self):
        import torch

        return torch.device(self.runtime.device)

    @property
    def dtype(self):
        return self.runtime.torch_dtype

    def tensor(self, value):
        """``value`` as a torch tensor on the run's device with the run's dtype."""
        import torch

        return torch.as_tensor(value, dtype=self.dtype, device=self.device)


def derive_seed(base_seed: int, *keys: object) -> int:
    """A 63-bit seed from a hash of the base seed and any keys (claim id, stream, replicate)."""
    text = "\x1f".join([str(base_seed), *map(str, keys)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def generator(base_seed: int, *keys: object) -> np.random.Generator:
    """An independent numpy Generator for the stream named by ``keys``."""
    return np.random.default_rng(derive_seed(base_seed, *keys))


def default_options_from_env() -> dict:
    """Defaults for the pytest options, overridable by ``THEORYCHECK_*`` environment variables.

    Values are returned as given (strings); :func:`parse_count` turns a seed or a thread
    count into an integer with an error that names where the value came from."""
    return {
        "tier": os.environ.get("THEORYCHECK_TIER", "quick"),
        "device": os.environ.get("THEORYCHECK_DEVICE", "auto"),
        "dtype": os.environ.get("THEORYCHECK_DTYPE", "float64"),
        "seed": os.environ.get("THEORYCHECK_SEED", "0"),
    }


def _check_count(what: str, value: object, minimum: int, maximum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= maximum:
        raise RuntimeConfigError(f"{what} must be an integer from {minimum} to {maximum}, "
                                 f"got {_shown(value)}")


def _shown(value: object) -> str:
    """``repr(value)``, shortened when long (a 5,000-digit seed is named by its length)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def parse_count(source: str, value: object, minimum: int, maximum: int) -> int:
    """``value`` (an int or its decimal string) as an integer in ``[minimum, maximum]``; a
    :class:`RuntimeConfigError` naming ``source`` (an option or environment variable)
    otherwise."""
    text = str(value).strip()
    digits = len(str(maximum))
    if not re.fullmatch(r"[+]?\d{1,%d}" % digits, text) or not minimum <= int(text) <= maximum:
        raise RuntimeConfigError(f"{source}={_shown(value)}: expected an integer from {minimum} "
                                 f"to {maximum}")
    return int(text)
