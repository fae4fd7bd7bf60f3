"""benchmarks/full_tier.sh: the full tier at one frozen commit in resumable shards (run here on
one quick claims file): complete -> merged run and cost table; a second call resumes (nothing to
rerun); other settings for the same folder are refused; bad arguments exit 2."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "full_tier.sh"
CLAIMS = "claims/jta24/test_inequalities.py"


def call(*args):
    return subprocess.run(["bash", str(SCRIPT), "--python", sys.executable, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def folder(tmp_path):
    yield tmp_path / "full"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tmp_path / "full" / "tree")],
                   capture_output=True)


def test_shards_run_merge_and_resume(folder):
    first = call("--dir", str(folder), "--tier", "quick", "--claims", CLAIMS, "--shards", "2")
    assert first.returncode == 0, first.stderr + first.stdout
    merged = json.loads((folder / "runs" / "full" / "results.json").read_text())
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert merged["partial"] is False and merged["commit"] == head and merged["tier"] == "quick"
    assert all(c["outcome"] == "passed" and "cost" in c for c in merged["claims"])
    assert "| claim | outcome | wall s | CPU s | peak MiB | from disk |" in (folder / "runs" / "full" / "costs.md").read_text()
    assert all((folder / "runs" / f"shard-{i}" / "DONE").exists() for i in (1, 2))
    again = call("--dir", str(folder), "--tier", "quick", "--claims", CLAIMS, "--shards", "2")
    log = (folder / "runs" / "log.txt").read_text()
    assert again.returncode == 0 and log.count(" start") == 2 and log.count("complete") == 1
    other = call("--dir", str(folder), "--tier", "quick", "--claims", CLAIMS, "--shards", "3")
    assert other.returncode == 2 and "use another --dir" in other.stderr


def test_two_instances_share_the_shards_and_one_merges(folder):
    """Two instances on one folder at once: each shard runs once (its lock), both end, the run is
    merged once; a stale lock (its process gone) is taken over."""
    (folder / "runs").mkdir(parents=True)
    (folder / "runs" / "shard-2.lock").mkdir()
    (folder / "runs" / "shard-2.lock" / "pid").write_text("999999999")       # no such process
    args = ["bash", str(SCRIPT), "--python", sys.executable, "--dir", str(folder), "--tier", "quick",
            "--claims", CLAIMS, "--shards", "3"]
    first, second = (subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(2))
    codes = [first.wait(timeout=600), second.wait(timeout=600)]
    log = (folder / "runs" / "log.txt").read_text()
    assert all(log.count(f"shard {i}/3 start") == 1 for i in (1, 2, 3)), log
    assert log.count("complete") in (1, 2) and 0 in codes and set(codes) <= {0, 3}
    if 3 in codes:                         # the one that ended first left the merge to the other
        assert (folder / "runs" / "full" / "costs.md").exists()
    merged = json.loads((folder / "runs" / "full" / "results.json").read_text())
    assert merged["partial"] is False and len(merged["claims"]) == 5
    assert not list((folder / "runs").glob("*.lock"))


def test_kept_shards_carry_a_run_to_a_new_folder(folder, tmp_path):
    """--keep: every finished shard is kept gzipped; a call on a new folder (its DIR lost)
    restores them as finished and runs nothing but the merge; a kept shard of other settings is
    refused."""
    keep = tmp_path / "kept"
    first = call("--dir", str(folder), "--tier", "quick", "--claims", CLAIMS, "--shards", "2", "--keep", str(keep))
    assert first.returncode == 0, first.stderr + first.stdout
    assert sorted(p.name for p in keep.iterdir()) == ["shard-1-of-2.json.gz", "shard-2-of-2.json.gz"]
    other = tmp_path / "elsewhere"
    try:
        second = call("--dir", str(other), "--tier", "quick", "--claims", CLAIMS, "--shards", "2", "--keep", str(keep))
        log = (other / "runs" / "log.txt").read_text()
        assert second.returncode == 0, second.stderr + second.stdout
        assert log.count(" restored from ") == 2 and " start" not in log and log.count("complete") == 1
        merged = json.loads((other / "runs" / "full" / "results.json").read_text())
        assert merged["partial"] is False and len(merged["claims"]) == 5
        refused = call("--dir", str(tmp_path / "third"), "--tier", "quick", "--claims", CLAIMS, "--shards", "2",
                       "--seed", "7", "--keep", str(keep))
        assert refused.returncode == 2 and "keep each run's shards in a folder of its own" in refused.stderr
    finally:
        for tree in (other / "tree", tmp_path / "third" / "tree"):
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def test_kept_shared_runs_carry_a_cut_unit_to_a_new_folder(folder, tmp_path):
    """--keep with --save-runs: the cache's entries that no finished shard used, within
    --keep-run-mib and at least --keep-run-cpu seconds, are kept gzipped with their cost; a call
    on a new folder restores them, readable by the cache with their cost; an entry a finished
    shard used, a larger one or a cheaper one is not kept."""
    from theorycheck.cache import DiskCache

    keep, cache = tmp_path / "kept", DiskCache(folder / "cache")
    unused, used, large, cheap = ("a1" * 32, "b2" * 32, "c3" * 32, "d4" * 32)
    cache.store(unused, {"x": [1.0, 2.0]}, "unused", cpu_s=12.5)
    cache.store(used, {"x": 3.0}, "used", cpu_s=30.0)
    cache.store(large, bytes(2 * 2**20), "large", cpu_s=20.0)
    cache.store(cheap, {"x": 4.0}, "cheap", cpu_s=1.0)
    finished = folder / "runs" / "shard-1"
    finished.mkdir(parents=True)
    (finished / "results.json").write_text(json.dumps(
        {"claims": [{"controls": [{"shared_runs": [{"key": used, "source": "computed"}]}]}]}))
    (finished / "DONE").touch()
    settings = ["--tier", "quick", "--claims", CLAIMS, "--shards", "2", "--keep", str(keep), "--keep-run-mib", "1",
                "--keep-run-cpu", "5"]
    saved = call("--dir", str(folder), *settings, "--save-runs")
    assert saved.returncode == 0, saved.stderr + saved.stdout
    assert sorted(p.name for p in (keep / "runs").iterdir()) == [f"{unused}.cost.json", f"{unused}.pkl.gz"]
    other = tmp_path / "elsewhere"
    try:
        restored = call("--dir", str(other), *settings, "--save-runs")
        assert restored.returncode == 0, restored.stderr + restored.stdout
        again = DiskCache(other / "cache")
        assert again.load(unused) == (True, {"x": [1.0, 2.0]}) and again.cost(unused) == 12.5
        assert again.load(used) == (False, None) and "restored" in (other / "runs" / "log.txt").read_text()
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other / "tree")],
                       capture_output=True)


@pytest.mark.parametrize("args, message", [
    ((), "--dir DIR is required"),
    (("--dir", "x", "--shards", "0"), "--shards must be a positive integer"),
    (("--dir", "x", "--commit", "no-such-rev"), "unknown commit"),
    (("--frobnicate",), "unknown argument"),
    (("--dir", "x", "--save-runs"), "--save-runs needs --keep FOLDER"),
    (("--dir", "x", "--keep-run-mib", "-1"), "--keep-run-mib must be an integer >= 0"),
    (("--dir", "x", "--keep-run-cpu", "lots"), "--keep-run-cpu must be a number >= 0"),
])
def test_bad_arguments_exit_2(args, message):
    result = call(*args)
    assert result.returncode == 2 and message in result.stderr


def failing_once(tmp_path, arguments: str, action: str):
    """A python for the script that does ``action`` (bash) the first time it is called with
    ``arguments`` (leaving ``tmp_path/failed-once``), and runs this python otherwise."""
    marker = tmp_path / "failed-once"
    python = tmp_path / "python"
    python.write_text(f"""#!/usr/bin/env bash
