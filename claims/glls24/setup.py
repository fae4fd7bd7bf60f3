r"""The set-up of glls24: its data, its initialization, its constants and the shared GD runs.

Paper: J. Gu, C. Li, Y. Liang, Z. Shi, Z. Song, "Exploring the Frontiers of Softmax: Provable
Optimization, Applications in Diffusion Model, and Beyond", arXiv 2405.03251 (v1, 2024).  The
network is ``F(W, x, A)_l = m <a_l, softmax(W^T x)>`` (Eq. (1)), trained by GD on
``L(W) = 1/2 ||F - Y||_F^2`` in ``W`` only (Defs. 3.2-3.5), from the symmetric initialization of
Def. 3.7; its kernel ``H(W)`` is Def. 3.6 with the factor ``1/m``
(`theorycheck.models.two_layer`).

Data (Sec. 3, "||x_i||_2 <= 1, ||y_i||_2 <= 1"): unit inputs ``x_i = g_i / ||g_i||``, labels
``y_i = u_i g'_i / ||g'_i||`` with ``u_i ~ Unif[0, 1]``; the input dimension ``d_in`` is kept
apart from the output dimension ``d`` (the paper identifies them "to simplify the proof").

Constants: ``B_emp = max(1, max_{i,r} |<w_r(0), x_i>|)`` is the event of Lemma B.1 Part 1
itself (the paper's ``B = C sigma sqrt(log(nd/delta))`` has an unspecified ``C``);
``D = 4 e^{3B} sqrt(nd) ||F(0) - Y||_F / (m lambda)`` (Def. A.2, reconstructed).  Runs use the
step ``eta = c / (m lambda_max(H(0)))``: the theorem's ``eta = 0.1 lambda / (m n^2 d^2 e^{16B})``
would need ~1e12 steps at these sizes (the function-space step is ``eta m H``).
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.models import (
    TwoLayerNetwork,
    independent_initialization,
    neuron_norms,
    ntk_gram,
    outputs,
    symmetric_initialization,
)
from theorycheck.optim import Iterate
from theorycheck.solvers import gaussian_mixture_score, ou_coefficients
from theorycheck.tolerance import tolerance

SIGMA = 0.5
"""Standard deviation of the first-layer initialization (spec configuration S)."""

INITIALIZATIONS = {"symmetric": symmetric_initialization, "independent": independent_initialization}

SYMMETRIC = "initialization is symmetric (Def. 3.7)"
"""The name of Def. 3.7's precondition (`decide_pairing`)."""


def unit_inputs(rng: np.random.Generator, K, n, d_in):
    """``x_i = g_i / ||g_i||``, g_i standard Gaussian: (K, n, d_in)."""
    X = rng.standard_normal((K, n, d_in))
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def bounded_labels(rng: np.random.Generator, K, n, d):
    """``y_i = u_i g'_i / ||g'_i||``, ``u_i ~ Unif[0, 1]``: (K, n, d), ``||y_i|| <= 1``."""
    return unit_inputs(rng, K, n, d) * rng.uniform(0.0, 1.0, (K, n, 1))


def regression_data(rng: np.random.Generator, K, n, d_in, d):
    """The construction of the regression data: unit inputs (K, n, d_in), labels in the unit ball (K, n, d)."""
    return unit_inputs(rng, K, n, d_in), bounded_labels(rng, K, n, d)


def scaled_unit_inputs(rng: np.random.Generator, K, n, d_in, input_norms):
    """Unit inputs scaled by norms drawn uniformly from ``input_norms`` (lo, hi): (K, n, d_in)."""
    return unit_inputs(rng, K, n, d_in) * rng.uniform(*input_norms, (K, n, 1))


PROBE_SEED = 20261128
"""The seed of `constructor_probe`, fixed: not a stream of the run's seed."""

EXACT = tolerance("float64", "exact")
"""Round-off of a norm of a normalized float64 vector (the constructions' data are numpy float64)."""


def constructor_probe():
    r"""The generator of the constructor probes.  A property that a construction makes true (Def.
    3.7's pairing, unit inputs, labels in the unit ball) is decided on the constructor's output at
    the claim's shapes from this fixed generator, before any draw of the case, so the decision is
    the same at every seed (seed-independent, `theorycheck.lineage`); the drawn numbers are then
    checked against the same property exactly (`require_construction`), which only a bug in the
    construction can break."""
    return np.random.default_rng(PROBE_SEED)


def require_construction(holds, what):
    """The exact check of a property a construction makes true on the numbers it drew: a
    RuntimeError naming ``what`` where it fails (a bug of the construction, not an outcome)."""
    failed = np.flatnonzero(~np.asarray(holds, dtype=bool).ravel())
    if failed.size:
        raise RuntimeError(f"the drawn numbers break the construction's property ({what}) at "
                           f"trials/entries {failed[:10].tolist()}: a bug in the construction")


def unit_ball_norms(*arrays):
    """The norms (last axis) of every array, flattened and concatenated."""
    return np.concatenate([np.linalg.norm(a, axis=-1).ravel() for a in arrays])


