"""Shared runs and the on-disk cache of their values (references and trajectories, never
decisions).

A **shared run** is a paper-level computation that several claims (and their controls) use,
e.g. one NGD trajectory on Example 1 feeding Theorem 1 and four lemmas.  It is declared with
:func:`shared_run` and used from a claim with ``tc.use(run, **config)``::

    @shared_run(sizes={"quick": {"n": 6, "steps": 2000}, "full": {"n": 64, "steps": 20000}})
    def e1_ngd(run, *, eta=0.1):
        X = run.tensor(run.rng("example1").standard_normal((run.sizes["n"], 4)))
        ...
        return trajectory

    value = tc.use(e1_ngd, eta=0.1)

A use is answered, in this order, by the process memo (the very object an earlier use in
this process returned), by the disk cache, or by computing the run and storing its value.

**The key** of a use is the sha256 of a canonical encoding of: the run's name
(``module.qualname``) and scope, its configuration (keyword arguments with their defaults
applied), the tier and its sizes, the base seed (none for a run declared ``seeded=False``),
dtype, device and thread count, the
versions of torch, numpy, scipy, cvxpy, clarabel and sympy, and a **code fingerprint**: the
sha256 of every ``.py`` file of the installed ``theorycheck`` package and of the paper package holding
the module that defines the run (``claims/vdt24/``, recursively; for a run outside
``claims``, its module's directory).  Any change of that code
therefore misses the cache; fingerprints are computed once per process and directory.

**On disk** (:class:`DiskCache`) each value is one pickle file ``<root>/<k[:2]>/<k>.pkl``
whose header holds its key and the sha256 of the pickled payload.  Files are written
atomically (:func:`theorycheck.files.atomic_write`), so pytest-xdist workers can share one
cache without locks (two workers computing the same key both write the same value).  An
entry that is truncated, altered, does not unpickle or holds another key's value is never
trusted: a :class:`CacheWarning` names the file, the file is deleted and the value
recomputed.  The cost sidecar ``<k>.cost.json`` is checked likewise (its key, a finite
``cpu_s >= 0``) and ignored with a warning when it fails.  The cache writes only into a
folder it owns (its CACHEDIR.TAG) and deletes only files of its naming.  Only open caches you
wrote yourself: unpickling runs code.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import json
import math
import os
import pickle
import re
import sys
import time
import warnings
from collections import OrderedDict
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .errors import DeclarationError, UsageError
from .files import (TEMP_SUFFIX, BadFileError, WriteError, atomic_write, foreign_entry, make_folder,
                    own_folder, read_json, write_json)
from .runtime import OnRuntime, Runtime, derive_seed, release_freed_memory
from .sizes import check_size_names

__all__ = ["shared_run", "SharedRun", "RunContext", "SharedRunCache", "DiskCache", "CacheInfo",
           "CacheWarning", "canonical", "cache_key", "directory_fingerprint", "cache_from_options",
           "default_cache_dir", "project_root"]

CACHE_DIR_ENV = "THEORYCHECK_CACHE_DIR"
DEFAULT_DIR_NAME = ".theorycheck-cache"
#: bump when the key document or the file layout changes
FORMAT_VERSION = 2
_MAGIC = b"theorycheck-cache-2 "
_DIGEST_LEN = 64
#: https://bford.info/cachedir/ -- marks the root as a cache (backup tools skip it) and lets
#: ``clear`` refuse a directory that is not one
TAG_NAME = "CACHEDIR.TAG"
TAG_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
_TAG_TEXT = TAG_SIGNATURE + "\n# a theorycheck cache of shared runs; `theorycheck cache clear` empties it\n"
VERSIONED_LIBRARIES = ("torch", "numpy", "scipy", "cvxpy", "clarabel", "sympy")


class CacheWarning(UserWarning):
    """A cache entry was discarded (corrupted) or could not be written."""


# -- the key -----------------------------------------------------------------------------------
def canonical(value: Any, where: str) -> Any:
    """A JSON-able, type-tagged image of a configuration value, equal for equal values.

    Scalars (None, bool, int, float, str) stay as they are; lists become lists; tuples
    ``{"tuple": [...]}``; dicts (string keys) ``{"dict": {...}}``; numpy arrays and scalars
    ``{"ndarray": {dtype, shape, sha256 of the bytes}}``; torch tensors ``{"tensor": {...}}``
    likewise.  Anything else raises :class:`UsageError` naming ``where``.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"tuple": [canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise UsageError(f"{where}: dict keys must be strings, got {bad[0]!r}")
        return {"dict": {k: canonical(v, f"{where}[{k!r}]") for k, v in value.items()}}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise UsageError(f"{where}: numpy arrays of Python objects cannot be hashed")
        data = np.ascontiguousarray(array).tobytes()
        return {"ndarray": {"dtype": array.dtype.str, "shape": list(array.shape),
                            "sha256": hashlib.sha256(data).hexdigest()}}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.layout != torch.strided:
            raise UsageError(f"{where}: only dense torch tensors can be hashed, got {value.layout}")
        flat = value.detach().resolve_conj().resolve_neg().cpu().contiguous().reshape(-1)
        data = flat.view(torch.uint8).numpy().tobytes()
        return {"tensor": {"dtype": str(value.dtype), "shape": list(value.shape),
                           "sha256": hashlib.sha256(data).hexdigest()}}
    raise UsageError(f"{where}: unsupported type {type(value).__qualname__}; use JSON-able "
                     "scalars, lists, tuples, dicts with string keys, numpy arrays or torch tensors")


def _python_files(directory: Path):
    """The ``.py`` files under ``directory``, skipping hidden folders, ``__pycache__`` and
    virtual environments."""
    for parent, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"
                   and not os.path.exists(os.path.join(parent, d, "pyvenv.cfg"))]
        for name in files:
            if name.endswith(".py"):
                yield Path(parent, name)


