r"""anon20's bounds as formulas: the sample-size bounds of Theorem 1 (and its corollary and
Proposition 1), the sample size that Theorem 7's proof needs, and the norm bounds on attended
inputs (App. E.1, E.2)."""
from __future__ import annotations

import math

import numpy as np
import sympy as sp


def sample_bound(scale, log_arg, params, K=1.0, eta=1.0, gamma=1.0):
    """``scale^2 K / gamma^2 * log(log_arg * eta / gamma) * params``: the form of Thm 1's bound
    (scale = s0 for attention, p for the baseline, 1 for Cor. 1)."""
    return scale ** 2 * K / gamma ** 2 * math.log(log_arg * eta / gamma) * params


def bounds(p, s0, d, ratio):
    """N_att, N_base, N_cor1, N_prop1 at eta / gamma = ratio (K = 1, gamma = 1)."""
    return (sample_bound(s0, s0, p * d + p + d, eta=ratio), sample_bound(p, p, p * d + d, eta=ratio),
            sample_bound(1, 1, p * d + p + d, eta=ratio), sample_bound(s0, s0, p * d + d, eta=ratio))


def gamma_exponent(n_expr, gamma):
    """``lim_{gamma -> 0} d log n / d log gamma`` of a sample-size expression."""
    return sp.limit(sp.simplify(gamma * sp.diff(n_expr, gamma) / n_expr), gamma, 0, "+")


def proof_sample_size(hoeffding_power=2):
    """``n`` solving ``log N_eps - n c^2 gamma^q / sigma^2 = log delta`` (the union bound over an
    eps-net with ``log N_eps = P log(L/gamma)``) for the Hoeffding exponent ``q``."""
    n, P, L, c, sigma, gamma, delta = sp.symbols("n P L c sigma gamma delta", positive=True)
    solution = sp.solve(sp.Eq(P * sp.log(L / gamma) - n * c ** 2 * gamma ** hoeffding_power / sigma ** 2,
                              sp.log(delta)), n)
    return solution[0], gamma, (P, L, c, sigma)


def attended_norm_ratios(rng, p, s0, c_x, tau, a_max):
    """Ratios measured / bound of the four norm bounds for one random instance (the first
    two also at their equality instance x = C_x 1, a = a_max 1_S / a = e_k)."""
    import torch

    from theorycheck.models import RELU, Activation, activate

    support = rng.permutation(p)[:s0]
    a = np.zeros(p)
    a[support] = rng.uniform(0, a_max, s0)
    x = rng.uniform(-c_x, c_x, p)
    extreme_a = np.zeros(p)
    extreme_a[support] = a_max
    simplex = rng.dirichlet(np.ones(p))
    d = int(rng.integers(1, 64))
    W1 = rng.standard_normal((p, d))
    c_1 = float(np.linalg.norm(W1))
    z = torch.as_tensor((x * a) @ W1)
    relu = float(activate(z, RELU).norm())
    soft = float(activate(z, Activation("softplus", tau)).norm())
    root = math.sqrt(s0) * c_x
    return [np.linalg.norm(x * a) / root, np.linalg.norm(c_x * extreme_a) / root,
            np.linalg.norm(x * simplex) / c_x, relu / (root * c_1),
            soft / (root * c_1 + math.sqrt(d) * math.log(2) / tau)]
