r"""Softmax token-selection attention model, batched over independent trials.

The self-attention token-selection model (as in Tarzanagh et al. 2023, arXiv 2306.13596, and
Vasudeva, Deora, Thrampoulidis 2024, arXiv 2402.05738).  A sample is a sequence
X_i in R^{T x d} with rows x_{i,t}; token 0 (x_{i,1} in 1-based notation, written x_1
below) is the query.  With key-query matrix W in R^{d x d}
and linear decoder u in R^d:

    logits       z_{i,t}     = x_{i,t}^T W x_{i,1}
    attention    s_i         = softmax(z_i) in the simplex,  a_i = log s_i
    prediction   f(X_i)      = u^T X_i^T s_i = sum_t s_{i,t} u^T x_{i,t}
    token scores gamma_{i,t} = y_i u^T x_{i,t}          (Definition 1)
    margin       gbar_i      = y_i f(X_i) = sum_t s_{i,t} gamma_{i,t}
    loss         L(u, W)     = (1/n) sum_i l(gbar_i)

with the exponential loss l(m) = exp(-m) (the default) or the logistic loss
l(m) = log(1 + exp(-m)) (``loss="logistic"``, the loss of the papers' experiments).

Cross-attention (``queries``, a tensor (K,n,d)): each sample has its own query z_i, not
necessarily one of its tokens, and the logits are z_{i,t} = x_{i,t}^T W z_i; every formula
below holds with x_{i,1} replaced by z_i.  ``queries=None`` (the default) is self-attention,
z_i = x_{i,1}, computed exactly as before the option existed.

Nothing here assumes near-orthogonal tokens or equal non-optimal scores: every function is
exact for arbitrary X, y, u, W.  The last section evaluates a closed form of -grad_W L that
equals the gradient only when all non-optimal scores of each sample are equal ("equal
non-optimal scores" below); checking that is the caller's business.

`TokenSelection` puts the model on the protocol of `theorycheck.models.base`: with a fixed
decoder u its one block is W, otherwise its blocks are (u, W).  It has two representations:
dense, and coefficients over the span of the data (`Span`): every gradient in W is a
combination of x_{i,t} z_i^T (z_i the query: x_{i,1}, or the given one), so
W_t = W_0 + sum C_{i,t} x_{i,t} z_i^T and a step needs only the nT x nT kernel
<x_a, x_b><z_{i(a)}, z_{i(b)}> (`span_kernel`); likewise u_t - u_0 lies in the span of the
tokens.  Both losses and both kinds of attention have both representations.

Shapes: every tensor carries a leading trial dimension K; trials are independent
problems computed together.  X (K,n,T,d), y (K,n) in {-1,+1}, u (K,d),
W (K,d,d), opt (K,n) integer index (0-based) of a designated token per sample.
Results live on the device and in the dtype of the inputs (use float64).

Numerics.  Once attention saturates (1 - s_{i,opt} below ~1e-13) the textbook
gradient, and autograd's softmax backward, lose all accuracy through the
cancellation gamma_{i,t} - gbar_i, and once ||grad L|| < ~1e-160 its squared norm
underflows.  The functions below therefore work in log space:

* the deviation delta_{i,t} = gamma_{i,t} - gbar_i = sum_tau s_{i,tau} (gamma_{i,t}
  - gamma_{i,tau}) is evaluated as this signed sum, in log magnitude with a common
  shift (`signed_logsumexp`), never by subtracting gbar_i;
* gradients are returned as (M, G) with grad = exp(M) * G and max |coefficient|
  of G equal to 1, so the direction G/||G|| stays exact when exp(M) underflows;
* the excess loss L - L_* is assembled from expm1 of the exact deviations (and, for the
  logistic loss, log1p of them: l(g - delta) - l(g) = log1p(sigma(-g) expm1(delta)));
* the logistic loss is evaluated in log form: log l(m) = -m + log(log1p(e^{-m}) / e^{-m})
  for m > 0 (exact when e^{-m} underflows), log(-m + log1p(e^m)) for m <= 0, and its slope
  |l'(m)| = sigma(-m) as log sigma(-m) = -(max(m, 0) + log1p(exp(-|m|))).
"""

import math
from typing import NamedTuple

import torch

from theorycheck.errors import DeclarationError, InvalidInputError
from theorycheck.models.base import FROBENIUS, Gram, Instance, Model, Scaled, per_trial, register_model, rescale

__all__ = [
    "Forward",
    "LOSSES",
    "LogisticForward",
    "TokenSelection",
    "attended_features",
    "autograd_grad_W",
    "closed_form_negative_grad_W",
    "constraint_radii",
    "forward",
    "log_attention",
    "log_excess_loss",
    "log_logistic",
    "log_gradient_weights",
    "log_loss",
    "log_one_minus_s_opt",
    "logit_gap",
    "logits",
    "loss_autograd_reference",
    "margins",
    "optimal_token_mask",
    "s_opt",
    "scaled_grad_u",
    "scaled_grad_W",
    "scaled_gradients",
    "score_deviations",
    "score_gap",
    "token_scores",
    "tokens_at",
]

_NEG_INF = float("-inf")

#: the losses l(m) of a margin m the model knows: "exponential" exp(-m), "logistic" log(1 + exp(-m))
LOSSES = ("exponential", "logistic")


def _check_loss(loss):
    """DeclarationError unless ``loss`` is one of `LOSSES`."""
    if loss not in LOSSES:
        raise DeclarationError(f"token selection: unknown loss {loss!r}; the model has the losses "
                               f"{', '.join(map(repr, LOSSES))}")
    return loss


def _query_tokens(X, queries):
    r"""The queries z_i (K,n,d): x_{i,1} = X[:, :, 0] for self-attention (``queries`` None, a view
    of X, so that the default path is computed exactly as without the option), else ``queries``
    checked against X's shape (InvalidInputError)."""
    if queries is None:
        return X[:, :, 0, :]
    K, n, T, d = X.shape
    if not isinstance(queries, torch.Tensor) or tuple(queries.shape) != (K, n, d):
        shape = tuple(queries.shape) if isinstance(queries, torch.Tensor) else type(queries).__name__
        raise InvalidInputError(f"token selection: queries must be a tensor of shape (K, n, d) = "
                                f"{(K, n, d)} (one query z_i per sample), got {shape}")
    return queries


# ---------------------------------------------------------------- log-space helpers