@functools.lru_cache(maxsize=None)
def directory_fingerprint(directory: Path) -> str:
    """sha256 over the relative paths and contents of the ``.py`` files under ``directory``.

    Computed once per process and directory (``directory_fingerprint.cache_clear()`` forgets)."""
    digest = hashlib.sha256()
    for path in sorted(_python_files(directory), key=lambda p: p.relative_to(directory).as_posix()):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@functools.lru_cache(maxsize=None)
def library_versions() -> dict[str, str | None]:
    """Installed versions of the libraries a value may depend on (None: not installed)."""
    versions = {}
    for name in VERSIONED_LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cache_key(run: "SharedRun", runtime: Runtime, config: Mapping[str, Any]) -> str:
    """The sha256 key of ``run`` with canonical ``config`` (see :meth:`SharedRun.bind`)
    under ``runtime``: hex digest of the canonical JSON of everything the value depends on."""
    document = {
        "format": FORMAT_VERSION, "run": run.name, "scope": run.scope, "config": config,
        "tier": runtime.tier, "sizes": canonical(run.sizes_of(runtime.tier), "sizes"),
        "seed": runtime.seed if run.seeded else None, "dtype": runtime.dtype, "device": runtime.device,
        "threads": runtime.threads, "versions": library_versions(), "code": run.code_fingerprint(),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


# -- declaration -------------------------------------------------------------------------------
def _paper_key(module: str) -> str | None:
    """The package name right under ``claims`` in a dotted module name (``claims.vdt24.x`` ->
    ``vdt24``), or None."""
    parts = module.split(".")
    return parts[parts.index("claims") + 1] if "claims" in parts[:-1] else None


def _source_dir(module: str, module_file: str) -> Path:
    """The directory whose code a run's value depends on: the paper package
    (``claims/<paperkey>/``) of a module under ``claims``, else the module's own directory."""
    folder = Path(module_file).resolve().parent
    key = _paper_key(module)
    return next((d for d in (folder, *folder.parents) if d.name == key and d.parent.name == "claims"),
                folder)


@dataclass(frozen=True, eq=False)
class SharedRun:
    """A run declared with :func:`shared_run`; used through ``tc.use(run, **config)``."""

    fn: Callable
    name: str
    scope: str
    sizes: Mapping[str, Mapping[str, Any]]
    source_dir: Path
    signature: inspect.Signature = field(repr=False)
    #: False: the run draws nothing from the base seed (:func:`shared_run`'s ``seeded``)
    seeded: bool = True

    @classmethod
    def declare(cls, fn: Callable, sizes: Mapping | None, scope: str | None,
                seeded: bool = True) -> "SharedRun":
        name = f"{fn.__module__}.{fn.__qualname__}"
        signature = inspect.signature(fn)
        params = list(signature.parameters.values())
        if (not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD)
                or any(p.kind not in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in params[1:])):
            raise DeclarationError(f"shared run {name}: must take the run context as its only "
                                   "positional argument and its configuration keyword-only, "
                                   "e.g. def run(run, *, eta=0.1)")
        if sizes is not None and (set(sizes) != {"quick", "full"}
                                  or not all(isinstance(v, Mapping) for v in sizes.values())):
            raise DeclarationError(f"shared run {name}: sizes must map exactly the tiers 'quick' "
                                   f"and 'full' to dicts (got {sorted(sizes)})")
        sizes = {tier: dict((sizes or {}).get(tier, {})) for tier in ("quick", "full")}
        check_size_names(sizes, f"shared run {name}")
        try:
            canonical(sizes, "sizes")
        except UsageError as exc:
            raise DeclarationError(f"shared run {name}: {exc}") from None
        scope = scope if scope is not None else _paper_key(fn.__module__)
        if not scope:
            raise DeclarationError(f"shared run {name}: its module is not inside a paper package "
                                   "under 'claims', so its scope cannot be inferred; pass scope='...'")
        module_file = getattr(sys.modules.get(fn.__module__), "__file__", None)
        if module_file is None:
            raise DeclarationError(f"shared run {name}: its module has no source file, so its "
                                   "code cannot be fingerprinted; define it in a .py file")
        if not isinstance(seeded, bool):
            raise DeclarationError(f"shared run {name}: seeded must be True or False, got {seeded!r}")
        return cls(fn=fn, name=name, scope=scope, sizes=sizes,
                   source_dir=_source_dir(fn.__module__, module_file), signature=signature,
                   seeded=seeded)

    def __call__(self, *args, **kwargs):
        raise UsageError(f"shared run {self.name} is not called directly; use "
                         f"tc.use({self.fn.__name__}, **config) in a claim")

    def sizes_of(self, tier: str) -> dict:
        return dict(self.sizes[tier])

    def bind(self, config: Mapping[str, Any]) -> dict:
        """The canonical configuration: ``config`` with the function's defaults applied."""
        try:
            bound = self.signature.bind(None, **config)
        except TypeError as exc:
            raise UsageError(f"shared run {self.name}: {exc}") from None
        bound.apply_defaults()
        arguments = list(bound.arguments.items())[1:]
        return {k: canonical(v, f"shared run {self.name}: argument {k!r}") for k, v in arguments}

    def code_fingerprint(self) -> str:
        """sha256 of the fingerprints of the theorycheck package and of ``source_dir``."""
        package = Path(__file__).resolve().parent
        text = directory_fingerprint(package) + directory_fingerprint(self.source_dir)
        return hashlib.sha256(text.encode()).hexdigest()


