r"""gsb26's experiments (Appendix A, Figures 1-2): Algorithm 1 and its ablations with minibatches,
all arms and step sizes in one batch (`minibatch_run`), and the medians the claims of
`test_experiments.py` read.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Appendix A.
"""
from __future__ import annotations

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.errors import DeclarationError
from theorycheck.models.attention_regression import (
    EmpiricalAttentionRegression,
    PopulationAttentionRegression,
    balanced_point,
    ols_estimate,
    sample_covariance,
)
from theorycheck.optim import Preconditioned, run_trajectory

from .setup import WellConditioned, decide_recipe, settled_values, training_set

#: Algorithm 1 and its ablations as (lambda, preconditioned): Algorithm 1 = regularizer with
#: Sigma_hat and the Sigma_hat^{-1} preconditioner; SGD = neither (Section 1.7 of the spec)
MINIBATCH_METHODS = {"algorithm1": (0.25, True), "sgd": (0.0, False),
                     "preconditioned_unregularized": (0.0, True)}


#: the initializations of `minibatch_run`
INITIALIZATIONS = ("spectral", "spectral_few", "random")
#: "spectral_few" estimates W* and Sigma from d + FEW_SAMPLES_OVER_D samples: OLS's expected
#: excess sigma^2 k d/(n - d - 1) is then k d sigma^2 = d L*, far above the minibatch floor
FEW_SAMPLES_OVER_D = 2


def minibatch_indices(rng, n, batch, steps):
    """(steps, batch) row indices: at every step ``batch`` of the n training samples drawn
    uniformly without replacement (independently across steps)."""
    return np.stack([rng.permutation(n)[:batch] for _ in range(steps)])


