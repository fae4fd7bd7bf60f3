"""Evidence classes of the controls (theorycheck.evidence), the rules on descriptions'
numerals, and the new declaration fields (nature, constants, calibration, single_evidence)."""
import pytest

from theorycheck import Control, claim
from theorycheck.claim import ClaimSpec
from theorycheck.conformance import numerals, unexplained_numerals
from theorycheck.errors import DeclarationError
from theorycheck.evidence import DISCRIMINATION, INDEPENDENT
from theorycheck.report import load_results

TWO_CONTROLS = '''
import numpy as np


@claim("toy.thm1.mean_small", source="Theorem 1", statement="The sample mean is below 1.",
       provenance="stated", constants={"stricter_bound": 0.01},
       calibration=["bound 1 from the statement; stricter bound picked for the test"],
       controls={"stricter": Control("statement", breaks=["mean"],
                                     description="the stronger bound stricter_bound = 0.01"),
                 "shifted_data": Control("reference", breaks=["mean"],
                                         description="samples of a new draw, shifted by 5",
                                         constants={"shift": 5}),
                 "shifted_numbers": Control("reference", breaks=["mean"],
                                            description="the claim's samples shifted by 5",
                                            constants={"shift": 5})})
def test_mean(tc):
    stream = ("data", "shifted") if tc.control == "shifted_data" else ("data",)
    x = tc.rng(*stream).uniform(0.0, 0.5, 100) + (5.0 if "shifted" in (tc.control or "") else 0.0)
    tc.conclusion.at_most("mean", x.mean(), 0.01 if tc.control == "stricter" else 1.0)
'''

ONLY_STRICTER = '''
@claim("toy.thm1.tight", source="Theorem 1", statement="Three squared is at most 10.",
       provenance="stated", nature="identity", {extra}
       controls={{"stricter": Control("statement", breaks=["bound"],
                                      description="the stronger statement at most 8")}})
def test_tight(tc):
    tc.conclusion.at_most("bound", 9.0, 8.0 if tc.control == "stricter" else 10.0)
'''


def results_of(pytester):
    return load_results(pytester.path / "reports" / "latest" / "results.json")


def test_a_control_that_draws_anew_is_independent_and_a_stricter_or_shifted_reading_is_not(
        pytester, claim_file):
    claim_file(TWO_CONTROLS)
    pytester.runpytest("-p", "no:cacheprovider", "--tc-strict").assert_outcomes(passed=1, xfailed=3)
    (entry,) = results_of(pytester)["claims"]
    evidence = {k["name"]: k["evidence"] for k in entry["controls"]}
    assert evidence == {"stricter": DISCRIMINATION, "shifted_data": INDEPENDENT,
                        "shifted_numbers": DISCRIMINATION}
    assert entry["independent_controls"] == 1
    assert entry["calibration"] == ["bound 1 from the statement; stricter bound picked for the test"]
    md = (pytester.path / "reports/latest/report.md").read_text()
    assert "Evidence: 1 of 3 controls independent." in md
    assert "[reference, independent: a draw from the random stream 'data/shifted'" in md


def test_a_claim_with_only_discrimination_checks_fails_strict_unless_it_says_why(pytester, claim_file):
    claim_file(ONLY_STRICTER.format(extra=""))
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-strict")
    assert run.ret != 0
    run.stdout.fnmatch_lines(["*toy.thm1.tight: no independent control*"])
    claim_file(ONLY_STRICTER.format(extra='single_evidence="an identity: nothing to perturb but '
                                          'the statement",'))
    pytester.runpytest("-p", "no:cacheprovider", "--tc-strict").assert_outcomes(passed=1, xfailed=1)
    (entry,) = results_of(pytester)["claims"]
    assert entry["independent_controls"] == 0 and entry["nature"] == "identity"
    md = (pytester.path / "reports/latest/report.md").read_text()
    assert "(declared: an identity: nothing to perturb but the statement)" in md
    assert "**identity**" in md


def test_numerals_in_control_descriptions_must_be_sizes_or_declared_constants():
    assert numerals("eta = 2.5 / m, x_1, W_{i,0}, n^-3, -250 and 1e-3, 10x") == {2.5, 250.0, 0.001}
    spec = ClaimSpec(id="toy.a.b", paper="toy", source="Lemma 3", statement="rate n^-2",
                     controls={}, provenance="stated", sizes={"quick": {"n": 64}, "full": {"n": 512}},
                     constants={"faster": 10.0})
    stale = Control("dynamics", breaks=["rate"], description="measured -250 on seed 0 at n = 64")
    assert unexplained_numerals(spec, stale) == [250.0]
    declared = Control("dynamics", breaks=["rate"], description="step 2.5 times larger, 10 times faster",
                       constants={"step_factor": 2.5})
    assert unexplained_numerals(spec, declared) == []


def test_new_declaration_fields_are_checked():
    with pytest.raises(DeclarationError, match="nature 'conjecture' is not one of"):
        claim("toy.a.b", source="s", statement="s", provenance="stated", nature="conjecture",
              controls={"c": Control("statement", breaks=["x"], description="d")})(lambda tc: None)
    with pytest.raises(DeclarationError, match="constants must map names to numbers"):
        claim("toy.a.c", source="s", statement="s", provenance="stated", constants={"a": "big"},
              controls={"c": Control("statement", breaks=["x"], description="d")})(lambda tc: None)
    assert "constants must map names to numbers" in Control(
        "statement", breaks=["x"], description="d", constants={"a": "x"}).problems()[0]
