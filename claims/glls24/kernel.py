r"""glls24's kernel helpers: a wrong reference for the closed-form Gram matrix (Def. 3.6), the
first-order adversarial perturbation of the kernel and the width slope of its change (Lemma 5.1),
and NTK regression against the trained network and the infinite-width predictor (Theorem F.2)."""
from __future__ import annotations

import numpy as np
import torch
from scipy import stats

from claims.glls24.setup import (
    EXACT,
    SIGMA,
    bounded_preactivation_level,
    initialization,
    regression_instance,
    require_construction,
    unit_inputs,
)
from theorycheck import shared_run
from theorycheck.errors import InvalidInputError
from theorycheck.maps import mean_interval
from theorycheck.models import neuron_norms, ntk_gram
from theorycheck.solvers import kernel_gd_predictions, output_kernel, softmax_limit_kernel


def gram_frozen_normaliser(X, W, A):
    r"""``(1/m) J J^T`` with ``J`` the autograd Jacobian at W of the network whose softmax normaliser
    is held at its value at W, ``F(w)_l = m <a_l, exp(w^T x) / alpha(W)>``: the same outputs at W,
    but the derivative of the normaliser (the term ``-<a_l, S>``) is missing."""
    m = W.shape[2]

    def vec_outputs(x, w, a, w_fixed):
        alpha = torch.exp(x @ w_fixed).sum(-1, keepdim=True)
        return (m * (torch.exp(x @ w) / alpha) @ a.T).T.reshape(-1)

    J = torch.func.vmap(torch.func.jacrev(vec_outputs, argnums=1))(X, W, A, W).flatten(2)
    return J @ J.transpose(1, 2) / m


def probe_matrices(H, rng):
    """The test matrices U of the adversarial direction: I, H(W~) and a random symmetric one."""
    K, N, _ = H.shape
    G = torch.as_tensor(rng.standard_normal((K, N, N)), dtype=H.dtype, device=H.device)
    eye = torch.eye(N, dtype=H.dtype, device=H.device).expand(K, N, N)
    return {"identity": eye, "kernel": H, "random": (G + G.transpose(1, 2)) / 2}


def adversarial_direction(X, W, A, U):
    r"""The first-order worst case of ``<H(W), U>``: column r is ``g_r / ||g_r||`` with ``g_r =
    grad_{w_r} <H(W), U>`` (unit per neuron)."""
    g = torch.func.grad(lambda w: (ntk_gram(X, X, w, A) * U).sum())(W)
    return g / neuron_norms(g)[:, None, :]


PERTURBATION_RADII = [1e-4, 1e-3, 1e-2]
"""The radii R of Lemma 5.1's probe (R < 0.01 is the lemma's hypothesis; 1e-2 its edge)."""


@shared_run(sizes={"quick": {"n": 4, "d_in": 8, "d": 2, "instances": 10},
                   "full": {"n": 16, "d_in": 32, "d": 2, "instances": 10}})
def adversarial_kernel_change(run, *, m, radius_scale=1.0, radii=tuple(PERTURBATION_RADII)):
    r"""Lemma 5.1's probe at width ``m`` on ``instances`` instances (data and symmetric initialization
    W~): per radius R of ``radii`` (default `PERTURBATION_RADII`) the worst ``||H(W~ + R p) - H(W~)||_F`` over the
    first-order adversarial directions ``p`` (`adversarial_direction`, one per test matrix of
    `probe_matrices`) scaled by ``radius_scale`` (1: every neuron moves exactly R); also the change
    along a random direction of per-neuron norm ``R = 1e-2`` (over R), ``B_emp`` and the sizes.  The
    largest per-neuron displacement per unit R is checked to be ``radius_scale`` exactly (up to the
    round-off of a normalization): a property of the construction."""
    s = run.sizes
    X, _ = regression_instance(run, n=s["n"], d_in=s["d_in"], d=s["d"], K=s["instances"])
    W0, A = initialization(run, d_in=s["d_in"], d=s["d"], m=m, K=s["instances"])
    Xt, W, At = run.tensor(X), run.tensor(W0), run.tensor(A)
    H = ntk_gram(Xt, Xt, W, At)
    change, displacement = np.zeros((len(radii), s["instances"])), 0.0
    for U in probe_matrices(H, run.rng("probe", m)).values():
        P = adversarial_direction(Xt, W, At, U) * radius_scale
        displacement = max(displacement, float(neuron_norms(P).max()))
        for j, R in enumerate(radii):
            moved = ntk_gram(Xt, Xt, W + R * P, At)
            change[j] = np.maximum(change[j], torch.linalg.matrix_norm(moved - H).cpu().numpy())
    Pr = run.tensor(run.rng("random direction", m).standard_normal(W0.shape))
    Pr = Pr / neuron_norms(Pr)[:, None, :]
    R = PERTURBATION_RADII[-1]
    random_change = torch.linalg.matrix_norm(ntk_gram(Xt, Xt, W + R * Pr, At) - H).cpu().numpy() / R
    require_construction(abs(displacement - radius_scale) <= EXACT * radius_scale,
                         "every neuron moves radius_scale per unit R")
    return {"change": change, "random_change_per_radius": random_change,
            "B": bounded_preactivation_level(X, W0), "X": X, "n": s["n"], "d": s["d"]}