def signed_logsumexp(log_abs, sign, dim):
    r"""log|S| and sign(S) for S = sum_j sign_j exp(log_abs_j), reduced over `dim`.

    With m = max_j log_abs_j, S = exp(m) (P' - N'), where P' and N' are the sums
    of the positive and negative terms exp(log_abs_j - m) <= 1.  The largest term
    is exactly 1, so nothing relevant underflows however small exp(m) is, and
    P' - N' has relative error ~ eps (P + N)/|P - N|, the conditioning of the
    sum itself (as good as a difference of separately computed log P and
    log N).  Entries with sign 0 must have log_abs = -inf; a zero sum gives
    (-inf, 0).
    """
    m, terms = rescale(log_abs, sign, dim)
    total = terms.sum(dim)
    return m.squeeze(dim) + total.abs().log(), torch.sign(total)


#: below |x| = exp(TINY_LOG) a ratio like log1p(x)/x is 1 - x/2 to float64 precision (x^2/3 < 1e-32)
TINY_LOG = -40.0


def log_abs_expm1(log_abs_x, sign_x):
    r"""log|exp(x) - 1| for x = sign_x * exp(log_abs_x), without ever forming 1 + x.

    With a = |x|:  log|exp(x) - 1| = log a + log((1 - exp(-a))/a) + max(x, 0),
    where (1 - exp(-a))/a = -expm1(-a)/a lies in (0, 1] and tends to 1 as a -> 0, so the
    result is accurate for every a, including a below the float range.  Below
    a = exp(`TINY_LOG`) the log of the ratio is its series -a/2 (expm1 of a subnormal a loses
    digits).
    """
    a = torch.exp(log_abs_x)
    ratio = torch.where(a > 0, torch.expm1(-a) / -a, 1.0)
    log_ratio = torch.where(log_abs_x < TINY_LOG, -a / 2, torch.log(ratio))
    return log_abs_x + log_ratio + torch.where(sign_x > 0, a, 0.0)


def log_logistic(m):
    r"""log l(m) = log log(1 + exp(-m)), accurate for every m.

    For m > 0, with x = e^{-m} in (0, 1]: log l = -m + log(log1p(x)/x), the ratio in
    [log 2, 1] and 1 where x underflows, so log l stays exact far below the float range
    (log l ~ -m).  For m <= 0, l = -m + log1p(e^m) >= log 2 is taken directly."""
    x = torch.exp(-m.abs())
    lp = torch.log1p(x)
    ratio = torch.where(x > 0, lp / x, 1.0)
    return torch.where(m > 0, -m + torch.log(ratio), torch.log((-m).clamp_min(0) + lp))


def _log_sigmoid_neg(m):
    r"""log sigma(-m) = log(1/(1 + e^m)) = -(max(m, 0) + log1p(exp(-|m|))) = log |l'(m)| of the
    logistic loss, accurate for every m."""
    return -(m.clamp_min(0) + torch.log1p(torch.exp(-m.abs())))


def _log_abs_log1p(log_abs_r, sign_r):
    r"""log|log1p(r)| for r = sign_r exp(log_abs_r) > -1, without forming 1 + r where it matters.

    |r| <= e: log|r| + log(log1p(r)/r), the ratio tending to 1 as r -> 0, its log the series
    -r/2 below |r| = exp(`TINY_LOG`) (log1p of a subnormal r loses digits), so exact for r far
    below the float range; r > e: log(log r + log1p(1/r)), exact when r itself would overflow.
    r = 0 (log_abs_r = -inf) gives -inf."""
    big = (sign_r > 0) & (log_abs_r > 1)
    r = sign_r * torch.exp(log_abs_r.clamp_max(1))
    ratio = torch.where(r != 0, torch.log1p(r) / torch.where(r != 0, r, 1.0), 1.0)
    small = log_abs_r + torch.where(log_abs_r < TINY_LOG, -r / 2, torch.log(ratio))
    large = torch.log(log_abs_r.clamp_min(1) + torch.log1p(torch.exp(-log_abs_r.clamp_min(1))))
    return torch.where(big, large, small)


# ---------------------------------------------------------------- model


def token_scores(X, y, u):
    r"""gamma_{i,t} = y_i u^T x_{i,t}, shape (K,n,T)."""
    K, n, T, d = X.shape
    return torch.bmm(X.reshape(K, n * T, d), u[:, :, None]).reshape(K, n, T) * y[..., None]


def logits(X, W, *, queries=None):
    r"""z_{i,t} = x_{i,t}^T W z_i with the query z_i = x_{i,1} (token 0) or a given one, shape (K,n,T).

    Parameters
    ----------
    X : torch.Tensor
        Tokens, (K,n,T,d).
    W : torch.Tensor
        Key-query matrices, (K,d,d).
    queries : torch.Tensor, optional
        Cross-attention: one query z_i per sample, (K,n,d).  None (default): self-attention,
        z_i = x_{i,1}.  Another shape raises InvalidInputError.
    """
    K, n, T, d = X.shape
    query = torch.bmm(_query_tokens(X, queries), W.transpose(1, 2))  # rows (W z_i)^T, (K,n,d)
    return torch.bmm(X.reshape(K * n, T, d), query.reshape(K * n, d, 1)).reshape(K, n, T)


def log_attention(X, W, *, queries=None):
    r"""a_{i,t} = log s_{i,t} = log softmax_t(z_{i,t}), shape (K,n,T) (``queries``: see `logits`)."""
    return torch.log_softmax(logits(X, W, queries=queries), dim=-1)


def _weighted_tokens(w, X):
    """sum_t w_{i,t} x_{i,t}, shape (K,n,d)."""
    K, n, T, d = X.shape
    return torch.bmm(w.reshape(K * n, 1, T), X.reshape(K * n, T, d)).reshape(K, n, d)


def attended_features(X, W, *, queries=None):
    r"""X_i^T s_i = sum_t s_{i,t} x_{i,t}, shape (K,n,d) (``queries``: see `logits`)."""
    return _weighted_tokens(log_attention(X, W, queries=queries).exp(), X)


def tokens_at(X, index):
    r"""x_{i,index_i}, one token per sample (e.g. the designated ones, index = opt), shape (K,n,d)."""
    return X.gather(2, index[..., None, None].expand(-1, -1, 1, X.shape[-1])).squeeze(2)


def optimal_token_mask(opt, T):
    """Boolean (K,n,T), true at t = opt_i."""
    return torch.arange(T, device=opt.device) == opt[..., None]


def _gap_to_other_tokens(values, opt):
    r"""v_{i,opt_i} - max_{t != opt_i} v_{i,t} for per-token values v (K,n,T), shape (K,n)."""
    v_opt = values.gather(-1, opt[..., None]).squeeze(-1)
    return v_opt - values.masked_fill(optimal_token_mask(opt, values.shape[-1]), _NEG_INF).amax(-1)


