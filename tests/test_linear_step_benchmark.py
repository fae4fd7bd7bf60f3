"""benchmarks/linear_step.py's bookkeeping (never its timings): one row per loss, optimizer and size
with the library's and the plain loop's step times, and the `scaled` table; the plain loops are
the same updates as the library's GD and NGD steps away from saturation."""
import pytest
import torch


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("linear_step")


def test_plain_loops_are_the_librarys_steps(bench):
    from theorycheck.models import LinearClassifier, separable_data

    X, y = separable_data(2, 10, 3, generator=torch.Generator().manual_seed(1000))
    w = 0.1 * torch.ones(2, 3, dtype=torch.float64)
    for make, normalized in bench.OPTIMIZERS.values():
        for loss in bench.LOSSES:
            plain = bench.plain_step(X, y, loss, bench.ETA, normalized)(w)
            library = make(LinearClassifier(X, y, loss=loss), bench.ETA)(0, {"w": w})["w"]
            torch.testing.assert_close(library, plain, rtol=1e-13, atol=1e-15)


def test_a_small_run_writes_both_tables(bench, tmp_path):
    out = tmp_path / "linear.md"
    assert bench.main(["--sizes", "1,8,2;3,8,2", "--repeats", "1", "--min-seconds", "0", "--out", str(out)]) == 0
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| logistic |") or line.startswith("| exponential |")]
    assert len(rows) == 8 and all(float(row.split("|")[-2]) > 0 for row in rows)
    assert {row.split("|")[2].strip() for row in rows} == {"GD", "NGD"}
    assert "| (256, 32, 32) |" in text
