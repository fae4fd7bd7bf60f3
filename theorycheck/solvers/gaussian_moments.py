r"""Closed-form moments of Gaussian samples: the sample covariance and softmax averages.

Sample covariance.  For x_1..x_n iid N(0, Sigma) and Sigma_hat = (1/n) sum_i x_i x_i^T (known
zero mean), Isserlis' formula gives E[x x^T A x x^T] = Sigma A Sigma + Sigma A^T Sigma +
tr(A Sigma) Sigma, hence (the n(n-1) cross terms give Sigma A Sigma)

    E[Sigma_hat A Sigma_hat] = Sigma A Sigma + (1/n) (Sigma A^T Sigma + tr(A Sigma) Sigma).

Longer chains E[Sigma_hat M_1 Sigma_hat ... M_{k-1} Sigma_hat] (k factors) follow the same way
(`sample_covariance_chain_mean`): expand each factor over the rows, sum over the set partitions
pi of the k positions into equal row indices (n (n-1) ... (n - |pi| + 1) index tuples each) and,
within one pattern, over Isserlis' pairings of the 2k vector slots that pair only slots of rows
in the same block (each pair gives a Sigma); the result is a polynomial of degree k - 1 in 1/n,
returned by its coefficients so that the bias (the terms j >= 1) has no cancellation.

Softmax averages over Gaussian keys.  For a query direction u (u = K x_i for attention scores
x_j^T K x_i) and keys x_j iid N(0, Sigma), the weights s_j = e^{u^T x_j} / sum_l e^{u^T x_l} and
the average a = sum_j s_j x_j.  With q = u^T Sigma u, exponential tilting gives
E e^{c u^T x} = e^{c^2 q/2} and, under the tilt e^{2 u^T x}, x ~ N(2 Sigma u, Sigma).  As
n -> infinity (a self-normalized importance-sampling average, delta method)::

    n^2 E[s_j^2]           -> E[e^{2u^T x}] / (E e^{u^T x})^2 = e^{q},
    n E||a - Sigma u||^2   -> E[||x - Sigma u||^2 e^{2u^T x}] / (E e^{u^T x})^2
                            = e^{q} (tr Sigma + ||Sigma u||^2),

finite when the tilt exists (always for Gaussians; the corrections are O(1/n)).  A
non-asymptotic upper bound on E[s_j^2] follows from s_j <= e^{a_j} / sum_{l != j} e^{a_l} and
AM-GM, sum_{l != j} e^{a_l} >= (n-1) exp(mean_{l != j} a_l) (`softmax_weight_second_moment_bound`).
The exact finite-n values, with one key fixed (the query's own), follow from 1/S^2 = int_0^inf
t e^{-tS} dt, independence and the tilt as one-dimensional integrals of the lognormal Laplace
transform E exp(-t e^a), computed by quadrature (`softmax_weight_second_moments_exact`,
`softmax_average_mse_exact`): the approach to the limits is O(1/n) with a constant that grows
fast in q, so at q ~ 2.5 Monte Carlo sizes (n ~ 1e3) are still 10-25% short of them.
"""
from __future__ import annotations

import math

import numpy as np

from scipy.special import gammaln, logsumexp
from sympy.utilities.iterables import partitions

from theorycheck.errors import DeclarationError
from theorycheck.lineage import computation

__all__ = ["sample_covariance_quadratic_mean", "sample_covariance_chain_mean", "softmax_weight_second_moment_limit",
           "softmax_average_covariance_limit", "softmax_average_mse_limit", "softmax_weight_second_moment_bound",
           "softmax_weight_second_moment_slack", "softmax_weight_second_moments_exact",
           "softmax_weight_power_moments_exact", "softmax_weight_average_moments_exact", "softmax_average_mse_exact",
           "softmax_average_mean_exact"]