def _log_values_by_width(name, values_by_width):
    """``(log m, log y)`` of ``values_by_width`` (width -> (K,) positive values, K the same at
    every width), both (J, K) for J widths; a clear error for ragged or non-positive values."""
    values = [np.asarray(v, dtype=float) for v in values_by_width.values()]
    if len({v.shape for v in values}) != 1 or values[0].ndim != 1:
        raise InvalidInputError(f"{name}: give the same number of trials (a 1-d array) at "
                                f"every width, got shapes {[v.shape for v in values]}")
    y = np.stack(values)                                                      # (J, K)
    if not np.all(y > 0):
        raise InvalidInputError(f"{name}: the values must be positive (their log is fitted)")
    x = np.broadcast_to(np.log(np.asarray(list(values_by_width), dtype=float))[:, None], y.shape)
    return x, np.log(y)


def width_slope_interval(values_by_width, confidence, *, paired=False):
    r"""Least-squares slope of ``log y`` against ``log m`` over widths and trials
    (``values_by_width``: width -> (K,) positive values, K the same at every width), its standard
    error and two-sided ``confidence`` interval (Student t).  Pooled (``paired=False``): one line
    through all points, ``N - 2`` degrees of freedom (``scipy.stats.linregress``'s slope and
    error).  ``paired=True``: trial k is the same instance (data) at every width, and its level is
    removed (a fixed-effects regression: ``log y`` and ``log m`` centred per trial, ``N - K - 1``
    degrees of freedom), so that only the scatter between widths within an instance enters; both
    take that scatter as i.i.d. across widths and trials (`per_trial_width_slope_interval` does
    not)."""
    x, y = _log_values_by_width("width_slope_interval", values_by_width)
    centre = (lambda a: a - a.mean(0)) if paired else (lambda a: a - a.mean())
    xc, yc = centre(x), centre(y)
    sxx = float(np.sum(xc**2))
    slope = float(np.sum(xc * yc)) / sxx
    dof = y.size - (y.shape[1] if paired else 1) - 1
    if dof < 1:
        raise InvalidInputError(f"width_slope_interval: {y.size} points leave no degree of freedom")
    stderr = float(np.sqrt(np.sum((yc - slope * xc) ** 2) / dof / sxx))
    half = float(stats.t.ppf(0.5 + confidence / 2, dof)) * stderr
    return {"slope": slope, "stderr": stderr, "dof": dof, "lower": slope - half, "upper": slope + half}


def per_trial_width_slope_interval(values_by_width, confidence):
    r"""The mean over trials of each trial's own least-squares slope ``b_k`` of ``log y_k`` against
    ``log m`` (``values_by_width``: width -> (K,) positive values, trial k the same instance at
    every width), with the two-sided ``confidence`` Student-t interval of that mean (``K - 1``
    degrees of freedom, `theorycheck.maps.mean_interval`): the trials are independent, so the
    ``b_k`` are i.i.d. whatever the error structure within a trial (skewed, correlated across
    widths), and only their number enters.  Returns the ``slopes`` ``b_k``, their ``slope`` (mean),
    ``stderr``, ``dof``, ``lower`` and ``upper`` (a one-sample t-test of a value ``b0`` at level
    ``1 - confidence`` rejects when ``b0`` is outside ``[lower, upper]``)."""
    x, y = _log_values_by_width("per_trial_width_slope_interval", values_by_width)
    if x.shape[0] < 2 or x.shape[1] < 2:
        raise InvalidInputError("per_trial_width_slope_interval: need at least 2 widths and 2 trials, "
                                f"got {x.shape[0]} and {x.shape[1]}")
    xc, yc = x - x.mean(0), y - y.mean(0)
    slopes = np.sum(xc * yc, axis=0) / np.sum(xc**2, axis=0)
    slope, lower, upper = mean_interval(slopes, confidence)
    return {"slopes": slopes.tolist(), "slope": slope, "stderr": float(stats.sem(slopes)),
            "dof": slopes.size - 1, "lower": lower, "upper": upper}


