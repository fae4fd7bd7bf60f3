"""Seed sweeps: run the claims over several base seeds and compare each claim's pass rate
with the rate its own statistical tests predict.

A claim whose decisions are deterministic comparisons should pass at every seed (predicted
rate 1).  A claim decided by statistical tests (:data:`theorycheck.checks.STATISTICAL`:
exact binomial, Wald, chi-square) at level ``alpha`` rejects a true statement with
probability at most ``alpha`` per test: a binomial test at the boundary ``P[success] = p``
exactly rejects with probability ``size = P[Bin(K, p) <= c]``, a Wald or chi-square test with
``alpha`` (recorded as ``reject_prob_at_null``), so the predicted pass rate of the claim is
``prod (1 - size)`` over its statistical decisions (a lower bound when the tests are
independent and the statement holds), averaged over seeds.  Only failures of statistical
decisions are explained by that rate: a seed at which a deterministic decision failed makes
the claim flaky whatever its tests predict (``deterministic_failures`` counts them).

:func:`aggregate` turns the results of N runs into ``seed_sweep`` entries::

    {"id", "control" (None for the claim itself), "kind": "claim" | "control", "runs",
     "passes", "predicted_pass_rate", "failure_rate", "outcomes": {outcome: count},
     "p_value", "deterministic_failures", "flaky"}

``runs`` counts the seeds at which the case ran (not skipped / not run).  For a claim,
``passes`` counts outcome ``passed``; it is **flaky** when its failures are more than the
predicted rate explains (one-sided exact binomial test of ``failures ~ Bin(runs, 1 -
predicted)`` at level 0.05; with predicted rate 1, any failure).  For a control, ``passes``
counts the runs in which it passed (``passed_unexpectedly``), ``predicted_pass_rate`` is 0,
``failure_rate`` is the share of runs in which it failed as it declares, and it is flaky when
it did anything else even once (passed, misfired, errored).
"""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scipy import stats

from .checks import STATISTICAL
from .errors import UsageError
from .runtime import MAX_SEED, parse_count

__all__ = ["parse_seeds", "MAX_SWEEP_SEEDS", "predicted_pass_rate", "aggregate", "run_seeds", "load_runs",
           "format_sweep", "FLAKY_ALPHA"]

#: level of the test that calls a claim's failure count too high for its predicted rate
FLAKY_ALPHA = 0.05
#: the most seeds one sweep runs
MAX_SWEEP_SEEDS = 1000
_RAN = ("not_run", "skipped")


def parse_seeds(text: str) -> list[int]:
    """``"0-19"``, ``"0,3,7"`` or ``"0-4,9"`` as a sorted list of distinct seeds, each a base
    seed (0 to ``MAX_SEED``), at most ``MAX_SWEEP_SEEDS`` of them (counted before any is
    listed: a sweep runs pytest once per seed)."""
    ranges = []
    for part in str(text).split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if match is None:
            raise UsageError(f"seeds {text[:60]!r}: expected ranges like 0-19 or lists like 0,3,7")
        low, high = (parse_count("seeds", value, 0, MAX_SEED)
                     for value in (match.group(1), match.group(2) or match.group(1)))
        if high < low:
            raise UsageError(f"seeds {text!r}: the range {low}-{high} is empty")
        ranges.append((low, high))
    if sum(high - low + 1 for low, high in ranges) > MAX_SWEEP_SEEDS:
        raise UsageError(f"seeds {text[:60]!r}: more than {MAX_SWEEP_SEEDS} seeds (a sweep runs "
                         "pytest once per seed); sweep fewer")
    return sorted({seed for low, high in ranges for seed in range(low, high + 1)})


def _size_at_p(decision: dict) -> float:
    """The probability that a statistical decision rejects a true statement at its boundary
    (``P[success] = p`` exactly for a binomial test; ``alpha`` for Wald and chi-square)."""
    detail = decision.get("detail") or {}
    for key in ("reject_prob_at_null", "reject_prob_at_p"):  # the second: results written before 2026-11-27
        if key in detail:
            return float(detail[key])
    from .checks import binomial_size

    return binomial_size(int(detail["trials"]), float(decision["reference"]),
                         float((decision.get("tolerance") or {}).get("alpha", 0.05)))


def _statistical(decision: dict) -> bool:
    """Whether a decision is a statistical test that ran (one refused on a non-finite input
    tested nothing: its failure is deterministic)."""
    return decision.get("kind") in STATISTICAL and not (decision.get("detail") or {}).get("non_finite")


def predicted_pass_rate(case: dict) -> float:
    """The pass rate a case's statistical tests predict (binomial, Wald, chi-square: each
    passes a true statement with probability 1 - its size; 1.0 without statistical tests)."""
    rate = 1.0
    for decision in case.get("decisions") or []:
        if _statistical(decision):
            rate *= 1.0 - _size_at_p(decision)
    return rate


def deterministic_failure(case: dict) -> bool:
    """Whether a failed case failed a decision that is no statistical test: such a failure is
    not explained by any stated rate (the claim is flaky, whatever its tests predict)."""
    return any(not d.get("passed", True) and not _statistical(d) for d in case.get("decisions") or [])