def in_unit_ball(*arrays):
    """Per vector (last axis) of every array: ``||v|| <= 1`` up to `EXACT` (flattened, concatenated)."""
    return unit_ball_norms(*arrays) <= 1 + EXACT


def duplicate_first_input(X, Y):
    """``x_2 := x_1`` with the conflicting label ``y_2 := -y_1``: lambda_min(H) = 0 and the loss
    cannot go below ``||y_1 - y_2||^2 / 4 = ||y_1||^2`` (the best fit at the shared input is 0)."""
    X, Y = X.copy(), Y.copy()
    X[:, 1], Y[:, 1] = X[:, 0], -Y[:, 0]
    return X, Y


def is_symmetric_initialization(W, A):
    """Per trial: columns paired as in Def. 3.7 (``w_{2r} = w_{2r+1}``, ``a_{2r} = -a_{2r+1}``)."""
    W, A = np.asarray(W), np.asarray(A)
    return (np.all(W[..., 0::2] == W[..., 1::2], axis=(1, 2))
            & np.all(A[..., 0::2] == -A[..., 1::2], axis=(1, 2)))


def bounded_preactivation_level(X, W):
    """``B_emp = max(1, max_{i,r} |<w_r, x_i>|)`` per trial (K,)."""
    return np.maximum(1.0, np.abs(np.einsum("kne,kem->knm", X, W)).max(axis=(1, 2)))


def movement_bound(B, n, d, m, residual0, lam):
    """``D = 4 e^{3B} sqrt(nd) ||F(0) - Y||_F / (m lambda)`` (Def. A.2)."""
    return 4 * np.exp(3 * B) * np.sqrt(n * d) * residual0 / (m * lam)


def regression_shape(sizes, *, n=None, d_in=None, d=None):
    """``(n, d_in, d)`` of a regression run: each override where given, else the tier's size."""
    return n or sizes["n"], d_in or sizes["d_in"], d or sizes["d"]


def regression_instance(ctx, *, n, d_in, d, K, duplicate=False, stream=()):
    """The training data of the regression claims (numpy X, Y), the same for every width:
    stream "data" of the paper scope (or of the case); ``stream`` extends the stream's name (data
    of their own, e.g. one draw per width)."""
    X, Y = regression_data(ctx.rng("data", n, d_in, d, *stream), K, n, d_in, d)
    require_construction(in_unit_ball(X, Y), "inputs and labels in the unit ball")
    return duplicate_first_input(X, Y) if duplicate else (X, Y)


def probe_regression_data(*, n, d_in, d):
    """`regression_data` of one trial at the shape ``(n, d_in, d)`` from `constructor_probe` (no draw
    of the case): (X, Y)."""
    return regression_data(constructor_probe(), 1, n, d_in, d)


def initialization(ctx, *, d_in, d, m, K, init="symmetric", sigma=SIGMA, stream=()):
    """(W0, A) numpy, stream "init" of width ``m`` and kind ``init``; ``stream`` extends the
    stream's name (a control's initializations of its own).  A symmetric one is checked exactly
    against Def. 3.7's pairing (`require_pairing`)."""
    W, A = INITIALIZATIONS[init](ctx.rng("init", m, init, d_in, d, *stream), K, d_in, d, m, sigma)
    if init == "symmetric":
        require_pairing(W, A)
    return W, A


def require_pairing(W, A):
    """The drawn weights of the symmetric constructor against Def. 3.7's pairing, exact equalities
    (the constructor copies the columns and negates the signs): only a bug can break them."""
    require_construction(is_symmetric_initialization(W, A), SYMMETRIC)


def decide_pairing(tc, shapes, init="symmetric", name=SYMMETRIC):
    """Precondition ``name``: Def. 3.7's pairing of the constructor ``INITIALIZATIONS[init]``, decided
    on one trial from `constructor_probe` at every ``(d_in, d, m)`` of ``shapes`` before any draw of
    the case (seed-independent: a property of the construction; the drawn symmetric weights are
    checked exactly by `initialization` / `require_pairing`)."""
    probes = [INITIALIZATIONS[init](constructor_probe(), 1, d_in, d, m, SIGMA) for d_in, d, m in shapes]
    tc.precondition.holds(name, [bool(is_symmetric_initialization(W, A)[0]) for W, A in probes])


#: ``lambda_min(H(0))`` counts as zero below this fraction of ``lambda_max(H(0))``: a floor far
#: above the eigensolver's round-off (about ``n u lambda_max``), relative so it does not depend on
#: the kernel's scale
ZERO_EIGENVALUE = 1e-8
POSITIVE_KERNEL = "lambda_min(H(0)) > 0"


def decide_positive_kernel(tc, runs, name=POSITIVE_KERNEL, tail_bound=None):
    """Precondition ``name`` (Theorem 4.2's ``lambda = lambda_min(H(0)) > 0``) on every trial of
    ``runs`` (each with per-trial ``"lambda"`` and ``"lambda_max"``): ``lambda >= ZERO_EIGENVALUE
    lambda_max``, declared on the log scale (the ratio spans decades across draws); ``tail_bound``
    its stated bound where one is proved (`scalar_output_kernel_tail`, d = 1; `two_output_kernel_tail`, d = 2)."""
    lam = np.concatenate([r["lambda"] for r in runs])
    lam_max = np.concatenate([r["lambda_max"] for r in runs])
    tc.precondition.at_least(name, lam, ZERO_EIGENVALUE * lam_max, scale="log", tail_bound=tail_bound)


