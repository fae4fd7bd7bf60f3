r"""glls24's appendix lemmas as computations: Facts A.3, A.4 and A.7 checked with sympy, the
left-over-right ratios of Lemma B.1's Parts 2-13 (in memory-bounded chunks of trials) and the
pre-activation event of its Part 1 (Def. 4.1) over independent draws."""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp
import torch

from claims.glls24.setup import SIGMA
from theorycheck.batching import chunk_slices, map_chunks


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
