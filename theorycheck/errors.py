"""Every error theorycheck raises, under one base class.

The report sorts what went wrong by kind (``TheoryCheckError.kind``):

================  ================================================================================
kind              meaning
================  ================================================================================
``failure``       a claim's conclusion did not hold (:class:`ClaimFailure`), or its hypotheses were
                  not met on the instance (:class:`HypothesesNotMet`)
``declaration``   a claim, control, paper or model was declared wrongly (:class:`DeclarationError`)
``usage``         an unknown tier, device, dtype, option value or a malformed file
                  (:class:`UsageError`)
``input``         a library function got an array or value of the wrong shape, type or range
                  (:class:`InvalidInputError`), or a name it does not know (:class:`UnknownNameError`)
``reference``     a reference quantity could not be computed to its certificate: an infeasible
                  program, an inaccurate solve (:class:`ReferenceComputationError`)
``numerics``      an iterate became NaN or infinite (:class:`NonFiniteIterateError`), or, under
                  ``--tc-strict``, a check cannot discriminate: a decision carries warnings (a
                  bound below the dtype's resolution, a fit window into the round-off floor)
                  (:class:`CannotDiscriminate`)
``control``       a negative control failed, but not for the reason it declares
                  (:class:`ControlMisfire`)
================  ================================================================================

Anything else a claim raises is a plain error of the code under test and is reported as such.
"""
from __future__ import annotations

__all__ = [
    "TheoryCheckError",
    "ClaimFailure",
    "HypothesesNotMet",
    "NoDecisionError",
    "DeclarationError",
    "ClaimDeclarationError",
    "UsageError",
    "InvalidInputError",
    "UnknownNameError",
    "ReferenceComputationError",
    "InfeasibleProgramError",
    "SolverAccuracyError",
    "NonFiniteIterateError",
    "ControlMisfire",
    "CannotDiscriminate",
    "error_kind",
]


class TheoryCheckError(Exception):
    """Base class of every error theorycheck raises; ``kind`` names its category."""

    kind = "error"


class ClaimFailure(TheoryCheckError, AssertionError):
    """A conclusion of a claim did not hold.  The only failure a negative control may show."""

    kind = "failure"


class HypothesesNotMet(ClaimFailure):
    """A claim's preconditions (the theorem's hypotheses) failed on its instance: the claim
    could not be tested there.  Reported apart from a failed conclusion."""


class NoDecisionError(TheoryCheckError, RuntimeError):
    """A claim (or control) ran to the end without recording a single decision."""

    kind = "declaration"


class DeclarationError(TheoryCheckError, TypeError):
    """A claim, control, paper or model was declared wrongly."""

    kind = "declaration"


#: the name claims and tests know; the same class
ClaimDeclarationError = DeclarationError


class UsageError(TheoryCheckError, ValueError):
    """An unknown or unusable option value (tier, device, dtype, threads, seed) or input file."""

    kind = "usage"


class InvalidInputError(TheoryCheckError, ValueError):
    """A library function (a solver, a measurement, a check) got an array or value of the wrong
    shape, type or range; the message names the argument and what it needs."""

    kind = "input"


class UnknownNameError(TheoryCheckError, KeyError):
    """A name a function does not know: a block of a model, an unrecorded iteration, a control
    of a claim."""

    kind = "input"

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ReferenceComputationError(TheoryCheckError):
    """A reference quantity (a program's solution, a closed form) could not be certified."""

    kind = "reference"


class InfeasibleProgramError(ReferenceComputationError, ValueError):
    """The program has no feasible point (e.g. 0 lies in the hull of its constraint matrices)."""


class SolverAccuracyError(ReferenceComputationError, RuntimeError):
    """The solver's answer fails its optimality certificate although the program is feasible."""


class NonFiniteIterateError(TheoryCheckError, FloatingPointError):
    """An iterate became NaN or infinite; ``step``, ``blocks`` and ``trials`` say where."""

    kind = "numerics"

    def __init__(self, name: str, step: int, blocks: list[str], trials: list[int]):
        super().__init__(f"NaN/inf in {'/'.join(blocks)} at step {step} of {name}, trials {trials}")
        self.step, self.blocks, self.trials = step, blocks, trials


class ControlMisfire(TheoryCheckError):
    """A negative control failed, but not by breaking a conclusion it declares (or a
    ``hypothesis`` control left its preconditions holding, or another kind broke one)."""

    kind = "control"


class CannotDiscriminate(TheoryCheckError):
    """Under ``--tc-strict``: a decision of the case carries warnings, i.e. its comparison is
    decided by round-off rather than by the statement (see :mod:`theorycheck.checks`)."""

    kind = "numerics"


def error_kind(exc: BaseException | type) -> str:
    """The report's category of an exception (instance or class): a theorycheck kind, or
    ``"error"`` for anything else."""
    cls = exc if isinstance(exc, type) else type(exc)
    return getattr(cls, "kind", "error") if issubclass(cls, TheoryCheckError) else "error"
