"""Run history and comparison of runs: the run folders, the ``latest`` pointer, digests of
results and the differences between two runs (``theorycheck diff``, ``--tc-baseline``).

Layout under a report root (``<rootdir>/reports``)::

    runs/<UTC time>-<tier>-seed<seed>[-partial]/   one folder per run (results.json, report)
    latest -> runs/<...>                           the last complete run (a symlink) ...
    LATEST                                         ... and the same as a one-line pointer file
    baseline-<tier>.json                           a committed digest a run is compared with

A *digest* (:func:`digest`) keeps of a results document what a comparison needs and what a
committed baseline should hold: the run's settings and commit, and per claim its outcome,
its scalar measurements and decision values, and its controls' outcomes and values.  Two
digests are compared by :func:`diff_digests`: changed outcomes, values that moved beyond a
relative tolerance, claims present in one run only.
"""
from __future__ import annotations

import errno
import json
import math
import os
import secrets
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from .errors import InvalidInputError, UsageError
from .files import TEMP_SUFFIX, WriteError, atomic_write, make_folder, read_json
from .results_layout import RESULTS_FILE, results_file

__all__ = ["DIGEST_KIND", "run_folder_name", "new_run_dir", "point_latest", "latest_run_dir",
           "git_commit", "digest", "baseline_text", "write_baseline", "load_comparable", "diff_digests", "setting_warnings",
           "format_diff", "RTOL", "ATOL"]

DIGEST_KIND = "theorycheck-digest"
#: default relative tolerance of a comparison: a value that moved by more is listed
RTOL = 0.05
#: values below this magnitude in both runs are round-off, never listed as moved
ATOL = 1e-12
#: longest list of numbers a digest keeps (compared elementwise); longer arrays are dropped
MAX_LIST = 16


# -- run folders ---------------------------------------------------------------------------
def run_folder_name(when: datetime, tier: str, seed: int, partial: bool) -> str:
    """``20261123T230000Z-quick-seed0`` (``-partial`` appended for a partial run)."""
    stamp = when.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{tier}-seed{seed}" + ("-partial" if partial else "")


def _run_path(root: Path, name: str, n: int) -> Path:
    """``root/runs/name`` for ``n == 1``, else with ``.n`` after its time stamp:
    ``20261123T230000Z.2-quick-seed0-partial`` keeps the name's suffixes and sorts after the
    first run of that second."""
    stamp, dash, rest = name.partition("-")
    return Path(root) / "runs" / (name if n == 1 else f"{stamp}.{n}{dash}{rest}")


def new_run_dir(root: Path, name: str, source: Path | None = None) -> Path:
    """A fresh folder ``root/runs/name`` (``.2``, ``.3``, ... after its time stamp when that
    exists, see :func:`_run_path`), made by this call alone: the ``mkdir`` (or, with
    ``source``, the rename of that folder) that succeeds decides, so two processes starting
    in one second get two folders."""
    make_folder(Path(root) / "runs")
    n = 1
    while True:
        candidate = _run_path(root, name, n)
        try:
            if candidate.exists():
                raise FileExistsError(candidate)
            if source is None:
                candidate.mkdir()
            else:
                source.rename(candidate)
            return candidate
        except (FileExistsError, IsADirectoryError, NotADirectoryError):
            n += 1
        except OSError as exc:
            if exc.errno == errno.ENOTEMPTY:
                n += 1
                continue
            raise WriteError(f"cannot make the run folder {str(candidate)!r}: "
                             f"{exc.strerror or exc}") from None


