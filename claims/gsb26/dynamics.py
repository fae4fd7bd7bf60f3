r"""gsb26's runs of Algorithm 1 with exact or expected gradients: the population oracle
(`test_algorithm.py`), the per-step contraction at the theorem's step (`test_contraction.py`),
the limit set with the empirical regularizer (`test_limit_set.py`) and the statistical floor
with the expected-gradient oracle (`test_statistical_floor.py`).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Algorithm 1 and Theorem 2.
"""
from __future__ import annotations

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.models.attention_regression import (
    EmpiricalAttentionRegression,
    PopulationAttentionRegression,
    balance_regularizer,
)
from theorycheck.optim import Preconditioned, run_trajectory
from theorycheck.solvers import extended_metric, local_constants, manifold_point, project_to_manifold

from .estimators import spectral_initialization
from .setup import NOISE, gaussian_rows, haar_rotations, ill_conditioned, regularized_model, well_conditioned


def tracked_distances(problem, Vs, Ks, rng, stop_above=np.inf):
    """dist(theta_t, M) along a trajectory (extended-covariance projection: multi-start at the
    first point, then warm-started from the previous projection's R alone), up to and including
    the first distance above ``stop_above``, and the last projection."""
    distances, projection = [], None
    for V, K in zip(Vs, Ks):
        starts = () if projection is None else (projection.R,)
        projection = project_to_manifold(V, K, problem.Sigma, problem.W, rng,
                                         random_starts=8 if projection is None else 0, starts=starts,
                                         polar_starts=projection is None)
        distances.append(projection.distance)
        if projection.distance > stop_above:
            break
    return np.array(distances), projection


STEP_CEILING = 60_000
"""The most steps of a run whose length follows its predicted rate (`rate_steps`)."""


def start_modes(problem, V0, K0, rng, tensor):
    """(projection, `local_constants`) of the statement's objective L + R(.; Sigma)/4 at the
    projection of the start (V0, K0) onto M: the normal modes of the preconditioned iteration
    near the start, known before the run."""
    projection = project_to_manifold(V0, K0, problem.Sigma, problem.W, rng)
    return projection, local_constants(regularized_model(problem, 0.25, tensor), projection.V, projection.K,
                                       problem.Sigma)


def start_rate(problem, V0, K0, rng, tensor):
    """alpha_loc at the projection of the start (`start_modes`): the slowest normal mode."""
    return start_modes(problem, V0, K0, rng, tensor)[1].alpha


def normal_coordinates(problem, V, K, projection, constants):
    r"""The coordinates ``c = E^T G delta`` of the displacement ``delta = (V, K) - theta_R`` (row-major
    (vec V, vec K)) in the normal modes ``E`` (``constants.modes``, G-orthonormal columns, the
    slowest first) of the metric ``G`` (`extended_metric`): near M, mode j's coordinate decays
    like ``(1 - eta alpha_j)^t`` and dist^2 is ``sum_j c_j^2``."""
    delta = np.concatenate([(V - projection.V).ravel(), (K - projection.K).ravel()])
    return constants.modes.T @ extended_metric(problem.Sigma, V.shape[0]) @ delta


def slow_mode_share(coordinates):
    """The slowest normal mode's share ``c_0^2 / sum_j c_j^2`` of dist^2."""
    return float(coordinates[0] ** 2 / np.sum(coordinates**2))


def excite_slow_mode(problem, V0, K0, projection, constants, share):
    r"""The start (V0, K0) moved along the slowest normal mode ``e_0`` so that mode's share of
    dist^2 is at least ``share``: its coordinate becomes ``sign(c_0) max(|c_0|, sqrt(share / (1 -
    share)) ||c_{>0}||)``, the other coordinates unchanged (a start whose share is already that
    large is returned as it is).  Returns (V, K) and the share before."""
    c = normal_coordinates(problem, V0, K0, projection, constants)
    before = slow_mode_share(c)
    target = np.copysign(max(abs(c[0]), np.sqrt(share / (1 - share)) * np.linalg.norm(c[1:])), c[0] or 1.0)
    move = (target - c[0]) * constants.modes[:, 0]
    k, d = V0.shape
    return V0 + move[: k * d].reshape(k, d), K0 + move[k * d:].reshape(d, d), before


