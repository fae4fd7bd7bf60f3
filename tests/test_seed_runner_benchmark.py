"""benchmarks/seed_runner.py's bookkeeping (never its timings): the summary per runner and the
fraction of a seed's start-up the process server saves, written where --out says."""
import json

import pytest


@pytest.fixture(scope="module")
def script(benchmark_script):
    return benchmark_script("seed_runner")


def test_the_results_file_compares_the_two_runners_on_the_same_seeds(script, tmp_path, monkeypatch):
    asked = []

    def timed(seconds):
        def run(seeds, node, out):
            asked.append((tuple(seeds), node))
            return [seconds] * len(seeds)
        return run

    monkeypatch.setattr(script, "subprocess_seconds", timed(8.0))
    monkeypatch.setattr(script, "runner_seconds", timed(3.0))
    result = script.main(["--seeds", "0-3", "--out", str(tmp_path / "r.json")])
    assert asked == [((0, 1, 2, 3), script.DEFAULT_NODE)] * 2
    assert result["subprocess"] == {"mean_s": 8.0, "min_s": 8.0, "max_s": 8.0, "seeds": 4}
    assert result["saved_fraction"] == pytest.approx(1 - 3 / 8)
    assert json.loads((tmp_path / "r.json").read_text()) == result
