"""Tests of theorycheck.models.token_selection against independent references:
autograd (torch.func), closed forms, and exact decimal arithmetic."""

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from claims.vdt24.setup import example1
from theorycheck import data as datasets
from theorycheck.errors import DeclarationError, InvalidInputError
from theorycheck.models.token_selection import (
    LOSSES,
    LogisticForward,
    TokenSelection,
    attended_features,
    autograd_grad_W,
    closed_form_negative_grad_W,
    constraint_radii,
    log_attention,
    log_excess_loss,
    log_gradient_weights,
    log_loss,
    log_one_minus_s_opt,
    logit_gap,
    logits,
    loss_autograd_reference,
    margins,
    optimal_token_mask,
    s_opt,
    scaled_grad_u,
    scaled_grad_W,
    scaled_gradients,
    score_deviations,
    score_gap,
    span_kernel,
    token_scores,
    tokens_at,
)

torch.set_num_threads(1)
SETTINGS = settings(max_examples=25, deadline=None, database=None)
F64 = torch.float64


def ortho_problem(K, n=3, T=3, d=12, zeta=3.0, seed=0):
    """Orthonormal tokens with gamma_opt = zeta, other scores 0, and the W-SVM solution
    W_mm = sum_i (x_{i,opt} - mean_t x_{i,t}) x_{i,1}^T, so that W = beta W_mm has
    logit gap exactly beta between the optimal and every other token."""
    rng = np.random.default_rng(seed)
    Q = np.stack([np.linalg.qr(rng.normal(size=(d, n * T)))[0] for _ in range(K)])
    X = np.transpose(Q, (0, 2, 1)).reshape(K, n, T, d)
    y = rng.choice([-1.0, 1.0], size=(K, n))
    opt = rng.integers(0, T, size=(K, n))
    x_opt = np.take_along_axis(X, opt[..., None, None], axis=2)[:, :, 0]
    u = zeta * np.einsum("kn,knd->kd", y, x_opt)
    W_mm = np.einsum("kni,knj->kij", x_opt - X.mean(2), X[:, :, 0])
    return torch.tensor(X), torch.tensor(y), torch.tensor(u), torch.tensor(opt), torch.tensor(W_mm)


