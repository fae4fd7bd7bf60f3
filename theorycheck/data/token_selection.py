"""Seeded data sets for the one-layer token-selection attention model.

Model (Vasudeva, Deora, Thrampoulidis 2024, arXiv 2402.05738, after Tarzanagh et al. 2023):
a sample is a sequence ``X_i`` of ``T`` tokens ``x_{i,t}`` in ``R^d`` (rows of ``X_i``) with a
label ``y_i`` in {-1, +1}; token 0 is the query, and the prediction is
``f(X_i) = u^T X_i^T softmax(X_i W x_{i,0})``.  For a decoder ``u`` the token scores are

    gamma_{i,t} = y_i u^T x_{i,t}                                           (Definition 1)

and the optimal token is ``opt_i = argmax_t gamma_{i,t}``.

Every data set carries a leading trial dimension ``K``: ``X`` is ``(K, n, T, d)``, ``y`` and
``opt`` are ``(K, n)``, ``u`` is ``(K, d)``.  Tokens are 0-based throughout (the papers' token
1 is index 0 here).  Data are always drawn on the CPU with numpy in float64 and only then moved
to a device (:meth:`TokenSelectionData.to_torch`), so CPU and GPU runs see identical numbers.

Seeding: every generator takes ``rng`` as an ``int`` or a ``numpy.random.Generator`` (trial k
uses the k-th child of ``rng.spawn(K)``, so a trial does not depend on ``K``) or as a sequence
of ``K`` ints (trial k uses ``numpy.random.default_rng(rng[k])``, i.e. "seeds 0-4" means
``rng=range(5)``).

Assumptions recorded by :class:`AssumptionReport` (the paper's exact threshold for
Assumption 1 is not known, so only the measured ratio is recorded, never a verdict):

* Assumption 1 (nearly orthogonal tokens): measured by the orthogonality ratio
  ``rho_perp = max_{(i,t) != (j,s)} |<x_{i,t}, x_{j,s}>| / min_{i,t} ||x_{i,t}||^2``.
* Assumption 2 (equal non-optimal scores): ``gamma_{i,t} = gamma_{i,s}`` for all
  ``t, s != opt_i``; met when the spread ``max_i (max - min)_{t != opt_i} gamma_{i,t}``
  is at most ``1e-8`` and every ``opt_i`` is the unique argmax of the scores.
* Condition 1, data part (joint training, T = 2): the optimal token is the longer token.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

ASSUMPTION2_TOL = 1e-8

Seeds = int | np.random.Generator | Iterable[int]


# --------------------------------------------------------------------------- assumption checks


def token_gram(X: np.ndarray) -> np.ndarray:
    """Gram matrix ``<x_{i,t}, x_{j,s}>`` of all ``nT`` tokens of each trial: ``(..., nT, nT)``."""
    tokens = X.reshape(*X.shape[:-3], -1, X.shape[-1])
    return tokens @ np.swapaxes(tokens, -1, -2)


def max_cross_inner_product(X: np.ndarray) -> np.ndarray:
    """``nu = max_{(i,t) != (j,s)} |<x_{i,t}, x_{j,s}>|`` over all pairs of distinct tokens, per trial."""
    gram = np.abs(token_gram(X))
    off_diagonal = ~np.eye(gram.shape[-1], dtype=bool)
    return np.max(gram, axis=(-1, -2), where=off_diagonal, initial=0.0)


def orthogonality_ratio(X: np.ndarray) -> np.ndarray:
    """Assumption 1 surrogate ``rho_perp = nu / min_{i,t} ||x_{i,t}||^2``, per trial."""
    sq_norms = np.diagonal(token_gram(X), axis1=-2, axis2=-1)
    return max_cross_inner_product(X) / sq_norms.min(axis=-1)


def token_scores(X: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Scores ``gamma_{i,t} = y_i u^T x_{i,t}``: ``(..., n, T)`` from ``X (..., n, T, d)``."""
    return y[..., None] * np.einsum("...ntd,...d->...nt", X, u)


