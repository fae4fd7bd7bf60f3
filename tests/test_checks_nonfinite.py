"""Non-finite values never pass a check (issue 35, item 1).

For every check kind a call that passes on finite inputs; hypothesis then puts NaN, +inf or
-inf at random positions of one of its numeric arguments (measured values, reference, bound,
tolerance, margin, window, x and y of a slope, the probabilities and level of a test).  The
property: the check returns (never raises) a failed decision that is not ``finite``, whose
``detail["non_finite"]`` names that argument with the number of non-finite entries and the
first one's flat index, and whose summary names the argument.
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from theorycheck import checks

X = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]

#: per check kind: the function, fixed settings, and the numeric arguments of a passing call
PASSING = {
    "close": (checks.close, {}, dict(measured=[1.0, 2.0, 3.0], expected=[1.0, 2.0, 3.0],
                                     rtol=0.1, atol=0.1)),
    "close_fro": (checks.close, {"norm": "fro"}, dict(measured=[[1.0, 2.0], [3.0, 4.0]],
                                                      expected=[[1.0, 2.0], [3.0, 4.0]],
                                                      rtol=0.1, atol=0.1)),
    "at_most": (checks.at_most, {}, dict(measured=[1.0, 2.0, 3.0], bound=[2.0, 3.0, 4.0],
                                         margin=0.1, rmargin=0.1)),
    "at_least": (checks.at_least, {}, dict(measured=[2.0, 3.0, 4.0], bound=[1.0, 2.0, 3.0],
                                           margin=0.1, rmargin=0.1)),
    "holds": (checks.holds, {}, dict(condition=[1.0, 1.0, 1.0, 1.0])),
    "monotone": (checks.monotone, {"increasing": True}, dict(series=[1.0, 2.0, 3.0, 4.0], tol=0.1)),
    "slope": (checks.slope, {}, dict(x=X, y=[v**2 for v in X], window=(1.0, 8.0), expected=2.0,
                                     rtol=0.1, at_most=3.0, at_least=1.0, min_r2=0.9, floor=0.0)),
    "binomial": (checks.binomial, {}, dict(successes=[1.0] * 20, p=0.5, alpha=0.05)),
    "wald_at_least": (checks.wald, {}, dict(samples=list(np.linspace(1.0, 2.0, 40)), at_least=0.0,
                                            alpha=0.05)),
    "wald_at_most": (checks.wald, {}, dict(samples=list(np.linspace(1.0, 2.0, 40)), at_most=3.0,
                                           alpha=0.05)),
    "chi_square": (checks.chi_square, {}, dict(counts=[50.0, 50.0], probabilities=[0.5, 0.5],
                                               alpha=0.05)),
}
ARGUMENTS = [(kind, arg) for kind, (_, _, args) in PASSING.items() for arg in args]


def decide(kind: str, arguments: dict):
    fn, settings, _ = PASSING[kind]
    return fn("v", **arguments, **settings)


@pytest.mark.parametrize("kind", PASSING)
def test_every_check_passes_its_finite_call(kind):
    """The property below would be empty if the unperturbed calls failed anyway."""
    decision = decide(kind, PASSING[kind][2])
    assert decision.passed and decision.finite and "non_finite" not in decision.detail


@st.composite
def perturbed(draw):
    """A check kind, one of its numeric arguments, and that argument with NaN / +-inf at a
    non-empty random set of positions; returns (kind, arguments, argument, positions)."""
    kind, argument = draw(st.sampled_from(ARGUMENTS))
    arguments = dict(PASSING[kind][2])
    value = np.array(arguments[argument], dtype=float)
    flat = value.ravel()
    positions = sorted(draw(st.sets(st.integers(0, flat.size - 1), min_size=1,
                                    max_size=flat.size)))
    for i in positions:
        flat[i] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
    if value.ndim == 0:
        arguments[argument] = float(value)
    elif isinstance(arguments[argument], tuple):
        arguments[argument] = tuple(flat.tolist())
    else:
        arguments[argument] = value.tolist()
    return kind, arguments, argument, positions


@given(perturbed())
def test_a_non_finite_input_never_passes_and_is_named(case):
    kind, arguments, argument, positions = case
    decision = decide(kind, arguments)
    assert not decision.passed
    assert not decision.finite
    named = {f["argument"]: f for f in decision.detail["non_finite"]}
    assert named[argument]["count"] == len(positions)
    assert named[argument]["first_index"] == positions[0]
    assert argument in decision.summary()
    assert argument in checks.non_finite_text(decision.detail)


@given(perturbed())
def test_a_non_finite_input_fails_as_a_tensor_too(case):
    """The same inputs as float64 torch tensors (the checks read tensors on any device)."""
    import torch

    kind, arguments, argument, positions = case
    if isinstance(arguments[argument], list):
        arguments[argument] = torch.tensor(arguments[argument], dtype=torch.float64)
    decision = decide(kind, arguments)
    assert not decision.passed
    assert decision.detail["non_finite"][0]["argument"] == argument
