"""glls24 Table 1's per-trial slopes: `trial_slopes` fits the mean log step count of a trial's draws."""
import numpy as np
import pytest

from claims.glls24.test_table1 import trial_slopes
from theorycheck.errors import InvalidInputError


def test_trial_slopes_fit_the_mean_log_steps_of_each_trial():
    """Draws with steps c_j n^p (c_j per draw) give every trial the exact slope p, whatever the c_j;
    a trial's slope is that of the geometric mean of its draws' counts."""
    ns, p = [4, 8, 16], 1.7
    c = np.array([1.0, 3.0, 0.5, 2.0])
    rows = [(n, c * n**p, None) for n in ns]
    np.testing.assert_allclose(trial_slopes(rows, 2), [p, p], rtol=1e-12)
    bent = [(n, np.array([n**1.0, n**2.0]), None) for n in ns]
    np.testing.assert_allclose(trial_slopes(bent, 2), [1.5], rtol=1e-12)
    np.testing.assert_allclose(trial_slopes(bent, 1), [1.0, 2.0], rtol=1e-12)


def test_trial_slopes_refuse_a_count_not_a_multiple_of_the_draws():
    rows = [(n, np.ones(6), None) for n in (4, 8)]
    with pytest.raises(InvalidInputError, match="multiple of draws = 4"):
        trial_slopes(rows, 4)