def random_problem(seed, K=2, n=4, T=3, d=5, w_scale=1.0, u_scale=1.0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(K, n, T, d, generator=g, dtype=F64) / math.sqrt(d)
    y = torch.randint(0, 2, (K, n), generator=g).to(F64) * 2 - 1
    u = u_scale * torch.randn(K, d, generator=g, dtype=F64)
    W = w_scale * torch.randn(K, d, d, generator=g, dtype=F64)
    return X, y, u, W


def autograd_gradients(X, y, u, W):
    return torch.func.grad(lambda u, W: loss_autograd_reference(X, y, u, W).sum(), argnums=(0, 1))(u, W)


def rel_err(a, b):
    return float((a - b).norm() / b.norm())


def unscale(M, G):
    return torch.exp(M).reshape(M.shape + (1,) * (G.dim() - 1)) * G


def test_definitions_match_einsum():
    X, y, u, W = random_problem(0)
    z = torch.einsum("kntd,kde,kne->knt", X, W, X[:, :, 0])
    gamma = torch.einsum("kn,kntd,kd->knt", y, X, u)
    s = torch.softmax(z, -1)
    opt = gamma.argmax(-1)
    close = dict(rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(logits(X, W), z, **close)
    torch.testing.assert_close(token_scores(X, y, u), gamma, **close)
    torch.testing.assert_close(log_attention(X, W).exp(), s, **close)
    torch.testing.assert_close(margins(X, y, u, W), (s * gamma).sum(-1), **close)
    torch.testing.assert_close(attended_features(X, W), torch.einsum("knt,kntd->knd", s, X), **close)
    torch.testing.assert_close(s_opt(X, W, opt), s.gather(-1, opt[..., None]).squeeze(-1), **close)
    torch.testing.assert_close(log_loss(X, y, u, W), loss_autograd_reference(X, y, u, W).log(), **close)


@SETTINGS
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 5),
    T=st.integers(2, 5),
    d=st.integers(2, 8),
    w_scale=st.sampled_from([0.0, 0.1, 1.0, 3.0]),
    u_scale=st.sampled_from([0.1, 1.0, 3.0]),
)
@example(seed=2123, n=4, T=2, d=3, w_scale=1.0, u_scale=3.0)
def test_scaled_gradients_match_autograd(seed, n, T, d, w_scale, u_scale):
    """Agreement to 1e-10, or to ten times the round-off of the reference itself where the
    gradient cancels (a small sum of larger terms): the spread between autograd of the loss and
    of exp(log loss), two float64 evaluations of one quantity (the @example is such a case,
    found by hypothesis)."""
    X, y, u, W = random_problem(seed, n=n, T=T, d=d, w_scale=w_scale, u_scale=u_scale)
    ref_u, ref_W = autograd_gradients(X, y, u, W)
    alt_u, alt_W = torch.func.grad(lambda u, W: log_loss(X, y, u, W).exp().sum(), argnums=(0, 1))(u, W)
    (M_u, G_u), (M_W, G_W) = scaled_gradients(X, y, u, W)
    assert rel_err(unscale(M_u, G_u), ref_u) < max(1e-10, 10 * rel_err(alt_u, ref_u))
    assert rel_err(unscale(M_W, G_W), ref_W) < max(1e-10, 10 * rel_err(alt_W, ref_W))
    torch.testing.assert_close(scaled_grad_u(X, y, u, W), (M_u, G_u), rtol=0, atol=0)
    torch.testing.assert_close(scaled_grad_W(X, y, u, W), (M_W, G_W), rtol=0, atol=0)


@SETTINGS
@given(seed=st.integers(0, 10_000), beta=st.floats(1.0, 10.0), noise=st.floats(0.0, 0.5))
def test_scaled_gradients_match_autograd_near_saturation(seed, beta, noise):
    """W = beta W_mm + noise: 1 - s_opt down to ~1e-4, still inside autograd's accurate range."""
    X, y, u, opt, W_mm = ortho_problem(2, seed=seed)
    g = torch.Generator().manual_seed(seed)
    W = beta * W_mm + noise * torch.randn(W_mm.shape, generator=g, dtype=F64)
    ref_u, ref_W = autograd_gradients(X, y, u, W)
    (M_u, G_u), (M_W, G_W) = scaled_gradients(X, y, u, W)
    assert rel_err(unscale(M_u, G_u), ref_u) < 1e-10
    assert rel_err(unscale(M_W, G_W), ref_W) < 1e-10


def test_zero_decoder_gives_exactly_zero_W_gradient():
    X, y, u, W = random_problem(1)
    M, G = scaled_grad_W(X, y, torch.zeros_like(u), W)
    assert torch.all(M == -math.inf) and torch.all(G == 0)
    M_u, G_u = scaled_grad_u(X, y, torch.zeros_like(u), W)
    ref_u, _ = autograd_gradients(X, y, torch.zeros_like(u), W)
    assert rel_err(unscale(M_u, G_u), ref_u) < 1e-12
    opt = torch.zeros_like(y, dtype=torch.long)
    assert torch.all(log_excess_loss(X, y, torch.zeros_like(u), W, opt) == -math.inf)  # L = L_* = 1


def two_token_problem(seed, gap):
    """n = 1, T = 2, K = 1 with generic tokens and W scaled so that z_1 - z_2 = gap."""
    X, y, u, W = random_problem(seed, K=1, n=1, T=2, d=4)
    z = logits(X, W)[0, 0]
    return X, y, u, W * gap / (z[0] - z[1])