def shared_run(fn: Callable | None = None, *, sizes: Mapping | None = None, scope: str | None = None,
               seeded: bool = True):
    """Declare a paper-level run that claims share through ``tc.use(run, **config)``.

    ``sizes``: ``{"quick": {...}, "full": {...}}``, the run's sizes per tier (``run.sizes``), named
    in the vocabulary of :mod:`theorycheck.sizes` (a synonym is refused).
    ``scope``: the name its random streams are derived from (``run.rng(*stream)`` is seeded
    by ``(base seed, scope, *stream)``); defaults to the paper key, the package right under
    ``claims`` (``claims/vdt24/_common.py`` -> ``"vdt24"``), so the runs of one paper can
    draw the same data.  The function takes a :class:`RunContext` and keyword-only config.
    ``seeded=False`` declares a run that draws nothing (fixed data, a fixed start, a symbolic
    derivation): it runs with base seed 0 whatever the run's seed, its ``rng`` and ``seed`` and
    the use of a seeded run from it are errors, its cache key leaves the seed out (one value for
    every seed), and the decisions its value alone decides are seed-independent
    (:mod:`theorycheck.calibrate`).
    """
    def decorate(f: Callable) -> SharedRun:
        return SharedRun.declare(f, sizes, scope, seeded)

    return decorate if fn is None else decorate(fn)


