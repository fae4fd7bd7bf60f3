r"""Bounds on the W-gradient of the token-selection model under equal non-optimal scores.

With a fixed decoder and equal non-optimal scores (every gamma_{i,t}, t != o_i, equal; gap
Delta_i = gamma_{i,o} - gamma_{i,t}), the negative gradient has the closed form
(`closed_form_negative_grad_W`)

    -grad_W L = (1/n) sum_i c_i (x_{i,o} - xtilde_i) x_{i,1}^T,
    c_i = exp(-gbar_i) s_{i,o} (1 - s_{i,o}) Delta_i                 (`log_gradient_weights`),

a combination of the margin-constraint matrices (x_{i,o} - x_{i,t}) x_{i,1}^T.  For any W_ref
that satisfies every margin constraint (x_{i,o} - x_{i,t})^T W_ref x_{i,1} >= 1 -- the W-SVM
solution W_mm, say -- and R_i = ||x_{i,1}|| max_{t != o} ||x_{i,o} - x_{i,t}||
(`constraint_radii`) this gives

    (1/n) sum_i c_i <= <-grad L, W_ref>,
    (1/(n ||W_ref||)) sum_i c_i <= ||grad L|| <= (1/n) sum_i c_i R_i,
    <-grad L, W_ref/||W_ref||> / ||grad L|| >= kappa = 1/(||W_ref|| max_i R_i).

The ratios below are >= 1 (or <= 1) exactly when these hold; they are formed from the
scaled gradient exp(M) G in log space, so they stay exact where the gradient underflows.

**Allowances.**  Computed data meet equal non-optimal scores only to a spread eps_i (the largest
minus the least non-optimal score), the computed W_ref meets its constraints only to its solver's
accuracy, and the ratios carry round-off; `gradient_bounds` returns, per trial, how far each ratio
can lie on the wrong side of 1 for those reasons alone.  For any scores (Delta_i = gamma_{i,o} -
max_{t != o} gamma_{i,t}, so gamma_{i,t} = gamma_{i,o} - Delta_i - e_{i,t} with 0 <= e_{i,t} <= eps_i),
exactly (exponential loss, sum_t s_t (gamma_t - gbar) = 0)

    -grad L = (1/n) sum_i e^{-gbar_i} sum_{t != o} s_{i,t} (gbar_i - gamma_{i,t}) (x_{i,o} - x_{i,t}) x_{i,1}^T,
    gbar_i - gamma_{i,t} = s_{i,o} Delta_i + r_{i,t},   r_{i,t} = e_{i,t} - sum_{tau != o} s_{i,tau} e_{i,tau},

so -grad L = (G) + E with |r_{i,t}| <= eps_i and ||E|| <= (1/n) sum_i e^{-gbar_i} (1 - s_{i,o}) eps_i R_i =: e.
With m = the least constraint value (x_{i,o} - x_{i,t})^T W_ref x_{i,1} over the trial (>= 1 - D, D the
reference's deficit on the program it solves), eta_L = e / ((1/n) sum c_i) and
eta_R = e / ((1/n) sum c_i R_i):

    <-grad L, W_ref> / ((1/n) sum c_i) >= m - eta_L ||W_ref||        (correlation and lower),
    ||grad L|| / ((1/n) sum c_i R_i) <= 1 + eta_R                       (upper),
    cosine / kappa >= (m - eta_L ||W_ref||) / (1 + eta_R)              (cosine).

eps_i adds to the computed spread the scores' round-off, 2 d u ||u|| max_t ||x_{i,t}||.  The ratios'
relative round-off is bounded by rho = 2^6 u (nT + d^2) (1 + Z)(1 + P (||W_ref|| + 1/min_i R_i)), Z = the
largest |logit| + |score| of the trial (log-attentions, log-deviations and gbar err by O(u Z) absolute, so
every coefficient by O(u Z) relative), P = max ||x_{i,t}|| ||x_{i,1}||: a coefficient error breaks a
sample's balance sum_t s_t (gamma_t - gbar) = 0 and adds to the gradient up to its relative error times
sum_{i,t} |c_{i,t}| ||x_t|| ||x_1|| <= 2 (1 + eta) P sum_i c_i, against ||grad L|| >= m sum_i c_i / (n ||W_ref||)
(the lower ratios, the correlation and the cosine) and against (1/n) sum_i c_i R_i >= min_i R_i (1/n) sum_i c_i
(the upper ratio); nT-term sums and d^2-term inner products add (nT + d^2) u relative of the same scale.  The allowances
(``*_allowance``): ``lower`` (for ``lower`` and ``correlation``): D + eta_L ||W_ref|| + rho; ``upper``:
eta_R + rho (1 + eta_R); ``cosine``: 1 - (1 - D - eta_L ||W_ref||) / (1 + eta_R) + rho.  A ratio beyond
its allowance means that the algebra or the code is wrong; under exact equal scores and an exact
W_ref they are round-off sized.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..tolerance import unit_roundoff
from .base import FROBENIUS
from .token_selection import (_attend, _grad_W, _log_gradient_weights, constraint_radii, forward, logit_gap,
                              logits, optimal_token_mask, token_scores)

__all__ = ["GradientBounds", "closed_form_allowance", "correlation_floor", "gradient_bounds",
           "gradient_bounds_at_logits"]


def correlation_floor(X, opt, W_ref):
    r"""kappa = 1/(||W_ref||_F max_i R_i) per trial, shape (K,)."""
    return 1.0 / (FROBENIUS.norm(W_ref) * constraint_radii(X, opt).amax(-1))


@dataclass
class GradientBounds:
    r"""Ratios that are >= 1 (or <= 1) exactly when the bounds of the module docstring hold.

    ``lower``   ||grad L|| ||W_ref|| / ((1/n) sum c_i)            >= 1
    ``upper``   ||grad L|| / ((1/n) sum c_i R_i)                  <= 1
    ``correlation`` <-grad L, W_ref> / ((1/n) sum c_i)            >= 1
    ``cosine``  <-grad L, W_ref> / (||grad L|| ||W_ref||)          >= kappa
    ``log10_mean_c`` log10((1/n) sum_i c_i), how far from stationary the point is.
    ``lower_allowance``, ``upper_allowance``, ``cosine_allowance``: per trial, how far below 1
    (``lower``, ``correlation``; ``cosine`` / kappa) or above 1 (``upper``) the ratio can lie by the
    data's spread of non-optimal scores, W_ref's deficit and round-off (module docstring).
    """

    lower: torch.Tensor
    upper: torch.Tensor
    correlation: torch.Tensor
    cosine: torch.Tensor
    log10_mean_c: torch.Tensor
    lower_allowance: torch.Tensor
    upper_allowance: torch.Tensor
    cosine_allowance: torch.Tensor


def gradient_bounds(X, y, u, W, opt, W_ref, ref_opt=None, *, spread_cap=math.inf) -> GradientBounds:
    """The ratios of `GradientBounds` at ``W`` (K,d,d) for designated tokens ``opt`` (K,n), with their
    allowances; ``ref_opt``: the tokens whose W-SVM ``W_ref`` solves (default ``opt``), on whose
    constraints its deficit is measured; ``spread_cap``: see `gradient_bounds_at_logits`."""
    return gradient_bounds_at_logits(X, y, u, logits(X, W), opt, W_ref, ref_opt, spread_cap=spread_cap)


def gradient_bounds_at_logits(X, y, u, z, opt, W_ref, ref_opt=None, *, spread_cap=math.inf) -> GradientBounds:
    r"""`gradient_bounds` at the logits ``z`` (K,n,T) of a point in place of the point: the gradient
    depends on W only through its logits, and the bounds of (G) hold for any attention (any logits),
    with the same allowances (their round-off analysis takes the logits as inputs, which only removes
    the logits' own round-off from it).  A run that steps in coefficient space records its iterates'
    logits cheaply (`theorycheck.models.token_selection.TokenSelection.logits`).

    ``spread_cap``: eps_i of the allowances is min(the computed spread of the non-optimal scores,
    ``spread_cap``) plus their round-off.  With the tolerance of a checked hypothesis (equal
    non-optimal scores to ``spread_cap``) the allowances are proven for data that meet it and change
    nothing there (their computed spreads are below the cap to round-off, which eps_i adds); on data
    that violate it they are what data meeting it could give, so a bound broken by the violation
    stays broken (default: no cap, the allowances for any scores)."""
    fw = _attend(token_scores(X, y, u), z)
    M, G = _grad_W(X, fw)
    log_c = _log_gradient_weights(fw, opt)
    R = constraint_radii(X, opt)
    log_n = math.log(X.shape[1])
    log_mean_c = log_c.logsumexp(-1) - log_n
    log_mean_cR = (log_c + R.log()).logsumexp(-1) - log_n
    norm_G, ref_norm, corr_G = FROBENIUS.norm(G), FROBENIUS.norm(W_ref), FROBENIUS.inner(-G, W_ref)

    unit = unit_roundoff(X.dtype)
    token_norms = X.norm(dim=-1)
    log_e = _log_spread_error(X, u, opt, fw, R, spread_cap)
    eta_L, eta_R = torch.exp(log_e - log_mean_c), torch.exp(log_e - log_mean_cR)
    deficit = (1 - logit_gap(X, W_ref, opt if ref_opt is None else ref_opt).amin(-1)).clamp_min(0)
    Z = (z.abs() + fw.gamma.abs()).flatten(1).amax(-1)
    P = (token_norms * token_norms[..., :1]).flatten(1).amax(-1)
    rho = (2**6 * unit * (X.shape[1] * X.shape[2] + X.shape[-1] ** 2) * (1 + Z)
           * (1 + P * (ref_norm + 1 / R.amin(-1))))
    shift = deficit + eta_L * ref_norm
    return GradientBounds(lower=norm_G * torch.exp(M - log_mean_c) * ref_norm,
                          upper=norm_G * torch.exp(M - log_mean_cR),
                          correlation=corr_G * torch.exp(M - log_mean_c),
                          cosine=corr_G / (norm_G * ref_norm),
                          log10_mean_c=log_mean_c / math.log(10.0),
                          lower_allowance=shift + rho,
                          upper_allowance=eta_R + rho * (1 + eta_R),
                          cosine_allowance=1 - (1 - shift) / (1 + eta_R) + rho)


def _log_spread_error(X, u, opt, fw, R, spread_cap=math.inf):
    r"""log e per trial, e = (1/n) sum_i e^{-gbar_i} (1 - s_{i,o}) eps_i R_i (module docstring):
    ||-grad L - (G)|| <= e, with eps_i = min(the computed spread of the non-optimal scores,
    ``spread_cap``) + their round-off 2 d u ||u|| max_t ||x_{i,t}||."""
    mask = optimal_token_mask(opt, X.shape[2])
    spread = (fw.gamma.masked_fill(mask, -math.inf).amax(-1) - fw.gamma.masked_fill(mask, math.inf).amin(-1))
    eps = (spread.clamp_max(spread_cap)
           + 2 * X.shape[-1] * unit_roundoff(X.dtype) * u.norm(dim=-1)[:, None] * X.norm(dim=-1).amax(-1))
    return (fw.log_slopes() + fw.log_one_minus_s_opt(opt) + eps.log() + R.log()).logsumexp(-1) - math.log(X.shape[1])


def closed_form_allowance(X, y, u, W, opt, reference, spread_cap=math.inf):
    r"""Per trial, a proven bound on ||(G) + reference|| / ||reference||, (G) =
    `closed_form_negative_grad_W` and ``reference`` = `autograd_grad_W` (both at ``W``), shape (K,).

    ``||(G)^ - g^|| <= ||(G)^ - (G)|| + ||(G) - g|| + ||g - g^||`` (hats: computed; g = -grad L
    exactly at the stored inputs).  The middle term is the spread term e of the module docstring
    (exactly, for any scores), with eps_i capped at ``spread_cap``: where every computed spread is
    below the cap (data meeting equal non-optimal scores to that tolerance) the cap changes nothing
    and the bound is proven; where a spread exceeds it, the allowance is what data meeting the
    hypothesis could give, and (G) is expected to differ by more.

    The outer terms are forward errors.  With mu_i = max_t ||x_{i,t}||, every term of either
    evaluation is bounded by sample i's scale |l'(gbar_i)| ||u|| mu_i^2 ||x_{i,1}||: autograd's
    coefficients |l'| s_t (gamma_t - gbar) x_t x_1^T (the softmax backward s_t (g_t - sum s g)) by
    |l'| s_t 2 mu ||u|| mu ||x_1||, summing to twice the scale over t; (G)'s c_i ||x_o - xtilde|| ||x_1||
    with c_i <= |l'| s_o (1 - s_o) 2 mu ||u||, by the scale.  Let S = (1/n) sum_i of the scales (the
    gradient's cancellation scale: S / ||g|| is its condition number) and Z = max_{i,t} ||x_{i,t}||
    (||W|| ||x_{i,1}|| + ||u||), which bounds the absolute terms of every logit and score.  Logits and
    scores err by <= 2 d u Z absolute, so every attention, loss slope l' and coefficient by
    O((d + T) u (1 + Z)) relative (the score gap Delta_i of (G) by 2 d u mu_i ||u|| absolute, i.e. c_i by
    that times |l'| s_o (1 - s_o), within the scale), and the nT-term sum of rank-one terms adds nT u
    of the summed absolute terms; each evaluation's error is at most a few times
    u (nT + d)(1 + Z) S < rho S, rho = 2^6 u (nT + d^2)(1 + Z) (the factor of `gradient_bounds`).
    The allowance ``(2 rho S + (1 + rho) e) / ||reference||`` covers, besides, its own round-off (relative
    O(rho / 2^6)).  Only the naive evaluation needs attention away from saturation (its exp must not
    underflow against its sums); the allowance is formed in log space like the bounds.
    """
    fw = forward(X, y, u, W)
    log_e = _log_spread_error(X, u, opt, fw, constraint_radii(X, opt), spread_cap)
    token_norms = X.norm(dim=-1)
    u_norm = u.norm(dim=-1)
    Z = (token_norms * (FROBENIUS.norm(W)[:, None, None] * token_norms[..., :1] + u_norm[:, None, None])).flatten(1).amax(-1)
    log_S = ((fw.log_slopes() + 2 * token_norms.amax(-1).log() + token_norms[..., 0].log()).logsumexp(-1)
             - math.log(X.shape[1]) + u_norm.log())
    rho = 2**6 * unit_roundoff(X.dtype) * (X.shape[1] * X.shape[2] + X.shape[-1] ** 2) * (1 + Z)
    log_ref = FROBENIUS.norm(reference).log()
    return 2 * rho * torch.exp(log_S - log_ref) + (1 + rho) * torch.exp(log_e - log_ref)