@SETTINGS
@given(seed=st.integers(0, 10_000), gap=st.floats(60.0, 200.0) | st.floats(-200.0, -60.0))
def test_gradient_direction_exact_for_two_tokens_deep_in_saturation(seed, gap):
    r"""For T = 2, grad_W L = l'(gbar) s_1 s_2 (gamma_1 - gamma_2) (x_1 - x_2) x_1^T exactly, so
    grad/||grad|| = -sign(gamma_1 - gamma_2) (x_1 - x_2) x_1^T/||.|| at any saturation, and
    log||grad|| = -gbar + log s_1 + log s_2 + log|gamma_1 - gamma_2| + log||x_1 - x_2|| ||x_1||."""
    X, y, u, W = two_token_problem(seed, gap)
    x1, x2 = X[0, 0, 0], X[0, 0, 1]
    g1, g2 = token_scores(X, y, u)[0, 0]
    a1, a2 = log_attention(X, W)[0, 0]
    gbar = a1.exp() * g1 + a2.exp() * g2
    direction = -torch.sign(g1 - g2) * torch.outer(x1 - x2, x1) / ((x1 - x2).norm() * x1.norm())
    log_norm = -gbar + a1 + a2 + (g1 - g2).abs().log() + (x1 - x2).norm().log() + x1.norm().log()

    M, G = scaled_grad_W(X, y, u, W)
    assert float((G[0] / G[0].norm() - direction).norm()) < 1e-13
    assert abs(float(M[0] + G[0].norm().log() - log_norm)) < 1e-12 * abs(float(log_norm))

    # Negative control: autograd of the textbook loss has lost the direction here.
    W_ref = W.clone().requires_grad_(True)
    loss_autograd_reference(X, y, u, W_ref).sum().backward()
    g = W_ref.grad[0]
    assert g.norm() == 0 or float((g / g.norm() - direction).norm()) > 1e-2


@SETTINGS
@given(seed=st.integers(0, 10_000), beta=st.floats(30.0, 3000.0), zeta=st.floats(0.5, 5.0))
def test_gradient_identity_deep_in_saturation(seed, beta, zeta):
    r"""Identity (G) with equal non-optimal scores: -grad_W L = (1/n) sum_i c_i (x_o - xt_i) x_1^T,
    c_i = exp(-gbar_i) s_o (1 - s_o) Delta_i.  At W = beta W_mm on orthonormal tokens every
    sample has s_o = 1/(1 + (T-1) e^-beta), xt_i = mean of its non-optimal tokens and
    Delta_i = zeta, so direction and log||grad|| are known in closed form for any beta.
    Tolerances grow with beta because the float logits beta (x_t^T W_mm x_1) carry
    rounding errors ~ eps beta, which perturb the attention ratios by as much."""
    n, T = 3, 3
    X, y, u, opt, W_mm = ortho_problem(2, n=n, T=T, zeta=zeta, seed=seed)
    log1p_rest = math.log1p((T - 1) * math.exp(-beta))
    log_s_o, log_rest = -log1p_rest, math.log(T - 1) - beta - log1p_rest
    log_c = -zeta * math.exp(log_s_o) + log_s_o + log_rest + math.log(zeta)
    x_opt = tokens_at(X, opt)
    x_rest = (X.sum(2) - x_opt) / (T - 1)
    D = -torch.einsum("kni,knj->kij", x_opt - x_rest, X[:, :, 0]) / n  # grad = exp(log_c) D

    M, G = scaled_grad_W(X, y, u, beta * W_mm)
    D_norm, G_norm = D.flatten(1).norm(dim=1), G.flatten(1).norm(dim=1)
    assert float((G / G_norm[:, None, None] - D / D_norm[:, None, None]).norm()) < 1e-14 * (1 + beta)
    torch.testing.assert_close(M + G_norm.log(), log_c + D_norm.log(), rtol=1e-13, atol=1e-14 * (1 + beta))
    torch.testing.assert_close(log_gradient_weights(X, y, u, beta * W_mm, opt),
                               torch.full((2, n), log_c, dtype=F64), rtol=1e-13, atol=1e-14 * (1 + beta))