def _claim_entry(cid: str, cases: list[dict]) -> dict:
    ran = [c for c in cases if c["outcome"] not in _RAN]
    passes = sum(c["outcome"] == "passed" for c in ran)
    predicted = (sum(predicted_pass_rate(c) for c in ran) / len(ran)) if ran else 1.0
    failures = len(ran) - passes
    deterministic = sum(c["outcome"] != "passed" and deterministic_failure(c) for c in ran)
    if not ran or failures == 0:
        p_value = 1.0
    elif predicted >= 1.0 or deterministic:
        p_value = 0.0
    else:
        p_value = float(stats.binomtest(failures, len(ran), 1.0 - predicted,
                                        alternative="greater").pvalue)
    return {"id": cid, "control": None, "kind": "claim", "runs": len(ran), "passes": passes,
            "predicted_pass_rate": round(predicted, 6),
            "failure_rate": round(failures / len(ran), 6) if ran else 0.0,
            "outcomes": dict(Counter(c["outcome"] for c in cases)), "p_value": p_value,
            "deterministic_failures": deterministic, "flaky": p_value < FLAKY_ALPHA}


def _control_entry(cid: str, name: str, cases: list[dict]) -> dict:
    ran = [c for c in cases if c["outcome"] not in _RAN]
    as_declared = sum(c["outcome"] == "failed_as_expected" for c in ran)
    return {"id": cid, "control": name, "kind": "control", "runs": len(ran),
            "passes": sum(c["outcome"] == "passed_unexpectedly" for c in ran),
            "predicted_pass_rate": 0.0,
            "failure_rate": round(as_declared / len(ran), 6) if ran else 0.0,
            "outcomes": dict(Counter(c["outcome"] for c in cases)), "p_value": None,
            "flaky": as_declared < len(ran)}


def aggregate(runs: list[dict]) -> list[dict]:
    """``seed_sweep`` entries (see the module docstring) from the results of several runs."""
    claims: dict[str, list[dict]] = {}
    controls: dict[tuple[str, str], list[dict]] = {}
    for results in runs:
        for claim in results["claims"]:
            claims.setdefault(claim["id"], []).append(claim)
            for control in claim["controls"]:
                controls.setdefault((claim["id"], control["name"]), []).append(control)
    entries = [_claim_entry(cid, cases) for cid, cases in sorted(claims.items())]
    entries += [_control_entry(cid, name, cases) for (cid, name), cases in sorted(controls.items())]
    return entries


def run_seeds(seeds: list[int], pytest_args: list[str], out: Path, jobs: int = 1,
              progress=print) -> dict[int, Path]:
    """Run ``pytest pytest_args --tc-seed s`` for every seed in its own subprocess (``jobs``
    at a time), each writing its report into ``out/seed<s>`` and its output into
    ``out/seed<s>.log``.  Returns the results.json path of every seed that wrote one."""
    if jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    out.mkdir(parents=True, exist_ok=True)

    def one(seed: int) -> tuple[int, int]:
        command = [sys.executable, "-m", "pytest", *pytest_args, "--tc-seed", str(seed),
                   "--tc-report-dir", str(out / f"seed{seed}"), "--tc-baseline", "none",
                   "-p", "no:cacheprovider", "-q"]
        with open(out / f"seed{seed}.log", "w") as log:
            code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode
        progress(f"seed {seed}: pytest exit status {code}")
        return seed, code

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        codes = dict(pool.map(one, seeds))
    found = {s: out / f"seed{s}" / "results.json" for s in seeds}
    missing = [s for s, path in found.items() if not path.is_file()]
    if missing:
        progress(f"no results from seeds {missing} (exit statuses "
                 f"{[codes[s] for s in missing]}; see their logs in {out})")
    return {s: path for s, path in found.items() if path.is_file()}


def load_runs(paths: dict[int, Path]) -> list[dict]:
    """The results documents of a sweep's runs (seed -> results.json path), by seed."""
    from .report.results import load_results

    return [load_results(path) for _, path in sorted(paths.items())]


def format_sweep(entries: list[dict]) -> list[str]:
    """The flaky entries, one line each, then a count line."""
    lines = []
    for e in entries:
        if not e["flaky"]:
            continue
        who = e["id"] + (f" [control {e['control']}]" if e["control"] else "")
        if e["kind"] == "claim":
            lines.append(f"FLAKY {who}: passed {e['passes']}/{e['runs']}, predicted rate "
                         f"{e['predicted_pass_rate']:.3f} (p = {e['p_value']:.2g}); {e['outcomes']}")
        else:
            lines.append(f"FLAKY {who}: failed as declared in {round(e['failure_rate'] * e['runs'])}"
                         f"/{e['runs']} runs; {e['outcomes']}")
    claims = [e for e in entries if e["kind"] == "claim"]
    lines.append(f"{len(claims)} claims, {len(entries) - len(claims)} controls over the sweep; "
                 f"{sum(e['flaky'] for e in entries)} flaky")
    return lines

