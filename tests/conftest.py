"""Fixtures for the library's own tests."""
import pytest
import torch

pytest_plugins = ["pytester"]

torch.set_num_threads(1)


@pytest.fixture
def claim_file(pytester):
    """Write a claims module into a pytester directory: ``claim_file(body, name)``."""

    def write(body: str, name: str = "test_claims") -> None:
        pytester.makepyfile(**{name: "from theorycheck import claim, discrepancy\n" + body})

    return write
