"""benchmarks/device_check.sh --dry-run: the prepared GPU check's steps on the CPU (one paper at
quick sizes, one bench workload, one claim for the full-tier step), each writing its files."""
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "device_check.sh"


def test_dry_run_runs_every_step_and_writes_its_files(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), PYTHON=sys.executable, THEORYCHECK_SEED="0")
    # the budget only guards against a hang: the dry run has no per-step limits, so a slow or
    # loaded machine does not fail it (no test depends on wall-clock time)
    run = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--budget", "3600"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=3700)
    assert run.returncode == 0, run.stdout + run.stderr
    summary = dict(line.split(" ", 1) for line in (out / "summary.txt").read_text().splitlines())
    assert set(summary) == {"install", "quick:jta24", "bench", "full:jta24_and_test_certificate"}, summary
    assert all(status.startswith("ok ") for status in summary.values()), summary
    assert {p.name for p in out.iterdir()} == {"summary.txt", "device_check.log", "env.txt",
                                                "quick-diff.txt", "quick.tar.gz", "bench-cpu.json",
                                                "full.tar.gz"}
    assert "changed outcomes" in (out / "quick-diff.txt").read_text()   # compared with the baseline
    with tarfile.open(out / "quick.tar.gz") as tar:
        results = json.load(tar.extractfile("quick-jta24/results.json"))
    assert results["device"] == "cpu" and results["partial"] and results["claims"]
    bench = json.loads((out / "bench-cpu.json").read_text())
    assert bench["rows"] and {r["device"] for r in bench["rows"]} == {"cpu"}


def test_unknown_arguments_and_a_missing_out_are_refused(tmp_path):
    bad = subprocess.run(["bash", str(SCRIPT), "--frobnicate"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown argument '--frobnicate'" in bad.stderr
    workers = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--workers", "many"], cwd=ROOT,
                             capture_output=True, text=True)
    assert workers.returncode == 2 and "--workers takes a count, got 'many'" in workers.stderr
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    no_out = subprocess.run(["bash", str(SCRIPT), "--steps", "install"], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert no_out.returncode != 0 and "OUT must name the folder" in no_out.stderr
