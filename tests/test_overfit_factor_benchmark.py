"""benchmarks/overfit_factor_full.py's rule (never its full-size runs): the factor chosen from
pooled ratios (the claim's test of rate 0.9 over 80 sets rejects at 66 or fewer) and the
validation verdict per seed."""
import gzip
import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(benchmark_script):
    return benchmark_script("overfit_factor_full")


def write_risks(path, ratios_by_seed):
    """Risks whose final-over-best ratio at n = 512, 2048 is the given one (n = 128 ignored)."""
    risks = {}
    for seed, ratio in ratios_by_seed.items():
        grid = np.ones((40, 12))
        grid[:, -1] = ratio
        risks[seed] = {n: grid.tolist() for n in ("128", "512", "2048")}
    with gzip.open(path, "wt") as f:
        json.dump(risks, f)


def test_the_factor_is_the_largest_grid_value_every_pooled_set_reaches(script, tmp_path):
    write_risks(tmp_path / "cal.json.gz", {s: 1.23 for s in range(1000, 1010)})
    F, c, q = script.factor(script.ratios(tmp_path / "cal.json.gz"))
    assert F == 1.2 and c == 66 and 0.9 < q < 1


def test_validation_fails_a_seed_whose_sets_stay_below_the_factor(script, tmp_path):
    write_risks(tmp_path / "val.json.gz", {2000: 1.3, 2001: 1.05})
    assert script.validate(script.ratios(tmp_path / "val.json.gz"), 1.1, 66) == {2000: True, 2001: False}
