r"""jta24's joint training of (W, v) on the paper's two-sample example: the runs of normalized
l_p-JointGD and the divergences to the SVMs of the other token choices (`test_joint.py`).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581: the main-body joint theorem (reconstructed)
and the joint-training figures.
"""
from __future__ import annotations

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.data.selection import selected_tokens, token_assignments
from theorycheck.errors import InfeasibleProgramError
from theorycheck.models import TokenSelection
from theorycheck.optim import MirrorDescent, directional_bregman, run_trajectory
from theorycheck.solvers import solve_lp_usvm, solve_lp_wsvm

JOINT_X = np.array([[[-2.7, 1.2], [1.4, 2.1], [1.3, -0.1]],
                    [[0.4, -2.2], [-1.1, -0.4], [0.9, 0.1]]])
JOINT_Y = np.array([1.0, -1.0])
r"""The paper's two-sample joint-training example (n=2, T=3, d=2, query z_i = x_{i,0}; the
authors' joint-training notebook, as transcribed in the project's reconstruction): data, not
results."""
JOINT_P = (1.75, 2.0, 3.0)


@shared_run(sizes={"quick": dict(steps=2000, eta=(0.1, 0.1, 1.0)),
                   "full": dict(steps=20000, eta=(0.1, 0.1, 0.1))}, seeded=False)
def joint_runs(run, *, loss: str = "exponential", mirror_p=None):
    r"""Normalized l_p-JointGD (each block normalized by its own dual norm) on the paper's joint
    example from (W, v) = 0, p in JOINT_P side by side (trial j = p index); exponential loss, or
    ``loss="logistic"`` (the authors' notebook); ``mirror_p``: every arm steps with that mirror
    map instead (e.g. 2.0: normalized GD), the arms keeping their labels p and step sizes.
    Records W, v at 0, 1..100 and 40 evenly spaced checkpoints; the selected tokens at each;
    alpha = the tokens of the last iterate; the certified l_p-AttSVM W_mm_alpha and the l_p
    head SVM v_mm_alpha (min ||v||_p s.t. y_i x_{i,alpha_i}^T v >= 1) per p."""
    s = run.sizes
    P = len(JOINT_P)
    X = run.tensor(np.tile(JOINT_X, (P, 1, 1, 1)))
    model = TokenSelection(X, run.tensor(np.tile(JOINT_Y, (P, 1))), loss=loss)
    mirrors = list(JOINT_P) if mirror_p is None else [mirror_p] * P
    step = MirrorDescent(model, mirrors, list(s["eta"]), normalized=True)
    marks = np.unique(np.concatenate([np.arange(101), np.linspace(0, s["steps"], 41).round(),
                                      [s["steps"] // 10]]).astype(int))
    start = {"u": run.tensor(np.zeros((P, 2))), "W": run.tensor(np.zeros((P, 2, 2)))}
    traj = run_trajectory(step, start, s["steps"], {"W": lambda it: it.W, "v": lambda it: it.params["u"]},
                          checkpoints=marks)
    Xn = np.tile(JOINT_X, (P, 1, 1, 1))
    tokens = np.stack([selected_tokens(Xn, Wc) for Wc in traj["W"]])
    alpha = tokens[-1]
    W_mm = np.stack([solve_lp_wsvm(JOINT_X, alpha[j], p, name="joint example").W for j, p in enumerate(JOINT_P)])
    v_mm = np.stack([solve_lp_usvm(JOINT_X[np.arange(2), alpha[j]], JOINT_Y, p, name="joint example").W[:, 0]
                     for j, p in enumerate(JOINT_P)])
    return dict(t=traj.t, W=traj["W"], v=traj["v"], tokens=tokens, alpha=alpha, W_mm=W_mm, v_mm=v_mm,
                p=np.array(JOINT_P))


def divergence(reference, iterate, p):
    """D_psi_p(R/||R||_p, X/||X||_p) of one reference and one iterate (any shape)."""
    return float(directional_bregman(torch.tensor(reference)[None], torch.tensor(iterate)[None], p))


def nearest_other_tokens(alpha, p, W, v):
    r"""min over the token choices alpha'' != alpha (infeasible programs skipped) of the
    divergences of W and of v from the l_p SVMs of alpha'': (min D_W, min D_v, feasible count)."""
    dW, dv = [], []
    for other in token_assignments(JOINT_X.shape[1], JOINT_X.shape[0]):
        if np.array_equal(other, alpha):
            continue
        try:
            W_mm = solve_lp_wsvm(JOINT_X, other, p, name="joint example").W
            v_mm = solve_lp_usvm(JOINT_X[np.arange(2), other], JOINT_Y, p, name="joint example").W[:, 0]
        except InfeasibleProgramError:
            continue
        dW.append(divergence(W_mm, W, p)), dv.append(divergence(v_mm, v, p))
    return min(dW), min(dv), len(dW)