def rate_steps(alpha, eta, decades):
    """The least t with (1 - eta alpha)^{2t} <= 10^-decades (the slowest normal mode's share of
    dist^2 falls by 10^decades), at most `STEP_CEILING`."""
    return int(min(np.ceil(decades * np.log(10) / (-2 * np.log1p(-eta * alpha))), STEP_CEILING))


@shared_run(sizes={"quick": {"n": 4000, "steps": 3000, "every": 50, "dist_from": 0},
                   "full": {"n": 4000, "steps": 4000, "every": 20, "dist_from": 0}})
def population_oracle_run(run, *, etas=(1.0,), eta_factor=None, instances=1, precondition="estimated",
                          regularizer="estimated", lam=0.25, track=True, decades=None, slow_share=None):
    """Algorithm 1 with the population gradient oracle on ``instances`` independent draws of the
    ill-conditioned instance (the first the draw without a stream key, the others' streams keyed
    by their number, `draw_stream`), each from its spectral initialization (n samples), one trial
    per instance and step size in ``etas`` (instance-major), all side by side; with
    ``eta_factor``, one trial per instance at eta = eta_factor/mu_max, mu_max the largest normal
    curvature at the projection of its start (`start_modes`).
    ``precondition``: "estimated" (Sigma_hat^{-1}), "true" (Sigma^{-1}) or "none";
    ``regularizer``: the covariance inside R, "estimated" (Sigma_hat) or "true" (Sigma).
    The run lasts the tier's ``steps`` or, with ``decades``, the longer of those and
    `rate_steps` of every instance (alpha = `start_rate` of its start, the smallest eta).  With ``slow_share``, each
    start is moved along the slowest normal mode at its projection until that mode carries at least
    that share of dist^2 (`excite_slow_mode`; the shares before are returned as ``slow_share_before``).
    Returns t, the excess loss L - k sigma^2 (and its log) per step and trial, ``alpha_start``
    per instance and (``track``) dist(theta_t, M) every ``every`` steps from ``dist_from`` on, with
    the local constants at the last projection."""
    problems, starts, alpha_start, mu_start, share_before, steps = [], [], [], [], [], run.sizes["steps"]
    for draw in range(instances):
        key = draw_stream(draw)
        problem = ill_conditioned(run.rng("ill_conditioned", *key))
        V0, K0, Sigma_hat = spectral_initialization(problem, run.sizes["n"], run.rng("spectral_init", *key),
                                                    run.tensor)
        if decades is not None or slow_share is not None or eta_factor is not None:
            projection, start = start_modes(problem, V0, K0, run.rng("start_projection", *key), run.tensor)
            alpha_start.append(start.alpha)
            mu_start.append(start.mu_max)
        if slow_share is not None:
            V0, K0, before = excite_slow_mode(problem, V0, K0, projection, start, slow_share)
            share_before.append(before)
        problems.append(problem)
        starts.append((V0, K0, Sigma_hat))
    if eta_factor is not None:
        etas = tuple(eta_factor / mu for mu in mu_start)
    per_instance = 1 if eta_factor is not None else len(etas)
    if decades is not None:
        steps = max(steps, *(rate_steps(alpha, min(etas), decades) for alpha in alpha_start))
    trial_eta = list(etas) if eta_factor is not None else list(etas) * instances
    covariances = {"estimated": lambda draw: starts[draw][2], "true": lambda draw: problems[draw].Sigma}
    stack = lambda value: run.tensor(np.repeat(np.stack([value(draw) for draw in range(instances)]),
                                               per_instance, axis=0))
    Sigma, W = stack(lambda draw: problems[draw].Sigma), stack(lambda draw: problems[draw].W)
    model = PopulationAttentionRegression(Sigma, W, problems[0].noise, lam, reg_Sigma=stack(covariances[regularizer]))
    plain = PopulationAttentionRegression(Sigma, W, problems[0].noise, 0.0)
    preconditioners = {} if precondition == "none" else \
        {"K": stack(lambda draw: np.linalg.inv(covariances[precondition](draw)))}
    step = Preconditioned(model, trial_eta, preconditioners)
    iterates = {"V": lambda it: it.V, "K": lambda it: it.K} if track else {}
    traj = run_trajectory(step, {"V": stack(lambda draw: starts[draw][0]), "K": stack(lambda draw: starts[draw][1])},
                          steps, {"log_excess": lambda it: plain.log_excess_loss(it.params), **iterates},
                          on_nonfinite="record")
    every = np.arange(run.sizes["dist_from"], steps + 1, run.sizes["every"]) if track else np.arange(0)
    rng = run.rng("projections")
    distances, finals = [], []
    for j in range(len(trial_eta) if track else 0):
        problem = problems[j // per_instance]
        dist, last = tracked_distances(problem, traj["V"][every, j], traj["K"][every, j], rng)
        distances.append(dist)
        finals.append(local_constants(regularized_model(problem, lam, run.tensor), last.V, last.K, problem.Sigma))
    return {"t": traj.t, "excess": np.exp(traj["log_excess"]), "log_excess": traj["log_excess"], "dist_t": every,
            "dist": np.array(distances).T, "constants": finals, "etas": np.array(trial_eta),
            "diverged_at": traj.diverged_at, "problems": problems, "alpha_start": np.array(alpha_start),
            "slow_share_before": np.array(share_before)}


def window_log_contractions(log_values, window, log_floor):
    """log(values[s + window]/values[s]) over consecutive windows of the run's finite prefix
    while both ends exceed ``log_floor``.  A run that leaves the finite numbers before its first
    full window gives one value, its average log-rate over the finite prefix scaled to a window
    (finite, and positive for a run that grows): the decision is then made on what was measured
    before the divergence, not on an infinity."""
    finite = np.isfinite(log_values)
    end = len(log_values) - 1 if finite.all() else int(np.argmin(finite)) - 1
    if end < window:
        return np.array([(log_values[end] - log_values[0]) * window / max(end, 1)])
    return np.array([log_values[s + window] - log_values[s] for s in range(0, end - window + 1, window)
                     if log_values[s] > log_floor and log_values[s + window] > log_floor])


@shared_run(sizes={"quick": {"ns": [250, 1000, 4000, 16000], "instances": 2, "steps": 3000, "random_starts": 0},
                   "full": {"ns": [250, 1000, 4000, 16000, 64000], "instances": 10, "steps": 4000,
                            "random_starts": 8}})
def empirical_regularizer_limit(run, *, regularizers=("estimated",), lam=0.25, eta=1.0, decades=None):
    r"""Algorithm 1 with the population gradient oracle and preconditioner Sigma_hat^{-1}, from the
    spectral initialization of n samples (ill-conditioned instance), ``instances`` training sets
    per n, each run once per regularizer lam R(.; C) in ``regularizers`` (C = Sigma_hat for
    "estimated", Sigma for "true"), all trials side by side, for the tier's ``steps`` or, with
    ``decades``, the longer of those and `rate_steps` of the slowest trial (`start_rate`).
    Returns, per regularizer and per
    trial: n, ||Sigma_hat - Sigma||, the final excess loss L - k sigma^2, R(theta_T; Sigma_hat),
    R(theta_T; Sigma) and dist(theta_T, M) (``random_starts`` Haar starts in the projection),
    and the run length with the smallest alpha_loc at the starts."""
    problem = ill_conditioned(run.rng("ill_conditioned"))
    rng = run.rng("limit_set")
    ns = np.repeat(run.sizes["ns"], run.sizes["instances"])
    inits = [spectral_initialization(problem, n, rng) for n in ns]
    alpha_start, steps = None, run.sizes["steps"]
    if decades is not None:
        start_rng = run.rng("start_projection")
        alpha_start = min(start_rate(problem, V0, K0, start_rng, run.tensor) for V0, K0, _ in inits)
        steps = max(steps, rate_steps(alpha_start, eta, decades))
    V0, K0, Sigma_hat = (torch.as_tensor(np.array(a)) for a in zip(*inits))
    trials = len(ns)
    tile = lambda a, copies: torch.as_tensor(np.broadcast_to(a, (copies, *a.shape)).copy())
    settings = len(regularizers)
    Sigma, W = tile(problem.Sigma, trials * settings), tile(problem.W, trials * settings)
    covariances = {"estimated": Sigma_hat, "true": Sigma[:trials]}
    model = PopulationAttentionRegression(Sigma, W, problem.noise, lam,
                                          reg_Sigma=torch.cat([covariances[r] for r in regularizers]))
    step = Preconditioned(model, eta, {"K": torch.linalg.inv(Sigma_hat).repeat(settings, 1, 1)})
    traj = run_trajectory(step, {"V": V0.repeat(settings, 1, 1), "K": K0.repeat(settings, 1, 1)},
                          steps, {}, checkpoints=[steps], on_nonfinite="record")
    V, K = traj.params["V"], traj.params["K"]
    E = V @ Sigma @ K - W
    excess = ((E @ Sigma) * E).sum((-1, -2)).numpy()
    R_hat = balance_regularizer(V, K, Sigma_hat.repeat(settings, 1, 1)).numpy()
    R_true = balance_regularizer(V, K, Sigma).numpy()
    seeds = rng.integers(2 ** 32)
    dist = np.array([project_to_manifold(v, k_, problem.Sigma, problem.W, np.random.default_rng([seeds, j]),
                                         random_starts=run.sizes["random_starts"]).distance
                     for j, (v, k_) in enumerate(zip(V.numpy(), K.numpy()))])
    deviation = np.linalg.norm(Sigma_hat.numpy() - problem.Sigma, 2, axis=(1, 2))
    part = lambda a, i: a[i * trials:(i + 1) * trials]
    return {r: {"n": ns, "deviation": deviation, "excess": part(excess, i), "R_estimated": part(R_hat, i),
                "R_true": part(R_true, i), "dist": part(dist, i), "diverged_at": part(traj.diverged_at, i)}
            for i, r in enumerate(regularizers)} | {"problem": problem, "steps": steps, "alpha_start": alpha_start}


@shared_run(sizes={"quick": {"rotations": 20}, "full": {"rotations": 100}})
def uniform_constants(run, *, lam=0.25, draw=0):
    r"""(min_R alpha_loc, max_R beta_loc) of L + lam R on the ill-conditioned instance (of
    `instance_draw` ``draw``) over ``rotations`` Haar R (both components of O(d)): the uniform
    one-point constants."""
    problem = ill_conditioned(run.rng("ill_conditioned", *draw_stream(draw)))
    model = regularized_model(problem, lam, run.tensor)
    constants = [local_constants(model, *manifold_point(problem.W, problem.Sigma, R), problem.Sigma)
                 for R in haar_rotations(run.rng("contraction_rotations"), problem.d, run.sizes["rotations"])]
    return min(c.alpha for c in constants), max(c.mu_max for c in constants)


def draw_stream(draw):
    """The extra stream key of instance draw ``draw``: none for draw 0, the run's own instance."""
    return () if draw == 0 else (draw,)


#: the neighbourhood of M in which the contraction is claimed, dist <= CONTRACTION_RADIUS
#: sqrt(sigma_d(W*)) (the radius at which the one-point claims test (3)-(4))
CONTRACTION_RADIUS = 0.8
@shared_run(sizes={"quick": {"n": 4000, "steps": 300, "instances": 4}, "full": {"n": 4000, "steps": 1000, "instances": 4}})
def contraction_run(run, *, eta_factor=None):
    r"""Preconditioned GD with the population oracle, the true-Sigma regularizer (lambda = 1/4)
    and preconditioner diag(I, Sigma^{-1}) on ``instances`` independent draws of the
    ill-conditioned instance (the first the draw without a stream key, `draw_stream`), each from
    its spectral initialization (n samples), batched in one run, at the theorem's step eta =
    alpha/beta^2 of each draw (alpha = min_R alpha_loc, beta = max_R beta_loc over Haar R,
    `uniform_constants`) or, with ``eta_factor``, at eta = eta_factor/beta.  Per draw, Phi_t =
    dist^2(theta_t, M) at every step (warm-started projections) until the first iterate outside
    the neighbourhood dist <= CONTRACTION_RADIUS sqrt(sigma_d(W*)) (included: a start outside it
    gives Phi_0 alone) or the first non-finite one (excluded); ``phi`` is the list of them."""
    problems, starts, constants = [], [], []
    for draw in range(run.sizes["instances"]):
        problems.append(ill_conditioned(run.rng("ill_conditioned", *draw_stream(draw))))
        starts.append(spectral_initialization(problems[-1], run.sizes["n"],
                                              run.rng("spectral_init", *draw_stream(draw)), run.tensor)[:2])
        constants.append(run.use(uniform_constants, lam=0.25, draw=draw))
    alpha, beta = np.array(constants).T
    eta = alpha / beta ** 2 if eta_factor is None else eta_factor / beta
    stack = lambda values: run.tensor(np.stack(values))
    model = PopulationAttentionRegression(stack([p.Sigma for p in problems]), stack([p.W for p in problems]),
                                          problems[0].noise, 0.25)
    step = Preconditioned(model, list(eta), {"K": stack([np.linalg.inv(p.Sigma) for p in problems])})
    traj = run_trajectory(step, {"V": stack([V0 for V0, _ in starts]), "K": stack([K0 for _, K0 in starts])},
                          run.sizes["steps"], {"V": lambda it: it.V, "K": lambda it: it.K}, on_nonfinite="record")
    phi = []
    for i, problem in enumerate(problems):
        finite = len(traj.t) if traj.diverged_at[i] < 0 else int(traj.diverged_at[i])
        distances, _ = tracked_distances(problem, traj["V"][:finite, i], traj["K"][:finite, i],
                                         run.rng("contraction_projections", *draw_stream(i)),
                                         stop_above=CONTRACTION_RADIUS * np.sqrt(problem.singular_values()[-1]))
        phi.append(distances ** 2)
    return {"t": traj.t, "phi": phi, "alpha": alpha, "beta": beta, "eta": eta, "problems": problems}


# --- the statistical floor of Algorithm 1 (Theorem 2, statistical term)

#: eta sigma_1(W*) of the floor runs: eta = 1 at the recipe's scale sigma_1(W*) = 0.2
FLOOR_ETA = 0.2


def fresh_batch_schedule(problems, rngs, Sigma_hat, n, batches, lam, tensor):
    """``schedule(t)`` for `Preconditioned`: at every step a fresh draw of ``batches`` training
    sets of n rows N(0, Sigma) per trial, the trials in blocks of equal size, one block per
    problem of ``problems`` drawn from its generator of ``rngs`` (Sigma_hat (trials, d, d)),
    responses y = W* x (the noise enters grad Lhat_n linearly with conditional mean 0: same
    expected gradient), as an `EmpiricalAttentionRegression` with the regularizer
    lam R(.; Sigma_hat)."""
    per_problem = len(Sigma_hat) // len(problems)
    W = tensor(np.repeat(np.stack([problem.W for problem in problems]), per_problem, axis=0))

    def schedule(t):
        X = tensor(np.concatenate([gaussian_rows(rng, problem.Sigma, (per_problem, batches, n))
                                   for problem, rng in zip(problems, rngs)]))
        return EmpiricalAttentionRegression(X, X @ W[:, None].transpose(-1, -2), lam, Sigma_hat)

    return schedule


@shared_run(sizes={"quick": {"ns": [64, 128, 256], "batches": 4, "steps": 400, "instances": 8, "training_sets": 1},
                   "full": {"ns": [32, 64, 128, 256], "batches": 64, "steps": 800, "instances": 8,
                            "training_sets": 1}})
def statistical_floor_run(run, *, lam=0.25, oracle_n=None):
    r"""Algorithm 1 with the expected-gradient oracle on ``instances`` independent draws of the
    well-conditioned recipe (the first the draw without a stream key, the others' streams --
    problem, training sets, the oracle's batches -- keyed by their number), for every n of
    ``ns`` and ``training_sets`` training sets an instance, all side by side: spectral
    initialization, regularizer lam R(.; Sigma_hat) and preconditioner Sigma_hat^{-1} from the n
    training samples, eta = FLOOR_ETA/sigma_1(W*).  The oracle E grad Lhat_n is estimated at
    every step by ``batches`` fresh training sets of size n (`fresh_batch_schedule`), and the
    floor is the excess population loss L - k sigma^2 at the average of the iterates over the
    second half of the run (Polyak-Ruppert: for the same compute, fresh batches with averaging
    are sqrt(T/2) times more accurate than one pool of batches reused at every step, whose noise
    enters the floor at O(1/(M n)) against a bias term O(1/n^2)).  ``oracle_n`` (a control): the
    oracle's fresh training sets have this fixed size at every n instead of n, so its bias no
    longer shrinks with n (the regularizer, preconditioner and start still use the n samples).
    Returns n, e_0 and the floor, each (len(ns), instances, training_sets), diverged_at of the
    same shape, eta per instance and the problems."""
    s = run.sizes
    keys = [()] + [(i,) for i in range(1, s["instances"])]
    problems = [well_conditioned(run.rng("well_conditioned", *key)) for key in keys]
    sets = s["training_sets"]
    per_trial = lambda values: run.tensor(np.repeat(np.stack(values), sets, axis=0))
    eta = np.array([FLOOR_ETA / problem.singular_values()[0] for problem in problems])
    population = PopulationAttentionRegression(per_trial([problem.Sigma for problem in problems]),
                                               per_trial([problem.W for problem in problems]), NOISE, 0.0)
    optimum = per_trial([problem.optimum for problem in problems])
    averaged = list(range(s["steps"] // 2, s["steps"] + 1))
    e0, floors, diverged = [], [], []
    for n in s["ns"]:
        inits = [spectral_initialization(problem, n, run.rng("floor_training", *key, n, j), run.tensor)
                 for key, problem in zip(keys, problems) for j in range(sets)]
        V0, K0, Sigma_hat = (run.tensor(np.stack(parts)) for parts in zip(*inits))
        schedule = fresh_batch_schedule(problems, [run.rng("floor_batches", *key, n) for key in keys], Sigma_hat,
                                        oracle_n or n, s["batches"], lam, run.tensor)
        step = Preconditioned(population, per_trial(eta), {"K": torch.linalg.inv(Sigma_hat)}, schedule=schedule)
        traj = run_trajectory(step, {"V": V0, "K": K0}, s["steps"], {"V": lambda it: it.V, "K": lambda it: it.K},
                              checkpoints=[0] + averaged, on_nonfinite="record")
        V, K = (run.tensor(traj[b][1:].mean(0)) for b in ("V", "K"))
        e0.append((population.loss({"V": V0, "K": K0}) - optimum).cpu().numpy())
        floors.append((population.loss({"V": V, "K": K}) - optimum).cpu().numpy())
        diverged.append(traj.diverged_at)
    shape = (len(s["ns"]), len(problems), sets)
    return {"n": np.array(s["ns"]), "e0": np.reshape(e0, shape), "floor": np.reshape(floors, shape),
            "diverged_at": np.reshape(diverged, shape), "eta": eta, "problems": problems}