def test_selection_helpers_match_loops():
    """tokens_at, optimal_token_mask, score_gap, logit_gap and constraint_radii against loops."""
    X, y, u, W = random_problem(6, n=3, T=4, d=5)
    opt = torch.tensor([[0, 3, 1], [2, 2, 0]])
    gamma, z = token_scores(X, y, u), logits(X, W)
    for k, i in np.ndindex(*opt.shape):
        o, others = int(opt[k, i]), [t for t in range(4) if t != int(opt[k, i])]
        assert torch.equal(tokens_at(X, opt)[k, i], X[k, i, o])
        assert optimal_token_mask(opt, 4)[k, i].tolist() == [t == o for t in range(4)]
        assert score_gap(X, y, u, opt)[k, i] == gamma[k, i, o] - gamma[k, i, others].max()
        assert logit_gap(X, W, opt)[k, i] == min(z[k, i, o] - z[k, i, t] for t in others)
        radius = max((X[k, i, o] - X[k, i, t]).norm() for t in others) * X[k, i, 0].norm()
        torch.testing.assert_close(constraint_radii(X, opt)[k, i], radius, rtol=1e-15, atol=0)


def test_constraint_radii_numpy_and_torch_agree():
    data = example1(np.random.default_rng(1), 3, n=4, T=3, d=16)
    tensors = data.to_torch("cpu", F64)
    np.testing.assert_allclose(datasets.constraint_radii(data.X, data.opt),
                               constraint_radii(tensors.X, tensors.opt).numpy(), rtol=1e-14)


@pytest.mark.parametrize("w_scale", [0.1, 1.0, 5.0])
def test_closed_form_gradient_under_assumption2(w_scale):
    """Identity (G) on Example 1 with d >= nT (Assumption 2 exact): the closed form equals
    -grad_W L from autograd and from the scaled gradient exp(M) G; at the same points with a
    generic decoder (Assumption 2 violated) it does not."""
    data = example1(np.random.default_rng(2), 3, n=4, T=3, d=16)
    assert data.assumptions.count("assumption2") == 3
    t = data.to_torch("cpu", F64)
    W = w_scale / 4 * torch.randn(3, 16, 16, generator=torch.Generator().manual_seed(0), dtype=F64)
    reference = autograd_grad_W(t.X, t.y, t.u, W)
    torch.testing.assert_close(reference, autograd_gradients(t.X, t.y, t.u, W)[1], rtol=1e-14, atol=0)
    closed_form = closed_form_negative_grad_W(t.X, t.y, t.u, W, t.opt)
    assert rel_err(-closed_form, reference) < 1e-12
    assert rel_err(-closed_form, unscale(*scaled_grad_W(t.X, t.y, t.u, W))) < 1e-12
    generic_u = t.u + 0.2 * torch.randn(t.u.shape, generator=torch.Generator().manual_seed(1), dtype=F64)
    assert torch.all(score_gap(t.X, t.y, generic_u, t.opt) > 0)  # only the equal scores are lost
    assert rel_err(-closed_form_negative_grad_W(t.X, t.y, generic_u, W, t.opt),
                   autograd_grad_W(t.X, t.y, generic_u, W)) > 1e-2


