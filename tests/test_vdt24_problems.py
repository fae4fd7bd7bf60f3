"""Unit tests of vdt24's shared helpers (claims/vdt24/problems.py): Assumption 2 decided as a rate
over trials, and the restriction of a problem to the trials meeting it."""

import dataclasses

import numpy as np
import pytest
import torch

from claims.vdt24.problems import (
    ASSUMPTION2_ALPHA,
    ASSUMPTION2_RATE,
    ASSUMPTION2_TRIALS,
    Problem,
    assumption2_met,
    restricted,
)
from claims.vdt24.setup import example1
from theorycheck import Control
from theorycheck.checks import critical_count
from theorycheck.claim import ClaimSpec
from theorycheck.context import ClaimContext
from theorycheck.data import AssumptionReport
from theorycheck.runtime import Runtime


def context() -> ClaimContext:
    spec = ClaimSpec(id="toy.problems.case", paper="toy", source="Lemma 1", statement="s",
                     controls={"c": Control("dynamics", breaks=["x"], description="d")},
                     provenance="derived")
    return ClaimContext(spec, None, Runtime(seed=0))


@pytest.mark.parametrize("flags, passed, kept", [
    ([True] * 5, True, [0, 1, 2, 3, 4]),
    ([True, False, True, True, True], True, [0, 2, 3, 4]),
    ([True, False, False, False, False], False, [0]),
    ([False] * 5, False, [0, 1, 2, 3, 4]),   # none meets it: every trial, so the conclusions show the violation
])
def test_assumption2_met_is_a_binomial_precondition_returning_the_trials_that_meet_it(flags, passed, kept):
    tc = context()
    assert assumption2_met(tc, np.array(flags)).tolist() == kept
    (decision,) = tc.decisions
    assert decision.name == ASSUMPTION2_TRIALS and decision.kind == "binomial"
    assert decision.role == "precondition" and decision.passed is passed


@pytest.mark.parametrize("trials", [3, 5, 15])
def test_assumption2_level_lets_every_trial_count_of_the_suite_reject(trials):
    assert critical_count(trials, ASSUMPTION2_RATE, ASSUMPTION2_ALPHA) >= 0


def test_restricted_keeps_the_chosen_trials_of_data_tensors_and_references():
    data = example1(1, 4)
    flags = {"assumption2": np.array([True, True, False, False])}
    data = dataclasses.replace(data, assumptions=AssumptionReport.from_flags(flags, data.assumptions.details))
    tensors = data.to_torch()
    W = torch.arange(4, dtype=torch.float64)[:, None, None] * torch.ones(4, 32, 32)
    prob = Problem(data=data, X=tensors.X, y=tensors.y, u=tensors.u, opt=tensors.opt, W_mm=W, W0=-W)
    kept = restricted(prob, np.array([1, 3]))
    assert kept.data.K == 2 and np.array_equal(kept.data.X, data.X[[1, 3]])
    assert kept.data.assumptions.per_trial["assumption2"].tolist() == [True, False]
    assert kept.data.assumptions.details["rho_perp"].tolist() == data.assumptions.details["rho_perp"][[1, 3]].tolist()
    assert torch.equal(kept.X, tensors.X[[1, 3]]) and kept.W_mm[:, 0, 0].tolist() == [1.0, 3.0]
    assert kept.W0[:, 0, 0].tolist() == [-1.0, -3.0] and kept.W_mm_norm.shape == (2,)
