"""The worked example of docs/adding-a-model.md runs as written and meets the protocol."""
import re
from pathlib import Path

import torch

from theorycheck.models import MODELS
from theorycheck.optim import NGD, run_trajectory, standard_metrics

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-model.md"


def test_least_squares_example_runs_and_descends():
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    namespace = {}
    try:
        exec(compile(code, str(DOC), "exec"), namespace)
        inst = MODELS["least_squares"](3, 0)
        auto = torch.func.grad(lambda p: inst.model.loss(p).sum())(inst.params)["w"]
        torch.testing.assert_close(inst.model.gradient(inst.params)["w"], auto, rtol=1e-13, atol=0)
        traj = run_trajectory(NGD(inst.model, 0.05), inst.params, 50, standard_metrics(inst.model))
        assert set(traj.metrics) == {"w_norm", "displacement", "log_loss"}
        assert (traj["log_loss"][-1] < traj["log_loss"][0]).all()
    finally:
        MODELS.pop("least_squares", None)