def score_gap(X, y, u, opt):
    r"""Delta_i = gamma_{i,o} - max_{t != o} gamma_{i,t}, shape (K,n) (o = opt_i).

    With equal non-optimal scores (all gamma_{i,t}, t != o, equal) this is the common gap
    gamma_{i,o} - gamma_{i,t} of every t != o."""
    return _gap_to_other_tokens(token_scores(X, y, u), opt)


def logit_gap(X, W, opt, *, queries=None):
    r"""min_{t != o} g_{i,t}(W), g_{i,t} = (x_{i,o} - x_{i,t})^T W z_i = z_{i,o} - z_{i,t}, shape (K,n).

    The smallest W-SVM constraint value of sample i: sample i violates the W-SVM at W iff it
    is < 1.  The query z_i is x_{i,1} or given (``queries``: see `logits`)."""
    return _gap_to_other_tokens(logits(X, W, queries=queries), opt)


def constraint_radii(X, opt, *, queries=None):
    r"""R_i = ||z_i|| max_{t != o} ||x_{i,o} - x_{i,t}||, shape (K,n): the largest Frobenius norm
    of a W-SVM constraint matrix (x_{i,o} - x_{i,t}) z_i^T of sample i (z_i = x_{i,1}, or the
    given query: ``queries``, see `logits`)."""
    spread = (tokens_at(X, opt)[:, :, None, :] - X).norm(dim=-1).amax(-1)
    return spread * _query_tokens(X, queries).norm(dim=-1)


def _s_opt(a, opt):
    return a.gather(-1, opt[..., None]).squeeze(-1).exp()


def _log_one_minus_s_opt(a, opt):
    return a.masked_fill(optimal_token_mask(opt, a.shape[-1]), _NEG_INF).logsumexp(-1)


def s_opt(X, W, opt, *, queries=None):
    r"""s_{i,opt_i}, the attention on the designated token, shape (K,n) (``queries``: see `logits`)."""
    return _s_opt(log_attention(X, W, queries=queries), opt)


def log_one_minus_s_opt(X, W, opt, *, queries=None):
    r"""log(1 - s_{i,opt_i}) = logsumexp_{t != opt_i} a_{i,t}, shape (K,n).

    Exact for saturated attention, where log(1 - s) would return -inf.  ``queries``: see `logits`.
    """
    return _log_one_minus_s_opt(log_attention(X, W, queries=queries), opt)


class Forward(NamedTuple):
    r"""The forward pass at (u, W): token scores gamma (K,n,T), log-attention a (K,n,T) and
    margins gbar_i = sum_t s_{i,t} gamma_{i,t} (K,n).

    Losses, attention statistics and gradients are functions of it, so that quantities
    measured at one iterate can share a single evaluation of the attention logits (the
    d x d matrix products that dominate the cost).  Its methods equal the module functions
    of the same names.  This class is the exponential loss l(m) = exp(-m); `LogisticForward`
    the logistic one (`forward` and `TokenSelection.forward` return the one of their loss).
    """

    gamma: torch.Tensor
    a: torch.Tensor
    gbar: torch.Tensor

    #: the loss l of the margins (one of `LOSSES`)
    loss = "exponential"

    def log_slopes(self):
        r"""log|l'(gbar_i)| = -gbar_i, shape (K,n): the per-sample weights of the gradients."""
        return -self.gbar

    def log_loss(self):
        r"""log L = log((1/n) sum_i exp(-gbar_i)), shape (K,), without overflow."""
        return (-self.gbar).logsumexp(-1) - math.log(self.gbar.shape[-1])

    def log_excess_loss(self, opt):
        """See `log_excess_loss`."""
        gamma_o = self.gamma.gather(-1, opt[..., None])
        log_d, sign_d = (v.squeeze(-1) for v in score_deviations(self.gamma, self.a, gamma_o))
        log_terms = -gamma_o.squeeze(-1) + log_abs_expm1(log_d, sign_d)
        log_sum, sign_sum = signed_logsumexp(log_terms, sign_d, dim=-1)
        return torch.where(sign_sum >= 0, log_sum, float("nan")) - math.log(self.gbar.shape[-1])

    def s_opt(self, opt):
        """See `s_opt`."""
        return _s_opt(self.a, opt)

    def log_one_minus_s_opt(self, opt):
        """See `log_one_minus_s_opt`."""
        return _log_one_minus_s_opt(self.a, opt)


class LogisticForward(Forward):
    r"""The `Forward` pass under the logistic loss l(m) = log(1 + exp(-m)): the same fields, its
    own loss, excess loss and gradient weights |l'(m)| = sigma(-m) = 1/(1 + e^m)."""

    __slots__ = ()
    loss = "logistic"

    def log_slopes(self):
        r"""log|l'(gbar_i)| = log sigma(-gbar_i), shape (K,n)."""
        return _log_sigmoid_neg(self.gbar)

    def log_loss(self):
        r"""log L = log((1/n) sum_i log(1 + exp(-gbar_i))), shape (K,), accurate when L is far
        below the float range (large margins) and when it is large (negative margins)."""
        return log_logistic(self.gbar).logsumexp(-1) - math.log(self.gbar.shape[-1])

    def log_excess_loss(self, opt):
        r"""log(L - L_*), L_* = (1/n) sum_i l(gamma_{i,o}), shape (K,) (see `log_excess_loss`).

        Per sample, with delta_i = gamma_{i,o} - gbar_i (from `score_deviations`, exact at any
        saturation) and g = gamma_{i,o}::

            l(g - delta_i) - l(g) = log1p(sigma(-g) expm1(delta_i)),

        evaluated in log magnitude (`log_abs_expm1`, log sigma(-g), then log|log1p(r)|) and
        combined over the samples by a signed logsumexp: -inf if L = L_*, NaN if L < L_*."""
        gamma_o = self.gamma.gather(-1, opt[..., None])
        log_d, sign_d = (v.squeeze(-1) for v in score_deviations(self.gamma, self.a, gamma_o))
        log_r = _log_sigmoid_neg(gamma_o.squeeze(-1)) + log_abs_expm1(log_d, sign_d)
        log_terms = _log_abs_log1p(log_r, sign_d)
        log_sum, sign_sum = signed_logsumexp(log_terms, sign_d, dim=-1)
        return torch.where(sign_sum >= 0, log_sum, float("nan")) - math.log(self.gbar.shape[-1])


_FORWARDS = {"exponential": Forward, "logistic": LogisticForward}


