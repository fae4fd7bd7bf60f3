"""Every file theorycheck reads or writes goes through here.

* :func:`atomic_write` writes a file whole or not at all: the data goes to a temporary file
  with a unique name in the same folder, is flushed to the disk (``fsync``) and renamed onto
  the target (``os.replace``, atomic on POSIX).  A reader sees the old file or the new one,
  never a truncated one -- also after an interruption, a full disk or a size limit, and with
  several processes writing the same file.  A failed write is a :class:`WriteError` naming the
  path; the temporary file is removed.
* :func:`read_json` reads a JSON document and checks what the caller expects of it (its
  ``kind``/version fields); a missing, unreadable, truncated, too deeply nested or unexpected
  file is a :class:`BadFileError` naming the path and the problem.
* :func:`own_folder` makes a folder theorycheck's before it writes into it: a folder that
  already carries the marker, or is absent or empty, or holds only files theorycheck names
  as its own (``is_own``), gets the marker; a folder holding anything else is refused.  The
  cache and the report write and delete only in folders they own, and only files of their
  own naming.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import InvalidInputError, UsageError

__all__ = ["atomic_write", "write_json", "read_json", "make_folder", "own_folder", "foreign_entry",
           "refuse_foreign", "BadFileError", "WriteError", "is_temporary"]

#: suffix of the temporary files :func:`atomic_write` makes (a name theorycheck owns)
TEMP_SUFFIX = ".tctmp"


class BadFileError(InvalidInputError):
    """A file theorycheck reads is missing, unreadable or not what it should be."""


class WriteError(UsageError):
    """A file or folder theorycheck writes cannot be written (the message names the path)."""


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary file of :func:`atomic_write`."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def make_folder(folder: str | os.PathLike) -> Path:
    """``folder`` and its parents, created when missing; a :class:`WriteError` naming it when
    it cannot be (a file in the way, no permission)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise WriteError(f"cannot make the folder {str(folder)!r}: a file of that name is in "
                         "the way") from None
    except OSError as exc:
        raise WriteError(f"cannot make the folder {str(folder)!r}: {_reason(exc)}") from None
    return folder


def atomic_write(path: str | os.PathLike, data: bytes | str | list[bytes]) -> Path:
    """Write ``data`` (text is UTF-8 encoded; a list of byte strings is written in turn, so that a
    header and a large payload are not joined in memory first) to ``path`` whole or not at all
    (see the module docstring); the folder must exist.  A :class:`WriteError` names ``path`` on
    failure."""
    path = Path(path)
    parts = [data.encode()] if isinstance(data, str) else data if isinstance(data, list) else [data]
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    except OSError as exc:
        raise WriteError(f"cannot write {str(path)!r}: {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            for part in parts:
                handle.write(part)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise WriteError(f"cannot write {str(path)!r}: {_reason(exc)}") from None
        raise
    return path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: read once: setting and resetting the umask per write would race with other threads
_UMASK = _current_umask()


def write_json(path: str | os.PathLike, document: Any, **dumps: Any) -> Path:
    """:func:`atomic_write` of ``json.dumps(document, **dumps)`` (NaN refused unless
    ``allow_nan=True`` is passed)."""
    dumps.setdefault("allow_nan", False)
    return atomic_write(path, json.dumps(document, **dumps))


def read_json(path: str | os.PathLike, kind: str, expect: Mapping[str, Any] | None = None,
              check: Callable[[Any], str | None] | None = None) -> Any:
    """The JSON document at ``path`` (``kind`` names it in messages: "results file", "cost
    sidecar").  ``expect``: top-level fields the document (an object) must carry with these
    values (its kind, its version); ``check``: returns a problem (a string) or None.  Every
    failure -- no file, unreadable, not UTF-8, not JSON, truncated, nested too deeply, not the
    expected document -- is one :class:`BadFileError` naming ``path``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadFileError(f"{kind} {str(path)!r}: no such file") from None
    except IsADirectoryError:
        raise BadFileError(f"{kind} {str(path)!r}: a folder, not a file") from None
    except OSError as exc:
        raise BadFileError(f"{kind} {str(path)!r}: cannot read it ({_reason(exc)})") from None
    except UnicodeDecodeError as exc:
        raise BadFileError(f"{kind} {str(path)!r}: not UTF-8 text ({exc.reason} at byte "
                           f"{exc.start})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = " (truncated?)" if exc.pos >= len(text.rstrip()) else ""
        raise BadFileError(f"{kind} {str(path)!r}: not valid JSON{truncated}: {exc.msg} at "
                           f"line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise BadFileError(f"{kind} {str(path)!r}: nested too deeply to be a theorycheck "
                           "file") from None
    problem = _expectation_problem(document, expect) or (check(document) if check else None)
    if problem:
        raise BadFileError(f"{kind} {str(path)!r}: {problem}")
    return document


def _expectation_problem(document: Any, expect: Mapping[str, Any] | None) -> str | None:
    if not expect:
        return None
    if not isinstance(document, dict):
        return f"expected a JSON object, got {type(document).__name__}"
    for key, value in expect.items():
        if document.get(key) != value:
            return f"expected {key} {value!r}, got {document.get(key)!r}"
    return None


def foreign_entry(folder: str | os.PathLike, marker: str, text: str,
                  is_own: Callable[[Path], bool]) -> Path | None:
    """The first entry of ``folder`` that keeps theorycheck from writing there, or None: None
    when the folder is absent, holds the file ``marker`` starting with ``text``'s first line,
    or holds only entries (relative paths, recursively) that ``is_own`` accepts or that are
    temporary files of :func:`atomic_write`."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    tag = folder / marker
    try:
        if tag.is_file() and tag.read_text(errors="replace").startswith(text.splitlines()[0]):
            return None
    except OSError as exc:
        raise WriteError(f"cannot read {str(tag)!r}: {_reason(exc)}") from None
    return next((p for p in _entries(folder)
                 if not (is_temporary(p.name) or is_own(p.relative_to(folder)))), None)


def refuse_foreign(folder: str | os.PathLike, marker: str, text: str,
                   is_own: Callable[[Path], bool]) -> None:
    """A :class:`WriteError` naming a file of ``folder`` that theorycheck did not make (see
    :func:`foreign_entry`)."""
    foreign = foreign_entry(folder, marker, text, is_own)
    if foreign is not None:
        raise WriteError(f"{str(folder)!r} holds {str(foreign.relative_to(folder))!r}, which "
                         "theorycheck did not make: it writes only into new or empty folders, "
                         "or folders it made; choose another")


def own_folder(folder: str | os.PathLike, marker: str, text: str,
               is_own: Callable[[Path], bool]) -> Path:
    """Make ``folder`` theorycheck's (created when absent) and return it: a folder marked by
    the file ``marker`` (starting with ``text``'s first line) is; an empty one, or one whose
    every entry ``is_own`` accepts, is adopted by writing the marker; any other is a
    :class:`WriteError` naming a file theorycheck did not make (:func:`refuse_foreign`)."""
    folder = make_folder(folder)
    refuse_foreign(folder, marker, text, is_own)
    if not (folder / marker).is_file():
        atomic_write(folder / marker, text)
    return folder


def _entries(folder: Path):
    for parent, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            yield Path(parent, name)