def point_latest(root: Path, run_dir: Path, name: str = "latest") -> None:
    """Point ``root/<NAME>`` (a one-line pointer file, written atomically) and ``root/<name>``
    (a relative symlink, replaced atomically) at ``run_dir`` (``latest`` for the last complete
    run, ``latest-partial`` for the last partial one).  A :class:`WriteError` when the pointer
    file cannot be written; then neither moved.

    A ``latest`` that is a real folder (the layout before run folders existed) is moved into
    ``runs/`` first.  Where symlinks cannot be made, the pointer file alone says which run is
    the latest (:func:`latest_run_dir` reads it first); an existing pointer is never deleted."""
    root = Path(root)
    target = os.path.relpath(run_dir, root)
    latest = root / name
    if latest.is_dir() and not latest.is_symlink():
        stamp = datetime.fromtimestamp(latest.stat().st_mtime, timezone.utc)
        new_run_dir(root, stamp.strftime("%Y%m%dT%H%M%SZ-legacy"), source=latest)
    atomic_write(root / name.upper(), target + "\n")
    temporary = root / f".{name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    try:
        temporary.symlink_to(target, target_is_directory=True)
        os.replace(temporary, latest)
    except OSError:  # no symlinks here (some file systems, Windows without privileges)
        temporary.unlink(missing_ok=True)


def latest_run_dir(root: Path) -> Path | None:
    """The folder of the last complete run under ``root`` (through ``LATEST`` or ``latest``)."""
    root = Path(root)
    pointer = root / "LATEST"
    try:
        run = root / pointer.read_text().strip() if pointer.is_file() else None
    except (OSError, UnicodeDecodeError):
        run = None
    if run is not None and (run / RESULTS_FILE).is_file():
        return run
    if (root / "latest" / RESULTS_FILE).is_file():
        return root / "latest"
    return None


