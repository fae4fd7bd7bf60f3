"""anon20's Table 1 runs: under a dense teacher the known mask is all ones, so the known arm is
the baseline network on the same inputs, and its run is the baseline's (`computing_arm`)."""
import numpy as np

from theorycheck.explore import run_shared

from claims.anon20.sample_complexity import computing_arm

TARGET = "claims.anon20.sample_complexity:table1_arm"


def table1_arm(arm):
    value, _ = run_shared(TARGET, seed=12345, config=dict(n=100, arm=arm, dense_teacher=True, instances=2),
                          use_cache=False)
    return value


def test_the_dense_teachers_known_arm_is_its_baseline():
    known, baseline = table1_arm("known"), table1_arm("baseline")
    np.testing.assert_array_equal(known["test_mse"], baseline["test_mse"])
    np.testing.assert_array_equal(known["mask_is_teachers"], baseline["mask_is_teachers"])
    assert computing_arm("known", {"dense_teacher": True}) == "baseline"
    assert computing_arm("known", {}) == "known"
