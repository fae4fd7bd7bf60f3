"""theorycheck.models.gradient_bounds: the bounds hold under equal non-optimal scores and the
ratios match their definitions computed directly from the gradient; the closed form (G) agrees with
autograd within its forward-error allowance."""
import numpy as np
import pytest
import torch

from claims.vdt24.setup import counterexample, counterexample_local_opt, example1
from theorycheck.models.gradient_bounds import (closed_form_allowance, correlation_floor, gradient_bounds,
                                               gradient_bounds_at_logits)
from theorycheck.models.token_selection import autograd_grad_W, closed_form_negative_grad_W, constraint_radii, logits
from theorycheck.optim import relative_error
from theorycheck.solvers import solve_wsvm_batch


def _tensors(data):
    t = data.to_torch()
    return t.X, t.y, t.u, t.opt, torch.as_tensor(solve_wsvm_batch(data.X, data.opt))


def _points(K, d, seed, scale):
    return torch.as_tensor(scale / np.sqrt(d) * np.random.default_rng(seed).standard_normal((K, d, d)))


def test_correlation_floor_is_its_formula():
    X, y, u, opt, W_mm = _tensors(example1([0, 1]))
    R = constraint_radii(X, opt)
    expected = 1.0 / (W_mm.flatten(1).norm(dim=1) * R.amax(-1))
    torch.testing.assert_close(correlation_floor(X, opt, W_mm), expected)


@pytest.mark.parametrize("scale", [0.1, 1.0, 5.0])
def test_bounds_hold_under_equal_non_optimal_scores(scale):
    X, y, u, opt, W_mm = _tensors(example1([0, 1, 2]))
    W = _points(X.shape[0], X.shape[-1], 7, scale)
    b = gradient_bounds(X, y, u, W, opt, W_mm)
    assert torch.all(b.lower >= 1 - 1e-12) and torch.all(b.upper <= 1 + 1e-12)
    assert torch.all(b.correlation >= 1 - 1e-12)
    assert torch.all(b.cosine >= correlation_floor(X, opt, W_mm) * (1 - 1e-12))
    grad = autograd_grad_W(X, y, u, W)
    cosine = (-grad * W_mm).flatten(1).sum(1) / (grad.flatten(1).norm(dim=1) * W_mm.flatten(1).norm(dim=1))
    torch.testing.assert_close(b.cosine, cosine, rtol=1e-9, atol=0)


def test_correlation_can_be_negative_without_equal_scores():
    data = counterexample(1)
    X, y, u, opt, W_mm = _tensors(data)
    W_alpha = torch.as_tensor(solve_wsvm_batch(data.X, counterexample_local_opt()[None]))
    assert gradient_bounds(X, y, u, 3 * W_alpha / W_alpha.norm(), opt, W_mm).cosine.item() < 0


def _within_allowances(b, kappa):
    return bool(torch.all(b.lower >= 1 - b.lower_allowance) and torch.all(b.correlation >= 1 - b.lower_allowance)
                and torch.all(b.upper <= 1 + b.upper_allowance)
                and torch.all(b.cosine / kappa >= 1 - b.cosine_allowance))


@pytest.mark.parametrize("spread", [0.0, 1e-6, 1e-3])
def test_bounds_hold_within_their_allowances_for_unequal_scores(spread):
    """The derivation for any scores: a decoder perturbed off equal non-optimal scores keeps every
    ratio within its allowance, from attention far off the optimal token (rho = -40, where the
    plain bounds fail) to saturation (rho = 400)."""
    X, y, u, opt, W_mm = _tensors(example1([0, 1, 2]))
    u = u + spread * torch.as_tensor(np.random.default_rng(3).standard_normal(u.shape))
    kappa = correlation_floor(X, opt, W_mm)
    outside = False
    for i, rho in enumerate((-40.0, -12.0, -1.0, 0.0, 5.0, 40.0, 400.0)):
        b = gradient_bounds(X, y, u, rho * W_mm + _points(X.shape[0], X.shape[-1], i, 1.0), opt, W_mm)
        assert _within_allowances(b, kappa)
        outside |= bool(torch.any(b.upper > 1) or torch.any(b.correlation < 1 - 1e-6))
    assert outside          # the plain bounds fail somewhere (at rho = -40 even at E1's round-off spread)


def test_allowances_are_round_off_sized_under_equal_scores():
    X, y, u, opt, W_mm = _tensors(example1([0, 1, 2]))
    b = gradient_bounds(X, y, u, _points(X.shape[0], X.shape[-1], 11, 5.0), opt, W_mm)
    for allowance in (b.lower_allowance, b.upper_allowance, b.cosine_allowance):
        assert torch.all(allowance > 0) and torch.all(allowance < 1e-8)


def test_a_wrong_reference_fails_beyond_its_allowance():
    """The reference for opt+1 mod T meets its own program (deficit on ref_opt ~ 0), so its
    allowance stays small while its correlation with the gradient turns negative."""
    data = example1([0, 1, 2])
    X, y, u, opt, _ = _tensors(data)
    wrong = (opt + 1) % X.shape[2]
    W_ref = torch.as_tensor(solve_wsvm_batch(data.X, (data.opt + 1) % data.T))
    b = gradient_bounds(X, y, u, _points(X.shape[0], X.shape[-1], 13, 1.0), opt, W_ref, ref_opt=wrong)
    assert torch.all(b.lower_allowance < 1e-6)
    assert torch.all(b.correlation < 1 - b.lower_allowance)


