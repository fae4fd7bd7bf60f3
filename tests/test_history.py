"""Run history, baselines and the comparison of runs (``theorycheck.history``, the plugin's run
folders, ``theorycheck diff`` / ``baseline``, ``--tc-baseline``)."""
import json
import os

import pytest

from theorycheck import history
from theorycheck.cli import main
from theorycheck.report import load_results

#: a claim whose measurement depends on the base seed, and a control that breaks it
SEEDED = '''
from theorycheck import Control, claim


@claim("toy.thm1.{name}", source="Theorem 1", statement="A standard normal draw is below 10.",
       provenance="stated",
       controls={"low": Control("statement", breaks=["below"], description="below -10 instead")})
def test_{name}(tc):
    draw = float(tc.rng("data").standard_normal())
    tc.record("draw", draw)
    tc.record("constant", 2.0)
    tc.conclusion.at_most("below", draw, -10.0 if tc.control == "low" else 10.0)
'''


def seeded(name: str) -> str:
    """The SEEDED claim under the id ``toy.thm1.<name>`` (ids are unique per process)."""
    return SEEDED.replace("{name}", name)


def run_dirs(pytester) -> list:
    return sorted((pytester.path / "reports/runs").iterdir())


def test_every_run_gets_a_folder_and_latest_follows_the_complete_ones(pytester):
    pytester.makepyfile(test_toy=seeded("folders"))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, xfailed=1)
    (first,) = run_dirs(pytester)
    assert first.name.endswith("-quick-seed0")
    latest = pytester.path / "reports/latest"
    assert latest.is_symlink() and latest.resolve() == first.resolve()
    assert (pytester.path / "reports/LATEST").read_text().strip() == f"runs/{first.name}"
    results = load_results(latest / "results.json")
    assert results["partial"] is False and results["partial_reason"] is None
    assert results["claims"][0]["wall_s"] >= results["claims"][0]["duration_s"]
    assert all(d["warnings"] == [] for d in results["claims"][0]["decisions"])
    assert results["seed_sweep"] == [] and results["baseline_diff"] == []
    assert "commit" in results  # None outside a git checkout

    run = pytester.runpytest("-p", "no:cacheprovider", "-k", "not low", "--tc-seed", "3")
    run.stdout.fnmatch_lines(["*partial run (-k not low): reports/latest-partial points at it; "
                              "reports/latest still shows*", "report: *report.html"])
    assert len(run_dirs(pytester)) == 2 and latest.resolve() == first.resolve()
    partial = [d for d in run_dirs(pytester) if d.name.endswith("-seed3-partial")]
    assert load_results(partial[0] / "results.json")["partial"] is True
    assert (pytester.path / "reports/latest-partial").resolve() == partial[0].resolve()
    assert (pytester.path / "reports/LATEST-PARTIAL").read_text().strip() == f"runs/{partial[0].name}"


def test_a_path_below_the_claims_folder_is_a_partial_run(pytester):
    pytester.mkpydir("claims")
    (pytester.path / "claims/test_toy.py").write_text(seeded("subset"))
    (pytester.path / "claims/test_other.py").write_text(seeded("other"))
    # in a subprocess: a process that already imported this project's own ``claims`` package
    # (an xdist worker of the suite) would not import the toy one
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "claims/test_toy.py")
    (only,) = run_dirs(pytester)
    assert only.name.endswith("-partial") and not (pytester.path / "reports/latest").exists()
    assert (pytester.path / "reports/latest-partial/results.json").is_file()  # a fresh clone's first run
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "claims")
    assert (pytester.path / "reports/latest/results.json").is_file()


def test_latest_folder_of_the_old_layout_is_kept_as_a_run(tmp_path):
    root = tmp_path / "reports"
    (root / "latest").mkdir(parents=True)
    (root / "latest" / "results.json").write_text("{}")
    run = history.new_run_dir(root, "20260101T000000Z-quick-seed0")
    history.point_latest(root, run)
    legacy = [d for d in (root / "runs").iterdir() if d.name.endswith("-legacy")]
    assert len(legacy) == 1 and (legacy[0] / "results.json").is_file()
    assert os.readlink(root / "latest") == "runs/20260101T000000Z-quick-seed0"
    assert history.new_run_dir(root, "20260101T000000Z-quick-seed0").name == "20260101T000000Z.2-quick-seed0"


