"""Round-off tolerances keyed on the floating-point type.

The unit round-off of a binary floating-point format with a ``p``-bit significand is
``u = 2^-p`` (half the machine epsilon): every correctly rounded operation returns
``x (1 + e)`` with ``|e| <= u``.  A recursion of ``n`` operations accumulates at most about
``n u`` relative error, so a tolerance that stands for round-off is written
``roundoff(dtype, factor=n)`` = ``factor * u`` rather than as a float64 literal: it then
scales with ``--tc-dtype``.
"""
from __future__ import annotations

from typing import Any

from .errors import InvalidInputError, UsageError

__all__ = ["UNIT_ROUNDOFF", "TOLERANCES", "unit_roundoff", "roundoff", "tolerance"]

#: unit round-off ``u = 2^-p`` per dtype name (p = significand bits including the hidden one)
UNIT_ROUNDOFF = {
    "float64": 2.0**-53,
    "float32": 2.0**-24,
    "bfloat16": 2.0**-8,
    "float16": 2.0**-11,
}


def _dtype_name(dtype: Any) -> str:
    """``"float64"`` for ``torch.float64``, ``numpy.float64``, ``np.dtype("float64")`` or the string."""
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)  # numpy dtypes and scalar types
    if isinstance(name, str):
        return name
    if isinstance(dtype, type):
        import numpy as np

        return np.dtype(dtype).name
    return str(dtype).removeprefix("torch.")


def unit_roundoff(dtype: Any) -> float:
    """The unit round-off ``u`` of ``dtype``; a :class:`UsageError` for a non-float type."""
    name = _dtype_name(dtype)
    try:
        return UNIT_ROUNDOFF[name]
    except KeyError:
        raise UsageError(f"no unit round-off for dtype {name!r}; known: "
                         f"{', '.join(UNIT_ROUNDOFF)}") from None


def roundoff(dtype: Any, factor: float = 1.0) -> float:
    """``factor * u(dtype)``: the tolerance of ``factor`` correctly rounded operations."""
    if not factor > 0:
        raise InvalidInputError(f"roundoff factor must be positive, got {factor!r}")
    return float(factor) * unit_roundoff(dtype)


#: named tolerances, in units of the dtype's round-off u (the neural-tangents ``test_utils``
#: pattern: one table, no literals in the tests).  float64 values in brackets.
TOLERANCES = {
    # an identity evaluated in a few dozen operations [7.1e-15]
    "exact": 2.0**6,
    # sums and products over thousands of terms, autograd against a closed form [1.1e-13]
    "accumulated": 2.0**10,
    # a linear solve, an eigenproblem or a projection: round-off times a moderate condition
    # number [1.8e-12]
    "conditioned": 2.0**14,
    # the end of an iterative algorithm run to round-off (Lanczos, L-BFGS, majorize-minimize,
    # a long trajectory) [1.2e-10]
    "iterative": 2.0**20,
}


def tolerance(dtype: Any, kind: str) -> float:
    """The tolerance ``TOLERANCES[kind] * u(dtype)`` of a comparison of that kind; an
    :class:`UsageError` naming the kinds for an unknown one."""
    if kind not in TOLERANCES:
        raise UsageError(f"unknown tolerance kind {kind!r}; known: {', '.join(TOLERANCES)}")
    return roundoff(dtype, TOLERANCES[kind])
