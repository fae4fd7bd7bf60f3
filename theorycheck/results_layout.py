"""The layout of a run's ``results.json``, in one place: its file name, the ids of its cases
and units, the measurement names of recorded maps, its schema and its reader.

Every module that builds or reads a results document takes these names from here
(``theorycheck.report.results`` assembles the document, ``history`` digests it, ``shards``
plans from it, the report renders it).  This module imports nothing heavier than
``jsonschema`` (and that only to validate), so the command line and the core can use it
without numpy, scipy or matplotlib.

* A **case** is the claim's own run or one of its controls: its *variant* is
  :data:`CLAIM_VARIANT` or ``"control-<name>"`` (:func:`variant_id`), which is also its
  pytest parametrization id.
* A **unit** is a claim function with all its cases, ``path/to/test_file.py::function``
  (:func:`unit_of` of a pytest node id, :func:`claim_unit` of a results entry): what a shard
  or a worker runs together.
* A recorded map is the measurement ``MAP_PREFIX + name`` (:func:`map_names`,
  :func:`map_records`).
* :func:`load_results` reads a results file and checks it against ``report/schema.json``
  (:func:`validate_results`).
"""
from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Iterator

from .errors import InvalidInputError
from .files import read_json

__all__ = ["RESULTS_FILE", "SCHEMA_VERSION", "SCHEMA_PATH", "CLAIM_VARIANT", "MAP_PREFIX",
           "variant_id", "unit_of", "claim_unit", "cases_of", "shared_runs_of", "map_names", "map_records",
           "results_file", "load_results", "read_results", "validate_results"]

#: the name of a run's results document in its run folder
RESULTS_FILE = "results.json"
#: bumped whenever a field is added, removed or changes meaning
SCHEMA_VERSION = 5
#: the JSON Schema of the document (shipped with the package; ``theorycheck schema`` prints it)
SCHEMA_PATH = Path(__file__).with_name("report") / "schema.json"
#: the variant (and pytest parametrization id) of a claim's own case
CLAIM_VARIANT = "claim"
#: the measurement name of a recorded map is ``MAP_PREFIX + name`` (:mod:`theorycheck.maps`)
MAP_PREFIX = "map: "


def variant_id(control: str | None) -> str:
    """The variant of a case: :data:`CLAIM_VARIANT` for the claim's own (``control`` None),
    ``"control-<name>"`` for its control ``name``."""
    return CLAIM_VARIANT if control is None else f"control-{control}"


def unit_of(nodeid: str) -> str:
    """The unit of a pytest node id: ``path::function`` without the parametrization."""
    return nodeid.split("[", 1)[0]


def claim_unit(claim: dict) -> str | None:
    """The unit (pytest node id of the claim function, without parametrization) of a results
    entry or claim spec from its ``module`` and ``function`` (a method's class becomes a node
    id part, as pytest names it); None when either is missing."""
    module, function = claim.get("module"), claim.get("function")
    if not (module and function):
        return None
    return f"{PurePosixPath(*module.split('.'))}.py::{function.replace('.', '::')}"


def cases_of(claim: dict) -> tuple[dict, ...]:
    """A results entry's cases: the claim's own, then its controls'."""
    return (claim, *claim.get("controls", []))


def shared_runs_of(claim: dict) -> list[dict]:
    """The shared-run records of a claim's case and its controls, in order."""
    return [used for case in cases_of(claim) for used in case.get("shared_runs", [])]


def map_names(case: dict) -> list[str]:
    """The names of the maps a case recorded: its measurements named ``MAP_PREFIX + name``."""
    return [key[len(MAP_PREFIX):] for key in case.get("measurements") or {}
            if key.startswith(MAP_PREFIX)]


def map_records(case: dict) -> Iterator[tuple[str, dict]]:
    """(name, record) of every map record (:func:`theorycheck.maps.record_map`: a mapping with
    its ``map`` kind) among a case's measurements."""
    for name in map_names(case):
        record = case["measurements"][MAP_PREFIX + name]
        if isinstance(record, dict) and "map" in record:
            yield name, record


def results_file(path: str | Path) -> Path:
    """The results file ``path`` names: a run folder's :data:`RESULTS_FILE`, or the file."""
    path = Path(path)
    return path / RESULTS_FILE if path.is_dir() else path


def read_results(path: str | Path) -> dict:
    """The results document at ``path`` (a file or a run folder) *without* the schema check,
    for a reader that tolerates any shape and must stay fast on a large run (the check of a
    full run's file takes seconds): a :class:`theorycheck.files.BadFileError` naming the file
    when it is missing, unreadable, not JSON or not a JSON object with a list of claims."""
    return read_json(results_file(path), "results file", check=_claims_problem)


def _claims_problem(document) -> str | None:
    if not isinstance(document, dict) or not isinstance(document.get("claims"), list):
        return "not a results document (no list of claims)"
    return None


def load_results(path: str | Path) -> dict:
    """Read a results.json (or a run folder's) and check it against the schema: a
    :class:`theorycheck.files.BadFileError` naming the file when it is missing, unreadable or
    not JSON, an :class:`InvalidInputError` naming the place where it does not fit."""
    results = read_json(results_file(path), "results file")
    validate_results(results)
    return results


def validate_results(results: dict) -> None:
    """Raise :class:`InvalidInputError` naming the first place where ``results`` breaks the
    schema."""
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    try:
        jsonschema.validate(results, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "<root>"
        raise InvalidInputError(f"results.json does not fit the schema at {where}: {exc.message}") from None
