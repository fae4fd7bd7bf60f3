"""claims.gsb26.setup's A2 rank test: its stated failure bound is the Gaussian condition-number
tail at the threshold the test can fail at, and it travels with the decision of every draw."""
import numpy as np
import pytest

from claims.gsb26.setup import a2_tail_bound, ill_conditioned, record_assumptions, well_conditioned
from theorycheck import Control
from theorycheck.claim import ClaimSpec
from theorycheck.context import ClaimContext
from theorycheck.runtime import Runtime, generator
from theorycheck.tails import gaussian_condition_tail


def test_a2_bound_is_the_condition_tail_at_twice_the_rank_tolerance():
    W = np.ones((4, 3))
    bound = a2_tail_bound(W)
    assert bound.probability == gaussian_condition_tail(4, 3, 1.0 / (8 * np.finfo(float).eps))
    assert bound.probability < 1e-27 and "Chen & Dongarra" in bound.reason


@pytest.mark.parametrize("recipe", [well_conditioned, ill_conditioned])
def test_every_recipes_a2_decision_carries_its_bound_summed_over_the_problems(recipe):
    spec = ClaimSpec(id="gsb26.toy.a2", paper="gsb26", source="A2", statement="s", provenance="derived",
                     controls={"c": Control("hypothesis", breaks=["x"], description="d")})
    tc = ClaimContext(spec, None, Runtime(seed=0))
    problems = [recipe(generator(51000 + i, "test", "problem")) for i in range(3)]
    record_assumptions(tc, problems)
    (a2,) = [d for d in tc.decisions if d.name == "A2: sigma_d(W*) > 0"]
    assert a2.passed
    assert a2.detail["tail_bound"]["probability"] == pytest.approx(3 * a2_tail_bound(problems[0].W).probability)
