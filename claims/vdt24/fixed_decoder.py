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
from theorycheck.checks import fit_slope
from theorycheck.data import score_gaps
from theorycheck.models.gradient_bounds import correlation_floor, gradient_bounds_at_logits
from theorycheck.optim import GD, NGD, FirstOrder, Polyak, displacement, frobenius_norm, run_trajectory
from theorycheck.optim.directions import direction_metrics, unit
from theorycheck.solvers import dual_curvature, solve_wsvm_batch, stationarity_multipliers
from theorycheck.solvers.svm import wsvm_constraint_factors
from theorycheck.tails import TailBound

from .setup import ASSUMPTION2_TOL, antipodal, counterexample
from .problems import (
    E1_SIZES,
    NGD_ETA,
    NGD_STEPS,
    TRIALS,
    counterexample_near_local_direction,
    counterexample_problem,
    e1,
    e1_run,
    local_direction,
    make_problem,
    problem,
    assumption2_then,
)


GD_ETA = 1.0
LEM5_NGD_ETAS = (0.1, 1.0)
"""The NGD step sizes of Lemma 5's runs (both tiers)."""
SPARSE_EVERY = 10
#: the shared GD run: steps, every step recorded up to ``dense`` (Lemma 5), checkpoints of Theorem 6
GD_RUN = {"quick": dict(steps=3000, dense=300, checkpoints=[100, 300, 1000, 3000]),
          "full": dict(steps=30000, dense=2000, checkpoints=[100, 300, 1000, 3000, 10000, 30000])}
POLYAK_RUN = {"quick": dict(steps=300), "full": dict(steps=2000)}
#: uncapped Polyak on fresh antipodal data sets at E1-S sizes (both tiers; the full tier runs longer)
POLYAK_CYCLE_RUN = {"quick": dict(instances=240, steps=300), "full": dict(instances=240, steps=1000)}
STABLE_DUAL_CURVATURE = 1.9
"""Polyak's fixed point ``p ~ lambda`` is linearly stable iff the dual curvature ``mu_max < 2``
(`theorycheck.solvers.dual_curvature`); on data sets with ``mu_max <= 1.9`` the deviation's
mode of the largest eigenvalue shrinks by a factor ``|1 - mu_max| <= 0.9`` per step."""


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


def dual_curvatures(prob) -> np.ndarray:
    """`dual_curvature` of the W-SVM of every trial of the problem ``prob``, shape (K,), at the
    multipliers that explain its W_mm (`stationarity_multipliers`: no second W-SVM solve)."""
    curvatures = []
    for X, opt, W_mm in zip(prob.data.X, prob.data.opt, prob.W_mm.cpu().numpy()):
        A, B, _ = wsvm_constraint_factors(X, opt)
        curvatures.append(dual_curvature(A, B, stationarity_multipliers(A, B, W_mm)))
    return np.array(curvatures)


@shared_run(sizes=POLYAK_CYCLE_RUN)
def antipodal_polyak(run, *, stream: str):
    """Uncapped Polyak on ``instances`` antipodal data sets (E1-S sizes) of the stream
    ("polyak cycles", ``stream``), every step recorded.  Returns (problem, trajectory)."""
    data = antipodal(run.rng("polyak cycles", stream), run.sizes["instances"], **E1_SIZES["quick"])
    prob = make_problem(run, data, init_stream=f"init {stream}")
    return prob, run_trajectory(Polyak(prob.model, eta_max=math.inf), {"W": prob.W0}, run.sizes["steps"],
                                saturation_metrics(prob.model, prob.opt, prob.W_mm))


@shared_run
def counterexample_ngd(run, *, steps: int):
    """NGD (eta = 0.1) on CE from Wbar_alpha + small noise, every step recorded."""
    ce = run.use(counterexample_near_local_direction)
    return run_trajectory(NGD(ce.model, NGD_ETA), {"W": ce.W0}, steps,
                          saturation_metrics(ce.model, ce.opt, ce.W_mm))


@shared_run
def e1_ngd_step_sizes(run, *, etas: tuple[float, ...], steps: int):
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


