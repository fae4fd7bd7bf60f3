"""Tests of theorycheck.solvers.ntk and theorycheck.solvers.score against independent
references: Monte-Carlo widths, the explicit kernel-GD recursion, numerical differentiation."""
import numpy as np
import pytest
import torch
from scipy import stats

from theorycheck.errors import DeclarationError
from theorycheck.models import ntk_gram, symmetric_initialization
from theorycheck.solvers import (
    LIMIT_KERNELS,
    gaussian_mixture_score,
    kernel_gd_predictions,
    ou_coefficients,
    output_kernel,
    spectral_filter,
)

torch.set_num_threads(1)


@pytest.mark.parametrize("activation", ["softmax", "exp", "relu"])
def test_limit_kernel_matches_a_wide_network(activation):
    rng = np.random.default_rng(3)
    n, d_in, d, m, sigma = 3, 4, 2, 2**17, 0.5
    X = rng.standard_normal((1, n, d_in))
    X *= rng.uniform(0.4, 1.0, (1, n, 1)) / np.linalg.norm(X, axis=-1, keepdims=True)
    W, A = symmetric_initialization(rng, 1, d_in, d, m, sigma)
    X, W, A = (torch.as_tensor(a) for a in (X, W, A))
    H = ntk_gram(X, X, W, A, activation)
    limit = output_kernel(LIMIT_KERNELS[activation](X, X, sigma), d)
    assert float((H - limit).norm() / limit.norm()) < 0.03


def test_output_kernel_is_block_diagonal_output_major():
    k = torch.arange(6.0, dtype=torch.float64).reshape(1, 2, 3)
    out = output_kernel(k, 2)
    assert out.shape == (1, 4, 6)
    torch.testing.assert_close(out[0, 2:, 3:], k[0])
    assert float(out[0, :2, 3:].abs().max()) == 0.0


@pytest.mark.parametrize("times", [[0, 1, 7, 30], [1, 30]])   # >= and < the 4 test points
def test_kernel_gd_predictions_equal_the_recursion(times):
    g = torch.Generator().manual_seed(0)
    Phi = torch.randn(2, 5, 3, generator=g, dtype=torch.float64)       # rank 3 < 5: null space
    Phi_te = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    H, K_te = Phi @ Phi.transpose(1, 2), Phi_te @ Phi.transpose(1, 2)
    y = torch.randn(2, 5, generator=g, dtype=torch.float64)
    c = 0.5 / torch.linalg.eigvalsh(H)[:, -1]
    u, f, rows = torch.zeros_like(y), torch.zeros(2, 4, dtype=torch.float64), {}
    for t in range(31):
        rows[t] = f.clone()
        e = u - y
        u, f = u - c[:, None] * torch.einsum("kij,kj->ki", H, e), f - c[:, None] * torch.einsum("kij,kj->ki", K_te, e)
    got = kernel_gd_predictions(H, K_te, y, c, times)
    for r, t in enumerate(times):
        torch.testing.assert_close(got[r], rows[t], rtol=1e-11, atol=1e-12)


def test_spectral_filter_limits():
    mu = torch.tensor([0.0, 1e-20, 1e-3, 1.0], dtype=torch.float64)
    phi = spectral_filter(mu, 0.5, 10.0)
    assert float(phi[0]) == 5.0 and abs(float(phi[1]) - 5.0) < 1e-12
    assert abs(float(phi[3]) - (1 - 0.5**10)) < 1e-15


def test_mixture_score_is_the_gradient_of_the_log_density():
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((50, 1)), rng.uniform(0.1, 1.0, 50)
    w, mu, s = np.array([0.3, 0.7]), np.array([[-0.5], [0.5]]), np.array([0.15, 0.3])
    alpha, sd = ou_coefficients(t)

    def log_p(z):
        v = np.sqrt(alpha[:, None] ** 2 * s[None] ** 2 + sd[:, None] ** 2)
        return np.log((w[None] * stats.norm.pdf(z, alpha[:, None] * mu[:, 0][None], v)).sum(1))

    h = 1e-5
    numeric = (log_p(x + h) - log_p(x - h)) / (2 * h)
    np.testing.assert_allclose(gaussian_mixture_score(x, t, w, mu, s)[:, 0], numeric, rtol=1e-6, atol=1e-8)


def test_ou_coefficients_and_errors():
    alpha, s = ou_coefficients([0.0, 1.0])
    np.testing.assert_allclose(alpha**2 + s**2, 1.0)
    with pytest.raises(DeclarationError, match="t >= 0"):
        ou_coefficients([-1.0])
    with pytest.raises(DeclarationError, match="kernel GD"):
        kernel_gd_predictions(torch.eye(3)[None], torch.eye(2)[None], torch.ones(1, 3), 0.1, [1])


def test_softmax_limit_kernel_in_place_equals_the_formula_and_keeps_gradients():
    from theorycheck.solvers import softmax_limit_kernel

    rng = np.random.default_rng(8)
    X1, X2 = (torch.as_tensor(rng.uniform(-0.6, 0.6, (2, k, 3))) for k in (7, 5))
    G = torch.einsum("kie,kje->kij", X1, X2)
    assert torch.equal(softmax_limit_kernel(X1, X2, 0.8), G * torch.exp(0.8**2 * G))
    X1.requires_grad_()
    softmax_limit_kernel(X1, X2, 0.8).sum().backward()
    assert X1.grad is not None and torch.isfinite(X1.grad).all()
