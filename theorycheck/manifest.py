"""The claims manifest: what the last collection found, so that ``theorycheck list`` answers
without importing torch, cvxpy and every claim module.

Every pytest collection in a project (a run, ``--collect-only``, ``theorycheck list``'s own
fallback) writes ``<rootdir>/reports/.manifest.json``: per claim module (its path relative
to the root) the SHA-256 of its source and the claims it declares (``ClaimSpec.to_json``).
Entries of modules that a later, narrower collection did not import are kept while their
files are unchanged.  :func:`read_claims` serves a listing from the manifest only when every
``test_*.py`` file under the asked path is in it with the same hash (a new, changed or removed
claim file makes it stale, and the caller collects instead).
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from .files import BadFileError, WriteError, make_folder, read_json, write_json

__all__ = ["MANIFEST", "MANIFEST_VERSION", "write_manifest", "read_claims", "find_root"]

MANIFEST = Path("reports") / ".manifest.json"
MANIFEST_VERSION = 1


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(root: Path) -> dict:
    """The manifest's module entries under ``root`` ({} when absent, unreadable or older)."""
    try:
        data = read_json(root / MANIFEST, "claims manifest", expect={"version": MANIFEST_VERSION})
    except BadFileError:
        return {}
    modules = data.get("modules")
    return modules if isinstance(modules, dict) else {}


def write_manifest(root: Path, specs, collected_files=()) -> None:
    """Record the claims ``specs`` (ClaimSpec objects imported by a collection) per module file
    under ``root`` -- and the ``collected_files`` that declare none --, keeping unchanged
    entries of modules this collection did not import.  Best effort: a read-only checkout only
    loses the speed-up."""
    root = Path(root).resolve()
    fresh: dict[str, dict] = {}
    for path in map(lambda p: Path(p).resolve(), collected_files):
        if root in path.parents and path.suffix == ".py":
            fresh[path.relative_to(root).as_posix()] = {"sha256": _sha256(path), "claims": []}
    for spec in specs:
        module = sys.modules.get(spec.module)
        filename = getattr(module, "__file__", None)
        if filename is None:
            continue
        path = Path(filename).resolve()
        if root not in path.parents:
            continue
        rel = path.relative_to(root).as_posix()
        entry = fresh.setdefault(rel, {"sha256": _sha256(path), "claims": []})
        entry["claims"].append(spec.to_json())
    kept = {rel: entry for rel, entry in _load(root).items()
            if rel not in fresh and (root / rel).is_file()
            and entry.get("sha256") == _sha256(root / rel)}
    modules = dict(sorted({**kept, **fresh}.items()))
    target = root / MANIFEST
    try:
        make_folder(target.parent)
        write_json(target, {"version": MANIFEST_VERSION, "modules": modules})
    except WriteError:
        return


def find_root(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` that holds a manifest."""
    path = Path(path).resolve()
    for folder in (path, *path.parents):
        if (folder / MANIFEST).is_file():
            return folder
    return None


def read_claims(path: str | Path) -> list[dict] | None:
    """The claims (``ClaimSpec.to_json`` dicts, sorted by id) declared under ``path`` according
    to the manifest, or ``None`` when there is no manifest or it is stale for ``path``."""
    path = Path(path).resolve()
    root = find_root(path)
    if root is None:
        return None
    modules = _load(root)
    files = [path] if path.is_file() else sorted(path.rglob("test_*.py"))
    claims = []
    for file in files:
        rel = file.relative_to(root).as_posix()
        entry = modules.get(rel)
        if entry is None or entry.get("sha256") != _sha256(file):
            return None
        claims += entry["claims"]
    return sorted(claims, key=lambda c: c["id"])
