"""Seed sweeps: run the claims over several base seeds and compare each claim's pass rate
with the rate its calibration predicts, or, without a calibration row, the rate its own
statistical tests predict.

**With a calibration table** (:mod:`theorycheck.calibrate`, ``reports/calibration-<tier>.json``)
a claim's predicted pass rate is ``1 - bound``, its calibrated false-failure bound (its
deterministic decisions included); a control's predicted pass rate is its miss bound.  The
case is **flaky** when its failures (a control: its misses) are more than that rate explains:
the one-sided exact binomial test of ``failures ~ Bin(runs, bound)`` rejects at level 0.05.
The entry says ``"prediction": "calibration"``.

**Without a row** (``"prediction": "statistical tests"``), the rule below.

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
     "passes", "predicted_pass_rate", "prediction", "failure_rate",
     "outcomes": {outcome: count}, "p_value", "deterministic_failures", "flaky",
     "worst_margins": {decision name: least margin over the seeds}}

``worst_margins`` holds, per decision, its least margin (:mod:`theorycheck.margins`; negative:
it failed) over the seeds that ran.

``runs`` counts the seeds at which the case ran (not skipped / not run).  For a claim,
``passes`` counts outcome ``passed``; it is **flaky** when its failures are more than the
predicted rate explains (one-sided exact binomial test of ``failures ~ Bin(runs, 1 -
predicted)`` at level 0.05; with predicted rate 1, any failure).  For a control, ``passes``
counts the runs in which it passed (``passed_unexpectedly``), ``predicted_pass_rate`` is its
predicted miss rate (passes and misfires; 0 without a calibration row), ``failure_rate`` is the
share of runs in which it failed as it declares, and without a row it is flaky when it did
anything else even once (passed, misfired, errored).
"""
from __future__ import annotations

import multiprocessing
import os
import re
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scipy import stats

from .checks import STATISTICAL
from .errors import UsageError
from .results_layout import RESULTS_FILE, load_results
from .runtime import MAX_SEED, parse_count

__all__ = ["parse_seeds", "MAX_SWEEP_SEEDS", "predicted_pass_rate", "aggregate", "run_seeds",
           "load_runs", "format_sweep", "worst_margins", "FLAKY_ALPHA"]

#: level of the test that calls a claim's failure count too high for its predicted rate
FLAKY_ALPHA = 0.05
#: the most seeds one sweep runs
MAX_SWEEP_SEEDS = 1000
_RAN = ("not_run", "skipped")
#: what the seeds' process server imports once: every seed's pytest is a fresh process forked from
#: it, so the seeds share these imports' start-up (two thirds of a cheap claim's seed:
#: benchmarks/seed_runner.py) and nothing else
PRELOADED = ("numpy", "scipy.linalg", "scipy.optimize", "scipy.stats", "torch", "sympy", "cvxpy", "pytest")


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


def _excess_p_value(failures: int, runs: int, rate: float) -> float:
    """P-value of ``failures`` or more in ``runs`` at the failure ``rate`` (0 when the rate is 0
    and some failed, 1 without failures)."""
    if failures == 0:
        return 1.0
    if rate <= 0.0:
        return 0.0
    return float(stats.binomtest(failures, runs, min(rate, 1.0), alternative="greater").pvalue)


def worst_margins(cases: list[dict]) -> dict[str, float | None]:
    """Per decision name, its least margin over ``cases`` (None where no case had one)."""
    worst: dict[str, float | None] = {}
    from .margins import record_margin

    for case in cases:
        for d in case.get("decisions") or []:
            margin = record_margin(d)
            previous = worst.get(d["name"])
            worst[d["name"]] = margin if previous is None else (
                previous if margin is None else min(previous, margin))
    return worst


def _claim_entry(cid: str, cases: list[dict], row: dict | None) -> dict:
    ran = [c for c in cases if c["outcome"] not in _RAN]
    passes = sum(c["outcome"] == "passed" for c in ran)
    failures = len(ran) - passes
    deterministic = sum(c["outcome"] != "passed" and deterministic_failure(c) for c in ran)
    if row is not None:
        predicted = 1.0 - row["bound"]
        p_value = _excess_p_value(failures, len(ran), row["bound"])
    else:
        predicted = (sum(predicted_pass_rate(c) for c in ran) / len(ran)) if ran else 1.0
        rate = 0.0 if deterministic else 1.0 - predicted
        p_value = _excess_p_value(failures, len(ran), rate)
    return {"id": cid, "control": None, "kind": "claim", "runs": len(ran), "passes": passes,
            "predicted_pass_rate": round(predicted, 6),
            "prediction": "statistical tests" if row is None else "calibration",
            "failure_rate": round(failures / len(ran), 6) if ran else 0.0,
            "outcomes": dict(Counter(c["outcome"] for c in cases)), "p_value": p_value,
            "deterministic_failures": deterministic, "flaky": p_value < FLAKY_ALPHA,
            "worst_margins": worst_margins(ran)}


