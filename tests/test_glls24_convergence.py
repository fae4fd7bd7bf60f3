"""claims.glls24.convergence's measurements over runs of different lengths: each trial is censored
at its own run's length (the runs of Theorem 4.2 and Corollary 4.3 last their own slowest trial's
count, so one run's length is not another's)."""
import numpy as np

from claims.glls24.convergence import (
    ENVELOPE,
    SLOPE,
    censored_count,
    convergence_measurements,
    decide_linear_convergence,
)
from claims.glls24.setup import log_contraction, predicted_steps
from theorycheck import Control
from theorycheck.claim import ClaimSpec
from theorycheck.context import ClaimContext
from theorycheck.runtime import Runtime


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


def batch_run(rates, steps, q):
    """A run of ``len(rates)`` trials whose relative loss is ``rates[k]^t`` for ``steps`` steps,
    every trial with the contraction factor ``q`` (m eta lambda / 2 = 1 - q, ||Y||^2 / 2 = 1)."""
    K = len(rates)
    t = np.arange(steps + 1)
    return {"t": t, "log_loss": t[:, None] * np.log(np.asarray(rates))[None], "Y": np.full((K, 1, 1), np.sqrt(2.0)),
            "m": 1, "eta": np.ones(K), "lambda": np.full(K, 2 * (1 - q)), "lambda_max": np.ones(K),
            "diverged_at": np.full(K, -1)}


def verdicts(rates, q=0.9):
    """Every decision of `decide_linear_convergence` on `batch_run(rates, 400, q)`, as
    (passed, trials that met it)."""
    spec = ClaimSpec(id="toy.glls.case", paper="toy", source="Theorem 4.2", statement="s",
                     controls={"c": Control("dynamics", breaks=[ENVELOPE], description="d")}, provenance="derived")
    tc = ClaimContext(spec, None, Runtime(dtype="float64", seed=0))
    decide_linear_convergence(tc, [batch_run(rates, 400, q)], instances=(0.95, 1e-4, "a test"))
    return {d.name: (d.passed, d.detail.get("successes")) for d in tc.decisions}


def test_per_instance_verdicts_count_the_trials_outside_the_envelope():
    # 5 of 8 trials contract at 0.8 (inside the envelope 0.9^t), 3 at 0.95 (outside): not rejected at 0.95
    assert verdicts([0.8] * 5 + [0.95] * 3)[ENVELOPE] == (True, 5)
    # 3 of 8 inside: the exact binomial test of P >= 0.95 at level 1e-4 rejects
    assert verdicts([0.8] * 3 + [0.95] * 5)[ENVELOPE] == (False, 3)


def test_a_step_beyond_the_theorems_range_predicts_one_step_and_no_contraction_meets_it():
    """q = 1 - m eta lambda / 2 <= 0 (eta >= 2 / (m lambda), a control's large step on a
    well-conditioned kernel): the bound asserts epsilon after one step, no positive loss meets it,
    and nothing is NaN (seed 314596297's control errored on log q of a negative q)."""
    q = np.array([-0.25, 0.0, 0.5, 1.0])
    np.testing.assert_array_equal(predicted_steps(q, np.ones(4), 1e-10), [1, 1, np.ceil(np.log(1e10) / np.log(2)), np.inf])
    assert predicted_steps(np.array([-0.25]), np.array([1e-12]), 1e-10)[0] == 0
    np.testing.assert_array_equal(log_contraction(q), [-np.inf, -np.inf, np.log(0.5), 0.0])
    measured = convergence_measurements(batch_run([0.5] * 8, 400, -0.25))
    assert (measured["envelope"] == np.inf).all() and (measured["predicted"] == 1).all()
    decided = verdicts([0.5] * 8, q=-0.25)
    assert decided[ENVELOPE] == (False, 0) and decided[SLOPE] == (False, 0)
