"""The conformance suites cover what the paper packages register: before the test modules are
collected (their parametrizations read `MODELS` and `OPTIMIZERS`), every non-test module of
every paper package under ``<rootdir>/claims`` is imported (`theorycheck.discovery`).

The step times that `test_step_time_is_reported_beside_the_librarys` records (its
``user_properties``, which reach the controller under xdist too) are printed as a table at the
end of the run."""
import pytest

STEP_TIMES = []

from theorycheck.discovery import import_paper_modules


def pytest_configure(config):
    root = config.rootpath / "claims"
    if (root / "__init__.py").exists():
        import_paper_modules(root)


@pytest.fixture(scope="session")
def claims_root(pytestconfig):
    """``<rootdir>/claims``: the paper packages."""
    return pytestconfig.rootpath / "claims"


def pytest_runtest_logreport(report):
    properties = dict(report.user_properties)
    if report.when == "call" and "step_us" in properties:
        STEP_TIMES.append((report.nodeid.split("[", 1)[-1].rstrip("]"), properties["step_us"],
                           properties["library_step_us"]))


def pytest_terminal_summary(terminalreporter):
    if not STEP_TIMES:
        return
    terminalreporter.section("model step times (NGD, CPU microseconds a step; measured, not judged)")
    terminalreporter.write_line(f"{'model':48} {'step':>9} {'library':>9} {'ratio':>6}")
    for name, mine, library in sorted(STEP_TIMES):
        terminalreporter.write_line(f"{name:48} {mine:9.1f} {library:9.1f} {mine / library:6.2f}")
    terminalreporter.write_line("library: the linear classifier (linear_logistic) at the same K")
