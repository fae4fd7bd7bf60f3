"""anon20's bag-of-words runs: the identity-attention run trains the same baseline as the
softmax run (same stream, data and initial weights), so a control can compare the two arms from
the identity run alone."""
import numpy as np

from theorycheck.explore import run_shared

TARGET = "claims.anon20.table2:bag_of_words"


def bag_of_words(**config):
    value, _ = run_shared(TARGET, seed=12345, config=dict(n=100, labels="linear", instances=2, **config),
                          use_cache=False)
    return value


def test_the_identity_run_trains_the_softmax_runs_baseline():
    softmax, identity = bag_of_words(), bag_of_words(attention="identity")
    np.testing.assert_array_equal(identity["baseline"], softmax["baseline"])
    assert identity["agreement"] == softmax["agreement"] == 1.0
    assert not np.array_equal(identity["self-attention"], softmax["self-attention"])


def test_gap_z_statistic_rejects_exactly_where_the_upper_t_bound_is_below_zero():
    from theorycheck.maps import mean_interval
    from theorycheck.tails import NullTest
    from claims.anon20.table2 import gap_z_statistics

    alpha = 1e-4
    critical = NullTest(level=2 * alpha, count=2, sided="lower").critical
    rng = np.random.default_rng(7)
    for shift in np.linspace(-0.08, 0.02, 41):
        gaps = [shift + 0.02 * rng.standard_normal(16), shift + 0.02 * rng.standard_normal(8)]
        z = gap_z_statistics(gaps)
        upper = np.array([mean_interval(g, 1 - 2 * alpha)[2] for g in gaps])
        np.testing.assert_array_equal(z < -critical, upper < 0)
    assert abs(gap_z_statistics([np.array([-1.0, 1.0, -2.0, 2.0])])[0]) < 1e-12
