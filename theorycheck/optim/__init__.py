"""Optimizers, trajectories and metrics over any model of the protocol (`theorycheck.models.base`)."""

from theorycheck.optim.adaptive import Adam, adam_steps, cosine_schedule
from theorycheck.optim.gradient import (
    GD,
    NGD,
    OPTIMIZERS,
    RULES,
    BlockNGD,
    FirstOrder,
    Method,
    Polyak,
    register_optimizer,
    side_by_side,
    tile,
)
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
from theorycheck.optim.mirror import (
    MirrorDescent,
    bregman,
    directional_bregman,
    dual_exponent,
    inverse_mirror_map,
    lp_norm,
    mirror_map,
    potential,
)
from theorycheck.optim.preconditioned import Preconditioned
from theorycheck.optim.step import Step
from theorycheck.optim.trajectory import ON_NONFINITE, REPRESENTATIONS, Trajectory, recorded_rows, run_trajectory

__all__ = [
    "Step",
    "Preconditioned",
    "Adam",
    "adam_steps",
    "cosine_schedule",
    "FirstOrder",
    "GD",
    "NGD",
    "Polyak",
    "BlockNGD",
    "Method",
    "RULES",
    "OPTIMIZERS",
    "register_optimizer",
    "side_by_side",
    "tile",
    "Iterate",
    "once_per_iterate",
    "Trajectory",
    "ON_NONFINITE",
    "REPRESENTATIONS",
    "alignment",
    "displacement",
    "frobenius_norm",
    "inner",
    "recorded_rows",
    "relative_error",
    "run_trajectory",
    "MirrorDescent",
    "bregman",
    "directional_bregman",
    "dual_exponent",
    "inverse_mirror_map",
    "lp_norm",
    "mirror_map",
    "potential",
    "standard_metrics",
]