def decimal_reference(z, gamma, opt, logistic=False):
    """log L, log(L - L_*) and log(1 - s_opt) from float logits and scores in decimal
    arithmetic, with enough digits for L - L_* ~ exp(-(logit range)) L (``logistic``: the
    loss log(1 + exp(-m)), with digits for its values ~ exp(-m) too)."""
    getcontext().prec = 40 + int((max(map(max, z)) - min(map(min, z))) / math.log(10))
    if logistic:
        getcontext().prec += int(max(0.0, max(map(max, gamma))) / math.log(10))
    n = len(z)

    def loss(m):
        return ((-m).exp() + 1).ln() if logistic else (-m).exp()

    L, L_star, log_rest = Decimal(0), Decimal(0), []
    for zi, gi, oi in zip(z, gamma, opt):
        e = [Decimal(v).exp() for v in zi]
        s = [v / sum(e) for v in e]
        L += loss(sum(si * Decimal(g) for si, g in zip(s, gi))) / n
        L_star += loss(Decimal(gi[oi])) / n
        log_rest.append(float(sum(si for t, si in enumerate(s) if t != oi).ln()))
    return float(L.ln()), float((L - L_star).ln()), log_rest


def perturbed_ortho(seed, beta, noise, **kwargs):
    """The orthonormal problem (one trial, n = 2, T = 3, d = 6) with u and W = beta W_mm
    perturbed by ``noise``: (X, y, u, W, scores, their argmax, logits)."""
    X, y, u, _, W_mm = ortho_problem(1, n=2, T=3, d=6, seed=seed, **kwargs)
    g = torch.Generator().manual_seed(seed)
    u = u + noise * torch.randn(u.shape, generator=g, dtype=F64)
    W = beta * W_mm + noise * torch.randn(W_mm.shape, generator=g, dtype=F64)
    gamma = token_scores(X, y, u)
    return X, y, u, W, gamma, gamma.argmax(-1), logits(X, W)


@SETTINGS
@given(
    seed=st.integers(0, 10_000),
    beta=st.floats(0.0, 20.0) | st.floats(20.0, 1200.0),
    noise=st.floats(0.0, 1.0),
)
def test_log_losses_match_decimal_arithmetic(seed, beta, noise):
    """Perturbed orthonormal problem with W = beta W_mm + noise: attention concentrates on
    the optimal tokens with logit gaps ~ beta, so L - L_* ~ exp(-beta) L_* falls far below
    the float range for the larger beta."""
    X, y, u, W, gamma, opt, z = perturbed_ortho(seed, beta, noise)
    log_L, log_excess, log_rest = decimal_reference(z[0].tolist(), gamma[0].tolist(), opt[0].tolist())
    assert math.isclose(float(log_loss(X, y, u, W)[0]), log_L, rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(float(log_excess_loss(X, y, u, W, opt)[0]), log_excess, rel_tol=1e-12, abs_tol=1e-12)
    np.testing.assert_allclose(log_one_minus_s_opt(X, W, opt)[0].numpy(), log_rest, rtol=1e-12, atol=1e-12)


def test_log_excess_loss_is_nan_below_L_star():
    X, y, u, W = random_problem(3)
    wrong = token_scores(X, y, u).argmin(-1)  # L_* computed with the worst tokens exceeds L
    assert torch.all(torch.isnan(log_excess_loss(X, y, u, W, wrong)))


def test_score_deviations_match_direct_difference():
    X, y, u, W = random_problem(4, T=5)
    gamma, a = token_scores(X, y, u), log_attention(X, W)
    log_d, sign_d = score_deviations(gamma, a, gamma)
    direct = gamma - (a.exp() * gamma).sum(-1, keepdim=True)
    torch.testing.assert_close(sign_d * log_d.exp(), direct, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_outputs_keep_input_dtype(dtype):
    X, y, u, W = (v.to(dtype) for v in random_problem(5))
    (M_u, G_u), (M_W, G_W) = scaled_gradients(X, y, u, W)
    opt = token_scores(X, y, u).argmax(-1)
    for v in (M_u, G_u, M_W, G_W, log_loss(X, y, u, W), log_excess_loss(X, y, u, W, opt)):
        assert v.dtype == dtype and torch.all(torch.isfinite(v))


# ---------------------------------------------------------------- logistic loss and cross-attention


def test_logistic_loss_is_the_mean_of_log1p_exp_of_minus_the_margins():
    """A hand-made instance (K = 1, n = 2, T = 2, d = 2): margins and the logistic loss by hand."""
    X = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [1.0, -1.0]]]], dtype=F64)
    y = torch.tensor([[1.0, -1.0]], dtype=F64)
    u = torch.tensor([[2.0, -1.0]], dtype=F64)
    W = torch.tensor([[[1.0, 2.0], [0.0, -1.0]]], dtype=F64)
    # logits x_t^T W x_1: sample 0 (x_1 = e1): W e1 = (1, 0) -> (1, 0); sample 1: W (.5,.5) = (1.5, -.5) -> (.5, 2)
    s0 = torch.softmax(torch.tensor([1.0, 0.0], dtype=F64), 0)
    s1 = torch.softmax(torch.tensor([0.5, 2.0], dtype=F64), 0)
    m0 = 1.0 * (s0[0] * 2.0 + s0[1] * -1.0)
    m1 = -1.0 * (s1[0] * 0.5 + s1[1] * 3.0)
    expected = (math.log1p(math.exp(-float(m0))) + math.log1p(math.exp(-float(m1)))) / 2
    torch.testing.assert_close(margins(X, y, u, W), torch.stack([m0, m1])[None], rtol=1e-15, atol=0)
    assert math.isclose(float(log_loss(X, y, u, W, loss="logistic")[0]), math.log(expected), rel_tol=1e-14)
    model = TokenSelection(X, y, u, loss="logistic")
    assert math.isclose(float(model.loss({"W": W})[0]), expected, rel_tol=1e-14)
    assert math.isclose(float(loss_autograd_reference(X, y, u, W, loss="logistic")[0]), expected, rel_tol=1e-14)


