"""Optimizers and trajectory recording for the token-selection attention model."""

from theorycheck.optim.metrics import Iterate, alignment, displacement, frobenius_norm, standard_metrics
from theorycheck.optim.steps import GD, NGD, BlockNGD, NGDMomentum, Polyak
from theorycheck.optim.trajectory import NonFiniteIterateError, Trajectory, run_trajectory

__all__ = [
    "GD",
    "NGD",
    "BlockNGD",
    "NGDMomentum",
    "Polyak",
    "Iterate",
    "NonFiniteIterateError",
    "Trajectory",
    "alignment",
    "displacement",
    "frobenius_norm",
    "run_trajectory",
    "standard_metrics",
]
