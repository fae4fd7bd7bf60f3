"""theorycheck.comparison: methods side by side, orderings in decades of a log error series."""
import math

import numpy as np
import pytest
import torch

from theorycheck import Control
from theorycheck.claim import ClaimSpec
from theorycheck.comparison import MethodComparison, check_ahead, compare_methods, decades_ahead, log_checkpoints
from theorycheck.context import ClaimContext
from theorycheck.models import TokenSelection
from theorycheck.optim import Method, run_trajectory, standard_metrics
from theorycheck.runtime import Runtime


def context() -> ClaimContext:
    spec = ClaimSpec(id="toy.comparison.case", paper="toy", source="Fig. 1", statement="s",
                     controls={"c": Control("dynamics", breaks=["x"], description="d")},
                     provenance="derived")
    return ClaimContext(spec, None, Runtime(seed=0))


def toy_runs():
    t = np.array([0, 10, 100])
    ln10 = math.log(10)
    series = {"fast": {"err": ln10 * np.array([[0, 0], [-3, -4], [-8, -9]])},
              "slow": {"err": ln10 * np.array([[0, 0], [-1, -1], [-2, -5]])},
              "slower": {"err": ln10 * np.array([[0, 0], [-1, -1], [-1, -1]])}}
    return MethodComparison(t, series)


def test_decades_ahead_compares_the_worst_leader_with_the_best_follower_per_trial():
    runs = toy_runs()
    assert decades_ahead(runs, ["fast"], ["slow"], "err", 100) == pytest.approx([6, 4])
    assert decades_ahead(runs, ["fast", "slow"], ["slower"], "err", 100) == pytest.approx([1, 4])
    with pytest.raises(KeyError, match=r"\[50\] were not recorded"):
        decades_ahead(runs, ["fast"], ["slow"], "err", 50)


def test_restrict_keeps_the_chosen_trials_of_every_series_and_per_trial_reference():
    runs = MethodComparison(toy_runs().t, toy_runs().series, {"norm": np.array([1.0, 2.0]), "n": 6})
    kept = runs.restrict(np.array([1]))
    assert kept.series["fast"]["err"].shape == (3, 1)
    assert decades_ahead(kept, ["fast"], ["slow"], "err", 100) == pytest.approx([4])
    assert kept.reference == {"norm": pytest.approx([2.0]), "n": 6}
    assert np.array_equal(kept.t, runs.t)


def test_check_ahead_decides_per_trial_and_in_the_geometric_mean_under_role_names():
    tc = context()
    check_ahead(tc, toy_runs(), ["A"], ["B"], "err", 100, 1e4, mean_factor=1e5,
                roles={"A": "fast", "B": "slow"})
    per_seed, mean = tc.decisions
    assert per_seed.name == "A ahead of B by >= 10000x: err, decades per seed" and per_seed.passed
    assert mean.passed
    check_ahead(tc, toy_runs(), ["A"], ["B"], "err", 100, 1e5, roles={"A": "fast", "B": "slow"})
    assert not tc.decisions[-1].passed


def test_check_ahead_without_a_per_trial_factor_decides_the_geometric_mean_only():
    tc = context()   # fast leads slow by 6 and 4 decades: 5 in the mean
    check_ahead(tc, toy_runs(), ["fast"], ["slow"], "err", 100, None, mean_factor=1e5)
    (mean,) = tc.decisions
    assert "geometric mean" in mean.name and mean.passed and mean.measured == pytest.approx(5)
    check_ahead(tc, toy_runs(), ["fast"], ["slow"], "err", 100, None, mean_factor=1e6)
    assert len(tc.decisions) == 2 and not tc.decisions[-1].passed


def test_check_ahead_at_the_median_trial_is_not_moved_by_one_trial_that_converged_elsewhere():
    ln10 = math.log(10)   # the leader is 3 decades ahead on four trials and 20 behind on one
    runs = MethodComparison(np.array([0, 100]), {
        "lead": {"err": ln10 * np.array([[0.0] * 5, [-6, -6, -6, -6, 17]])},
        "follow": {"err": ln10 * np.array([[0.0] * 5, [-3, -3, -3, -3, -3]])}})
    tc = context()
    check_ahead(tc, runs, ["lead"], ["follow"], "err", 100, None, mean_factor=10)
    check_ahead(tc, runs, ["lead"], ["follow"], "err", 100, None, mean_factor=10, typical="median")
    mean, median = tc.decisions
    assert not mean.passed and mean.measured == pytest.approx(-1.6)
    assert median.passed and median.measured == pytest.approx(3)
    assert median.name == "lead ahead of follow by >= 10x in the median over seeds: err, decades"
    with pytest.raises(ValueError, match="typical must be one of"):
        check_ahead(tc, runs, ["lead"], ["follow"], "err", 100, None, mean_factor=10, typical="mode")


def test_log_checkpoints_hold_the_ends_and_the_decision_points():
    t = log_checkpoints(1000, [7, 333], count=10)
    assert t[0] == 0 and t[-1] == 1000 and {7, 333} <= set(t.tolist())
    assert np.all(np.diff(t) > 0)


def test_compare_methods_splits_the_batch_by_method_as_each_method_alone():
    rng = np.random.default_rng(0)
    K, n, T, d = 2, 3, 2, 4
    X = torch.as_tensor(rng.standard_normal((K, n, T, d)))
    y = torch.as_tensor(rng.choice([-1.0, 1.0], size=(K, n)))
    model = TokenSelection(X, y, u=torch.as_tensor(rng.standard_normal((K, d))))
    W0 = {"W": 0.1 * torch.as_tensor(rng.standard_normal((K, d, d)))}
    methods = [Method("GD", "gd", eta=0.5), Method("NGD", "ngd", eta=0.1)]
    runs = compare_methods(model, W0, methods, 5, standard_metrics(model.tiled(2)), checkpoints=[0, 5])
    for method in methods:
        alone = run_trajectory(method.step(model), W0, 5, standard_metrics(model), checkpoints=[0, 5])
        np.testing.assert_allclose(runs.series[method.label]["log_loss"], alone["log_loss"], rtol=1e-12)
