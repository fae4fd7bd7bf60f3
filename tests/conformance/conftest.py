"""The conformance suites cover what the paper packages register: before the test modules are
collected (their parametrizations read `MODELS` and `OPTIMIZERS`), every non-test module of
every paper package under ``<rootdir>/claims`` is imported (`theorycheck.discovery`)."""
import pytest

from theorycheck.discovery import import_paper_modules


def pytest_configure(config):
    root = config.rootpath / "claims"
    if (root / "__init__.py").exists():
        import_paper_modules(root)


@pytest.fixture(scope="session")
def claims_root(pytestconfig):
    """``<rootdir>/claims``: the paper packages."""
    return pytestconfig.rootpath / "claims"
