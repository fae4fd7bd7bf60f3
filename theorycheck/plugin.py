"""The pytest plugin: options, the ``tc`` fixture, result collection, the report.

Registered through the ``pytest11`` entry point, so it is active whenever theorycheck is
installed.  Options (each also settable through an environment variable):

``--tc-tier quick|full``        problem sizes (``THEORYCHECK_TIER``; default quick)
``--tc-device auto|cpu|cuda``   where torch runs (``THEORYCHECK_DEVICE``; default auto)
``--tc-dtype float64|float32``  torch dtype (``THEORYCHECK_DTYPE``; default float64)
``--tc-seed N``                 base seed, 0 to 2**63 - 1 (``THEORYCHECK_SEED``; default 0)
``--tc-threads N``              CPU threads of torch and of numpy/scipy's BLAS, 1 to 1024 (default 1)
``--tc-report-dir DIR``         write the report into DIR (no run folder, ``latest`` untouched);
                                DIR must be new, empty or a report's (see docs/guarantees.md)
``--tc-no-report``              do not write a report
``--tc-strict``                 a check that cannot discriminate (a decision with warnings: a
                                bound below the dtype's resolution, a control whose numbers
                                equal its claim's) fails the run
``--tc-baseline FILE``          compare the run with a digest or results.json (default
                                ``reports/baseline-<tier>.json`` when it exists; ``none``: off)
``--tc-cache-dir DIR``          cache of shared runs (``THEORYCHECK_CACHE_DIR``; default
                                ``<rootdir>/.theorycheck-cache``), see :mod:`theorycheck.cache`
``--tc-no-cache``               neither read nor write that cache (the process memo stays)

Under pytest-xdist's default distribution (``-n N`` without ``--dist``) the cases of one test
function -- a claim and its controls -- are sent to one worker as a unit, so the controls
reuse the runs their claim cached instead of recomputing them on another worker.  (xdist's
own ``loadgroup`` mode would need ``xdist_group`` marks, which pytest 9.2 no longer honours.)

Every run that executes claims writes ``reports/runs/<UTC time>-<tier>-seed<seed>/`` and, when
it is complete, points ``reports/latest`` (and the pointer file ``reports/LATEST``) at it; a
*partial* run (a path below ``claims/``, ``-k``, ``-m``, ``--deselect``, ``--lf``, an early
stop) gets a ``-partial`` folder and leaves ``latest`` alone (see :mod:`theorycheck.history`).
Each collection writes the claims manifest ``theorycheck list`` reads
(:mod:`theorycheck.manifest`).  ``-ra`` lists the expected failures of the negative controls
only when asked for by name (``-rx``); otherwise the summary counts them in one line.

Under pytest-xdist each worker attaches its claim records to the test reports
(``user_properties``, which xdist ships to the controller); the controller alone merges
them and writes ``results.json``, ``report.md``, ``report.html`` and the plots.
"""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from . import __version__
from .claim import registry
from .cache import SharedRunCache, cache_from_options
from .context import ClaimContext
from .evidence import classify_controls
from .errors import (CannotDiscriminate, ClaimFailure, ControlMisfire, HypothesesNotMet,
                     InvalidInputError, UsageError, error_kind)
from .files import WriteError
from .papers import papers
from .runtime import (MAX_SEED, MAX_THREADS, Runtime, default_options_from_env, parse_count,
                      peak_memory_mb, reset_peak_memory)
from . import history
from .manifest import write_manifest
from .results_layout import CLAIM_VARIANT, cases_of, load_results, unit_of, variant_id

RECORD_KEY = "theorycheck"
_RUNTIME = pytest.StashKey[Runtime]()
_CACHE = pytest.StashKey[SharedRunCache]()


