"""Record token-selection iterates with the pre-protocol optimizers (the port's baseline).

Run once with the old code (commit before the model-protocol port); the test
tests/conformance/test_port_baseline.py replays the same runs on the new code and requires
agreement to round-off.  Deleted in the port commit (it calls the old API).
"""
import math

import numpy as np
import torch

from theorycheck.optim import (GD, NGD, BlockNGD, Method, MethodBatchStep, NGDMomentum, Polyak,
                               ScheduledNormalizedGD, run_trajectory, standard_metrics)

torch.set_num_threads(1)
F64 = torch.float64
CHECKPOINTS = [0, 1, 10, 50, 150, 300]
STEPS = 300


def data(seed=0, K=3, n=4, T=3, d=12, zeta=3.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(0.0, 1.0 / math.sqrt(d), size=(K, n, T, d))
    y = rng.choice([-1.0, 1.0], size=(K, n))
    opt = rng.integers(0, T, size=(K, n))
    target = np.zeros((K, n, T))
    np.put_along_axis(target, opt[..., None], zeta * y[..., None], axis=-1)
    tokens = X.reshape(K, n * T, d)
    u = np.stack([np.linalg.lstsq(tokens[k], target[k].ravel(), rcond=None)[0] for k in range(K)])
    W0 = 0.3 * rng.standard_normal((K, d, d))
    return [torch.tensor(a) for a in (X, y, u, opt, W0)]


def main():
    X, y, u, opt, W0 = data()
    u_joint = 0.1 * u
    runs = {
        "gd_fixed": (GD(X, y, 1.0), u),
        "ngd_fixed": (NGD(X, y, 1.0), u),
        "ngd_fixed_capped": (NGD(X, y, 0.5, eta_max=20.0), u),
        "ngd_momentum_joint": (NGDMomentum(X, y, 0.1, eta_max=50.0, train_u=True), u_joint),
        "polyak_fixed": (Polyak(X, y), u),
        "polyak_joint_capped": (Polyak(X, y, eta_max=10.0, train_u=True), u_joint),
        "gd_joint": (GD(X, y, 0.5, train_u=True), u_joint),
        "block_ngd_joint": (BlockNGD(X, y, 0.3), torch.zeros_like(u)),
    }
    out = {"X": X, "y": y, "u": u, "opt": opt, "W0": W0, "checkpoints": np.array(CHECKPOINTS)}
    for name, (step, u0) in runs.items():
        metrics = standard_metrics(X, y, opt, iterates=True)
        traj = run_trajectory(step, u0, W0, STEPS, metrics, checkpoints=CHECKPOINTS)
        for key in ("u", "W", "log_loss", "log_excess_loss", "log_one_minus_s_opt"):
            out[f"{name}/{key}"] = traj[key]
    methods = [Method("gd", "gd", eta=1.0), Method("ngd", "ngd", eta=0.2, momentum=0.5),
               Method("polyak", "polyak", eta_max=30.0)]
    for train_u in (False, True):
        step = MethodBatchStep(X, y, methods, train_u=train_u)
        u0 = (u_joint if train_u else u).repeat(len(methods), 1)
        traj = run_trajectory(step, u0, W0.repeat(len(methods), 1, 1), STEPS,
                              {"u": lambda it: it.u, "W": lambda it: it.W}, checkpoints=CHECKPOINTS)
        for key in ("u", "W"):
            out[f"methods_{'joint' if train_u else 'fixed'}/{key}"] = traj[key]
    eta = torch.tensor([0.3, 0.1, 0.2], dtype=F64)
    alpha = torch.tensor([2 / 3, 0.0, 0.5], dtype=F64)
    joint = torch.tensor([False, True, True])
    traj = run_trajectory(ScheduledNormalizedGD(X, y, eta, alpha, joint), u_joint, W0, STEPS,
                          {"u": lambda it: it.u, "W": lambda it: it.W}, checkpoints=CHECKPOINTS)
    for key in ("u", "W"):
        out[f"scheduled/{key}"] = traj[key]
    np.savez_compressed("tests/data/token_selection_port_baseline.npz",
                        **{k: np.asarray(v) for k, v in out.items()})


if __name__ == "__main__":
    main()