@dataclass(frozen=True)
class RunContext(OnRuntime):
    """What a shared run receives: the run's settings, its tier's sizes and seeded streams."""

    runtime: Runtime
    sizes: dict
    scope: str
    cache: "SharedRunCache" = field(repr=False)
    #: the name of the run served, when it is declared ``seeded=False`` (None: a seeded run)
    seedless: str | None = None

    def seed(self, *stream: object) -> int:
        """The seed of a named stream: a hash of (base seed, scope, ``*stream``)."""
        if self.seedless is not None:
            raise UsageError(f"shared run {self.seedless} is declared seeded=False, so it cannot "
                             f"draw the stream {stream!r}: declare it seeded to draw")
        return derive_seed(self.runtime.seed, self.scope, *stream)

    def rng(self, *stream: object) -> np.random.Generator:
        """A numpy Generator seeded by (base seed, scope, ``*stream``)."""
        return np.random.default_rng(self.seed(*stream))

    def use(self, run: SharedRun, **config) -> Any:
        """The value of another shared run, through the same memo and disk cache."""
        if self.seedless is not None and isinstance(run, SharedRun) and run.seeded:
            raise UsageError(f"shared run {self.seedless} is declared seeded=False but uses the "
                             f"seeded run {run.name}: declare both seeded, or both seedless")
        return self.cache.use(run, self.runtime, config)[0]


def _run_context(run: SharedRun, runtime: Runtime, cache: "SharedRunCache") -> RunContext:
    """The context ``run`` computes in: a seedless run's runs at base seed 0, whatever the
    caller's, so that its value cannot depend on the seed even through ``runtime``."""
    if run.seeded:
        return RunContext(runtime, run.sizes_of(runtime.tier), run.scope, cache)
    return RunContext(dataclasses.replace(runtime, seed=0), run.sizes_of(runtime.tier), run.scope,
                      cache, seedless=run.name)


# -- storage -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CacheInfo:
    root: Path
    entries: int
    bytes: int

    def line(self) -> str:
        return f"{self.entries} entries, {self.bytes / 1e6:.1f} MB in {self.root}"


_KEY = re.compile(r"[0-9a-f]{64}")
#: the headers an entry of this or an earlier format starts with (what ``clear`` deletes)
_OWN_MAGICS = (_MAGIC, b"theorycheck-cache-1 ")


def _own_name(relative: Path) -> bool:
    """Whether a path relative to the cache root is named as the cache names its files: a
    two-hex-digit folder, and in it ``<key>.pkl``, ``<key>.cost.json`` or a temporary file of
    one (``<key>.pkl.*.tmp``, the name earlier versions gave them)."""
    parts = relative.parts
    if len(parts) == 1:
        return relative.name == TAG_NAME or re.fullmatch(r"[0-9a-f]{2}", parts[0]) is not None
    name = parts[1]
    stem = name.split(".", 1)[0]
    return (len(parts) == 2 and _KEY.fullmatch(stem) is not None and stem[:2] == parts[0]
            and (name in (f"{stem}.pkl", f"{stem}.cost.json")
                 or (name.startswith(f"{stem}.pkl.") and name.endswith(".tmp"))))


