"""Models: the softmax token-selection attention model (arXiv 2402.05738)."""

from theorycheck.models.token_selection import (
    attended_features,
    log_attention,
    log_excess_loss,
    log_loss,
    log_one_minus_s_opt,
    logits,
    loss_autograd_reference,
    margins,
    s_opt,
    scaled_grad_u,
    scaled_grad_W,
    scaled_gradients,
    score_deviations,
    token_scores,
)

__all__ = [
    "attended_features",
    "log_attention",
    "log_excess_loss",
    "log_loss",
    "log_one_minus_s_opt",
    "logits",
    "loss_autograd_reference",
    "margins",
    "s_opt",
    "scaled_grad_u",
    "scaled_grad_W",
    "scaled_gradients",
    "score_deviations",
    "token_scores",
]