def forward(X, y, u, W, *, queries=None, loss="exponential") -> Forward:
    """The `Forward` pass (gamma, a, gbar) at (u, W).

    Parameters
    ----------
    queries : torch.Tensor, optional
        Cross-attention queries z_i (K,n,d); None: self-attention (see `logits`).
    loss : str
        "exponential" (default, a `Forward`) or "logistic" (a `LogisticForward`); another name
        raises DeclarationError.
    """
    return _attend(token_scores(X, y, u), logits(X, W, queries=queries), loss)


def _attend(gamma, z, loss="exponential") -> Forward:
    """The `Forward` pass from token scores gamma and logits z (K,n,T) under ``loss``."""
    a = torch.log_softmax(z, dim=-1)
    return _FORWARDS[_check_loss(loss)](gamma, a, (a.exp() * gamma).sum(-1))


def margins(X, y, u, W, *, queries=None):
    r"""gbar_i = y_i f(X_i) = sum_t s_{i,t} gamma_{i,t}, shape (K,n) (``queries``: see `logits`)."""
    return forward(X, y, u, W, queries=queries).gbar


def log_loss(X, y, u, W, *, queries=None, loss="exponential"):
    r"""log L = log((1/n) sum_i l(gbar_i)), shape (K,), without overflow.

    l(m) = exp(-m) (``loss="exponential"``, default) or log(1 + exp(-m)) (``"logistic"``);
    ``queries``: see `logits`."""
    return forward(X, y, u, W, queries=queries, loss=loss).log_loss()


def score_deviations(gamma, a, ref):
    r"""Signed log form of r - gbar_i for reference scores r (shape (K,n,R)).

    r - gbar_i = sum_tau s_{i,tau} (r - gamma_{i,tau}) is evaluated by
    `signed_logsumexp` over tau, with terms a_{i,tau} + log|r - gamma_{i,tau}|,
    so it is exact even when s concentrates on one token (where r - gbar_i is a
    tiny difference of nearly equal numbers, and where s_{i,tau} underflows).
    With ref = gamma this gives delta_{i,t} = gamma_{i,t} - gbar_i for every
    token.  Returns (log|r - gbar|, sign(r - gbar)), each of shape (K,n,R); zero
    deviations (e.g. u = 0) give (-inf, 0).
    """
    return _deviations_from_gaps(a, score_gaps(ref, gamma))


def score_gaps(ref, gamma):
    """(log|r - gamma_tau|, sign(r - gamma_tau)), each (K,n,R,T): the terms of `score_deviations`
    that do not depend on W (constant along a run with a fixed decoder)."""
    diff = ref[..., :, None] - gamma[..., None, :]
    return diff.abs().log(), torch.sign(diff)


def _deviations_from_gaps(a, gaps):
    log_gap, sign = gaps
    return signed_logsumexp(a[..., None, :] + log_gap, sign, dim=-1)


def log_excess_loss(X, y, u, W, opt, *, queries=None, loss="exponential"):
    r"""log(L - L_*) with L_* = (1/n) sum_i l(gamma_{i,opt_i}), shape (K,).

    L_* is the infimum of L over W when opt_i = argmax_t gamma_{i,t} and some W attends to all
    of them at once (l is decreasing, so each l(gbar_i) > l(max_t gamma_{i,t}), approached as
    the attention concentrates), for either loss.  Exponential loss, per sample::

        exp(-gbar_i) - exp(-gamma_{i,o}) = exp(-gamma_{i,o}) expm1(delta_{i,o}),

    delta_{i,o} = gamma_{i,o} - gbar_i >= 0 taken from `score_deviations`, and the
    samples are combined by a signed logsumexp, so values far below the float
    range (log(L - L_*) ~ -1e3) are returned accurately.  -inf if L = L_*
    exactly; NaN if L < L_* (possible only when opt is not the argmax).  The logistic loss
    uses l(g - delta) - l(g) = log1p(sigma(-g) expm1(delta)) (`LogisticForward.log_excess_loss`).
    ``queries``, ``loss``: see `forward`.
    """
    return forward(X, y, u, W, queries=queries, loss=loss).log_excess_loss(opt)


# ---------------------------------------------------------------- gradients


def _grad_W_weights(fw, gaps=None):
    r"""(M, w), w (K,n,T): grad_W L = -(1/n) exp(M) sum_{i,t} w_{i,t} x_{i,t} z_i^T, max|w| = 1,
    from the `Forward` pass ``fw``.  ``gaps``: `score_gaps` (gamma, gamma) when known already."""
    gamma, a, gbar = fw
    log_d, sign_d = _deviations_from_gaps(a, score_gaps(gamma, gamma) if gaps is None else gaps)
    # grad_W L = -(1/n) sum_{i,t} |l'(gbar_i)| s_{i,t} delta_{i,t} x_{i,t} z_i^T  (|l'| = exp(-gbar): exponential)
    M, w = rescale(a + log_d + fw.log_slopes()[..., None], sign_d, dim=(1, 2))
    return M.reshape(-1), w


def _grad_W(X, fw, gaps=None, query=None, minus_n=None):
    """(M, G) of grad_W L from the `Forward` pass ``fw``; ``query`` the queries z_i (K,n,d)
    (`_query_tokens`; x_{i,1} when None); ``minus_n`` -n as `TokenSelection` keeps it (the
    Python number when None)."""
    M, w = _grad_W_weights(fw, gaps)
    v = _weighted_tokens(w, X) / (-X.shape[1] if minus_n is None else minus_n)
    return M, torch.bmm(v.transpose(1, 2), X[:, :, 0, :] if query is None else query)


def _grad_u_weights(y, fw):
    r"""(M, w), w (K,n): grad_u L = -(1/n) exp(M) sum_i w_i X_i^T s_i, max|w| = 1."""
    # grad_u L = -(1/n) sum_i |l'(gbar_i)| y_i X_i^T s_i
    M, w = rescale(fw.log_slopes(), y, dim=1)
    return M.reshape(-1), w


def _grad_u(X, y, fw, minus_n=None):
    M, w = _grad_u_weights(y, fw)
    features = _weighted_tokens(fw.a.exp(), X)
    return M, torch.bmm(w[:, None, :], features).squeeze(1) / (-X.shape[1] if minus_n is None else minus_n)


