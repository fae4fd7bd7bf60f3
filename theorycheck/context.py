"""The per-case context a claim receives as the ``tc`` fixture.

It carries the run's settings (tier, device, dtype), hands out seeded random streams and
the sizes of the current tier, and records what the claim measured and decided:

* ``tc.precondition.<name>(...)`` and ``tc.conclusion.<name>(...)`` run a comparison from
  :mod:`theorycheck.checks` (``close``, ``at_most``, ``at_least``, ``holds``, ``slope``,
  ``binomial``, ``monotone``), record the :class:`~theorycheck.checks.Decision` with its
  role -- a *precondition* (the theorem's hypotheses hold on this instance) or a
  *conclusion* (what the theorem asserts) -- and return whether it held;
* ``tc.record(name, value)`` stores a number (or small array) for the report;
* ``tc.curve(plot, label, x, y, ...)`` stores a curve to be drawn in the report, e.g. a
  measured alignment deficit next to the theoretical rate.

``tc.conclude()`` (called by the ``@claim`` wrapper) turns the decisions into a verdict
(see :meth:`ClaimContext.conclude`) and refuses a case that decided nothing.
"""
from __future__ import annotations

import dataclasses
import warnings
import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np

from .cache import SharedRun, SharedRunCache
from . import checks
from .checks import CHECKS, Decision, jsonable
from .claim import ClaimSpec
from .lineage import ComputationLog, recording, unrecorded
from .results_layout import variant_id
from .errors import (CannotDiscriminate, ClaimFailure, ControlMisfire, DeclarationError,
                     HypothesesNotMet, InvalidInputError, NoDecisionError, UnknownNameError)
from .runtime import OnRuntime, Runtime, derive_seed
from .tolerance import roundoff, tolerance

__all__ = ["ClaimContext", "CurveWarning", "ROLES", "PLOT_STYLES", "MAX_CURVE_POINTS"]


class CurveWarning(UserWarning):
    """A curve that cannot draw what it records (fewer than two points)."""

MAX_CURVE_POINTS = 400
PLOT_STYLES = ("measured", "theory", "bound", "reference")
ROLES = ("precondition", "conclusion")


class _CheckRecorder:
    """``tc.conclusion.close(...)`` etc.: each call runs the check of :mod:`theorycheck.checks`
    of the same name, records its decision with this recorder's role and returns whether it
    held.  The decision also records how many computation events the case had logged when
    it was made (``detail["computed_before"]``, :mod:`theorycheck.lineage`), from which the
    report tells a control whose broken conclusion came after a computation of its own from
    one that re-judged its claim's numbers (:mod:`theorycheck.evidence`), and how many of them
    brought the base seed in (``detail["seeded_before"]``, :func:`theorycheck.lineage.carries_seed`),
    from which the calibration tells a seed-independent decision (:mod:`theorycheck.calibrate`)."""

    def __init__(self, sink: list[Decision], role: str, computations: ComputationLog,
                 dtype: str = "float64"):
        self._sink = sink
        self._role = role
        self._computations = computations
        self._dtype = dtype

    def _run(self, fn, args: tuple, kwargs: dict) -> bool:
        if "dtype" in inspect.signature(fn).parameters:
            kwargs.setdefault("dtype", self._dtype)
        decision = fn(*args, **kwargs)
        decision = dataclasses.replace(decision, role=self._role, detail={
            **decision.detail, "computed_before": len(self._computations),
            "seeded_before": self._computations.seeded_count()})
        self._sink.append(decision)
        return decision.passed

    def close(self, name: str, measured, expected, **kwargs) -> bool:
        """:func:`theorycheck.checks.close`, recorded."""
        return self._run(checks.close, (name, measured, expected), kwargs)

    def at_most(self, name: str, measured, bound, **kwargs) -> bool:
        """:func:`theorycheck.checks.at_most`, recorded."""
        return self._run(checks.at_most, (name, measured, bound), kwargs)

    def at_least(self, name: str, measured, bound, **kwargs) -> bool:
        """:func:`theorycheck.checks.at_least`, recorded."""
        return self._run(checks.at_least, (name, measured, bound), kwargs)

    def holds(self, name: str, condition, **kwargs) -> bool:
        """:func:`theorycheck.checks.holds`, recorded."""
        return self._run(checks.holds, (name, condition), kwargs)

    def slope(self, name: str, x, y, **kwargs) -> bool:
        """:func:`theorycheck.checks.slope`, recorded."""
        return self._run(checks.slope, (name, x, y), kwargs)

    def binomial(self, name: str, successes, **kwargs) -> bool:
        """:func:`theorycheck.checks.binomial`, recorded."""
        return self._run(checks.binomial, (name, successes), kwargs)

    def wald(self, name: str, samples, **kwargs) -> bool:
        """:func:`theorycheck.checks.wald`, recorded."""
        return self._run(checks.wald, (name, samples), kwargs)

    def chi_square(self, name: str, counts, probabilities, **kwargs) -> bool:
        """:func:`theorycheck.checks.chi_square`, recorded."""
        return self._run(checks.chi_square, (name, counts, probabilities), kwargs)

    def monotone(self, name: str, series, **kwargs) -> bool:
        """:func:`theorycheck.checks.monotone`, recorded."""
        return self._run(checks.monotone, (name, series), kwargs)

    def __getattr__(self, name: str):
        raise AttributeError(f"no check named {name!r}; available: {', '.join(CHECKS)}")

    def __dir__(self):
        return list(CHECKS)


