r"""Curvature of a model's loss: the Hessian over all blocks, dense or by Lanczos.

The parameters of one trial are flattened block by block in the model's ``blocks`` order into
one vector ``theta in R^D``.  :func:`dense_hessian` differentiates ``reference_loss`` twice
with ``torch.func.hessian`` (small ``D``); :func:`top_hessian_eigenvalues` runs
``scipy.sparse.linalg.eigsh`` (implicitly restarted Lanczos) on a ``LinearOperator`` whose
matvec is the model's ``hessian_vector_product`` (forward over reverse mode), one trial at a
time, so only Hessian-vector products are ever formed.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigsh

from theorycheck.errors import UsageError
from theorycheck.lineage import computation
from theorycheck.models.base import Model, Params

__all__ = ["flatten_params", "unflatten_params", "dense_hessian", "top_hessian_eigenvalues"]


def flatten_params(model: Model, params: Params) -> torch.Tensor:
    """The blocks of every trial as rows of one matrix (K, D), in ``model.blocks`` order."""
    return torch.cat([params[b].flatten(1) for b in model.blocks], dim=1)


def unflatten_params(model: Model, flat: torch.Tensor, like: Params) -> dict[str, torch.Tensor]:
    """Inverse of :func:`flatten_params`: rows (K, D) back to blocks shaped like ``like``."""
    out, start = {}, 0
    for b in model.blocks:
        size = like[b][0].numel()
        out[b] = flat[:, start:start + size].reshape(flat.shape[:1] + like[b].shape[1:])
        start += size
    if start != flat.shape[1]:
        raise UsageError(f"unflatten_params: {flat.shape[1]} coordinates for blocks of total "
                         f"size {start}")
    return out


def _single_trial(model: Model, params: Params, what: str) -> None:
    if model.trial_count() != 1 or any(params[b].shape[0] != 1 for b in model.blocks):
        raise UsageError(f"{what}: needs one trial (K = 1); use model.restrict([k])")


@computation('solver', inputs=('model', 'params'))
def dense_hessian(model: Model, params: Params) -> torch.Tensor:
    """The Hessian (D, D) of ``reference_loss`` of a one-trial model at ``params``."""
    _single_trial(model, params, "dense_hessian")
    theta = flatten_params(model, params)[0]

    def loss(vec):
        return model.reference_loss(unflatten_params(model, vec.unsqueeze(0), params)).sum()

    return torch.func.hessian(loss)(theta)


@computation('solver', inputs=('model', 'params', 'k'))
def top_hessian_eigenvalues(model: Model, params: Params, *, k: int = 1,
                            tol: float = 1e-12) -> np.ndarray:
    """The ``k`` largest (algebraic) Hessian eigenvalues of every trial, (K, k), descending,
    by Lanczos on Hessian-vector products."""
    K = model.trial_count()
    top = np.empty((K, k))
    for trial in range(K):
        sub = model.restrict([trial])
        point = {b: params[b][trial:trial + 1] for b in model.blocks}
        D = flatten_params(sub, point).shape[1]
        if not 1 <= k < D:
            raise UsageError(f"top_hessian_eigenvalues: k must be in [1, {D - 1}], got {k}")
        like = next(iter(point.values()))

        def matvec(v, sub=sub, point=point, like=like):
            vec = torch.as_tensor(np.ravel(v), dtype=like.dtype, device=like.device).unsqueeze(0)
            hv = sub.hessian_vector_product(point, unflatten_params(sub, vec, point))
            return flatten_params(sub, hv)[0].detach().cpu().numpy()

        op = LinearOperator((D, D), matvec=matvec, dtype=np.float64)
        values = eigsh(op, k=k, which="LA", tol=tol, return_eigenvectors=False,
                       v0=np.ones(D) / np.sqrt(D))
        top[trial] = np.sort(values)[::-1]
    return top
