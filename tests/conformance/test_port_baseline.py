"""The token-selection model on the protocol reproduces the iterates of the optimizers it
replaced.

``tests/data/token_selection_port_baseline.npz`` holds iterates and metrics recorded by the
pre-protocol optimizers (``GD``, ``NGD``, ``NGDMomentum``, ``Polyak``, ``BlockNGD``,
``MethodBatchStep``, ``ScheduledNormalizedGD`` on ``(X, y, u, W)``; commit 371e450,
scripts/record_port_baseline.py there) over 300 steps on 3 trials (n=4, T=3, d=12) from
W_0 = 0.3 G, including runs that saturate to 1 - s_opt ~ 1e-66.  The same runs on the new
`FirstOrder` steps must agree to round-off: relative Frobenius error <= 1e-13 per block and
checkpoint (the formulas are the same; only the order of a few multiplications changed), and
log-domain metrics within 1e-9 absolute.
"""
from pathlib import Path

import numpy as np
import pytest
import torch

from theorycheck.models import TokenSelection
from theorycheck.optim import (GD, NGD, BlockNGD, FirstOrder, Method, Polyak, run_trajectory,
                               side_by_side, standard_metrics, tile)

BASELINE = Path(__file__).resolve().parents[1] / "data" / "token_selection_port_baseline.npz"
STEPS = 300


@pytest.fixture(scope="module")
def baseline():
    data = np.load(BASELINE)
    return {k: data[k] for k in data.files}


def _t(a):
    return torch.as_tensor(a)


def _runs(b):
    X, y, u, W0 = _t(b["X"]), _t(b["y"]), _t(b["u"]), _t(b["W0"])
    fixed, joint = TokenSelection(X, y, u), TokenSelection(X, y)
    u_joint = 0.1 * u
    return {
        "gd_fixed": (GD(fixed, 1.0), {"W": W0}),
        "ngd_fixed": (NGD(fixed, 1.0), {"W": W0}),
        "ngd_fixed_capped": (NGD(fixed, 0.5, eta_max=20.0), {"W": W0}),
        "ngd_momentum_joint": (NGD(joint, 0.1, eta_max=50.0, momentum=0.9), {"u": u_joint, "W": W0}),
        "polyak_fixed": (Polyak(fixed), {"W": W0}),
        "polyak_joint_capped": (Polyak(joint, eta_max=10.0), {"u": u_joint, "W": W0}),
        "gd_joint": (GD(joint, 0.5), {"u": u_joint, "W": W0}),
        "block_ngd_joint": (BlockNGD(joint, 0.3, alpha=2 / 3), {"u": torch.zeros_like(u), "W": W0}),
    }


def _close(ours, theirs, rtol):
    err = np.linalg.norm((ours - theirs).reshape(len(ours), -1), axis=1)
    scale = np.linalg.norm(theirs.reshape(len(theirs), -1), axis=1)
    assert np.all(err <= rtol * np.maximum(scale, 1e-300)), (err / scale).max()


@pytest.mark.parametrize("name", ["gd_fixed", "ngd_fixed", "ngd_fixed_capped", "ngd_momentum_joint",
                                  "polyak_fixed", "polyak_joint_capped", "gd_joint",
                                  "block_ngd_joint"])
def test_single_method_runs_match_the_old_optimizers(baseline, name):
    step, params0 = _runs(baseline)[name]
    opt = _t(baseline["opt"])
    traj = run_trajectory(step, params0, STEPS, standard_metrics(step.model, opt=opt, iterates=True),
                          checkpoints=baseline["checkpoints"])
    for block in params0:
        for row in range(len(traj.t)):
            _close(traj[block][row], baseline[f"{name}/{block}"][row], 1e-13)
    for key in ("log_loss", "log_excess_loss", "log_one_minus_s_opt"):
        np.testing.assert_allclose(traj[key], baseline[f"{name}/{key}"], rtol=1e-11, atol=1e-9)
    if name == "ngd_fixed":  # the run reaches deep saturation
        assert baseline[f"{name}/log_one_minus_s_opt"][-1].max() < -100


@pytest.mark.parametrize("joint", [False, True])
def test_side_by_side_methods_match_the_old_batched_steps(baseline, joint):
    X, y, u, W0 = (_t(baseline[k]) for k in ("X", "y", "u", "W0"))
    model = TokenSelection(X, y) if joint else TokenSelection(X, y, u)
    methods = [Method("gd", "gd", eta=1.0), Method("ngd", "ngd", eta=0.2, momentum=0.5),
               Method("polyak", "polyak", eta_max=30.0)]
    params0 = {"u": 0.1 * u, "W": W0} if joint else {"W": W0}
    step = side_by_side(model, methods)
    traj = run_trajectory(step, tile(params0, 3), STEPS, standard_metrics(step.model, iterates=True),
                          checkpoints=baseline["checkpoints"])
    for block in params0:
        for row in range(len(traj.t)):
            _close(traj[block][row], baseline[f"methods_{'joint' if joint else 'fixed'}/{block}"][row],
                   1e-13)


def test_per_trial_schedules_match_the_old_scheduled_normalized_gd(baseline):
    X, y, u, W0 = (_t(baseline[k]) for k in ("X", "y", "u", "W0"))
    step = FirstOrder(TokenSelection(X, y), rule=["block_ngd", "ngd", "ngd"], eta=[0.3, 0.1, 0.2],
                      alpha=[2 / 3, 0.0, 0.5])
    traj = run_trajectory(step, {"u": 0.1 * u, "W": W0}, STEPS,
                          standard_metrics(step.model, iterates=True), checkpoints=baseline["checkpoints"])
    for block in ("u", "W"):
        for row in range(len(traj.t)):
            _close(traj[block][row], baseline[f"scheduled/{block}"][row], 1e-13)