def scaled_grad_W(X, y, u, W, *, queries=None, loss="exponential"):
    r"""Gradient of L in W as (M, G) with grad_W L = exp(M) * G.

        grad_W L = (1/n) sum_i l'(gbar_i) sum_t s_{i,t} delta_{i,t} x_{i,t} z_i^T,
        delta_{i,t} = gamma_{i,t} - gbar_i,   l'(m) = -exp(-m)  or  -sigma(-m) (logistic),

    z_i = x_{i,1} (self-attention) or the given query.  The coefficients
    c_{i,t} = |l'(gbar_i)| s_{i,t} delta_{i,t} are formed from
    log|c_{i,t}| = log|l'(gbar_i)| + a_{i,t} + log|delta_{i,t}| (deviations from
    `score_deviations`, log|l'(m)| = -m or log sigma(-m)); M = max_{i,t} log|c_{i,t}| and
    G = -(1/n) sum_{i,t} sign(delta_{i,t}) exp(log|c_{i,t}| - M) x_{i,t} z_i^T,
    so the entries of G are O(|x|^2) and G/||G||_F is the exact direction even
    when exp(M) underflows.  M: (K,), G: (K,d,d).  If every delta is 0 (e.g.
    u = 0) the gradient is exactly zero: M = -inf, G = 0.  ``queries``, ``loss``: see `forward`.
    """
    fw = forward(X, y, u, W, queries=queries, loss=loss)
    return _grad_W(X, fw, query=None if queries is None else queries)


def scaled_grad_u(X, y, u, W, *, queries=None, loss="exponential"):
    r"""Gradient of L in u as (M, G) with grad_u L = exp(M) * G::

        grad_u L = -(1/n) sum_i |l'(gbar_i)| y_i X_i^T s_i,

    |l'(m)| = exp(-m) (exponential) or sigma(-m) (logistic), scaled by
    M = max_i log|l'(gbar_i)|.  M: (K,), G: (K,d).  ``queries``, ``loss``: see `forward`.
    """
    return _grad_u(X, y, forward(X, y, u, W, queries=queries, loss=loss))


def scaled_gradients(X, y, u, W, *, queries=None, loss="exponential"):
    r"""((M_u, G_u), (M_W, G_W)): both gradients in scaled form from one forward pass
    (``queries``, ``loss``: see `forward`)."""
    fw = forward(X, y, u, W, queries=queries, loss=loss)
    return _grad_u(X, y, fw), _grad_W(X, fw, query=queries)


def loss_autograd_reference(X, y, u, W, *, queries=None, loss="exponential"):
    r"""L = (1/n) sum_i l(y_i u^T X_i^T softmax(X_i W z_i)), written naively.

    l(m) = exp(-m) or log(1 + exp(-m)) (``loss="logistic"``), z_i = x_{i,1} or the given query
    (``queries``: see `logits`).  A differentiable textbook implementation for cross-checks
    with autograd; it is accurate only while attention is far from saturation.  Shape (K,).
    """
    s = torch.softmax(logits(X, W, queries=queries), dim=-1)
    f = (s[..., None] * X).sum(2) @ u[..., None]
    if _check_loss(loss) == "logistic":
        return torch.log1p(torch.exp(-y * f.squeeze(-1))).mean(-1)
    return torch.exp(-y * f.squeeze(-1)).mean(-1)


def autograd_grad_W(X, y, u, W, *, queries=None, loss="exponential"):
    """grad_W L by autograd through `loss_autograd_reference` (accurate only away from
    saturation), shape (K,d,d).  The trials are independent, so the gradient of the summed
    loss is every trial's own gradient.  ``queries``, ``loss``: see `forward`."""
    return torch.func.grad(lambda V: loss_autograd_reference(X, y, u, V, queries=queries, loss=loss).sum())(W)


# ---------------------------------------------------------------- closed form of -grad_W L under equal non-optimal scores


def log_gradient_weights(X, y, u, W, opt, *, queries=None, loss="exponential"):
    r"""log c_i, c_i = |l'(gbar_i)| s_{i,o} (1 - s_{i,o}) Delta_i, shape (K,n) (o = opt_i).

    The weights of the closed form `closed_form_negative_grad_W`, with Delta_i = `score_gap`
    and |l'(m)| = exp(-m) (exponential) or sigma(-m) (logistic).
    log(1 - s_{i,o}) is a logsumexp of the other log-attentions, so c_i is exact for
    saturated attention (c_i far below the float range).  ``queries``, ``loss``: see `forward`.
    """
    return _log_gradient_weights(forward(X, y, u, W, queries=queries, loss=loss), opt)


def _log_gradient_weights(fw, opt):
    log_s_opt = fw.a.gather(-1, opt[..., None]).squeeze(-1)
    return (fw.log_slopes() + log_s_opt + _log_one_minus_s_opt(fw.a, opt)
            + _gap_to_other_tokens(fw.gamma, opt).log())


def closed_form_negative_grad_W(X, y, u, W, opt, *, queries=None, loss="exponential"):
    r"""A closed form of -grad_W L under equal non-optimal scores, shape (K,d,d):

        -grad_W L = (1/n) sum_i c_i (x_{i,o} - xtilde_i) z_i^T,
        xtilde_i = sum_{t != o} s_{i,t} x_{i,t} / (1 - s_{i,o}),

    with the weights c_i of `log_gradient_weights`.  It equals -grad_W L when the non-optimal
    scores are equal (gamma_{i,t} = gamma_{i,o} - Delta_i for every t != o: then gamma_{i,o} - gbar_i =
    (1 - s_{i,o}) Delta_i and gamma_{i,t} - gbar_i = -s_{i,o} Delta_i in the gradient of
    `scaled_grad_W`); otherwise it is in general a different matrix.  z_i = x_{i,1} or the
    given query; ``queries``, ``loss``: see `forward`.
    """
    fw = forward(X, y, u, W, queries=queries, loss=loss)
    others = fw.a - _log_one_minus_s_opt(fw.a, opt)[..., None]      # log(s_t / (1 - s_o))
    weights = others.exp().masked_fill(optimal_token_mask(opt, X.shape[2]), 0.0)
    x_tilde = torch.einsum("knt,kntd->knd", weights, X)
    c = _log_gradient_weights(fw, opt).exp()
    return torch.einsum("kn,knd,kne->kde", c, tokens_at(X, opt) - x_tilde, _query_tokens(X, queries)) / X.shape[1]


# ---------------------------------------------------------------- coefficient space: the span of the data


def span_is_cheaper(n, T, d):
    r"""Whether a step costs fewer operations in coefficient space than dense: the dense step's
    d x d work (~2 n d^2 per trial: the queries W x_{i,1} and the gradient's outer products)
    against the span's (nT + 1)^2 kernel products (logits and the gradient's norm)."""
    return (n * T + 1) ** 2 < n * d * d