def first_trials(prob, trials):
    """(position in ``trials``, label) of the first of the kept trials ``trials`` (indices into
    ``prob.data``) of every data set concatenated in ``prob.data``."""
    names = prob.data.name.split("+")
    for j, name in enumerate(names):
        kept = np.flatnonzero(np.asarray(trials) // (prob.data.K // len(names)) == j)
        if kept.size:
            yield int(kept[0]), f"{name.split('(')[0]}, first trial"


def wrong_opt_reference(prob) -> torch.Tensor:
    """The W-SVM solution for the wrong optimal set opt+1 mod T, per trial (solved anew): what
    the reference controls put in the place of W_mm."""
    opt = (prob.data.opt + 1) % prob.data.T
    W = solve_wsvm_batch(prob.data.X, opt, name=f"{prob.data.name}, opt+1 mod T")
    return torch.as_tensor(W, dtype=prob.W_mm.dtype, device=prob.W_mm.device)


GRADIENT_BOUNDS_EXACT = TailBound(0.0, (
    "the bounds of (G) (sandwich, correlation, cosine/kappa) are decided against the allowances of "
    "theorycheck.models.gradient_bounds, derived for any scores: -grad L = (G) + E exactly, with ||E|| "
    "<= (1/n) sum_i e^{-gbar_i} (1 - s_{i,o}) eps_i R_i (eps_i the computed spread of the non-optimal "
    "scores -- capped at Assumption 2's tolerance where the claim reads only trials meeting it, Lemma 6's "
    "fixed points and NGD iterates -- plus their round-off), and W_ref's constraint values >= 1 - D (D its computed deficit on the "
    "program it solves), so the exact ratios lie within D + eta_L ||W_ref||, eta_R and 1 - (1 - D - "
    "eta_L ||W_ref||)/(1 + eta_R) of 1 at every point; their relative forward error (log-space "
    "coefficients erring by O(u Z) relative at logits and scores up to Z, the gradient's balance and "
    "its nT-term sums, the d^2-term inner products, against ||grad L|| >= m sum c_i/(n ||W_ref||) and sum c_i R_i >= min R_i sum c_i) is a "
    "few times u (nT + d^2)(1 + Z)(1 + P (||W_ref|| + 1/min R_i)), below the allowance's rho = 2^6 times that "
    "(Lemma 7's analysis, 2e6 u at Z = 810, is within it 400-fold).  So a decision fails only if the "
    "algebra or the code is wrong, on every draw"))
"""Why the decisions of (G)'s bounds at drawn points cannot fail but through a wrong derivation or
code (`vdt24.prop.grad_identity_and_stationarity`, `vdt24.lem6.grad_correlates_with_wmm`)."""


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


WSVM_MARGIN_SLACK = 1e-10
"""How far below 1 the computed W_mm's least W-SVM margin may lie in `derivation_hypotheses` (the
solver's feasibility is a few 1e-12)."""
WMM_NORM_CAP = 25.0
TOKEN_PRODUCT_CAP = 4.0
"""Caps on ||W_mm|| and on max_{i,t} ||x_{i,t}|| ||x_{i,1}|| in `derivation_hypotheses`: they bound the
logits along the run and how far the gradient's token terms can cancel, which a forward error
analysis needs (Example 1's values under them: Lemma 7's calibration record)."""


def nonnegative_coefficients(s_opt: np.ndarray, scores: np.ndarray, opt: np.ndarray) -> np.ndarray:
    r"""Per sample, whether every coefficient w_{i,t} = s_{i,t} (gbar_i - gamma_{i,t}) (t != o) of
    -grad L = (1/n) sum_i e^{-gbar_i} sum_{t != o} w_{i,t} (x_{i,o} - x_{i,t}) x_{i,1}^T is >= 0 for
    any scores: gbar_i - gamma_{i,t} >= s_{i,o} Delta_i - (1 - s_{i,o}) eps_i (Delta_i the score gap,
    eps_i the spread of the non-optimal scores), so s_{i,o} >= eps_i / (Delta_i + eps_i) suffices
    (Assumption 2 exact: eps_i = 0, always).  ``s_opt`` (..., n) at points of the trials whose
    ``scores`` (..., n, T) and ``opt`` (..., n) broadcast against it."""
    gap = score_gaps(scores, opt)
    spread = -(score_gaps(-scores, opt) + gap)                  # max - min of the non-optimal scores
    with np.errstate(invalid="ignore", divide="ignore"):
        return s_opt >= spread / (gap + spread)


def reference_hypotheses(X: np.ndarray, opt: np.ndarray, W_mm: np.ndarray) -> np.ndarray:
    """Per trial: W_mm's least W-SVM margin >= 1 - `WSVM_MARGIN_SLACK`, ||W_mm|| <= `WMM_NORM_CAP` and
    max ||x_{i,t}|| ||x_{i,1}|| <= `TOKEN_PRODUCT_CAP` (`derivation_hypotheses`)."""
    margins = score_gaps(np.einsum("knte,kef,knf->knt", X, W_mm, X[:, :, 0]), opt).min(-1)
    norms = np.linalg.norm(X, axis=-1)
    products = (norms * norms[:, :, :1]).max(axis=(1, 2))
    return ((margins >= 1.0 - WSVM_MARGIN_SLACK) & (np.linalg.norm(W_mm, axis=(1, 2)) <= WMM_NORM_CAP)
            & (products <= TOKEN_PRODUCT_CAP))


def derivation_hypotheses(prob, s_opt: np.ndarray) -> np.ndarray:
    """Per trial of ``prob``: whether the derivation of Lemmas 6 and 7 for any scores applies at
    every point whose optimal-token attention is ``s_opt`` (points, K, n): `nonnegative_coefficients`
    at every point and `reference_hypotheses`."""
    data = prob.data
    signs = nonnegative_coefficients(s_opt, data.scores(), data.opt).all(axis=(0, 2))
    return signs & reference_hypotheses(data.X, data.opt, prob.W_mm.cpu().numpy())


FIXED_POINT_SCALES = (0.0, -1.0, -3.0)
"""The fixed test points W = c Wbar_mm of the identities that hold for every W (Lemma 6, (G)):
c = 0 (uniform attention) and two points opposite W_mm, where the attention leaves the optimal
token (on CE it then sits on tokens 0 and 1, whose difference has cosine -3/sqrt(10) with W_mm)."""


def counterexample_tensors(tc):
    r"""(X, y, u, opt, W_mm) of CE (``counterexample(TRIALS)``) on the run's device: the fixed
    construction and its W-SVM (a solve on fixed inputs), no draw and no shared run, so the
    decisions a counterexample control makes on them precede every seeded event of its case
    (seed-independent in the calibration)."""
    data = counterexample(TRIALS)
    t = data.to_torch(tc.runtime.device, tc.runtime.torch_dtype)
    W_mm = torch.as_tensor(solve_wsvm_batch(data.X, data.opt, name=data.name), dtype=t.X.dtype,
                           device=t.X.device)
    return t.X, t.y, t.u, t.opt, W_mm


def fixed_points(W_mm, scales=FIXED_POINT_SCALES) -> torch.Tensor:
    r"""W = c W_mm/||W_mm||_F for each c in ``scales``, per trial: shape (K * len(scales), d, d),
    the points of trial k in a row (as `repeated` orders them); no draw."""
    unit_mm = W_mm / frobenius_norm(W_mm)[:, None, None]
    c = W_mm.new_tensor(scales)[None, :, None, None]
    return (c * unit_mm[:, None]).flatten(0, 1)


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
    `step_direction_metrics` for the references (W_mm, `wrong_opt_reference`; W_mm twice on
    CE, whose second reference no claim reads) and the iterates' ``logits`` (K,n,T) (in the run's
    coordinates: cheap).  Shared by Lemmas 2 and 6.  Returns (problem, trajectory)."""
    if case == "counterexample":
        prob = run.use(counterexample_near_local_direction)
        second = prob.W_mm
    else:
        prob = run.use(fixed_decoder_problem, families=families)
        second = wrong_opt_reference(prob)
    references = torch.stack([prob.W_mm, second], dim=1)
    metrics = dict(step_direction_metrics(references),
                   logits=lambda it: (it.model or prob.model).logits(it.coordinates))
    return prob, run_trajectory(NGD(prob.model, NGD_ETA), {"W": prob.W0}, steps, metrics)


LANDSCAPE_RUN = {"quick": dict(families=list(FIXED_DECODER_FAMILIES), steps=800),
                 "full": dict(families=["example1"], steps=2000)}


def bounds_along_run(prob, z, W_ref, ref_opt, chunk_entries: int = 2**21):
    r"""Lemma 6 at the recorded logits ``z`` (C,K,n,T) of a run on the trials of ``prob``:
    (cosine(-grad L, W_ref)/kappa, its allowance), both (C,K) numpy arrays, from
    `gradient_bounds_at_logits` with the non-optimal spread capped at Assumption 2's tolerance
    (`ASSUMPTION2_TOL`: proven for data meeting it, not absorbing a violation), in chunks of
    iterates whose d x d gradients hold about ``chunk_entries`` entries (2048 points at d = 32,
    one iterate at d = 768)."""
    C, K = z.shape[:2]
    kappa = correlation_floor(prob.X, prob.opt, W_ref)
    ratio, allowance = np.empty((C, K)), np.empty((C, K))
    step = max(1, chunk_entries // prob.X.shape[-1] ** 2 // K)
    for start in range(0, C, step):
        zs = torch.as_tensor(z[start:start + step], dtype=prob.X.dtype, device=prob.X.device)
        S = zs.shape[0]
        X, y, u, opt, ref, ref_o, kap = repeated(S, prob.X, prob.y, prob.u, prob.opt, W_ref, ref_opt, kappa)
        b = gradient_bounds_at_logits(X, y, u, zs.transpose(0, 1).flatten(0, 1), opt, ref, ref_o,
                                      spread_cap=ASSUMPTION2_TOL)
        ratio[start:start + S] = (b.cosine / kap).reshape(K, S).T.cpu().numpy()
        allowance[start:start + S] = b.cosine_allowance.reshape(K, S).T.cpu().numpy()
    return ratio, allowance


def landscape_run_for(tc):
    """(problem, its trials meeting Assumption 2, the run of those trials): the shared NGD run
    of the claim (CE for the "counterexample" control), with its instances' Assumption 2 decided
    as a precondition (`assumption2_trials`; the counterexample control violates it, as a
    hypothesis control must).  The problem keeps every trial (`restricted` keeps the chosen)."""
    case = "counterexample" if tc.control == "counterexample" else "assumptions"
    (prob, run), met = assumption2_then(
        tc, lambda: tc.use(landscape_ngd_run, case=case, families=list(tc.sizes["families"]),
                           steps=tc.sizes["steps"]),
        lambda returned: returned[0].data)
    return prob, met, run.restrict(met)


def centring_statistic(X: np.ndarray) -> np.ndarray:
    r"""nT ||mean_{i,t} x_{i,t}||^2 / mean_{i,t} ||x_{i,t}||^2 per trial: about 1 for centred
    i.i.d. isotropic tokens (chi^2_d / d), about nT ||mu||^2 / (1 + ||mu||^2) with a common
    component mu."""
    tokens = X.reshape(X.shape[0], -1, X.shape[-1])
    mean = tokens.mean(axis=1)
    return tokens.shape[1] * (mean**2).sum(-1) / (tokens**2).sum(-1).mean(-1)


# ---------------------------------------------------------------- Remark 1: local directions


def trapping_setup(tc):
    """(problem, trap directions (K,d,d)): CE with Wbar_alpha, or -- control -- Example 1 with
    random unit directions in alpha's place (no competing direction exists there)."""
    if tc.control == "assumptions_hold":
        prob = tc.use(e1)
        V = tc.tensor(tc.rng("trap directions").standard_normal(tuple(prob.W_mm.shape)))
        return prob, V / frobenius_norm(V)[:, None, None]
    prob = tc.use(counterexample_problem)
    return prob, local_direction(prob)


