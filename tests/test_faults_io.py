"""Faults and bad input on the file side (issue 35): nothing lost, nothing rewritten that
theorycheck did not make, a bad input file never costs the report.  One test per case; the
guarantees in docs/guarantees.md name them."""
import json
import math
import os
import pathlib

import numpy as np
import pytest

from theorycheck import shared_run
from theorycheck.cache import (CacheWarning, DiskCache, SharedRunCache, cache_from_options)
from theorycheck.errors import UsageError
from theorycheck.files import BadFileError, WriteError, atomic_write, read_json
from theorycheck.runtime import Runtime

RT = Runtime()
CALLS = []


@shared_run(scope="test")
def small_run(run, *, scale=1.0):
    CALLS.append(scale)
    return run.rng("x").standard_normal(4) * scale


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


def cache_at(root) -> SharedRunCache:
    return SharedRunCache(DiskCache(root))


def fail_writes_under(monkeypatch, root):
    """Make every write and delete under ``root`` fail as on a read-only folder (the tests
    may run as root, for whom chmod does not forbid writing)."""
    import tempfile

    root = str(root)
    mkstemp, unlink = tempfile.mkstemp, pathlib.Path.unlink

    def refuse_mkstemp(*args, dir=None, **kwargs):
        if dir is not None and str(dir).startswith(root):
            raise PermissionError(13, "Permission denied")
        return mkstemp(*args, dir=dir, **kwargs)

    def refuse_unlink(self, *args, **kwargs):
        if str(self).startswith(root):
            raise PermissionError(13, "Permission denied")
        return unlink(self, *args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", refuse_mkstemp)
    monkeypatch.setattr(pathlib.Path, "unlink", refuse_unlink)


# -- the I/O module -----------------------------------------------------------------------------
def test_atomic_write_leaves_the_old_file_whole_when_the_write_fails(tmp_path, monkeypatch):
    target = atomic_write(tmp_path / "results.json", '{"old": true}')

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(WriteError, match="results.json.*No space left"):
        atomic_write(target, '{"new": true}' * 1000)
    monkeypatch.undo()
    assert json.loads(target.read_text()) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]   # no temporary left


def test_atomic_write_writes_a_list_of_parts_in_turn(tmp_path):
    target = atomic_write(tmp_path / "entry.pkl", [b"header\n", b"payload"])
    assert target.read_bytes() == b"header\npayload"


def test_read_json_names_the_file_for_every_kind_of_bad_file(tmp_path):
    cases = {"missing.json": None, "truncated.json": '{"claims": [1, 2', "binary.json": b"\xff\xfe",
             "deep.json": "[" * 100_000 + "]" * 100_000}
    for name, content in cases.items():
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        elif content is not None:
            (tmp_path / name).write_text(content)
        with pytest.raises(BadFileError, match=name):
            read_json(tmp_path / name, "results file")
    (tmp_path / "other.json").write_text('{"kind": "something else"}')
    with pytest.raises(BadFileError, match="expected kind 'theorycheck-digest'"):
        read_json(tmp_path / "other.json", "baseline", expect={"kind": "theorycheck-digest"})


# -- the cache: only its own files (item 2) --------------------------------------------------------
def test_the_cache_refuses_to_adopt_a_folder_of_other_files(tmp_path):
    (tmp_path / "ml").mkdir()
    (tmp_path / "ml" / "model.pkl").write_bytes(b"the user's model")
    with pytest.raises(UsageError, match="holds 'ml'.*no theorycheck cache"):
        cache_from_options(tmp_path, tmp_path, ".", no_cache=False)
    with pytest.warns(CacheWarning, match="did not make"):
        cache_at(tmp_path).use(small_run, RT, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ml"]          # no CACHEDIR.TAG, no entry


def test_cache_clear_deletes_only_the_entries_it_wrote(tmp_path):
    root = tmp_path / "cache"
    cache_at(root).use(small_run, RT, {})
    key_like = "ab" + "0" * 62
    foreign = [root / "ml" / "model.pkl", root / "ab" / "model.pkl", root / "ab" / f"{key_like}.pkl",
               root / "notes.txt"]
    for path in foreign:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"not theorycheck's")
    assert DiskCache.existing(root).clear().entries == 1
    assert all(path.read_bytes() == b"not theorycheck's" for path in foreign)
    assert DiskCache(root).entries() == []


