r"""A token choice against its max-margin solution: support tokens, local optimality, safe gap.

One instance: tokens X (n, T, d) (query z_i = x_{i,0}), a token choice alpha (n,) and a
solution W_mm of the max-margin program of alpha -- the W-SVM (`theorycheck.solvers.svm`) or
the l_p-AttSVM (`theorycheck.solvers.lp_margin`), whose constraints are

    m_{i,t}(W) = (x_{i,alpha_i} - x_{i,t})^T W x_{i,0} >= 1      for all i, t != alpha_i.

The support tokens of W_mm are those whose constraint is tight.  With token scores
gamma_{i,t} (e.g. y_i v^T x_{i,t}, `theorycheck.data.token_scores`), alpha is locally optimal
(Tarzanagh et al. 2023; Julistiono, Tarzanagh, Azizan 2024 for the l_p-AttSVM) when every
support token scores strictly below alpha_i, and the safe gap is the smallest margin
excess over 1 of the tokens that score at least as high as alpha_i.
"""

from __future__ import annotations

import numpy as np

from theorycheck.errors import InvalidInputError
from theorycheck.solvers.margin import constraint_values
from theorycheck.solvers.svm import wsvm_constraint_factors

__all__ = ["SUPPORT_TOL", "locally_optimal", "safe_gap", "support_tokens"]

SUPPORT_TOL = 1e-6
"""|m_{i,t} - 1| <= SUPPORT_TOL makes t a support token (margins are certified to ~1e-12)."""


def _margins(X, alpha, W_mm, queries=None):
    """(m (k,), index (k, 2) rows (i, t)): the constraint values of alpha at W_mm."""
    W_mm = np.asarray(W_mm)
    if W_mm.shape != (np.shape(X)[-1],) * 2:
        raise InvalidInputError(f"need W_mm of shape (d, d) for X {np.shape(X)}, got {W_mm.shape}")
    A, B, index = wsvm_constraint_factors(X, alpha, queries)
    return constraint_values(A, B, W_mm), index


def _check_scores(X, scores):
    if np.shape(scores) != np.shape(X)[:2]:
        raise InvalidInputError(f"need scores of shape (n, T) = {np.shape(X)[:2]}, got {np.shape(scores)}")


def support_tokens(X: np.ndarray, alpha: np.ndarray, W_mm: np.ndarray, tol: float = SUPPORT_TOL,
                   queries: np.ndarray | None = None) -> np.ndarray:
    r"""Support tokens of W_mm: |m_{i,t}(W_mm) - 1| <= tol, t != alpha_i (m_{i,t} of the module docstring).

    Parameters
    ----------
    X : ndarray, shape (n, T, d)
        Tokens of one instance.
    alpha : ndarray of int, shape (n,)
        The token choice of the max-margin program.
    W_mm : ndarray, shape (d, d)
        A solution of that program.
    tol : float, optional
        Tightness tolerance (default `SUPPORT_TOL`).
    queries : ndarray, shape (n, d), optional
        Cross-attention queries z_i of the program (default: the first tokens x_{i,0}).

    Returns
    -------
    ndarray of bool, shape (n, T)
        True at the support tokens (never at t = alpha_i).

    Raises
    ------
    ValueError
        If W_mm is not (d, d) (InvalidInputError), or X, alpha are not (n, T, d), (n,) with T >= 2
        and valid token indices (from `wsvm_constraint_factors`).
    """
    m, index = _margins(X, alpha, W_mm, queries)
    mask = np.zeros(np.shape(X)[:2], dtype=bool)
    tight = np.abs(m - 1) <= tol
    mask[index[tight, 0], index[tight, 1]] = True
    return mask


def locally_optimal(X: np.ndarray, scores: np.ndarray, alpha: np.ndarray, W_mm: np.ndarray,
                    tol: float = SUPPORT_TOL, queries: np.ndarray | None = None) -> bool:
    r"""Local optimality of alpha: gamma_{i,t} < gamma_{i,alpha_i} for every support token t of W_mm (`support_tokens`).

    Parameters
    ----------
    X : ndarray, shape (n, T, d)
        Tokens of one instance.
    scores : ndarray, shape (n, T)
        Token scores gamma_{i,t}.
    alpha : ndarray of int, shape (n,)
        The token choice.
    W_mm : ndarray, shape (d, d)
        The solution of alpha's max-margin program (W-SVM or l_p-AttSVM).
    tol : float, optional
        Tightness tolerance of the support tokens (default `SUPPORT_TOL`).
    queries : ndarray, shape (n, d), optional
        Cross-attention queries z_i of the program (default: the first tokens x_{i,0}).

    Returns
    -------
    bool
        Whether every support token scores strictly below its sample's alpha_i.

    Raises
    ------
    InvalidInputError
        If scores is not (n, T) or W_mm not (d, d).
    """
    _check_scores(X, scores)
    support = support_tokens(X, alpha, W_mm, tol, queries)
    own = scores[np.arange(len(alpha)), alpha][:, None]
    return bool(np.all(~support | (scores < own)))


def safe_gap(X: np.ndarray, scores: np.ndarray, alpha: np.ndarray, W_mm: np.ndarray) -> float:
    r"""Safe gap: delta_safe = min {m_{i,t}(W_mm) - 1 : t != alpha_i, gamma_{i,t} >= gamma_{i,alpha_i}} (inf if empty).

    A locally optimal alpha with delta_safe > 0 keeps every token that scores at least as high
    as alpha_i strictly outside the support of W_mm.

    Parameters
    ----------
    X : ndarray, shape (n, T, d)
        Tokens of one instance.
    scores : ndarray, shape (n, T)
        Token scores gamma_{i,t}.
    alpha : ndarray of int, shape (n,)
        The token choice.
    W_mm : ndarray, shape (d, d)
        The solution of alpha's max-margin program.

    Returns
    -------
    float
        delta_safe; inf when no other token scores at least as high as its alpha_i.

    Raises
    ------
    InvalidInputError
        If scores is not (n, T) or W_mm not (d, d).
    """
    _check_scores(X, scores)
    m, index = _margins(X, alpha, W_mm)
    own = scores[index[:, 0], alpha[index[:, 0]]]
    higher = scores[index[:, 0], index[:, 1]] >= own
    return float(np.min(m[higher] - 1)) if higher.any() else np.inf
