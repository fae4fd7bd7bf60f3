r"""Theorem 1's runs at stationary points reached from the truth: L-BFGS from the teacher of
the support-restricted attention network and of the dense baseline, and their excess risk."""
from __future__ import annotations

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.models import RELU, BaselineNet, GlobalAttentionNet

from .setup import lbfgs_minimum

#: standard deviation of the teacher's Gaussian noise (A3's sub-Gaussian epsilon)
NOISE = 0.5


@shared_run
def near_truth_fit(run, *, arm, columns, n, p, s0, width, instances, n_test, steps, signal):
    r"""Noise-free excess risk ``E = E_x (f_hat(x) - f*(x))^2`` (on ``n_test`` fresh inputs) of a
    local minimum of ``R_n`` reached by L-BFGS from the teacher, per trial, and the gradient
    norm there.  Teacher (A3): ``x ~ N(0, I_p)``, ``y = W2*^T relu(W1*^T (x * 1_S)) + eps``,
    ``S`` the first ``s0`` inputs, ``W1* ~ N(0, 1)`` (``signal = "unit"``) or ``N(0, 1/s0)``
    (``"fixed"``: the signal variance does not grow with s0), ``W2* ~
    N(0, I)``, ``eps ~ N(0, NOISE^2)``.  ``arm = "attention"``: trainable ``a`` on the inputs
    ``columns`` only (``"support"``: S; ``"shifted"``: inputs 1..s0, missing input 0), started at
    ``(1, W1*, W2*)``; ``"baseline"``: all ``p`` rows of W1, those outside S started at 0."""
    rng = run.rng("near-truth teacher", n, p, s0, width, instances, n_test)
    X = rng.standard_normal((instances, n + n_test, p))
    W1 = rng.standard_normal((instances, p, width)) / (np.sqrt(s0) if signal == "fixed" else 1.0)
    W2 = rng.standard_normal((instances, width))
    support = np.arange(s0)
    clean = np.einsum("knh,kh->kn", np.maximum(X[..., support] @ W1[:, support], 0), W2)
    y = clean + NOISE * rng.standard_normal(clean.shape)
    X, y, clean, W1, W2 = map(torch.as_tensor, (X, y, clean, W1, W2))
    cols = np.arange(p)
    if arm == "attention":
        cols = mask_columns(columns, s0)
        inputs, cls = X[..., cols], GlobalAttentionNet
        start = {"a": torch.ones(instances, len(cols), dtype=torch.float64), "W1": W1[:, cols], "W2": W2}
    else:
        inputs, cls = X, BaselineNet
        rows = torch.zeros_like(W1)
        rows[:, support] = W1[:, support]
        start = {"W1": rows, "W2": W2}
    model = cls(inputs[:, :n], y[:, :n], RELU)
    fit = lbfgs_minimum(model, start, iterations=steps)
    gradient = torch.stack([g.flatten(1).norm(dim=1) for g in model.gradient(fit).values()]).norm(dim=0)
    excess = 2 * cls(inputs[:, n:], clean[:, n:], RELU).loss(fit)
    return {"excess": excess.numpy(), "gradient": gradient.numpy()}


def mask_columns(columns: str, s0: int) -> np.ndarray:
    """The inputs the attention arm of `near_truth_fit` attends to: ``"support"``, the
    teacher's relevant inputs ``S = {0, .., s0 - 1}``; ``"shifted"``, inputs ``1..s0``."""
    return np.arange(s0) if columns == "support" else np.arange(1, s0 + 1)


def covered_fraction(columns: str, s0: int) -> float:
    """The fraction of the teacher's relevant inputs ``S`` among `mask_columns`: fixed by the
    configuration, so A3's "the mask covers S" is decided before any run."""
    return float(np.isin(np.arange(s0), mask_columns(columns, s0)).mean())


def near_truth_fits(tc, arm, columns, sweep, **fixed):
    """The shared `near_truth_fit` runs of ``arm`` at each value of the tier's size ``sweep``,
    the other sizes the tier's (``fixed`` overriding them)."""
    s = dict(tc.sizes)
    values = s.pop(sweep)
    return [tc.use(near_truth_fit, arm=arm, columns=columns, **{**s, **fixed, sweep: v})
            for v in values]