def _cost_problem(document: Any, key: str) -> str | None:
    """Why a cost sidecar cannot be trusted (None: it can)."""
    if not isinstance(document, dict):
        return "not a JSON object"
    if document.get("key") != key:
        return f"it records the cost of key {str(document.get('key'))[:12]!r}, not of {key[:12]!r}"
    cpu = document.get("cpu_s")
    if isinstance(cpu, bool) or not isinstance(cpu, (int, float)) or not math.isfinite(cpu) or cpu < 0:
        return f"cpu_s must be a finite number >= 0, got {cpu!r}"
    return None


class DiskCache:
    """Pickled values, one file per key: ``<root>/<key[:2]>/<key>.pkl``, each starting with a
    header that holds its key and the sha256 of the pickle that follows it.

    The cache writes only into a folder it owns (:func:`theorycheck.files.own_folder`: marked
    by its CACHEDIR.TAG, or new, or empty, or holding only files of its naming) and
    ``clear`` deletes only files of its naming (entries also by their header).  A folder it
    cannot write (read-only, full) leaves it computing without storing, with one warning."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.writable = True

    @classmethod
    def existing(cls, root: str | os.PathLike) -> "DiskCache":
        """The cache at ``root``, which must be a directory holding a theorycheck CACHEDIR.TAG."""
        root = Path(root)
        if not root.exists():
            raise UsageError(f"no cache directory at {str(root)!r}")
        if not root.is_dir():
            raise UsageError(f"{str(root)!r} is not a directory")
        tag = root / TAG_NAME
        if not tag.is_file() or not tag.read_text(errors="replace").startswith(TAG_SIGNATURE):
            raise UsageError(f"{str(root)!r} is not a theorycheck cache (it has no {TAG_NAME})")
        return cls(root)

    def check_adoptable(self) -> None:
        """A :class:`UsageError` when ``root`` is a folder the cache would refuse to write into
        (it holds files the cache did not make and no theorycheck CACHEDIR.TAG)."""
        foreign = foreign_entry(self.root, TAG_NAME, _TAG_TEXT, _own_name)
        if foreign is not None:
            raise UsageError(f"cache directory {str(self.root)!r} holds "
                             f"{str(foreign.relative_to(self.root))!r} and is no theorycheck "
                             f"cache (no {TAG_NAME}): the cache does not write into a folder of "
                             "other files; choose a new or empty one")

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.pkl"

    def load(self, key: str) -> tuple[bool, Any]:
        """``(True, value)`` for a sound entry of ``key``; ``(False, None)`` when there is none,
        it was corrupted, or it holds another key's value (then a CacheWarning names the file,
        which is deleted where the folder allows)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return False, None
        except OSError as exc:
            warnings.warn(CacheWarning(f"theorycheck cache: cannot read {path} ({exc}); recomputing"))
            return False, None
        head = len(_MAGIC) + 2 * _DIGEST_LEN + 2
        stored_key = data[len(_MAGIC):len(_MAGIC) + _DIGEST_LEN].decode("ascii", "replace")
        payload = memoryview(data)[head:]  # a view: the value's pickle is not copied again
        if not data.startswith(_MAGIC) or len(data) < head:
            problem = "no theorycheck header of this version"
        elif stored_key != key:
            problem = f"it holds the entry of key {stored_key[:12]}..., copied over another's file"
        elif data[head - _DIGEST_LEN - 1:head - 1].decode("ascii", "replace") != \
                hashlib.sha256(payload).hexdigest():
            problem = "checksum mismatch (truncated or altered)"
        else:
            try:
                return True, pickle.loads(payload)
            except Exception as exc:  # the bytes are intact but do not unpickle here
                problem = f"cannot unpickle: {type(exc).__name__}: {exc}"
        warnings.warn(CacheWarning(f"theorycheck cache: discarded corrupted entry {path} "
                                   f"({problem}); recomputing"))
        for stale in (path, self.cost_path(key)):
            try:
                stale.unlink(missing_ok=True)
            except OSError:  # a read-only cache: the entry stays, and is never served
                pass
        return False, None

    def cost_path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.cost.json"

    def cost(self, key: str) -> float | None:
        """The process CPU seconds the entry ``key`` took to compute (``store(cpu_s=...)``), or
        None where it was not recorded; a sidecar that cannot be read or trusted (another key's,
        a negative or non-finite ``cpu_s``) is ignored with a :class:`CacheWarning`."""
        path = self.cost_path(key)
        if not path.exists():
            return None
        try:
            document = read_json(path, "cache cost sidecar", check=lambda d: _cost_problem(d, key))
        except BadFileError as exc:
            warnings.warn(CacheWarning(f"theorycheck cache: ignored {exc}"))
            return None
        return float(document["cpu_s"])

    def store(self, key: str, value: Any, label: str, cpu_s: float | None = None) -> None:
        """Pickle ``value`` (the value of ``label``) and write it atomically under ``key``, with
        ``cpu_s`` (what computing it cost) beside it in ``<key>.cost.json``, so that a run that
        reads the entry later still knows its cost.

        A value that cannot be pickled is a :class:`UsageError`; a failed write only warns
        (once: the cache then computes without storing)."""
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise UsageError(f"{label}: its value cannot be pickled for the disk cache "
                             f"({type(exc).__name__}: {exc}); return arrays, tensors, dataclasses "
                             "or containers of them, or run with --tc-no-cache") from None
        if not self.writable:
            return
        path = self.path(key)
        try:
            own_folder(self.root, TAG_NAME, _TAG_TEXT, _own_name)
            make_folder(path.parent)
            atomic_write(path, [_MAGIC + key.encode() + b" " + hashlib.sha256(payload).hexdigest().encode()
                                + b"\n", payload])
            if cpu_s is not None:
                write_json(self.cost_path(key), {"cpu_s": cpu_s, "run": label, "key": key})
        except WriteError as exc:
            self.writable = False
            warnings.warn(CacheWarning(f"theorycheck cache: {exc}; values are computed and not "
                                       "stored for the rest of this process"))

    def entries(self) -> list[Path]:
        """The cache's entries: files of its naming that start with its header."""
        return [p for p in sorted(self.root.glob("??/*.pkl"))
                if _own_name(p.relative_to(self.root)) and _starts_with_magic(p)]

    def info(self) -> CacheInfo:
        """Number of entries, their total size in bytes, and the root."""
        files = self.entries()
        return CacheInfo(self.root, len(files), sum(f.stat().st_size for f in files))

    def clear(self) -> CacheInfo:
        """Delete every entry, its cost sidecar and stale temporary files -- only files of the
        cache's naming, entries only with its header; return what was there."""
        before = self.info()
        sidecars = [p for p in self.root.glob("??/*.cost.json") if _own_name(p.relative_to(self.root))]
        temporary = [p for p in self.root.glob("??/.*" + TEMP_SUFFIX)] + [
            p for p in self.root.glob("??/*.tmp") if _own_name(p.relative_to(self.root))]
        for path in [*self.entries(), *sidecars, *temporary]:
            path.unlink(missing_ok=True)
        for shard in self.root.glob("??"):
            if _own_name(shard.relative_to(self.root)) and shard.is_dir() and not any(shard.iterdir()):
                shard.rmdir()
        return before