def pytest_addoption(parser):
    env = default_options_from_env()
    group = parser.getgroup("theorycheck", "executable claims")
    group.addoption("--tc-tier", default=env["tier"], help="problem sizes: quick (default) or full")
    group.addoption("--tc-device", default=env["device"], help="auto (default), cpu or cuda")
    group.addoption("--tc-dtype", default=env["dtype"], help="float64 (default) or float32")
    group.addoption("--tc-seed", default=None,
                    help="base seed of the run, 0 to 2**63 - 1 (default $THEORYCHECK_SEED, else 0)")
    group.addoption("--tc-threads", default="1",
                    help="CPU threads of torch and of the BLAS under numpy/scipy, 1 to 1024 (default 1)")
    group.addoption("--tc-report-dir", default=None,
                    help="write the report into this directory, new, empty or a report's "
                         "(default: a new folder "
                         "<rootdir>/reports/runs/<time>-<tier>-seed<seed>/, and reports/latest "
                         "pointing at it when the run is complete)")
    group.addoption("--tc-no-report", action="store_true", help="do not write the report")
    group.addoption("--tc-strict", action="store_true",
                    help="fail a case whose checks cannot discriminate (decisions with warnings)")
    group.addoption("--tc-baseline", default=None,
                    help="digest or results.json to compare the run with (default: "
                         "reports/baseline-<tier>.json when it exists; 'none' turns it off)")
    group.addoption("--tc-cache-dir", default=None, help="cache of shared runs (default: "
                    "$THEORYCHECK_CACHE_DIR or <rootdir>/.theorycheck-cache)")
    group.addoption("--tc-no-cache", action="store_true",
                    help="neither read nor write the on-disk cache of shared runs")
    group.addoption("--tc-shard", default=None,
                    help="I/N: run only shard I of N (each claim with its controls; balanced by "
                         "--tc-durations); merge the shards' runs with `theorycheck merge`")
    group.addoption("--tc-durations", default=None,
                    help="a results.json whose per-claim wall times balance --tc-shard")


