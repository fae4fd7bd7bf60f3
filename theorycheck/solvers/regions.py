r"""Linear regions of one-hidden-layer ReLU networks: hyperplane arrangements, counted.

``f(x) = w2^T relu(W1^T (x * a) + b)`` is affine on each open cell of the arrangement of the
hyperplanes ``{x : (a * W1[:, j])^T x + b_j = 0}`` of the units with ``w2_j != 0`` and a
non-zero normal; when those hyperplanes are pairwise distinct, adjacent cells differ in
gradient by ``w2_j a * W1[:, j] != 0`` and never merge, so the linear regions are the cells.
``f`` depends on the attended coordinates ``S = supp(a)`` only: the cells are cylinders over
an arrangement in ``R^{|S|}``, counted there.

:func:`count_cells` enumerates the cells exactly up to the LP's tolerance by incremental
splitting: hyperplanes are inserted one at a time; each current cell (a sign vector with an
interior point at depth ``> tol``) keeps the side of the new hyperplane that its point lies
on (when the point is at distance ``> tol`` from it) and gains the other side when the LP
``max tau s.t. s_j (w_j^T x + b_j) >= tau (inserted j), tau <= 1`` finds ``tau > tol`` there.  This handles parallel, coincident and
central arrangements (breadth-first search over single sign flips does not).  A cell thinner
than ``tol`` is missed, so instances must stay away from coincidence (general position).

Closed forms (Zaslavsky 1975; Cover 1965; Montufar et al. 2014, "On the number of linear
regions of deep neural networks"):

* ``general_position_cells(m, s) = sum_{j<=s} C(m, j)``: m affine hyperplanes in general
  position in ``R^s``, the maximum over all affine arrangements;
* ``central_cells(m, s) = 2 sum_{j<s} C(m-1, j)``: m hyperplanes through the origin in general
  position, the maximum over central arrangements;
* ``grid_lower_bound(n1, s) = floor(n1/s)^s`` and :func:`grid_construction`, the
  sawtooth construction (``s`` groups of ``q = floor(n1/s)`` units along one axis each, with
  breakpoints ``0, 1/2, ..., (q-1)/2``), which attains ``(q+1)^s`` cells.
"""
from __future__ import annotations

from math import comb

import numpy as np
from scipy.optimize import linprog

from theorycheck.errors import ReferenceComputationError, UsageError
from theorycheck.lineage import computation

__all__ = ["count_cells", "relu_network_hyperplanes", "relu_network_regions",
           "general_position_cells", "central_cells", "grid_lower_bound", "grid_construction"]

#: a cell is non-empty when the LP finds a point at signed distance > CELL_TOL from its walls
CELL_TOL = 1e-9
#: coinciding hyperplanes: (n, b) / ||n|| equal to this many decimals
COINCIDE_DECIMALS = 12
#: a merged hyperplane is a boundary when |sum_j w2_j ||n_j||| exceeds this times sum_j |w2_j| ||n_j||
JUMP_RTOL = 1e-12


def _deepest_point(normals, offsets, signs):
    """``(tau, x)`` maximising ``tau`` s.t. ``signs_j (normals_j^T x + offsets_j) >= tau``,
    ``tau <= 1`` (HiGHS)."""
    m, s = normals.shape
    A = -signs[:, None] * np.hstack([normals, np.zeros((m, 1))])
    A[:, -1] = 1.0
    cost = np.zeros(s + 1)
    cost[-1] = -1.0
    res = linprog(cost, A_ub=A, b_ub=signs * offsets, bounds=[(None, None)] * s + [(None, 1.0)],
                  method="highs")
    if res.status != 0:
        raise ReferenceComputationError(f"cell LP failed ({res.message}) for {m} hyperplanes in "
                                        f"R^{s}")
    return -res.fun, res.x[:s]


@computation('solver', inputs=('normals', 'offsets'))
def count_cells(normals, offsets, *, tol: float = CELL_TOL) -> int:
    """The number of open cells of the arrangement ``{x : normals_j^T x + offsets_j = 0}`` in
    ``R^s`` (normals (m, s), offsets (m,)), by incremental LP splitting (module docstring)."""
    normals = np.asarray(normals, dtype=float)
    offsets = np.asarray(offsets, dtype=float)
    if normals.ndim != 2 or offsets.shape != normals.shape[:1]:
        raise UsageError(f"count_cells: normals must be (m, s) and offsets (m,), got "
                         f"{normals.shape} and {offsets.shape}")
    if np.any(np.linalg.norm(normals, axis=1) == 0):
        raise UsageError("count_cells: a hyperplane has a zero normal")
    s = normals.shape[1]
    cells = [(np.zeros(0), np.zeros(s))]                # (signs so far, an interior point)
    for j in range(normals.shape[0]):
        split = []
        for signs, point in cells:
            value = normals[j] @ point + offsets[j]
            side = 1.0 if value > 0 else -1.0
            unknown = (side, -side)
            if abs(value) > tol:                        # the interior point witnesses its side
                split.append((np.append(signs, side), point))
                unknown = (-side,)
            for sign in unknown:
                trial = np.append(signs, sign)
                tau, x = _deepest_point(normals[: j + 1], offsets[: j + 1], trial)
                if tau > tol:
                    split.append((trial, x))
        cells = split
    return len(cells)


