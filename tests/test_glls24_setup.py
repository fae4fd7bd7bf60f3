"""claims.glls24.setup's construction checks: the properties a construction makes true (Def. 3.7's
pairing, data in the unit ball) hold on the constructors' probes and on every draw, and a drawn
array that breaks them is a clear error, not a silent pass."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claims.glls24.setup import (
    INITIALIZATIONS,
    SIGMA,
    constructor_probe,
    in_unit_ball,
    probe_regression_data,
    regression_data,
    require_pairing,
)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(1, 4), d_in=st.integers(1, 6), d=st.integers(1, 3),
       half=st.integers(1, 16))
def test_symmetric_draws_are_paired_and_data_in_the_unit_ball(seed, K, d_in, d, half):
    rng = np.random.default_rng(seed)
    W, A = INITIALIZATIONS["symmetric"](rng, K, d_in, d, 2 * half, SIGMA)
    require_pairing(W, A)
    assert in_unit_ball(*regression_data(rng, K, 3, d_in, d)).all()


def test_unpaired_weights_are_an_error_naming_the_property():
    W, A = INITIALIZATIONS["independent"](np.random.default_rng(1), 2, 3, 2, 8, SIGMA)
    with pytest.raises(RuntimeError, match=r"initialization is symmetric \(Def. 3.7\)"):
        require_pairing(W, A)


def test_probes_do_not_depend_on_anything_but_the_shape():
    first, second = probe_regression_data(n=4, d_in=8, d=2), probe_regression_data(n=4, d_in=8, d=2)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert constructor_probe().standard_normal() == constructor_probe().standard_normal()
