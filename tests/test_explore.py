"""``theorycheck run MODULE:FUNCTION``: one shared run outside pytest, with the run settings."""
import numpy as np
import pytest

from theorycheck.cli import main
from theorycheck.explore import arrays_of, parse_config, summarize

TOY = '''
import numpy as np
import torch
from theorycheck import shared_run


@shared_run(scope="toy", sizes={"quick": {"n": 3}, "full": {"n": 30}})
def draws(run, *, scale=1.0):
    """Gaussian draws of the run's stream; the settings it ran under."""
    return {"x": scale * run.rng("x").standard_normal(run.sizes["n"]),
            "settings": {"threads": torch.get_num_threads(), "dtype": str(torch.get_default_dtype())},
            "trials": [torch.arange(2.0), np.ones((2, 2))]}


@shared_run(scope="toy", seeded=False)
def fixed(run):
    """A run that draws nothing."""
    return {"y": np.arange(3.0)}


NOT_A_RUN = 3
'''


@pytest.fixture
def toy_module(tmp_path, monkeypatch):
    (tmp_path / "tc_toy_runs.py").write_text(TOY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_run_prints_a_summary_saves_the_arrays_and_uses_the_run_settings(toy_module, capsys):
    out = toy_module / "draws.npz"
    assert main(["run", "tc_toy_runs:draws", "--seed", "4", "--set", "scale=2", "--no-cache",
                 "--save", str(out)]) == 0
    text = capsys.readouterr().out
    assert "tc_toy_runs.draws (quick tier, seed 4" in text and "config {'scale': 2}" in text
    assert "x: ndarray (3,) float64" in text
    saved = np.load(out)
    assert set(saved.files) == {"x", "settings/threads", "trials/0", "trials/1"}
    assert int(saved["settings/threads"]) == 1            # one CPU thread, as in a claim run
    # reproducible from the seed and the scope, as inside pytest
    assert main(["run", "tc_toy_runs:draws", "--seed", "4", "--set", "scale=2", "--no-cache",
                 "--save", str(out)]) == 0
    np.testing.assert_array_equal(np.load(out)["x"], saved["x"])


def test_run_says_a_seedless_run_has_one_value_for_every_seed(toy_module, capsys):
    assert main(["run", "tc_toy_runs:fixed", "--seed", "4", "--no-cache"]) == 0
    assert "tc_toy_runs.fixed (quick tier, seedless: one value for every seed" in capsys.readouterr().out


@pytest.mark.parametrize("target, fragment", [
    ("tc_toy_runs", "expected MODULE:FUNCTION"),
    ("tc_toy_runs:missing", "no 'missing'; its shared runs: ['draws', 'fixed']"),
    ("tc_toy_runs:NOT_A_RUN", "is a int, not a function declared with @theorycheck.shared_run"),
    ("no_such_module_xyz:run", "cannot import 'no_such_module_xyz'"),
])
def test_run_names_a_bad_target(toy_module, target, fragment):
    with pytest.raises(SystemExit) as exc:
        main(["run", target, "--no-cache"])
    assert fragment in str(exc.value)


def test_run_rejects_a_bad_tier_and_a_bad_setting(toy_module):
    with pytest.raises(SystemExit, match="tier"):
        main(["run", "tc_toy_runs:draws", "--tier", "huge", "--no-cache"])
    with pytest.raises(SystemExit, match="expected NAME=VALUE"):
        main(["run", "tc_toy_runs:draws", "--set", "scale", "--no-cache"])


def test_config_values_are_json_else_strings_and_summaries_count_nonfinite():
    assert parse_config(["eta=0.1", "rule=ngd", "etas=[1, 2]"]) == {"eta": 0.1, "rule": "ngd", "etas": [1, 2]}
    lines = summarize({"a": np.array([1.0, np.nan]), "b": "text"})
    assert lines[0] == "a: ndarray (2,) float64 range [1, 1], 1 non-finite"
    assert lines[1].startswith("b: str 'text'")
    assert set(arrays_of({"a": [1.0, 2.0], "b": {"c": 3}})) == {"a", "b/c"}
