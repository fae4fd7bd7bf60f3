"""The pytest plugin: options, the ``tc`` fixture, result collection, the report.

Registered through the ``pytest11`` entry point, so it is active whenever theorycheck is
installed.  Options (each also settable through an environment variable):

``--tc-tier quick|full``        problem sizes (``THEORYCHECK_TIER``; default quick)
``--tc-device auto|cpu|cuda``   where torch runs (``THEORYCHECK_DEVICE``; default auto)
``--tc-dtype float64|float32``  torch dtype (``THEORYCHECK_DTYPE``; default float64)
``--tc-seed N``                 base seed (``THEORYCHECK_SEED``; default 0)
``--tc-threads N``              CPU threads of torch and of numpy/scipy's BLAS (default 1)
``--tc-report-dir DIR``         where the report goes (default ``reports/latest`` under rootdir)
``--tc-no-report``              do not write a report
``--tc-cache-dir DIR``          cache of shared runs (``THEORYCHECK_CACHE_DIR``; default
                                ``<rootdir>/.theorycheck-cache``), see :mod:`theorycheck.cache`
``--tc-no-cache``               neither read nor write that cache (the process memo stays)

Under pytest-xdist's default distribution (``-n N`` without ``--dist``) the cases of one test
function -- a claim and its controls -- are sent to one worker as a unit, so the controls
reuse the runs their claim cached instead of recomputing them on another worker.  (xdist's
own ``loadgroup`` mode would need ``xdist_group`` marks, which pytest 9.2 no longer honours.)

Under pytest-xdist each worker attaches its claim records to the test reports
(``user_properties``, which xdist ships to the controller); the controller alone merges
them and writes ``results.json``, ``report.md``, ``report.html`` and the plots.
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from . import __version__
from .claim import CLAIM_VARIANT
from .cache import SharedRunCache, cache_from_options
from .context import ClaimContext
from .errors import ClaimFailure, HypothesesNotMet, UsageError, error_kind
from .papers import papers
from .runtime import Runtime, default_options_from_env

RECORD_KEY = "theorycheck"
_RUNTIME = pytest.StashKey[Runtime]()
_CACHE = pytest.StashKey[SharedRunCache]()


def pytest_addoption(parser):
    env = default_options_from_env()
    group = parser.getgroup("theorycheck", "executable claims")
    group.addoption("--tc-tier", default=env["tier"], help="problem sizes: quick (default) or full")
    group.addoption("--tc-device", default=env["device"], help="auto (default), cpu or cuda")
    group.addoption("--tc-dtype", default=env["dtype"], help="float64 (default) or float32")
    group.addoption("--tc-seed", default=env["seed"], type=int, help="base seed of the run (default 0)")
    group.addoption("--tc-threads", default=1, type=int,
                    help="CPU threads of torch and of the BLAS under numpy/scipy (default 1)")
    group.addoption("--tc-report-dir", default=None,
                    help="report directory (default: <rootdir>/reports/latest)")
    group.addoption("--tc-no-report", action="store_true", help="do not write the report")
    group.addoption("--tc-cache-dir", default=None, help="cache of shared runs (default: "
                    "$THEORYCHECK_CACHE_DIR or <rootdir>/.theorycheck-cache)")
    group.addoption("--tc-no-cache", action="store_true",
                    help="neither read nor write the on-disk cache of shared runs")


def pytest_configure(config):
    config.addinivalue_line("markers", "claim: the claim's own case of an executable claim")
    config.addinivalue_line("markers", "control: a negative control of an executable claim (must fail)")
    try:
        runtime = Runtime.from_options(
            tier=config.getoption("--tc-tier"), device=config.getoption("--tc-device"),
            dtype=config.getoption("--tc-dtype"), seed=config.getoption("--tc-seed"),
            threads=config.getoption("--tc-threads"),
        )
    except UsageError as exc:
        raise pytest.UsageError(f"theorycheck: {exc}") from None
    runtime.apply_torch_settings()
    config.stash[_RUNTIME] = runtime
    try:
        config.stash[_CACHE] = cache_from_options(
            config.rootpath, config.invocation_params.dir, config.getoption("--tc-cache-dir"),
            config.getoption("--tc-no-cache"))
    except UsageError as exc:
        raise pytest.UsageError(f"theorycheck: {exc}") from None
    if not hasattr(config, "workerinput"):  # the xdist controller, or a plain run
        config.pluginmanager.register(ResultCollector(config, runtime), "theorycheck-results")


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
    context = ClaimContext(spec, getattr(request, "param", None), request.config.stash[_RUNTIME],
                           cache=request.config.stash[_CACHE])
    request.node.stash[_CONTEXT] = context
    return context


_CONTEXT = pytest.StashKey[ClaimContext]()


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
    )
    report.user_properties.append((RECORD_KEY, json.dumps(record)))


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
    return CLAIM_VARIANT if control is None else f"control-{control}"


class ResultCollector:
    """Merges the claim records of one run (from this process or from xdist workers) and
    writes the report at the end of the session.  A plugin object of the controller."""

    def __init__(self, config, runtime: Runtime):
        self.config = config
        self.runtime = runtime
        self.started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.t0 = time.perf_counter()
        self.records: dict[tuple[str, str], dict] = {}
        self.report_path: Path | None = None
        self.summary: str | None = None

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties:
            if key == RECORD_KEY:
                self.add(report, json.loads(value))

    def pytest_sessionfinish(self, session):
        if self.records and not self.config.getoption("--tc-no-report"):
            self.report_path = self.write()

    def pytest_terminal_summary(self, terminalreporter):
        if self.report_path is not None:
            terminalreporter.write_sep("-", "theorycheck report")
            terminalreporter.write_line(self.summary)
            terminalreporter.write_line(f"report: {self.report_path / 'report.html'}")

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
        from .report.results import assemble_results

        return assemble_results(
            runtime=self.runtime, started=self.started, version=__version__,
            wall_time_s=time.perf_counter() - self.t0, records=list(self.records.values()),
        )

    def report_dir(self) -> Path:
        option = self.config.getoption("--tc-report-dir")
        return Path(option) if option else Path(self.config.rootpath) / "reports" / "latest"

    def write(self) -> Path:
        """Assemble the results once, write the report, keep its one-line summary."""
        from .report import summarize, write_report

        results = self.results()
        self.summary = summarize(results)
        return write_report(results, self.report_dir())


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
