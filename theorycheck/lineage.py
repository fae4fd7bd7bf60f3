"""Computation events: where a case's quantities came from (their lineage).

Every claim case (the claim or one of its controls) keeps a log of the *computations* it ran,
each logged where it is made, with the identity of its inputs:

``shared_run``
    ``tc.use(run, **config)``: the run's cache key (name, configuration, tier sizes, base
    seed, code; see :mod:`theorycheck.cache`).
``draw``
    ``tc.rng(*stream)`` or ``tc.seed(*stream)``: the stream's seed, a hash of (base seed,
    claim id, stream name); ``tc.paper_rng(*stream)``: of (base seed, paper, stream name), the
    paper-wide stream its shared runs draw.  A control that asks for the claim's stream gets the claim's
    draw, so it logs the claim's event: a new draw needs a new stream name.
``solver``, ``trajectory``
    a call of a library function declared with :func:`computation` (the solvers of
    :mod:`theorycheck.solvers`, :func:`theorycheck.optim.run_trajectory`, ...): a
    fingerprint of the arguments that define the problem (data, dynamics, initialization),
    not of those that only say what is read or how precisely (metrics, checkpoints,
    tolerances, the number of steps of a run whose prefix is the same run).

An event's ``id`` is a hash of its kind, its name and those input fingerprints, so equal ids
mean the same computation on the same inputs, in any process.  A computation that runs inside
another (a solver inside a shared run or inside a trajectory) is part of the outer one and
is not logged again; neither is anything inside a shared run, whose cache key covers it.

The log is the case's: :func:`recording` makes it the active log while the claim function
runs (the ``@claim`` wrapper does this), and :func:`theorycheck.evidence.evidence_class`
reads the claim's and each control's logs to tell a control that computed something of its
own from one that re-judged its claim's numbers.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import inspect
import re
import types
from typing import Any, Callable, Iterator

import numpy as np

from .errors import DeclarationError

__all__ = ["ComputationLog", "carries_seed", "computation", "fingerprint", "recording", "unrecorded", "KINDS"]

#: the kinds of computation event (see the module docstring)
KINDS = ("shared_run", "draw", "solver", "trajectory")
#: how deep :func:`fingerprint` follows attributes, items and closures before it stops
MAX_DEPTH = 8
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class ComputationLog:
    """The computation events of one case, in the order they were first logged (a repeated
    event -- the same kind, name and inputs -- is kept once, at its first place)."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self._ids: set[str] = set()

    def __len__(self) -> int:
        return len(self.events)

    def seeded_count(self) -> int:
        """How many of the events brought the base seed into the case (:func:`carries_seed`)."""
        return sum(map(carries_seed, self.events))

    def log(self, kind: str, name: str, inputs: dict[str, str], detail: dict | None = None) -> None:
        """Log one event: ``inputs`` maps each defining input to its fingerprint; ``detail``
        (shown in the report, not part of the identity) e.g. a shared run's configuration."""
        if kind not in KINDS:
            raise DeclarationError(f"computation kind {kind!r} is not one of {KINDS}")
        identity = _hash(repr((kind, name, sorted(inputs.items()))))
        if identity in self._ids:
            return
        self._ids.add(identity)
        event = {"kind": kind, "name": name, "id": identity, "inputs": dict(inputs)}
        if detail:
            event["detail"] = detail
        self.events.append(event)


def carries_seed(event: dict) -> bool:
    """Whether a logged event brings the base seed into its case: a ``draw``, or a
    ``shared_run`` not declared ``seeded=False``.  A ``solver`` or ``trajectory`` call is a
    function of its inputs, which are constants or the values of events logged before it; the
    seed reaches a case through nothing else (a claim draws through ``tc.rng`` /
    ``tc.paper_rng``, never from ``tc.runtime.seed``)."""
    if event["kind"] == "draw":
        return True
    return event["kind"] == "shared_run" and event.get("detail", {}).get("seeded", True)


_ACTIVE: contextvars.ContextVar[ComputationLog | None] = contextvars.ContextVar(
    "theorycheck_computation_log", default=None)


@contextlib.contextmanager
def recording(log: ComputationLog | None) -> Iterator[None]:
    """Make ``log`` the active log (``None``: log nothing) for the duration of the block."""
    token = _ACTIVE.set(log)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def unrecorded() -> contextlib.AbstractContextManager:
    """Log nothing inside the block: it is part of a computation already logged."""
    return recording(None)


