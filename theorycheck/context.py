"""The per-case context a claim receives as the ``tc`` fixture.

It carries the run's settings (tier, device, dtype), hands out seeded random streams and
the sizes of the current tier, and records what the claim measured and decided:

* ``tc.check.<name>(...)`` runs a comparison from :mod:`theorycheck.checks` (``close``,
  ``at_most``, ``at_least``, ``holds``, ``slope``, ``binomial``, ``monotone``), records the
  :class:`~theorycheck.checks.Decision` and returns whether it held;
* ``tc.record(name, value)`` stores a number (or small array) for the report;
* ``tc.curve(plot, label, x, y, ...)`` stores a curve to be drawn in the report, e.g. a
  measured alignment deficit next to the theoretical rate.

``tc.conclude()`` (called by the ``@claim`` wrapper) fails the case with every decision
listed when one failed, and refuses a case that decided nothing.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import checks as _checks
from .checks import Decision, jsonable
from .claim import ClaimFailure, ClaimSpec, NoDecisionError
from .runtime import Runtime, derive_seed, generator
from .cache import SharedRun, SharedRunCache

_CHECKS = {name: getattr(_checks, name)
           for name in ("close", "at_most", "at_least", "holds", "slope", "binomial", "monotone")}
MAX_CURVE_POINTS = 400
PLOT_STYLES = ("measured", "theory", "bound", "reference")


class _CheckRecorder:
    """``tc.check.close(...)`` etc.: each call runs the check and records its decision."""

    def __init__(self, sink: list[Decision]):
        self._sink = sink

    def __getattr__(self, name: str):
        if name not in _CHECKS:
            raise AttributeError(f"no check named {name!r}; available: {', '.join(_CHECKS)}")
        fn = _CHECKS[name]

        @functools.wraps(fn)
        def run_and_record(*args, **kwargs) -> bool:
            decision = fn(*args, **kwargs)
            self._sink.append(decision)
            return decision.passed

        return run_and_record

    def __dir__(self):
        return list(_CHECKS)


def _thin(x: np.ndarray, y: np.ndarray, log_x: bool) -> tuple[np.ndarray, np.ndarray]:
    """Keep at most MAX_CURVE_POINTS points, spread evenly in x (log-spaced if ``log_x``)."""
    if x.size <= MAX_CURVE_POINTS:
        return x, y
    pos = np.log(np.maximum(x, 1e-300)) if log_x and np.all(x > 0) else x
    targets = np.linspace(pos[0], pos[-1], MAX_CURVE_POINTS)
    idx = np.unique(np.clip(np.searchsorted(pos, targets), 0, x.size - 1))
    return x[idx], y[idx]


class ClaimContext:
    """Everything one claim case (the claim itself or one of its controls) works with."""

    def __init__(self, spec: ClaimSpec, control: str | None, runtime: Runtime,
                 cache: SharedRunCache | None = None):
        if control is not None and control not in spec.controls:
            raise KeyError(f"claim {spec.id!r} has no control {control!r}")
        self.spec = spec
        self.control = control
        self.runtime = runtime
        self.decisions: list[Decision] = []
        self.measurements: dict[str, Any] = {}
        self.plots: dict[str, dict] = {}
        self.check = _CheckRecorder(self.decisions)
        self.cache = cache if cache is not None else SharedRunCache(None)  # None: memo only
        self.shared_runs: list[dict] = []

    # -- identity and settings -------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def variant(self) -> str:
        return "claim" if self.control is None else f"control-{self.control}"

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

    @property
    def sizes(self) -> dict:
        """The sizes the claim declared for the current tier (empty if it declared none)."""
        return dict(self.spec.sizes.get(self.tier, {}))

    # -- randomness --------------------------------------------------------------------------
    def seed(self, *stream: object) -> int:
        """The seed of a named stream: a hash of (base seed, claim id, *stream)."""
        return derive_seed(self.runtime.seed, self.spec.id, *stream)

    def rng(self, *stream: object) -> np.random.Generator:
        """An independent numpy Generator for a named stream (e.g. ``tc.rng("data")``).

        Controls share the claim's streams, so a control differs from its claim only by
        its perturbation."""
        return generator(self.runtime.seed, self.spec.id, *stream)

    def tensor(self, value: Any):
        """``value`` as a torch tensor on the run's device with the run's dtype."""
        import torch

        return torch.as_tensor(value, dtype=self.dtype, device=self.device)

    # -- shared runs -------------------------------------------------------------------------
    def use(self, run: SharedRun, **config) -> Any:
        """The value of a shared run (:func:`theorycheck.shared_run`) with keyword ``config``:
        from the process memo, the disk cache, or computed and stored.  The use is recorded
        in ``shared_runs`` (name, key, config, sizes, seed, source).  Treat it as read-only:
        other claims get the same object."""
        value, record = self.cache.use(run, self.runtime, config)
        self.shared_runs.append(record)
        return value

    @property
    def shared_keys(self) -> set[str]:
        """The cache keys of the shared runs this case used."""
        return {record["key"] for record in self.shared_runs}

    # -- recording ---------------------------------------------------------------------------
    def record(self, name: str, value: Any) -> None:
        """Store a measurement (number, small array, dict) under ``name`` for the report."""
        self.measurements[name] = jsonable(value)

    def curve(
        self,
        plot: str,
        label: str,
        x: Any,
        y: Any,
        *,
        style: str = "measured",
        title: str | None = None,
        xlabel: str = "iteration t",
        ylabel: str = "",
        xscale: str = "linear",
        yscale: str = "linear",
        sort_x: bool = False,
    ) -> None:
        """Add a curve to the plot named ``plot`` (the plot's labels come from its first curve).

        ``style`` says what the curve is: ``measured`` (solid), ``theory`` (a rate or
        closed form, dashed), ``bound`` (a certificate bound, dotted) or ``reference``.
        ``x`` and ``y`` may be numbers, arrays or tensors on any device; ``sort_x=True``
        orders scattered points by x so that they draw as a line.
        """
        if style not in PLOT_STYLES:
            raise ValueError(f"curve {label!r}: unknown style {style!r}; use one of {PLOT_STYLES}")
        xa = np.asarray(jsonable(x), dtype=float).ravel()
        ya = np.asarray(jsonable(y), dtype=float).ravel()
        if xa.shape != ya.shape:
            raise ValueError(f"curve {label!r}: x has {xa.size} points, y has {ya.size}")
        if sort_x:
            order = np.argsort(xa, kind="stable")
            xa, ya = xa[order], ya[order]
        xa, ya = _thin(xa, ya, xscale == "log")
        spec = self.plots.setdefault(plot, {
            "name": plot, "title": title or plot, "xlabel": xlabel, "ylabel": ylabel,
            "xscale": xscale, "yscale": yscale, "curves": [],
        })
        spec["curves"].append({"label": label, "style": style,
                               "x": jsonable(xa), "y": jsonable(ya)})

    # -- verdict -----------------------------------------------------------------------------
    def conclude(self) -> None:
        """Raise ClaimFailure if any decision failed; NoDecisionError if none was recorded."""
        if not self.decisions:
            raise NoDecisionError(f"{self.spec.id} [{self.variant}] recorded no decision: a claim "
                                  "must decide through tc.check.* so that it can fail")
        failed = [d for d in self.decisions if not d.passed]
        if failed:
            lines = "\n".join(d.summary() for d in self.decisions)
            raise ClaimFailure(f"{self.spec.id} [{self.variant}]: {len(failed)} of "
                               f"{len(self.decisions)} checks failed\n{lines}")

    def to_json(self) -> dict:
        return {
            "id": self.spec.id,
            "variant": self.variant,
            "control": self.control,
            "decisions": [d.to_json() for d in self.decisions],
            "measurements": self.measurements,
            "plots": list(self.plots.values()),
            "shared_runs": self.shared_runs,
        }
