"""Fixtures for the library's own tests, and the hypothesis profiles of the test suite.

Profiles: ``ci`` (derandomized, no deadline; selected when the environment sets ``CI``) and
``dev`` (no deadline).  They belong to this test suite: theorycheck's plugin leaves the
hypothesis settings of the projects that install it alone.
"""
import importlib.util
import os
from pathlib import Path

import matplotlib
import matplotlib.figure  # noqa: F401
import matplotlib.legend  # noqa: F401
import matplotlib.ticker  # noqa: F401
import pytest
import torch
from hypothesis import settings

# pytester's in-process runs restore sys.modules afterwards, dropping modules first imported
# inside them: a report drawn there would leave matplotlib half re-imported for the next test
# (its Legend then refuses the re-imported Axes). Importing the plot modules here keeps them.
matplotlib.use("Agg", force=True)

pytest_plugins = ["pytester"]

torch.set_num_threads(1)

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def claim_file(pytester):
    """Write a claims module into a pytester directory: ``claim_file(body, name)``."""

    def write(body: str, name: str = "test_claims") -> None:
        pytester.makepyfile(**{name: "from theorycheck import Control, claim, discrepancy\n" + body})

    return write


@pytest.fixture(scope="session")
def benchmark_script():
    """A loader of a script of ``benchmarks/`` as a module: ``benchmark_script("bench")`` (the
    scripts' bookkeeping is tested, never their timings)."""

    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