# ---------------------------------------------------------------- Theorem 1: the starts and references


def thm1_reference(tc, prob):
    """W_mm, or what a negative control puts in its place: the W-SVM solution for the wrong
    optimal set opt+1 mod T.  (A control with W_mm plus a random perturbation of relative size
    0.1 was removed: its deficit 1 - 1/sqrt(1.01) > dev_max held by arithmetic, for any run.)"""
    if tc.control == "wrong_opt":
        return wrong_opt_reference(prob)
    return prob.W_mm


def thm1_runs(tc, starts, W_ref):
    """{start: trajectory with W_norm and al(W_t, W_ref) at every step}: NGD (eta = 0.1) from
    each start, or what a control runs instead (GD, CE).  The claim takes the small random
    start from the shared NGD run of Lemmas 1 and 7 (`e1_run`, the same dynamics) and runs
    the other starts as one batch; the controls run all their starts themselves."""
    reuse = tc.control is None
    own = dict(list(starts.items())[1:]) if reuse else starts
    traj = tc.use(direction_run, case="counterexample" if tc.control == "counterexample" else "e1",
                  rule="gd" if tc.control == "gd" else "ngd", eta=1.0 if tc.control == "gd" else NGD_ETA,
                  W0=torch.cat(list(own.values())), W_ref=W_ref, steps=tc.sizes["steps"])
    runs = {label: traj.restrict(slice(s * TRIALS, (s + 1) * TRIALS)) for s, label in enumerate(own)}
    return {"small random": tc.use(e1_run)[1], **runs} if reuse else runs