@pytest.mark.parametrize("m", [-800.0, -30.0, -1e-3, 0.0, 1e-3, 30.0, 700.0, 800.0, 1e5])
def test_logistic_log_loss_and_slope_are_exact_over_the_whole_range(m):
    """log l(m) = log log(1 + e^-m) and log|l'(m)| = -log(1 + e^m) against decimal arithmetic
    (with digits for 1 + e^-m), where e^-m underflows (m = 800, 1e5) and where it overflows
    (m = -800); at m = 1e5 both equal -m to double precision."""
    if m > 1e3:
        exact_log_l = exact_log_slope = -m
    else:
        getcontext().prec = 60 + int(max(m, 0.0) / math.log(10))
        exact_log_l = float((Decimal(-m).exp() + 1).ln().ln())
        exact_log_slope = float(-(Decimal(m).exp() + 1).ln())
    fw = LogisticForward(torch.zeros(1, 1, 2, dtype=F64), torch.zeros(1, 1, 2, dtype=F64),
                         torch.tensor([[m]], dtype=F64))
    assert math.isclose(float(fw.log_loss()[0]), exact_log_l, rel_tol=1e-14, abs_tol=1e-300)
    assert math.isclose(float(fw.log_slopes()[0, 0]), exact_log_slope, rel_tol=1e-14, abs_tol=1e-300)


def cross_problem(seed, K=2, n=4, T=3, d=5, w_scale=1.0):
    X, y, u, W = random_problem(seed, K=K, n=n, T=T, d=d, w_scale=w_scale)
    Z = torch.randn(K, n, d, generator=torch.Generator().manual_seed(seed + 1), dtype=F64) / math.sqrt(d)
    return X, y, u, W, Z