def span_kernel(X, *, queries=None):
    r"""The Gram matrix of the rank-one matrices B_a = x_a z_{i(a)}^T over the tokens a = (i,t),
    z_i the query of a's sample (x_{i,1}, or the given one: ``queries`` (K,n,d), see `logits`):
    <B_a, B_b>_F = <x_a, x_b> <z_{i(a)}, z_{i(b)}>, shape (K, nT, nT) (a = i T + t)."""
    K, n, T, d = X.shape
    flat = X.reshape(K, n * T, d)
    queries = _query_tokens(X, queries)
    query_gram = torch.bmm(queries, queries.transpose(1, 2))
    return torch.bmm(flat, flat.transpose(1, 2)) * query_gram.repeat_interleave(T, 1).repeat_interleave(T, 2)


def _bordered(gram, cross, square):
    """The Gram matrix of the basis (B_0, B_1, ..., B_m) from that of (B_1..B_m) (K,m,m), the inner
    products <B_0, B_j> (K,m) and ||B_0||^2 (K,)."""
    top = torch.cat([square[:, None, None], cross[:, None, :]], 2)
    return torch.cat([top, torch.cat([cross[:, :, None], gram], 2)], 1)


class Span(NamedTuple):
    r"""Token selection's parameters as coefficients over the span of the data.

    Every gradient in W is a combination of B_a = x_a z_{i(a)}^T and every gradient in u of the
    tokens x_a (a = (i,t), z_i the query of sample i: x_{i,1}, or the given cross-attention
    query), so first-order iterates from (u_0, W_0) stay in
        W = c_0 W_0 + sum_a c_a B_a,    u = e_0 u_0 + sum_a e_a x_a,
    and the block W (u) is held as the coefficients c (e), shape (K, 1 + nT), starting at
    (1, 0, ..., 0).  Logits z_a = <W, B_a> and scores y_i <u, x_a> are entries of gram c, with
    the Gram matrices ``W_gram`` and ``u_gram`` (K, 1+nT, 1+nT) of these bases (the geometry
    `Gram`, whose kept product also gives the norm), so a step costs O((nT)^2) instead of
    O(n d^2).  ``W0`` (K,d,d) and ``u0`` (K,d) (None with a fixed
    decoder) are kept to expand coefficients back (`TokenSelection.dense`).
    """

    W0: torch.Tensor
    W_gram: torch.Tensor
    u0: torch.Tensor | None
    u_gram: torch.Tensor | None

    @classmethod
    def at(cls, X, W0, u0=None, *, queries=None):
        """The span representation of iterates started from (u0, W0) (``queries``: the
        cross-attention queries z_i (K,n,d), None for self-attention; see `logits`)."""
        K, n, T, d = X.shape
        W_gram = _bordered(span_kernel(X, queries=queries), logits(X, W0, queries=queries).reshape(K, n * T),
                           (W0 * W0).sum((1, 2)))
        if u0 is None:
            return cls(W0, W_gram, None, None)
        flat = X.reshape(K, n * T, d)
        u_gram = _bordered(torch.bmm(flat, flat.transpose(1, 2)),
                           torch.bmm(flat, u0[:, :, None]).squeeze(-1), (u0 * u0).sum(1))
        return cls(W0, W_gram, u0, u_gram)

    def restrict(self, trials):
        return Span(*(None if v is None else v[trials] for v in self))

    def gram(self, block):
        return self.W_gram if block == "W" else self.u_gram


def _span_direction(weights, border, minus_n):
    r"""Coefficients (K, 1 + nT) of -(1/n) sum_a weights_a B_a (weights (K,n,T)), none on B_0:
    ``border`` (K, 1) the coefficient of B_0, 0 / -n, and ``minus_n`` -n, both as
    `TokenSelection` keeps them.  The bits of padding the weights with 0 and dividing by -n, in
    cheaper operations (a concatenation instead of a pad, no division of the border)."""
    return torch.cat((border, weights.flatten(1) / minus_n), 1)


# ---------------------------------------------------------------- the model on the protocol


