"""benchmarks/projection.py's bookkeeping (never its timings): the path's points and their
distances, the polar-factor counter restored after use, and one row per (condition, offset,
kind) with a converged projection."""
import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("projection")


def test_path_starts_at_the_offset_and_moves_one_percent_a_step(bench):
    from theorycheck.solvers import project_to_manifold

    rng = np.random.default_rng(3)
    Sigma, W = bench.problem(rng, 10.0)
    points = bench.path(rng, Sigma, W, 0.3)
    assert len(points) == bench.PATH
    assert project_to_manifold(*points[0], Sigma, W, rng).distance <= 0.3 + 1e-12
    steps = [np.sqrt(np.sum((a[0] - b[0]) ** 2) + np.sum((a[1] - b[1]) ** 2)) for a, b in zip(points, points[1:])]
    assert max(steps) < 0.3 * 0.01 * 3


def test_rows_count_polar_factors_and_restore_the_solver(bench):
    original = bench.factorization.polar_factor
    rng = np.random.default_rng(4)
    Sigma, W = bench.problem(rng, 100.0)
    points = bench.path(rng, Sigma, W, 0.01)[:4]
    for kind in ("cold", "warm"):
        row = bench.measure(kind, points, Sigma, W, repeats=1)
        assert row["ms_per_projection"] > 0 and row["polar_factors_per_projection"] >= (1 if kind == "cold" else 0)
        assert row["max_symmetry_defect"] < 1e-6
    assert bench.factorization.polar_factor is original
