"""benchmarks/calibrate_groups.sh: calibration runs of claim groups inside one deadline, packed
for merging elsewhere (``theorycheck calibrate ... --from-runs``)."""
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "calibrate_groups.sh"
CHEAP = "anon20.thm6.param_count"   # a closed-form count: a fraction of a second a seed


def run(args, tmp_path):
    env = dict(os.environ, PYTHON=sys.executable)
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1200)


def summary(out: Path) -> list[list[str]]:
    return [line.split() for line in (out / "summary.txt").read_text().splitlines()]


def test_a_group_runs_its_seeds_and_is_packed(tmp_path):
    groups = tmp_path / "groups.txt"
    groups.write_text(f"{CHEAP}\n")
    out = tmp_path / "calib"
    # the budget only guards against a hang (no test depends on wall-clock time)
    done = run(["--groups", str(groups), "--seeds", "424242-424243", "--out", str(out),
                "--tier", "quick", "--workers", "2", "--budget", "1100"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (name, status, _seconds, kept), = summary(out)
    assert (name, status, kept) == ("g1", "ok", "2")
    with tarfile.open(tmp_path / "calib.tar.gz") as tar:
        names = tar.getnames()
        results = json.load(tar.extractfile("calib/g1/seed424243/results.json"))
    assert "calib/g1/seed424242/results.json" in names
    assert not any(n.endswith((".html", ".png")) for n in names)
    assert results["seed"] == 424243 and [c["id"] for c in results["claims"]] == [CHEAP]
    table = json.loads((out / "g1.json").read_text())
    assert CHEAP in json.dumps(table)


def test_groups_past_the_deadline_are_skipped_and_reported(tmp_path):
    groups = tmp_path / "groups.txt"
    groups.write_text(f"{CHEAP}\n{CHEAP}\n")
    out = tmp_path / "calib"
    done = run(["--groups", str(groups), "--seeds", "424242-424243", "--out", str(out),
                "--budget", "0"], tmp_path)
    assert done.returncode == 3
    assert summary(out) == [["g1", "skipped", "0", "0"], ["g2", "skipped", "0", "0"]]


def test_bad_arguments_are_refused_by_name(tmp_path):
    missing = run(["--seeds", "424242-424243", "--out", str(tmp_path / "o")], tmp_path)
    assert missing.returncode == 2 and "--groups is required" in missing.stderr
    no_file = run(["--groups", str(tmp_path / "none.txt"), "--seeds", "1-2", "--out",
                   str(tmp_path / "o")], tmp_path)
    assert no_file.returncode == 2 and "no groups file" in no_file.stderr
    unknown = run(["--frobnicate"], tmp_path)
    assert unknown.returncode == 2 and "unknown argument '--frobnicate'" in unknown.stderr
    budget = run(["--groups", __file__, "--seeds", "1-2", "--out", str(tmp_path / "o"),
                  "--budget", "soon"], tmp_path)
    assert budget.returncode == 2 and "take counts" in budget.stderr