class _NoRole:
    """``tc.check``: refused, because every decision needs a role the claim chooses."""

    def __getattr__(self, name: str):
        raise DeclarationError(
            f"tc.check.{name}: a decision needs a role; use tc.conclusion.{name}(...) for what "
            f"the theorem asserts or tc.precondition.{name}(...) for its hypotheses on this instance")


class _DeclaredConstants(Mapping):
    """A claim's declared constants, read-only; a missing name says which are declared."""

    def __init__(self, claim_id: str, values: dict[str, float]):
        self._claim_id, self._values = claim_id, values

    def __getitem__(self, name: str) -> float:
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"claim {self._claim_id!r} declares no constant {name!r} (declared: "
                           f"{sorted(self._values) or 'none'}); add it to @claim(constants=...) "
                           "or the control's Control(constants=...)") from None

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"constants({self._values!r})"


def _thin(x: np.ndarray, y: np.ndarray, log_x: bool) -> tuple[np.ndarray, np.ndarray]:
    """Keep at most MAX_CURVE_POINTS points, spread evenly in x (log-spaced if ``log_x``)."""
    if x.size <= MAX_CURVE_POINTS:
        return x, y
    pos = np.log(np.maximum(x, 1e-300)) if log_x and np.all(x > 0) else x
    targets = np.linspace(pos[0], pos[-1], MAX_CURVE_POINTS)
    idx = np.unique(np.clip(np.searchsorted(pos, targets), 0, x.size - 1))
    return x[idx], y[idx]


