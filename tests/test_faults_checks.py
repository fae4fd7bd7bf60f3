"""Fault suite, checks and options (issue 35, items 1 and 9): one test per case, named so
that "What theorycheck guarantees" can cite it.

* Non-finite values never pass: a NaN or an infinity in a check's input is a failed decision
  naming that input (the property over every kind is tests/test_checks_nonfinite.py); through
  a claim it fails the claim, and a control failing only through it misfires.
* Unbounded or unchecked options end in one-line usage errors, never an INTERNALERROR, a
  MemoryError or a wrong listing; ``new`` validates every name before it writes anything.
* A claim file that fails to import is an error of that file: the other claims run and are
  reported, the report lists the file, and the run exits non-zero.
"""
import math
from pathlib import Path

import numpy as np
import pytest

from theorycheck import checks
from theorycheck.cli import main
from theorycheck.errors import UsageError
from theorycheck.report import load_results

ROOT = Path(__file__).resolve().parents[1]


# -- 1. non-finite values never pass ---------------------------------------------------------
def test_holds_of_nan_fails_naming_the_condition():
    decision = checks.holds("v", [math.nan, math.nan])
    assert not decision.passed and not decision.finite
    assert "condition has 2 of 2 entries NaN or infinite (first at flat index 0" in decision.summary()


def test_binomial_of_nan_trials_fails_naming_the_successes():
    decision = checks.binomial("v", np.full(20, np.nan), p=0.9)
    assert not decision.passed and not decision.finite
    assert "successes has 20 of 20 entries NaN or infinite" in decision.summary()


def test_close_to_an_infinite_reference_fails_naming_it():
    decision = checks.close("v", 1.0, math.inf, rtol=0.1)
    assert not decision.passed and "expected is inf" in decision.summary()


def test_bound_checks_against_an_infinite_bound_fail_naming_it():
    assert "bound is inf" in checks.at_most("v", [1.0, 2.0], math.inf).summary()
    assert "bound is -inf" in checks.at_least("v", [1.0, 2.0], -math.inf).summary()
    assert not checks.at_most("v", [1.0, 2.0], math.inf).passed


def test_an_infinite_tolerance_never_widens_a_check_into_a_pass():
    for decision in (checks.close("v", 0.0, 5.0, atol=math.inf),
                     checks.at_most("v", 5.0, 0.0, margin=math.inf),
                     checks.monotone("v", [3.0, 2.0, 1.0], increasing=True, tol=math.inf)):
        assert not decision.passed and "is inf" in decision.summary()


def test_wald_with_a_nan_sample_fails_instead_of_raising():
    decision = checks.wald("v", np.r_[np.linspace(1, 2, 40), np.nan], at_least=0.0)
    assert not decision.passed and "samples has 1 of 41" in decision.summary()


def test_a_rate_map_counts_non_finite_outcomes_as_failures_and_its_decision_fails():
    from theorycheck import maps

    outcomes = [np.ones(10), np.r_[np.ones(9), np.nan]]
    with pytest.warns(maps.MapWarning, match="1 non-finite outcomes"):
        m = maps.rate_map([0.0, 1.0], outcomes, level=0.5)
    assert m.successes == [10, 9] and m.non_finite == [0, 1]
    assert "1 non-finite outcomes counted as failures" in maps.map_summary(m.to_record())

    class Recorder:
        class conclusion:
            binomial = staticmethod(lambda name, s, **kw: checks.binomial(name, s, **kw))

    decision = maps.decide_inside(Recorder, "inside", m, lower=0.0, p=0.5)
    assert not decision.passed and "successes has 1 of 20" in decision.summary()


NONFINITE_CLAIM = '''
import math

@claim("toy.nan.holds", source="Lemma 1", statement="The flags hold.", provenance="stated",
       controls={{"nan": Control("reference", breaks=["flags"], description="flags made NaN")}})
def test_nan(tc):
    tc.conclusion.holds("flags", [{claim_value}] * 3 if tc.control is None else [math.nan] * 3)
'''


def test_a_nan_conclusion_fails_the_claim_and_misfires_its_control(pytester, claim_file):
    """Through ``tc``: a claim deciding on NaN fails (not passes); a control that fails only
    through a NaN misfires (a NaN is no evidence that it broke the statement)."""
    claim_file(NONFINITE_CLAIM.format(claim_value="math.nan"))
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-report-dir", "out")
    run.assert_outcomes(failed=2)
    (entry,) = load_results(pytester.path / "out/results.json")["claims"]
    assert entry["outcome"] == "failed"
    assert entry["decisions"][0]["detail"]["non_finite"][0]["argument"] == "condition"
    assert entry["controls"][0]["outcome"] == "misfired"
    run.stdout.fnmatch_lines(["*non-finite input, nothing compared: condition has 3 of 3*"])


