"""The linear classifier (`theorycheck.models.linear`), `scaled` / `rescale` of the model protocol, and
the hard-margin SVM under its own name (`theorycheck.solvers.solve_hard_margin_svm`, l_p:
`solve_lp_hard_margin_svm`).

The conformance suite covers the protocol (registered instances ``linear_*``); here: exactness
in saturation against the closed forms written in the log domain by hand, the optimizers'
limits (GD -> L2 SVM, mirror descent p = 3 -> l_3 SVM, squared loss -> least squares), and the
SVM's names.  Seeds >= 1000 (0-19 are spent)."""
import math

import numpy as np
import pytest
import torch

from theorycheck.errors import DeclarationError, InvalidInputError
from theorycheck.models import LinearClassifier, Scaled, peak_magnitude, rescale, scaled, separable_data, smallest_positive
from theorycheck.models.base import EXTREMES_FROM
from theorycheck.models.linear import logistic_weights
from theorycheck.optim import GD, NGD, MirrorDescent, Polyak, run_trajectory
from theorycheck.solvers import (
    HardMarginSVMSolution,
    USVMSolution,
    solve_hard_margin_svm,
    solve_hard_margin_svm_batch,
    solve_lp_hard_margin_svm,
    solve_lp_usvm,
    solve_usvm,
)

SEED = 1000


def data(K=3, n=12, d=4, seed=SEED):
    return separable_data(K, n, d, generator=torch.Generator().manual_seed(seed))


def old_scaled(tensor):
    """`scaled` as it was written before it lost its `where`s (the reference for bitwise equality)."""
    peak = torch.linalg.vector_norm(tensor.detach().flatten(1), ord=math.inf, dim=1)
    safe = torch.where(peak > 0, peak, 1.0)
    return Scaled(torch.where(peak > 0, safe.log(), -math.inf), tensor / safe.reshape((-1,) + (1,) * (tensor.dim() - 1)))


# ---------------------------------------------------------------- scaled, rescale


@pytest.mark.parametrize("shape", [(3, 4), (300, 300)])      # below and above EXTREMES_FROM
def test_scaled_is_bitwise_the_former_scaled_zero_subnormal_and_huge_trials_included(shape):
    g = torch.Generator().manual_seed(SEED)
    G = torch.randn(5, *shape, generator=g, dtype=torch.float64)
    G[0] = 0.0
    G[1] *= 1e-310          # subnormal peak
    G[2] *= 1e300
    G[3, 0, 0] = -1e3       # the peak is a negative entry
    new, old = scaled(G), old_scaled(G)
    assert torch.equal(new.log_scale, old.log_scale) and torch.equal(new.direction, old.direction)
    assert new.log_scale[0] == -math.inf and torch.equal(new.direction[0], torch.zeros(shape, dtype=torch.float64))
    assert torch.equal(new.direction[1:].abs().flatten(1).amax(1), torch.ones(4, dtype=torch.float64))
    assert new.direction[3, 0, 0] == -1.0
    torch.testing.assert_close(new.value()[2:], G[2:], rtol=1e-12, atol=0)


