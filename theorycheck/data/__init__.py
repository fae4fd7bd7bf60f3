"""Token-sequence data: a batched container, seeded trial streams, measurements of the tokens
(numpy, float64, CPU; moved to a device only on request), the token choices of attention
(`selection`).  Papers' data sets live with their claims (``claims/<paper>/``)."""

from theorycheck.data.selection import selected_tokens, stable_tokens, token_assignments
from theorycheck.data.token_selection import (
    AssumptionReport,
    Seeds,
    TokenSelectionData,
    TokenSelectionInstance,
    TokenSelectionTensors,
    concatenate,
    constraint_radii,
    max_cross_inner_product,
    non_optimal_spread,
    opt_is_argmax,
    orthogonality_ratio,
    score_gaps,
    token_gram,
    token_scores,
    trial_generators,
)

__all__ = [
    "AssumptionReport",
    "Seeds",
    "TokenSelectionData",
    "TokenSelectionInstance",
    "TokenSelectionTensors",
    "concatenate",
    "constraint_radii",
    "max_cross_inner_product",
    "non_optimal_spread",
    "opt_is_argmax",
    "orthogonality_ratio",
    "score_gaps",
    "selected_tokens",
    "stable_tokens",
    "token_assignments",
    "token_gram",
    "token_scores",
    "trial_generators",
]