# -- 9. unbounded or unchecked options -------------------------------------------------------
TOY = '''
@claim("toy.opt.square", source="Theorem 1", statement="3 squared is 9.", provenance="stated",
       controls={"wrong": Control("reference", breaks=["3^2"], description="against 10")})
def test_square(tc):
    tc.conclusion.close("3^2", 9.0, 10.0 if tc.control == "wrong" else 9.0, rtol=1e-12)
'''


@pytest.mark.parametrize("args, env, fragment", [
    (["--tc-threads", "100000"], {}, "--tc-threads='100000': expected an integer from 1 to 1024"),
    (["--tc-threads", "1" + "0" * 20], {}, "expected an integer from 1 to 1024"),
    (["--tc-threads", "1e20"], {}, "--tc-threads='1e20'"),
    ([], {"THEORYCHECK_SEED": "7" * 5000}, "(5002 characters): expected an integer from 0 to "
                                           "9223372036854775807"),
    (["--tc-seed", str(2**63)], {}, "expected an integer from 0 to 9223372036854775807"),
])
def test_out_of_range_threads_and_seeds_are_one_line_usage_errors(pytester, claim_file, args, env,
                                                                   fragment, monkeypatch):
    claim_file(TOY)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tc-no-report", *args)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in run.errlines if line.strip()]
    assert len(errors) == 1 and fragment in errors[0] and "INTERNALERROR" not in run.stdout.str()


def test_runtime_refuses_a_seed_or_thread_count_out_of_range():
    from theorycheck.runtime import Runtime, RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match="threads must be an integer from 1 to 1024"):
        Runtime(threads=10**20)
    with pytest.raises(RuntimeConfigError, match="seed must be an integer from 0 to"):
        Runtime(seed=2**63)


def test_sweep_refuses_more_seeds_than_it_can_run_before_listing_them(capsys):
    from theorycheck.sweep import MAX_SWEEP_SEEDS, parse_seeds

    with pytest.raises(UsageError, match=f"more than {MAX_SWEEP_SEEDS} seeds"):
        parse_seeds("0-99999999")
    with pytest.raises(UsageError, match="expected an integer from 0 to"):
        parse_seeds("1" * 5000)
    with pytest.raises(SystemExit, match="theorycheck sweep: seeds '0-1000': more than 1000 seeds"):
        main(["sweep", "--seeds", "0-1000", "--out", "unused"])
    assert len(parse_seeds(f"0-{MAX_SWEEP_SEEDS - 1}")) == MAX_SWEEP_SEEDS


def test_diff_refuses_a_negative_limit(capsys):
    baseline = str(ROOT / "reports" / "baseline-quick.json")
    with pytest.raises(SystemExit, match="theorycheck diff: limit must be >= 0"):
        main(["diff", baseline, baseline, "--limit", "-3"])
    assert "more" not in capsys.readouterr().out


@pytest.mark.parametrize("paperkey, name, fragment", [
    ("abc24", "a" * 300, "the name has 300 characters; at most 100"),
    ("a" * 300, "ok", "the paper key has 300 characters; at most 100"),
    ("abc24", "Bad-Name", "must be a lower-case identifier"),
])
def test_new_validates_every_name_before_writing_anything(tmp_path, paperkey, name, fragment):
    claims = tmp_path / "claims"
    with pytest.raises(SystemExit, match=fragment):
        main(["new", paperkey, name, "--claims-dir", str(claims)])
    assert not claims.exists()


# -- 9. a claim file that fails to import -----------------------------------------------------
def test_a_claim_file_that_fails_to_import_is_reported_and_the_others_run(pytester, claim_file):
    claim_file(TOY, "test_good")
    pytester.makepyfile(test_broken="from theorycheck import claim\ndef test_x(:\n")
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-report-dir", "out")
    run.assert_outcomes(passed=1, xfailed=1, errors=1)
    assert run.ret == pytest.ExitCode.TESTS_FAILED
    results = load_results(pytester.path / "out/results.json")
    assert [c["id"] for c in results["claims"]] == ["toy.opt.square"]
    (error,) = results["collection_errors"]
    assert error["path"] == "test_broken.py" and "SyntaxError" in error["message"]
    assert results["partial"] and results["partial_reason"] == "1 file failed to import"
    report = (pytester.path / "out/report.html").read_text()
    assert "<code>test_broken.py</code> failed to import" in report