def test_peak_magnitude_is_the_same_on_both_paths():
    G = torch.randn(4, 300, 300, generator=torch.Generator().manual_seed(SEED), dtype=torch.float64)
    G[1, 5, 7] = float("nan")
    G[2] = 0.0
    large, small = peak_magnitude(G), peak_magnitude(G[:, :10, :10])
    torch.testing.assert_close(large, G.abs().flatten(1).amax(1), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(small, G[:, :10, :10].abs().flatten(1).amax(1), rtol=0, atol=0, equal_nan=True)
    assert G.numel() >= EXTREMES_FROM > G[:, :10, :10].numel() and torch.isnan(large[1])


def test_scaled_keeps_nan_and_works_in_float32():
    G = torch.tensor([[1.0, float("nan")], [0.0, 0.0]])
    s = scaled(G)
    assert bool(torch.isnan(s.direction[0]).any()) and s.log_scale[1] == -math.inf
    assert torch.equal(s.direction[1], torch.zeros(2))
    assert smallest_positive(torch.float64) == 2.0 ** -1074 and smallest_positive(torch.float32) == 2.0 ** -149


def test_rescale_gives_unit_peak_weights_and_minus_inf_for_all_zero():
    log_abs = torch.tensor([[-2000.0, -2001.0, -1999.5], [-math.inf] * 3], dtype=torch.float64)
    m, w = rescale(log_abs, torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64), dim=1)
    assert m[0, 0] == -1999.5 and m[1, 0] == -math.inf
    torch.testing.assert_close(w[0], torch.tensor([math.exp(-0.5), -math.exp(-1.5), 1.0], dtype=torch.float64),
                               rtol=1e-15, atol=0)
    assert torch.equal(w[1], torch.zeros(3, dtype=torch.float64))


# ---------------------------------------------------------------- the model


def test_unknown_loss_and_bad_shapes_are_named():
    X, y = data()
    with pytest.raises(DeclarationError, match="unknown loss 'hinge'"):
        LinearClassifier(X, y, loss="hinge")
    with pytest.raises(InvalidInputError, match=r"need X \(K, n, d\) and y \(K, n\)"):
        LinearClassifier(X, y[:, :-1])
    with pytest.raises(InvalidInputError, match="labels y must be -1 or \\+1"):
        LinearClassifier(X, (y + 1) / 2)
    with pytest.raises(DeclarationError, match="declares no infimum"):
        LinearClassifier(X, y, loss="squared").log_excess_loss({"w": torch.zeros(3, 4, dtype=torch.float64)})


@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_gradient_and_loss_exact_at_margins_beyond_the_float_range(loss):
    """At theta = t w_svm (t = 1e3 and 3e3) every margin is at least t: exp(-m) underflows, so the
    plainly written gradient is exactly 0.  The exact values, written by hand in the log domain:
    log L = logsumexp_i(-m_i) - log n (both losses: log l(m) = -m + log(log1p(e^-m)/e^-m) = -m
    to double precision once e^-m < 1e-300), and grad L = (1/n) sum_i e^{-m_i} (-y_i x_i) with
    log|l'(m)| = -m; the model's direction and log scale must equal them at rtol 1e-12."""
    X, y = data()
    w_svm = torch.as_tensor(solve_hard_margin_svm_batch(X.numpy(), y.numpy()))
    model = LinearClassifier(X, y, loss=loss)
    for t in (1e3, 3e3):
        params = {"w": t * w_svm}
        m = y * torch.einsum("knd,kd->kn", X, params["w"])
        assert bool((m >= t * (1 - 1e-9)).all())
        assert torch.equal(torch.func.grad(lambda p: model.reference_loss(p).sum())(params)["w"],
                           torch.zeros_like(w_svm))           # the naive gradient underflows
        torch.testing.assert_close(model.log_loss(params), (-m).logsumexp(-1) - math.log(X.shape[1]),
                                   rtol=1e-12, atol=0)
        g = model.scaled_gradient(params)["w"]
        M = (-m).amax(-1)
        expected = torch.einsum("kn,knd->kd", torch.exp(-m - M[:, None]), -y[..., None] * X)
        torch.testing.assert_close(g.log_scale, M - math.log(X.shape[1]), rtol=1e-12, atol=0)
        torch.testing.assert_close(g.direction, expected, rtol=1e-12, atol=0)
        # the direction is -w_svm's: the gradient is a positive combination of the support vectors
        cos = -(g.direction * w_svm).sum(-1) / g.direction.norm(dim=-1) / w_svm.norm(dim=-1)
        assert bool((cos > 0).all())


