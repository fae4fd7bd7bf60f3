"""theorycheck: executable claims from papers on attention and softmax training.

A claim is a pytest function declared with :func:`claim`; it computes a reference
quantity, trains a model, and decides through ``tc.check.*`` whether the paper's
statement holds.  See ``docs/writing-claims.md``.
"""
from ._version import __version__
from .cache import shared_run
from .claim import ClaimDeclarationError, ClaimFailure, ClaimSpec, NoDecisionError, claim, discrepancy

__all__ = ["__version__", "claim", "discrepancy", "ClaimFailure", "ClaimDeclarationError",
           "NoDecisionError", "ClaimSpec", "shared_run"]
