"""The rules that decide a claim case and a negative control, one pytester run per rule.

A control fails as expected only when a conclusion it declares to break fails with finite
values, with a failed precondition for kind ``hypothesis`` and every precondition holding for
the other kinds; any other failure is a ControlMisfire (the suite fails), no failure is a
strict XPASS (the suite fails).
"""
import pytest

from theorycheck.report import load_results

#: one claim whose control can fail its precondition "assumption" and/or its conclusions
#: "bound" (value ``bound``) and "other" (value ``other``); the claim's own case passes
TEMPLATE = '''
import math

@claim("toy.rule.case", source="Lemma 1", statement="A bound holds.", provenance="derived",
       controls={{"k": Control({kind!r}, breaks={breaks!r}, description="a perturbation")}})
def test_case(tc):
    perturbed = tc.control is not None
    tc.precondition.holds("assumption", not (perturbed and {pre_fails}))
    tc.conclusion.at_most("bound", {bound} if perturbed else 0.0, 1.0)
    tc.conclusion.at_most("other", {other} if perturbed else 0.0, 1.0)
'''


def assert_in_output(run, error: str, message: str) -> None:
    """The run's output names the error class and carries the message (verbatim)."""
    out = run.stdout.str()
    assert error in out and message in out, out[-3000:]


def run_control(pytester, claim_file, *, kind="reference", breaks=("bound",), pre_fails=False,
                bound="2.0", other="0.0"):
    """Run the template with the control configured; return (pytest run, control record)."""
    claim_file(TEMPLATE.format(kind=kind, breaks=list(breaks), pre_fails=pre_fails, bound=bound,
                               other=other))
    run = pytester.runpytest("-p", "no:cacheprovider")
    (entry,) = load_results(pytester.path / "reports/latest/results.json")["claims"]
    assert entry["outcome"] == "passed"
    return run, entry["controls"][0]


@pytest.mark.parametrize("kind, pre_fails", [("reference", False), ("dynamics", False),
                                             ("statement", False), ("hypothesis", True)])
def test_control_breaking_its_named_conclusion_fails_as_expected(pytester, claim_file, kind,
                                                                 pre_fails):
    run, control = run_control(pytester, claim_file, kind=kind, pre_fails=pre_fails)
    run.assert_outcomes(passed=1, xfailed=1)
    assert control["outcome"] == "failed_as_expected" and control["failed_conclusions"] == ["bound"]
    assert control["kind"] == kind and control["breaks"] == ["bound"]
    assert control["failed_preconditions"] == (["assumption"] if pre_fails else [])


def test_control_failing_only_a_precondition_misfires(pytester, claim_file):
    run, control = run_control(pytester, claim_file, kind="hypothesis", pre_fails=True, bound="0.0")
    run.assert_outcomes(passed=1, failed=1)
    assert_in_output(run, "ControlMisfire", "failed only on preconditions ['assumption']")
    assert control["outcome"] == "misfired" and control["error_kind"] == "control"


def test_hypothesis_control_leaving_the_preconditions_holding_misfires(pytester, claim_file):
    run, control = run_control(pytester, claim_file, kind="hypothesis", pre_fails=False)
    run.assert_outcomes(passed=1, failed=1)
    assert_in_output(run, "ControlMisfire", "hypothesis control left every precondition holding")
    assert control["outcome"] == "misfired" and control["failed_conclusions"] == ["bound"]


def test_other_kind_violating_a_precondition_misfires(pytester, claim_file):
    run, control = run_control(pytester, claim_file, kind="dynamics", pre_fails=True)
    run.assert_outcomes(passed=1, failed=1)
    assert_in_output(run, "ControlMisfire", "dynamics control also failed the preconditions")
    assert control["outcome"] == "misfired"


def test_breaking_an_undeclared_conclusion_misfires(pytester, claim_file):
    run, control = run_control(pytester, claim_file, breaks=["bound"], bound="0.0", other="5.0")
    run.assert_outcomes(passed=1, failed=1)
    assert_in_output(run, "ControlMisfire", "broke ['other'] but declares it breaks ['bound']")
    assert control["outcome"] == "misfired" and control["failed_conclusions"] == ["other"]


def test_a_nan_failure_does_not_count(pytester, claim_file):
    run, control = run_control(pytester, claim_file, bound="math.nan")
    run.assert_outcomes(passed=1, failed=1)
    assert_in_output(run, "ControlMisfire", "failed only through NaN/inf values in ['bound']")
    assert control["outcome"] == "misfired" and control["failed_conclusions"] == []


def test_control_that_fails_nothing_passed_unexpectedly(pytester, claim_file):
    run, control = run_control(pytester, claim_file, bound="0.0")
    run.assert_outcomes(passed=1, failed=1)
    assert control["outcome"] == "passed_unexpectedly"