class ClaimContext(OnRuntime):
    """Everything one claim case (the claim itself or one of its controls) works with."""

    def __init__(self, spec: ClaimSpec, control: str | None, runtime: Runtime,
                 cache: SharedRunCache | None = None):
        if control is not None and control not in spec.controls:
            raise UnknownNameError(f"claim {spec.id!r} has no control {control!r}")
        self.spec = spec
        self.control = control
        self.runtime = runtime
        self.decisions: list[Decision] = []
        self.measurements: dict[str, Any] = {}
        self.plots: dict[str, dict] = {}
        self.seeds: dict[str, int] = {}
        self.computations = ComputationLog()
        self.precondition = _CheckRecorder(self.decisions, "precondition", self.computations,
                                           runtime.dtype)
        self.conclusion = _CheckRecorder(self.decisions, "conclusion", self.computations,
                                         runtime.dtype)
        self.check = _NoRole()
        self.cache = cache if cache is not None else SharedRunCache(None)  # None: memo only
        self.shared_runs: list[dict] = []

    # -- identity and settings -------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def variant(self) -> str:
        return variant_id(self.control)

    def roundoff(self, factor: float = 1.0) -> float:
        """``factor`` times the unit round-off of the run's dtype (see :mod:`theorycheck.tolerance`)."""
        return roundoff(self.runtime.dtype, factor)

    def tol(self, kind: str) -> float:
        """The run dtype's tolerance of a comparison of ``kind`` (``"exact"``,
        ``"accumulated"``, ``"conditioned"``, ``"iterative"``: `theorycheck.tolerance.TOLERANCES`)."""
        return tolerance(self.runtime.dtype, kind)

    @property
    def constants(self) -> Mapping[str, float]:
        """The numbers of the criterion as declared, written once: the claim's ``constants=``,
        with the running control's ``Control(constants=...)`` laid over them (a control that
        declares ``{"p": 3}`` reads ``tc.constants["p"] == 3`` where its claim declared 2).
        Read-only; an undeclared name is a ``KeyError`` naming the declared ones."""
        merged = dict(self.spec.constants)
        if self.control is not None:
            merged.update(self.spec.controls[self.control].constants)
        return _DeclaredConstants(self.spec.id, merged)

    @property
    def sizes(self) -> dict:
        """The sizes the claim declared for the current tier (empty if it declared none)."""
        return dict(self.spec.sizes.get(self.tier, {}))

    # -- randomness --------------------------------------------------------------------------
    def seed(self, *stream: object) -> int:
        """The seed of a named stream: a hash of (base seed, claim id, ``*stream``).  Every stream
        asked for is listed in results.json (``seeds``) so that the case can be rerun, and
        logged as a ``draw`` computation (:mod:`theorycheck.lineage`) whose identity is the seed:
        the claim and its controls asking for one stream get one draw."""
        return self._drawn("/".join(map(str, stream)), derive_seed(self.runtime.seed, self.spec.id, *stream))

    def paper_seed(self, *stream: object) -> int:
        """The seed of a paper-wide stream: a hash of (base seed, paper, ``*stream``), the stream
        that a shared run of the paper's default scope gets from ``run.rng(*stream)``, so that a
        claim draws the same instances as its paper's shared runs.  Listed in ``seeds`` as
        ``paper/<stream>`` and logged as a ``draw`` like :meth:`seed`: the seed reaches a case
        only through these logged streams and the shared runs it uses."""
        return self._drawn("/".join(["paper", *map(str, stream)]),
                           derive_seed(self.runtime.seed, self.spec.paper, *stream))

    def paper_rng(self, *stream: object) -> np.random.Generator:
        """A numpy Generator for the paper-wide stream ``stream`` (:meth:`paper_seed`)."""
        return np.random.default_rng(self.paper_seed(*stream))

    def _drawn(self, name: str, value: int) -> int:
        """``value``, the seed of the stream ``name``, listed in ``seeds`` and logged as a draw."""
        self.seeds[name] = value
        self.computations.log("draw", name, {"seed": str(value)})
        return value

    def rng(self, *stream: object) -> np.random.Generator:
        """An independent numpy Generator for a named stream (e.g. ``tc.rng("data")``).

        Controls share the claim's streams, so a control differs from its claim only by
        its perturbation; a control that draws new data asks for a stream of another name
        (e.g. ``tc.rng("data", "fresh")``), which is then a computation its claim did not run."""
        return np.random.default_rng(self.seed(*stream))

    # -- shared runs -------------------------------------------------------------------------
    def use(self, run: SharedRun, **config) -> Any:
        """The value of a shared run (:func:`theorycheck.shared_run`) with keyword ``config``:
        from the process memo, the disk cache, or computed and stored.  The use is recorded
        in ``shared_runs`` (name, key, config, sizes, seed, source) and logged as a
        ``shared_run`` computation identified by its cache key (what the run computes inside
        is covered by the key and not logged again).  Treat the value as read-only: other
        claims get the same object."""
        with unrecorded():
            value, record = self.cache.use(run, self.runtime, config)
        record = jsonable(record)  # strict JSON: an infinite setting -> "inf"
        self.shared_runs.append(record)
        self.computations.log("shared_run", run.name, {"key": record["key"]},
                              detail={"config": record["config"], "seeded": run.seeded})
        return value

    def recording(self):
        """A context manager under which the library's computations (solvers, trajectory
        runs) log their events into this case's ``computations``; the ``@claim`` wrapper runs
        the claim function under it."""
        return recording(self.computations)

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
            raise InvalidInputError(f"curve {label!r}: unknown style {style!r}; use one of {PLOT_STYLES}")
        xa = np.asarray(jsonable(x), dtype=float).ravel()
        ya = np.asarray(jsonable(y), dtype=float).ravel()
        if xa.shape != ya.shape:
            raise InvalidInputError(f"curve {label!r}: x has {xa.size} points, y has {ya.size}")
        if xa.size < 2:
            warnings.warn(f"{self.spec.id}: curve {label!r} of plot {plot!r} has {xa.size} point(s): "
                          "a line needs two; record a scalar with tc.record instead", CurveWarning,
                          stacklevel=2)
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

    def band(self, plot: str, label: str, x: Any, lower: Any, upper: Any, **curve_options: Any) -> None:
        """Two ``bound`` curves of ``plot``, ``"<label>, lower"`` and ``"<label>, upper"``
        (see :meth:`curve`; ``curve_options`` as there), whose area the report fills: a
        confidence band."""
        edges = [f"{label}, lower", f"{label}, upper"]
        for edge, y in zip(edges, (lower, upper)):
            self.curve(plot, edge, x, y, style="bound", **curve_options)
        self.plots[plot]["band"] = edges

    def shade(self, plot: str, label: str, lower: float | None = None,
              upper: float | None = None) -> None:
        """Shade the x-range ``lower <= x <= upper`` of ``plot`` (an end None: open, to the
        curves' extent), named ``label`` in the legend: a theorem's stated region.  The plot
        must have a curve already."""
        if plot not in self.plots:
            raise InvalidInputError(f"shade {label!r}: plot {plot!r} has no curve yet; draw one "
                                    "with tc.curve first")
        self.plots[plot]["span"] = {"lower": lower, "upper": upper, "label": label}

    # -- verdict -----------------------------------------------------------------------------
    def _failed(self, role: str) -> list[str]:
        """Names of the decisions of ``role`` that failed with finite values."""
        return [d.name for d in self.decisions if d.role == role and not d.passed and d.finite]

    @property
    def failed_conclusions(self) -> list[str]:
        return self._failed("conclusion")

    @property
    def failed_preconditions(self) -> list[str]:
        return self._failed("precondition")

    def _listing(self, headline: str) -> str:
        return f"{self.spec.id} [{self.variant}]: {headline}\n" + "\n".join(
            d.summary() for d in self.decisions)

    def conclude(self) -> None:
        """Turn the recorded decisions into the case's verdict.

        * No decision: :class:`NoDecisionError`.
        * Under ``--tc-strict``, a decision with warnings (its comparison cannot
          discriminate): :class:`CannotDiscriminate`.
        * The claim's own case: a failed precondition raises :class:`HypothesesNotMet`, a
          failed conclusion :class:`ClaimFailure`; otherwise it passed.
        * A control case: see :meth:`_conclude_control`.
        """
        if not self.decisions:
            raise NoDecisionError(f"{self.spec.id} [{self.variant}] recorded no decision: a claim "
                                  "must decide through tc.conclusion.* so that it can fail")
        warned = [d for d in self.decisions if d.warnings]
        if warned and self.runtime.strict:
            raise CannotDiscriminate(self._listing(
                f"--tc-strict: {len(warned)} checks cannot discriminate "
                f"({', '.join(repr(d.name) for d in warned)})"))
        if self.control is not None:
            self._conclude_control()
            return
        self._check_calibration_records()
        failed = [d for d in self.decisions if not d.passed]
        if any(d.role == "precondition" for d in failed):
            names = [d.name for d in failed if d.role == "precondition"]
            raise HypothesesNotMet(self._listing(f"the hypotheses do not hold on this instance "
                                                 f"(failed preconditions {names})"))
        if failed:
            raise ClaimFailure(self._listing(f"{len(failed)} of {len(self.decisions)} checks failed"))

    def _check_calibration_records(self) -> None:
        """A :class:`~theorycheck.claim.Calibrated` record of the current tier must name a decision
        the claim records (a record of another tier speaks for that tier's sizes only)."""
        names = {d.name for d in self.decisions}
        stale = [r.decision for r in self.spec.calibration
                 if not isinstance(r, str) and r.tier == self.tier and r.decision not in names]
        if stale:
            raise DeclarationError(f"{self.spec.id}: calibration records name {stale}, which the "
                                   f"claim never recorded (its decisions: {sorted(names)})")

    def _conclude_control(self) -> None:
        """A control fails as expected (:class:`ClaimFailure`) when a conclusion it declares
        to break failed with finite values and its preconditions failed (kind
        ``hypothesis``) or all held (every other kind).  Any other failure is a
        :class:`ControlMisfire`; a control with no failure returns (it passed)."""
        control = self.spec.controls[self.control]
        conclusions = {d.name for d in self.decisions if d.role == "conclusion"}
        unknown = [b for b in control.breaks if b not in conclusions]
        if unknown:
            raise DeclarationError(
                f"{self.spec.id} [{self.variant}]: declares it breaks {unknown}, which the case "
                f"never recorded as a conclusion (recorded conclusions: {sorted(conclusions)})")
        if all(d.passed for d in self.decisions):
            return
        reason = self._misfire_reason(control)
        if reason is not None:
            raise ControlMisfire(self._listing(f"{control.kind} control misfired: {reason}"))
        broken = [b for b in control.breaks if b in self.failed_conclusions]
        raise ClaimFailure(self._listing(f"{control.kind} control broke {broken} as declared"))

    def _misfire_reason(self, control) -> str | None:
        """Why a failing control does not fail as it declares, or ``None`` when it does."""
        conclusions, preconditions = self.failed_conclusions, self.failed_preconditions
        if not any(b in conclusions for b in control.breaks):
            if conclusions:
                return f"broke {conclusions} but declares it breaks {list(control.breaks)}"
            if preconditions:
                return (f"failed only on preconditions {preconditions}; it must break one of "
                        f"the conclusions {list(control.breaks)}")
            nonfinite = [d.name for d in self.decisions if not d.passed]
            return f"failed only through NaN/inf values in {nonfinite}, which do not count"
        if control.kind == "hypothesis" and not preconditions:
            return ("hypothesis control left every precondition holding: it must violate an "
                    "assumption that a precondition check detects")
        if control.kind != "hypothesis" and preconditions:
            return (f"{control.kind} control also failed the preconditions {preconditions}: "
                    "only a hypothesis control may violate the theorem's hypotheses")
        return None

    def to_json(self) -> dict:
        return {
            "id": self.spec.id,
            "variant": self.variant,
            "control": self.control,
            "decisions": [d.to_json() for d in self.decisions],
            "failed_conclusions": self.failed_conclusions,
            "failed_preconditions": self.failed_preconditions,
            "measurements": self.measurements,
            "plots": list(self.plots.values()),
            "shared_runs": self.shared_runs,
            "computations": self.computations.events,
            "sizes": self.sizes,
            "seeds": dict(self.seeds),
        }