def sample_covariance_quadratic_mean(Sigma, A, n):
    r"""E[Sigma_hat A Sigma_hat] = Sigma A Sigma + (Sigma A^T Sigma + tr(A Sigma) Sigma)/n for
    Sigma_hat the zero-mean sample covariance of n Gaussian rows N(0, Sigma)."""
    if n < 1:
        raise DeclarationError(f"sample_covariance_quadratic_mean: n = {n} < 1 samples")
    Sigma, A = np.asarray(Sigma, dtype=float), np.asarray(A, dtype=float)
    return Sigma @ A @ Sigma + (Sigma @ A.T @ Sigma + np.trace(A @ Sigma) * Sigma) / n


def _set_partitions(items):
    """Every set partition of the list ``items``, as lists of blocks."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in _set_partitions(rest):
        yield [[first], *partition]
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1:]]


def _pairings(slots):
    """Every perfect matching of the list ``slots``, as lists of pairs."""
    if not slots:
        yield []
        return
    first = slots[0]
    for i in range(1, len(slots)):
        for rest in _pairings(slots[1:i] + slots[i + 1:]):
            yield [(first, slots[i]), *rest]


def _falling_factorial_in_inverse_n(blocks, k):
    """Coefficients c_j (j = 0..k-1) of n (n-1) ... (n - blocks + 1) / n^k = sum_j c_j n^{-j}
    (zero below j = k - blocks)."""
    poly = np.array([1.0])                      # in powers of 1/n: prod_{i < blocks} (1 - i/n)
    for i in range(blocks):
        poly = np.convolve(poly, [1.0, -float(i)])
    out = np.zeros(k)
    out[k - blocks:] = poly[:blocks]
    return out


@computation('solver', inputs=('Sigma', 'mats'))
def sample_covariance_chain_mean(Sigma, mats):
    r"""Coefficients C_j (shape (k, d, d), j = 0..k-1) of

        E[Sigma_hat M_1 Sigma_hat M_2 ... M_{k-1} Sigma_hat] = sum_{j=0}^{k-1} C_j n^{-j}

    for Sigma_hat the zero-mean sample covariance of n rows N(0, Sigma) and ``mats`` = [M_1, ...,
    M_{k-1}] (any square matrices).  With Sigma_hat = (1/n) sum_i x_i x_i^T the product is n^{-k}
    sum over row indices (i_1..i_k) of x_{i_1} (x_{i_1}^T M_1 x_{i_2}) ... x_{i_k}^T, 2k vector
    slots, slots 2m, 2m+1 of position m.  Group the index tuples by the partition pi of the
    positions into equal indices (n (n-1) ... (n - |pi| + 1) tuples; rows of different blocks are
    independent): by Isserlis the expectation of one tuple is the sum over pairings of the slots
    that pair only slots of the same block, each pair (a, b) contributing Sigma between the
    slots a and b (an einsum of the M's, the Sigmas, output indices the first and last slot).
    C_0 = Sigma M_1 Sigma ... Sigma (the all-distinct pattern, no other reaches n^k); k = 2 gives
    `sample_covariance_quadratic_mean`."""
    Sigma = np.asarray(Sigma, dtype=float)
    mats = [np.asarray(M, dtype=float) for M in mats]
    k = len(mats) + 1
    if any(M.shape != Sigma.shape for M in mats) or Sigma.ndim != 2 or Sigma.shape[0] != Sigma.shape[1]:
        raise DeclarationError("sample_covariance_chain_mean: Sigma and every M must be square of one size")
    # slot s (0..2k-1) belongs to position s // 2; the M's join slots (2m+1, 2m+2)
    operands = [x for m, M in enumerate(mats) for x in (M, [2 * m + 1, 2 * m + 2])]
    out = np.zeros((k,) + Sigma.shape)
    pairings = list(_pairings(list(range(2 * k))))
    for partition in _set_partitions(list(range(k))):
        block = {position: b for b, members in enumerate(partition) for position in members}
        total = np.zeros(Sigma.shape)
        for pairing in pairings:
            if all(block[a // 2] == block[b // 2] for a, b in pairing):
                sigmas = [x for a, b in pairing for x in (Sigma, [a, b])]
                total += np.einsum(*operands, *sigmas, [0, 2 * k - 1])
        out += _falling_factorial_in_inverse_n(len(partition), k)[:, None, None] * total
    return out


def _score_variance(u, Sigma):
    u = np.asarray(u, dtype=float)
    return np.einsum("...i,ij,...j->...", u, Sigma, u)


def softmax_weight_second_moment_limit(u, Sigma):
    r"""lim n^2 E[s_j^2] = e^{q}, q = u^T Sigma u, for softmax weights over n Gaussian keys
    N(0, Sigma) with scores u^T x_j; ``u`` (..., d)."""
    return np.exp(_score_variance(u, Sigma))


def softmax_average_covariance_limit(u, Sigma):
    r"""lim n Cov(a) = e^{q} (Sigma + Sigma u u^T Sigma), q = u^T Sigma u, for the softmax average
    a = sum_j w_j x_j / sum_j w_j, w_j = e^{u^T x_j}, of n Gaussian keys N(0, Sigma): by the delta
    method a - Sigma u ~ (1/n) sum_j (x_j - Sigma u) w_j / E w, and E[(x - Sigma u)(x - Sigma u)^T
    w^2] / (E w)^2 = e^{2q} (Sigma + Sigma u u^T Sigma) / e^{q} (under the weight w^2 = e^{2 u^T x}
    the keys are N(2 Sigma u, Sigma)); ``u`` (..., d), shape (..., d, d)."""
    Sigma = np.asarray(Sigma, dtype=float)
    mean = np.asarray(u, dtype=float) @ Sigma.T
    return np.exp(_score_variance(u, Sigma))[..., None, None] * (Sigma + mean[..., :, None] * mean[..., None, :])


def softmax_average_mse_limit(u, Sigma):
    r"""lim n E||a - Sigma u||^2 = e^{q} (tr Sigma + ||Sigma u||^2) for the softmax average a of
    n Gaussian keys N(0, Sigma) with scores u^T x_j: the trace of
    `softmax_average_covariance_limit`; ``u`` (..., d)."""
    return np.trace(softmax_average_covariance_limit(u, Sigma), axis1=-2, axis2=-1)


def softmax_weight_second_moment_bound(q, tau, n, *, self_weight=False):
    r"""AM-GM upper bounds on E[s_j^2] when one key is fixed (its score tau) and the n - 1 others
    are Gaussian with scores N(0, q):

    * a random key j (``self_weight=False``):
      (n-1)^{-2} exp(2q (1 + (n-2)/(n-1)^2) - 2 tau/(n-1));
    * the fixed key itself (``self_weight=True``): (n-1)^{-2} exp(2 tau + 2q/(n-1)).

    From s_j^2 <= (n-1)^{-2} exp(2 a_j - (2/(n-1)) sum_{l != j} a_l), E e^{2a} = e^{2q} and
    E e^{-2a/(n-1)} = e^{2q/(n-1)^2} for a ~ N(0, q)."""
    if n < 3:
        raise DeclarationError(f"softmax_weight_second_moment_bound: n = {n} < 3 keys")
    q, tau = np.asarray(q, dtype=float), np.asarray(tau, dtype=float)
    m = n - 1
    if self_weight:
        return np.exp(2 * tau + 2 * q / m) / m ** 2
    return np.exp(2 * q * (1 + (n - 2) / m ** 2) - 2 * tau / m) / m ** 2


def softmax_weight_second_moment_slack(q, tau, n, *, self_weight=False):
    r"""A proven lower bound delta on the relative slack 1 - E[s^2] / bound of
    `softmax_weight_second_moment_bound` (same arguments):

    * a random key j: delta = 1 / (1 + e^{-3q/2} (e^tau + (n-2) e^{q/2 - 2q/(n-1)}));
    * the fixed key: delta = 1 / (1 + (n-1) e^{q/2 - 2q/(n-1) - tau}).

    Proof.  Let S_{-j} = S - w_j (n - 1 weights, the fixed key's among them for j != 0), G their
    geometric mean and Y = w_j^2 / ((n-1) G)^2, so that E Y is the bound (AM-GM: S_{-j} >= (n-1) G).
    Then s_j^2 = (w_j / S_{-j})^2 (1 - s_j)^2 <= Y (1 - s_j)^2, hence
    E Y - E s_j^2 >= E[Y (1 - (1 - s_j)^2)] >= E[Y s_j] (s (2 - s) >= s on [0, 1]), and the slack
    is at least E_Y[s_j], the mean under the tilt dP_Y = Y dP / E Y.  By Jensen (1/(1+x) convex),
    E_Y[s_j] >= 1 / (1 + E_Y[S_{-j} / w_j]).  Y is a product of independent factors e^{2 a_j} and
    e^{-2 a_l/(n-1)} (each fresh l != j), so under the tilt the scores stay independent Gaussians
    N(2q, q) and N(-2q/(n-1), q) (the fixed score tau is constant): E_Y[1/w_j] = e^{-3q/2},
    E_Y[w_l] = e^{q/2 - 2q/(n-1)}, which gives the first line; for the fixed key (w_0 = e^tau
    constant, n - 1 fresh tilted weights) the second."""
    if n < 3:
        raise DeclarationError(f"softmax_weight_second_moment_slack: n = {n} < 3 keys")
    q, tau = np.asarray(q, dtype=float), np.asarray(tau, dtype=float)
    fresh = np.exp(q / 2 - 2 * q / (n - 1))
    if self_weight:
        return 1.0 / (1.0 + (n - 1) * fresh * np.exp(-tau))
    return 1.0 / (1.0 + np.exp(-1.5 * q) * (np.exp(tau) + (n - 2) * fresh))


# -- exact finite-n moments (quadrature) ----------------------------------------------------------
#: the standard normal nodes z and trapezoid weights of E g(sqrt(q) z) on [-14, 14]: the
#: integrands below are entire in z with Gaussian decay, so the rule converges geometrically
#: (step 0.1: error ~ exp(-2 pi d / 0.1), d ~ pi / (2 sqrt q) the width of the strip where
#: exp(-t e^{sqrt(q) z}) stays bounded); the tails beyond 14 weigh < 1e-43
_Z = np.linspace(-14.0, 14.0, 281)
_Z_WEIGHTS = np.exp(-_Z ** 2 / 2) / np.sqrt(2 * np.pi) * (_Z[1] - _Z[0])
#: the outer integral over s = log t: the range around s* = log t* (t* = 1 / ((n-1) E e^a + w0),
#: where the integrands peak) and the trapezoid step (the integrands are analytic in s)
_S_BELOW, _S_ABOVE, _S_STEP = 20.0, 60.0, 0.05


def _outer_range(q, tau, ns, below, above, step):
    """The nodes s = log t from ``below`` under the least s* = log t* of the numbers of keys in
    ``ns`` (an integer or a sequence; one key of score tau) to ``above`` over the largest, at
    ``step``: the union of their ranges (a node outside one n's range adds a negligible term to
    its sum), so that the transforms on it serve every n at once."""
    log_star = -np.log((np.asarray(ns, dtype=float) - 1) * np.exp(q / 2) + np.exp(tau))
    return np.arange(log_star.min() - below, log_star.max() + above, step)


def _laplace_grid(q, tau, ns, below=_S_BELOW):
    """The outer nodes t = e^s (with the trapezoid weight of ds) for the numbers of keys ``ns``,
    one of score tau, from ``below`` under the least s*."""
    return np.exp(_outer_range(q, tau, ns, below, _S_ABOVE, _S_STEP)), _S_STEP


def _tilted_laplace(t, q, g):
    r"""``E[g(a) (e^{-t e^a} - 1)]`` for a ~ N(0, q) at each t (T,), g on the nodes (Z,):
    ``expm1`` keeps the small-t values exact to relative round-off."""
    decay = np.expm1(-np.outer(t, np.exp(np.sqrt(q) * _Z)))
    return decay @ (g * _Z_WEIGHTS)


def _softmax_laplace_terms(q, tau, ns):
    r"""The ingredients of the exact moments for n keys, every n of ``ns`` (an integer or a
    sequence): one fixed of score tau (weight w0 = e^tau), n - 1 with scores a ~ N(0, q),
    weights w = e^a.  With 1/S^2 = int t e^{-tS} dt and the tilt E[w^k h(a)] = e^{k^2 q/2}
    E[h(a + kq)] every moment is an integral over t of powers of phi(t) = E e^{-tw} and tilted
    transforms.  Returns t, the weight of dt / t, w0, log phi(t) (by ``log1p``: n log phi stays
    exact for n up to ~1e12) and phi(t e^{2q})."""
    t, ds = _laplace_grid(q, tau, ns)
    ones = np.ones_like(_Z)
    log_phi = np.log1p(_tilted_laplace(t, q, ones))
    phi_2q = 1.0 + _tilted_laplace(t * np.exp(2 * q), q, ones)
    return t, ds, np.exp(tau), log_phi, phi_2q


def _score_weighted_laplace(t, q):
    r"""psi1(t) = E[w (a/q - 1) e^{-tw}] and psi2(t) = E[w^2 (a/q - 1)^2 e^{-tw}] by the tilt:
    e^{q/2} E[(a/q)(e^{-t e^q e^a} - 1)] (E a = 0) and e^{2q} E[(a/q + 1)^2 e^{-t e^{2q} e^a}]."""
    a_over_q = _Z / np.sqrt(q)
    psi1 = np.exp(q / 2) * _tilted_laplace(t * np.exp(q), q, a_over_q)
    square = (a_over_q + 1) ** 2
    psi2 = np.exp(2 * q) * (float(square @ _Z_WEIGHTS) + _tilted_laplace(t * np.exp(2 * q), q, square))
    return psi1, psi2


def _check_keys(q, n, name):
    if not (np.isscalar(n) and int(n) == n and n >= 2):
        raise DeclarationError(f"{name}: needs an integer number of keys n >= 2, got {n!r}")
    if not (np.isfinite(q) and q > 0):
        raise DeclarationError(f"{name}: needs a score variance q > 0, got {q!r}")


def _keys_of(n, q, name):
    """``n`` (an integer, or a sequence of them) as a 1-d array, each checked (`_check_keys`)."""
    ns = np.atleast_1d(n)
    if ns.ndim != 1 or ns.size == 0:
        raise DeclarationError(f"{name}: needs a number of keys or a non-empty sequence of them, got {n!r}")
    for keys in ns:
        _check_keys(q, keys, name)
    return [int(keys) for keys in ns]


def _per_keys(n, values):
    """One value per number of keys: the value itself for an integer ``n``, the array of them for a sequence."""
    return values[0] if np.ndim(n) == 0 else np.array(values)


def _weight_moments(q, n, t, ds, w0, log_phi, phi_2q):
    """(the outer weights t dt e^{-t w0} = t^2 e^{-t w0} ds, E s_j^2, E s_0^2) for n keys."""
    base = t * t * np.exp(-t * w0) * ds
    fresh = np.exp(2 * q) * np.sum(base * phi_2q * np.exp((n - 2) * log_phi))
    own = w0 ** 2 * np.sum(base * np.exp((n - 1) * log_phi))
    return base, float(fresh), float(own)


@computation('solver', inputs=('q', 'tau', 'n'))
def softmax_weight_second_moments_exact(q, tau, n):
    r"""``(E[s_j^2], E[s_0^2])`` exactly (quadrature, relative accuracy ~1e-12) for n keys: a
    fixed one of score ``tau`` (weight s_0) and n - 1 fresh ones with scores a ~ N(0, q) (s_j,
    any one of them)::

        E s_j^2 = e^{2q} int_0^inf t e^{-t w0} phi(t e^{2q}) phi(t)^{n-2} dt,
        E s_0^2 = w0^2   int_0^inf t e^{-t w0} phi(t)^{n-1} dt,

    phi(t) = E e^{-t e^a}, w0 = e^tau (from 1/S^2 = int t e^{-tS} dt and the tilt e^{2a}).
    ``n^2 E s_j^2 -> e^q`` (`softmax_weight_second_moment_limit`)."""
    _check_keys(q, n, "softmax_weight_second_moments_exact")
    return _weight_moments(q, n, *_softmax_laplace_terms(q, tau, n))[1:]


#: the trapezoid step in z and in s = log t of `softmax_weight_power_moments_exact` (both
#: integrands analytic in a strip: the error is below 1e-12 relative already at this step, and
#: halving it changes the moments by round-off), and the range of s above s* = log t*: the
#: integrands of E s^m peak near t ~ m / S and fall like e^{-t w0} phi(t)^{n-2} beyond, so 25
#: (a factor e^25 past t*) leaves less than e^{-1e3} of them out for m <= 24
_POWER_STEP = 0.1
_POWER_ABOVE = 25.0


def _log_tilted_laplace(t, q, power):
    r"""``log E[e^{power a} exp(-t e^a)]`` for a ~ N(0, q) at each t (T,), in the log domain:
    the z grid of a = sqrt(q) z runs over [-14, 14 + power sqrt(q)], which holds the tilted
    Gaussian's mass (the tilt moves it to z = power sqrt(q)) and the cut-off exp(-t e^a)."""
    z = np.arange(-14.0, 14.0 + power * np.sqrt(q) + _POWER_STEP / 2, _POWER_STEP)
    a = np.sqrt(q) * z
    log_weight = power * a - z * z / 2 - 0.5 * np.log(2 * np.pi) + np.log(_POWER_STEP)
    return logsumexp(log_weight[None, :] - np.outer(t, np.exp(a)), axis=1)


def _log_laplace(t, q):
    """``log phi(t) = log E exp(-t e^a)``: by ``log1p`` of the ``expm1`` rule where phi is near 1
    (n log phi stays exact), in the log domain where it is small."""
    near = _tilted_laplace(t, q, np.ones_like(_Z))
    return np.where(near > -0.5, np.log1p(np.maximum(near, -0.5)), _log_tilted_laplace(t, q, 0))


@computation('solver', inputs=('q', 'tau', 'n', 'powers', 'self_weight'))
def softmax_weight_power_moments_exact(q, tau, n, powers, *, self_weight=False):
    r"""``E[s^m]`` for each integer ``m >= 1`` of ``powers`` (an array), exactly (quadrature) for
    n keys: a fixed one of score ``tau`` (weight s_0, ``self_weight=True``) and n - 1 fresh ones
    with scores a ~ N(0, q) (s_j, any one of them).  From 1/S^m = int_0^inf t^{m-1} e^{-tS} dt /
    Gamma(m) and independence::

        E s_j^m = int t^{m-1} e^{-t w0} E[e^{m a} e^{-t e^a}] phi(t)^{n-2} dt / Gamma(m),
        E s_0^m = w0^m int t^{m-1} e^{-t w0} phi(t)^{n-1} dt / Gamma(m),

    phi(t) = E exp(-t e^a), w0 = e^tau; at m = 2 they are `softmax_weight_second_moments_exact`.
    Every factor is summed in the log domain (trapezoid in s = log t and in a, step
    `_POWER_STEP`): E s^24 spans hundreds of decades between its factors.  The moments of
    X = s^2 up to X^k give the Monte Carlo mean of s^2 a deviation bound that needs no normal
    approximation (`theorycheck.tails.mean_deviation_bound`)."""
    _check_keys(q, n, "softmax_weight_power_moments_exact")
    powers = np.atleast_1d(np.asarray(powers))
    if powers.size == 0 or np.any(powers < 1) or np.any(powers != np.round(powers)):
        raise DeclarationError(f"softmax_weight_power_moments_exact: powers must be integers >= 1, got {powers!r}")
    s, log_phi = _power_grid(q, tau, n)
    t = np.exp(s)
    m = powers.astype(int)[:, None]
    common = m * s - t * np.exp(tau) - gammaln(m) + np.log(_POWER_STEP)             # (powers, T)
    if self_weight:
        integrands = common + m * tau + (n - 1) * log_phi
    else:
        integrands = common + np.array([_log_tilted_laplace(t, q, k) for k in m[:, 0]]) + (n - 2) * log_phi
    return np.exp(logsumexp(integrands, axis=1))


def _power_grid(q, tau, ns):
    """The outer nodes s = log t of the power moments (step `_POWER_STEP`; the range of
    `_laplace_grid` for every number of keys in ``ns``, their union: a node outside one n's
    range adds a negligible term to its sum) and log phi(t) there."""
    s = _outer_range(q, tau, ns, _S_BELOW, _POWER_ABOVE, _POWER_STEP)
    return s, _log_laplace(np.exp(s), q)


def _block_partitions(r):
    """For every integer partition of ``r`` (sympy's ``partitions``): its block sizes and the
    number of set partitions of r labelled items with those block sizes, r! / prod(b! ...) /
    prod(multiplicity!)."""
    for sizes in partitions(r):
        count = math.factorial(r)
        for size, multiplicity in sizes.items():
            count //= math.factorial(size) ** multiplicity * math.factorial(multiplicity)
        yield [size for size, multiplicity in sizes.items() for _ in range(multiplicity)], count


@computation('solver', inputs=('q', 'tau', 'n', 'order'))
def softmax_weight_average_moments_exact(q, tau, n, order):
    r"""``E[X^r]`` for r = 1..``order`` (array), X = (1/(n-1)) sum_{j != 0} s_j^2 the mean
    squared weight of the n - 1 fresh keys (scores a ~ N(0, q)) beside a fixed key of score
    ``tau``, exactly (quadrature); ``n`` an integer, or a sequence of them (then one row per n:
    the tilted transforms, the costly part, are computed once on the union of their grids).
    Expanding X^r over the r factors' keys, the factors that
    share a key form the blocks of a set partition of the r positions, and distinct blocks take
    distinct keys ((n-1)(n-2)...(n-p) ways for p blocks); a partition with block sizes b_1..b_p
    contributes E prod_l s_l^{2 b_l} = int t^{2r-1} e^{-t w0} prod_l M_{2 b_l}(t) phi(t)^{n-1-p} dt
    / Gamma(2r), M_k(t) = E[e^{k a} e^{-t e^a}] (1/S^{2r} as in
    `softmax_weight_power_moments_exact`, independence of the keys).  The moments of the mean
    give its Monte Carlo mean a deviation bound without a normal approximation
    (`theorycheck.tails.mean_deviation_bound`)."""
    ns = _keys_of(n, q, "softmax_weight_average_moments_exact")
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise DeclarationError(f"softmax_weight_average_moments_exact: order must be a positive integer, got {order!r}")
    s, log_phi = _power_grid(q, tau, ns)
    t = np.exp(s)
    tilted = {k: _log_tilted_laplace(t, q, k) for k in range(2, 2 * order + 1, 2)}
    return _per_keys(n, [_average_moments(s, t, log_phi, tilted, tau, keys, order) for keys in ns])


def _average_moments(s, t, log_phi, tilted, tau, n, order):
    """`softmax_weight_average_moments_exact` for one n, from its grid and tilted transforms."""
    moments = []
    for r in range(1, order + 1):
        common = 2 * r * s - t * np.exp(tau) - gammaln(2 * r) + np.log(_POWER_STEP)
        # a partition with more blocks than fresh keys has no assignment of distinct keys
        integrands = np.array([math.log(count * math.perm(n - 1, len(blocks))) + common
                               + sum(tilted[2 * b] for b in blocks) + (n - 1 - len(blocks)) * log_phi
                               for blocks, count in _block_partitions(r) if len(blocks) <= n - 1])  # one sum
        moments.append(np.exp(logsumexp(integrands) - r * np.log(n - 1.0)))
    return np.array(moments)


@computation('solver', inputs=('x', 'u', 'Sigma', 'n'))
def softmax_average_mse_exact(x, u, Sigma, n):
    r"""``E||a - Sigma u||^2`` exactly (quadrature) for the softmax average ``a = s_0 x + sum_j
    s_j x_j`` over the fixed key ``x`` (score tau = u^T x) and n - 1 fresh keys x_j ~ N(0,
    Sigma) with scores u^T x_j.  Conditioning x_j on its score a_j ~ N(0, q), q = u^T Sigma u,
    x_j = (a_j/q) Sigma u + z_j with z_j ~ N(0, Sigma - Sigma u u^T Sigma / q) independent:

        a - Sigma u = s_0 (x - Sigma u) + B Sigma u + sum_j s_j z_j,   B = sum_j s_j (a_j/q - 1),

    so ``E||a - Sigma u||^2 = ||x - Sigma u||^2 E s_0^2 + 2 (x - Sigma u)^T Sigma u E[s_0 B] +
    ||Sigma u||^2 E B^2 + (tr Sigma - ||Sigma u||^2 / q)(n - 1) E s_j^2``, each expectation an
    integral over t as in `softmax_weight_second_moments_exact`.  ``n E||a - Sigma u||^2 ->
    e^q (tr Sigma + ||Sigma u||^2)`` (`softmax_average_mse_limit`).  ``n``: an integer, or a
    sequence of them (then one value per n: the transforms, the costly part, are computed once
    on the union of their grids)."""
    x, u, Sigma = (np.asarray(v, dtype=float) for v in (x, u, Sigma))
    m = Sigma @ u
    q, tau = float(u @ m), float(u @ x)
    ns = _keys_of(n, q, "softmax_average_mse_exact")
    t, ds, w0, log_phi, phi_2q = _softmax_laplace_terms(q, tau, ns)
    psi1, psi2 = _score_weighted_laplace(t, q)
    offset = x - m
    values = []
    for keys in ns:
        base, fresh, own = _weight_moments(q, keys, t, ds, w0, log_phi, phi_2q)
        N = keys - 1
        cross = w0 * N * np.sum(base * psi1 * np.exp((N - 1) * log_phi))
        b_square = np.sum(base * (N * psi2 * np.exp((N - 1) * log_phi)
                                  + N * (N - 1) * psi1 ** 2 * np.exp((N - 2) * log_phi)))
        values.append(float(offset @ offset * own + 2 * (offset @ m) * cross + (m @ m) * b_square
                            + (np.trace(Sigma) - (m @ m) / q) * N * fresh))
    return _per_keys(n, values)


#: the range of s = log t under s* for the first moments (`softmax_average_mean_exact`): their
#: integrand falls like t as t -> 0 (like t^2 for the second moments), so twice `_S_BELOW` leaves
#: the same e^{-40} of it out
_S_BELOW_FIRST = 2 * _S_BELOW


@computation('solver', inputs=('x', 'u', 'Sigma', 'n'))
def softmax_average_mean_exact(x, u, Sigma, n):
    r"""``E a`` exactly (quadrature) for the softmax average of `softmax_average_mse_exact`.
    With x_j = (a_j/q) Sigma u + z_j (z_j independent of the scores, mean 0)::

        E a - Sigma u = E[s_0] (x - Sigma u) + E[B] Sigma u,
        E s_0 = w0 int_0^inf e^{-t w0} phi(t)^{n-1} dt,
        E B   = (n - 1) int_0^inf e^{-t w0} psi1(t) phi(t)^{n-2} dt,

    from 1/S = int_0^inf e^{-tS} dt, psi1(t) = E[w (a/q - 1) e^{-tw}] (`_score_weighted_laplace`).
    ``E a -> Sigma u`` as n grows (E B -> E[w (a/q - 1)] / E w = 0), to O(1/n).  ``n``: an
    integer, or a sequence of them (then an array (len(n), d))."""
    x, u, Sigma = (np.asarray(v, dtype=float) for v in (x, u, Sigma))
    m = Sigma @ u
    q, tau = float(u @ m), float(u @ x)
    ns = _keys_of(n, q, "softmax_average_mean_exact")
    t, ds = _laplace_grid(q, tau, ns, below=_S_BELOW_FIRST)
    w0 = np.exp(tau)
    log_phi = np.log1p(_tilted_laplace(t, q, np.ones_like(_Z)))
    psi1, _ = _score_weighted_laplace(t, q)
    base = t * np.exp(-t * w0) * ds               # dt e^{-t w0}
    values = []
    for keys in ns:
        own = w0 * np.sum(base * np.exp((keys - 1) * log_phi))
        score_weighted = (keys - 1) * np.sum(base * psi1 * np.exp((keys - 2) * log_phi))
        values.append(m + own * (x - m) + score_weighted * m)
    return _per_keys(n, values)
