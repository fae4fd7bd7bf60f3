"""Decisions by value where planted defects once got through or were caught only by an error
(issue 23 item 7; the patches are tests/mutations/*.patch, run by tests/mutations/run.py)."""
import numpy as np
import torch

from theorycheck.models import Activation, TokenSelection
from theorycheck.models.attention_nets import activate, activation_derivative
from theorycheck.models.token_selection import log_excess_loss, loss_autograd_reference, token_scores
from theorycheck.optim import alignment, directional_bregman, lp_norm, mirror_map
from theorycheck.tolerance import roundoff

F64 = torch.float64


def _instance(K=3, n=4, T=3, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(K, n, T, d, generator=g, dtype=F64)
    y = torch.where(torch.rand(K, n, generator=g) < 0.5, -1.0, 1.0).to(F64)
    u = torch.randn(K, d, generator=g, dtype=F64)
    return X, y, u


def test_excess_loss_at_unsaturated_iterates_equals_the_plainly_written_loss():
    """log(L - L_*) from the log-domain form against L written plainly minus
    L_* = (1/n) sum_i exp(-gamma_{i,opt_i}) (opt the highest-scoring tokens), at small W where
    nothing saturates: equal to a few hundred round-offs (an off-by-one in n, a dropped term,
    a wrong sign of a score deviation moves it by orders more)."""
    X, y, u = _instance()
    W = 0.1 * torch.randn(3, 5, 5, generator=torch.Generator().manual_seed(1), dtype=F64)
    opt = token_scores(X, y, u).argmax(-1)
    plain = loss_autograd_reference(X, y, u, W)
    gamma = token_scores(X, y, u)
    L_star = torch.exp(-gamma.gather(-1, opt[..., None]).squeeze(-1)).mean(-1)
    expected = torch.log(plain - L_star)
    measured = log_excess_loss(X, y, u, W, opt)
    assert torch.all(torch.abs(measured - expected) <= roundoff(F64, 512) * torch.abs(expected).clamp(min=1))
    model = TokenSelection(X, y, u)
    assert torch.equal(model.log_excess_loss({"W": W}), measured)


def test_the_bregman_identity_and_its_argument_order():
    """D(R, W) = 1 - <grad psi(W/||W||_p), R/||R||_p> with grad psi the mirror map, at round-off;
    the divergence is not symmetric, so swapping its arguments changes it by order one."""
    g = torch.Generator().manual_seed(2)
    R, W = (torch.randn(4, 3, 3, generator=g, dtype=F64) for _ in range(2))
    for p in (1.5, 3.0):
        unit = lambda A: A / lp_norm(A, p)[:, None, None]  # noqa: E731
        identity = 1 - (mirror_map(unit(W), p) * unit(R)).sum((-1, -2))
        assert torch.allclose(directional_bregman(R, W, p), identity, rtol=0, atol=roundoff(F64, 64))
        assert torch.all(torch.abs(directional_bregman(R, W, p) - directional_bregman(W, R, p)) > 1e-3)


def test_softplus_derivative_equals_autograd_at_round_off():
    """phi'(z) = sigmoid(tau z) against autograd of softplus_tau (large threshold), to four
    round-offs relative: a defect of 1e-11 relative, invisible at 1e-10, is caught."""
    z = torch.linspace(-8, 8, 401, dtype=F64, requires_grad=True)
    for tau in (0.5, 1.0, 3.0):
        act = Activation("softplus", tau)
        (auto,) = torch.autograd.grad(activate(z, act).sum(), z)
        closed = activation_derivative(z.detach(), act)
        assert torch.all(torch.abs(closed - auto) <= roundoff(F64, 4) * torch.abs(auto))


def test_the_alignment_of_a_matrix_with_itself_is_one_at_round_off():
    A = torch.randn(6, 4, 5, generator=torch.Generator().manual_seed(3), dtype=F64) * torch.logspace(-3, 3, 6, dtype=F64)[:, None, None]
    assert torch.all(torch.abs(alignment(A, A) - 1) <= roundoff(F64, 8))
    assert torch.all(torch.abs(alignment(A, -2.5 * A) + 1) <= roundoff(F64, 8))
    np.testing.assert_array_less(alignment(A, A.flip(-1)).abs().numpy(), 1.0)
