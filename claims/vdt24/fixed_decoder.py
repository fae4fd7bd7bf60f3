r"""The fixed-decoder set-up of vdt24 (Section 3 and Appendix A): the shared runs and the
quantities the fixed-decoder claims (test_saturation, test_rates, test_landscape) are about.

Only W is trained; u is the decoder of the data set.  The runs are named shared runs
(`theorycheck.shared_run`), drawn from the paper-wide streams of `problems`, so that a claim
and the claims beside it that look at the same trajectory share it.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from theorycheck import data as datasets
from theorycheck import shared_run
from theorycheck.optim import GD, NGD, FirstOrder, Polyak, displacement, run_trajectory

from .problems import (
    E1_SIZES,
    NGD_ETA,
    TRIALS,
    counterexample_near_local_direction,
    direction_metrics,
    e1,
    make_problem,
    paper_rng,
    problem,
    require_assumption2,
)


GD_ETA = 1.0
SPARSE_EVERY = 10
#: the shared GD run: steps, every step recorded up to ``dense`` (Lemma 5), checkpoints of Theorem 6
GD_RUN = {"quick": dict(steps=3000, dense=300, checkpoints=[100, 300, 1000, 3000]),
          "full": dict(steps=30000, dense=2000, checkpoints=[100, 300, 1000, 3000, 10000, 30000])}
POLYAK_RUN = {"quick": dict(steps=300), "full": dict(steps=2000)}


def unit(W):
    """W/||W||_F for every matrix of a (..., d, d) stack."""
    return W / W.flatten(-2).norm(dim=-1)[..., None, None]


def saturation_metrics(model, opt, W_ref):
    """||W_t||, al(W_t, W_ref), the displacement ||W_{t+1} - W_t||, and per sample (K,n)
    s_opt, log(1 - s_opt) and the min logit gap (the model's own metrics: measured in the
    representation the run steps in)."""
    own = model.metrics(opt=opt)
    return dict(direction_metrics(W_ref), displacement=displacement(model), s_opt=own["s_opt"],
                log_one_minus_s_opt=own["log_one_minus_s_opt"], min_gap=own["logit_gap"])


def dense_then_sparse(steps: int, dense: int, *must) -> np.ndarray:
    """Every step up to ``dense``, every SPARSE_EVERY-th after, and the times in ``must``."""
    return np.union1d(np.r_[np.arange(dense + 1), np.arange(dense, steps + 1, SPARSE_EVERY)],
                      np.concatenate([np.asarray(m, dtype=int) for m in must] or [[]])).astype(int)


@shared_run(sizes=GD_RUN)
def e1_gd(run):
    """Constant-step GD (eta = 1) on Example 1 from two starts, batched as 2K trials.

    Returns (problem, trajectory, {start label: trial slice}).  Starts: the small random
    init W_0 and -0.05 Wbar_mm (the worst direction, same small scale).  Shared by Theorem 6,
    Lemma 5 (first ``dense`` steps of the small init) and the GD controls of Lemmas 1, 7."""
    prob, sizes = run.use(e1), run.sizes
    starts = {"small random": prob.W0, "opposite of W_mm": -0.05 * unit(prob.W_mm)}
    S = len(starts)
    model = prob.model.tiled(S)
    traj = run_trajectory(GD(model, GD_ETA), {"W": torch.cat(list(starts.values()))}, sizes["steps"],
                          saturation_metrics(model, prob.opt.repeat(S, 1), prob.W_mm.repeat(S, 1, 1)),
                          checkpoints=dense_then_sparse(sizes["steps"], sizes["dense"],
                                                        sizes["checkpoints"]))
    return prob, traj, {label: slice(s * TRIALS, (s + 1) * TRIALS) for s, label in enumerate(starts)}


@shared_run(sizes=POLYAK_RUN)
def e1_polyak(run, *, eta_max: float | None = None):
    """Polyak (L_* of the fixed decoder; capped at ``eta_max``, uncapped when None -- a config
    value must be finite to be recorded) on Example 1 from W_0, every step recorded (Theorem 7
    and Lemma 5).  Returns (problem, trajectory)."""
    prob = run.use(e1)
    return prob, run_trajectory(Polyak(prob.model, eta_max=math.inf if eta_max is None else eta_max), {"W": prob.W0},
                                run.sizes["steps"], saturation_metrics(prob.model, prob.opt, prob.W_mm))


@shared_run
def counterexample_ngd(run, *, steps: int):
    """NGD (eta = 0.1) on CE from Wbar_alpha + small noise, every step recorded."""
    ce = run.use(counterexample_near_local_direction)
    return run_trajectory(NGD(ce.model, NGD_ETA), {"W": ce.W0}, steps,
                          saturation_metrics(ce.model, ce.opt, ce.W_mm))


@shared_run
def e1_ngd_step_sizes(run, *, etas: list, steps: int):
    """NGD on Example 1 with each step size of ``etas`` (one batch, trials [eK, (e+1)K) with
    etas[e]), every step recorded."""
    prob = run.use(e1)
    E = len(etas)
    model = prob.model.tiled(E)
    step = NGD(model, run.tensor(np.repeat(etas, TRIALS)))
    return run_trajectory(step, {"W": prob.W0.repeat(E, 1, 1)}, steps,
                          saturation_metrics(model, prob.opt.repeat(E, 1), prob.W_mm.repeat(E, 1, 1)))


@shared_run
def counterexample_gd(run, *, checkpoints: list):
    """GD (eta = 1) on CE from Wbar_alpha + small noise, every SPARSE_EVERY-th step and at
    ``checkpoints`` (up to the last of them)."""
    ce = run.use(counterexample_near_local_direction)
    return run_trajectory(GD(ce.model, GD_ETA), {"W": ce.W0}, checkpoints[-1], direction_metrics(ce.W_mm),
                          checkpoints=dense_then_sparse(checkpoints[-1], 0, checkpoints))


@shared_run
def direction_run(run, *, case: str, rule: str, eta: float, W0, W_ref, steps: int):
    r"""``rule`` ("ngd" or "gd") with step ``eta`` on Example 1 (case "e1") or CE (case
    "counterexample") from the starts ``W0`` (S*K, d, d) -- all starts one batch, trials
    [sK, (s+1)K) from start s -- every step recorded: ||W_t|| and al(W_t, W_ref)."""
    prob = run.use(counterexample_near_local_direction if case == "counterexample" else e1)
    S = W0.shape[0] // TRIALS
    step = FirstOrder(prob.model.tiled(S), rule=rule, eta=eta)
    return run_trajectory(step, {"W": W0}, steps, direction_metrics(W_ref.repeat(S, 1, 1)))


FIXED_DECODER_FAMILIES = ("example1", "example1_signal", "antipodal")


@shared_run
def fixed_decoder_problem(run, *, families: list):
    """The shared data families at the tier's E1 sizes (TRIALS trials each) as one `Problem`."""
    sizes = E1_SIZES[run.tier]
    data = datasets.concatenate([run.use(problem, family=family, sizes=sizes).data for family in families])
    return make_problem(run, data, init_stream="init")


