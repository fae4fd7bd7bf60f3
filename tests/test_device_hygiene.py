"""Device hygiene of the training path (a static audit): the models' and optimizers' code and
the trajectory runner never move a tensor to the host (``.item()``, ``.cpu()``, ``.numpy()``,
``.tolist()``, ``float/int/bool(tensor)``) except on lines that say why it is not per step
(``# host: <reason>``: construction, a periodic check every ``check_every`` steps, the end of a
run).  On CUDA a host round-trip per step would serialize the GPU behind Python."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "theorycheck"
#: the code every optimizer step runs: the models, the steps, the runner, the metrics
TRAINING_PATH = sorted([*(ROOT / "models").glob("*.py"), *(ROOT / "optim").glob("*.py")])
#: analysis on numpy arrays after a run, not on the training path
ANALYSIS = {"score_coordinates.py", "directions.py", "gradient_bounds.py"}
SYNC_METHODS = {"item", "cpu", "numpy", "tolist"}
SYNC_BUILTINS = {"float", "int", "bool"}


def host_transfers(source: str) -> list[tuple[int, str]]:
    """(line, call) of every call that may copy a tensor to the host, unmarked."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = (f.attr if isinstance(f, ast.Attribute) and f.attr in SYNC_METHODS else
                f.id if isinstance(f, ast.Name) and f.id in SYNC_BUILTINS and node.args
                and not isinstance(node.args[0], ast.Constant) else None)
        if name and "# host:" not in lines[node.lineno - 1]:
            found.append((node.lineno, name))
    return found


@pytest.mark.parametrize("path", [p for p in TRAINING_PATH if p.name not in ANALYSIS],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_training_path_does_not_sync_with_the_host(path):
    found = host_transfers(path.read_text())
    assert not found, f"{path.name}: host transfers on lines {found}: move them out of the step " \
                      "or mark why they are not per step (# host: <reason>)"


def test_the_audit_finds_an_unmarked_transfer():
    planted = "def step(t, W):\n    g = W.grad.norm().item()\n    return W - float(g)\n"
    assert host_transfers(planted) == [(2, "item"), (3, "float")]
    marked = "def __init__(self, eta):\n    self.eta = float(eta)  # host: construction\n"
    assert host_transfers(marked) == []