#: the plugin's options; a mistyped one gets a suggestion instead of pytest's bare refusal
OPTIONS = ("--tc-tier", "--tc-device", "--tc-dtype", "--tc-seed", "--tc-threads", "--tc-report-dir",
           "--tc-no-report", "--tc-strict", "--tc-baseline", "--tc-cache-dir", "--tc-no-cache",
           "--tc-shard", "--tc-durations")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Name a mistyped ``--tc-*`` option and the one meant (pytest would only say
    'unrecognized arguments')."""
    import difflib

    for arg in args:
        name = arg.split("=", 1)[0]
        if name.startswith("--tc") and name not in OPTIONS:
            guess = difflib.get_close_matches(name, OPTIONS, n=1, cutoff=0.6)
            hint = f"; did you mean {guess[0]}?" if guess else f"; the options are {', '.join(OPTIONS)}"
            raise pytest.UsageError(f"theorycheck: unknown option {name}{hint}")


def pytest_configure(config):
    config.addinivalue_line("markers", "claim: the claim's own case of an executable claim")
    config.addinivalue_line("markers", "control: a negative control of an executable claim (must fail)")
    seed = config.getoption("--tc-seed")
    try:
        runtime = Runtime.from_options(
            tier=config.getoption("--tc-tier"), device=config.getoption("--tc-device"),
            dtype=config.getoption("--tc-dtype"),
            seed=(parse_count("--tc-seed", seed, 0, MAX_SEED) if seed is not None else
                  parse_count("THEORYCHECK_SEED", default_options_from_env()["seed"], 0, MAX_SEED)),
            threads=parse_count("--tc-threads", config.getoption("--tc-threads"), 1, MAX_THREADS),
            strict=config.getoption("--tc-strict"),
        )
    except UsageError as exc:
        raise pytest.UsageError(f"theorycheck: {exc}") from None
    runtime.apply_torch_settings()
    config.stash[_RUNTIME] = runtime
    # a claim file that fails to import is an error of that file (the report lists it and the
    # run exits non-zero); the other claims still run: pytest's --continue-on-collection-errors
    config.option.continue_on_collection_errors = True
    try:
        config.stash[_CACHE] = cache_from_options(
            config.rootpath, config.invocation_params.dir, config.getoption("--tc-cache-dir"),
            config.getoption("--tc-no-cache"))
    except UsageError as exc:
        raise pytest.UsageError(f"theorycheck: {exc}") from None
    if not hasattr(config, "workerinput"):  # the xdist controller, or a plain run
        _check_report_dir(config)
        config.pluginmanager.register(ResultCollector(config, runtime), "theorycheck-results")


def _check_report_dir(config) -> None:
    """Refuse a ``--tc-report-dir`` holding files no report made before anything runs."""
    from .report import check_report_folder

    option = config.getoption("--tc-report-dir")
    if option and not config.getoption("--tc-no-report"):
        try:
            check_report_folder(Path(config.invocation_params.dir) / option)
        except WriteError as exc:
            raise pytest.UsageError(f"theorycheck: --tc-report-dir: {exc}") from None


def pytest_collection_modifyitems(config, items):
    """``--tc-shard I/N``: keep the units (a claim function with its controls) that the LPT
    schedule over ``--tc-durations`` puts in shard I (:mod:`theorycheck.shards`)."""
    from . import shards

    option = config.getoption("--tc-shard")
    if not option:
        return
    try:
        index, count = shards.parse_shard(option)
        path = config.getoption("--tc-durations")
        durations = {}
        if path:
            durations = shards.unit_durations(load_results(Path(config.invocation_params.dir) / path))
    except (UsageError, InvalidInputError) as exc:
        raise pytest.UsageError(f"theorycheck: --tc-durations: {exc}") from None
    plan = shards.schedule([unit_of(i.nodeid) for i in items], durations, count)
    mine = set(plan[index - 1]["units"])
    keep = [i for i in items if unit_of(i.nodeid) in mine]
    dropped = [i for i in items if unit_of(i.nodeid) not in mine]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's ``load`` mode, with the parametrized cases of one test function as one unit."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FunctionScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid.split("[", 1)[0]

    return FunctionScopeScheduling(config, log)


@pytest.fixture
def tc(request) -> ClaimContext:
    """The claim context: settings, seeded streams, tier sizes, and the decision recorder."""
    spec = getattr(request.function, "__theorycheck_claim__", None)
    if spec is None:
        raise pytest.UsageError(f"{request.node.nodeid}: the 'tc' fixture is for functions "
                                "declared with @theorycheck.claim")
    runtime = request.config.stash[_RUNTIME]
    if runtime.dtype not in spec.dtypes:
        pytest.skip(f"{spec.id} is written for {', '.join(spec.dtypes)} (its tolerances and "
                    f"numerics), not --tc-dtype {runtime.dtype}: declare dtypes=... once it is")
    context = ClaimContext(spec, getattr(request, "param", None), runtime,
                           cache=request.config.stash[_CACHE])
    request.node.stash[_CONTEXT] = context
    return context


_CONTEXT = pytest.StashKey[ClaimContext]()
_COST = pytest.StashKey[dict]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """The cost of a claim case's call: process CPU seconds (every thread) and the resident
    peak in MiB over the call, freed C-library memory given back first (the shared runs it
    computes count toward the first case that uses them)."""
    measured = reset_peak_memory()
    cpu = time.process_time()
    yield
    item.stash[_COST] = {"cpu_s": round(time.process_time() - cpu, 4),
                         "peak_rss_mb": peak_memory_mb() if measured else None}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    context = item.stash.get(_CONTEXT, None)
    spec = getattr(getattr(item, "function", None), "__theorycheck_claim__", None)
    if spec is None or (call.when != "call" and not report.failed):
        return
    record = context.to_json() if context is not None else {
        "id": spec.id, "variant": _variant_of(item), "decisions": [], "measurements": {},
        "plots": [], "failed_conclusions": [], "failed_preconditions": [], "sizes": {}, "seeds": {}}
    exc = None if call.excinfo is None else call.excinfo.value
    registered = papers.get(spec.paper)
    record.update(
        spec=spec.to_json(),
        paper_info=None if registered is None else registered.to_json(),
        phase=call.when,
        exception=None if exc is None else type(exc).__name__,
        error_kind=None if exc is None else error_kind(exc),
        failure=_failure_of(exc),
        message=None if exc is None else str(exc)[:4000],
        **item.stash.get(_COST, {}),
    )
    report.user_properties.append((RECORD_KEY, json.dumps(record)))
    if report.failed and isinstance(exc, (ClaimFailure, ControlMisfire, CannotDiscriminate)) \
            and item.config.getoption("tbstyle") in ("auto", "short"):
        # the decisions first: the library's frames say nothing a reader of the claim needs
        where = item.location
        report.longrepr = (f"{type(exc).__name__}: {exc}\n\n{where[0]}:{(where[1] or 0) + 1}: {spec.id} "
                           f"[{record['variant']}] (--tb=long shows the traceback)")


def _failure_of(exc: BaseException | None) -> str | None:
    """``"hypotheses"`` for :class:`HypothesesNotMet`, ``"conclusions"`` for any other
    :class:`ClaimFailure`, ``None`` for no exception or an error."""
    if isinstance(exc, HypothesesNotMet):
        return "hypotheses"
    if isinstance(exc, ClaimFailure):
        return "conclusions"
    return None


def _variant_of(item) -> str:
    callspec = getattr(item, "callspec", None)
    control = callspec.params.get("tc") if callspec is not None else None
    return variant_id(control)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """Write the claims manifest (one process: the first xdist worker, or the plain run)."""
    config = session.config
    if getattr(config, "workerinput", {}).get("workerid", "gw0") != "gw0":
        return
    write_manifest(config.rootpath, list(registry.values()), {item.path for item in session.items})


class ResultCollector:
    """Merges the claim records of one run (from this process or from xdist workers) and
    writes the report at the end of the session.  A plugin object of the controller."""

    def __init__(self, config, runtime: Runtime):
        self.config = config
        self.runtime = runtime
        self.started_at = datetime.now(timezone.utc)
        self.started = self.started_at.isoformat(timespec="seconds")
        self.t0 = time.perf_counter()
        self.records: dict[tuple[str, str], dict] = {}
        #: the files that failed to import: {"path", "message"} (pytest's collection errors)
        self.collection_errors: list[dict] = []
        self.report_path: Path | None = None
        self.pointer: str | None = None          # the pointer moved to this run's folder
        self.pointer_error: str | None = None
        self.write_error: str | None = None
        self.summary: str | None = None
        self.results_doc: dict | None = None
        self.partial: str | None = None
        self.deselected = 0
        self.drift: list[str] = []
        self.undiscriminating: list[str] = []
        self.xfail_lines_hidden = False
        self.exitstatus = None
        self.baseline = _baseline_path(config, runtime.tier)

    def pytest_sessionstart(self, session):
        """Under ``-ra``, leave the controls' expected failures out of the short summary
        (one line in ours counts them); ``-rx`` by name still lists them."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and "x" in reporter.reportchars and \
                "x" not in (self.config.option.reportchars or ""):
            reporter.reportchars = reporter.reportchars.replace("x", "")
            self.xfail_lines_hidden = True

    def pytest_deselected(self, items):
        self.deselected += len(items)

    def pytest_collectreport(self, report):
        if report.failed:
            self.collection_errors.append({"path": report.nodeid or str(report.fspath),
                                           "message": report.longreprtext[-4000:]})

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties:
            if key == RECORD_KEY:
                self.add(report, json.loads(value))

    def pytest_sessionfinish(self, session, exitstatus):
        """The run-level decisions (evidence classes, strict findings, drift against the
        baseline) for every run, then the report unless ``--tc-no-report``: a report that
        cannot be written is one error line and exit status 3, never a traceback."""
        if not self.records and not self.collection_errors:
            return
        self.partial = partial_reason(self.config, session, exitstatus, self.deselected,
                                      len(self.collection_errors))
        self.results_doc = self.results()
        if not self.config.getoption("--tc-no-report"):
            try:
                self.report_path = self.write(self.results_doc)
            except (WriteError, InvalidInputError) as exc:
                self.write_error = str(exc)
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        if self.undiscriminating and self.runtime.strict and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.exitstatus = session.exitstatus

    def pytest_terminal_summary(self, terminalreporter, exitstatus):
        if not self.records:
            return
        tr = terminalreporter
        tr.write_sep("-", "theorycheck")
        tr.write_line(run_counts_line(tr, self.exitstatus if self.exitstatus is not None else exitstatus))
        if self.summary is not None:
            tr.write_line(self.summary)
        outside = [r.nodeid for kind in ("failed", "error") for r in tr.stats.get(kind, [])
                   if not any(key == RECORD_KEY for key, _ in getattr(r, "user_properties", []))]
        if outside:
            tr.write_line(f"not counted among the claims: {len(outside)} failed or erroring "
                          f"tests: {', '.join(outside[:5])}" + (" ..." if len(outside) > 5 else ""),
                          red=True)
        if self.xfail_lines_hidden and tr.stats.get("xfailed"):
            tr.write_line(f"{len(tr.stats['xfailed'])} expected failures (xfail: the negative "
                          "controls failing as they declare) not listed one by one; -rx lists them")
        for line in (self.results_doc or {}).get("plot_warnings", []):
            tr.write_line("warning: " + line, yellow=True)
        for line in self.undiscriminating:
            tr.write_line(("error: " if self.runtime.strict else "warning: ") + line,
                          yellow=not self.runtime.strict, red=self.runtime.strict)
        if len(self.drift) > 1:
            tr.write_sep("-", "theorycheck: drift against the baseline (a warning, not a failure)")
            for line in self.drift:
                tr.write_line(line, yellow=True)
        elif self.drift:
            tr.write_line(self.drift[0])
        if self.write_error is not None:
            tr.write_line(f"error: the report was not written: {self.write_error}", red=True)
        if self.report_path is not None:
            if self.partial and self.pointer:
                tr.write_line(f"partial run ({self.partial}): reports/{self.pointer} points at it; "
                              "reports/latest still shows the last complete run")
            elif self.partial:
                tr.write_line(f"partial run ({self.partial})")
            if self.pointer_error:
                tr.write_line("warning: " + self.pointer_error, yellow=True)
            tr.write_line(f"report: {self.report_path / 'report.html'}")

    def add(self, report, record: dict) -> None:
        key = (record["id"], record["variant"])
        record["outcome"] = _case_outcome(report, record)
        record["duration_s"] = round(report.duration, 4)
        previous = self.records.get(key)
        if previous is None:
            self.records[key] = record
        elif record["outcome"] == "error":  # an error in teardown spoils the case
            previous.update(outcome="error", phase=record["phase"], message=record.get("message"))

    def results(self) -> dict:
        """The run's results with every run-level decision taken: assembled, annotated
        (evidence classes, strict findings: :func:`annotate_run`) and compared with the
        baseline -- for every run, with a report or without."""
        from .report.results import assemble_results

        results = assemble_results(
            runtime=self.runtime, started=self.started, version=__version__,
            wall_time_s=time.perf_counter() - self.t0, records=list(self.records.values()),
        )
        self.undiscriminating = annotate_run(results, commit=history.git_commit(self.config.rootpath),
                                       partial=self.partial)
        results["shard"] = self.config.getoption("--tc-shard")
        results["collection_errors"] = self.collection_errors
        attach_calibration(results, self.reports_root() / f"calibration-{self.runtime.tier}.json")
        if self.baseline is not None:
            self.drift = compare_with_baseline(results, self.baseline, self.config.rootpath)
        return results

    def report_dir(self) -> Path:
        option = self.config.getoption("--tc-report-dir")
        if option:
            return Path(option)
        name = history.run_folder_name(self.started_at, self.runtime.tier, self.runtime.seed,
                                       self.partial is not None)
        return history.new_run_dir(self.reports_root(), name)

    def reports_root(self) -> Path:
        return Path(self.config.rootpath) / "reports"

    def write(self, results: dict) -> Path:
        """Write the report of ``results`` into its folder, keep its one-line summary, and
        point ``reports/latest`` (``latest-partial``) at it unless ``--tc-report-dir``."""
        from .report import summarize, write_report

        self.summary = summarize(results)
        out = write_report(results, self.report_dir())
        if not self.config.getoption("--tc-report-dir"):
            name = "latest" if self.partial is None else "latest-partial"
            try:
                history.point_latest(self.reports_root(), out, name)
                self.pointer = name
            except WriteError as exc:
                self.pointer_error = f"reports/{name} not moved to this run: {exc}"
        return out


