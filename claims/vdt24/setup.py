r"""The set-up of vdt24: its data sets and the checks of its assumptions.

Paper: B. Vasudeva, P. Deora, C. Thrampoulidis, "Implicit Bias and Fast Convergence Rates
for Self-attention", arXiv 2402.05738 (v1, 2024); model after Tarzanagh et al. 2023.  A sample
is a sequence ``X_i`` of ``T`` tokens with label ``y_i`` in {-1, +1}, token 0 is the query, the
prediction is ``f(X_i) = u^T X_i^T softmax(X_i W x_{i,0})`` and the token scores are

    gamma_{i,t} = y_i u^T x_{i,t}                                           (Definition 1)

with optimal token ``opt_i = argmax_t gamma_{i,t}`` for a fixed decoder ``u``.  Containers,
seeding and the token measurements are the library's (:mod:`theorycheck.data`); this module
holds what is the paper's: its data sets (readings of Example 1, the antipodal tokens of
Fig. 5, orthonormal tokens, a counterexample for Remark 1, the Gaussian data model of
Section 4) and the assumption reports they carry.  Tokens are 0-based (the paper's token 1 is
index 0 here).

Assumptions recorded by the reports (the paper's exact threshold for Assumption 1 is not
known, so only the measured ratio is recorded, never a verdict):

* Assumption 1 (nearly orthogonal tokens): measured by the orthogonality ratio
  ``rho_perp = max_{(i,t) != (j,s)} |<x_{i,t}, x_{j,s}>| / min_{i,t} ||x_{i,t}||^2``
  (:func:`theorycheck.data.orthogonality_ratio`).
* Assumption 2 (equal non-optimal scores): ``gamma_{i,t} = gamma_{i,s}`` for all
  ``t, s != opt_i``; met when the spread ``max_i (max - min)_{t != opt_i} gamma_{i,t}``
  (:func:`theorycheck.data.non_optimal_spread` of the scores) is at most ``ASSUMPTION2_TOL``
  and every ``opt_i`` is the unique argmax of the scores.
* Condition 1, data part (joint training, T = 2): the optimal token is the longer token.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import stats

from theorycheck.data import (
    AssumptionReport,
    Seeds,
    TokenSelectionData,
    non_optimal_spread,
    opt_is_argmax,
    orthogonality_ratio,
    score_gaps,
    token_scores,
    trial_generators,
)

ASSUMPTION2_TOL = 1e-8
"""Largest spread of the non-optimal scores of a sample that still counts as Assumption 2."""


# --------------------------------------------------------------------------- assumption checks


def fixed_decoder_report(X, y, u, opt, designated_opt) -> AssumptionReport:
    """Assumption 2, uniqueness of the argmax and ``rho_perp`` for a fixed decoder ``u``.

    Conditions: ``opt_unique_argmax`` (every ``opt_i`` is the strict argmax), ``assumption2``
    (that, and a non-optimal score spread <= ``ASSUMPTION2_TOL``), ``designated_opt_is_argmax``
    (the token the generator intended is the strict argmax of every sample).
    """
    scores = token_scores(X, y, u)
    unique = opt_is_argmax(scores, opt).all(axis=-1)
    residual = non_optimal_spread(scores, opt)
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


def first_step_widens_every_gap(data) -> np.ndarray:
    """Per instance of ``data`` (a `TokenSelectionData`): every gap of `first_step_score_gaps`
    is positive -- the base case of Lemma 13's induction, shape (K,)."""
    return (first_step_score_gaps(data.X, data.y, data.opt) > 0).all(axis=-1)


def base_case_probability_gaussian(n: int, d: int, rho: float) -> float:
    r"""A Gaussian approximation of P[every gap of `first_step_score_gaps` > 0] on the DM data
    (token variances rho^2 / d and 1 / d): sample i's gap is
    ``||x_opt||^2 - ||x_other||^2 + sum_{j != i} y_i y_j <x_{j,1} + x_{j,2}, x_{i,opt} - x_{i,other}>``,
    of mean rho^2 - 1 and variance s^2 = ((n - 1) (1 + rho^2)^2 + 2 (1 + rho^4)) / d (the
    cross terms' and the own norms'); treating the n gaps as independent,
    ``Phi((rho^2 - 1) / s)^n``.  At a fixed d/n it falls to 0 as n grows, and it stays above
    1 - delta when d >~ 2 (1 + rho^2)^2 / (rho^2 - 1)^2 n ln(n / delta) (the Gaussian tail of
    the worst of n gaps): the base case needs d of order n ln n, not n.  An approximation
    (the gaps share g), recorded beside the measured rate, not decided."""
    s = np.sqrt(((n - 1) * (1 + rho ** 2) ** 2 + 2 * (1 + rho ** 4)) / d)
    return float(stats.norm.cdf((rho ** 2 - 1) / s) ** n)


def joint_model_report(X, y, u, opt) -> AssumptionReport:
    """Assumption 2 and the data part of Condition 1 for joint training, where ``u`` is learned.

    With the decoder trained from ``u_0 = 0`` the optimal token is designated, not an argmax, so
    ``assumption2`` only asks for the score spread <= ``ASSUMPTION2_TOL`` (automatic for T = 2,
    under any ``u``) and ``opt_token_longest`` asks that ``||x_{i,opt_i}|| > ||x_{i,t}||`` for all ``t != opt_i``.
    """
    norms = np.linalg.norm(X, axis=-1)
    scores = token_scores(X, y, u)
    norm_gaps = score_gaps(norms, opt)
    residual = non_optimal_spread(scores, opt)
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


# --------------------------------------------------------------------------- data sets


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