INFORMATIVE_TAIL = 1e-3
"""`scalar_output_kernel_tail` states no bound above this probability (the decision then keeps its
model of the margins): a bound decided on the shapes, never on the margins."""


def scalar_output_kernel_tail(shapes, instances):
    r"""The stated bound of `decide_positive_kernel` on `softmax_gd` runs with scalar outputs (d = 1),
    the symmetric initialization and `unit_inputs`; ``shapes`` the runs' ``(n, d_in, m)`` (n <= d_in),
    ``instances`` trials each.  At Def. 3.7's pairing ``<a, S_i> = 0`` exactly, so ``H(0) = c (G o
    M)`` with ``G = X X^T`` and ``M = m^2 sum_r a_r^2 s_r s_r^T`` (``s_r = (S_{i,r})_i``, `ntk_gram`'s
    coefficients ``m S_{i,r} (a_r - <a, S_i>)``): both PSD, so Schur's bound ``lambda_min(G o M) >=
    lambda_min(G) min_i M_ii`` and ``M_ii = m^2 sum_r S_{i,r}^2 >= m`` (Cauchy-Schwarz, ``sum_r S_{i,r}
    = 1``) give ``lambda_min(H) >= c m sigma_min(X)^2``; ``lambda_max(H) <= tr H = c sum_i M_ii <= c n m
    e^{2B}`` (``S_{i,r} <= e^{2B}/m``, ``B = max |<w_r, x_i>|``, ``||x_i|| = 1``).  With ``sigma_min(X)
    >= 1/kappa(G_raw)`` (`limit_kernel_positive_tail`'s argument for ``x_i = g_i/||g_i||``), the ratio
    is below twice `ZERO_EIGENVALUE` (the computed ratio's round-off, about ``n (m + 10) u``, is far
    below the floor) only where ``B > b`` -- each of the ``n m / 2`` distinct pre-activations of a
    trial is exactly ``N(0, SIGMA^2)`` (w_r independent of the unit x_i) -- or ``kappa(G_raw) > (2
    ZERO_EIGENVALUE n e^{2b})^{-1/2}`` (Chen & Dongarra); b is the value on a grid of [2, 6] that
    minimizes the sum (a choice made on the formula, not on data).  Returns a `TailBound`, or None
    where the proof bounds nothing useful (above `INFORMATIVE_TAIL`: at the full tier's n = 64 the
    condition number's threshold falls below the range of Chen & Dongarra's bound), decided on the
    shapes alone."""
    from scipy import stats

    from theorycheck import TailBound
    from theorycheck.tails import gaussian_condition_tail

    def total(b):
        pre = sum(instances * n * (m // 2) * 2 * stats.norm.sf(b / SIGMA) for n, _, m in shapes)
        cond = sum(instances * gaussian_condition_tail(n, d_in, float((2 * ZERO_EIGENVALUE * n * np.exp(2 * b)) ** -0.5))
                   for n, d_in, _ in shapes)
        return min(1.0, float(pre + cond))

    grid = np.arange(2.0, 6.0, 0.05)
    b = float(grid[np.argmin([total(b) for b in grid])])
    if total(b) > INFORMATIVE_TAIL:
        return None
    return TailBound(total(b), (
        "d = 1 at Def. 3.7's pairing: H(0) = c (X X^T) o (m^2 sum_r s_r s_r^T), Schur's bound and M_ii >= m "
        "give lambda_min >= c m sigma_min(X)^2, the trace lambda_max <= c n m e^{2B}; sigma_min(X) >= "
        "1/kappa(G_raw) for unit inputs. Below 2 x the floor only where some pre-activation exceeds "
        f"b = {b:.2f} (Gaussian tail, union over the trials' n m / 2 distinct pairs) or kappa of an n x d_in "
        f"Gaussian matrix exceeds (2e-8 n e^(2b))^(-1/2) (Chen & Dongarra 2005); runs (n, d_in, m) {list(shapes)}, "
        f"{instances} trials each"))


def two_output_kernel_tail(shapes, instances, d):
    r"""The stated bound of `decide_positive_kernel` on `softmax_gd` runs with two outputs (d = 2), the
    symmetric initialization, second-layer entries +-1 and `unit_inputs`; ``shapes`` the runs' ``(n,
    d_in, m)`` (n <= d_in), ``instances`` trials each; None for ``d != 2`` or where the proof bounds
    nothing useful (above `INFORMATIVE_TAIL`).  At Def. 3.7's pairing ``<a_l, S_i> = 0``, so ``H(0) =
    c sum_r (a_r a_r^T) (x) (D_r G D_r)`` (output index first, ``G = X X^T``, ``D_r = diag(S_{., r})``),
    and ``a_r a_r^T`` is ``2 P_+`` or ``2 P_-`` (``a_{1r} = +-a_{2r}``), complementary orthogonal
    projections: the spectrum of ``H(0)`` is ``2c`` times the union of those of ``H_+- = G o M_+-``,
    ``M_+- = sum_{r in T_+-} s_r s_r^T`` over the columns of each sign type.  Schur's bounds
    ``lambda_min(G o M) >= lambda_min(G) min_i M_ii`` and ``lambda_max(G o M) <= lambda_max(G) max_i
    M_ii`` give ``lambda_min / lambda_max >= kappa(G)^{-1} min_{i,+-} N_{i+-} Z_i^{-2} / max_{i,+-} N_{i+-}
    Z_i^{-2}`` with ``N_{i+-} = sum_{T_+-} e^{2 z_{ir}}``, ``Z_i = sum_r e^{z_{ir}}`` (the softmax's
    normalizer); per pair of columns (`_paired_sums_tail`), ``z_{ir} ~ N(0, SIGMA^2)`` independent over
    the ``m / 2`` pairs and the sign types fair coins independent of them; ``kappa(G) <= n
    kappa(G_raw)^2`` (`scalar_output_kernel_tail`).  The ratio is below twice `ZERO_EIGENVALUE` (the
    computed ratio's round-off is far below the floor) only where a sum leaves its interval or
    ``kappa(G_raw)`` exceeds ``(2 ZERO_EIGENVALUE n / R)^{-1/2}`` (Chen & Dongarra), ``R`` the sums'
    ratio; the intervals minimize the bound per shape over a grid (a choice made on the formula, not
    on data).  Union over the shapes' trials."""
    from theorycheck import TailBound

    if d != 2:
        return None
    parts = [_paired_sums_tail(n, d_in, m) for n, d_in, m in shapes]
    total = min(1.0, instances * sum(p for p, _ in parts))
    if total > INFORMATIVE_TAIL:
        return None
    return TailBound(total, (
        "d = 2 at Def. 3.7's pairing with +-1 signs: H(0)'s spectrum is the union of those of X X^T o M_+ and "
        "X X^T o M_- (the two sign types of a_r, complementary projections), Schur's bounds give lambda_min / "
        "lambda_max >= kappa(X X^T)^{-1} min N_i / Z_i^2 / max N_i / Z_i^2 (N_i: sum of e^{2<w_r, x_i>} over a "
        "sign type, Z_i the softmax normalizer); below 2 x the floor only where a pre-activation exceeds b, a "
        "sum of the m/2 independent pairs leaves its interval (Bennett's inequality; a binomial count of "
        "terms e^{2z} >= e^{2c} in each type) or kappa of an n x d_in Gaussian matrix exceeds (2e-8 n / R)^(-1/2) "
        f"(Chen & Dongarra 2005); per shape (n, d_in, m): (b, c, intervals) {[p for _, p in parts]}, "
        f"{instances} trials each"))


def paired_kernel_tail(runs):
    """The stated bound of `decide_positive_kernel` on `softmax_gd` runs from Def. 3.7's symmetric
    initialization with +-1 second-layer entries and unit inputs, none duplicated (the hypotheses of
    both proofs; the caller's configuration must meet them): `scalar_output_kernel_tail` at d = 1,
    `two_output_kernel_tail` at d = 2 (None at other d), from the runs' shapes ``(n, d_in, m)`` and
    their number of trials."""
    shapes = [(r["X"].shape[1], r["X"].shape[2], r["m"]) for r in runs]
    instances, d = len(runs[0]["lambda"]), runs[0]["Y"].shape[2]
    if d == 1:
        return scalar_output_kernel_tail(shapes, instances)
    return two_output_kernel_tail(shapes, instances, d)


@functools.lru_cache(maxsize=None)
def _paired_sums_tail(n, d_in, m):
    r"""The least over a grid of `two_output_kernel_tail`'s per-trial failure probability at one
    shape, and its parameters: ``b`` (every pre-activation ``z <= b``: ``n m/2 Phi(-b/SIGMA)``),
    ``Z_i / (m/2) in [f mu_1, u_1 mu_1]`` (``mu_1 = E e^z``; the lower end by Bennett's inequality on
    ``-e^z <= 0``, the upper on ``min(e^z, e^b)``), ``N_{i+-} <= (m/2) u_2 mu_2`` (``mu_2 = E e^{2z}``,
    Bennett on ``min(e^{2z}, e^{2b})``), ``N_{i+-} >= e^{2c} k`` where at least ``k`` pairs of the type
    have ``z >= c`` (a binomial count over the pairs, rate ``Phi(-c / SIGMA) / 2``: ``z >= c`` and the type), and
    ``kappa(G_raw) <= (R / (2 ZERO_EIGENVALUE n))^{1/2}``, ``R = e^{2c} k f^2 / ((m/2) u_2 mu_2 u_1^2)``
    (Chen & Dongarra).  Bennett's bound needs a variance bound only (a truncation's variance is at most
    the variable's: it is 1-Lipschitz) and the deviation's upper bound."""
    from scipy import stats

    from theorycheck.tails import bennett_tail, gaussian_condition_tail

    pairs, s2 = m // 2, SIGMA ** 2
    mu1, var1 = np.exp(s2 / 2), np.exp(2 * s2) - np.exp(s2)
    mu2, var2 = np.exp(2 * s2), np.exp(8 * s2) - np.exp(4 * s2)
    b = np.arange(2.5, 4.5, 0.05)
    lows, ups1, ups2, cs, shares = (0.5, 0.7), (1.5, 2.0, 3.0), (3.0, 5.0, 10.0), (-0.5, -0.25, 0.0), (0.35, 0.5)
    truncated = n * pairs * stats.norm.sf(b / SIGMA)
    z_low = {f: n * bennett_tail(pairs, var1, mu1, mu1 * (1 - f)) for f in lows}
    z_up = {u: n * bennett_tail(pairs, var1, np.exp(b), mu1 * (u - 1)) for u in ups1}
    n_up = {u: n * bennett_tail(pairs, var2, np.exp(2 * b), mu2 * (u - 1)) for u in ups2}
    best = (np.inf, None)
    for c in cs:
        rate = stats.norm.sf(c / SIGMA) / 2
        for share in shares:
            k = max(1, int(share * pairs * rate))
            counted = 2 * n * stats.binom.cdf(k - 1, pairs, rate)
            for f in lows:
                for u1 in ups1:
                    for u2 in ups2:
                        ratio = np.exp(2 * c) * k * f ** 2 / (pairs * u2 * mu2 * u1 ** 2)
                        conditioned = gaussian_condition_tail(n, d_in, float(np.sqrt(ratio / (2 * ZERO_EIGENVALUE * n))))
                        total = truncated + z_low[f] + z_up[u1] + n_up[u2] + counted + conditioned
                        i = int(np.argmin(total))
                        if total[i] < best[0]:
                            best = (float(total[i]), (n, d_in, m, round(float(b[i]), 2), c, k, f, u1, u2))
    return best


def decide_unit_ball(tc, name, *arrays):
    """Precondition ``name``: every vector of ``arrays`` (probes of the construction) in the unit ball,
    ``||v|| <= 1`` up to ``tc.tol("exact")``."""
    tc.precondition.at_most(name, unit_ball_norms(*arrays), 1.0, margin=tc.tol("exact"))


def generic_point(tc, s):
    """Data, a symmetric initialization and the generic point ``W = W(0) + 0.3 N(0, 1)`` (there
    ``<a_l, S> != 0``, unlike at ``W(0)``), all as tensors."""
    X, Y = regression_instance(tc, n=s["n"], d_in=s["d_in"], d=s["d"], K=s["instances"])
    W0, A = initialization(tc, d_in=s["d_in"], d=s["d"], m=s["width"], K=s["instances"])
    W = W0 + 0.3 * tc.rng("perturbation").standard_normal(W0.shape)
    return tuple(tc.tensor(a) for a in (X, Y, W0, W, A))


def extreme_eigenvalues(H):
    """``(lambda_min, lambda_max)`` per trial of a batch of symmetric matrices (numpy (K,))."""
    ev = torch.linalg.eigvalsh(H)
    return ev[:, 0].cpu().numpy(), ev[:, -1].cpu().numpy()


def _light_metrics(model, W0, X_test):
    metrics = model.metrics(W0=W0, X_test=X_test)
    metrics["max_step_per_neuron"] = lambda it: neuron_norms(it.next["W"] - it.params["W"]).amax(1)
    return metrics


def kernel_metrics(model, H0, X_test=None):
    """The kernel metrics of a GD run: "kernel_drift" ``||H(t) - H(0)||_F``, "lambda_min"
    ``lambda_min(H(t))`` (both from one Gram matrix per iterate) and, given ``X_test``,
    "cross_kernel" ``K_t(X_test, X)`` (K, d n_te, d n)."""
    from theorycheck.optim.metrics import once_per_iterate

    gram = once_per_iterate(lambda it: model.gram(it.params["W"]))
    metrics = {"kernel_drift": lambda it: torch.linalg.matrix_norm(gram(it) - H0),
               "lambda_min": lambda it: torch.linalg.eigvalsh(gram(it))[:, 0]}
    if X_test is not None:
        metrics["cross_kernel"] = lambda it: ntk_gram(X_test, model.X, it.params["W"], model.A)
    return metrics


def two_phase_gd(step, model, W0, H0, X_test, dense_steps, steps):
    r"""GD for ``steps`` steps: every metric at every step up to ``dense_steps``, then the cheap
    metrics (loss, movement, per-neuron step, test outputs) at every step and the kernel
    metrics once more at the last iterate (GD is stateless, so continuing is exact).
    Returns ``(metrics, kernel_at_end, diverged_at, W_final)``."""
    from theorycheck.optim import run_trajectory

    light = _light_metrics(model, W0, X_test)
    heavy = kernel_metrics(model, H0, X_test)
    first = run_trajectory(step, {"W": W0}, dense_steps, {**light, **heavy}, on_nonfinite="record")
    rest = run_trajectory(step, first.params, steps - dense_steps, light, on_nonfinite="record")
    metrics = {k: np.concatenate([first[k], rest[k][1:]]) for k in light}
    metrics.update({k: first[k] for k in heavy})
    last = Iterate(steps, rest.params, rest.params)
    end = {k: f(last).cpu().numpy() for k, f in heavy.items()}
    diverged = np.where(first.diverged_at >= 0, first.diverged_at,
                        np.where(rest.diverged_at >= 0, rest.diverged_at + dense_steps, -1))
    return metrics, end, diverged, rest.params["W"]


CONVERGENCE_TARGET = 1e-10
"""Target ``||F - Y||_F^2 <= CONVERGENCE_TARGET ||Y||_F^2`` of the GD runs (the spec's stopping rule)."""


def predicted_steps(q, initial_rel, epsilon):
    """Theorem 4.2's count ``ceil(log(rel(0) / epsilon) / -log q)`` per trial for the per-step
    contraction ``q``; ``inf`` where ``q >= 1`` (no contraction: lambda <= 0).  Where ``q <= 0``
    (a step ``eta >= 2 / (m lambda)``, beyond the theorem's range: a control's large step on a
    well-conditioned kernel) the contraction bound is non-positive and asserts epsilon after one
    step: the count is 1 (0 where ``rel(0) <= epsilon`` already)."""
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        count = np.ceil(np.log(initial_rel / epsilon) / -np.log(q))
    return np.where(q >= 1, np.inf, np.where(q <= 0, np.asarray(initial_rel > epsilon, dtype=float), count))


@shared_run(sizes={"quick": {"instances": 3, "n": 4, "d_in": 8, "d": 2, "dense_steps": 40,
                             "max_steps": 200, "n_test": 5},
                   "full": {"instances": 5, "n": 32, "d_in": 64, "d": 4, "dense_steps": 200,
                            "max_steps": 5000, "n_test": 16}})
def softmax_gd(run, *, m, c=1.0, init="symmetric", duplicate=False, n=None, d_in=None, d=None, a_scale=1.0,
               max_steps=None, instances=None, data_key=None):
    r"""GD on the softmax network of width ``m`` with ``eta = c / (m lambda_max(H(0)))`` per
    trial, from the initialization ``init`` (`two_phase_gd`: loss, movement, per-neuron step and
    outputs at ``n_test`` unit test inputs at every step; kernel drift, ``lambda_min(H(t))`` and
    the test cross kernel for ``t <= dense_steps`` and at the end).  The run lasts Theorem 4.2's
    count `predicted_steps` to ``CONVERGENCE_TARGET`` of its slowest trial (``q = 1 - m eta
    lambda / 2``), capped at the tier's ``max_steps``: the theorem asserts convergence within that
    count, so a longer run tests nothing more (at the full sizes a few hundred steps, not 5000).
    Divergence is recorded (``diverged_at``), not raised.  ``n``, ``d_in``, ``d`` override the
    tier's sizes; ``a_scale`` multiplies the second layer (1: entries +-1 as in Def. 3.7);
    ``max_steps`` overrides the tier's cap and ``instances`` the tier's number of trials;
    ``data_key`` (when given) extends the name of the data's stream (`regression_instance`: data
    of the run's own instead of the trials shared by every width)."""
    from theorycheck.optim import GD

    s = run.sizes
    n, d_in, d = regression_shape(s, n=n, d_in=d_in, d=d)
    K = instances or s["instances"]
    X, Y = regression_instance(run, n=n, d_in=d_in, d=d, K=K, duplicate=duplicate, stream=() if data_key is None else (data_key,))
    X_test = unit_inputs(run.rng("test", n, d_in), K, s["n_test"], d_in)
    W0, A = initialization(run, d_in=d_in, d=d, m=m, K=K, init=init)
    A = A * a_scale
    require_construction(np.abs(A) == a_scale, "second-layer entries +-a_scale")
    Xt, Yt, At, W0t, Xte = (run.tensor(a) for a in (X, Y, A, W0, X_test))
    model = TwoLayerNetwork(Xt, Yt, At)
    H0 = model.gram(W0t)
    lam, lam_max = extreme_eigenvalues(H0)
    eta = c / (m * lam_max)
    initial_rel = np.sum((outputs(Xt, W0t, At).cpu().numpy() - Y) ** 2, axis=(1, 2)) / np.sum(Y**2, axis=(1, 2))
    needed = np.max(predicted_steps(1 - c * lam / (2 * lam_max), initial_rel, CONVERGENCE_TARGET))
    steps = int(min(needed, max_steps or s["max_steps"]))
    dense = min(s["dense_steps"], steps)
    metrics, end, diverged, W_final = two_phase_gd(GD(model, run.tensor(eta)), model, W0t, H0, Xte,
                                                   dense, steps)
    return {"t": np.arange(steps + 1), **metrics, "kernel_at_end": end, "diverged_at": diverged,
            "dense_steps": dense, "W_final": W_final.cpu().numpy(), "X": X, "Y": Y, "X_test": X_test, "W0": W0, "A": A,
            "H0": H0.cpu().numpy(), "lambda": lam, "lambda_max": lam_max, "eta": eta, "m": m,
            "B_emp": bounded_preactivation_level(X, W0)}


def gd_dims(tc):
    """``(d_in, d)`` of the tier's `softmax_gd` runs (the probe shapes of `decide_pairing`)."""
    _, d_in, d = regression_shape(softmax_gd.sizes_of(tc.tier))
    return d_in, d


def contraction_factor(run):
    """``1 - m eta lambda / 2`` per trial (Lemma 5.3 / Theorem 4.2)."""
    return 1 - run["m"] * run["eta"] * run["lambda"] / 2


def log_contraction(q):
    """``log q`` of the per-step bound ``rel(t+1) <= q rel(t)``: 0 where ``q >= 1`` (no
    contraction, the bound the loss itself) and ``-inf`` where ``q <= 0`` (a step beyond the
    theorem's range: the bound is non-positive and no positive loss meets it)."""
    with np.errstate(divide="ignore"):
        return np.log(np.clip(q, 0.0, 1.0))


def relative_loss(run):
    """``||F(t) - Y||_F^2 / ||Y||_F^2`` (T+1, K); ``F(0) = 0`` under the symmetric init."""
    return np.exp(run["log_loss"]) / (0.5 * np.sum(run["Y"] ** 2, axis=(1, 2)))


def first_time_below(series, level):
    """First index t with ``series[t] <= level`` per column (K,), ``len(series)`` where never."""
    below = series <= level
    return np.where(below.any(0), below.argmax(0), len(series))


# --------------------------------------------------------------------------- diffusion (Sec. 6)

MIXTURE = {"weights": [0.5, 0.5], "means": [[-0.5], [0.5]], "stds": [0.15, 0.15]}
"""``p_0 = 1/2 N(-0.5, 0.15^2) + 1/2 N(0.5, 0.15^2)`` on R: Assumption 6.1 (``|x(0)| <= 1``) up to a
tail of ~1e-3 (spec Sec. 4.2)."""

TIME_WINDOW = (0.2, 1.0)
"""``[T_0, T]`` of the score-matching objective, with the rate ``g = 1`` (Sec. 6.1, Eq. (3))."""


def denoising_samples(rng: np.random.Generator, N, rate=1.0):
    r"""``N`` samples of the denoising problem: ``t ~ Unif[T_0, T]``, ``x(0) ~ p_0``, ``x(t) =
    alpha x(0) + s xi``; returns ``x0`` (N,), ``x`` (N, 1), ``t`` (N,), the denoising label ``-xi / s``
    (N, 1) and the true score ``grad log p_t(x)`` (N, 1) of the process with ``g = 1``.  ``rate``
    the forward process's ``g`` (its ``alpha, s`` at time ``g t``); the score stays that of ``g = 1``."""
    t = rng.uniform(*TIME_WINDOW, N)
    component = rng.integers(0, 2, N)
    x0 = np.asarray(MIXTURE["means"])[component, 0] + np.asarray(MIXTURE["stds"])[component] * rng.standard_normal(N)
    xi = rng.standard_normal(N)
    alpha, s = ou_coefficients(rate * t)
    x = (alpha * x0 + s * xi)[:, None]
    score = gaussian_mixture_score(x, t, MIXTURE["weights"], MIXTURE["means"], MIXTURE["stds"])
    return x0, x, t, (-xi / s)[:, None], score


def diffusion_features(x, t):
    """``z = (x / sqrt(4 + x^2), (t - T_0)/(T - T_0), 1) / sqrt 3``, always in the unit ball of R^3
    (the spec's ``x / 2`` leaves the ball for |x| > 2, which noisy samples reach; ``x / sqrt(4 + x^2)``
    equals it to 10% for |x| < 1 and is injective); the constant coordinate is needed because a
    symmetric softmax network has F(W, 0) = 0 and no constant kernel part."""
    T0, T = TIME_WINDOW
    return np.stack([x[:, 0] / np.sqrt(4 + x[:, 0] ** 2), (t - T0) / (T - T0), np.ones_like(t)], axis=1) / np.sqrt(3)


# --------------------------------------------------------------------------- Table 1 (d = 1)

def quadratic_gd_steps(kappa, epsilon):
    """``ceil(2 kappa log(1/epsilon))``: four times the steps GD with step ``1/lambda_max`` needs
    on a quadratic of condition number ``kappa`` to reduce its loss by ``epsilon``."""
    return np.ceil(2 * np.asarray(kappa) * np.log(1 / epsilon)).astype(int)


def proven_width_order(activation, lam, n):
    r"""Table 1's sufficient width up to constants, evaluated at the measured lambda (inferred
    log powers): ReLU ``lambda^-2 n^2 log n``, exp and softmax ``lambda^-2 n^2 log^2 n`` (the
    ``n^{o(1)}`` = ``e^{O(B)}`` factor set to 1)."""
    logs = np.log(n) if activation == "relu" else np.log(n) ** 2
    return n**2 * logs / lam**2


@shared_run(sizes={"quick": {"instances": 6, "max_steps": 50000}, "full": {"instances": 10, "max_steps": 50000}})
def activation_gd(run, *, activation, n, m, epsilon, step_scale="matched", input_norms=(1.0, 1.0)):
    r"""GD on a scalar-output two-layer network (``activation`` softmax / relu / exp) with symmetric
    initialization (sigma = 0.5), ``n`` samples, ``d_in = 2n``, inputs of norms drawn from
    ``input_norms``; step ``eta = 1 / (s lambda_max(H(0)))`` with ``s`` the function-space factor
    of the activation (``m`` for softmax, 1 otherwise), or ``s = 1`` for every activation with
    ``step_scale="unmatched"``.  The run lasts ``quadratic_gd_steps(max kappa, epsilon)`` steps
    (``kappa`` the condition number of H(0) of each trial), capped at the tier's ``max_steps``, so
    that it covers every trial's ``2 kappa log(1/epsilon)`` by construction.  Records the relative
    loss, the rms movement and the condition number of H(0) per trial, and the kernel drift at
    the end."""
    from theorycheck.models import function_step_factor
    from theorycheck.optim import GD, run_trajectory

    K, d_in = run.sizes["instances"], 2 * n
    rng = run.rng("table1 data", n, input_norms)
    X = scaled_unit_inputs(rng, K, n, d_in, input_norms)
    norms = np.linalg.norm(X, axis=-1)
    require_construction((norms >= input_norms[0] - EXACT) & (norms <= input_norms[1] + EXACT),
                         f"input norms in {input_norms}")
    Y = bounded_labels(rng, K, n, 1)
    W0, A = initialization(run, d_in=d_in, d=1, m=m, K=K)
    Xt, Yt, At, W0t = (run.tensor(a) for a in (X, Y, A, W0))
    model = TwoLayerNetwork(Xt, Yt, At, activation)
    H0 = model.gram(W0t)
    lam, lam_max = extreme_eigenvalues(H0)
    scale = function_step_factor(activation, m) if step_scale == "matched" else 1.0
    steps = int(min(quadratic_gd_steps(np.max(lam_max / lam), epsilon), run.sizes["max_steps"]))
    traj = run_trajectory(GD(model, run.tensor(1.0 / (scale * lam_max))), {"W": W0t}, steps,
                          {"log_loss": model.metrics()["log_loss"]}, on_nonfinite="record")
    drift = torch.linalg.matrix_norm(model.gram(traj.W) - H0)
    rms = neuron_norms(traj.W - W0t).pow(2).mean(1).sqrt()
    return {"X": X, "rel_loss": np.exp(traj["log_loss"]) / (0.5 * np.sum(Y**2, axis=(1, 2))),
            "rms_movement": rms.cpu().numpy(), "kernel_drift": drift.cpu().numpy(),
            "kappa": lam_max / lam, "lambda": lam, "diverged_at": traj.diverged_at}


# --------------------------------------------------------------------------- width map (NTK regime)

@shared_run(sizes={"quick": {"instances": 40, "n": 4, "d_in": 8, "d": 2, "steps": 100},
                   "full": {"instances": 100, "n": 4, "d_in": 8, "d": 2, "steps": 400}})
def kernel_drift_widths(run, *, widths, c=1.0):
    r"""The width map's runs: at every width m of ``widths`` (even), ``instances`` fresh instances
    (unit inputs and labels in the unit ball from stream ``("width map data", m, ...)``, the
    symmetric initialization with sigma = 0.5 from ``("width map init", m, ...)``; the sizes of
    `softmax_gd`'s quick tier) and ``steps`` steps of GD on the softmax network with ``eta = c /
    (m lambda_max(H(0)))`` per instance, the kernel drift ``||H(t) - H(0)||_F`` at every step
    (`kernel_metrics`).  Returns ``{m: {"lambda", "lambda_max", "drift" (max over t <= steps),
    "rel_loss" (after the run), "finite"}}``, numpy per instance."""
    from theorycheck.optim import GD, run_trajectory

    s = run.sizes
    K, n, d_in, d = s["instances"], s["n"], s["d_in"], s["d"]
    out = {}
    for m in widths:
        rng = run.rng("width map data", m, n, d_in, d)
        X, Y = unit_inputs(rng, K, n, d_in), bounded_labels(rng, K, n, d)
        W0, A = symmetric_initialization(run.rng("width map init", m, n, d_in, d), K, d_in, d, m, SIGMA)
        require_pairing(W0, A)
        Xt, Yt, At, W0t = (run.tensor(a) for a in (X, Y, A, W0))
        model = TwoLayerNetwork(Xt, Yt, At)
        H0 = model.gram(W0t)
        lam, lam_max = extreme_eigenvalues(H0)
        drift = {"kernel_drift": kernel_metrics(model, H0)["kernel_drift"]}
        traj = run_trajectory(GD(model, run.tensor(c / (m * lam_max))), {"W": W0t}, s["steps"], drift,
                              on_nonfinite="record")
        F = outputs(Xt, traj.params["W"], At).cpu().numpy()
        out[m] = {"lambda": lam, "lambda_max": lam_max, "drift": traj["kernel_drift"].max(0),
                  "rel_loss": np.sum((F - Y) ** 2, axis=(1, 2)) / np.sum(Y**2, axis=(1, 2)),
                  "finite": traj.diverged_at < 0}
    return out