# -- the cache: entries bound to their key, sidecars validated (items 4, 5) -----------------------
def test_an_entry_copied_over_another_keys_file_is_a_miss_with_a_warning(tmp_path):
    cache = cache_at(tmp_path / "c")
    one, first = cache.use(small_run, RT, {"scale": 1.0})
    two, second = cache.use(small_run, RT, {"scale": 2.0})
    disk = DiskCache(tmp_path / "c")
    disk.path(second["key"]).write_bytes(disk.path(first["key"]).read_bytes())
    with pytest.warns(CacheWarning, match="holds the entry of key"):
        value, record = cache_at(tmp_path / "c").use(small_run, RT, {"scale": 2.0})
    assert record["source"] == "computed" and np.array_equal(value, two)
    assert not np.array_equal(value, one)


def test_a_corrupt_entry_in_a_read_only_cache_is_recomputed(tmp_path, monkeypatch):
    root = tmp_path / "c"
    fresh, record = cache_at(root).use(small_run, RT, {})
    DiskCache(root).path(record["key"]).write_bytes(b"garbage")
    fail_writes_under(monkeypatch, root)
    with pytest.warns(CacheWarning) as caught:
        value, again = cache_at(root).use(small_run, RT, {})
    assert again["source"] == "computed" and np.array_equal(value, fresh)
    assert any("discarded corrupted entry" in str(w.message) for w in caught)


def test_a_read_only_cache_computes_without_storing_with_one_warning(tmp_path, monkeypatch):
    root = tmp_path / "c"
    cache_at(root).use(small_run, RT, {"scale": 3.0})            # the folder exists and is the cache's
    fail_writes_under(monkeypatch, root)
    cache = cache_at(root)
    with pytest.warns(CacheWarning) as caught:
        for scale in (1.0, 2.0):
            assert cache.use(small_run, RT, {"scale": scale})[1]["source"] == "computed"
    assert len(caught) == 1 and "computed and not stored" in str(caught[0].message)
    assert len(DiskCache(root).entries()) == 1


@pytest.mark.parametrize("cpu_s", [-5.0, math.nan, "abc", True])
def test_a_cost_sidecar_with_a_bad_cpu_s_is_ignored_with_a_warning(tmp_path, cpu_s):
    root = tmp_path / "c"
    key = cache_at(root).use(small_run, RT, {})[1]["key"]
    DiskCache(root).cost_path(key).write_text(json.dumps({"cpu_s": cpu_s, "key": key}))
    with pytest.warns(CacheWarning, match="cpu_s must be a finite number >= 0"):
        record = cache_at(root).use(small_run, RT, {})[1]
    assert record["source"] == "disk" and "cpu_s" not in record


def test_a_cost_sidecar_of_another_key_is_ignored_with_a_warning(tmp_path):
    root = tmp_path / "c"
    key = cache_at(root).use(small_run, RT, {})[1]["key"]
    DiskCache(root).cost_path(key).write_text(json.dumps({"cpu_s": 1.0, "key": "f" * 64}))
    with pytest.warns(CacheWarning, match="not of"):
        assert "cpu_s" not in cache_at(root).use(small_run, RT, {})[1]


# -- reports and merges: only their own files, never over their inputs (items 2, 3, 9) ----------
def sample_run(folder, **changes):
    from tests.report_samples import sample_results
    from theorycheck.report import write_report

    return write_report(dict(sample_results(), **changes), folder)


def test_a_report_refuses_a_folder_holding_files_it_did_not_make(tmp_path):
    from theorycheck.report import write_report
    from tests.report_samples import sample_results

    folder = tmp_path / "D"
    (folder / "plots").mkdir(parents=True)
    (folder / "plots" / "figure.png").write_bytes(b"the user's figure")
    (folder / "report.md").write_text("the user's notes")
    with pytest.raises(WriteError, match="'plots/figure.png', which theorycheck did not make"):
        write_report(sample_results(), folder)
    assert (folder / "plots" / "figure.png").read_bytes() == b"the user's figure"
    assert (folder / "report.md").read_text() == "the user's notes"


def test_a_report_deletes_only_the_plot_files_it_named(tmp_path):
    out = sample_run(tmp_path / "run")
    (out / "plots" / "figure.png").write_bytes(b"added later by the user")
    sample_run(out, tier="quick")
    assert (out / "plots" / "figure.png").read_bytes() == b"added later by the user"


def test_report_of_a_run_leaves_its_results_json_untouched(tmp_path):
    from theorycheck import cli

    out = sample_run(tmp_path / "run")
    before = (out / "results.json").read_bytes(), (out / "results.json").stat().st_mtime_ns
    (out / "report.html").unlink()
    assert cli.main(["report", str(out)]) == 0
    assert (out / "report.html").is_file()
    assert ((out / "results.json").read_bytes(), (out / "results.json").stat().st_mtime_ns) == before