def output_major(values):
    """(..., n, d) -> (..., d n), row ``l * n + i``."""
    values = np.asarray(values)
    return np.swapaxes(values, -1, -2).reshape(values.shape[:-2] + (-1,))


def ntk_regression_path(tc, run, step_factor):
    r"""``f_ntk(t, x_te)`` for every recorded t: kernel GD from zero with the Gram matrix ``H(0)``,
    the test cross kernel ``K_0(x_te, X)`` and the function-space step ``eta * step_factor``;
    (T+1, K, d n_te), and the limit ``K_0 H(0)^{-1} vec Y`` (K, d n_te)."""
    H0, K0 = tc.tensor(run["H0"]), tc.tensor(run["cross_kernel"][0])
    y = tc.tensor(output_major(run["Y"]))
    path = kernel_gd_predictions(H0, K0, y, tc.tensor(run["eta"] * step_factor), run["t"])
    limit = torch.einsum("kij,kj->ki", K0, torch.linalg.solve(H0, y))
    return path.cpu().numpy(), limit.cpu().numpy()


def predictor_distance_to_infinite_width(tc, shape, widths, seeds):
    r"""``rms |f*_ntk - f^inf|`` over the test points and outputs, per width and per data set:
    width -> (seeds,), for ``seeds`` fresh data sets (data set k the same at every width) and a
    symmetric initialization drawn per width (no training: both predictors are defined at
    initialization), with ``f*_ntk = K_0(x_te, X) H(0)^{-1} vec Y`` and ``f^inf = (I_d (x)
    K_sigma(x_te, X)) (I_d (x) K_sigma(X, X))^{-1} vec Y`` (`softmax_limit_kernel`); ``shape =
    (n, d_in, d, n_test)``."""
    n, d_in, d, n_test = shape
    X, Y = regression_instance(tc, n=n, d_in=d_in, d=d, K=seeds)
    X, Y, X_test = tc.tensor(X), tc.tensor(output_major(Y)), tc.tensor(unit_inputs(tc.rng("test"), seeds, n_test, d_in))
    f_inf = torch.einsum("kij,kj->ki", output_kernel(softmax_limit_kernel(X_test, X, SIGMA), d),
                         torch.linalg.solve(output_kernel(softmax_limit_kernel(X, X, SIGMA), d), Y))
    distances = {}
    for m in widths:
        W0, A = (tc.tensor(a) for a in initialization(tc, d_in=d_in, d=d, m=m, K=seeds))
        f_ntk = torch.einsum("kij,kj->ki", ntk_gram(X_test, X, W0, A), torch.linalg.solve(ntk_gram(X, X, W0, A), Y))
        distances[m] = (f_ntk - f_inf).pow(2).mean(1).sqrt().cpu().numpy()
    return distances


def kernel_drifts(run):
    """``eps_H = max_t ||H(t) - H(0)||_F`` and ``eps_K = max_t max_row ||K_t - K_0||_2`` over the
    dense steps and the last iterate (K,), and ``k_0 = max_row ||K_0||_2``."""
    eps_H = np.maximum(run["kernel_drift"].max(0), run["kernel_at_end"]["kernel_drift"])
    cross = np.concatenate([run["cross_kernel"], run["kernel_at_end"]["cross_kernel"][None]])
    eps_K = np.linalg.norm(cross - cross[:1], axis=-1).max(axis=(0, 2))
    k0 = np.linalg.norm(run["cross_kernel"][0], axis=-1).max(-1)
    return eps_H, eps_K, k0
