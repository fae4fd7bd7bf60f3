r"""jta24's sparsity of the l_q implicit bias: normalized l_q-AttGD from zero for several q, and
the sparsity measures of its final iterates (`test_sparsity.py`).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581 (synthetic surrogate of the real-data
observation that l_q-MD with q near 1 yields sparser weights).
"""
from __future__ import annotations

import numpy as np

from theorycheck import shared_run
from theorycheck.data import TokenSelectionData
from theorycheck.models import TokenSelection
from theorycheck.optim import MirrorDescent, run_trajectory

from .setup import INSTANCES, SIZES, instances

SPARSITY_Q = (1.1, 1.5, 2.0, 3.0)


@shared_run(sizes={"quick": dict(SIZES["quick"], steps=1500), "full": dict(SIZES["full"], steps=1500)})
def sparsity_runs(run, *, q_values=SPARSITY_Q, rotation=None, loss: str = "exponential"):
    r"""Normalized l_q-AttGD (eta = 0.1) from W(0) = 0 for every q of ``q_values`` on every instance,
    side by side (trial j = iq * K + k); returns the final iterates W (J, d, d) and q (J,).  With an
    orthogonal ``rotation`` Q (d, d) the runs see the tokens and the head in the rotated basis
    (x -> Q^T x, v -> Q^T v: the same scores and the same model), so the l_q geometry acts on the
    entries of W' = Q^T W Q; the returned iterates are mapped back, W = Q W' Q^T.  ``loss``:
    exponential or the authors' logistic."""
    s = run.sizes
    data, W0 = instances(run.rng(INSTANCES), s)
    K = data.K
    X, u = data.X, data.u
    if rotation is not None:
        X, u = X @ rotation, u @ rotation
    t = TokenSelectionData(name=data.name, X=X, y=data.y, u=u, opt=data.opt, designated_opt=data.designated_opt,
                           params=data.params, assumptions=data.assumptions).to_torch(run.device, run.dtype)
    model = TokenSelection(t.X, t.y, t.u, loss=loss).tiled(len(q_values))
    q = [qv for qv in q_values for _ in range(K)]
    step = MirrorDescent(model, q, 0.1, normalized=True)
    W = run.tensor(np.zeros((len(q),) + W0.shape[1:]))
    traj = run_trajectory(step, {"W": W}, s["steps"], {}, checkpoints=[])
    W = traj.W.cpu().numpy()
    if rotation is not None:
        W = rotation @ W @ rotation.T
    return dict(W=W, q=np.array(q))


def sparsity_index(W: np.ndarray) -> np.ndarray:
    r"""The scale-free sparsity index ||W||_1 / ||W||_2 (entrywise) of every matrix of W (J, d, d):
    between 1 (one non-zero entry) and sqrt(d^2) (all entries equal in size)."""
    flat = W.reshape(len(W), -1)
    return np.abs(flat).sum(1) / np.linalg.norm(flat, axis=1)


def small_entry_fraction(W: np.ndarray, relative=1e-2) -> np.ndarray:
    """Fraction of entries with |W_jk| < relative * max|W| per matrix of W (J, d, d)."""
    flat = np.abs(W.reshape(len(W), -1))
    return np.mean(flat < relative * flat.max(1, keepdims=True), axis=1)
