"""Optimizers and trajectory recording for the token-selection attention model."""

from theorycheck.optim.batched import Method, MethodBatchStep, ScheduledNormalizedGD
from theorycheck.optim.metrics import (
    Iterate,
    alignment,
    displacement,
    frobenius_norm,
    inner,
    once_per_iterate,
    relative_error,
    standard_metrics,
)
from theorycheck.optim.steps import GD, NGD, BlockNGD, NGDMomentum, Polyak
from theorycheck.optim.trajectory import NonFiniteIterateError, Trajectory, recorded_rows, run_trajectory

__all__ = [
    "GD",
    "NGD",
    "BlockNGD",
    "NGDMomentum",
    "Polyak",
    "Method",
    "MethodBatchStep",
    "ScheduledNormalizedGD",
    "Iterate",
    "once_per_iterate",
    "NonFiniteIterateError",
    "Trajectory",
    "alignment",
    "displacement",
    "frobenius_norm",
    "inner",
    "recorded_rows",
    "relative_error",
    "run_trajectory",
    "standard_metrics",
]
