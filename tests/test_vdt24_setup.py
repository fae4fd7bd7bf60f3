"""Unit tests of vdt24's set-up (claims/vdt24/setup.py): its data generators and assumption reports."""

import numpy as np
import pytest

from claims.vdt24.setup import (
    ASSUMPTION2_TOL,
    antipodal,
    counterexample,
    counterexample_local_opt,
    example1,
    example1_signal,
    first_step_score_gaps,
    fixed_decoder_report,
    gaussian_dm,
    joint_model_report,
    orthonormal,
)

GENERATORS = {
    "example1": lambda rng, K: example1(rng, K),
    "example1_signal": lambda rng, K: example1_signal(rng, K),
    "antipodal": lambda rng, K: antipodal(rng, K),
    "orthonormal": lambda rng, K: orthonormal(rng, K),
    "gaussian_dm": lambda rng, K: gaussian_dm(rng, K),
}
FIELDS = ("X", "y", "u", "opt", "designated_opt")


def non_optimal_scores(data):
    mask = np.arange(data.T) != data.opt[..., None]
    return data.scores()[mask]


def optimal_scores(data):
    return np.take_along_axis(data.scores(), data.opt[..., None], axis=-1)[..., 0]


# ----------------------------------------------------------------------------- reproducibility


@pytest.mark.parametrize("generator", GENERATORS)
def test_same_seed_gives_identical_arrays(generator):
    first, second = GENERATORS[generator](11, 3), GENERATORS[generator](11, 3)
    for key in FIELDS:
        np.testing.assert_array_equal(getattr(first, key), getattr(second, key))
    assert first.name == second.name
    assert not np.array_equal(first.X, GENERATORS[generator](12, 3).X)


@pytest.mark.parametrize("generator", GENERATORS)
def test_trial_does_not_depend_on_number_of_trials(generator):
    np.testing.assert_array_equal(GENERATORS[generator](5, 4).X[:2], GENERATORS[generator](5, 2).X)


def test_seed_list_gives_one_stream_per_seed():
    np.testing.assert_array_equal(example1([3, 5]).X[1], example1([5]).X[0])
    np.testing.assert_array_equal(example1(range(5)).X[2], example1([2]).X[0])
    assert example1(range(5)).K == 5
    with pytest.raises(ValueError, match="K=2"):
        example1([1, 2, 3], K=2)


def test_generator_object_is_accepted():
    a = example1(np.random.default_rng(9), K=2)
    b = example1(np.random.default_rng(9), K=2)
    np.testing.assert_array_equal(a.X, b.X)


# ----------------------------------------------------------------------------- assumption checks


def test_orthonormal_has_zero_orthogonality_ratio():
    data = orthonormal(0, K=2, radius=2.0)
    assert np.all(data.assumptions.details["rho_perp"] < 1e-12)
    gram = np.einsum("kntd,kmsd->kntms", data.X, data.X).reshape(2, 24, 24)
    np.testing.assert_allclose(gram, np.broadcast_to(4.0 * np.eye(24), gram.shape), atol=1e-12)


# ----------------------------------------------------------------------------- generators


def test_example1_satisfies_assumption2_when_d_at_least_nT():
    data = example1(range(5), n=6, T=4, d=32, zeta=3.0)
    assert np.max(np.abs(non_optimal_scores(data))) <= 1e-8
    assert np.max(np.abs(optimal_scores(data) - 3.0)) <= 1e-8
    np.testing.assert_array_equal(data.opt, data.designated_opt)
    report = data.assumptions
    assert report.n_trials == 5 and report.n_met == 5
    assert np.all(report.details["assumption2_residual"] <= 1e-8)
    assert report.count("assumption2") == 5


def test_example1_reports_failure_when_d_below_nT():
    data = example1(range(3), n=64, T=8, d=256)
    report = data.assumptions
    assert report.n_met == 0 and report.count("assumption2") == 0
    assert np.all(report.details["assumption2_residual"] > 0.5)
    assert report.count("designated_opt_is_argmax") == 0
    assert np.any(data.opt != data.designated_opt)
    np.testing.assert_array_equal(data.opt, np.argmax(data.scores(), axis=-1))  # opt is always the argmax


def test_example1_orthogonality_improves_with_dimension():
    dims = (32, 64, 128, 256, 512)
    means = [np.mean(example1(range(5), n=6, T=4, d=d).assumptions.details["rho_perp"]) for d in dims]
    assert np.all(np.diff(means) < 0), means
    assert means[-1] <= 0.25


def test_example1_signal_scores():
    data = example1_signal(0, K=3, rho=0.5, zeta=4.0)
    np.testing.assert_allclose(optimal_scores(data), 2.0, rtol=0, atol=1e-15)
    assert np.all(non_optimal_scores(data) == 0.0)
    assert data.assumptions.n_met == 3