def _non_optimal(scores: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """Boolean mask of the tokens ``t != opt_i``, shaped like ``scores``."""
    return np.arange(scores.shape[-1]) != opt[..., None]


def score_gaps(scores: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """``gamma_{i,opt_i} - max_{t != opt_i} gamma_{i,t}`` per sample, ``(..., n)``."""
    best = np.take_along_axis(scores, opt[..., None], axis=-1)[..., 0]
    return best - np.max(scores, axis=-1, where=_non_optimal(scores, opt), initial=-np.inf)


def constraint_radii(X: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """``R_i = ||x_{i,1}|| max_{t != opt_i} ||x_{i,opt_i} - x_{i,t}||``, ``(K, n)`` from ``X (K, n, T, d)``:
    the largest Frobenius norm of a W-SVM constraint matrix ``(x_{i,opt} - x_{i,t}) x_{i,1}^T``
    of sample i (the numpy twin of ``theorycheck.models.constraint_radii``)."""
    optimal = np.take_along_axis(X, opt[:, :, None, None], axis=2)
    return np.linalg.norm(X[:, :, 0], axis=-1) * np.linalg.norm(optimal - X, axis=-1).max(-1)


def opt_is_argmax(scores: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """Whether ``opt_i`` is the unique argmax of ``gamma_i`` (positive score gap), ``(..., n)``."""
    return score_gaps(scores, opt) > 0


def assumption2_residual(scores: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """Largest spread of the non-optimal scores, ``max_i (max - min)_{t != opt_i} gamma_{i,t}``, per trial."""
    mask = _non_optimal(scores, opt)
    spread = np.max(scores, axis=-1, where=mask, initial=-np.inf) - np.min(
        scores, axis=-1, where=mask, initial=np.inf
    )
    return spread.max(axis=-1)


@dataclass(frozen=True)
class AssumptionReport:
    """How many trials of a data set met the stated preconditions.

    ``per_trial`` maps a condition name to a ``(K,)`` boolean array; ``n_met`` counts the
    trials meeting all of them.  ``details`` maps a measured quantity (``rho_perp``,
    ``assumption2_residual``, ...) to a ``(K,)`` float array.
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


def fixed_decoder_report(X, y, u, opt, designated_opt) -> AssumptionReport:
    """Assumption 2, uniqueness of the argmax and ``rho_perp`` for a fixed decoder ``u``.

    Conditions: ``opt_unique_argmax`` (every ``opt_i`` is the strict argmax), ``assumption2``
    (that, and a non-optimal score spread <= 1e-8), ``designated_opt_is_argmax`` (the token the
    generator intended is the strict argmax of every sample).
    """
    scores = token_scores(X, y, u)
    unique = opt_is_argmax(scores, opt).all(axis=-1)
    residual = assumption2_residual(scores, opt)
    return AssumptionReport.from_flags(
        per_trial={
            "opt_unique_argmax": unique,
            "assumption2": unique & (residual <= ASSUMPTION2_TOL),
            "designated_opt_is_argmax": opt_is_argmax(scores, designated_opt).all(axis=-1),
        },
        details={
            "rho_perp": orthogonality_ratio(X),
            "assumption2_residual": residual,
            "min_score_gap": score_gaps(scores, opt).min(axis=-1),
        },
    )


def first_step_score_gaps(X: np.ndarray, y: np.ndarray, opt: np.ndarray) -> np.ndarray:
    r"""Score gaps after the first joint-training step from ``u_0 = W_0 = 0`` (T = 2), shape (K, n).

    At ``u_0 = W_0 = 0`` every loss is 1 and the attention is (1/2, 1/2), so the first ``u`` step
    of every normalized method is parallel to ``g = sum_j y_j (x_{j,1} + x_{j,2})``, and the gap
    of sample i is, up to a positive factor,
    ``y_i <g, x_{i,opt} - x_{i,other}> = ||x_{i,opt}||^2 - ||x_{i,other}||^2 + (cross terms)``:
    the norm gap of Condition 1 (Vasudeva et al. 2024, Section 4) against the interference of
    the other samples, of size ~ sqrt(n) (1 + rho^2)/sqrt(d).  All gaps > 0 is the base case
    of Lemma 13's induction, which "d large enough against n" provides.
    """
    X, y = np.asarray(X), np.asarray(y)
    g = np.einsum("kn,kntd->kd", y, X)
    picked = np.take_along_axis(X, np.asarray(opt)[:, :, None, None], axis=2)[:, :, 0]
    return y * np.einsum("kd,knd->kn", g, 2 * picked - X.sum(axis=2))


def joint_model_report(X, y, u, opt) -> AssumptionReport:
    """Assumption 2 and the data part of Condition 1 for joint training, where ``u`` is learned.

    With the decoder trained from ``u_0 = 0`` the optimal token is designated, not an argmax, so
    ``assumption2`` only asks for the score spread <= 1e-8 (automatic for T = 2, under any ``u``)
    and ``opt_token_longest`` asks that ``||x_{i,opt_i}|| > ||x_{i,t}||`` for all ``t != opt_i``.
    """
    norms = np.linalg.norm(X, axis=-1)
    scores = token_scores(X, y, u)
    norm_gaps = score_gaps(norms, opt)
    residual = assumption2_residual(scores, opt)
    return AssumptionReport.from_flags(
        per_trial={
            "assumption2": residual <= ASSUMPTION2_TOL,
            "opt_token_longest": (norm_gaps > 0).all(axis=-1),
        },
        details={
            "rho_perp": orthogonality_ratio(X),
            "assumption2_residual": residual,
            "min_norm_gap": norm_gaps.min(axis=-1),
        },
    )


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
    """The torch twin of :class:`TokenSelectionData` on one device (``opt`` as int64)."""

    X: torch.Tensor
    y: torch.Tensor
    u: torch.Tensor
    opt: torch.Tensor
    designated_opt: torch.Tensor


@dataclass(frozen=True)
class TokenSelectionData:
    """A batch of ``K`` independent token-selection data sets (numpy, float64, read-only).

    ``opt`` is the optimal token used by every reference: the argmax of the scores
    ``gamma = y * X u`` for fixed-decoder data (so it is right even where a generator's intent
    fails), and the designated token for the joint-training model, whose decoder is learned.
    ``designated_opt`` is the token the generator meant to be optimal.  ``params`` holds the
    generator's parameters; ``assumptions`` says which trials met the preconditions.
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
        import torch

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


# --------------------------------------------------------------------------- generators


def trial_generators(rng: Seeds, K: int | None = None) -> list[np.random.Generator]:
    """One independent generator per trial (see the module docstring for the seeding rules)."""
    if isinstance(rng, int | np.integer | np.random.Generator):
        return np.random.default_rng(rng).spawn(1 if K is None else K)
    seeds = [int(seed) for seed in rng]
    if K is not None and K != len(seeds):
        raise ValueError(f"K={K} but {len(seeds)} seeds were given")
    return [np.random.default_rng(seed) for seed in seeds]


def _describe(generator: str, params: Mapping[str, float | int]) -> str:
    return f"{generator}(" + ",".join(f"{key}={value:g}" for key, value in params.items()) + ")"


def _fixed_decoder_data(generator: str, params: dict, trials: list) -> TokenSelectionData:
    """Stack per-trial ``(X, y, u, designated_opt)`` and set ``opt`` to the argmax of the scores."""
    X, y, u, designated = (np.stack(parts) for parts in zip(*trials))
    opt = np.argmax(token_scores(X, y, u), axis=-1)
    return TokenSelectionData(
        name=_describe(generator, params),
        X=X,
        y=y,
        u=u,
        opt=opt,
        designated_opt=designated,
        params=params,
        assumptions=fixed_decoder_report(X, y, u, opt, designated),
    )


def _labels_and_opt(rng: np.random.Generator, n: int, T: int) -> tuple[np.ndarray, np.ndarray]:
    """``y_i ~ Unif{-1, +1}`` and ``opt_i ~ Unif{0, ..., T-1}`` (the query may be optimal)."""
    return rng.choice([-1.0, 1.0], size=n), rng.integers(T, size=n)


def example1(rng: Seeds, K: int | None = None, *, n=6, T=4, d=32, zeta=3.0) -> TokenSelectionData:
    """E1: Gaussian tokens with a least-squares decoder (a reading of Example 1 of
    Vasudeva, Deora, Thrampoulidis 2024, arXiv 2402.05738; the paper's generator is not
    fully specified).

    ``x_{i,t} ~ N(0, I_d / d)`` i.i.d., ``y_i ~ Unif{-1,+1}``, ``opt_i ~ Unif[T]``, and ``u`` is
    the minimum-norm least-squares solution of ``u^T x_{i,opt_i} = zeta y_i`` and
    ``u^T x_{i,t} = 0`` (t != opt_i).  When ``d >= nT`` the system is solved exactly, so
    ``gamma_opt = zeta`` and ``gamma_non-opt = 0`` and Assumption 2 holds; when ``d < nT`` it is
    only solved in least squares, Assumption 2 fails and the designated token need not be the
    argmax, which the assumption report records (the data are still returned).
    """
    params = dict(n=n, T=T, d=d, zeta=zeta)
    trials = []
    for g in trial_generators(rng, K):
        y, designated = _labels_and_opt(g, n, T)
        X = g.standard_normal((n, T, d)) / np.sqrt(d)
        target = zeta * y[:, None] * (np.arange(T) == designated[:, None])
        u = np.linalg.lstsq(X.reshape(n * T, d), target.reshape(-1), rcond=None)[0]
        trials.append((X, y, u, designated))
    return _fixed_decoder_data("example1", params, trials)


def _signal_on_first_axis(g, n, T, d, rho, sigma, noisy_opt: bool):
    """Tokens ``sigma P g`` with ``P = I - e_1 e_1^T``; the optimal token gets ``rho y_i e_1``
    added (``noisy_opt``) or is exactly ``rho y_i e_1``."""
    y, designated = _labels_and_opt(g, n, T)
    X = sigma * g.standard_normal((n, T, d))
    X[..., 0] = 0.0
    rows = np.arange(n)
    if not noisy_opt:
        X[rows, designated] = 0.0
    X[rows, designated, 0] = rho * y
    return X, y, designated


def example1_signal(rng: Seeds, K: int | None = None, *, n=6, T=4, d=32, rho=0.5, zeta=4.0, sigma=None):
    """E1s: Example 1 read as signal along the decoder (an alternative reading of Example 1 of
    arXiv 2402.05738).

    ``u = zeta e_1``; ``x_{i,opt_i} = rho y_i e_1 + sigma P g`` and ``x_{i,t} = sigma P g``
    otherwise, with ``P = I - e_1 e_1^T``, ``g ~ N(0, I_d)`` and ``sigma = 1/sqrt(d)`` by
    default.  Scores: ``gamma_opt = zeta rho``, ``gamma_non-opt = 0`` (Assumption 2 exactly).
    """
    sigma = 1.0 / np.sqrt(d) if sigma is None else sigma
    u = zeta * np.eye(d)[0]
    trials = [
        (X, y, u, designated)
        for g in trial_generators(rng, K)
        for X, y, designated in [_signal_on_first_axis(g, n, T, d, rho, sigma, noisy_opt=True)]
    ]
    params = dict(n=n, T=T, d=d, rho=rho, zeta=zeta, sigma=sigma)
    return _fixed_decoder_data("example1_signal", params, trials)


def antipodal(rng: Seeds, K: int | None = None, *, n=6, T=4, d=32, rho=1.0, zeta=3.0, sigma=None):
    """ANT: antipodal optimal tokens (the footnote to Assumption 1 and Fig. 5 of arXiv 2402.05738).

    ``x_{i,opt_i} = rho y_i e_1`` exactly (so the optimal tokens are ``+-rho e_1``), the other
    tokens are ``sigma P g`` with ``P = I - e_1 e_1^T``, ``g ~ N(0, I_d)``, ``sigma = 1/sqrt(d)``
    by default, and ``u = (zeta / rho) e_1``: ``gamma_opt = zeta``, ``gamma_non-opt = 0``.
    """
    sigma = 1.0 / np.sqrt(d) if sigma is None else sigma
    u = (zeta / rho) * np.eye(d)[0]
    trials = [
        (X, y, u, designated)
        for g in trial_generators(rng, K)
        for X, y, designated in [_signal_on_first_axis(g, n, T, d, rho, sigma, noisy_opt=False)]
    ]
    params = dict(n=n, T=T, d=d, rho=rho, zeta=zeta, sigma=sigma)
    return _fixed_decoder_data("antipodal", params, trials)


def orthonormal(rng: Seeds, K: int | None = None, *, n=6, T=4, d=32, zeta=3.0, radius=1.0):
    """ORTHO: all ``nT`` tokens orthogonal with norm ``radius`` (requires ``d >= nT``).

    The tokens are ``radius`` times the columns of a random ``d x nT`` matrix with orthonormal
    columns (QR of a Gaussian matrix), and ``u = (zeta / radius^2) sum_i y_i x_{i,opt_i}``, which
    gives ``gamma_opt = zeta`` and ``gamma_non-opt = 0``.  The W-SVM of this instance has a
    closed form (see ``theorycheck.solvers.wsvm_orthonormal_closed_form``).
    """
    if d < n * T:
        raise ValueError(f"orthonormal tokens need d >= nT, got d={d} < {n * T}")
    trials = []
    for g in trial_generators(rng, K):
        y, designated = _labels_and_opt(g, n, T)
        Q = np.linalg.qr(g.standard_normal((d, n * T)))[0]
        X = radius * Q.T.reshape(n, T, d)
        u = (zeta / radius**2) * np.einsum("n,nd->d", y, X[np.arange(n), designated])
        trials.append((X, y, u, designated))
    return _fixed_decoder_data("orthonormal", dict(n=n, T=T, d=d, zeta=zeta, radius=radius), trials)


def counterexample(K: int = 1) -> TokenSelectionData:
    """CE: a fixed 3-token instance violating Assumptions 1 and 2 with a competing local direction.

    This construction is theorycheck's own (not the paper's); it illustrates Remark 1 of
    arXiv 2402.05738.  ``n = 1``, ``T = 3``, ``d = 3``, ``y = 1``, tokens
    ``x_0 = (0, 0, 1)`` (query), ``x_1 = (1, 0, 1)``, ``x_2 = (-3, 1, 1)``, decoder
    ``u = (1.5, 6.5, -1)``; scores ``(-1, 0.5, 1)``, so ``opt = 2``.  Token 1
    (:func:`counterexample_local_opt`) is locally optimal: in the W-SVM with token 1 as "opt" only
    the constraint against token 0 (a lower score) is active.  Values: ``W_mm`` is zero except
    its last column ``(-0.3, 0.1, 0)``; ``W_alpha`` is zero except its last column ``(1, 0, 0)``;
    their cosine is ``-3 / sqrt(10) = -0.9487``.  ``K`` identical copies.
    """
    X = np.array([[[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [-3.0, 1.0, 1.0]]])
    trial = (X, np.ones(1), np.array([1.5, 6.5, -1.0]), np.array([2]))
    return _fixed_decoder_data("counterexample", {}, [trial] * K)


def counterexample_local_opt() -> np.ndarray:
    """The locally-optimal (not globally optimal) token choice ``alpha = (1,)`` of :func:`counterexample`."""
    return np.array([1])


def gaussian_dm(rng: Seeds, K: int | None = None, *, n=8, d=64, rho=2.0, opt_index=1, sigma=None):
    """DM: the joint-training data model of Section 4 of arXiv 2402.05738 (T = 2; a reading of it).

    ``x_{i,opt} ~ N(0, rho^2 sigma^2 I_d)`` (the optimal token is the longer one when
    ``rho > 1``), the other token ``~ N(0, sigma^2 I_d)``, ``sigma = 1/sqrt(d)`` by default,
    ``y_i = sign <u*, x_{i,opt}>`` with ``u*`` a random unit vector (stored as ``u``).  The
    optimal token sits at ``opt_index`` (1: the second token, default; 0: the query).  Since the
    decoder is learned from ``u_0 = 0``, ``opt`` is the designated index, not an argmax of the
    scores under ``u*``.  Assumption 2 holds automatically (one non-optimal token).
    """
    sigma = 1.0 / np.sqrt(d) if sigma is None else sigma
    scale = np.where(np.arange(2) == opt_index, rho * sigma, sigma)
    trials = []
    for g in trial_generators(rng, K):
        u_star = g.standard_normal(d)
        u_star /= np.linalg.norm(u_star)
        X = scale[:, None] * g.standard_normal((n, 2, d))
        y = np.where(X[:, opt_index] @ u_star >= 0, 1.0, -1.0)
        trials.append((X, y, u_star))
    X, y, u = (np.stack(parts) for parts in zip(*trials))
    opt = np.full(y.shape, opt_index)
    params = dict(n=n, T=2, d=d, rho=rho, opt_index=opt_index, sigma=sigma)
    return TokenSelectionData(
        name=_describe("gaussian_dm", params),
        X=X,
        y=y,
        u=u,
        opt=opt,
        designated_opt=opt.copy(),
        params=params,
        assumptions=joint_model_report(X, y, u, opt),
    )