def relu_network_hyperplanes(W1, b, w2, a):
    """Normals (m, |S|) and offsets (m,) of the hyperplanes where
    ``w2^T relu(W1^T (x * a) + b)`` has a kink, in the attended coordinates ``S = supp(a)``.
    W1 (p, n1), b (n1,) (zeros: bias-free), w2 (n1,), a (p,).

    Unit j has the hyperplane n_j^T x + b_j = 0 (n_j the attended part of its column of W1).
    Units whose hyperplanes coincide (proportional (n_j, b_j)) are merged: across the common
    hyperplane, with unit normal nu, unit j changes the gradient by w2_j ||n_j|| nu whatever the
    sign of its scaling, so the hyperplane is a boundary only when sum_j w2_j ||n_j|| != 0
    (relative to the largest term); units with ``w2_j = 0`` or a zero normal (constant on the
    attended coordinates) draw none.  Each hyperplane kept is given by its first unit."""
    W1, b, w2, a = (np.asarray(v, dtype=float) for v in (W1, b, w2, a))
    if W1.shape != (a.size, b.size) or w2.shape != b.shape:
        raise UsageError(f"relu_network_hyperplanes: W1 {W1.shape} must be (p, n1) with a (p,) = "
                         f"{a.shape}, b and w2 (n1,) = {b.shape}, {w2.shape}")
    support = np.flatnonzero(a)
    normals = (a[support, None] * W1[support]).T
    lengths = np.linalg.norm(normals, axis=1)
    units = np.flatnonzero((w2 != 0) & (lengths > 0))
    if units.size == 0:
        return normals[units], b[units]
    groups = _coinciding_hyperplanes(normals[units], b[units], lengths[units])
    jumps = np.bincount(groups, weights=w2[units] * lengths[units])
    scale = np.bincount(groups, weights=np.abs(w2[units]) * lengths[units])
    first = units[np.unique(groups, return_index=True)[1]]
    kept = first[np.abs(jumps) > JUMP_RTOL * scale]
    return normals[kept], b[kept]


def _coinciding_hyperplanes(normals, offsets, lengths) -> np.ndarray:
    """A group label per hyperplane n^T x + b = 0: equal labels for the same hyperplane,
    compared by (n, b) / ||n|| oriented so that the first non-zero entry of n is positive,
    rounded to ``COINCIDE_DECIMALS`` decimals; labels numbered in order of first appearance."""
    first_nonzero = np.argmax(np.abs(normals) > 0, axis=1)
    sign = np.sign(normals[np.arange(len(normals)), first_nonzero])
    canonical = np.column_stack([normals, offsets]) * (sign / lengths)[:, None]
    _, first, labels = np.unique(np.round(canonical, COINCIDE_DECIMALS), axis=0,
                                 return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))          # renumber groups by first appearance
    return order[labels.ravel()]


@computation('solver', inputs=('W1', 'b', 'w2', 'a'))
def relu_network_regions(W1, b, w2, a, *, tol: float = CELL_TOL) -> int:
    """The number of linear regions of ``w2^T relu(W1^T (x * a) + b)`` (distinct hyperplanes
    assumed: see the module docstring)."""
    normals, offsets = relu_network_hyperplanes(W1, b, w2, a)
    if normals.shape[1] == 0:
        return 1
    return count_cells(normals, offsets, tol=tol)


def general_position_cells(m: int, s: int) -> int:
    """``sum_{j<=s} C(m, j)``: cells of m affine hyperplanes in general position in ``R^s``."""
    return sum(comb(m, j) for j in range(min(m, s) + 1))


def central_cells(m: int, s: int) -> int:
    """``2 sum_{j<s} C(m-1, j)``: cells of m >= 1 central hyperplanes in general position in ``R^s``."""
    if m < 1 or s < 1:
        raise UsageError(f"central_cells: needs m >= 1 hyperplanes and s >= 1, got {m}, {s}")
    return 2 * sum(comb(m - 1, j) for j in range(min(m - 1, s - 1) + 1))


def grid_lower_bound(n1: int, s: int) -> int:
    """``floor(n1/s)^s``."""
    if s < 1:
        raise UsageError(f"grid_lower_bound: s must be >= 1, got {s}")
    return (n1 // s) ** s


def grid_construction(n1: int, support) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(W1, b, w2)`` of the sawtooth network on ``p = len(support)`` inputs: ``s`` groups of
    ``q = floor(n1/s)`` units, group k reading coordinate ``support_k`` (the k-th non-zero of the
    0/1 vector ``support``); unit i of a group computes ``x_k`` (i = 0) or ``2 x_k - i``, with
    output weights ``1, -1, 1, ...``; leftover units get zero weights."""
    support = np.asarray(support, dtype=float)
    axes = np.flatnonzero(support)
    s = axes.size
    q = n1 // s if s else 0
    if q < 1:
        raise UsageError(f"grid_construction: needs n1 >= s >= 1, got n1={n1}, s={s}")
    W1, b, w2 = np.zeros((support.size, n1)), np.zeros(n1), np.zeros(n1)
    for k, axis in enumerate(axes):
        for i in range(q):
            unit = k * q + i
            W1[axis, unit] = 1.0 if i == 0 else 2.0
            b[unit] = -float(i)
            w2[unit] = (-1.0) ** i
    return W1, b, w2