def test_cross_attention_logits_are_x_W_z():
    X, y, u, W, Z = cross_problem(0)
    z = torch.einsum("kntd,kde,kne->knt", X, W, Z)
    torch.testing.assert_close(logits(X, W, queries=Z), z, rtol=1e-13, atol=1e-13)
    s = torch.softmax(z, -1)
    torch.testing.assert_close(log_attention(X, W, queries=Z).exp(), s, rtol=1e-13, atol=1e-13)
    gamma = token_scores(X, y, u)
    torch.testing.assert_close(margins(X, y, u, W, queries=Z), (s * gamma).sum(-1), rtol=1e-13, atol=1e-13)
    assert not torch.allclose(logits(X, W), z)
    opt = gamma.argmax(-1)
    radius = (tokens_at(X, opt)[:, :, None] - X).norm(dim=-1).amax(-1) * Z.norm(dim=-1)
    torch.testing.assert_close(constraint_radii(X, opt, queries=Z), radius, rtol=1e-15, atol=0)


@pytest.mark.parametrize("loss", ["exponential", "logistic"])
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
@pytest.mark.parametrize("seed,w_scale", [(0, 0.1), (1, 1.0), (2, 3.0)])
def test_scaled_gradients_match_autograd_for_each_loss_and_query(loss, cross, seed, w_scale):
    X, y, u, W, Z = cross_problem(seed, w_scale=w_scale)
    Z = Z if cross else None
    ref_u, ref_W = torch.func.grad(
        lambda u, W: loss_autograd_reference(X, y, u, W, queries=Z, loss=loss).sum(), argnums=(0, 1))(u, W)
    (M_u, G_u), (M_W, G_W) = scaled_gradients(X, y, u, W, queries=Z, loss=loss)
    assert rel_err(unscale(M_u, G_u), ref_u) < 1e-12
    assert rel_err(unscale(M_W, G_W), ref_W) < 1e-12
    assert rel_err(autograd_grad_W(X, y, u, W, queries=Z, loss=loss), ref_W) < 1e-14
    torch.testing.assert_close(scaled_grad_W(X, y, u, W, queries=Z, loss=loss), (M_W, G_W), rtol=0, atol=0)
    torch.testing.assert_close(scaled_grad_u(X, y, u, W, queries=Z, loss=loss), (M_u, G_u), rtol=0, atol=0)
    torch.testing.assert_close(log_loss(X, y, u, W, queries=Z, loss=loss),
                               loss_autograd_reference(X, y, u, W, queries=Z, loss=loss).log(), rtol=1e-13, atol=0)


def test_queries_equal_to_the_first_tokens_reproduce_self_attention_exactly():
    """queries = X[:, :, 0] is self-attention: every value identical, bit for bit, for the module
    functions, the dense model and the span model; a contiguous copy of the first tokens gives the
    same values to round-off."""
    X, y, u, W = random_problem(7)
    opt = token_scores(X, y, u).argmax(-1)
    first = X[:, :, 0]
    for loss in ("exponential", "logistic"):
        for f in (lambda q: logits(X, W, queries=q), lambda q: log_excess_loss(X, y, u, W, opt, queries=q, loss=loss),
                  lambda q: scaled_gradients(X, y, u, W, queries=q, loss=loss),
                  lambda q: closed_form_negative_grad_W(X, y, u, W, opt, queries=q, loss=loss),
                  lambda q: span_kernel(X, queries=q)):
            assert torch.equal(torch.cat([v.flatten() for v in _flat(f(first))]),
                               torch.cat([v.flatten() for v in _flat(f(None))]))
            for a, b in zip(_flat(f(first.clone())), _flat(f(None))):
                torch.testing.assert_close(a, b, rtol=1e-14, atol=1e-15)
        for joint in (False, True):
            params = {"u": u, "W": W} if joint else {"W": W}
            plain = TokenSelection(X, y, None if joint else u, loss=loss)
            given = TokenSelection(X, y, None if joint else u, loss=loss, queries=first)
            spans = [m.in_span(params) for m in (plain, given)]
            for model_a, model_b, p in ((plain, given, params), (spans[0][0], spans[1][0], spans[0][1])):
                assert torch.equal(model_a.log_loss(p), model_b.log_loss(p))
                assert torch.equal(model_a.log_excess_loss(p), model_b.log_excess_loss(p))
                ga, gb = model_a.scaled_gradient(p), model_b.scaled_gradient(p)
                for block in model_a.blocks:
                    assert torch.equal(ga[block].log_scale, gb[block].log_scale)
                    assert torch.equal(ga[block].direction, gb[block].direction)


