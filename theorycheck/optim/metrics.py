r"""Quantities measured along optimizer trajectories of the token-selection model
(Vasudeva, Deora, Thrampoulidis 2024, arXiv 2402.05738), batched over trials.

A metric is a callable ``metric(it: Iterate) -> Tensor`` of shape (K, ...).
"""

from dataclasses import dataclass

import torch

from theorycheck.models.token_selection import forward


@dataclass(frozen=True)
class Iterate:
    """Iterate theta_t = (u, W) at iteration t and the optimizer's next iterate theta_{t+1}."""

    t: int
    u: torch.Tensor
    W: torch.Tensor
    next_u: torch.Tensor
    next_W: torch.Tensor


def frobenius_norm(A):
    r"""||A_k||_F for every trial k, shape (K,)."""
    return A.flatten(1).norm(dim=1)


def inner(A, B):
    r"""<A_k, B_k> = sum of the entries of A_k * B_k for every trial k, shape (K,)."""
    return (A * B).flatten(1).sum(1)


def alignment(A, B):
    r"""al(A, B) = <A, B>/(||A||_F ||B||_F) per trial; A, B of equal shape (K, ...)."""
    return inner(A, B) / (frobenius_norm(A) * frobenius_norm(B))


def relative_error(A, B):
    r"""||A_k - B_k||_F / ||B_k||_F for every trial k, shape (K,)."""
    return frobenius_norm(A - B) / frobenius_norm(B)


def displacement(it):
    r"""||theta_{t+1} - theta_t|| = sqrt(||u_{t+1} - u_t||^2 + ||W_{t+1} - W_t||_F^2), shape (K,)."""
    return torch.hypot(frobenius_norm(it.next_u - it.u), frobenius_norm(it.next_W - it.W))


def once_per_iterate(fn):
    """``fn(it)``, evaluated once per `Iterate`: the metrics of one checkpoint that call the
    returned function share a single evaluation (the last one is kept until the next)."""
    last = {}

    def shared(it):
        if last.get("it") is not it:
            last.clear()
            last.update(it=it, value=fn(it))
        return last["value"]

    return shared


def standard_metrics(X, y, opt=None, W_ref=None, u_ref=None, iterates=False):
    r"""The usual metrics as a dict name -> callable (each returns a (K, ...) tensor).

    Always: "W_norm" ||W_t||_F, "u_norm" ||u_t||, "log_loss" log L(theta_t),
    "displacement" ||theta_{t+1} - theta_t||.  With ``opt`` (K,n): "log_excess_loss"
    log(L - L_*) with L_* = mean_i exp(-gamma_{i,opt_i}), and per sample (K,n)
    "s_opt" s_{i,opt_i}(W_t) and "log_one_minus_s_opt" log(1 - s_{i,opt_i}).
    With ``W_ref`` / ``u_ref``: "W_alignment" al(W_t, W_ref), "u_alignment"
    al(u_t, u_ref).  With ``iterates``: "u" and "W" themselves.  The loss and attention
    metrics share one forward pass per checkpoint.
    """
    state = once_per_iterate(lambda it: forward(X, y, it.u, it.W))
    metrics = {
        "W_norm": lambda it: frobenius_norm(it.W),
        "u_norm": lambda it: frobenius_norm(it.u),
        "log_loss": lambda it: state(it).log_loss(),
        "displacement": displacement,
    }
    if opt is not None:
        metrics["log_excess_loss"] = lambda it: state(it).log_excess_loss(opt)
        metrics["s_opt"] = lambda it: state(it).s_opt(opt)
        metrics["log_one_minus_s_opt"] = lambda it: state(it).log_one_minus_s_opt(opt)
    if W_ref is not None:
        metrics["W_alignment"] = lambda it: alignment(it.W, W_ref)
    if u_ref is not None:
        metrics["u_alignment"] = lambda it: alignment(it.u, u_ref)
    if iterates:
        metrics["u"] = lambda it: it.u
        metrics["W"] = lambda it: it.W
    return metrics
