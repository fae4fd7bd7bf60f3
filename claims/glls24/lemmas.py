r"""glls24's appendix lemmas as computations: Facts A.3, A.4 and A.7 checked with sympy, the
left-over-right ratios of Lemma B.1's Parts 2-13 (in memory-bounded chunks of trials) and the
pre-activation event of its Part 1 (Def. 4.1) over independent draws."""
from __future__ import annotations

import functools

import math

import numpy as np
import sympy as sp
import torch
from scipy import stats

from claims.glls24.setup import SIGMA
from theorycheck import TailBound
from theorycheck.batching import chunk_slices, map_chunks
from theorycheck.tails import sphere_cap_tail
from theorycheck.tolerance import unit_roundoff

UNIT_ROUNDOFF = unit_roundoff("float64")
"""float64's unit round-off u (the claims' arrays are float64, numpy and torch alike)."""


@functools.lru_cache(maxsize=1)
def symbolic_facts():
    """Facts A.3, A.4 and A.7 checked with sympy (cached: the claim and its controls share them)."""
    a, b, w1, w2, c1, c2 = sp.symbols("a b w1 w2 c1 c2", real=True)
    normaliser = sp.exp(w1 * c1) + sp.exp(w2 * c2)
    softmax = [sp.exp(w1 * c1) / normaliser, sp.exp(w2 * c2) / normaliser]
    s = sp.symbols("s", integer=True, nonnegative=True)
    points = [sp.Rational(1, 7), sp.Rational(1, 2), sp.Integer(1)]
    return {
        "Fact A.3 symbolic": sp.expand((a - b) ** 2 - (a**2 - 2 * a * b + b**2)) == 0,
        "Fact A.4 symbolic": sp.simplify(sum(softmax) - 1) == 0
        and sp.simplify(sp.diff(normaliser, w1) - sp.exp(w1 * c1) * c1) == 0,
        "Fact A.7 symbolic": all(sp.summation((1 - q) ** s, (s, 0, sp.oo)) == 1 / q for q in points),
    }


def lemma_b1_ratios(X, W_tilde, W, A, B, R):
    r"""Left side / right side of Parts 2-13 of Lemma B.1 (derived constants, spec), the maximum
    over samples, neurons and outputs per trial, with the pre-activation level ``B`` (K,) of the
    lemma's event (`bounded_preactivation_level` of ``W_tilde``: the event itself)."""
    m = W.shape[2]
    Bk = B[:, None, None]
    Zt, Z = torch.einsum("kne,kem->knm", X, W_tilde), torch.einsum("kne,kem->knm", X, W)
    P = W - W_tilde
    pair = torch.einsum("kije,kem->kijm", X[:, :, None, :] + X[:, None, :, :], P)
    alpha_t, alpha = Zt.exp().sum(-1), Z.exp().sum(-1)
    St, S = torch.softmax(Zt, -1), torch.softmax(Z, -1)
    dS = S - St
    ratios = {
        "Part 2": Z.abs() / (Bk + R),
        "Part 3": pair.abs() / (2 * R),
        "Part 5": Z.exp() / torch.exp(Bk + R),
        "Part 6": torch.expm1(pair).abs() / (4 * R),
        "Part 7": (Z.exp() - Zt.exp()).abs() / (R * torch.exp(Bk + R)),
        "Part 8": (alpha - alpha_t).abs() / (m * R * torch.exp(B[:, None] + R)),
        "Part 9": (1 / alpha - 1 / alpha_t).abs() / (R * torch.exp(3 * B[:, None] + 2 * R) / m),
        "Part 10": St / (torch.exp(2 * Bk) / m),
        "Part 11": S / (torch.exp(2 * Bk + 2 * R) / m),
        "Part 12": dS.abs() / (2 * R * torch.exp(4 * Bk + 2 * R) / m),
        "Part 13": torch.einsum("kdm,knm->knd", A, dS).abs() / (4 * R * torch.exp(4 * Bk + 2 * R)),
    }
    return {k: v.flatten(1).amax(1).cpu().numpy() for k, v in ratios.items()}


