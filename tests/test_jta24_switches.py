"""jta24's lowest-score switches (the `not_locally_optimal` controls' alpha'): every alpha' moves one
sample of its alpha to that sample's lowest-score token, the restarts of one token set share their
alpha', and two token sets of one instance never share one (each is a trial of the control's
binomial: a collision had left 2 trials on 7 of 300 seeds)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claims.jta24.direction import lowest_score_switch
from claims.jta24.local import distinct_switches


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(1, 3), n=st.integers(7, 9), T=st.integers(2, 5),
       sets=st.integers(1, 6), repeats=st.integers(1, 3))   # n > sets: a switch is always left
def test_distinct_token_sets_get_distinct_switches(seed, K, n, T, sets, repeats):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((K, n, T))
    instance = rng.integers(0, K, sets).repeat(repeats)
    alpha = np.stack([scores[k].argmax(-1) for k in instance])
    alpha[::repeats, 0] = rng.integers(0, T, sets)        # token sets that differ only at sample 0
    switched = distinct_switches(scores, instance, alpha)
    worst = scores[instance].argmin(-1)
    keys = {}
    for k, a, bad, low in zip(instance, alpha, switched, worst):
        changed = np.flatnonzero(bad != a)
        assert len(changed) == 1 and bad[changed[0]] == low[changed[0]]
        keys.setdefault((int(k), tuple(a)), set()).add(tuple(bad))
    assert all(len(v) == 1 for v in keys.values())                           # one alpha' per token set
    per_instance = [(k, next(iter(v))) for (k, _), v in keys.items()]
    assert len(set(per_instance)) == len(per_instance)                       # distinct across token sets


def test_two_token_sets_that_differ_at_their_first_switch_are_kept_apart():
    scores = np.array([[[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]]])   # one instance, 2 samples, token 2 lowest
    first, second = np.array([0, 0]), np.array([1, 0])
    a, b = distinct_switches(scores, [0, 0], [first, second])
    assert a.tolist() == [2, 0] and b.tolist() == [1, 2]


def test_a_token_set_already_lowest_everywhere_is_a_clear_error():
    scores = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]])
    with pytest.raises(ValueError, match="lowest-score switch of the token set"):
        lowest_score_switch(scores, np.array([2, 2]))
