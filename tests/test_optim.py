"""Tests of theorycheck.optim on the token-selection model: single steps against autograd
formulas, trajectories, non-finite detection and divergence records, batching over trials."""

import math

import numpy as np
import pytest
import torch

from theorycheck.models.token_selection import (
    log_excess_loss,
    log_loss,
    log_one_minus_s_opt,
    loss_autograd_reference,
    s_opt,
    token_scores,
)
from theorycheck.errors import DeclarationError, NonFiniteIterateError
from theorycheck.models import TokenSelection
from theorycheck.optim import (
    GD,
    NGD,
    BlockNGD,
    FirstOrder,
    Method,
    Polyak,
    alignment,
    frobenius_norm,
    inner,
    recorded_rows,
    relative_error,
    run_trajectory,
    side_by_side,
    standard_metrics,
    tile,
)
from tests.test_token_selection_model import autograd_gradients, ortho_problem

torch.set_num_threads(1)
F64 = torch.float64


def e1_problem(K, n=6, T=4, d=32, zeta=3.0, seed=0):
    """Toy problem with K trials: Gaussian tokens N(0, I/d), random labels and optimal
    tokens, and the min-norm decoder u with gamma_opt = zeta and all other scores 0
    (least squares; needs d >= n*T).  Returns torch X, y, u, opt (opt long)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(0.0, 1.0 / math.sqrt(d), size=(K, n, T, d))
    y = rng.choice([-1.0, 1.0], size=(K, n))
    opt = rng.integers(0, T, size=(K, n))
    target = np.zeros((K, n, T))
    np.put_along_axis(target, opt[..., None], zeta * y[..., None], axis=-1)
    tokens = X.reshape(K, n * T, d)
    u = np.stack([np.linalg.lstsq(tokens[k], target[k].ravel(), rcond=None)[0] for k in range(K)])
    return torch.tensor(X), torch.tensor(y), torch.tensor(u), torch.tensor(opt)


def small_problem(K=3, seed=0):
    """E1-style data (n=4, T=3, d=12) with a small random W_0, K trials."""
    X, y, u, opt = e1_problem(K, n=4, T=3, d=12, seed=seed)
    W0 = 0.3 * torch.randn(K, 12, 12, generator=torch.Generator().manual_seed(seed), dtype=F64)
    return X, y, u, opt, W0


def per_trial(x, like):
    return x.reshape(x.shape + (1,) * (like.dim() - 1))


def direct_loss_gap(X, y, u, W):
    """L - L_* in plain float (accurate away from saturation), L_* with the argmax tokens."""
    gamma = token_scores(X, y, u)
    return loss_autograd_reference(X, y, u, W) - torch.exp(-gamma.amax(-1)).mean(-1)


def fixed(X, y, u):
    return TokenSelection(X, y, u)


def joint(X, y):
    return TokenSelection(X, y)


def test_gd_step():
    X, y, u, _, W0 = small_problem()
    g_u, g_W = autograd_gradients(X, y, u, W0)
    W1 = GD(fixed(X, y, u), eta=0.7)(0, {"W": W0})["W"]
    torch.testing.assert_close(W1, W0 - 0.7 * g_W, rtol=1e-12, atol=1e-14)
    new = GD(joint(X, y), eta=0.7)(0, {"u": u, "W": W0})
    torch.testing.assert_close(new["u"], u - 0.7 * g_u, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(new["W"], W0 - 0.7 * g_W, rtol=1e-12, atol=1e-14)


def test_ngd_step_and_cap():
    X, y, u, _, W0 = small_problem()
    _, g_W = autograd_gradients(X, y, u, W0)
    norm = frobenius_norm(g_W)
    W1 = NGD(fixed(X, y, u), eta=0.1)(0, {"W": W0})["W"]
    torch.testing.assert_close(W1, W0 - 0.1 * g_W / per_trial(norm, g_W), rtol=1e-12, atol=1e-14)
    eta_max = float(0.1 / norm.median())  # the cap binds for trials with smaller gradients
    W1 = NGD(fixed(X, y, u), eta=0.1, eta_max=eta_max)(0, {"W": W0})["W"]
    eta_t = torch.minimum(0.1 / norm, torch.tensor(eta_max, dtype=F64))
    assert bool((eta_t < 0.1 / norm).any())
    torch.testing.assert_close(W1, W0 - per_trial(eta_t, g_W) * g_W, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_gd_and_capped_ngd_are_bitwise_their_formulas_with_python_numbers(dtype):
    """The step keeps its numbers (log eta, log eta_max, 0) as tensors of the model's dtype instead
    of Python numbers that each operation wraps anew: the iterates must be bitwise those of the
    formulas written with the numbers, theta - c G with c = exp(log eta + M) (GD) and
    c = [||G|| > 0] exp(min(log eta - log ||G||, log eta_max + M)) (NGD), ten steps each."""
    from theorycheck.models import LinearClassifier, separable_data

    X, y = separable_data(3, 20, 4, generator=torch.Generator().manual_seed(1000), dtype=dtype)
    model = LinearClassifier(X, y)
    eta, eta_max = 0.5, 2.0

    def by_hand(normalized, w):
        M, G = model.scaled_gradient({"w": w})["w"]
        if not normalized:
            c = torch.exp(math.log(eta) + M)
        else:
            norm = torch.linalg.vector_norm(G, dim=1)
            c = torch.where(norm > 0, torch.exp(torch.minimum(math.log(eta) - torch.log(norm),
                                                              math.log(eta_max) + M)), 0.0)
        return torch.addcmul(w, (-c)[:, None], G)

    for normalized, step in ((False, GD(model, eta)), (True, NGD(model, eta, eta_max=eta_max))):
        w = w_step = 0.1 * torch.ones(3, 4, dtype=dtype)
        for t in range(10):
            w, w_step = by_hand(normalized, w), step(t, {"w": w_step})["w"]
            assert torch.equal(w_step, w), (normalized, t)


def test_joint_ngd_uses_the_joint_norm():
    X, y, u, _, W0 = small_problem()
    g_u, g_W = autograd_gradients(X, y, u, W0)
    norm = torch.hypot(frobenius_norm(g_u), frobenius_norm(g_W))
    new = NGD(joint(X, y), eta=0.1)(0, {"u": u, "W": W0})
    torch.testing.assert_close(new["u"], u - 0.1 * g_u / norm[:, None], rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(new["W"], W0 - 0.1 * g_W / norm[:, None, None], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("eta_max", [math.inf, 15.0])  # uncapped steps here: 13, 17, 30
def test_polyak_step_fixed_decoder(eta_max):
    X, y, u, _, W0 = small_problem()
    _, g_W = autograd_gradients(X, y, u, W0)
    eta_t = torch.clamp(direct_loss_gap(X, y, u, W0) / frobenius_norm(g_W) ** 2, max=eta_max)
    W1 = Polyak(fixed(X, y, u), eta_max=eta_max)(0, {"W": W0})["W"]
    torch.testing.assert_close(W1, W0 - per_trial(eta_t, g_W) * g_W, rtol=1e-10, atol=1e-13)


def test_polyak_step_joint_uses_zero_L_star_and_cap():
    X, y, u, _, W0 = small_problem()
    g_u, g_W = autograd_gradients(X, y, u, W0)
    sq = frobenius_norm(g_u) ** 2 + frobenius_norm(g_W) ** 2
    eta_t = torch.clamp(loss_autograd_reference(X, y, u, W0) / sq, max=12.0)  # uncapped: 11, 12.2, 18
    new = Polyak(joint(X, y), eta_max=12.0)(0, {"u": u, "W": W0})
    torch.testing.assert_close(new["u"], u - eta_t[:, None] * g_u, rtol=1e-10, atol=1e-13)
    torch.testing.assert_close(new["W"], W0 - eta_t[:, None, None] * g_W, rtol=1e-10, atol=1e-13)


def test_momentum_recursion():
    """V_{t+1} = mu V_t + eta g_t/||g_t||, W_{t+1} = W_t - V_{t+1}, V_0 = 0, checked against
    plain NGD steps (which return W_t - eta g_t/||g_t||)."""
    X, y, u, _, W0 = small_problem()
    model = fixed(X, y, u)
    ngd, mom = NGD(model, eta=0.1), NGD(model, eta=0.1, momentum=0.5)
    W, V = W0, torch.zeros_like(W0)
    for t in range(4):
        V = 0.5 * V + (W - ngd(t, {"W": W})["W"])
        W_mom = mom(t, {"W": W})["W"]
        torch.testing.assert_close(W_mom, W - V, rtol=1e-12, atol=1e-14)
        W = W_mom
    W_restart = mom(0, {"W": W0})["W"]  # t = 0 restarts the velocity
    torch.testing.assert_close(W_restart, ngd(0, {"W": W0})["W"], rtol=0, atol=0)


def test_block_ngd_skips_W_at_zero_decoder():
    """Per-block NGD with time factor alpha = 2/3 from u_0 = 0, W_0 = 0: grad_W = 0 at t = 0, so
    only u moves (by eta); afterwards each block moves by eta_t = eta (t+1)^(-2/3)."""
    X, y, _, _, _ = small_problem()
    K, d = X.shape[0], X.shape[-1]
    step = BlockNGD(joint(X, y), eta=0.5, alpha=2 / 3)
    p1 = step(0, {"u": torch.zeros(K, d, dtype=F64), "W": torch.zeros(K, d, d, dtype=F64)})
    u1, W1 = p1["u"], p1["W"]
    assert torch.all(W1 == 0)
    torch.testing.assert_close(frobenius_norm(u1), torch.full((K,), 0.5, dtype=F64), rtol=1e-14, atol=0)
    p2 = step(1, p1)
    u2, W2 = p2["u"], p2["W"]
    eta_1 = torch.full((K,), 0.5 * 2 ** (-2 / 3), dtype=F64)
    torch.testing.assert_close(frobenius_norm(u2 - u1), eta_1, rtol=1e-14, atol=0)
    torch.testing.assert_close(frobenius_norm(W2 - W1), eta_1, rtol=1e-14, atol=0)
    g_u, g_W = autograd_gradients(X, y, u1, W1)
    torch.testing.assert_close(alignment(W1 - W2, g_W), torch.ones(K, dtype=F64), rtol=1e-12, atol=0)
    torch.testing.assert_close(alignment(u1 - u2, g_u), torch.ones(K, dtype=F64), rtol=1e-12, atol=0)


def test_uncapped_polyak_saturates_without_overflow():
    """The step size eta_t = (L - L_*)/||grad||^2 grows exponentially, the displacement must
    not: after 100 steps W is finite, ||W_{t+1} - W_t|| stays O(||W_mm||) and 1 - s_opt
    shrinks by about a factor e per step."""
    X, y, u, opt, W_mm = ortho_problem(3, n=4, T=4, d=16)
    W0 = 0.01 * torch.randn(W_mm.shape, generator=torch.Generator().manual_seed(0), dtype=F64)
    model = fixed(X, y, u)
    traj = run_trajectory(Polyak(model), {"W": W0}, 100, standard_metrics(model, refs={"W": W_mm}, opt=opt))
    W_mm_norm = frobenius_norm(W_mm).numpy()
    assert np.all(np.isfinite(traj.W.numpy()))
    assert np.all(traj["displacement"] < 2 * W_mm_norm)
    np.testing.assert_allclose(traj["displacement"][-1], W_mm_norm, rtol=1e-3)
    assert np.all(traj["log_one_minus_s_opt"][-1] < -90)
    assert np.all(np.diff(traj["log_excess_loss"], axis=0) < 0)
    assert np.all(1 - traj["W_alignment"][-1] < 1e-4)


def test_trajectory_records_checkpoints_and_next_step_displacement():
    X, y, u, opt, W0 = small_problem()
    model = fixed(X, y, u)
    metrics = standard_metrics(model, opt=opt, iterates=True)
    # the dense form as given, so that the metrics equal the dense functions exactly
    every = run_trajectory(NGD(model, eta=0.1), {"W": W0}, 20, metrics, representation="given")
    some = run_trajectory(NGD(model, eta=0.1), {"W": W0}, 20, metrics, checkpoints=[0, 5, 20],
                          representation="given")
    assert np.array_equal(every.t, np.arange(21)) and np.array_equal(some.t, [0, 5, 20])
    assert every["W"].shape == (21, 3, 12, 12) and every["s_opt"].shape == (21, 3, 4)
    for name in metrics:
        np.testing.assert_array_equal(some[name], every[name][[0, 5, 20]])
    steps = np.linalg.norm((every["W"][1:] - every["W"][:-1]).reshape(20, 3, -1), axis=-1)
    np.testing.assert_allclose(every["displacement"][:-1], steps, rtol=1e-12)
    np.testing.assert_allclose(every["displacement"], 0.1, rtol=1e-12)
    np.testing.assert_array_equal(every["W"][-1], every.W.numpy())
    for t in (0, 7, 20):
        W_t = torch.tensor(every["W"][t])
        np.testing.assert_array_equal(every["log_loss"][t], log_loss(X, y, u, W_t).numpy())
        np.testing.assert_array_equal(every["log_excess_loss"][t], log_excess_loss(X, y, u, W_t, opt).numpy())
    with pytest.raises(DeclarationError):
        run_trajectory(NGD(model, eta=0.1), {"W": W0}, 20, metrics, checkpoints=[5, 0])
    with pytest.raises(DeclarationError):
        run_trajectory(NGD(model, eta=0.1), {"W": W0}, 20, metrics, checkpoints=[0, 21])


@pytest.mark.parametrize("representation, rtol", [("given", 0.0), ("cheapest", 1e-13)])
def test_model_metrics_share_one_forward_pass_per_checkpoint(monkeypatch, representation, rtol):
    """One forward pass per step and per checkpoint, in either representation; the metrics equal
    the dense functions at the recorded dense iterate (exactly in the dense form, to round-off in
    coefficient space, which the cost model picks at this size)."""
    X, y, u, opt, W0 = small_problem()
    model = fixed(X, y, u)
    calls = []
    real_forward = TokenSelection.forward
    monkeypatch.setattr(TokenSelection, "forward", lambda self, p: calls.append(1) or real_forward(self, p))
    traj = run_trajectory(NGD(model, eta=0.1), {"W": W0}, 10, standard_metrics(model, opt=opt, iterates=True),
                          checkpoints=[0, 4, 10], representation=representation)
    assert len(calls) == 11 + 3  # one per step (its gradient) and one per checkpoint (the metrics)
    for row, t in enumerate(traj.t):
        W_t = torch.tensor(traj["W"][row])
        np.testing.assert_allclose(traj["s_opt"][row], s_opt(X, W_t, opt).numpy(), rtol=rtol, atol=0)
        np.testing.assert_allclose(traj["log_one_minus_s_opt"][row], log_one_minus_s_opt(X, W_t, opt).numpy(),
                                   rtol=rtol, atol=0)


def test_nonfinite_initial_iterate_raises():
    X, y, u, _, W0 = small_problem(K=5)
    W0 = W0.clone()
    W0[1, 2, 3] = math.nan
    W0[3, 0, 0] = math.inf
    with pytest.raises(NonFiniteIterateError, match=r"NaN/inf in W at step 0 of ngd, trials \[1, 3\]"):
        run_trajectory(NGD(fixed(X, y, u), eta=0.1), {"W": W0}, 10, {})


def _poisoned(step, at, trials):
    def poisoned(t, params):
        new = step(t, params)
        if t == at:  # produces iterate at + 1
            W = new["W"].clone()
            W[trials] = math.nan
            new = dict(new, W=W)
        return new

    poisoned.name = "poisoned"
    return poisoned


def test_nonfinite_iterate_raises_with_first_step_and_trials():
    X, y, u, _, W0 = small_problem(K=5)
    poisoned = _poisoned(NGD(fixed(X, y, u), eta=0.1), 36, [2, 4])
    expected = r"NaN/inf in W at step 37 of poisoned, trials \[2, 4\]"
    with pytest.raises(NonFiniteIterateError, match=expected) as err:
        run_trajectory(poisoned, {"W": W0}, 300, {}, checkpoints=[0, 300])
    assert err.value.step == 37 and err.value.trials == [2, 4] and err.value.blocks == ["W"]


def test_divergence_recorded_on_opt_in():
    """With on_nonfinite="record" the run continues; diverged_at gives each trial's first
    non-finite step (-1 if none) and the other trials equal a clean run."""
    X, y, u, _, W0 = small_problem(K=5)
    model = fixed(X, y, u)
    # the poisoned step is a plain function: it runs dense, and so must the clean run
    clean = run_trajectory(NGD(model, eta=0.1), {"W": W0}, 300, {}, checkpoints=[300], representation="given")
    traj = run_trajectory(_poisoned(NGD(model, eta=0.1), 36, [2, 4]), {"W": W0}, 300,
                          {"W_norm": lambda it: frobenius_norm(it.W)}, checkpoints=[0, 300],
                          on_nonfinite="record")
    assert traj.diverged_at.tolist() == [-1, -1, 37, -1, 37]
    assert np.all(np.isnan(traj["W_norm"][-1][[2, 4]]))
    torch.testing.assert_close(traj.W[[0, 1, 3]], clean.W[[0, 1, 3]], rtol=0, atol=0)
    with pytest.raises(DeclarationError, match="on_nonfinite"):
        run_trajectory(NGD(model, eta=0.1), {"W": W0}, 3, {}, on_nonfinite="ignore")


def test_uncapped_polyak_overflow_is_reported():
    """A sample (n=1, T=3, d=3, scores (-1, 0.5, 1)) started along the local direction
    W_alpha = e_1 e_3^T that selects token 2: L - L_* stays positive while grad L -> 0, so the
    uncapped Polyak step overflows; the run must stop with an error."""
    X = torch.tensor([[[[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [-3.0, 1.0, 1.0]]]], dtype=F64)
    y, u = torch.ones(1, 1, dtype=F64), torch.tensor([[1.5, 6.5, -1.0]], dtype=F64)
    W0 = torch.zeros(1, 3, 3, dtype=F64)
    W0[0, 0, 2] = 1.0
    model = fixed(X, y, u)
    with pytest.raises(NonFiniteIterateError, match=r"NaN/inf in W at step \d+ of polyak, trials \[0\]"):
        run_trajectory(Polyak(model), {"W": W0}, 300, {}, checkpoints=[0])
    capped = run_trajectory(Polyak(model, eta_max=10.0), {"W": W0}, 100, {}, checkpoints=[0])
    assert torch.all(torch.isfinite(capped.W))


def test_alignment():
    A = torch.randn(4, 3, 3, dtype=F64)
    B = torch.randn(4, 3, 3, dtype=F64)
    torch.testing.assert_close(alignment(A, 3 * A), torch.ones(4, dtype=F64))
    torch.testing.assert_close(alignment(A, -A), -torch.ones(4, dtype=F64))
    expected = (A * B).sum((1, 2)) / (A.flatten(1).norm(dim=1) * B.flatten(1).norm(dim=1))
    torch.testing.assert_close(alignment(A, B), expected)


def test_per_trial_step_sizes_equal_separate_runs():
    """A (K,) tensor of step sizes gives each trial the run it would have alone."""
    X, y, u, _, W0 = small_problem(K=3)
    model = fixed(X, y, u)
    etas = torch.tensor([0.05, 0.1, 0.5], dtype=torch.float64)
    for make in (NGD, GD):
        together = make(model, etas)(0, {"W": W0})["W"]
        for k in range(3):
            alone = make(model.restrict(slice(k, k + 1)), float(etas[k]))(0, {"W": W0[k:k + 1]})["W"]
            torch.testing.assert_close(together[k:k + 1], alone, rtol=1e-12, atol=1e-14)


def test_inner_and_relative_error():
    A = torch.randn(4, 3, 3, dtype=F64)
    B = torch.randn(4, 3, 3, dtype=F64)
    torch.testing.assert_close(inner(A, B), torch.einsum("kij,kij->k", A, B), rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(relative_error(A, B), (A - B).flatten(1).norm(dim=1) / B.flatten(1).norm(dim=1),
                               rtol=1e-14, atol=0)
    assert torch.all(relative_error(B, B) == 0)


def test_trajectory_restrict_and_rows_at_times():
    X, y, u, opt, W0 = small_problem(K=3)
    model = fixed(X, y, u)
    traj = run_trajectory(NGD(model, eta=0.1), {"W": W0}, 20, standard_metrics(model, opt=opt),
                          checkpoints=[0, 5, 10, 20])
    part = traj.restrict(slice(1, 3), t_max=10)
    np.testing.assert_array_equal(part.t, [0, 5, 10])
    np.testing.assert_array_equal(part["s_opt"], traj["s_opt"][:3, 1:3])
    assert torch.equal(part.W, traj.W[1:3])  # the final iterate
    np.testing.assert_array_equal(traj.restrict([0, 2]).t, traj.t)
    np.testing.assert_array_equal(traj.at("W_norm", [20, 5]), traj["W_norm"][[3, 1]])
    np.testing.assert_array_equal(traj.at("W_norm", 10), traj["W_norm"][2])
    with pytest.raises(KeyError, match=r"iterations \[7, 21\] were not recorded"):
        traj.at("W_norm", [5, 7, 21])
    assert recorded_rows(traj.t, [0, 20]).tolist() == [0, 3]


def final_iterate(step, params0, steps):
    """The parameters after ``steps`` steps of ``step`` from ``params0``."""
    return run_trajectory(step, params0, steps, {}, checkpoints=[]).params


def max_relative_difference(ours, theirs):
    """Max over blocks and trials of ||ours - theirs|| / ||theirs||."""
    return max(float(relative_error(ours[b], theirs[b]).max()) for b in theirs)


FIXED_DECODER_METHODS = (Method("GD", "gd", eta=1.0), Method("NGD", "ngd", eta=0.1),
                         Method("NGD-mom", "ngd", eta=0.1, momentum=0.9), Method("Polyak", "polyak"),
                         Method("Polyak (cap 20)", "polyak", eta_max=20.0))
JOINT_METHODS = (Method("GD", "gd", eta=1.0), Method("per-block NGD", "block_ngd", eta=0.1),
                 Method("joint NGD", "ngd", eta=0.1), Method("Polyak", "polyak"),
                 Method("Polyak (cap 10)", "polyak", eta_max=10.0),
                 Method("per-block NGD, alpha 2/3", "block_ngd", eta=1.0, alpha=2.0 / 3.0))


@pytest.mark.parametrize("train_u", [False, True])
def test_side_by_side_equals_each_method_alone(train_u):
    """Trial group m of `side_by_side` follows methods[m] alone step for step (fixed decoder
    from the small random W_0; joint training from u_0 = W_0 = 0, where the first W gradient is
    exactly 0)."""
    X, y, u, _, W0 = small_problem(K=3)
    methods = JOINT_METHODS if train_u else FIXED_DECODER_METHODS
    model = joint(X, y) if train_u else fixed(X, y, u)
    params0 = {"u": torch.zeros_like(u), "W": torch.zeros_like(W0)} if train_u else {"W": W0}
    batch = final_iterate(side_by_side(model, methods), tile(params0, len(methods)), 8)
    for m, method in enumerate(methods):
        alone = final_iterate(method.step(model), params0, 8)
        group = {b: v[3 * m:3 * (m + 1)] for b, v in batch.items()}
        assert max_relative_difference(group, alone) <= 1e-12, method.label


def test_unknown_rules_and_settings_are_declaration_errors():
    with pytest.raises(DeclarationError, match="unknown rule"):
        Method("Adam", "adam")
    X, y, u, _, _ = small_problem(K=3)
    with pytest.raises(DeclarationError, match="unknown optimizer rule"):
        FirstOrder(fixed(X, y, u), rule="adam")
    with pytest.raises(DeclarationError, match="2 values for 3 trials"):
        FirstOrder(fixed(X, y, u), rule=["gd", "gd", "ngd"], eta=[0.1, 0.2])


def test_polyak_needs_an_infimum():
    """A model without a known infimum cannot take Polyak steps: a declaration error names it."""
    from theorycheck.models import Model

    class Quadratic(Model):
        blocks = ("w",)

        def __init__(self, A):
            self.A = A

        def log_loss(self, params):
            return torch.log(0.5 * torch.einsum("ki,kij,kj->k", params["w"], self.A, params["w"]) + 1.0)

        def restrict(self, trials):
            return Quadratic(self.A[trials])

    model = Quadratic(torch.eye(3, dtype=F64).repeat(2, 1, 1))
    with pytest.raises(DeclarationError, match="declares no infimum"):
        Polyak(model)(0, {"w": torch.ones(2, 3, dtype=F64)})