def attach_calibration(results: dict, path: Path) -> None:
    """Copy the rows of the calibration table at ``path`` (when there is one) into the run's
    claims and controls (:func:`theorycheck.calibrate.attach_bounds`); a table that cannot be
    read is left out with a warning in the results' plot-and-report warnings."""
    from .calibrate import attach_bounds, load_table

    if not path.is_file():
        return
    try:
        attach_bounds(results, load_table(path))
    except UsageError as exc:
        results.setdefault("plot_warnings", []).append(f"calibration table not shown: {exc}")


def _baseline_path(config, tier: str) -> Path | None:
    """The baseline a run is compared with: ``--tc-baseline`` (``none``: no comparison), else
    ``<rootdir>/reports/baseline-<tier>.json`` when that file exists."""
    option = config.getoption("--tc-baseline")
    if option is not None and option.lower() == "none":
        return None
    if option is None:
        default = Path(config.rootpath) / "reports" / f"baseline-{tier}.json"
        return default if default.is_file() else None
    path = Path(config.invocation_params.dir) / option
    if not path.is_file():
        raise pytest.UsageError(f"theorycheck: --tc-baseline {option!r}: no such file")
    return path


def compare_with_baseline(results: dict, path: Path, rootdir: Path | None = None) -> list[str]:
    """Store the differences of ``results`` from the baseline at ``path`` in
    ``results["baseline_diff"]`` and return them as terminal lines (setting notes first); a
    baseline that cannot be read or is malformed is a line in ``results["run_warnings"]``.  The
    baseline's path is stored relative to ``rootdir`` (a report holds no absolute path)."""
    try:
        base = history.load_comparable(path)
    except UsageError as exc:
        results.setdefault("run_warnings", []).append(f"baseline not compared: {exc}")
        return [f"baseline not compared: {exc}"]
    new = history.digest(results)
    changes = history.diff_digests(base, new, only_new=bool(results.get("partial")))
    results["baseline_diff"] = changes
    shown = os.path.relpath(path, rootdir) if rootdir is not None else Path(path).name
    results["baseline"] = {"path": shown, "commit": base.get("commit"),
                           "seed": base.get("seed"), "tier": base.get("tier")}
    notes = [f"note: {n}" for n in history.setting_warnings(base, new)]
    head = f"{len(changes)} differences from {path.name} (commit {str(base.get('commit'))[:10]})"
    return [head] + notes + history.format_diff(changes, limit=30)