def test_bounds_at_logits_are_those_at_the_point():
    """The gradient depends on W only through its logits: at W's logits the ratios and allowances
    are those at W, bit for bit."""
    X, y, u, opt, W_mm = _tensors(example1([0, 1, 2]))
    W = _points(X.shape[0], X.shape[-1], 17, 3.0)
    at_W, at_z = gradient_bounds(X, y, u, W, opt, W_mm), gradient_bounds_at_logits(X, y, u, logits(X, W), opt, W_mm)
    for name in ("lower", "upper", "correlation", "cosine", "lower_allowance", "cosine_allowance"):
        torch.testing.assert_close(getattr(at_z, name), getattr(at_W, name), rtol=0, atol=0)


def test_spread_cap_keeps_a_violation_from_being_absorbed():
    """CE violates equal non-optimal scores (spread 1.5): at W = -Wbar_mm its cosine is negative, and
    the uncapped allowance (for any scores) covers that, while the allowance capped at a hypothesis
    tolerance (what data meeting it could give) does not; on data meeting it the cap changes nothing."""
    X, y, u, opt, W_mm = _tensors(counterexample(1))
    kappa = correlation_floor(X, opt, W_mm)
    W = -W_mm / W_mm.norm()
    free, capped = gradient_bounds(X, y, u, W, opt, W_mm), gradient_bounds(X, y, u, W, opt, W_mm, spread_cap=1e-8)
    assert free.cosine.item() < 0
    assert (free.cosine / kappa >= 1 - free.cosine_allowance).item()
    assert (capped.cosine / kappa < 1 - capped.cosine_allowance).item()
    X, y, u, opt, W_mm = _tensors(example1([0, 1, 2]))
    W = _points(X.shape[0], X.shape[-1], 19, 2.0)
    torch.testing.assert_close(gradient_bounds(X, y, u, W, opt, W_mm, spread_cap=1e-8).cosine_allowance,
                               gradient_bounds(X, y, u, W, opt, W_mm).cosine_allowance, rtol=0, atol=0)


def _identity_error_and_allowance(X, y, u, W, opt, spread_cap=float("inf")):
    reference = autograd_grad_W(X, y, u, W)
    err = relative_error(-closed_form_negative_grad_W(X, y, u, W, opt), reference)
    return err, closed_form_allowance(X, y, u, W, opt, reference, spread_cap=spread_cap)


@pytest.mark.parametrize("spread", [0.0, 1e-10, 1e-6, 1e-3])
def test_closed_form_allowance_covers_perturbed_inputs(spread):
    """The allowance is derived for any scores and tokens: perturbed decoders (off equal non-optimal
    scores) and perturbed tokens keep (G) vs autograd within it at unsaturated points, and without a
    spread it is round-off sized."""
    X, y, u, opt, W_mm = _tensors(example1([0, 1, 2]))
    rng = np.random.default_rng(5)
    u = u + spread * torch.as_tensor(rng.standard_normal(u.shape))
    X = X * (1 + spread * torch.as_tensor(rng.standard_normal(X.shape)))
    unit_mm = W_mm / W_mm.flatten(1).norm(dim=1)[:, None, None]
    points = [c * unit_mm for c in (0.0, -1.0, -3.0)] + [_points(X.shape[0], X.shape[-1], 17 + i, s)
                                                        for i, s in enumerate((0.1, 1.0, 5.0))]
    for W in points:
        err, allowance = _identity_error_and_allowance(X, y, u, W, opt)
        assert torch.all(err <= allowance)
        if spread == 0.0:
            assert torch.all(allowance < 1e-6)
        if spread >= 1e-6:
            assert torch.all(err > 1e-12)          # the perturbation shows: (G) is no longer the gradient


def test_closed_form_allowance_with_a_capped_spread_refuses_unequal_scores():
    """Capped at a tolerance on the spread, the allowance is what data meeting equal scores to that
    tolerance can give: CE (and E1 with a decoder perturbed beyond the cap) fall outside it, while
    E1's round-off spread lies below the cap, which then changes nothing."""
    X, y, u, opt, W_mm = _tensors(counterexample(1))
    for c in (0.0, -1.0, -3.0):
        err, allowance = _identity_error_and_allowance(X, y, u, c * W_mm / W_mm.norm(), opt, spread_cap=1e-8)
        assert torch.all(err > 1e3 * allowance)
    X, y, u, opt, W_mm = _tensors(example1([0, 1, 2]))
    W = -W_mm / W_mm.flatten(1).norm(dim=1)[:, None, None]
    err, capped = _identity_error_and_allowance(X, y, u, W, opt, spread_cap=1e-8)
    torch.testing.assert_close(capped, _identity_error_and_allowance(X, y, u, W, opt)[1], rtol=0, atol=0)
    u = u + 1e-3 * torch.as_tensor(np.random.default_rng(9).standard_normal(u.shape))
    err, allowance = _identity_error_and_allowance(X, y, u, W, opt, spread_cap=1e-8)
    assert torch.all(err > allowance)
