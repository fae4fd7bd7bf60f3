"""Planted defects: apply each patch of this folder to a copy of the project and run pytest on
it; a defect is *caught* when a test fails (the first failing test is named), *caught by
value* when that failure is a failed decision or assertion rather than an error.

    python tests/mutations/run.py                      # the library tests named below
    python tests/mutations/run.py --claims             # pytest claims -x as well
    python tests/mutations/run.py m2_bregman_argument_order

Not part of the test suite (each defect costs a run); results in tests/mutations/README.md.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LIBRARY_TESTS = ["tests/test_weak_spots.py", "tests/test_optim.py", "tests/test_mirror.py",
                 "tests/test_curvature_and_adam.py", "tests/test_attention_nets.py",
                 "tests/test_token_selection_model.py"]
IGNORE = shutil.ignore_patterns(".venv", ".git", "reports", ".theorycheck-cache", "__pycache__",
                                ".pytest_cache", ".hypothesis", "*.egg-info", ".whl", "_build")


def first_failure(output: str) -> tuple[str | None, str]:
    """(the first failed test id, how): ``value`` when its first error line is a failed
    assertion or claim decision, else ``error`` (an exception, a collection error)."""
    match = re.search(r"^(FAILED|ERROR) (\S+)", output, re.M)
    if not match:
        return None, ""
    first_e = re.search(r"^(?:E\s+(.*)|(ClaimFailure: .*|ControlMisfire: .*))$", output, re.M)
    text = (first_e.group(1) or first_e.group(2)) if first_e else ""
    value = match.group(1) == "FAILED" and re.match(r"(assert\b|AssertionError|ClaimFailure|"
                                                   r"theorycheck\.errors\.ClaimFailure)", text)
    return match.group(2), "value" if value else f"error ({text[:60]})"


def run_one(patch: Path, targets: list[str]) -> tuple[str | None, str]:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "project"
        shutil.copytree(ROOT, copy, ignore=IGNORE)
        subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=copy, check=True)
        env = dict(os.environ, PYTHONPATH=str(copy))
        out = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                              "--tc-no-report", "--tc-no-cache", "-rfE", *targets], cwd=copy, env=env,
                             capture_output=True, text=True)
        return first_failure(out.stdout + out.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="patch names (default: all)")
    parser.add_argument("--claims", action="store_true", help="also run pytest claims -x")
    args = parser.parse_args()
    patches = sorted(HERE.glob("*.patch"))
    if args.names:
        patches = [p for p in patches if p.stem in args.names]
    survived = 0
    for patch in patches:
        suites = [("library", LIBRARY_TESTS)] + ([("claims", ["claims"])] if args.claims else [])
        for label, targets in suites:
            test, how = run_one(patch, targets)
            survived += test is None
            verdict = f"caught by {how}: {test}" if test else "SURVIVED"
            print(f"{patch.stem:40s} {label:8s} {verdict}", flush=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