def first_trials(prob):
    """(index, label) of the first trial of every data set concatenated in ``prob.data``."""
    names = prob.data.name.split("+")
    for j, name in enumerate(names):
        yield j * (prob.data.K // len(names)), f"{name.split('(')[0]}, first trial"


def gaussian_stand_in(runtime, prob) -> torch.Tensor:
    """A Gaussian matrix per trial that negative controls put in the place of W_mm."""
    G = paper_rng(runtime, "gaussian stand-in for W_mm", prob.data.name).standard_normal(tuple(prob.W_mm.shape))
    return torch.as_tensor(G, dtype=prob.W_mm.dtype, device=prob.W_mm.device)


def repeated(P: int, *tensors):
    """Each tensor with every trial repeated P times in a row (trial k -> trials kP .. kP+P-1)."""
    return tuple(t.repeat_interleave(P, 0) for t in tensors)


def gaussian_points(rng, scales, like: torch.Tensor) -> torch.Tensor:
    r"""W = (scale/sqrt d) G, G standard normal d x d (d = like.shape[-1]), one W per scale."""
    d = like.shape[-1]
    scales = np.asarray(scales, dtype=float)[:, None, None]
    return torch.as_tensor(scales / math.sqrt(d) * rng.standard_normal((len(scales), d, d)),
                           dtype=like.dtype, device=like.device)


def identity_test_points(rng, prob, scales, rhos) -> torch.Tensor:
    r"""Per trial: random W = (scale/sqrt d) G for each scale, then W = rho W_mm + G/sqrt d for
    each rho; shape (K * (len(scales) + len(rhos)), d, d), the points of trial k in a row."""
    K, d = prob.W_mm.shape[:2]
    random = gaussian_points(rng, np.tile(scales, K), prob.W_mm).reshape(K, len(scales), d, d)
    rho = prob.W_mm.new_tensor(rhos)[None, :, None, None]
    noise = gaussian_points(rng, np.ones(K * len(rhos)), prob.W_mm).reshape(K, len(rhos), d, d)
    return torch.cat([random, rho * prob.W_mm[:, None] + noise], dim=1).flatten(0, 1)


def initial_logit_radius(X, sigma0, delta):
    r"""eps(delta) = sigma0 max_{i,t} ||x_{i,t}|| max_i ||x_{i,1}|| sqrt(2 log(2nT/delta)), (N,)."""
    norms = X.norm(dim=-1)
    n, T = X.shape[1:3]
    return sigma0 * norms.flatten(1).amax(1) * norms[:, :, 0].amax(1) * math.sqrt(2 * math.log(2 * n * T / delta))


def step_direction_metrics(references: torch.Tensor):
    r"""Metrics of NGD's step D_t = W_{t+1} - W_t = -eta grad L/||grad L||.

    Because NGD moves exactly along the normalized negative gradient, its step gives that
    direction without a second gradient evaluation.  ``W_norm``: ||W_t||_F; ``cosines``
    (K, 1+J): <Dhat_t, W_t/||W_t||>, then <Dhat_t, Rbar_j> for the reference matrices
    ``references`` (K,J,d,d) (each normalized here).  Measured in the run's coordinates.
    """
    refs = [references[:, j].contiguous() for j in range(references.shape[1])]

    def cosines(it):
        geometry, W, D = it.geometry("W"), it.coordinates["W"], it.step_coordinates["W"]
        self_cosine = geometry.inner(W, D) / (geometry.norm(W) * geometry.norm(D))
        return torch.stack([self_cosine, *(it.alignment("W", R, of="step") for R in refs)], dim=1)

    return {"W_norm": lambda it: it.norm("W"), "cosines": cosines}


@shared_run
def landscape_ngd_run(run, *, case: str, families: list, steps: int):
    r"""NGD (eta = 0.1) from the small W_0 on the stacked families (case "assumptions") or from
    Wbar_alpha on CE (case "counterexample"), every step recorded with
    `step_direction_metrics` for the references (W_mm, `gaussian_stand_in`).  Shared by
    Lemmas 2 and 6.  Returns (problem, trajectory)."""
    prob = (run.use(counterexample_near_local_direction) if case == "counterexample"
            else run.use(fixed_decoder_problem, families=families))
    references = torch.stack([prob.W_mm, gaussian_stand_in(run.runtime, prob)], dim=1)
    return prob, run_trajectory(NGD(prob.model, NGD_ETA), {"W": prob.W0}, steps,
                                step_direction_metrics(references))


LANDSCAPE_RUN = {"quick": dict(families=list(FIXED_DECODER_FAMILIES), steps=800),
                 "full": dict(families=["example1"], steps=2000)}


def landscape_run_for(tc):
    """The shared NGD run of the claim (CE for the "counterexample" control), with its
    instances' Assumption 2 decided as a precondition: all must meet it (the counterexample
    control violates it, as a hypothesis control must)."""
    case = "counterexample" if tc.control == "counterexample" else "assumptions"
    prob, run = tc.use(landscape_ngd_run, case=case, families=list(tc.sizes["families"]),
                       steps=tc.sizes["steps"])
    require_assumption2(tc, prob.data)
    return prob, run


def centring_statistic(X: np.ndarray) -> np.ndarray:
    r"""nT ||mean_{i,t} x_{i,t}||^2 / mean_{i,t} ||x_{i,t}||^2 per trial: about 1 for centred
    i.i.d. isotropic tokens (chi^2_d / d), about nT ||mu||^2 / (1 + ||mu||^2) with a common
    component mu."""
    tokens = X.reshape(X.shape[0], -1, X.shape[-1])
    mean = tokens.mean(axis=1)
    return tokens.shape[1] * (mean**2).sum(-1) / (tokens**2).sum(-1).mean(-1)