def lemma_b1_roundoff_tail(n, d_in, instances, widths, radii):
    r"""The stated bound of Lemma B.1's Parts 2, 3, 5 and 7 on the claim's draw (`lemma_b1_ratios` at
    ``B = B_emp``): each holds for every instance of its hypotheses (``||x_i|| <= 1``, ``||w_r - w~_r||
    <= R``, the event ``|<w~_r, x_i>| <= B``), with an exact slack of at least ``1 - |cos|`` in the
    ratio, ``cos`` between the direction ``p_r / R`` of neuron r and a unit vector ``v`` of the data
    (``x_i`` for Parts 2, 5, 7; ``(x_i + x_j) / ||x_i + x_j||`` for Part 3).  The computed ratio
    exceeds 1 only where that slack is below its round-off, which a forward error analysis puts
    below ``kappa = 8 (d_in + 4) u (t + 1) / R_min`` while every ``||w~_r|| <= t``: so the parts fail
    only if some ``||w~_r|| > t`` (a chi-square tail) or some uniform direction ``p_r / ||p_r||``
    (a normalized Gaussian column, independent of the data) lies within the cap ``||p - v|| <=
    sqrt(2 kappa)`` of ``v`` or ``-v`` (`sphere_cap_tail`).  ``t = sigma (sqrt(d_in) + 14)``."""
    t = SIGMA * (math.sqrt(d_in) + 14)
    neurons = instances * sum(widths)
    norm_tail = neurons * float(stats.chi2.sf((t / SIGMA) ** 2, d_in))
    kappa = 8 * (d_in + 4) * UNIT_ROUNDOFF * (t + 1) / min(radii)
    vectors = n + n * (n - 1) // 2
    pairs = neurons * len(radii) * vectors * 2
    probability = min(1.0, norm_tail + sphere_cap_tail(d_in, pairs, math.sqrt(2 * kappa)))
    return TailBound(probability, (
        "Parts 2, 3, 5, 7 hold for every instance (Cauchy-Schwarz, ||x_i|| <= 1, B = B_emp bounds "
        "|<w~_r, x_i>|; Part 7 by the mean value theorem, e^xi <= e^{B+R}); the exact ratio is at most "
        "|cos(p_r, v)| (Parts 3, 7) or 1 - R (1 - |cos|) / (B + R) (Parts 2, 5; B >= 1), v = x_i or "
        "(x_i + x_j)/||x_i + x_j||.  Forward error, the float arrays taken as exact: the dot products "
        "of length d_in (numpy's B, torch's Z, Zt, pair) err by at most d_in u ||w|| each, W = fl(W~ + P) "
        "moves p_r by u ||w_r||, ||x_i|| <= 1 + d_in u, ||p_r|| <= R (1 + (d_in + 4) u), exp and the "
        "divisions a few u; with ||w_r|| <= t + R and B <= max(1, t) the computed ratio exceeds 1 only "
        "if 1 - |cos| < (4 d_in + 16) u (t + 1) / R, the division by R coming from Part 7's "
        "difference e^Z - e^Zt (its terms err by u e^{B+R} (1 + d_in ||w||)).  kappa doubles that.  "
        f"Probability: {neurons} columns w~_r with ||w~_r|| > t = sigma (sqrt(d_in) + 14) (chi-square "
        f"tail {norm_tail:.1e}) or some of {pairs} (direction, +-v) pairs within distance sqrt(2 kappa) "
        "(the spherical cap of a uniform direction of R^d_in, independent of the data's stream; union "
        "bound)"))


def lemma_b1_ratios_chunked(X, W_tilde, W, A, B, R):
    """`lemma_b1_ratios` over chunks of trials: its (K, n, n, m) temporaries stay within the
    library's memory budget at the full tier's widths."""
    n, m = X.shape[1], W.shape[2]
    return map_chunks(lambda *args: lemma_b1_ratios(*args, R), X, W_tilde, W, A, B, item_bytes=64 * n * n * m)


def preactivation_event(rng, X0, trials, m, B):
    r"""Per independent draw of ``W~`` (``trials`` draws of d_in x m, entries ``N(0, sigma^2)``), whether
    ``max_{i,r} |<w~_r, x_i>| <= B`` on the inputs ``X0`` (n, d_in); drawn in memory-bounded chunks."""
    n, d_in = X0.shape
    events = [np.abs(np.einsum("ne,kem->knm", X0, SIGMA * rng.standard_normal((s.stop - s.start, d_in, m))))
              .max(axis=(1, 2)) <= B
              for s in chunk_slices(trials, 16 * (d_in + n) * m)]
    return np.concatenate(events)