def test_antipodal_optimal_tokens():
    data = antipodal(0, K=2, rho=1.5, zeta=3.0)
    opt_tokens = np.take_along_axis(data.X, data.opt[:, :, None, None], axis=2)[:, :, 0]
    expected = np.zeros_like(opt_tokens)
    expected[..., 0] = 1.5 * data.y
    np.testing.assert_array_equal(opt_tokens, expected)
    np.testing.assert_allclose(optimal_scores(data), 3.0, rtol=1e-15)
    assert data.assumptions.n_met == 2


def test_orthonormal_scores():
    data = orthonormal(3, K=2, n=3, T=5, d=20, zeta=2.0, radius=0.5)
    np.testing.assert_allclose(optimal_scores(data), 2.0, rtol=1e-12)
    assert np.max(np.abs(non_optimal_scores(data))) <= 1e-12
    with pytest.raises(ValueError, match="d >= nT"):
        orthonormal(0, n=3, T=5, d=14)


def test_counterexample_instance():
    data = counterexample(K=2)
    assert data.X.shape == (2, 1, 3, 3)
    np.testing.assert_array_equal(data.scores()[0, 0], [-1.0, 0.5, 1.0])
    np.testing.assert_array_equal(data.opt, [[2], [2]])
    np.testing.assert_array_equal(counterexample_local_opt(), [1])
    report = data.assumptions
    assert report.n_met == 0 and report.count("assumption2") == 0
    assert np.all(report.details["rho_perp"] >= 1.0)


@pytest.mark.parametrize("opt_index", [0, 1])
def test_gaussian_dm(opt_index):
    data = gaussian_dm(range(4), n=8, d=64, rho=2.0, opt_index=opt_index)
    assert data.X.shape == (4, 8, 2, 64)
    assert np.all(data.opt == opt_index) and np.all(data.designated_opt == opt_index)
    np.testing.assert_allclose(np.linalg.norm(data.u, axis=-1), 1.0)
    opt_tokens = data.X[:, :, opt_index]
    np.testing.assert_array_equal(data.y, np.sign(np.einsum("knd,kd->kn", opt_tokens, data.u)))
    norms2 = np.sum(data.X**2, axis=-1)
    assert np.mean(norms2[:, :, opt_index]) == pytest.approx(4.0, rel=0.15)
    assert np.mean(norms2[:, :, 1 - opt_index]) == pytest.approx(1.0, rel=0.15)
    report = data.assumptions
    assert report.count("assumption2") == 4  # T = 2: automatic
    assert report.count("opt_token_longest") == 4


def test_gaussian_dm_with_rho_below_one_fails_condition1():
    assert gaussian_dm(0, K=3, rho=0.5).assumptions.count("opt_token_longest") == 0


def test_first_step_score_gaps_match_the_first_eq13_step():
    """The closed form of the first-step score gaps agrees (up to one positive factor per
    trial) with the gaps after an actual Eq. (13) step from u_0 = W_0 = 0."""
    import torch

    from theorycheck.models import TokenSelection
    from theorycheck.optim import BlockNGD

    data = gaussian_dm(np.random.default_rng(3), 4, n=8, d=32)
    t = data.to_torch()
    u1 = BlockNGD(TokenSelection(t.X, t.y), 1.0, alpha=2 / 3)(
        0, {"u": torch.zeros(4, 32, dtype=torch.float64), "W": torch.zeros(4, 32, 32, dtype=torch.float64)})["u"]
    on_opt = np.take_along_axis(data.X, data.opt[:, :, None, None], axis=2)[:, :, 0]
    other = data.X.sum(axis=2) - on_opt
    actual = data.y * np.einsum("kd,knd->kn", u1.numpy(), on_opt - other)
    predicted = first_step_score_gaps(data.X, data.y, data.opt)
    ratio = actual / predicted
    np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones_like(ratio), rtol=1e-10)
    assert np.all(ratio > 0)


@pytest.mark.parametrize("spread, met", [(0.5 * ASSUMPTION2_TOL, True), (2.0 * ASSUMPTION2_TOL, False)])
def test_assumption2_is_a_non_optimal_spread_of_at_most_the_tolerance(spread, met):
    """One sample, tokens e_0..e_3, u = (3, 1, 1, 1 + spread): scores (3, 1, 1, 1 + spread)."""
    X, y = np.eye(4)[None, None], np.ones((1, 1))
    u = np.array([[3.0, 1.0, 1.0, 1.0 + spread]])
    opt = np.zeros((1, 1), dtype=int)
    report = fixed_decoder_report(X, y, u, opt, opt)
    assert report.count("opt_unique_argmax") == 1 and report.count("assumption2") == int(met)
    assert report.details["assumption2_residual"][0] == pytest.approx(spread, rel=1e-6)
    assert joint_model_report(X, y, u, opt).count("assumption2") == int(met)
