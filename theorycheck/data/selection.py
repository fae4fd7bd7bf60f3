r"""Token choices of attention: the tokens a key-query matrix selects, whether a selection has
settled along a run, and every choice of one token per sample.

A token choice ``alpha`` ``(n,)`` picks one token of each sample (0-based), e.g. the optimal
tokens ``opt`` or the tokens the attention selects: with key-query matrix ``W`` the attention
of sample ``i`` is ``s_i = softmax_t(<x_{i,t}, W x_{i,0}>)`` (query = token 0, the model of
:mod:`theorycheck.models.token_selection`), and its selected token is the largest entry.
Arrays in, arrays out (numpy; the model's torch functions evaluated on the arrays).  How a
token choice sits against its max-margin solution (support tokens, local optimality) is in
:mod:`theorycheck.solvers.support`.
"""

from __future__ import annotations

import numpy as np
import torch

from theorycheck.errors import InvalidInputError
from theorycheck.models.token_selection import log_attention

__all__ = ["selected_tokens", "stable_tokens", "token_assignments"]


def selected_tokens(X: np.ndarray, W: np.ndarray, queries: np.ndarray | None = None) -> np.ndarray:
    r"""Selected token of each sample: argmax_t s_{i,t}(W) = argmax_t <x_{i,t}, W z_i> (z_i = x_{i,0}).

    The argmax is taken of the log-attention ``log softmax_t`` of the logits (the first token on
    ties).

    Parameters
    ----------
    X : ndarray, shape (K, n, T, d)
        Tokens of K trials (token 0 of every sample is its query).
    W : ndarray, shape (K, d, d)
        One key-query matrix per trial.
    queries : ndarray, shape (K, n, d), optional
        Cross-attention: one query z_i per sample (default: the first token x_{i,0}).

    Returns
    -------
    ndarray of int64, shape (K, n)
        The selected token of every sample of every trial.

    Raises
    ------
    InvalidInputError
        If X is not (K, n, T, d) or W not (K, d, d).
    """
    X, W = np.asarray(X), np.asarray(W)
    if X.ndim != 4 or W.shape != (X.shape[0], X.shape[3], X.shape[3]):
        raise InvalidInputError(f"selected_tokens: need X (K, n, T, d) and W (K, d, d), got X {X.shape} "
                                f"and W {W.shape}")
    Z = None if queries is None else torch.as_tensor(np.asarray(queries))
    return log_attention(torch.as_tensor(X), torch.as_tensor(W), queries=Z).argmax(-1).numpy()


def stable_tokens(t: np.ndarray, tokens: np.ndarray, alpha: np.ndarray, fraction: float = 0.3) -> np.ndarray:
    r"""Settled selection per run: tokens_c = alpha at every checkpoint c with t_c >= round((1 - fraction) t_C).

    Parameters
    ----------
    t : ndarray, shape (C,)
        Increasing steps of the checkpoints; t_C = ``t[-1]`` is the last.
    tokens : ndarray of int, shape (C, J, n)
        The selected tokens of J runs at every checkpoint (`selected_tokens`).
    alpha : ndarray of int, shape (J, n)
        The token choice each run is compared with (e.g. its last selection).
    fraction : float, optional
        The trailing fraction of the steps, in [0, 1] (default 0.3).

    Returns
    -------
    ndarray of bool, shape (J,)
        Whether the run selects ``alpha`` at every checkpoint of the last ``fraction`` of steps.

    Raises
    ------
    InvalidInputError
        On shapes that do not match or a fraction outside [0, 1].
    """
    t, tokens, alpha = np.asarray(t), np.asarray(tokens), np.asarray(alpha)
    if tokens.ndim != 3 or t.shape != tokens.shape[:1] or alpha.shape != tokens.shape[1:]:
        raise InvalidInputError(f"stable_tokens: need t (C,), tokens (C, J, n) and alpha (J, n), got t "
                                f"{t.shape}, tokens {tokens.shape} and alpha {alpha.shape}")
    if not 0 <= fraction <= 1:
        raise InvalidInputError(f"stable_tokens: fraction must lie in [0, 1], got {fraction}")
    start = np.searchsorted(t, round((1 - fraction) * t[-1]))
    return np.all(tokens[start:] == alpha[None], axis=(0, 2))


def token_assignments(T: int, n: int) -> np.ndarray:
    r"""Every token choice: all alpha in {0, ..., T-1}^n, the T^n rows in lexicographic order.

    Parameters
    ----------
    T : int
        Tokens per sample (>= 1).
    n : int
        Samples (>= 1).

    Returns
    -------
    ndarray of int, shape (T^n, n)
        Row r is the r-th choice, the last sample varying fastest.

    Raises
    ------
    InvalidInputError
        If T or n is below 1.
    """
    if T < 1 or n < 1:
        raise InvalidInputError(f"token_assignments: need T >= 1 and n >= 1, got T={T}, n={n}")
    return np.stack(np.meshgrid(*[np.arange(T)] * n, indexing="ij"), -1).reshape(-1, n)
