r"""vdt24's Lemma 13 batches (Section 4, Appendix B): the invariants of Eq. (13) on many fresh DM
instances (`invariant_batch`, the claim `lem13.joint_invariants` and the success map of
`test_maps.py`), the orthogonality of those instances, the first-step base case of the
induction (`first_step_base_case`) and the success rate against d/n.

The variants of Eq. (13) and the joint runs are in `joint`.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck import data as datasets
from theorycheck.models import Forward, TokenSelection, score_coordinates
from theorycheck.optim import BlockNGD, run_trajectory
from theorycheck.tolerance import tolerance

from .joint import EQ13, JOINT_INSTANCES, Variant, schedule, scores_and_logits
from .problems import JOINT_P
from .setup import first_step_widens_every_gap, gaussian_dm


def overparameterized_dimension(n: int, rho: float = EQ13.rho, delta: float = 1.0 - JOINT_P) -> int:
    r"""Condition 1's "d large enough against n" as the base case of Lemma 13's induction needs
    it: d = ceil(2 (1 + rho^2)^2 / (rho^2 - 1)^2 n ln(n / delta)), delta = 1 - JOINT_P.

    After the first step from zero, sample i's score gap has mean rho^2 - 1 and spread
    s = sqrt(n/d) (1 + rho^2) (`setup.base_case_probability_gaussian`); at this d the mean is
    sqrt(2 ln(n/delta)) spreads, the Gaussian tail exp(-x^2/2) of each gap is at most delta/n,
    and a union bound over the n gaps leaves every gap positive with probability >= 1 - delta
    (= JOINT_P) in that approximation.  rho = 2: about 5.56 n ln(n/0.15) (177 at n = 8, 954 at
    n = 32, 2155 at n = 64)."""
    return math.ceil(2 * (1 + rho ** 2) ** 2 / (rho ** 2 - 1) ** 2 * n * math.log(n / delta))


LEM13_N = {"quick": 8, "full": 32}
"""The samples per instance of Lemma 13's batches: DM-S's n in the quick tier; n = 32 in the
full tier (DM-L's n = 64 would need d = 2155 under `overparameterized_dimension`, 4.4 times the
joint batch's memory at d = 1024)."""

LEM13_SIZES = {
    tier: dict(n=n, d=overparameterized_dimension(n), instances=JOINT_INSTANCES, steps=steps,
               small_step_instances=JOINT_INSTANCES, small_step_steps=steps // 2, d_per_n_grid=[4, 8, 16])
    for (tier, n), steps in zip(LEM13_N.items(), (300, 1000))
}
"""Lemma 13's batches: ``instances`` fresh DM instances with ``n`` samples in dimension ``d``
(`overparameterized_dimension`) and ``steps`` iterations of Eq. (13) at eta = 1 (also at the
d/n of ``d_per_n_grid``, recorded), ``small_step_*`` at eta = 0.1, which never leaves the
transient within a feasible horizon (so only its plateau-free invariants matter and a shorter
run suffices)."""


PLATEAU_NATURAL_TIME = 10.0
"""The plateau of (i) is checked on runs whose natural time sum_{s<t} eta_s at mid-run is at
least this (past the transient: the eta = 1 run passes it at t = 75, the horizon's middle is
t = 150)."""


def lemma13_invariants(gamma, z, opt, variant: Variant) -> dict:
    r"""Lemma 13's invariants per instance from the scores ``gamma`` and logits ``z`` (steps+1, K, n, 2):
    {name: (value, holds)} with value and holds (K,).  See `test_joint_invariants`."""
    is_opt = np.arange(gamma.shape[-1]) == opt[..., None]
    log_s = score_coordinates.log_softmax(z)
    gbar = score_coordinates.margins(gamma, log_s, is_opt)
    attention = Forward(torch.as_tensor(gamma), torch.as_tensor(log_s), torch.as_tensor(gbar))
    designated = torch.tensor(opt).expand(gamma.shape[:-1])
    s_opt = attention.s_opt(designated).numpy()
    log_rest = attention.log_one_minus_s_opt(designated).numpy()
    ratio = np.exp(gbar.max(axis=-1) - gbar.min(axis=-1))  # R_t, (steps+1, K)
    half = (gamma.shape[0] - 1) // 2
    drift = ratio[half:].max(axis=0) / ratio[:half + 1].max(axis=0)
    past_transient = schedule(variant, half).sum() >= PLATEAU_NATURAL_TIME
    gap = datasets.score_gaps(gamma, designated.numpy())
    gap_step, s_step = np.diff(gap, axis=0).min(axis=(0, 2)), np.diff(s_opt, axis=0).min(axis=(0, 2))
    rest_step = np.diff(log_rest, axis=0).max(axis=(0, 2))
    roundoff = tolerance(gamma.dtype, "accumulated")  # scores accumulated over the steps
    return {
        "(i) max_t R_t <= 20": (ratio.max(axis=0), ratio.max(axis=0) <= 20.0),
        "(i) plateau: max R over 2nd half / 1st half <= 1.05": (drift, (drift <= 1.05) | (not past_transient)),
        "(ii) min_{t>=1} gap > 0": (gap[1:].min(axis=(0, 2)), gap[1:].min(axis=(0, 2)) > 0),
        "(ii) min gap increment >= -round-off": (gap_step, gap_step >= -roundoff),
        "(iii) min_t s_opt >= 1/2": (s_opt.min(axis=(0, 2)), s_opt.min(axis=(0, 2)) >= 0.5 - roundoff),
        "(iii) min s_opt increment >= -round-off": (s_step, s_step >= -roundoff),
        "(iii) max increment of log(1 - s_opt) <= 1e-9": (rest_step, rest_step <= 1e-9),
    }


def lem13_instances(run, rho: float, d: int, instances: int):
    """The ``instances`` DM instances of Lemma 13's batches in dimension d (n of the tier)."""
    return gaussian_dm(run.rng("lem13 instances", rho, d), instances, n=run.sizes["n"], d=d, rho=rho)


@shared_run(sizes=LEM13_SIZES)
def instance_orthogonality(run, *, rho: float, d: int, instances: int) -> np.ndarray:
    """Assumption 1's orthogonality ratio rho_perp (`datasets.orthogonality_ratio`) of each
    instance of `invariant_batch` with the same (rho, d, instances), shape (instances,)."""
    return datasets.orthogonality_ratio(lem13_instances(run, rho, d, instances).X)


BASE_CASE_CHUNK = 20
"""Instances drawn at a time by `first_step_base_case` (at n = 256, d = 11357 one instance is
46 MB of float64 tokens)."""


@shared_run(sizes={"quick": {}, "full": {}})
def first_step_base_case(run, *, rho: float, n: int, d: int, instances: int) -> np.ndarray:
    """The base case of Lemma 13's induction on ``instances`` fresh DM instances with n samples
    in dimension d: whether the first u step from u_0 = W_0 = 0 widens every sample's score gap
    (`first_step_score_gaps` > 0), shape (instances,).  One seed per instance, drawn
    `BASE_CASE_CHUNK` instances at a time (the outcome does not depend on the chunk)."""
    seeds = run.rng("base case instances", rho, n, d).integers(2 ** 63, size=instances)
    widened = []
    for part in np.array_split(seeds, math.ceil(instances / BASE_CASE_CHUNK)):
        data = gaussian_dm(part, len(part), n=n, d=d, rho=rho)
        widened.append(first_step_widens_every_gap(data))
    return np.concatenate(widened)


@shared_run(sizes=LEM13_SIZES)
def invariant_batch(run, *, rho: float, eta: float, d: int, instances: int, steps: int):
    """Lemma 13's invariants (`lemma13_invariants`) on ``instances`` fresh DM instances (n of the
    tier, dimension d) along ``steps`` iterations of Eq. (13) with step eta from u_0 = W_0 = 0;
    returns ({name: (value, holds)}, first-step gaps all positive (K,))."""
    data = lem13_instances(run, rho, d, instances)
    K = instances
    tensors = data.to_torch(run.runtime.device, run.runtime.torch_dtype)
    X, y = tensors.X, tensors.y
    variant = Variant(f"rho={rho:g}, eta={eta:g}", rho, eta)
    metrics = scores_and_logits()
    zero = {"u": X.new_zeros((K, d)), "W": X.new_zeros((K, d, d))}
    step = BlockNGD(TokenSelection(X, y), eta, alpha=variant.alpha)
    traj = run_trajectory(step, zero, steps, metrics)
    widened = first_step_widens_every_gap(data)
    return lemma13_invariants(traj["gamma"], traj["z"], data.opt, variant), widened


def lemma13_batch(tc, variant: Variant, d: int | None = None, instances: int | None = None):
    """`invariant_batch` for ``variant`` with the tier's counts for its step size, in dimension
    ``d`` (default the tier's, `overparameterized_dimension`)."""
    s = tc.sizes
    prefix = "" if variant.eta == EQ13.eta else "small_step_"
    return tc.use(invariant_batch, rho=variant.rho, eta=variant.eta, d=d or s["d"],
                  instances=instances or s[prefix + "instances"], steps=s[prefix + "steps"])


def success_rate(invariants: dict) -> np.ndarray:
    """Per instance: every invariant of `lemma13_invariants` holds."""
    return np.logical_and.reduce([holds for _, holds in invariants.values()])


def plot_rate_against_overparameterization(tc) -> None:
    """The success rate of Lemma 13's invariants (eta = 1) and of the first-step base case
    against d/n."""
    ratios = np.asarray(tc.sizes["d_per_n_grid"], dtype=float)
    batches = [lemma13_batch(tc, EQ13, d=int(r) * tc.sizes["n"]) for r in ratios]
    rates = np.array([success_rate(b[0]).mean() for b in batches])
    base = np.array([b[1].mean() for b in batches])
    tc.record("d/n grid; success rate (eta = 1); first-step base-case rate", [ratios, rates, base])
    tc.curve("rate", "P[invariants hold] (eta = 1)", ratios, rates, xscale="log", xlabel="d/n",
             ylabel="fraction of instances", title="Lemma 13: success rate against overparameterization")
    tc.curve("rate", "P[first u step widens every gap]", ratios, base, style="reference", xscale="log",
             xlabel="d/n")
    tc.curve("rate", "JOINT_P", ratios, np.full(ratios.size, JOINT_P), style="bound", xscale="log",
             xlabel="d/n")