def test_breaks_naming_no_recorded_conclusion_is_a_declaration_error(pytester, claim_file):
    run, control = run_control(pytester, claim_file, breaks=["typo"])
    run.assert_outcomes(passed=1, failed=1)
    assert_in_output(run, "DeclarationError", "declares it breaks ['typo'], which the case never "
                              "recorded as a conclusion")
    assert control["outcome"] == "error" and control["error_kind"] == "declaration"


def test_tc_check_without_a_role_is_a_declaration_error(pytester, claim_file):
    claim_file('''
@claim("toy.rule.norole", source="Lemma 1", statement="s", provenance="stated",
       controls={"k": Control("reference", breaks=["x"], description="d")})
def test_norole(tc):
    tc.check.holds("x", True)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    run.assert_outcomes(failed=2)
    run.stdout.fnmatch_lines(["*DeclarationError: tc.check.holds: a decision needs a role; use "
                              "tc.conclusion.holds(...)*tc.precondition.holds(...)*"])


def test_claim_with_a_failed_precondition_has_its_hypotheses_not_met(pytester, claim_file):
    claim_file('''
@claim("toy.rule.unmet", source="Lemma 1", statement="s", provenance="inferred",
       controls={"k": Control("reference", breaks=["bound"], description="d")})
def test_unmet(tc):
    tc.precondition.holds("assumption", False)
    tc.conclusion.at_most("bound", 2.0 if tc.control else 0.0, 1.0)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    assert_in_output(run, "HypothesesNotMet", "the hypotheses do not hold on this instance")
    (entry,) = load_results(pytester.path / "reports/latest/results.json")["claims"]
    assert entry["outcome"] == "hypotheses_not_met" and entry["error_kind"] == "failure"
    assert entry["failed_preconditions"] == ["assumption"] and entry["failed_conclusions"] == []
    md = (pytester.path / "reports/latest/report.md").read_text()
    assert "### Hypotheses not met on the instance" in md and "HYPOTHESES NOT MET" in md


STRICT = '''
import numpy as np


@claim("toy.strict.contraction", source="Theorem 1", statement="The error contracts at rate 0.8.",
       provenance="derived",
       controls={"fast": Control("statement", breaks=["contraction"], description="rate 0.5")})
def test_contraction(tc):
    t = np.arange(400)
    bound = (0.5 if tc.control == "fast" else 0.8) ** t
    stalled = np.maximum(0.8**t, 1e-16)
    tc.conclusion.at_most("contraction", stalled, bound, margin=tc.roundoff(100 * 400))
'''


def test_strict_mode_fails_a_check_that_cannot_discriminate(pytester, claim_file):
    """The contraction bound passes on its margin below float64 resolution: a warning in the
    report by default, an error of kind numerics under --tc-strict."""
    claim_file(STRICT)
    run = pytester.runpytest("-p", "no:cacheprovider")
    run.assert_outcomes(passed=1, xfailed=1)
    run.stdout.fnmatch_lines(["*warning: toy.strict.contraction: 'contraction' cannot discriminate*"])
    (entry,) = load_results(pytester.path / "reports/latest/results.json")["claims"]
    assert "float64 resolution" in entry["decisions"][0]["warnings"][0]
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-strict", "--tc-report-dir", "strict")
    run.assert_outcomes(failed=2)  # the control's window reaches the floor too
    (entry,) = load_results(pytester.path / "strict/results.json")["claims"]
    assert entry["outcome"] == "error" and entry["error_kind"] == "numerics"
    assert "cannot discriminate" in entry["message"]


LOOKALIKE = '''
@claim("toy.look.alike", source="Theorem 1", statement="The run converges below 1.",
       provenance="derived",
       controls={"rerun": Control("dynamics", breaks=["limit"],
                                  description="reads the claim's run under another label")})
def test_alike(tc):
    value = 0.5  # the same 'run' for the claim and the control
    tc.record("limit", value)
    tc.conclusion.at_most("limit", value, 0.1 if tc.control else 1.0)
'''


def test_a_dynamics_control_with_the_claims_numbers_is_flagged(pytester, claim_file):
    claim_file(LOOKALIKE)
    run = pytester.runpytest("-p", "no:cacheprovider")
    assert run.ret == 0
    run.stdout.fnmatch_lines(["*warning: toy.look.alike ?control rerun?: every measured value "
                              "equals the claim's*"])
    (entry,) = load_results(pytester.path / "reports/latest/results.json")["claims"]
    results = load_results(pytester.path / "reports/latest/results.json")
    assert any("must compute its own run" in line for line in results["run_findings"])
    assert entry["controls"][0]["decisions"][0]["warnings"] == []   # its verdict left as it was
    assert pytester.runpytest("-p", "no:cacheprovider", "--tc-strict").ret == 1
