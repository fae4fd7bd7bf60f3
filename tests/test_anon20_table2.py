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
