"""Tests of l_p mirror descent (`theorycheck.optim.mirror`): mirror map and inverse, Bregman
divergence identities, p = 2 equals GD, per-trial p, normalized steps, bad settings."""
import math

import pytest
import torch

from theorycheck.errors import DeclarationError
from theorycheck.models import TokenSelection
from theorycheck.optim import GD, MirrorDescent, bregman, directional_bregman, lp_norm, mirror_map
from theorycheck.optim import inverse_mirror_map, potential, relative_error
from theorycheck.optim.mirror import dual_exponent

torch.set_num_threads(1)
P = [1.1, 1.5, 1.75, 2.0, 3.0, 4.0]


def _matrices(K=4, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(K, d, d, generator=g, dtype=torch.float64) for _ in range(3)]


def _model(K=3, n=4, T=5, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(K, n, T, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    y = torch.randint(0, 2, (K, n), generator=g).to(torch.float64) * 2 - 1
    u = torch.randn(K, d, generator=g, dtype=torch.float64)
    return TokenSelection(X, y, u), {"W": torch.randn(K, d, d, generator=g, dtype=torch.float64)}


@pytest.mark.parametrize("p", P)
def test_round_trip_and_identities(p):
    A, B, _ = _matrices()
    torch.testing.assert_close(inverse_mirror_map(mirror_map(A, p), p), A, rtol=1e-13, atol=0)
    q = dual_exponent(p)
    torch.testing.assert_close(lp_norm(mirror_map(A, p), q), lp_norm(A, p) ** (p - 1), rtol=1e-13, atol=0)
    torch.testing.assert_close((mirror_map(A, p) * A).flatten(1).sum(1), p * potential(A, p),
                               rtol=1e-13, atol=0)
    torch.testing.assert_close(mirror_map(3.0 * A, p), 3.0 ** (p - 1) * mirror_map(A, p), rtol=1e-13, atol=0)


@pytest.mark.parametrize("p", P)
def test_bregman_is_nonnegative_and_zero_on_the_diagonal(p):
    A, B, _ = _matrices()
    assert bool((bregman(A, B, p) > 0).all())
    assert float(bregman(A, A, p).abs().max()) <= 1e-12
    unit = A / lp_norm(A, p)[:, None, None]
    torch.testing.assert_close(directional_bregman(7.0 * A, B, p),
                               bregman(unit, B / lp_norm(B, p)[:, None, None], p), rtol=1e-12, atol=1e-14)
    assert float(directional_bregman(A, 5.0 * A, p).abs().max()) <= 1e-14


def test_bregman_at_p2_is_half_squared_distance():
    A, B, _ = _matrices()
    torch.testing.assert_close(bregman(A, B, 2.0), 0.5 * ((A - B) ** 2).flatten(1).sum(1), rtol=1e-13, atol=0)


def test_lp_norm_is_scale_safe():
    A, _, _ = _matrices()
    for scale in (1e-200, 1e200):
        torch.testing.assert_close(lp_norm(scale * A, 3.0), scale * lp_norm(A, 3.0), rtol=1e-13, atol=0)
    assert float(lp_norm(torch.zeros(2, 3, 3, dtype=torch.float64), 1.5).abs().max()) == 0.0


def test_p2_plain_step_is_the_gd_step():
    model, params = _model()
    md, gd = MirrorDescent(model, 2.0, 0.7), GD(model, 0.7)
    a, b = dict(params), dict(params)
    for t in range(20):
        a, b = md(t, a), gd(t, b)
    assert float(relative_error(a["W"], b["W"]).max()) <= 1e-13


def test_plain_step_solves_the_dual_update():
    model, params = _model()
    p, eta = 1.5, 0.3
    new = MirrorDescent(model, p, eta)(0, params)
    grad = model.gradient(params)["W"]
    torch.testing.assert_close(mirror_map(new["W"], p), mirror_map(params["W"], p) - eta * grad,
                               rtol=1e-12, atol=1e-14)


def test_normalized_step_moves_eta_in_the_dual_norm():
    model, params = _model()
    p, eta = 3.0, 0.05
    new = MirrorDescent(model, p, eta, normalized=True)(0, params)
    dual_move = mirror_map(params["W"], p) - mirror_map(new["W"], p)
    torch.testing.assert_close(lp_norm(dual_move, dual_exponent(p)), torch.full((3,), eta, dtype=torch.float64),
                               rtol=1e-11, atol=0)
    grad = model.gradient(params)["W"]
    cos = (dual_move * grad).flatten(1).sum(1) / (dual_move.flatten(1).norm(dim=1) * grad.flatten(1).norm(dim=1))
    assert float((1 - cos).abs().max()) <= 1e-12


def test_per_trial_p_equals_one_p_per_run():
    model, params = _model()
    ps = [1.5, 2.0, 3.0]
    batch = MirrorDescent(model, ps, 0.2, normalized=True)(0, params)
    for k, p in enumerate(ps):
        alone = MirrorDescent(model.restrict(slice(k, k + 1)), p, 0.2, normalized=True)(
            0, {"W": params["W"][k:k + 1]})
        assert float(relative_error(alone["W"], batch["W"][k:k + 1])) <= 1e-13


@pytest.mark.parametrize("bad", [dict(p=1.0, eta=0.1), dict(p=0.5, eta=0.1), dict(p=2.0, eta=0.0),
                                 dict(p=[1.5, 2.0], eta=0.1)])
def test_bad_settings_raise(bad):
    model, _ = _model()
    with pytest.raises(DeclarationError):
        MirrorDescent(model, bad["p"], bad["eta"])