def _starts_with_magic(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_MAGIC))
    except OSError:
        return False
    return head in _OWN_MAGICS


class SharedRunCache:
    """The process memo (an LRU of ``memo_size`` values) above an optional :class:`DiskCache`
    (``None``: memo only, as under ``--tc-no-cache``)."""

    def __init__(self, disk: DiskCache | None, memo_size: int = 16):
        self.disk = disk
        self.memo_size = memo_size
        self._memo: OrderedDict[str, Any] = OrderedDict()

    def use(self, run: SharedRun, runtime: Runtime, config: Mapping[str, Any]) -> tuple[Any, dict]:
        """The value of ``run(**config)`` under ``runtime`` and a record of the use:
        ``{"name", "key", "config", "sizes", "seed", "source"}`` with source memo|disk|computed,
        and for a computed value ``cpu_s``, the process CPU seconds it took (shared runs it used
        included); a value read from the disk carries the ``cpu_s`` its computation recorded
        there, when it did."""
        if not isinstance(run, SharedRun):
            raise UsageError(f"use() takes a function declared with @theorycheck.shared_run, "
                             f"got {run!r}")
        canonical_config = run.bind(config)
        key = cache_key(run, runtime, canonical_config)
        record = {"name": run.name, "key": key, "config": canonical_config,
                  "sizes": run.sizes_of(runtime.tier), "seed": runtime.seed if run.seeded else None}
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key], dict(record, source="memo")
        hit, value = self.disk.load(key) if self.disk is not None else (False, None)
        if hit:
            record["source"] = "disk"
            cost = self.disk.cost(key)
            if cost is not None:
                record["cpu_s"] = cost
        else:
            start = time.process_time()
            value = run.fn(_run_context(run, runtime, self), **config)
            record.update(source="computed", cpu_s=round(time.process_time() - start, 4))
            if self.disk is not None:
                self.disk.store(key, value, label=f"shared run {run.name}", cpu_s=record["cpu_s"])
            release_freed_memory()  # its temporaries, before the next computation's of other sizes
        self._memo[key] = value
        while len(self._memo) > self.memo_size:
            self._memo.popitem(last=False)
        return value, record


