"""Token-sequence data for attention models: a batched container, seeded trial streams and
measurements of the tokens.

A sample is a sequence ``X_i`` of ``T`` tokens ``x_{i,t}`` in ``R^d`` (rows of ``X_i``) with a
label ``y_i`` in {-1, +1}; token 0 is the query.  For a decoder ``u`` the token scores are
``gamma_{i,t} = y_i u^T x_{i,t}``, and a designated token ``opt_i`` per sample marks the token
a reference treats as optimal (e.g. ``argmax_t gamma_{i,t}``).

Every data set carries a leading trial dimension ``K``: ``X`` is ``(K, n, T, d)``, ``y`` and
``opt`` are ``(K, n)``, ``u`` is ``(K, d)``.  Tokens are 0-based throughout.  Data are drawn on
the CPU with numpy in float64 and only then moved to a device
(:meth:`TokenSelectionData.to_torch`), so CPU and GPU runs see identical numbers.

Seeding (:func:`trial_generators`): a generator takes ``rng`` as an ``int`` or a
``numpy.random.Generator`` (trial k uses the k-th child of ``rng.spawn(K)``, so a trial does
not depend on ``K``) or as a sequence of ``K`` ints (trial k uses
``numpy.random.default_rng(rng[k])``, i.e. "seeds 0-4" means ``rng=range(5)``).

Model math (token scores, constraint radii) has one implementation, the torch functions of
:mod:`theorycheck.models.token_selection`; :func:`token_scores` and :func:`constraint_radii`
here evaluate those functions on numpy arrays.  The measurements of the tokens
(:func:`orthogonality_ratio`, :func:`score_gaps`, ...) are plain numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from theorycheck.models import token_selection as _model
from theorycheck.models.score_coordinates import token_gram

__all__ = ["AssumptionReport", "TokenSelectionData", "TokenSelectionInstance",
           "TokenSelectionTensors", "concatenate", "constraint_radii", "max_cross_inner_product",
           "non_optimal_spread", "opt_is_argmax", "orthogonality_ratio", "score_gaps", "token_gram",
           "token_scores", "trial_generators"]

Seeds = int | np.random.Generator | Iterable[int]


# --------------------------------------------------------------------------- model math on numpy


def _tensor(a, dtype=torch.float64) -> torch.Tensor:
    return torch.as_tensor(np.array(a), dtype=dtype)


def token_scores(X: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Scores ``gamma_{i,t} = y_i u^T x_{i,t}``, ``(K, n, T)`` from ``X (K, n, T, d)``, ``y (K, n)``,
    ``u (K, d)``: :func:`theorycheck.models.token_scores` evaluated on numpy arrays (float64)."""
    return _model.token_scores(_tensor(X), _tensor(y), _tensor(u)).numpy()


