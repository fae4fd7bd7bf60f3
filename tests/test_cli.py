"""The command line and the run's terminal output: one-line errors with a non-zero exit, the
claims manifest behind ``theorycheck list``, seed sweeps, the scaffold against the project's
own conformance suite, the summary counting what pytest counts, ``-ra`` without the
controls' XFAIL lines."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from theorycheck import sweep
from theorycheck.cli import main

ROOT = Path(__file__).resolve().parents[1]

CLAIM = '''
from theorycheck import Control, claim


@claim("toy.thm1.{name}", source="Theorem 1", statement="3 squared is 9.", provenance="stated",
       controls={{"wrong": Control("reference", breaks=["3^2"], description="against 10")}})
def test_{name}(tc):
    tc.conclusion.close("3^2", 9.0, 10.0 if tc.control == "wrong" else 9.0, rtol=1e-12)
'''


def cli(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    import os

    environment = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "theorycheck.cli", *args], cwd=cwd,
                          capture_output=True, text=True, env=environment)


def one_line_error(run: subprocess.CompletedProcess, *fragments: str) -> None:
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert all(f in lines[0] for f in fragments), lines[0]


@pytest.mark.parametrize("content, fragment", [("{not json", "not a valid results file"),
                                                ('{"claims": 3}', "does not fit the schema")])
def test_report_and_diff_of_a_malformed_results_file_is_one_line(tmp_path, content, fragment):
    bad = tmp_path / "results.json"
    bad.write_text(content)
    one_line_error(cli("report", str(bad)), "theorycheck report", fragment)
    one_line_error(cli("diff", str(bad), str(bad)), "theorycheck diff", str(bad))
    one_line_error(cli("report", str(tmp_path / "none.json")), "no results file")


def test_list_outside_a_project_is_one_line(tmp_path):
    one_line_error(cli("list", cwd=tmp_path), "no such path 'claims'", "project's root")


@pytest.mark.parametrize("args, env, fragment", [
    (["--tc-threads", "0"], {}, "--tc-threads='0': expected an integer from 1 to 1024"),
    (["--tc-threads", "two"], {}, "--tc-threads='two'"),
    ([], {"THEORYCHECK_SEED": "x"}, "THEORYCHECK_SEED='x': expected an integer from 0 to"),
    (["--tc-seed", "-1"], {}, "--tc-seed='-1'"),
    (["--tc-tier", "medium"], {}, "unknown tier 'medium'"),
    ([], {"THEORYCHECK_DEVICE": "tpu"}, "unknown device 'tpu'"),
])
def test_bad_run_options_are_one_line_usage_errors(pytester, args, env, fragment, monkeypatch):
    pytester.makepyfile(test_toy=CLAIM.format(name="options"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in run.errlines if line.strip()]
    assert len(errors) == 1 and fragment in errors[0], run.errlines


def test_list_answers_from_the_manifest_and_notices_changed_files(pytester):
    claims = pytester.mkpydir("claims")
    (claims / "test_a.py").write_text(CLAIM.format(name="listed"))
    first = cli("list", "claims", cwd=pytester.path)  # no manifest yet: collects, writes it
    assert first.returncode == 0 and "toy.thm1.listed" in first.stdout
    manifest = json.loads((pytester.path / "reports/.manifest.json").read_text())
    assert list(manifest["modules"]) == ["claims/test_a.py"]
    probe = ("import sys; from theorycheck.cli import main; main(['list', 'claims']); "
             "print('imported torch' if 'torch' in sys.modules else 'no torch', "
             "'collected' if 'claims.test_a' in sys.modules else 'from the manifest')")
    out = subprocess.run([sys.executable, "-c", probe], cwd=pytester.path, capture_output=True,
                         text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout
    assert "toy.thm1.listed" in out and "no torch from the manifest" in out
    (claims / "test_b.py").write_text(CLAIM.format(name="added"))  # a new file: stale
    second = cli("list", "claims", cwd=pytester.path)
    assert "toy.thm1.added" in second.stdout and "2 claims, 2 negative controls" in second.stdout
    (claims / "test_b.py").unlink()
    assert "toy.thm1.added" not in cli("list", "claims", cwd=pytester.path).stdout


def test_run_summary_counts_what_pytest_counts(pytester):
    pytester.makepyfile(test_toy=CLAIM.format(name="counted"),
                        test_plain="def test_plain_failure():\n    assert False\n")
    run = pytester.runpytest("-p", "no:cacheprovider", "-ra")
    assert run.ret == pytest.ExitCode.TESTS_FAILED
    run.stdout.fnmatch_lines(["*pytest: 1 failed, 1 passed, 1 xfailed* -- RED (exit status 1)*",
                              "*1 claims (1 passed)*",
                              "*not counted among the claims: 1 failed or erroring tests: "
                              "test_plain.py::test_plain_failure*"])


def test_ra_summarises_the_controls_expected_failures(pytester):
    pytester.makepyfile(test_toy=CLAIM.format(name="quiet"))
    run = pytester.runpytest("-p", "no:cacheprovider", "-ra")
    assert not [line for line in run.outlines if line.startswith("XFAIL")]
    run.stdout.fnmatch_lines(["*1 expected failures (xfail: the negative controls failing as "
                              "they declare) not listed one by one; -rx lists them*"])
    run = pytester.runpytest("-p", "no:cacheprovider", "-rx")
    assert [line for line in run.outlines if line.startswith("XFAIL")]


def test_scaffold_passes_the_projects_own_conformance_suite(tmp_path):
    """``theorycheck new`` into an empty project, then pytest on the new claim and on a copy of
    tests/test_claims_conformance.py (unchanged): all green."""
    assert main(["new", "demo25", "contraction", "--claims-dir", str(tmp_path / "claims")]) == 0
    from tests.test_project_files import fill_in_citation

    fill_in_citation(tmp_path / "claims/demo25/__init__.py")
    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests/test_claims_conformance.py", tmp_path / "tests")
    (tmp_path / "tests/__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nxfail_strict = true\n')
    import os

    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                          "tests", "claims"], cwd=tmp_path, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert run.returncode == 0, run.stdout[-3000:]
    assert "xfailed" in run.stdout and "failed," not in run.stdout


def test_seed_ranges_parse_and_bad_ones_name_the_problem():
    assert sweep.parse_seeds("0-3,7") == [0, 1, 2, 3, 7]
    for bad in ("3-1", "x", "1-"):
        with pytest.raises(Exception, match="seeds"):
            sweep.parse_seeds(bad)


def _run(outcome: str, control: str = "failed_as_expected", trials: int | None = None) -> dict:
    decisions = [] if trials is None else [{
        "name": "rate", "kind": "binomial", "role": "conclusion", "passed": True, "measured": 1.0,
        "reference": 0.9, "tolerance": {"alpha": 0.05},
        "detail": {"trials": trials, "successes": trials}}]
    return {"claims": [{"id": "p.a.b", "outcome": outcome, "decisions": decisions,
                        "controls": [{"name": "c", "outcome": control, "decisions": []}]}]}


def test_sweep_compares_pass_rates_with_the_binomial_prediction():
    from scipy import stats

    from theorycheck.checks import binomial_size

    size = binomial_size(50, 0.9, 0.05)
    assert 0 < size <= 0.05
    # its rejection region at p: P[Bin(50, 0.9) <= c] for the largest c below alpha
    assert size == pytest.approx(max(v for v in stats.binom.cdf(range(51), 50, 0.9) if v < 0.05))
    one_failure = [_run("passed", trials=50)] * 19 + [_run("failed", trials=50)]
    claim, control = sweep.aggregate(one_failure)
    assert claim["predicted_pass_rate"] == pytest.approx(1 - size)
    assert claim["passes"] == 19 and claim["runs"] == 20 and not claim["flaky"]
    many = [_run("passed", trials=50)] * 14 + [_run("failed", trials=50)] * 6
    assert sweep.aggregate(many)[0]["flaky"]
    deterministic = [_run("passed")] * 19 + [_run("failed")]
    assert sweep.aggregate(deterministic)[0]["flaky"]  # predicted 1.0: any failure
    assert not control["flaky"] and control["failure_rate"] == 1.0
    leaky = sweep.aggregate([_run("passed")] * 19 + [_run("passed", "passed_unexpectedly")])[1]
    assert leaky["flaky"] and leaky["passes"] == 1 and leaky["predicted_pass_rate"] == 0.0
    assert {"id", "kind", "runs", "passes", "predicted_pass_rate", "flaky"} <= set(leaky)


def test_sweep_runs_each_seed_and_writes_the_aggregate(pytester):
    pytester.makepyfile(test_toy=CLAIM.format(name="swept"))
    run = cli("sweep", "--seeds", "0-1", "--out", "sw", "test_toy.py", cwd=pytester.path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "seed 0: pytest exit status 0" in run.stdout and "0 flaky" in run.stdout
    data = json.loads((pytester.path / "sw/sweep.json").read_text())
    assert data["seeds"] == [0, 1] and data["pytest_args"] == ["test_toy.py"]
    results = json.loads((pytester.path / "sw/results.json").read_text())
    (claim, control) = results["seed_sweep"]
    assert (claim["runs"], claim["passes"], control["failure_rate"]) == (2, 2, 1.0)


PROCESS_PROBE = '''
import os

from theorycheck import Control, claim

IMPORTS = globals().setdefault("IMPORTS", [])
IMPORTS.append(os.getpid())


@claim("toy.thm1.fresh", source="Theorem 1", statement="Each seed imports the claims afresh.",
       provenance="stated",
       controls={{"wrong": Control("reference", breaks=["one import"], description="against two")}})
def test_fresh(tc):
    with open("pids.txt", "a") as out:
        out.write(f"{{os.getpid()}} {{len(IMPORTS)}}\\n")
    if tc.runtime.seed == 2:
        os._exit(3)
    tc.conclusion.close("one import", float(len(IMPORTS)), 2.0 if tc.control else 1.0, rtol=1e-12)
'''


def test_sweep_runs_every_seed_in_a_fresh_process_and_survives_one_that_dies(pytester):
    """The seeds' processes come from a server that imported the heavy libraries once: each
    seed still gets a process of its own (a new pid, the claims imported once in it), and a
    seed whose process dies leaves the others' results and a line with its exit status."""
    pytester.makepyfile(test_probe=PROCESS_PROBE.format())
    run = cli("sweep", "--seeds", "1-3", "--out", "sw", "test_probe.py", cwd=pytester.path)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = (pytester.path / "pids.txt").read_text().split()
    pids, imports = lines[0::2], lines[1::2]
    assert len(set(pids)) == 3 and set(imports) == {"1"}
    assert "seed 2: pytest exit status 3" in run.stdout and "no results from seeds [2]" in run.stdout
    results = json.loads((pytester.path / "sw/results.json").read_text())
    assert results["seed_sweep"][0]["runs"] == 2 and results["seed_sweep"][0]["passes"] == 2


def test_sweep_counts_a_failed_deterministic_check_as_flaky_beside_a_binomial_one():
    """The review's seed-9 case: a claim with a binomial decision failed a deterministic
    every-run check; its binomial rate does not explain that failure."""
    failed_every_run = _run("failed", trials=50)
    failed_every_run["claims"][0]["decisions"].append(
        {"name": "every run grows", "kind": "holds", "role": "conclusion", "passed": False})
    claim = sweep.aggregate([_run("passed", trials=50)] * 19 + [failed_every_run])[0]
    assert claim["predicted_pass_rate"] < 1.0
    assert claim["deterministic_failures"] == 1 and claim["flaky"]