def annotate_run(results: dict, *, commit: str | None, partial: str | None) -> list[str]:
    """Add the run-level fields the report shows -- ``commit``, ``partial`` (and its reason),
    an empty ``seed_sweep`` and ``baseline_diff``, per claim ``wall_s`` and ``cost`` (wall and
    CPU seconds of the claim's case and its controls, the highest of their resident peaks), per decision ``warnings``, each control's evidence class and each claim's
    count of independent controls (:mod:`theorycheck.evidence`; a claim with none and no declared
    ``single_evidence`` reason is listed) -- and warn on every ``dynamics`` or
    ``hypothesis`` control whose numbers all equal its claim's (it computes its own run, so
    equal numbers mean it did not perturb what the checks see: listed in ``run_findings``, the
    control's decisions and their verdicts are left as they were).  Returns the terminal lines
    of every decision carrying a warning (its check's, see :mod:`theorycheck.checks`) and of
    every such control."""
    results.update(commit=commit, partial=partial is not None, partial_reason=partial,
                   seed_sweep=[], baseline_diff=[])
    undiscriminating = []
    for claim in results["claims"]:
        _add_cost(claim)
        undiscriminating += _warned_decisions(claim)
        findings = [*_evidence_finding(claim), *_same_number_findings(claim)]
        undiscriminating += findings
        if findings:
            results.setdefault("run_findings", []).extend(findings)
    return undiscriminating


