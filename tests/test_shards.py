"""Shards by recorded durations, a cache shared by concurrent writers, and the merge of the
shards' runs: merged = unsharded (verdicts and records)."""
import json
import multiprocessing
import sys

import numpy as np
import pytest

from theorycheck.cache import DiskCache
from theorycheck.cli import main
from theorycheck.errors import UsageError
from theorycheck.report.costs import cost_markdown
from theorycheck.results_layout import unit_of
from theorycheck.shards import (computed_runs, cost_rows, merge_results, parse_shard, schedule,
                                unit_durations, warm_commands, warm_plan)

SHARED = '''
from theorycheck import shared_run


@shared_run(sizes={"quick": {"n": 50}, "full": {"n": 50}})
def draws(run):
    """Data two claims in different files share."""
    return run.rng("draws").standard_normal(run.sizes["n"])
'''

CLAIM = '''
from theorycheck import Control, claim
from claims.toy.common import draws


@claim("toy.thm{i}.mean", source="Theorem {i}", statement="The mean is small.", provenance="stated",
       controls={{"shifted": Control("reference", breaks=["mean"], description="the draws shifted by one")}})
def test_mean_{i}(tc):
    """The mean of the shared draws is below a half in absolute value (a toy)."""
    x = tc.use(draws) + (1.0 if tc.control == "shifted" else 0.0) + {i} * 0.01
    tc.conclusion.at_most("mean", abs(x.mean()), 0.5)
'''


@pytest.fixture
def project(pytester):
    (pytester.path / "claims" / "toy").mkdir(parents=True)
    (pytester.path / "claims" / "__init__.py").write_text("")
    (pytester.path / "claims" / "toy" / "__init__.py").write_text("")
    (pytester.path / "claims" / "toy" / "common.py").write_text(SHARED)
    for i in range(1, 5):
        (pytester.path / "claims" / "toy" / f"test_c{i}.py").write_text(CLAIM.format(i=i))
    return pytester


def run(project, folder, *args):
    result = project.runpytest_subprocess("claims", "-p", "no:cacheprovider", "--tc-report-dir",
                                          folder, "--tc-cache-dir", "shared-cache", *args)
    return result, json.loads((project.path / folder / "results.json").read_text())


def records(results):
    return {c["id"]: (c["outcome"], [(d["name"], d["measured"]) for d in c["decisions"]],
                      sorted((k["name"], k["outcome"]) for k in c["controls"])) for c in results["claims"]}


def test_two_shards_merged_equal_the_unsharded_run(project):
    _, whole = run(project, "whole")
    first, one = run(project, "one", "--tc-shard", "1/2", "--tc-durations", "whole/results.json")
    second, two = run(project, "two", "--tc-shard", "2/2", "--tc-durations", "whole/results.json")
    counts = [r.parseoutcomes() for r in (first, second)]
    assert sum(c["passed"] for c in counts) == 4 and sum(c["xfailed"] for c in counts) == 4
    assert all(c["passed"] == c["xfailed"] for c in counts)        # each claim beside its control
    assert not {c["id"] for c in one["claims"]} & {c["id"] for c in two["claims"]}
    assert one["partial"] and one["shard"] == "1/2"
    assert main(["merge", str(project.path / "one"), str(project.path / "two"),
                 "--out", str(project.path / "merged")]) == 0
    merged = json.loads((project.path / "merged" / "results.json").read_text())
    assert merged["partial"] is False and merged["summary"] == whole["summary"]
    assert records(merged) == records(whole)
    assert (project.path / "merged" / "report.html").exists()


def test_merge_refuses_runs_of_other_settings_and_conflicting_verdicts():
    base = {"schema_version": 5, "tier": "quick", "device": "cpu", "dtype": "float64", "seed": 0,
            "claims": [{"id": "a.b.c", "outcome": "passed", "controls": []}]}
    with pytest.raises(UsageError, match=r"differ in \['seed'\]"):
        merge_results([base, dict(base, seed=1)])
    with pytest.raises(UsageError, match="passed in one run and failed in another"):
        merge_results([base, dict(base, claims=[{"id": "a.b.c", "outcome": "failed", "controls": []}])])


