"""claims.glls24.convergence's measurements over runs of different lengths: each trial is censored
at its own run's length (the runs of Theorem 4.2 and Corollary 4.3 last their own slowest trial's
count, so one run's length is not another's)."""
import numpy as np

from claims.glls24.convergence import censored_count, convergence_measurements


def geometric_run(q, steps):
    """A run whose relative loss is exactly ``q^t`` for ``steps`` steps, one trial, with the
    fields `convergence_measurements` reads (m eta lambda / 2 = 1 - q, ||Y||^2 / 2 = 1)."""
    t = np.arange(steps + 1)
    return {"t": t, "log_loss": (t * np.log(q))[:, None], "Y": np.array([[[np.sqrt(2.0)]]]),
            "m": 1.0, "eta": np.array([1.0]), "lambda": np.array([2 * (1 - q)]),
            "diverged_at": np.array([-1])}


def test_each_trial_is_censored_at_its_own_runs_length():
    fast, slow = geometric_run(0.5, 40), geometric_run(0.9, 400)
    short, long = convergence_measurements(fast), convergence_measurements(slow)
    assert short["steps"][0] == 40 and long["steps"][0] == 400
    assert short["predicted"][0] <= 40 < long["predicted"][0] <= 400
    cat = {k: np.concatenate([short[k], long[k]]) for k in short}
    np.testing.assert_array_equal(censored_count(cat), cat["predicted"])
    assert (cat["hit"] <= censored_count(cat)).all()


def test_a_count_beyond_the_run_is_censored_at_the_runs_length_plus_one():
    measured = convergence_measurements(geometric_run(0.99, 100))
    assert measured["predicted"][0] > 100
    assert censored_count(measured)[0] == 101 == measured["hit"][0]