@pytest.mark.parametrize("n", [8, 100])      # bmm's small-product kernel and BLAS
@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_scaled_gradient_is_bitwise_the_gradient_of_the_row_margins(loss, n):
    """The gradient keeps s = -m as the column bmm gives, (K, n, 1), to save a reshape; its log
    scale and direction must be bitwise those formed from the margins as rows (K, n):
    M = c - log n, G = sum_i w_i a_i with (c, w) the weights of `logistic_weights` / `rescale`."""
    X, y = data(n=n)
    model = LinearClassifier(X, y, loss=loss)
    params = {"w": torch.randn(3, 4, generator=torch.Generator().manual_seed(SEED + 1), dtype=torch.float64)}
    c, w = (logistic_weights if loss == "logistic" else rescale)(model.negative_margins(params), dim=1)
    M, G = model.scaled_gradient(params)["w"]
    assert torch.equal(M, c.squeeze(1) - math.log(n))
    assert torch.equal(G, torch.bmm(w.unsqueeze(1), model.signed).squeeze(1))


def test_logistic_weights_equal_sigmoid_where_it_does_not_underflow():
    X, y = data()
    model = LinearClassifier(X, y, bias=True)
    params = {"w": 0.5 * torch.ones(3, 4, dtype=torch.float64), "b": torch.full((3, 1), 0.2, dtype=torch.float64)}
    m = y * (torch.einsum("knd,kd->kn", X, params["w"]) + params["b"])
    plain = torch.einsum("kn,knd->kd", torch.sigmoid(-m), -y[..., None] * torch.cat([X, torch.ones_like(X[..., :1])], -1))
    grads = model.gradient(params)
    torch.testing.assert_close(torch.cat([grads["w"], grads["b"]], -1), plain / X.shape[1], rtol=1e-13, atol=0)


def test_squared_loss_gd_reaches_least_squares():
    X, y = data(n=12, d=4)
    model = LinearClassifier(X, y, loss="squared")
    traj = run_trajectory(GD(model, 0.2), {"w": torch.zeros(3, 4, dtype=torch.float64)}, 3000,
                          {"w": lambda it: it.params["w"]}, checkpoints=[3000])
    lstsq = torch.linalg.lstsq(X, y[..., None]).solution.squeeze(-1)
    np.testing.assert_allclose(traj["w"][-1], lstsq.numpy(), rtol=1e-9, atol=1e-12)


def direction_gap(w, reference):
    """|| w/||w|| - r/||r|| || per trial (arrays or tensors, last axis the features)."""
    w, r = np.asarray(w), np.asarray(reference)
    return np.linalg.norm(w / np.linalg.norm(w, axis=-1, keepdims=True) - r / np.linalg.norm(r, axis=-1, keepdims=True),
                          axis=-1)


def test_gd_and_ngd_approach_the_l2_svm_and_mirror_descent_the_l3_svm():
    """GD (logistic) and NGD (exponential) from 0 get closer to w_svm / ||w_svm|| as t grows
    (1/log t and faster); mirror descent with p = 3 gets closer to the l_3 SVM's direction than
    to the L2 SVM's.  The limits are the theorems (Soudry et al. 2018; Sun et al. 2022); the
    test checks the ordering of the gaps, not a rate."""
    X, y = data(K=2, n=10, d=3)
    w2 = solve_hard_margin_svm_batch(X.numpy(), y.numpy())
    w3 = np.stack([solve_lp_hard_margin_svm(X[k].numpy(), y[k].numpy(), 3.0).W[:, 0] for k in range(2)])
    zero = {"w": torch.zeros(2, 3, dtype=torch.float64)}
    metric = {"w": lambda it: it.params["w"]}
    for step in (GD(LinearClassifier(X, y), 1.0), NGD(LinearClassifier(X, y, loss="exponential"), 0.5)):
        traj = run_trajectory(step, zero, 4000, metric, checkpoints=[100, 4000])
        early, late = direction_gap(traj["w"][0], w2), direction_gap(traj["w"][1], w2)
        assert (late < early).all(), (step.name, early, late)
    md = MirrorDescent(LinearClassifier(X, y, loss="exponential"), 3.0, 0.5, normalized=True)
    w = run_trajectory(md, {"w": torch.full((2, 3), 1e-3, dtype=torch.float64)}, 4000, metric,
                       checkpoints=[4000])["w"][-1]
    assert (direction_gap(w, w3) < direction_gap(w, w2)).all()