def _add_cost(claim: dict) -> None:
    """``wall_s`` and ``cost`` of a claim entry: wall and CPU seconds of its case and its
    controls summed, the highest of their resident peaks."""
    cases = cases_of(claim)
    claim["wall_s"] = round(sum(case["duration_s"] for case in cases), 4)
    peaks = [case["peak_rss_mb"] for case in cases if case.get("peak_rss_mb") is not None]
    claim["cost"] = {"wall_s": claim["wall_s"], "peak_rss_mb": max(peaks, default=None),
                     "cpu_s": round(sum(case.get("cpu_s") or 0.0 for case in cases), 4)}


def _warned_decisions(claim: dict) -> list[str]:
    """A line per decision of the claim's cases carrying a warning (its check cannot
    discriminate); every decision gets its ``warnings`` list."""
    lines = []
    for case in cases_of(claim):
        for decision in case["decisions"]:
            decision.setdefault("warnings", [])
            if decision["warnings"]:
                where = "" if case is claim else f" [control {case['name']}]"
                lines.append(f"{claim['id']}{where}: {decision['name']!r} cannot "
                             f"discriminate: {decision['warnings'][0]}")
    return lines


def _evidence_finding(claim: dict) -> list[str]:
    """Classify the claim's controls (:func:`theorycheck.evidence.classify_controls`); the
    finding when none is independent and the claim declares no ``single_evidence`` reason."""
    if classify_controls(claim) != 0 or claim.get("single_evidence"):
        return []
    return [f"{claim['id']}: no independent control (no conclusion a control broke was "
            "decided after a computation of its own: a shared run, draw, solver call or "
            "trajectory run the claim did not make): add one that recomputes under perturbed "
            "data, reference or dynamics, or declare why not (@claim(single_evidence=...))"]