def test_diff_of_two_seeds_lists_what_moved_and_warns_that_seeds_differ(pytester, capsys):
    pytester.makepyfile(test_toy=seeded("draw"))
    pytester.runpytest("-p", "no:cacheprovider", "--tc-report-dir", "a")
    pytester.runpytest("-p", "no:cacheprovider", "--tc-report-dir", "b", "--tc-seed", "1")
    capsys.readouterr()
    assert main(["diff", str(pytester.path / "a"), str(pytester.path / "b/results.json"),
                 "--json", str(pytester.path / "d.json")]) == 0
    out = capsys.readouterr().out
    assert "warning: the seeds differ (0 vs 1)" in out
    assert "toy.thm1.draw  measurement draw:" in out and "moved" in out
    assert "measurement constant" not in out  # unchanged values are not listed
    changes = json.loads((pytester.path / "d.json").read_text())
    assert {"id", "what", "old", "new", "rel_change"} <= set(changes[0])
    main(["diff", str(pytester.path / "a"), str(pytester.path / "a")])
    assert "0 changed outcomes, 0 values moved" in capsys.readouterr().out


def test_diff_reports_changed_outcomes_and_missing_claims():
    def run(outcome, value, ids=("p.a.b",)):
        return {"kind": history.DIGEST_KIND, "seed": 0, "tier": "quick",
                "claims": {i: {"outcome": outcome, "values": {"measurement m": value},
                               "controls": {"c": {"outcome": "failed_as_expected", "values": {}}}}
                           for i in ids}}

    changes = history.diff_digests(run("passed", 1.0), run("failed", 1.04))
    assert [c["what"] for c in changes] == ["outcome"]  # 4% is within the default 5%
    changes = history.diff_digests(run("passed", 1.0), run("passed", 1.2, ids=("p.a.b", "p.a.c")))
    assert {(c["id"], c["what"]) for c in changes} == {("p.a.b", "measurement m"), ("p.a.c", "present")}
    assert changes[0]["rel_change"] == pytest.approx(0.2)
    assert history.diff_digests(run("passed", 1e-15), run("passed", 3e-15)) == []  # round-off
    assert history.diff_digests(run("passed", 1.0), run("passed", "nan"))[0]["rel_change"] is None
    partial = history.diff_digests(run("passed", 1.0, ids=("p.a.b", "p.a.c")), run("passed", 1.0),
                                   only_new=True)
    assert partial == []


def test_a_run_shows_drift_against_its_baseline_as_a_warning(pytester, capsys):
    pytester.makepyfile(test_toy=seeded("drift"))
    pytester.runpytest("-p", "no:cacheprovider")
    assert main(["baseline", str(pytester.path / "reports/latest"),
                 "--out", str(pytester.path / "reports/baseline-quick.json")]) == 0
    baseline = json.loads((pytester.path / "reports/baseline-quick.json").read_text())
    assert baseline["kind"] == history.DIGEST_KIND and "toy.thm1.drift" in baseline["claims"]
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-seed", "5")  # default baseline file
    assert run.ret == 0  # drift is a warning, not a failure
    run.stdout.fnmatch_lines(["*drift against the baseline*", "*differences from baseline-quick.json*",
                              "*note: the seeds differ (0 vs 5)*", "*toy.thm1.drift  measurement draw*"])
    results = load_results(pytester.path / "reports/latest/results.json")
    assert any(c["what"] == "measurement draw" for c in results["baseline_diff"])
    assert results["baseline"]["path"] == "reports/baseline-quick.json"
    for name in ("results.json", "report.md", "report.html"):   # no absolute path in a report
        assert str(pytester.path) not in (pytester.path / "reports/latest" / name).read_text()
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-baseline", "none")
    assert "drift against the baseline" not in run.stdout.str()
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-baseline", "missing.json")
    assert run.ret == pytest.ExitCode.USAGE_ERROR


def test_the_committed_quick_baseline_is_a_digest_of_every_claim():
    """reports/baseline-quick.json: the digest of a complete quick-tier run at seed 0."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    baseline = history.load_comparable(root / "reports/baseline-quick.json")
    assert baseline["tier"] == "quick" and baseline["seed"] == 0 and not baseline["partial"]
    assert len(baseline["claims"]) >= 100
    assert all(c["outcome"] == "passed" for c in baseline["claims"].values())


def test_the_committed_full_baseline_is_a_digest_of_the_whole_full_tier():
    """reports/baseline-full.json: the digest of the full tier run whole at seed 0 at one frozen
    commit (benchmarks/full_tier.sh); every claim passed (a declared discrepancy passes on its
    counterexample) and every control failed as declared (issue 33)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    baseline = history.load_comparable(root / "reports/baseline-full.json")
    assert baseline["tier"] == "full" and baseline["seed"] == 0 and not baseline["partial"]
    assert len(baseline["claims"]) >= 100
    assert {key for key, c in baseline["claims"].items() if c["outcome"] != "passed"} == set()
    assert {(key, name) for key, c in baseline["claims"].items()
            for name, control in c["controls"].items() if control["outcome"] != "failed_as_expected"} == set()