def cache_from_options(rootdir: Path, invocation_dir: Path, cache_dir: str | None,
                       no_cache: bool) -> SharedRunCache:
    """The cache of a pytest run: ``--tc-no-cache`` -> memo only; else the disk cache at
    ``--tc-cache-dir`` (relative to the invocation directory), ``$THEORYCHECK_CACHE_DIR``,
    or ``<rootdir>/.theorycheck-cache``.  A path that exists but is no directory is a
    :class:`UsageError`; the directory itself is created at the first store."""
    if no_cache:
        return SharedRunCache(None)
    root = Path(invocation_dir) / (cache_dir or default_cache_dir(rootdir))
    if root.exists() and not root.is_dir():
        raise UsageError(f"cache directory {str(root)!r} exists and is not a directory")
    disk = DiskCache(root)
    disk.check_adoptable()
    return SharedRunCache(disk)


#: pytest's configuration files, in the order it looks for them in each folder, and the section
#: that makes one its configuration (None: the file itself does)
PYTEST_CONFIGS = (("pytest.ini", None), (".pytest.ini", None),
                  ("pyproject.toml", r"^\[tool\.pytest(\.ini_options)?\]"), ("tox.ini", r"^\[pytest\]"),
                  ("setup.cfg", r"^\[tool:pytest\]"))


def _is_pytest_config(path: Path, section: str | None) -> bool:
    if not path.is_file():
        return False
    try:
        return section is None or re.search(section, path.read_text(errors="replace"), re.M) is not None
    except OSError:
        return False


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The folder pytest takes for its rootdir when run without arguments in ``start``
    (default: the current folder): the nearest one at or above it holding a pytest
    configuration (:data:`PYTEST_CONFIGS`), else the nearest holding a ``pyproject.toml``,
    else ``start`` itself; ``.`` when that is the current folder."""
    here = Path.cwd()
    start = (here / start) if start is not None else here
    folders = (start, *start.parents)
    found = next((folder for folder in folders for name, section in PYTEST_CONFIGS
                  if _is_pytest_config(folder / name, section)), None)
    found = found or next((f for f in folders if (f / "pyproject.toml").is_file()), start)
    return Path(".") if found == here else found


def default_cache_dir(rootdir: str | os.PathLike | None = None) -> Path:
    """The one default cache directory, of pytest runs and of the command line alike:
    ``$THEORYCHECK_CACHE_DIR``, else ``<rootdir>/.theorycheck-cache``.  ``rootdir``: pytest's
    in a pytest run; for the command line (None) the one pytest would find from the current
    folder (:func:`project_root`).  A relative path is relative to the current folder (a
    pytest run's invocation folder)."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    return Path(rootdir if rootdir is not None else project_root()) / DEFAULT_DIR_NAME