def _flat(value):
    """The tensors of a (nested) tuple of tensors."""
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in _flat(v)]


def test_bad_queries_and_unknown_losses_are_refused_with_a_clear_message():
    X, y, u, W, Z = cross_problem(3)
    for bad in (Z[:, :, :-1], Z[:, :-1], Z[0], Z.numpy()):
        with pytest.raises(InvalidInputError, match=r"queries must be a tensor of shape \(K, n, d\)"):
            logits(X, W, queries=bad)
        with pytest.raises(InvalidInputError, match="one query z_i per sample"):
            TokenSelection(X, y, u, queries=bad)
    with pytest.raises(DeclarationError, match="unknown loss 'hinge'.*'exponential', 'logistic'"):
        TokenSelection(X, y, u, loss="hinge")
    for f in (log_loss, scaled_gradients, loss_autograd_reference):
        with pytest.raises(DeclarationError, match="unknown loss 'squared'"):
            f(X, y, u, W, loss="squared")
    assert LOSSES == ("exponential", "logistic")


def test_logistic_fixed_decoder_declares_its_infimum_and_joint_training_zero():
    """Fixed decoder: log(L - L_*) with L_* = mean_i l(max_t gamma_{i,t}) (log l of the optimal
    scores); joint training: L_* = 0, so log(L - L_*) = log L.  Both losses; the Polyak step runs."""
    from theorycheck.optim import OPTIMIZERS

    X, y, u, W, Z = cross_problem(4)
    for loss in ("exponential", "logistic"):
        fixed = TokenSelection(X, y, u, loss=loss, queries=Z)
        gamma_o = token_scores(X, y, u).amax(-1)
        l_star = (torch.exp(-gamma_o) if loss == "exponential" else torch.log1p(torch.exp(-gamma_o))).mean(-1)
        direct = torch.log(fixed.loss({"W": W}) - l_star)
        torch.testing.assert_close(fixed.log_excess_loss({"W": W}), direct, rtol=1e-12, atol=0)
        joint = TokenSelection(X, y, loss=loss, queries=Z)
        assert joint.infimum == 0.0 and torch.equal(joint.log_excess_loss({"u": u, "W": W}),
                                                     joint.log_loss({"u": u, "W": W}))
        new = OPTIMIZERS["polyak"](fixed)(0, {"W": W})
        assert bool(torch.isfinite(new["W"]).all())


@SETTINGS
@given(
    seed=st.integers(0, 10_000),
    beta=st.floats(0.0, 20.0) | st.floats(20.0, 1200.0),
    noise=st.floats(0.0, 1.0),
    zeta=st.sampled_from([-3.0, 0.5, 3.0, 40.0]),
)
@example(seed=0, beta=692.0, noise=0.0, zeta=40.0)    # r subnormal: log1p loses digits there
def test_logistic_log_losses_match_decimal_arithmetic(seed, beta, noise, zeta):
    """As `test_log_losses_match_decimal_arithmetic` with the logistic loss and optimal scores
    zeta (negative: L ~ log 2 and more; 40: l(gamma) ~ e^-40), L - L_* far below the float range
    for the larger beta."""
    X, y, u, W, gamma, opt, z = perturbed_ortho(seed, beta, noise, zeta=zeta)
    log_L, log_excess, _ = decimal_reference(z[0].tolist(), gamma[0].tolist(), opt[0].tolist(), logistic=True)
    assert math.isclose(float(log_loss(X, y, u, W, loss="logistic")[0]), log_L, rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(float(log_excess_loss(X, y, u, W, opt, loss="logistic")[0]), log_excess,
                        rel_tol=1e-11, abs_tol=1e-11)