def constraint_radii(X: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """``R_i = ||x_{i,0}|| max_{t != opt_i} ||x_{i,opt_i} - x_{i,t}||``, ``(K, n)`` from ``X (K, n, T, d)``:
    the largest Frobenius norm of a constraint matrix ``(x_{i,opt_i} - x_{i,t}) x_{i,0}^T`` of
    sample i; :func:`theorycheck.models.constraint_radii` evaluated on numpy arrays (float64)."""
    return _model.constraint_radii(_tensor(X), _tensor(opt, torch.int64)).numpy()


# --------------------------------------------------------------------------- token measurements


def max_cross_inner_product(X: np.ndarray) -> np.ndarray:
    """``nu = max_{(i,t) != (j,s)} |<x_{i,t}, x_{j,s}>|`` over all pairs of distinct tokens, per trial."""
    gram = np.abs(token_gram(X))
    off_diagonal = ~np.eye(gram.shape[-1], dtype=bool)
    return np.max(gram, axis=(-1, -2), where=off_diagonal, initial=0.0)


def orthogonality_ratio(X: np.ndarray) -> np.ndarray:
    """How far the tokens are from mutually orthogonal, per trial:
    ``rho_perp = nu / min_{i,t} ||x_{i,t}||^2`` with ``nu`` the :func:`max_cross_inner_product`
    (0 for orthogonal tokens; small for nearly orthogonal ones)."""
    sq_norms = np.diagonal(token_gram(X), axis1=-2, axis2=-1)
    return max_cross_inner_product(X) / sq_norms.min(axis=-1)


def _non_optimal(values: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """Boolean mask of the tokens ``t != opt_i``, shaped like ``values``."""
    return np.arange(values.shape[-1]) != opt[..., None]


def score_gaps(values: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """``v_{i,opt_i} - max_{t != opt_i} v_{i,t}`` per sample, ``(..., n)``, for per-token values
    ``v (..., n, T)`` (token scores, token norms, ...)."""
    best = np.take_along_axis(values, opt[..., None], axis=-1)[..., 0]
    return best - np.max(values, axis=-1, where=_non_optimal(values, opt), initial=-np.inf)


def opt_is_argmax(values: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """Whether ``opt_i`` is the unique argmax of ``v_i`` (positive :func:`score_gaps`), ``(..., n)``."""
    return score_gaps(values, opt) > 0


def non_optimal_spread(values: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """Largest spread of the values of the non-designated tokens,
    ``max_i (max - min)_{t != opt_i} v_{i,t}``, per trial (0 when every sample's non-designated
    tokens have equal values)."""
    mask = _non_optimal(values, opt)
    spread = np.max(values, axis=-1, where=mask, initial=-np.inf) - np.min(
        values, axis=-1, where=mask, initial=np.inf
    )
    return spread.max(axis=-1)


@dataclass(frozen=True)
class AssumptionReport:
    """How many trials of a data set met the stated preconditions.

    ``per_trial`` maps a condition name to a ``(K,)`` boolean array; ``n_met`` counts the
    trials meeting all of them.  ``details`` maps a measured quantity (e.g. ``rho_perp``) to a
    ``(K,)`` float array.  Which conditions a data set reports is up to its generator.
    """

    n_trials: int
    n_met: int
    per_trial: Mapping[str, np.ndarray]
    details: Mapping[str, np.ndarray]

    @classmethod
    def from_flags(cls, per_trial: Mapping[str, np.ndarray], details: Mapping[str, np.ndarray]):
        met = np.logical_and.reduce(list(per_trial.values()))
        return cls(n_trials=met.size, n_met=int(met.sum()), per_trial=dict(per_trial), details=dict(details))

    def count(self, condition: str) -> int:
        """Number of trials meeting one named condition."""
        return int(self.per_trial[condition].sum())


# --------------------------------------------------------------------------- containers


@dataclass(frozen=True)
class TokenSelectionInstance:
    """One trial: ``X (n, T, d)``, ``y (n,)``, ``u (d,)``, ``opt (n,)``, ``designated_opt (n,)``."""

    X: np.ndarray
    y: np.ndarray
    u: np.ndarray
    opt: np.ndarray
    designated_opt: np.ndarray

    def optimal_tokens(self) -> np.ndarray:
        """``Z_i = x_{i,opt_i}``, shape ``(n, d)`` (the u-SVM's inputs)."""
        return self.X[np.arange(self.X.shape[0]), self.opt]


@dataclass(frozen=True)
class TokenSelectionTensors:
    """The tensors of :class:`TokenSelectionData` on one device (``opt`` as int64)."""

    X: torch.Tensor
    y: torch.Tensor
    u: torch.Tensor
    opt: torch.Tensor
    designated_opt: torch.Tensor


@dataclass(frozen=True)
class TokenSelectionData:
    """A batch of ``K`` independent token-selection data sets (numpy, float64, read-only).

    ``opt`` is the token every reference treats as optimal (a generator's choice: e.g. the
    argmax of the scores ``gamma = y * X u`` when the decoder is fixed, or a designated token
    when the decoder is learned).  ``designated_opt`` is the token the generator meant to be
    optimal.  ``name`` names the data set in messages, ``params`` holds the generator's
    parameters; ``assumptions`` says which trials met the generator's preconditions.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    u: np.ndarray
    opt: np.ndarray
    designated_opt: np.ndarray
    params: Mapping[str, float | int]
    assumptions: AssumptionReport = field(repr=False)

    def __post_init__(self):
        K, n, T, d = self.X.shape
        expected = {"y": (K, n), "u": (K, d), "opt": (K, n), "designated_opt": (K, n)}
        for key, shape in expected.items():
            if getattr(self, key).shape != shape:
                raise ValueError(f"{key} has shape {getattr(self, key).shape}, expected {shape}")
        if not all(getattr(self, key).dtype == np.float64 for key in ("X", "y", "u")):
            raise ValueError("X, y and u must be float64")
        for key in ("X", *expected):
            getattr(self, key).flags.writeable = False

    @property
    def K(self) -> int:
        return self.X.shape[0]

    @property
    def n(self) -> int:
        return self.X.shape[1]

    @property
    def T(self) -> int:
        return self.X.shape[2]

    @property
    def d(self) -> int:
        return self.X.shape[3]

    def scores(self) -> np.ndarray:
        """``gamma_{k,i,t} = y_{k,i} u_k^T x_{k,i,t}``, shape ``(K, n, T)``."""
        return token_scores(self.X, self.y, self.u)

    def instance(self, k: int) -> TokenSelectionInstance:
        """Trial ``k`` without its leading dimension."""
        return TokenSelectionInstance(self.X[k], self.y[k], self.u[k], self.opt[k], self.designated_opt[k])

    def to_torch(self, device="cpu", dtype=None) -> TokenSelectionTensors:
        """The same numbers as torch tensors on ``device`` (``dtype`` defaults to float64)."""
        dtype = torch.float64 if dtype is None else dtype

        def move(a, as_dtype):
            return torch.as_tensor(np.array(a), dtype=as_dtype).to(device)

        return TokenSelectionTensors(
            X=move(self.X, dtype),
            y=move(self.y, dtype),
            u=move(self.u, dtype),
            opt=move(self.opt, torch.int64),
            designated_opt=move(self.designated_opt, torch.int64),
        )


def concatenate(parts) -> TokenSelectionData:
    """Data sets of equal ``(n, T, d)`` as one batch, their trials in order.

    The name joins the parts' names with ``"+"``; the assumption reports are concatenated
    (every part must report the same conditions and details), so ``assumptions.count(...)``
    counts over all parts.  ``params`` is empty: the parts may come from different generators.
    """
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]

    def stacked(name):
        return np.concatenate([getattr(part, name) for part in parts])

    def report(field):
        return {key: np.concatenate([getattr(part.assumptions, field)[key] for part in parts])
                for key in getattr(parts[0].assumptions, field)}

    return TokenSelectionData(
        name="+".join(part.name for part in parts), X=stacked("X"), y=stacked("y"), u=stacked("u"),
        opt=stacked("opt"), designated_opt=stacked("designated_opt"), params={},
        assumptions=AssumptionReport.from_flags(report("per_trial"), report("details")))


# --------------------------------------------------------------------------- seeding


def trial_generators(rng: Seeds, K: int | None = None) -> list[np.random.Generator]:
    """One independent generator per trial (see the module docstring for the seeding rules)."""
    if isinstance(rng, int | np.integer | np.random.Generator):
        return np.random.default_rng(rng).spawn(1 if K is None else K)
    seeds = [int(seed) for seed in rng]
    if K is not None and K != len(seeds):
        raise ValueError(f"K={K} but {len(seeds)} seeds were given")
    return [np.random.default_rng(seed) for seed in seeds]