# ---------------------------------------------------------------- Lemmas 5, 7, 1 and Theorems 6, 7: the runs each claim reads


def lem5_runs(tc):
    """{method: trajectory with s_opt and min_gap at every step <= steps}, and the data."""
    steps = tc.sizes["steps"]
    if tc.control == "counterexample":
        traj = tc.use(counterexample_ngd, steps=steps)
        return {f"NGD eta={NGD_ETA} on CE": traj}, tc.use(counterexample_problem).data
    prob = tc.use(e1)
    etas = LEM5_NGD_ETAS
    ngd = tc.use(e1_ngd_step_sizes, etas=etas, steps=steps)
    _, gd, gd_starts = tc.use(e1_gd)
    runs = {f"NGD eta={eta}": ngd.restrict(slice(e * TRIALS, (e + 1) * TRIALS)) for e, eta in enumerate(etas)}
    runs[f"GD eta={GD_ETA}"] = gd.restrict(gd_starts["small random"], steps)
    runs["Polyak (uncapped)"] = tc.use(e1_polyak)[1].restrict(slice(None), steps)
    return runs, prob.data


def ngd_run_or_gd(tc, token_scale: float = 1.0, every: int = 1, steps: int | None = None):
    """(problem, trajectory, eta): the NGD run (eta = 0.1) on Example 1 (tokens x
    ``token_scale``; ``steps`` steps, the tier's NGD steps when None), or for the "gd" controls
    constant-step GD (eta = 1) over the same steps (on Example 1 the small-init trials of the
    shared GD run)."""
    if tc.control != "gd":
        return (*tc.use(e1_run, token_scale=token_scale, every=every, steps=steps), NGD_ETA)
    if token_scale == 1.0:
        prob, gd, starts = tc.use(e1_gd)
        return prob, gd.restrict(starts["small random"], NGD_STEPS[tc.tier]), GD_ETA
    return (*tc.use(e1_run, rule="gd", eta=GD_ETA, token_scale=token_scale, every=every, steps=steps), GD_ETA)