def test_costs_recorded_per_case_and_tabled(project, capsys):
    """Every case records its CPU seconds and resident peak; the claim sums them with its
    controls; the markdown table and plan are generated from the run (``schedule --markdown``)."""
    _, whole = run(project, "whole")
    for claim in whole["claims"]:
        cases = [claim, *claim["controls"]]
        assert all(case["cpu_s"] >= 0 for case in cases)
        assert claim["cost"]["cpu_s"] == pytest.approx(sum(case["cpu_s"] for case in cases), abs=1e-3)
        if all(case["peak_rss_mb"] is not None for case in cases):   # Linux reports it
            assert claim["cost"]["peak_rss_mb"] == max(case["peak_rss_mb"] for case in cases) > 0
    durations = unit_durations(whole)
    assert durations == {f"claims/toy/test_c{i}.py::test_mean_{i}": c["cost"]["cpu_s"] or c["wall_s"]
                         for i, c in zip(range(1, 5), whole["claims"])}
    assert unit_durations({"claims": [{"module": "claims.x.test_a", "function": "test_f", "wall_s": 3.0}]}) \
        == {"claims/x/test_a.py::test_f": 3.0}                          # a run without costs
    rows = cost_rows(whole)
    assert not any(r["from_disk"] for r in rows)                # one process: computed, then memo
    assert [r["wall_s"] for r in rows] == sorted((r["wall_s"] for r in rows), reverse=True)
    table = cost_markdown(whole, workers=2, top=3)
    assert "| toy | 4 |" in table and "The 3 costliest claims" in table and "| 2 |" in table
    assert main(["schedule", str(project.path / "whole"), "--workers", "2", "--markdown"]) == 0
    assert "Every claim" in capsys.readouterr().out


def test_warm_plan_commands_fill_the_cache_the_claims_then_read(project, capsys):
    """Phase 1 of the warm plan: the one shared run the claims computed, as a `theorycheck run`
    command; run into a fresh cache, phase 2 (the claims) reads it from disk, same records --
    also at --tc-threads 2 (the cache key holds the threads: the run records them and the
    commands pass them on)."""
    _, whole = run(project, "whole", "--tc-threads", "2")
    assert whole["threads"] == 2
    runs = computed_runs(whole)
    assert [r["target"] for r in runs] == ["claims.toy.common:draws"] and runs[0]["cpu_s"] >= 0
    plan = warm_plan(whole, workers=2)
    assert len(plan["phase1"]) == 2 and sum(len(b["units"]) for b in plan["phase2"]) == 4
    assert plan["makespan"] >= max(b["seconds"] for b in plan["phase2"])
    [command] = warm_commands(whole, "warm-cache")
    assert command.startswith("theorycheck run claims.toy.common:draws --tier quick --seed 0")
    assert " --threads 2 " in command
    filled = project.run(sys.executable, "-m", "theorycheck", *command.split()[1:])   # as a user runs it
    assert filled.ret == 0 and "computed" in filled.stdout.str()
    result = project.runpytest_subprocess("claims", "-p", "no:cacheprovider", "--tc-report-dir", "warm",
                                          "--tc-cache-dir", "warm-cache", "--tc-threads", "2")
    assert result.ret == 0
    warm = json.loads((project.path / "warm" / "results.json").read_text())
    sources = {u["source"] for c in warm["claims"] for u in c["shared_runs"]}
    assert sources == {"disk", "memo"} and records(warm) == records(whole)
    # the entry kept the cost of its computation: the resumed run counts it where a whole run would
    assert not any(r["from_disk"] for r in cost_rows(warm))
    assert [r["target"] for r in computed_runs(warm)] == ["claims.toy.common:draws"]
    first = next(c for c in warm["claims"] if any(u["source"] == "disk" for u in c["shared_runs"]))
    assert next(r for r in cost_rows(warm) if r["claim"] == first["id"])["cpu_s"] \
        >= first["cost"]["cpu_s"] + computed_runs(warm)[0]["cpu_s"] - 1e-9
    assert main(["schedule", str(project.path / "whole"), "--warm", "--workers", "2"]) == 0
    assert "phase1: shared runs" in capsys.readouterr().out


def test_longest_first_schedule_and_shard_parsing():
    durations = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 3.0, "e": 2.0}
    plan = schedule(list(durations), durations, 2)
    assert [b["seconds"] for b in plan] == [9.0, 8.0] or sorted(b["seconds"] for b in plan) == [8.0, 9.0]
    assert sorted(u for b in plan for u in b["units"]) == sorted(durations)
    assert unit_of("claims/x/test_a.py::test_f[control-c]") == "claims/x/test_a.py::test_f"
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/2", "3/2", "two"):
        with pytest.raises(UsageError, match="expected I/N"):
            parse_shard(bad)


def _write_many(root, key, fill, count):
    cache = DiskCache(root)
    for _ in range(count):
        cache.store(key, np.full(200_000, fill), label="race")


def test_two_writers_racing_on_one_key_never_leave_a_torn_entry(tmp_path):
    """Hosts sharing a cache directory: entries are written to a temporary file and renamed,
    and checksummed, so a reader sees one writer's whole value or none."""
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_many, args=(tmp_path, "k" * 64, fill, 25)) for fill in (1.0, 2.0)]
    for w in writers:
        w.start()
    cache, seen = DiskCache(tmp_path), set()
    while any(w.is_alive() for w in writers):
        hit, value = cache.load("k" * 64)
        if hit:
            assert value.shape == (200_000,) and np.unique(value).size == 1
            seen.add(float(value[0]))
    for w in writers:
        w.join()
        assert w.exitcode == 0
    hit, value = cache.load("k" * 64)
    assert hit and float(value[0]) in (1.0, 2.0) and seen <= {1.0, 2.0}
    assert not list(tmp_path.rglob("*.tmp"))