class TokenSelection(Model):
    r"""The token-selection model on the protocol of `theorycheck.models.base`.

    Data X (K,n,T,d), labels y (K,n), loss L = (1/n) sum_i l(gbar_i).  With a decoder ``u``
    (K,d) it is fixed and W (K,d,d) is the only block; its infimum over W is
    L_* = (1/n) sum_i l(max_t gamma_{i,t}) (all attention on the highest-scoring tokens, when
    one W selects them all, e.g. when the W-SVM is feasible), for either loss since l is
    decreasing, so ``log_excess_loss`` is exact there.  Without ``u`` both u and W are blocks
    (joint training), and L_* = inf L = 0 (approached, never attained, for either loss).
    Gradients come from `scaled_gradients` (log domain), so they stay exact deep in saturation.

    Parameters
    ----------
    X : torch.Tensor
        Tokens, (K,n,T,d).
    y : torch.Tensor
        Labels in {-1, +1}, (K,n).
    u : torch.Tensor, optional
        A fixed decoder (K,d); None: u is trained with W.
    span : Span, optional
        The coefficient-space representation (made by `in_span` / `cheapest`).
    loss : str
        "exponential" (default), l(m) = exp(-m), or "logistic", l(m) = log(1 + exp(-m)); another
        name raises DeclarationError.
    queries : torch.Tensor, optional
        Cross-attention: one query z_i per sample (K,n,d), logits x_{i,t}^T W z_i; None
        (default): self-attention, z_i = x_{i,1}.  Another shape raises InvalidInputError.

    The choices are kept as ``loss_name`` and ``queries`` (``loss`` is the protocol's method).

    Two representations of the same model: dense (the blocks are u (K,d) and W (K,d,d), the
    default) and, with ``span`` (a `Span`), coefficients over the span of the data (blocks
    (K, 1 + nT), geometry `Gram`).  `in_span` and `cheapest` convert initial parameters, `dense`
    converts iterates back and `span_coordinates` expresses a reference (e.g. the W-SVM
    solution, a combination of the same B_a) in coefficients.  The log-domain formulas are the
    same in both; only the logits, the scores and the assembly of the gradient differ, and the
    gradient in span coordinates is the coefficient vector of the dense gradient (its Riesz
    representer for `Gram`), so every first-order step maps dense iterates to span iterates
    exactly.  Mirror descent's entrywise map leaves the span: it needs the dense form.  With
    cross-attention queries the span is that of x_{i,t} z_i^T (`Span.at` with the queries).
    """

    def __init__(self, X, y, u=None, span: Span | None = None, *, loss="exponential", queries=None):
        self.X, self.y, self.u, self.span = X, y, u, span
        self.loss_name, self.queries = _check_loss(loss), queries
        self._query = _query_tokens(X, queries)
        self.blocks = ("W",) if u is not None else ("u", "W")
        self.infimum = None if u is not None else 0.0
        self._gamma = None if u is None else token_scores(X, y, u)
        self._argmax = None if u is None else self._gamma.argmax(-1)
        self._gaps = None if u is None else score_gaps(self._gamma, self._gamma)
        self._geometry = {} if span is None else {b: Gram(span.gram(b)) for b in self.blocks}
        self._representers = {}
        # -n as a 0-dim CPU tensor of X's dtype: divided by as the Python number -n is (a CPU
        # scalar on any device, the same bits) without wrapping that number into a new tensor
        # and converting it at every gradient (about 1.5 us on the CPU); and the span
        # gradients' coefficient of B_0, the padded 0 divided by -n (-0.0), formed once
        self._minus_n = torch.tensor(-float(X.shape[1]), dtype=X.dtype)  # host: a shape, once per model
        self._border = None if span is None else X.new_zeros(X.shape[0], 1) / self._minus_n

    def restrict(self, trials):
        return TokenSelection(self.X[trials], self.y[trials],
                              None if self.u is None else self.u[trials],
                              None if self.span is None else self.span.restrict(trials),
                              loss=self.loss_name, queries=None if self.queries is None else self.queries[trials])

    def geometry(self, block):
        return self._geometry.get(block, FROBENIUS)

    # -- representations --------------------------------------------------------------------
    def in_span(self, params0):
        """(this model in coefficient space from the dense initial point ``params0``, the
        coefficients of ``params0``)."""
        if self.span is not None:
            raise DeclarationError("TokenSelection.in_span: the model is in span form already")
        self.check_params(params0)
        span = Span.at(self.X, params0["W"], params0.get("u"), queries=self.queries)
        start = torch.nn.functional.pad(torch.ones_like(self.y[:, :1]), (0, self.X.shape[1] * self.X.shape[2]))
        return (TokenSelection(self.X, self.y, self.u, span, loss=self.loss_name, queries=self.queries),
                {b: start for b in self.blocks})

    def cheapest(self, params0):
        """(model, params): `in_span` where `span_is_cheaper`, else the model itself (a model
        in span form already is its own cheapest form)."""
        K, n, T, d = self.X.shape
        if self.span is None and span_is_cheaper(n, T, d):
            return self.in_span(params0)
        return self, dict(params0)

    def dense(self, params):
        r"""The parameters as dense u (K,d) and W (K,d,d) (the identity in the dense form).

        W = c_0 W_0 + sum_i v_i z_i^T with v_i = sum_t c_{i,t} x_{i,t} (z_i the query): n d^2
        operations."""
        if self.span is None:
            return dict(params)
        K, n, T, d = self.X.shape
        c = params["W"]
        v = _weighted_tokens(c[:, 1:].reshape(K, n, T), self.X)
        W = torch.bmm(v.transpose(1, 2), self._query) + per_trial(c[:, 0], self.span.W0) * self.span.W0
        if self.u is not None:
            return {"W": W}
        e = params["u"]
        return {"u": torch.bmm(e[:, None, 1:], self.X.reshape(K, n * T, d)).squeeze(1) + e[:, :1] * self.span.u0,
                "W": W}

    def representer(self, block, value):
        r"""(<B_j, value>_F)_j (K, 1 + nT) over the basis (W_0, B_a) of W (or (u_0, x_a) of u), so
        that <theta, value>_F = sum(c * representer) for theta with coefficients c -- exact for any
        dense ``value``, in the span or not; ``value`` itself in the dense form.  Kept per value
        (metrics ask for the same reference at every checkpoint)."""
        if self.span is None:
            return value
        key = (block, id(value))
        if key not in self._representers:
            K, n, T, d = self.X.shape
            if block == "W":
                first, rest = self.span.W0, logits(self.X, value, queries=self.queries).reshape(K, n * T)
            else:
                first, rest = self.span.u0, torch.bmm(self.X.reshape(K, n * T, d), value[:, :, None]).squeeze(-1)
            self._representers[key] = value, torch.cat([(first * value).flatten(1).sum(1, keepdim=True), rest], 1)
        return self._representers[key][1]

    def span_coordinates(self, block, value):
        r"""Coefficients (K, 1 + nT) of the orthogonal projection of the dense ``value`` of
        ``block`` onto the span (least squares in the `Gram` geometry: gram c = `representer`);
        exact to round-off (relative ~ eps cond(gram)) for a value in the span."""
        if self.span is None:
            raise DeclarationError("TokenSelection.span_coordinates needs the span form (in_span)")
        rhs = self.representer(block, value)
        return torch.bmm(torch.linalg.pinv(self.span.gram(block), hermitian=True), rhs[:, :, None]).squeeze(-1)

    # -- the model ----------------------------------------------------------------------------
    def decoder(self, params):
        """The decoder u of ``params`` (the fixed one, or the block; dense form)."""
        return self.u if self.u is not None else params["u"]

    def logits(self, params):
        r"""z_{i,t} = x_{i,t}^T W z_i at ``params`` (either form; z_i the query), shape (K,n,T)."""
        if self.span is None:
            return logits(self.X, params["W"], queries=self.queries)
        return self._values("W", params["W"]).reshape(self.X.shape[:3])

    def scores(self, params):
        r"""gamma_{i,t} = y_i u^T x_{i,t} at ``params`` (either form; the fixed decoder's), (K,n,T)."""
        if self.u is not None:
            return self._gamma
        if self.span is None:
            return token_scores(self.X, self.y, params["u"])
        return self.y[..., None] * self._values("u", params["u"]).reshape(self.X.shape[:3])

    def _values(self, block, coefficients):
        r"""<B_a, theta> for every token a from the coefficients of theta (span form), (K, nT):
        rows 1.. of gram c, the product the `Gram` geometry keeps for the norm."""
        return self._geometry[block].apply(coefficients)[:, 1:]

    def forward(self, params) -> Forward:
        """The `Forward` pass at ``params`` (a `LogisticForward` under the logistic loss)."""
        return _attend(self.scores(params), self.logits(params), self.loss_name)

    def log_loss(self, params):
        return self.forward(params).log_loss()

    def reference_loss(self, params):
        r"""The plainly written loss at the dense parameters (in span form: autograd of it gives
        the gradient in coefficient coordinates, gram times the model's `Gram` gradient)."""
        dense = self.dense(params)
        return loss_autograd_reference(self.X, self.y, self.decoder(dense), dense["W"],
                                       queries=self.queries, loss=self.loss_name)

    def hessian_vector_product(self, params, vector):
        if self.span is not None:
            raise DeclarationError("TokenSelection: curvature is measured in the dense form "
                                   "(convert with dense())")
        return super().hessian_vector_product(params, vector)

    def scaled_gradient(self, params):
        fw = self.forward(params)
        if self.span is None:
            grads = {"W": Scaled(*_grad_W(self.X, fw, self._gaps, self._query, self._minus_n))}
            if self.u is None:
                grads["u"] = Scaled(*_grad_u(self.X, self.y, fw, self._minus_n))
        else:
            M, w = _grad_W_weights(fw, self._gaps)
            grads = {"W": Scaled(M, _span_direction(w, self._border, self._minus_n))}
            if self.u is None:
                M, w = _grad_u_weights(self.y, fw)
                grads["u"] = Scaled(M, _span_direction(w[..., None] * fw.a.exp(), self._border, self._minus_n))
        return {b: grads[b] for b in self.blocks}

    def log_excess_loss(self, params):
        r"""log(L - L_*): L_* = (1/n) sum_i l(max_t gamma_{i,t}) from the highest-scoring tokens of
        the fixed decoder, or 0 (log L) in joint training; either loss."""
        if self.u is None:
            return self.log_loss(params)
        return self.forward(params).log_excess_loss(self._argmax)

    def metrics(self, opt=None):
        r""""log_loss", and with designated tokens ``opt`` (K,n): "log_excess_loss"
        log(L - L_*) with L_* = mean_i l(gamma_{i,opt_i}), and per sample (K,n) "s_opt"
        s_{i,opt_i}, "log_one_minus_s_opt" log(1 - s_{i,opt_i}) and "logit_gap"
        min_{t != opt_i} z_{i,opt_i} - z_{i,t} (`logit_gap`); all from one forward pass per
        checkpoint, in the representation the run steps in (``it.model``)."""
        from theorycheck.optim.metrics import once_per_iterate

        def model_of(it):
            return self if it.model is None else it.model

        state = once_per_iterate(lambda it: model_of(it).forward(it.coordinates))
        metrics = {"log_loss": lambda it: state(it).log_loss()}
        if opt is not None:
            metrics["log_excess_loss"] = lambda it: state(it).log_excess_loss(opt)
            metrics["s_opt"] = lambda it: state(it).s_opt(opt)
            metrics["log_one_minus_s_opt"] = lambda it: state(it).log_one_minus_s_opt(opt)
            metrics["logit_gap"] = lambda it: _gap_to_other_tokens(model_of(it).logits(it.coordinates), opt)
        return metrics