def computation(kind: str, inputs: tuple[str, ...]) -> Callable[[Callable], Callable]:
    """Declare a library function a computation of ``kind`` whose problem is defined by the
    arguments named in ``inputs``: each call from a claim case logs an event with their
    fingerprints, and the calls it makes in turn are not logged.  The declared function
    carries ``__theorycheck_computation__ = (kind, inputs)``."""
    if kind not in KINDS:
        raise DeclarationError(f"computation kind {kind!r} is not one of {KINDS}")

    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        unknown = [name for name in inputs if name not in signature.parameters]
        if unknown:
            raise DeclarationError(f"{fn.__qualname__}: computation inputs {unknown} are not parameters")
        name = f"{fn.__module__}.{fn.__qualname__}"

        @functools.wraps(fn)
        def logged(*args, **kwargs):
            log = _ACTIVE.get()
            if log is None:
                return fn(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            log.log(kind, name, {k: fingerprint(bound.arguments[k]) for k in inputs})
            with unrecorded():
                return fn(*args, **kwargs)

        logged.__theorycheck_computation__ = (kind, tuple(inputs))
        return logged

    return decorate


def _hash(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:16]


def fingerprint(value: Any) -> str:
    """A short hash of what ``value`` holds: the numbers of arrays and tensors (any device),
    containers item by item, objects by their public attributes, functions by their code,
    defaults and closure, generators by their state; never an object's address, so the
    same inputs give the same fingerprint in any process, however often the objects were
    used before."""
    hasher = hashlib.sha256()
    _feed(hasher, value, 0, set())
    return hasher.hexdigest()[:16]


def _feed(hasher, value: Any, depth: int, seen: set[int]) -> None:
    put = hasher.update
    if depth > MAX_DEPTH:
        put(type(value).__qualname__.encode())
        return
    if hasattr(value, "detach") and hasattr(value, "cpu") and hasattr(value, "dtype"):  # a tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "biufc":
        array = np.ascontiguousarray(value)
        put(f"array{array.shape}{array.dtype.str}".encode())
        put(array.tobytes())
        return
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        put(repr(value).encode())
        return
    if id(value) in seen:
        put(b"<cycle>")
        return
    seen = seen | {id(value)}
    if isinstance(value, (set, frozenset)):  # unordered: the sorted fingerprints of the items
        put(repr(sorted(fingerprint(item) for item in value)).encode())
    elif isinstance(value, (list, tuple)):
        put(f"{type(value).__name__}[".encode())
        for item in value:
            _feed(hasher, item, depth + 1, seen)
        put(b"]")
    elif isinstance(value, dict):
        put(b"{")
        for key in sorted(value, key=repr):
            put(repr(key).encode())
            _feed(hasher, value[key], depth + 1, seen)
        put(b"}")
    elif isinstance(value, np.random.Generator):
        _feed(hasher, value.bit_generator.state, depth + 1, seen)
    elif isinstance(value, functools.partial):
        _feed(hasher, (value.func, value.args, value.keywords), depth + 1, seen)
    elif isinstance(value, types.MethodType):
        _feed(hasher, (value.__func__, value.__self__), depth + 1, seen)
    elif isinstance(value, types.FunctionType):
        _feed_function(hasher, value, depth, seen)
    elif isinstance(value, (types.ModuleType, type, types.BuiltinFunctionType)):
        put(f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', value.__name__)}".encode())
    elif hasattr(value, "get_state") and type(value).__name__ == "Generator":  # torch.Generator
        _feed(hasher, value.get_state(), depth + 1, seen)
    elif hasattr(value, "__dict__") or hasattr(type(value), "__slots__"):
        put(f"{type(value).__module__}.{type(value).__qualname__}(".encode())
        _feed(hasher, _attributes(value), depth + 1, seen)
        put(b")")
    else:
        put(_ADDRESS.sub("", repr(value)).encode())


def _feed_function(hasher, fn: types.FunctionType, depth: int, seen: set[int]) -> None:
    """A function by its name, its code (bytecode and constants), defaults and closure."""
    code = fn.__code__
    hasher.update(f"{fn.__module__}.{fn.__qualname__}".encode())
    hasher.update(code.co_code)
    _feed(hasher, [c for c in code.co_consts if not isinstance(c, types.CodeType)], depth + 1, seen)
    _feed(hasher, (fn.__defaults__, fn.__kwdefaults__), depth + 1, seen)
    for cell in fn.__closure__ or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell
            contents = "<empty>"
        _feed(hasher, contents, depth + 1, seen)


def _attributes(value: Any) -> dict:
    """An object's public attributes (a leading underscore marks state or a cache -- a
    momentum buffer, the last forward pass -- that changes as the object is used, not what
    it is), and a torch module's parameters and buffers (``state_dict``)."""
    attributes = dict(getattr(value, "__dict__", {}))
    for slot in getattr(type(value), "__slots__", ()):
        if hasattr(value, slot):
            attributes[slot] = getattr(value, slot)
    public = {k: v for k, v in attributes.items() if not k.startswith("_")}
    if hasattr(value, "state_dict") and hasattr(value, "_parameters"):  # a torch.nn.Module
        public["state_dict"] = dict(value.state_dict())
    return public