def git_commit(where: Path) -> str | None:
    """``git rev-parse HEAD`` in ``where``, or ``None`` outside a git checkout / without git."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and len(commit) == 40 else None


# -- digests ---------------------------------------------------------------------------------
def _number_or_list(value):
    """A finite-or-not scalar, or a short list of numbers, as kept in a digest; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) or value in ("nan", "inf", "-inf"):
        return value
    if (isinstance(value, list) and 0 < len(value) <= MAX_LIST
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
        return value
    return None


def _decision_values(decision: dict) -> dict:
    """The values of one decision worth comparing: its measured value (a scalar or a short
    list), the worst slack of a bound, the R^2 of a fit."""
    values = {}
    name = decision["name"]
    measured = _number_or_list(decision.get("measured"))
    if measured is not None:
        values[f"{name}: measured"] = measured
    detail = decision.get("detail") or {}
    for key in ("worst_slack", "r2", "max_abs_error"):
        value = _number_or_list(detail.get(key))
        if value is not None:
            values[f"{name}: {key}"] = value
    return values


def _case_values(case: dict, scalars_only: bool = False) -> dict:
    values = {}
    for name, value in sorted((case.get("measurements") or {}).items()):
        kept = _number_or_list(value)
        if kept is not None:
            values[f"measurement {name}"] = kept
    for decision in case.get("decisions") or []:
        values.update({f"{decision.get('role', '')} {k}".strip(): v
                       for k, v in _decision_values(decision).items()})
    if scalars_only:
        values = {k: v for k, v in values.items() if not isinstance(v, list)}
    return values


def digest(results: dict, compact: bool = False) -> dict:
    """What a comparison of runs needs from a results document (see the module docstring).
    ``compact`` (a committed baseline): scalar values of the claims, outcomes of the controls."""
    claims = {}
    for claim in results["claims"]:
        claims[claim["id"]] = {
            "outcome": claim["outcome"],
            "values": _case_values(claim, scalars_only=compact),
            "controls": {k["name"]: {"outcome": k["outcome"],
                                     "values": {} if compact else _case_values(k)}
                         for k in claim["controls"]},
        }
    return {"kind": DIGEST_KIND, "schema_version": results.get("schema_version"),
            "tier": results.get("tier"), "seed": results.get("seed"),
            "dtype": results.get("dtype"), "device": results.get("device"),
            "commit": results.get("commit"), "partial": bool(results.get("partial", False)),
            "claims": claims}


def baseline_text(results: dict) -> str:
    """The compact digest of ``results`` as a baseline file's text: the settings on the first
    line, then one claim per line (sorted keys), so that a refreshed baseline reads as a small
    git diff."""
    data = digest(results, compact=True)
    claims = data.pop("claims")
    body = ",\n".join(f" {json.dumps(cid)}: {json.dumps(claims[cid], sort_keys=True)}"
                      for cid in sorted(claims))
    head = json.dumps(data, sort_keys=True)[:-1]
    return head + ', "claims": {\n' + body + "\n}}\n"


def write_baseline(path: str | Path, results: dict) -> int:
    """Write :func:`baseline_text` of ``results`` to ``path`` (atomically); returns the number
    of claims it holds."""
    atomic_write(path, baseline_text(results))
    return len(results["claims"])


def _case_problem(case) -> str | None:
    """What makes one case of a digest unusable (None: nothing)."""
    if not isinstance(case, dict) or not isinstance(case.get("outcome"), str):
        return "has no outcome"
    values = case.get("values", {})
    if not isinstance(values, dict) or any(_number_or_list(v) is None for v in values.values()):
        return "has values that are not numbers or short lists of numbers"
    return None


def _digest_problem(data: dict) -> str | None:
    """What makes a digest's claims unusable for a comparison (None: nothing)."""
    if not isinstance(data.get("claims"), dict):
        return "a digest without its 'claims' mapping"
    for cid, claim in data["claims"].items():
        problem = _case_problem(claim)
        if problem is None and not isinstance(claim.get("controls", {}), dict):
            problem = "has controls that are not a mapping"
        if problem is None:
            problem = next((f"control {name!r} {why}" for name, control in claim.get("controls", {}).items()
                            if (why := _case_problem(control))), None)
        if problem:
            return f"claim {cid!r} {problem}"
    return None


def load_comparable(path: str | Path) -> dict:
    """A digest from a results.json, a run folder holding one, or a digest file (a baseline);
    a :class:`UsageError` naming the file when it is missing or malformed (also a digest
    whose claims lack an outcome or hold values that are no mapping)."""
    path = results_file(path)
    if not path.is_file():
        raise UsageError(f"no results file at {str(path)!r}")
    try:
        data = read_json(path, "results or digest file")
    except InvalidInputError as exc:
        raise UsageError(str(exc)) from None
    if isinstance(data, dict) and data.get("kind") == DIGEST_KIND:
        problem = _digest_problem(data)
        if problem:
            raise UsageError(f"{path}: {problem}")
        for claim in data["claims"].values():
            claim.setdefault("controls", {})
        return data
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise UsageError(f"{path} is neither a results.json nor a theorycheck digest")
    try:
        return digest(data)
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path}: a claim record lacks {exc}") from None


# -- differences -----------------------------------------------------------------------------
def _rel_change(old, new) -> float | None:
    """The relative change from ``old`` to ``new``: ``|new - old| / |old|``, for lists
    ``max |new - old| / max |old|`` (so one entry near zero does not dominate); ``None`` for
    values that cannot be compared as numbers (a NaN appeared, lengths differ)."""
    if isinstance(old, list) or isinstance(new, list):
        if not (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)):
            return None
        if any(isinstance(v, str) for v in old + new):
            return 0.0 if old == new else None
        scale = max(abs(v) for v in old + new)
        if scale <= ATOL:
            return 0.0
        return max(abs(b - a) for a, b in zip(old, new)) / max(max(abs(v) for v in old), ATOL)
    if isinstance(old, str) or isinstance(new, str):
        return 0.0 if old == new else None
    if max(abs(old), abs(new)) <= ATOL:
        return 0.0
    return abs(new - old) / max(abs(old), ATOL)