def run_limited(args, cwd, limit_bytes, timeout=300):
    """``python -m <args>`` in ``cwd`` with every file it writes limited to ``limit_bytes``
    (RLIMIT_FSIZE: writing more fails with EFBIG, as on a full disk)."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True,
                          preexec_fn=limit, timeout=timeout,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))


def test_report_under_a_file_size_limit_is_one_error_line_and_the_run_stays_whole(tmp_path):
    out = sample_run(tmp_path / "run")
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (out / "report.html").unlink()
    done = run_limited(["theorycheck", "report", str(out), "--out", str(tmp_path / "copy")],
                       tmp_path, limit_bytes=512)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "cannot write" in done.stderr and "File too large" in done.stderr
    assert all(path.read_bytes() == data for path, data in files.items()
               if path.name != "report.html")
    leftovers = [p for p in (tmp_path / "copy").rglob("*") if p.is_file() and p.stat().st_size >= 512]
    assert leftovers == []                      # nothing truncated left at the limit


def test_merge_refuses_to_write_over_its_inputs(tmp_path):
    from theorycheck import cli

    a, b = sample_run(tmp_path / "A", shard="1/2"), sample_run(tmp_path / "B", shard="2/2")
    before = (a / "results.json").read_bytes()
    with pytest.raises(SystemExit, match="holds the input"):
        cli.main(["merge", str(a), str(b), "--out", str(a)])
    with pytest.raises(SystemExit, match="holds the input"):
        cli.main(["merge", str(a / "results.json"), str(b), "--out", str(tmp_path)])
    assert (a / "results.json").read_bytes() == before


@pytest.mark.parametrize("verb", [
    lambda run, bad: ["report", str(run), "--out", str(bad / "sub")],
    lambda run, bad: ["diff", str(run), str(run), "--json", str(bad / "changes.json")],
    lambda run, bad: ["baseline", str(run), "--out", str(bad / "baseline.json")],
])
def test_a_bad_output_path_is_one_line_naming_it(tmp_path, verb):
    from theorycheck import cli

    run = sample_run(tmp_path / "run", partial=False)
    bad = tmp_path / "a-file"
    bad.write_text("not a folder")
    with pytest.raises(SystemExit) as exc:
        cli.main(verb(run, bad))
    message = str(exc.value.code)
    assert str(bad) in message and "\n" not in message and message.startswith("theorycheck ")


def test_a_run_folder_of_an_earlier_version_is_rerendered_in_place(tmp_path):
    """A run folder without the report's marker, holding only report files, is the report's."""
    from theorycheck import cli

    out = sample_run(tmp_path / "run")
    (out / ".theorycheck-report").unlink()
    assert cli.main(["report", str(out)]) == 0 and (out / ".theorycheck-report").is_file()


def test_a_100k_deep_json_given_to_a_verb_is_one_line(tmp_path):
    from theorycheck import cli

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for verb in (["report", str(deep)], ["diff", str(deep), str(deep)], ["schedule", str(deep)]):
        with pytest.raises(SystemExit) as exc:
            cli.main(verb)
        assert "nested too deeply" in str(exc.value.code) and "\n" not in str(exc.value.code)


# -- merge provenance (item 6) --------------------------------------------------------------------
def shard_pair(**second):
    from tests.report_samples import sample_results

    first, other = sample_results(), sample_results()
    first.update(shard="1/2", commit="a" * 40)
    other.update(dict(shard="2/2", commit="a" * 40), **second)
    return first, other


@pytest.mark.parametrize("change, named", [
    ({"commit": "b" * 40}, "commit"),
    ({"theorycheck_version": "0.0.1"}, "theorycheck_version"),
    ({"environment": {"numpy": "0.1"}}, "environment.numpy"),
])
def test_merge_refuses_shards_of_another_commit_or_version_unless_allowed(change, named):
    from theorycheck.report.view import run_warnings
    from theorycheck.shards import merge_results

    parts = shard_pair(**change)
    with pytest.raises(UsageError, match=f"different {named}.*--allow-mixed"):
        merge_results(list(parts))
    merged = merge_results(list(parts), allow_mixed=True)
    assert named in merged["mixed_provenance"]
    assert any(named in line and "--allow-mixed" in line for line in run_warnings(merged))


@pytest.mark.parametrize("change", [{"tier": "full"}, {"seed": 4}])
def test_merge_refuses_shards_of_other_settings_even_when_mixed_is_allowed(change):
    from theorycheck.shards import merge_results

    with pytest.raises(UsageError, match="the runs differ in"):
        merge_results(list(shard_pair(**change)), allow_mixed=True)


def test_merge_of_a_shard_field_that_is_not_i_of_n_is_a_clear_error():
    from theorycheck.shards import merge_results

    with pytest.raises(UsageError, match="shard field is 'abc', not I/N"):
        merge_results(list(shard_pair(shard="abc")))


# -- races (item 7) -------------------------------------------------------------------------------
def at_once(task, args_per_process) -> list:
    """Run ``task(*args)`` for each args in forked processes released together by one barrier;
    their return values (an exception's text, prefixed ``error:``) in order."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    barrier, queue = context.Barrier(len(args_per_process)), context.Queue()

    def one(index, args):
        barrier.wait()
        try:
            queue.put((index, task(*args)))
        except Exception as exc:  # reported to the test, which fails on it
            queue.put((index, f"error: {type(exc).__name__}: {exc}"))

    processes = [context.Process(target=one, args=(i, args)) for i, args in enumerate(args_per_process)]
    for process in processes:
        process.start()
    results = dict(queue.get(timeout=60) for _ in processes)
    for process in processes:
        process.join(timeout=60)
    return [results[i] for i in range(len(processes))]


def test_processes_creating_the_same_run_folder_at_once_get_one_folder_each(tmp_path):
    from theorycheck import history

    def make(root):
        return str(history.new_run_dir(root, "20260101T000000Z-quick-seed0"))

    for round_ in range(60):
        root = tmp_path / f"round{round_}"
        made = at_once(make, [(root,)] * 4)
        assert not [m for m in made if m.startswith("error:")], made
        assert len(set(made)) == 4


def test_concurrent_pointer_moves_never_leave_the_pointer_missing(tmp_path):
    from theorycheck import history

    root = tmp_path / "reports"
    runs = [history.new_run_dir(root, f"2026010{i}T000000Z-quick-seed0-partial") for i in range(1, 5)]
    names = {run.name for run in runs}
    def point(run):
        for _ in range(10):
            history.point_latest(root, run, "latest-partial")

    for round_ in range(30):
        moved = at_once(point, [(run,) for run in runs])
        assert not [m for m in moved if m is not None], moved
        assert os.path.basename(os.readlink(root / "latest-partial")) in names, round_
        assert os.path.basename((root / "LATEST-PARTIAL").read_text().strip()) in names
    assert not [p for p in root.iterdir() if "tmp" in p.name]


def test_a_pointer_that_cannot_become_a_symlink_is_kept(tmp_path, monkeypatch):
    from theorycheck import history

    root = tmp_path / "reports"
    first, second = (history.new_run_dir(root, f"2026010{i}T000000Z-quick-seed0") for i in (1, 2))
    for run in (first, second):
        (run / "results.json").write_text("{}")
    history.point_latest(root, first)

    def no_symlinks(self, *args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(pathlib.Path, "symlink_to", no_symlinks)
    history.point_latest(root, second)
    assert (root / "latest").is_symlink()                     # never deleted
    assert history.latest_run_dir(root) == root / os.path.relpath(second, root)   # LATEST decides


# -- the pytest run: run-level decisions always, bad inputs cost nothing (items 3, 4, 7, 8) -------
ONE_CLAIM = '''
@claim("toy.thm1.tight", source="Theorem 1", statement="Three squared is at most 10.",
       provenance="stated", nature="identity",
       controls={"stricter": Control("statement", breaks=["bound"],
                                      description="the stronger statement at most 8")})
def test_tight(tc):
    tc.conclusion.at_most("bound", 9.0, 8.0 if tc.control == "stricter" else 10.0)
'''


def run_once(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", "--tc-no-cache", *args)


def test_strict_fails_the_same_with_and_without_a_report(pytester, claim_file):
    """The claim has no independent control: a strict finding of the run, with a report or not."""
    claim_file(ONE_CLAIM)
    with_report = run_once(pytester, "--tc-strict")
    without = run_once(pytester, "--tc-strict", "--tc-no-report")
    assert with_report.ret == without.ret == 1
    without.stdout.fnmatch_lines(["*error: toy.thm1.tight: no independent control*"])


def test_baseline_drift_is_computed_without_a_report(pytester, claim_file):
    claim_file(ONE_CLAIM)
    run_once(pytester, "--tc-report-dir", "first")
    results = json.loads((pytester.path / "first" / "results.json").read_text())
    results["claims"][0]["outcome"] = "failed"
    (pytester.path / "base.json").write_text(json.dumps(results))
    run = run_once(pytester, "--tc-no-report", "--tc-baseline", "base.json")
    run.stdout.fnmatch_lines(["*toy.thm1.tight  outcome: failed -> passed*"])


def test_a_malformed_baseline_is_a_warning_in_the_report_and_the_results_are_written(pytester, claim_file):
    claim_file(ONE_CLAIM)
    (pytester.path / "base.json").write_text(json.dumps(
        {"kind": "theorycheck-digest", "claims": {"toy.thm1.tight": {"values": {}}}}))
    run = run_once(pytester, "--tc-baseline", "base.json", "--tc-report-dir", "out")
    assert run.ret == 0
    run.stdout.fnmatch_lines(["*baseline not compared:*claim 'toy.thm1.tight' has no outcome*"])
    results = json.loads((pytester.path / "out" / "results.json").read_text())
    assert results["summary"]["claim_outcomes"]["passed"] == 1
    assert any("baseline not compared" in line for line in results["run_warnings"])
    assert "**Warning:** baseline not compared" in (pytester.path / "out" / "report.md").read_text()


@pytest.mark.parametrize("content, problem", [(None, "no such file"), ('{"claims": [', "not valid JSON")])
def test_a_missing_or_truncated_durations_file_is_a_usage_error(pytester, claim_file, content, problem):
    claim_file(ONE_CLAIM)
    if content is not None:
        (pytester.path / "durations.json").write_text(content)
    run = run_once(pytester, "--tc-shard", "1/2", "--tc-durations", "durations.json", "--tc-no-report")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in run.stderr.str() + run.stdout.str()
    run.stderr.fnmatch_lines([f"*--tc-durations*durations.json*{problem}*"])


def test_a_report_dir_holding_other_files_is_refused_before_the_run(pytester, claim_file):
    claim_file(ONE_CLAIM)
    (pytester.path / "D" / "plots").mkdir(parents=True)
    (pytester.path / "D" / "plots" / "figure.png").write_bytes(b"mine")
    run = run_once(pytester, "--tc-report-dir", "D")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(["*--tc-report-dir*plots/figure.png*did not make*"])
    assert sorted(p.name for p in (pytester.path / "D").rglob("*")) == ["figure.png", "plots"]


def test_the_terminal_says_the_pointer_moved_only_when_it_did(pytester, claim_file):
    claim_file(ONE_CLAIM)
    run = run_once(pytester, "-k", "tight", "--tc-report-dir", "out")
    assert "latest-partial points at it" not in run.stdout.str()
    assert not (pytester.path / "reports" / "latest-partial").exists()
    run = run_once(pytester, "-k", "tight")
    run.stdout.fnmatch_lines(["*reports/latest-partial points at it*"])


def test_a_run_that_cannot_write_its_report_is_one_error_line_and_no_truncated_file(pytester, claim_file):
    claim_file(ONE_CLAIM)
    done = run_limited(["pytest", "-p", "no:cacheprovider", "--tc-no-cache", "--tc-report-dir", "out"],
                       pytester.path, limit_bytes=2048)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.INTERNAL_ERROR, output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert "error: the report was not written: cannot write" in output
    written = [p for p in (pytester.path / "out").rglob("*") if p.is_file()]
    assert all(p.stat().st_size < 2048 for p in written)
    assert not (pytester.path / "out" / "results.json").exists()


# -- the guarantees page ---------------------------------------------------------------------------
def test_every_test_the_guarantees_page_names_exists():
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    page = (root / "docs" / "guarantees.md").read_text()
    named = re.findall(r"`(?:(tests/[\w/]+\.py)::)?(test_\w+)`", page)
    assert len(named) >= 30
    for file, name in named:
        source = (root / (file or "tests/test_faults_io.py")).read_text()
        assert re.search(rf"^def {name}\(", source, re.M), f"{file or 'test_faults_io.py'}::{name}"


def test_a_pointer_that_cannot_be_written_is_a_warning_and_the_report_stays(pytester, claim_file,
                                                                              monkeypatch):
    from theorycheck import history

    claim_file(ONE_CLAIM)
    write = history.atomic_write

    def no_pointer(path, data):
        if pathlib.Path(path).name == "LATEST":
            raise WriteError(f"cannot write {str(path)!r}: Read-only file system")
        return write(path, data)

    monkeypatch.setattr(history, "atomic_write", no_pointer)
    run = run_once(pytester)
    assert run.ret == 0
    run.stdout.fnmatch_lines(["*warning: reports/latest not moved to this run: cannot write*"])
    assert len(list((pytester.path / "reports" / "runs").glob("*/results.json"))) == 1