case " $* " in
  *" {arguments} "*) [ -e {marker} ] || {{ touch {marker}; {action}; }} ;;
esac
exec {sys.executable} "$@"
""")
    python.chmod(0o755)
    return python


def test_a_killed_shard_is_retried_after_the_others(folder, tmp_path):
    """A shard whose process is killed (SIGKILL, as the out-of-memory killer does) is retried
    after the other shards in the same call, and the run completes."""
    python = failing_once(tmp_path, "--tc-shard 1/2", "kill -9 $$")
    result = subprocess.run(["bash", str(SCRIPT), "--python", str(python), "--dir", str(folder), "--tier", "quick",
                             "--claims", CLAIMS, "--shards", "2"], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    log = (folder / "runs" / "log.txt").read_text().splitlines()
    events = [line.split(" ", 1)[1] for line in log]
    assert result.returncode == 0, result.stderr + result.stdout
    assert events[:5] == ["shard 1/2 start", "shard 1/2 end rc=137",
                          "shard 1/2 killed (out of memory?); retried after the other shards",
                          "shard 2/2 start", "shard 2/2 end rc=0"], events
    assert events[5:7] == ["shard 1/2 start", "shard 1/2 end rc=0"] and "out of memory?" in result.stderr
    assert json.loads((folder / "runs" / "full" / "results.json").read_text())["partial"] is False


def test_a_failed_schedule_leaves_no_costs_md_and_the_next_call_merges(folder, tmp_path):
    """costs.md appears only once merge and schedule both worked: a schedule that fails (here
    once, on purpose) leaves none, so the next call merges and writes it."""
    python = failing_once(tmp_path, "theorycheck schedule", "exit 1")
    args = ["bash", str(SCRIPT), "--dir", str(folder), "--tier", "quick", "--claims", CLAIMS, "--shards", "2"]
    first = subprocess.run([*args, "--python", str(python)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert first.returncode == 3 and (tmp_path / "failed-once").exists(), first.stderr + first.stdout
    assert not (folder / "runs" / "full" / "costs.md").exists()
    assert not list((folder / "runs").glob("*.lock"))
    second = subprocess.run([*args, "--python", str(python)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr + second.stdout
    assert "| claim | outcome |" in (folder / "runs" / "full" / "costs.md").read_text()


def test_a_stale_lock_is_taken_over_by_exactly_one_of_many_instances(tmp_path):
    """take() decides under one flock: of eight instances that find the same stale lock (its
    process gone) at once, one takes it over, the others see it held."""
    for round_ in range(5):
        lock = tmp_path / f"round{round_}" / "shard-1.lock"
        lock.mkdir(parents=True)
        (lock / "pid").write_text("999999999")                               # no such process
        script = f"source {SCRIPT}; take {lock} && echo won; sleep 1"
        instances = [subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True)
                     for _ in range(8)]
        outputs = [p.communicate(timeout=60)[0] for p in instances]
        assert sum(out.count("won") for out in outputs) == 1, (round_, outputs)