def _value_changes(cid: str, prefix: str, old: dict, new: dict, rtol: float) -> list[dict]:
    changes = []
    for what in sorted(set(old) & set(new)):
        rel = _rel_change(old[what], new[what])
        if rel is None or rel > rtol:
            changes.append({"id": cid, "what": prefix + what, "old": old[what], "new": new[what],
                            "rel_change": None if rel is None else (rel if math.isfinite(rel)
                                                                    else "inf")})
    return changes


def _case_changes(cid: str, prefix: str, old: dict, new: dict, rtol: float) -> list[dict]:
    changes = []
    if old["outcome"] != new["outcome"]:
        changes.append({"id": cid, "what": prefix + "outcome", "old": old["outcome"],
                        "new": new["outcome"], "rel_change": None})
    return changes + _value_changes(cid, prefix, old.get("values", {}), new.get("values", {}), rtol)


def diff_digests(old: dict, new: dict, *, rtol: float = RTOL, only_new: bool = False) -> list[dict]:
    """Every difference between two digests: ``{id, what, old, new, rel_change}`` per changed
    outcome (claims and controls), per value that moved by more than ``rtol`` relative
    (``rel_change`` ``None`` where the values stopped being comparable numbers), and per claim
    present in one run only (``what`` ``"present"``).  ``only_new``: compare only the claims
    of ``new`` (a partial run against a full baseline)."""
    if not rtol >= 0:
        raise UsageError(f"the relative tolerance must be >= 0, got {rtol!r}")
    changes = []
    old_claims, new_claims = old["claims"], new["claims"]
    ids = sorted(new_claims) if only_new else sorted(set(old_claims) | set(new_claims))
    for cid in ids:
        if cid not in old_claims or cid not in new_claims:
            changes.append({"id": cid, "what": "present", "old": cid in old_claims,
                            "new": cid in new_claims, "rel_change": None})
            continue
        o, n = old_claims[cid], new_claims[cid]
        changes += _case_changes(cid, "", o, n, rtol)
        for name in sorted(set(o["controls"]) | set(n["controls"])):
            if name not in o["controls"] or name not in n["controls"]:
                changes.append({"id": cid, "what": f"control {name}: present",
                                "old": name in o["controls"], "new": name in n["controls"],
                                "rel_change": None})
                continue
            changes += _case_changes(cid, f"control {name}: ", o["controls"][name],
                                     n["controls"][name], rtol)
    return changes


def setting_warnings(old: dict, new: dict) -> list[str]:
    """Why two runs' numbers are not expected to agree (different seed, tier, dtype, device)."""
    notes = []
    for key in ("seed", "tier", "dtype", "device"):
        if old.get(key) != new.get(key):
            notes.append(f"the {key}s differ ({old.get(key)} vs {new.get(key)}): values move "
                         + ("with the sampling of the instances" if key == "seed"
                            else "with the settings") + ", not only with the code")
    return notes


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value[:4]) + (", ...]" if len(value) > 4 else "]")
    return str(value)


def format_diff(changes: list[dict], *, limit: int | None = None) -> list[str]:
    """One line per change: outcome changes first, then moved values by size of the move; at
    most ``limit`` of them (``limit >= 0``; a :class:`UsageError` otherwise)."""
    if limit is not None and limit < 0:
        raise UsageError(f"limit must be >= 0 (the number of changes to print), got {limit}")

    def order(c):
        rel = c["rel_change"]
        return (c["what"].endswith("outcome") is False, -(rel if isinstance(rel, float) else math.inf))

    lines = []
    for c in sorted(changes, key=order)[:limit]:
        rel = c["rel_change"]
        moved = ("" if not isinstance(rel, float) else f" (moved {rel:.1%})" if rel < 10
                 else f" (moved {rel:.3g} times its old size)")
        lines.append(f"{c['id']}  {c['what']}: {_short(c['old'])} -> {_short(c['new'])}{moved}")
    if limit is not None and len(changes) > limit:
        lines.append(f"... and {len(changes) - limit} more")
    return lines