def _conformance_data(K, seed, n=4, T=3, d=6):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(K, n, T, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    y = torch.randint(0, 2, (K, n), generator=g).to(torch.float64) * 2 - 1
    u = torch.randn(K, d, generator=g, dtype=torch.float64)
    W = torch.randn(K, d, d, generator=g, dtype=torch.float64)
    return X, y, u, W


def _conformance_queries(K, seed, n=4, d=6):
    """Cross-attention queries z_i (K,n,d) for the conformance data (their own generator, so that
    the data of `_conformance_data` are the same with and without them)."""
    g = torch.Generator().manual_seed(10_000 + seed)
    return torch.randn(K, n, d, generator=g, dtype=torch.float64) / math.sqrt(d)


def _separating_W(X, y, u, queries=None):
    r"""W with logit gaps z_{i,o} - z_{i,t} = 1 for every t != o (o the highest-scoring token):
    the minimum-norm least-squares solution of these n(T-1) linear equations in W (solvable
    when n(T-1) <= d^2 and the constraint matrices are independent); ``queries`` as in `logits`."""
    K, n, T, d = X.shape
    o = token_scores(X, y, u).argmax(-1)
    others = ~optimal_token_mask(o, T)
    rows = torch.einsum("knte,knf->kntef", tokens_at(X, o)[:, :, None] - X, _query_tokens(X, queries))[others]
    A = rows.reshape(K, n * (T - 1), d * d)
    b = torch.ones(K, n * (T - 1), 1, dtype=X.dtype)
    return torch.linalg.pinv(A).matmul(b).reshape(K, d, d)


@register_model("token_selection_fixed_decoder")
def _fixed_decoder_instance(K, seed):
    X, y, u, W = _conformance_data(K, seed)
    return Instance(TokenSelection(X, y, u), {"W": 0.5 * W}, {"W": 2000.0 * _separating_W(X, y, u)})


@register_model("token_selection_joint")
def _joint_instance(K, seed):
    X, y, u, W = _conformance_data(K, seed)
    return Instance(TokenSelection(X, y), {"u": u, "W": 0.5 * W},
                    {"u": 50.0 * u, "W": 2000.0 * _separating_W(X, y, u)})


@register_model("token_selection_logistic_fixed_decoder")
def _logistic_fixed_decoder_instance(K, seed):
    X, y, u, W = _conformance_data(K, seed)
    return Instance(TokenSelection(X, y, u, loss="logistic"), {"W": 0.5 * W},
                    {"W": 2000.0 * _separating_W(X, y, u)})


@register_model("token_selection_logistic_joint")
def _logistic_joint_instance(K, seed):
    X, y, u, W = _conformance_data(K, seed)
    return Instance(TokenSelection(X, y, loss="logistic"), {"u": u, "W": 0.5 * W},
                    {"u": 50.0 * u, "W": 2000.0 * _separating_W(X, y, u)})


@register_model("token_selection_cross_attention_fixed_decoder")
def _cross_attention_fixed_decoder_instance(K, seed):
    X, y, u, W = _conformance_data(K, seed)
    Z = _conformance_queries(K, seed)
    return Instance(TokenSelection(X, y, u, queries=Z), {"W": 0.5 * W},
                    {"W": 2000.0 * _separating_W(X, y, u, Z)})


@register_model("token_selection_cross_attention_logistic_joint")
def _cross_attention_logistic_joint_instance(K, seed):
    """The papers' experimental setting: cross-attention, logistic loss, u and W trained jointly."""
    X, y, u, W = _conformance_data(K, seed)
    Z = _conformance_queries(K, seed)
    return Instance(TokenSelection(X, y, loss="logistic", queries=Z), {"u": u, "W": 0.5 * W},
                    {"u": 50.0 * u, "W": 2000.0 * _separating_W(X, y, u, Z)})