def _control_entry(cid: str, name: str, cases: list[dict], row: dict | None) -> dict:
    ran = [c for c in cases if c["outcome"] not in _RAN]
    as_declared = sum(c["outcome"] == "failed_as_expected" for c in ran)
    bound = 0.0 if row is None else row["bound"]
    p_value = _excess_p_value(len(ran) - as_declared, len(ran), bound)
    return {"id": cid, "control": name, "kind": "control", "runs": len(ran),
            "passes": sum(c["outcome"] == "passed_unexpectedly" for c in ran),
            "predicted_pass_rate": round(bound, 6),
            "prediction": "no miss expected" if row is None else "calibration",
            "failure_rate": round(as_declared / len(ran), 6) if ran else 0.0,
            "outcomes": dict(Counter(c["outcome"] for c in cases)),
            "p_value": None if row is None else p_value, "flaky": p_value < FLAKY_ALPHA,
            "worst_margins": worst_margins(ran)}


def aggregate(runs: list[dict], table: dict | None = None) -> list[dict]:
    """``seed_sweep`` entries (see the module docstring) from the results of several runs,
    predicted from the calibration ``table``'s rows where it has them."""
    rows = (table or {}).get("claims", {})
    claims: dict[str, list[dict]] = {}
    controls: dict[tuple[str, str], list[dict]] = {}
    for results in runs:
        for claim in results["claims"]:
            claims.setdefault(claim["id"], []).append(claim)
            for control in claim["controls"]:
                controls.setdefault((claim["id"], control["name"]), []).append(control)
    entries = [_claim_entry(cid, cases, (rows.get(cid) or {}).get("claim"))
               for cid, cases in sorted(claims.items())]
    entries += [_control_entry(cid, name, cases, (rows.get(cid) or {}).get("controls", {}).get(name))
                for (cid, name), cases in sorted(controls.items())]
    return entries


def _pytest_to_log(args: list[str], log_path: str) -> None:
    """In a seed's process: pytest ``args`` with stdout and stderr on ``log_path``; the process
    exits with pytest's status."""
    import pytest

    with open(log_path, "w") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        code = int(pytest.main(args))
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(code)


def _seed_processes() -> multiprocessing.context.BaseContext:
    """Where the seeds' processes come from: forked from a server process that imported
    :data:`PRELOADED` (multiprocessing's "forkserver"); a new process each, as a subprocess
    would be, so no state passes between seeds."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOADED))
    return context


def run_seeds(seeds: list[int], pytest_args: list[str], out: Path, jobs: int = 1,
              progress=print) -> dict[int, Path]:
    """Run ``pytest pytest_args --tc-seed s`` for every seed in its own process (``jobs`` at a
    time; :func:`_seed_processes`), each writing its report into ``out/seed<s>`` and its output
    into ``out/seed<s>.log``.  Returns the results.json path of every seed that wrote one."""
    if jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    out.mkdir(parents=True, exist_ok=True)
    context = _seed_processes()

    def one(seed: int) -> tuple[int, int]:
        args = [*pytest_args, "--tc-seed", str(seed), "--tc-report-dir", str(out / f"seed{seed}"),
                "--tc-baseline", "none", "-p", "no:cacheprovider", "-q",
                # the package is imported before pytest starts, as its plugin: nothing to rewrite
                "-W", "ignore::pytest.PytestAssertRewriteWarning"]
        process = context.Process(target=_pytest_to_log, args=(args, str(out / f"seed{seed}.log")))
        process.start()
        process.join()
        progress(f"seed {seed}: pytest exit status {process.exitcode}")
        return seed, process.exitcode

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        codes = dict(pool.map(one, seeds))
    found = {s: out / f"seed{s}" / RESULTS_FILE for s in seeds}
    missing = [s for s, path in found.items() if not path.is_file()]
    if missing:
        progress(f"no results from seeds {missing} (exit statuses "
                 f"{[codes[s] for s in missing]}; see their logs in {out})")
    return {s: path for s, path in found.items() if path.is_file()}


def load_runs(paths: dict[int, Path]) -> list[dict]:
    """The results documents of a sweep's runs (seed -> results.json path), by seed."""
    return [load_results(path) for _, path in sorted(paths.items())]


def _worst_line(worst: dict[str, float | None]) -> str:
    """The three least margins of an entry, as text."""
    known = sorted((m, name) for name, m in worst.items() if m is not None)[:3]
    return "; worst margins " + ", ".join(f"{name} {m:.3g}" for m, name in known) if known else ""


def format_sweep(entries: list[dict]) -> list[str]:
    """The flaky entries, one line each, then a count line."""
    lines = []
    for e in entries:
        if not e["flaky"]:
            continue
        who = e["id"] + (f" [control {e['control']}]" if e["control"] else "")
        worst = _worst_line(e.get("worst_margins") or {})
        if e["kind"] == "claim":
            lines.append(f"FLAKY {who}: passed {e['passes']}/{e['runs']}, predicted rate "
                         f"{e['predicted_pass_rate']:.6g} from {e.get('prediction')} "
                         f"(p = {e['p_value']:.2g}); {e['outcomes']}{worst}")
        else:
            lines.append(f"FLAKY {who}: failed as declared in {round(e['failure_rate'] * e['runs'])}"
                         f"/{e['runs']} runs, predicted miss rate {e['predicted_pass_rate']:.3g} "
                         f"({e.get('prediction')}); {e['outcomes']}{worst}")
    claims = [e for e in entries if e["kind"] == "claim"]
    lines.append(f"{len(claims)} claims, {len(entries) - len(claims)} controls over the sweep; "
                 f"{sum(e['flaky'] for e in entries)} flaky")
    return lines