def _same_number_findings(claim: dict) -> list[str]:
    """The claim's ``dynamics`` and ``hypothesis`` controls whose numbers all equal its own."""
    return [f"{claim['id']} [control {control['name']}]: every measured value equals "
            f"the claim's; a {control['kind']} control must compute its own run"
            for control in claim["controls"]
            if control["kind"] in ("dynamics", "hypothesis") and _same_numbers(claim, control)]


def _same_numbers(claim: dict, control: dict) -> bool:
    """Whether every decision the control shares (by name) with its claim measured the same
    value, and the shared measurements are equal (with at least one thing compared)."""
    mine = {d["name"]: d["measured"] for d in claim["decisions"]}
    shared = [d for d in control["decisions"] if d["name"] in mine]
    measurements = set(claim["measurements"]) & set(control["measurements"])
    if not shared or claim["outcome"] in ("not_run", "skipped") or control["outcome"] in (
            "not_run", "skipped", "error"):
        return False
    return (all(d["measured"] == mine[d["name"]] for d in shared)
            and all(claim["measurements"][m] == control["measurements"][m] for m in measurements))


def partial_reason(config, session, exitstatus, deselected: int,
                   import_errors: int = 0) -> str | None:
    """Why this run did not execute every claim of the project (``None``: it did)."""
    if import_errors:
        return f"{import_errors} file{'s' if import_errors != 1 else ''} failed to import"
    option = config.option
    for flag, value in (("-k", getattr(option, "keyword", "")), ("-m", getattr(option, "markexpr", "")),
                        ("--deselect", getattr(option, "deselect", None)),
                        ("--lf", getattr(option, "lf", False)),
                        ("--sw", getattr(option, "stepwise", False))):
        if value:
            return flag if value is True else f"{flag} {value}"
    if getattr(option, "tc_shard", None):
        return f"shard {option.tc_shard}"
    if deselected:
        return f"{deselected} cases deselected"
    if session.shouldstop or session.shouldfail or exitstatus == pytest.ExitCode.INTERRUPTED:
        return "stopped early"
    root = Path(config.rootpath)
    target = root / "claims" if (root / "claims").is_dir() else root
    paths = [(Path(config.invocation_params.dir) / str(a).split("::")[0]).resolve()
             for a in config.args]
    if not any(p == target.resolve() or p in target.resolve().parents for p in paths):
        return "ran " + " ".join(map(str, config.args))
    if any("::" in str(a) for a in config.args):
        return "ran " + " ".join(map(str, config.args))
    return None


def run_counts_line(terminalreporter, exitstatus) -> str:
    """What pytest counted (its own summary line) and whether the run is green."""
    parts, _ = terminalreporter.build_summary_stats_line()
    verdict = "GREEN" if int(exitstatus) == 0 else f"RED (exit status {int(exitstatus)})"
    return f"pytest: {', '.join(text for text, _ in parts)} -- {verdict}"


def _case_outcome(report, record: dict) -> str:
    """Map a pytest report of one case to the report's vocabulary.

    Claim cases: passed | failed (a conclusion failed) | hypotheses_not_met (a precondition
    failed) | error (anything else) | skipped.
    Control cases: failed_as_expected | passed_unexpectedly | misfired (failed, but not by
    breaking a declared conclusion: :class:`ControlMisfire`) | error | skipped.
    """
    is_control = record["variant"] != CLAIM_VARIANT
    if report.when != "call":
        return "skipped" if report.skipped else "error"
    if is_control:
        if getattr(report, "wasxfail", None) is not None and report.skipped:
            return "failed_as_expected"
        if report.failed and record.get("exception") is None:
            return "passed_unexpectedly"
        if report.failed and record.get("error_kind") == "control":
            return "misfired"
        return "skipped" if report.skipped else "error"
    if report.passed:
        return "passed"
    if report.skipped:
        return "skipped"
    return {"hypotheses": "hypotheses_not_met", "conclusions": "failed"}.get(record.get("failure"),
                                                                              "error")
