"""theorycheck: executable claims from papers on attention and softmax training.

A claim is a pytest function declared with :func:`claim`; it computes a reference
quantity, trains a model, and decides through ``tc.precondition.*`` (the theorem's
hypotheses hold on the instance) and ``tc.conclusion.*`` (what the theorem asserts) whether
the paper's statement holds.  Each claim has negative controls (:class:`Control`) and a
provenance; each paper is declared once with :func:`paper`.  See ``docs/writing-claims.md``.
"""
from ._version import __version__
from .cache import shared_run
from .claim import CONTROL_KINDS, PROVENANCE, Calibrated, ClaimSpec, Control, claim, discrepancy
from .errors import (
    ClaimDeclarationError,
    ClaimFailure,
    ControlMisfire,
    DeclarationError,
    HypothesesNotMet,
    InfeasibleProgramError,
    NoDecisionError,
    NonFiniteIterateError,
    ReferenceComputationError,
    SolverAccuracyError,
    TheoryCheckError,
    UsageError,
    error_kind,
)
from .papers import Paper, paper
from .tails import NullTest, TailBound
from .tolerance import roundoff

__all__ = ["__version__", "claim", "discrepancy", "Control", "Calibrated", "ClaimSpec", "CONTROL_KINDS",
           "PROVENANCE", "paper", "shared_run", "Paper", "roundoff", "TailBound", "NullTest", "TheoryCheckError", "ClaimFailure",
           "HypothesesNotMet", "NoDecisionError", "DeclarationError", "ClaimDeclarationError",
           "UsageError", "ReferenceComputationError", "InfeasibleProgramError",
           "SolverAccuracyError", "NonFiniteIterateError", "ControlMisfire", "error_kind"]