@shared_run(sizes={"quick": {"d": 3, "k": 4, "n": 1000, "batch": 100, "steps": 400, "batch_orders": 2,
                             "etas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.7]},
                   "full": {"d": 5, "k": 8, "n": 5000, "batch": 500, "steps": 2000, "batch_orders": 3,
                            "etas": [0.03, 0.1, 0.15, 0.2, 0.3]}})
def minibatch_run(run, *, arms, instances=1, etas=None, steps=None):
    r"""The experiments of Appendix A: the ``arms``, pairs (method of `MINIBATCH_METHODS`,
    initialization "spectral" -- the balanced point of (W_hat, Sigma_hat) --, "spectral_few" --
    the same from the first d + 2 training samples alone (`FEW_SAMPLES_OVER_D`) -- or "random"
    -- entries of V, K i.i.d. N(0, 1)), with minibatches of the n training samples on
    ``instances`` draws of the well-conditioned instance (d x d Sigma, k x d W*; instance 0 is
    the one the figures use), all in one batch: one trial per (arm, instance, step size,
    minibatch seed), each method's lambda and preconditioner (Sigma_hat^{-1}, or the identity)
    per trial; ``etas`` defaults to the tier's grid, ``steps`` to the tier's T.  Every arm with the same instance and seed
    sees the same training set, random point and minibatch sequence.  The population loss
    L(theta_t) (closed form) is recorded at every step; divergence is recorded, not raised.
    Returns t, ratio = L/L* (steps + 1, trials), diverged_at, arm, eta, seed and instance per
    trial, problems (and problem = problems[0])."""
    s = dict(run.sizes, steps=run.sizes["steps"] if steps is None else steps)
    stream = lambda name, i: run.rng(name) if i == 0 else run.rng(name, i)  # noqa: E731
    recipe = experiment_recipe(s)
    problems = [recipe(stream("experiment_instance", i)) for i in range(instances)]
    if len({p.noise for p in problems}) != 1:
        raise DeclarationError("minibatch_run: the instances must share the noise level")
    unknown = [method for method, _ in arms if method not in MINIBATCH_METHODS]
    if unknown or any(init not in INITIALIZATIONS for _, init in arms):
        raise DeclarationError(f"minibatch_run: arms must be (method in {sorted(MINIBATCH_METHODS)}, "
                               f"initialization in {INITIALIZATIONS}), got {list(arms)}")
    inits = {init for _, init in arms}
    Xs, Ys, starts, Sigma_hats = [], [], {init: [] for init in inits}, []
    for i, problem in enumerate(problems):
        rng = stream("training_set", i)
        X, Y = training_set(problem, s["n"], rng)
        Xt, Yt = run.tensor(X), run.tensor(Y)
        Sigma_hat = sample_covariance(Xt)
        if "spectral" in inits:
            starts["spectral"].append(balanced_point(ols_estimate(Xt, Yt), Sigma_hat))
        if "spectral_few" in inits:
            few = problem.d + FEW_SAMPLES_OVER_D
            starts["spectral_few"].append(balanced_point(ols_estimate(Xt[:few], Yt[:few]),
                                                         sample_covariance(Xt[:few])))
        if "random" in inits:
            init_rng = stream("random_init", i)
            starts["random"].append(tuple(run.tensor(init_rng.standard_normal(shape))
                                          for shape in [(problem.k, problem.d), (problem.d, problem.d)]))
        Xs.append(Xt), Ys.append(Yt), Sigma_hats.append(Sigma_hat)
    grid = s["etas"] if etas is None else list(etas)
    arm, instance, etas_, seeds = (a.ravel() for a in np.meshgrid(np.arange(len(arms)), np.arange(instances), grid,
                                                                  np.arange(s["batch_orders"]), indexing="ij"))
    trials = len(etas_)
    batches = np.stack([minibatch_indices(run.rng("minibatches", seed), s["n"], s["batch"], s["steps"] + 1)
                        for seed in range(s["batch_orders"])], axis=1)[:, seeds]       # (steps + 1, trials, b)
    which = torch.as_tensor(instance, device=Xs[0].device)
    X_rows, Y_rows = torch.cat(Xs), torch.cat(Ys)                             # (instances n, .)
    # the rows of every trial's minibatch in X_rows, Y_rows: (steps + 1, trials, b)
    batches = torch.as_tensor(batches, device=X_rows.device) + which[:, None] * s["n"]
    lam = run.tensor(np.array([MINIBATCH_METHODS[arms[a][0]][0] for a in arm]))
    preconditioned = torch.as_tensor([MINIBATCH_METHODS[arms[a][0]][1] for a in arm], device=X_rows.device)
    Sigma_hat = torch.stack(Sigma_hats)[which]
    identity = torch.eye(Sigma_hat.shape[-1], dtype=Sigma_hat.dtype, device=Sigma_hat.device).expand_as(Sigma_hat)
    population = PopulationAttentionRegression(run.tensor(np.stack([p.Sigma for p in problems]))[which],
                                               run.tensor(np.stack([p.W for p in problems]))[which],
                                               problems[0].noise, 0.0)

    def minibatch(t):
        rows = batches[t].reshape(-1)
        return EmpiricalAttentionRegression(X_rows[rows].reshape(trials, 1, s["batch"], -1),
                                            Y_rows[rows].reshape(trials, 1, s["batch"], -1), lam, Sigma_hat)

    preconditioner = torch.where(preconditioned[:, None, None], torch.linalg.inv(Sigma_hat), identity)
    step = Preconditioned(population, run.tensor(etas_), {"K": preconditioner}, schedule=minibatch)
    start = {name: torch.stack([starts[arms[a][1]][i][b] for a, i in zip(arm, instance)])
             for b, name in enumerate(("V", "K"))}
    traj = run_trajectory(step, start, s["steps"], {"loss": lambda it: population.loss(it.params)},
                          on_nonfinite="record")
    with np.errstate(over="ignore"):      # a diverging trial's L/L* (L* < 1) may overflow to inf: recorded
        ratio = traj["loss"] / problems[0].optimum
    return {"t": traj.t, "ratio": ratio, "diverged_at": traj.diverged_at,
            "arm": arm, "eta": etas_, "seed": seeds, "instance": instance, "problems": problems,
            "problem": problems[0]}



def experiment_recipe(sizes):
    """The well-conditioned recipe at the experiments' d and k (``sizes``: `minibatch_run`'s)."""
    return WellConditioned(d=sizes["d"], k=sizes["k"])


def decide_experiment_recipe(tc):
    """A1-A3 of the experiments' recipe at the tier's d and k, decided before any run."""
    decide_recipe(tc, experiment_recipe(minibatch_run.sizes_of(tc.tier)))


def arm_runs(tc, arms, **config):
    """One `minibatch_run` per arm (same ``config`` otherwise): independent cached pieces, which
    a scheduler can compute in parallel and whose per-step temporaries are an arm's, not the
    batch's.  The arms still see the same training sets, random points and minibatches: those
    streams depend on the instance and the minibatch seed only."""
    return [tc.use(minibatch_run, arms=(arm,), **config) for arm in arms]


def first_instances(run, count):
    """`minibatch_run` ``run`` restricted to its first ``count`` draws of the recipe: a run on
    more draws holds the trials of a run on fewer (a draw's instance, training set, random
    point and minibatches depend on its index alone), so a claim can read a larger shared run
    instead of recomputing its own."""
    keep = run["instance"] < count
    return dict(run, ratio=run["ratio"][:, keep], diverged_at=run["diverged_at"][keep], arm=run["arm"][keep],
                eta=run["eta"][keep], seed=run["seed"][keep], instance=run["instance"][keep],
                problems=run["problems"][:count])


def medians_per_instance(run, values, eta):
    """Median over the minibatch seeds of ``values`` (..., trials) at ``eta``, per instance
    (instances, ...)."""
    return np.stack([np.median(values[..., (run["instance"] == i) & np.isclose(run["eta"], eta)], axis=-1)
                     for i in range(len(run["problems"]))])


def settled_ratio(run):
    """L_T/L* per trial, a diverged trial counting with its largest finite L_t/L*."""
    return settled_values(run["ratio"], run["diverged_at"])