def saturation_rate(tc, label, met, prob, traj, eta, window, envelope_from):
    """Lemma 1's slope (over ``window``) and envelope (from ``envelope_from``) on one copy of
    the data (see the claim), on the trials ``met`` (those meeting Assumption 2)."""
    norm_mm, traj = prob.W_mm_norm[met], traj.restrict(met)
    t = traj.t
    ell = traj["log_one_minus_s_opt"].max(-1)                            # (C, K)
    fits = [fit_slope(t, ell[:, k], window=window, x_transform="linear",
                      y_transform="linear") for k in range(met.size)]
    slope = np.array([fit.slope for fit in fits])
    tc.conclusion.close(f"{label}: slope of max_i log(1 - s_opt) x ||W_mm|| / eta", slope * norm_mm / eta,
                        -1.0, atol=0.02)
    envelope = math.log(prob.data.T - 1) - eta / (2 * norm_mm) * t[:, None]
    late = t >= envelope_from
    tc.conclusion.at_most(f"{label}: max over t >= t_env of ell(t) - (log(T-1) - eta t/(2||W_mm||))",
                          (ell - envelope)[late].max(), 0.0)
    tc.record(f"{label}: ||W_mm|| per trial", norm_mm)
    tc.record(f"{label}: fitted slope per trial", slope)
    tc.record(f"{label}: predicted slope -eta/||W_mm|| per trial", -eta / norm_mm)
    tc.curve("saturation", f"{label}: max_i log(1 - s_opt), seed 0", t, ell[:, 0], ylabel="log(1 - s_opt)",
             title="Lemma 1: exponential saturation of the attention (seed 0)")
    tc.curve("saturation", f"{label}: -eta t/||W_mm|| + fitted offset", t,
             fits[0].intercept - eta * t / norm_mm[0], style="theory")


def thm6_runs(tc):
    """({start: trajectory with W_alignment}, data): the starts of the shared GD run, or GD on
    CE (every SPARSE_EVERY-th step) for the control."""
    checkpoints = tc.sizes["checkpoints"]
    if tc.control == "counterexample":
        traj = tc.use(counterexample_gd, checkpoints=checkpoints)
        return {"near W_alpha (CE)": traj}, tc.use(counterexample_problem).data
    prob, traj, starts = tc.use(e1_gd)
    return {label: traj.restrict(trials) for label, trials in starts.items()}, prob.data


def thm7_run(tc):
    """(problem, trajectory): the shared uncapped Polyak run, or the capped one."""
    return tc.use(e1_polyak, eta_max=1.0 if tc.control == "capped" else None)