def test_polyak_runs_on_the_separable_losses():
    X, y = data()
    model = LinearClassifier(X, y, loss="exponential")
    traj = run_trajectory(Polyak(model), {"w": torch.zeros(3, 4, dtype=torch.float64)}, 200, model.metrics())
    assert bool((traj["log_loss"][-1] < -20).all()) and bool((traj["min_margin"][-1] > 0).all())


# ---------------------------------------------------------------- the SVM under its own name


def test_the_u_svm_is_the_hard_margin_svm_under_the_papers_name():
    X, y = data(K=1)
    plain, usvm = solve_hard_margin_svm(X[0].numpy(), y[0].numpy()), solve_usvm(X[0].numpy(), y[0].numpy())
    assert USVMSolution is HardMarginSVMSolution and isinstance(usvm, HardMarginSVMSolution)
    np.testing.assert_array_equal(plain.w, usvm.u)
    margins = y[0].numpy() * (X[0].numpy() @ plain.w)
    assert margins.min() >= 1 - 1e-8 and plain.certificate.ok
    assert plain.margin == pytest.approx(1 / np.linalg.norm(plain.w))
    lp2 = solve_lp_hard_margin_svm(X[0].numpy(), y[0].numpy(), 2.0)
    np.testing.assert_allclose(lp2.W[:, 0], plain.w, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(solve_lp_usvm(X[0].numpy(), y[0].numpy(), 3.0).W,
                                  solve_lp_hard_margin_svm(X[0].numpy(), y[0].numpy(), 3.0).W)


def test_hard_margin_svm_names_bad_input_and_infeasibility():
    with pytest.raises(InvalidInputError, match=r"hard-margin SVM: need X \(n, d\) and y \(n,\)"):
        solve_hard_margin_svm(np.ones((3, 2)), np.ones(2))
    with pytest.raises(InvalidInputError, match=r"need X \(K, n, d\) and y \(K, n\)"):
        solve_hard_margin_svm_batch(np.ones((3, 2)), np.ones(3))
    with pytest.raises(Exception, match="hard-margin SVM infeasible for data set 'xor' trial 1"):
        X = np.array([[1.0, 0.0], [-1.0, 0.0]])
        solve_hard_margin_svm_batch(np.stack([X, X]), np.array([[1.0, -1.0], [1.0, 1.0]]), name="xor")


def test_logistic_weights_are_sigmoid_ratios_at_every_scale():
    """sigma(s_i) = exp(c) w_i with max w in [1/2, 1], against log sigma from torch's
    logsigmoid: s from -1e4 (saturated) through 0 to +1e4 (misclassified by 1e4), each trial one
    regime; a weight whose true value is below exp(-709) of the largest may be 0."""
    from theorycheck.models.linear import logistic_weights

    s = torch.tensor([[-1e4, -1e4 + 3.0, -1e4 + 0.5, -2e4],
                      [-40.0, -2.0, 0.0, -700.0],
                      [1e4, 5.0, -3.0, 1e4 - 2.0]], dtype=torch.float64)
    c, w = logistic_weights(s, dim=1)
    peak = w.amax(1)
    assert bool(((peak >= 0.5) & (peak <= 1.0)).all())
    expected = torch.exp(torch.nn.functional.logsigmoid(s) - c)
    torch.testing.assert_close(w, expected, rtol=1e-13, atol=1e-300)
    assert w[0, 3] == 0.0 and w[1, 3] > 0.0    # sigma(-2e4)/sigma(-1e4) underflows, sigma(-700)/sigma(0) does not
