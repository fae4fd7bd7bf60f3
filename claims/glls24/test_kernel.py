"""glls24: the network's gradient, its NTK Gram matrix, the symmetric initialization and the
infinite-width limit of the kernel (Eq. (2), Defs. 3.3, 3.6, 3.7)."""
import numpy as np
import scipy.stats
from scipy.spatial.distance import pdist
import torch

from claims.glls24.kernel import gram_frozen_normaliser
from claims.glls24.setup import (
    SIGMA,
    decide_pairing,
    decide_unit_ball,
    duplicate_first_input,
    extreme_eigenvalues,
    generic_point,
    initialization,
    probe_regression_data,
    regression_instance,
    unit_inputs,
)
from theorycheck import Calibrated, Control, claim
from theorycheck.models import TwoLayerNetwork, loss_gradient, ntk_gram, ntk_gram_autograd, outputs
from theorycheck.optim import relative_error
from theorycheck.solvers import exp_limit_kernel, output_kernel, softmax_limit_kernel
from theorycheck.tails import TailBound, gaussian_condition_tail, sphere_cap_tail
from theorycheck.tolerance import unit_roundoff

SMALL = {"n": 4, "d_in": 8, "d": 2, "width": 64, "instances": 3}
LARGE = {"n": 32, "d_in": 64, "d": 4, "width": 4096, "instances": 2}

INIT_SCALE = 2.0
"""The infinite-width limit's control draws W(0) with this multiple of sigma."""
ZERO_OUTPUT = 1e3
"""Def. 3.7's outputs count as zero up to ``ZERO_OUTPUT u m``."""


DISTINCT = 1e-6
"""Inputs count as distinct (and non-zero) at distances (and norms) of at least ``DISTINCT``."""


def input_separation(X) -> np.ndarray:
    """The pairwise distances of the inputs ``X`` (n, d_in) (`scipy.spatial.distance.pdist`) and
    their norms, one array: "pairwise distinct and non-zero" is its minimum."""
    return np.concatenate([pdist(X), np.linalg.norm(X, axis=-1)])


def distinct_inputs_tail(n, d_in) -> TailBound:
    """The stated bound of "inputs pairwise distinct and non-zero" on `unit_inputs` (uniform unit
    vectors: norms 1 up to round-off): two of the n inputs within ``DISTINCT`` (plus the
    distance's round-off) of each other, the spherical cap's probability over the pairs."""
    pairs = n * (n - 1) // 2
    return TailBound(sphere_cap_tail(d_in, pairs, DISTINCT * (1 + 1e-6)),
                     f"two of {n} uniform unit vectors of R^{d_in} within {DISTINCT:g}: the spherical "
                     f"cap over {pairs} pairs (tails.sphere_cap_tail)")


LIMIT_KERNEL_FLOOR = 1e-8
"""lambda_min of the limit kernel counts as positive from ``LIMIT_KERNEL_FLOOR lambda_max`` on."""


def limit_kernel_positive_tail(n, d_in) -> TailBound:
    r"""The stated bound of "lambda_min of the limit kernel positive" on `unit_inputs` ``X = D^{-1}
    G`` (``G`` an n x d_in Gaussian matrix, n <= d_in, ``D`` its row norms): ``K_sigma = sum_k
    sigma^{2k}/k! (X X^T)^{o(k+1)}`` with every Hadamard power PSD (Schur), so ``lambda_min(K_sigma)
    >= sigma_min(X)^2``; ``lambda_max(K_sigma) <= tr K_sigma = n e^{sigma^2}``; and ``sigma_min(X)
    >= sigma_min(G) / max_i ||g_i|| >= 1 / kappa(G)`` (``sigma_max(G) >= max_i ||g_i||``).  The
    ratio is below twice the floor (the eigensolver's round-off, about ``n u``, is far below it)
    only where ``kappa(G) > (2 LIMIT_KERNEL_FLOOR n e^{sigma^2})^{-1/2}``: Chen & Dongarra's tail."""
    x = (2 * LIMIT_KERNEL_FLOOR * n * np.exp(SIGMA**2)) ** -0.5
    return TailBound(gaussian_condition_tail(n, d_in, float(x)),
                     f"lambda_min/lambda_max of K_sigma >= 1/(kappa(G)^2 n e^(sigma^2)) for unit inputs "
                     f"x_i = g_i/||g_i||: below 2 x {LIMIT_KERNEL_FLOOR:g} only where kappa({n} x {d_in} "
                     f"Gaussian) > {x:.3g} (Chen & Dongarra 2005)")


WIDTH_DECAY = "each instance's error decays like m^-1/2 (binomial)"
WIDTH_SLOPE_WINDOW = (-0.65, -0.35)
"""The spec's window around the CLT exponent -1/2 of ``||H(0) - H_inf||_F`` against m."""
WIDTH_DECAY_RATE = 0.7
"""Null rate of `WIDTH_DECAY`: each instance's own slope lies in `WIDTH_SLOPE_WINDOW` with
probability at least this (its `Calibrated` record)."""
WIDTH_DECAY_ALPHA = 1e-4
"""Level of `WIDTH_DECAY`'s exact binomial test (from the claim's 3e-4 budget)."""


def instance_width_slopes(widths, errors):
    r"""Per instance k the least-squares slope of ``log errors[j][k]`` against ``log widths[j]``
    (``errors``: one (K,) array per width; instance k at width j an independent draw, so the K
    slopes are i.i.d. given the data)."""
    x = np.log(np.asarray(widths, float))[:, None]
    y = np.log(np.stack([np.asarray(e, float) for e in errors]))
    xc = x - x.mean()
    return np.sum(xc * (y - y.mean(0)), axis=0) / np.sum(xc**2)


PREACTIVATION_CAP = 100.0
"""The bound on ``|w_r^T x|`` (unit inputs) that the round-off bounds of Def. 3.7's outputs use:
exceeded only where ``||w_r|| > PREACTIVATION_CAP``, a chi-square tail (`preactivation_tail`)."""


def preactivation_tail(d_in, units, cap) -> float:
    """P[some of ``units`` columns w_r ~ N(0, SIGMA^2 I_{d_in}) has ||w_r|| > ``cap``] (union bound):
    ``|w_r^T x| <= ||w_r||`` for unit inputs."""
    return min(1.0, units * float(scipy.stats.chi2.sf((cap / SIGMA) ** 2, d_in)))


def paired_output_error(width, cap) -> float:
    r"""A bound on ``|F(W(0), x)_l| / u`` for unit ``x`` at Def. 3.7's pairing when every
    ``|w_r^T x| <= cap``: ``F_l = m sum_r S_r a_{l,r}`` cancels exactly in exact arithmetic (the
    pairs' weights equal, their signs opposite); the computed softmax weights carry relative errors
    of at most ``(2 cap + 4) u`` (the exponent's argument up to ``2 cap``) and the sum of ``m``
    terms ``gamma_m sum_r S_r |a_{l,r}| <= 1.01 m u`` (signs of modulus 1, weights summing to 1),
    in any summation order: ``|F| <= m u (1.01 m + 2 cap + 4)``."""
    return width * (1.01 * width + 2 * cap + 4)


def paired_outputs_roundoff(d_in, width, instances) -> TailBound | None:
    """The stated bound of "outputs vanish" (allowance ``ZERO_OUTPUT u m``): `paired_output_error`
    is within it wherever every ``|w_r^T x| <= (ZERO_OUTPUT - 1.01 m - 4) / 2``, which fails with
    the probability `preactivation_tail`; ``None`` where no such cap exists (wide networks: the
    worst case exceeds the allowance, and the margin is measured)."""
    cap = (ZERO_OUTPUT - 1.01 * width - 4) / 2
    if cap <= 0:
        return None
    return TailBound(preactivation_tail(d_in, width * instances, cap),
                     f"F's paired terms cancel exactly; computed, |F| <= m u (1.01 m + 2 c + 4) <= "
                     f"{ZERO_OUTPUT:g} u m while every |w_r^T x| <= c = {cap:.3g} (m = {width}), which fails "
                     f"only where some ||w_r|| > c (chi-square tail)")


def label_ball_tail(n, d_in, d, width, instances) -> TailBound:
    r"""The stated bound of "initial residual at most sqrt(n)": ``||F(0) - Y||_F <= ||Y||_F +
    ||F(0)||_F`` with ``||F(0)||_F <= sqrt(n d) u paired_output_error(m, PREACTIVATION_CAP)``
    (unless some ``||w_r|| > PREACTIVATION_CAP``, `preactivation_tail`), and ``y_i = u_i
    g_i/||g_i||``, ``u_i ~ Unif[0, 1]`` (`bounded_labels`), so the computed residual exceeds
    sqrt(n) only if ``sum_i u_i^2 >= n (1 - 2 delta)`` with ``delta`` that output bound over
    sqrt(n) plus ``(n d + 4) u`` (the labels' normalization and the norm's own round-off), which
    needs every ``u_i >= 1 - 2 n delta``: probability ``(2 n delta)^n`` a trial, union over the
    trials."""
    u = unit_roundoff("float64")
    delta = (np.sqrt(d) * paired_output_error(width, PREACTIVATION_CAP) + n * d + 4) * u
    labels = instances * min(1.0, 2 * n * delta) ** n
    return TailBound(float(min(1.0, labels + preactivation_tail(d_in, width * instances, PREACTIVATION_CAP))),
                     f"||Y||_F within {2 * delta:.2g} of sqrt(n) needs all {n} label radii u_i ~ Unif[0, 1] "
                     f"within 2 n delta of 1, (2 n delta)^n per trial over {instances} trials, or a "
                     f"pre-activation beyond {PREACTIVATION_CAP:g}")


@claim("glls24.eq2.gradient_closed_form", source="Eq. (2), Definition 3.3, Claim 3.4",
       statement="dF_l/dw_r = m <v_{l,r}, S> S_r x and dL/dw_r = sum_{i,l} (F_{l,i} - y_{l,i}) "
                 "m <v_{l,r}, S_i> S_{i,r} x_i; the neuron gradients sum to zero.",
       provenance="derived",
       nature="identity",
       single_evidence="an identity of the network's derivative, true at every W, X, Y, A: no change of "
                       "data, initialization or dynamics can break it, so the only recomputation is "
                       "another reference program for the derivative (autograd here; the control's "
                       "closed form without the normaliser's derivative)",
       controls={"without_mean_term": Control(
           "reference", breaks=["closed form equals autograd"],
           description="the closed form with a_{l,r} in place of a_{l,r} - <a_l, S> (the softmax "
                       "normaliser's derivative dropped), wrong at a generic point")},
       sizes={"quick": SMALL, "full": dict(LARGE, width=2**14)})
def test_gradient_closed_form(tc):
    r"""The gradient of ``L = 1/2 ||F - Y||_F^2`` in closed form, ``Delta w_r = sum_{i,l}
    (F_{l,i} - y_{l,i}) m S_{i,r} (a_{l,r} - <a_l, S_i>) x_i`` (`loss_gradient`), against
    ``torch.func.grad`` of the loss written plainly, at the generic point ``W(0) + 0.3 N(0,1)``
    (at ``W(0)`` itself ``<a_l, S> = 0`` and the mean term is invisible).  Pass: relative
    Frobenius error <= 1e4 unit round-offs per trial, and ``||sum_r Delta w_r|| <= 1e4 u
    ||Delta W||_F`` (shift invariance of the softmax).  The tolerance is round-off of sums of
    O(m n d) terms.  The control drops the mean term.  Precondition: inputs and labels in the unit
    ball, a property of the data's construction decided on its probe before any draw
    (`probe_regression_data`; the drawn data are checked exactly by `regression_instance`)."""
    s = tc.sizes
    decide_unit_ball(tc, "inputs and labels in the unit ball", *probe_regression_data(n=s["n"], d_in=s["d_in"], d=s["d"]))
    X, Y, W0, W, A = generic_point(tc, s)
    model = TwoLayerNetwork(X, Y, A)
    auto = torch.func.grad(lambda w: model.reference_loss({"W": w}).sum())(W)
    closed = loss_gradient(X, Y, W, A)
    if tc.control == "without_mean_term":
        E = outputs(X, W, A) - Y
        S = torch.softmax(torch.einsum("kne,kem->knm", X, W), -1)
        closed = torch.einsum("knd,knr,kdr,kne->ker", E, s["width"] * S, A, X)
    err = relative_error(closed, auto).cpu().numpy()
    tc.record("relative_error", err)
    tc.conclusion.at_most("closed form equals autograd", err, tc.roundoff(1e4))
    shift = (torch.linalg.vector_norm(closed.sum(-1), dim=1) / torch.linalg.vector_norm(closed.flatten(1), dim=1))
    tc.conclusion.at_most("neuron gradients sum to zero", shift.cpu().numpy(), tc.roundoff(1e4))


@claim("glls24.def3_6.kernel_is_scaled_jacobian_gram", source="Definition 3.6",
       statement="The block formula of H(W) equals J J^T / m (J the Jacobian of vec F in W); H is "
                 "symmetric positive semi-definite.",
       provenance="derived",
       nature="identity",
       single_evidence="an identity of the network's derivative (H = J J^T / m by definition of the "
                       "closed form), true at every W, X, A: no perturbation of data or dynamics can "
                       "break it; the control swaps the reference program (autograd on the network with "
                       "its normaliser frozen)",
       controls={"frozen_normaliser": Control(
           "reference", breaks=["closed form equals J J^T / m"],
           description="the reference Gram (1/m) J J^T recomputed by autograd on the network with its "
                       "softmax normaliser held fixed: the same outputs, a Jacobian without the "
                       "normaliser's derivative, which the closed form contains")},
       sizes={"quick": SMALL, "full": dict(LARGE, width=2**12)})
def test_kernel_is_scaled_jacobian_gram(tc):
    r"""``[H_{l1,l2}]_{ij} = (1/m) x_i^T x_j sum_r (m S_{i,r} <v_{l1,r}, S_i>)(m S_{j,r}
    <v_{l2,r}, S_j>)`` (`ntk_gram`, closed form) against ``(1/m) J J^T`` with ``J`` from
    ``torch.func.jacrev`` (`ntk_gram_autograd`), at ``W(0)`` and at a generic point.  Pass:
    relative Frobenius error <= 1e4 unit round-offs; ``lambda_min(H) >= -1e4 u ||H||`` (PSD up
    to round-off of the eigen-solver; a ratio to a round-off floor spanning decades across draws:
    ``scale="log"``).  An identity of the network's derivative (nature "identity"):
    it holds for every W, X, A, so no perturbation of data or dynamics can break it; the control
    recomputes the reference Jacobian by autograd on the network with the softmax normaliser held
    fixed (`gram_frozen_normaliser`), which differs from the true Jacobian by the normaliser's
    derivative: equal at ``W(0)`` (where ``<a_l, S> = 0``), different at the generic point."""
    s = tc.sizes
    X, Y, W0, W, A = generic_point(tc, s)
    errors, lowest = [], []
    for point in (W0, W):
        reference = ntk_gram_autograd(X, X, point, A)
        closed = ntk_gram(X, X, point, A)
        if tc.control == "frozen_normaliser":
            reference = gram_frozen_normaliser(X, point, A)
        errors.append(relative_error(closed, reference).cpu().numpy())
        lam_min, lam_max = extreme_eigenvalues(closed)
        lowest.append(lam_min / lam_max)
    tc.record("relative_error_init_generic", errors)
    tc.conclusion.at_most("closed form equals J J^T / m", np.array(errors), tc.roundoff(1e4))
    tc.conclusion.at_least("H is positive semi-definite", np.array(lowest), -tc.roundoff(1e4), scale="log")


@claim("glls24.def3_7.symmetric_init_zero_output", source="Definition 3.7; Lemma D.3",
       statement="Under the symmetric initialization F(W(0), x, A) = 0 for every x, hence "
                 "||F(0) - Y||_F = ||Y||_F <= sqrt(n).",
       provenance="derived",
       controls={"independent_init": Control(
           "hypothesis", breaks=["outputs vanish at initialization"],
           description="all m columns drawn i.i.d. (not paired): max |F(W(0), x)| = Theta(sqrt m)")},
       sizes={"quick": dict(SMALL, n_test=100), "full": dict(LARGE, n_test=1000)})
def test_symmetric_init_zero_output(tc):
    r"""Def. 3.7 pairs the neurons, ``w_{2r} = w_{2r+1}``, ``a_{l,2r} = -a_{l,2r+1}``, so the
    softmax weights of each pair are equal and ``m <a_l, S> = 0`` exactly up to round-off.
    Measure ``max_{l,x} |F(W(0), x)_l|`` over the training inputs and ``n_test`` fresh unit
    inputs.  Pass: <= ``ZERO_OUTPUT u m`` (``m`` terms of size ``m S_r = O(1)`` summed; the
    cancellation is exact in exact arithmetic), and ``||F(0) - Y||_F <= sqrt(n)``.  The paper
    recalls Lemma D.3 as ``O(sqrt(nd))``; the sharper ``sqrt(n)`` holds with ``||y_i|| <= 1``.
    Both are facts of every draw up to proven round-off, so both state their bounds
    (`paired_outputs_roundoff`, `label_ball_tail`); the outputs' scale is the log (0 or round-off
    here, ``Theta(sqrt m)`` under the control, against a tolerance of ``1e-11``).  The control draws
    the columns i.i.d.: the pairing precondition fails and the outputs are ``Theta(sqrt m)``.  The
    pairing is a property of the constructor, decided on its probe before the draws
    (`decide_pairing`); the drawn symmetric weights are checked exactly (`initialization`)."""
    s = tc.sizes
    init = "independent" if tc.control == "independent_init" else "symmetric"
    decide_pairing(tc, [(s["d_in"], s["d"], s["width"])], init)
    X, Y = regression_instance(tc, n=s["n"], d_in=s["d_in"], d=s["d"], K=s["instances"])
    W0, A = initialization(tc, d_in=s["d_in"], d=s["d"], m=s["width"], K=s["instances"], init=init)
    X_all = np.concatenate([X, unit_inputs(tc.rng("test"), s["instances"], s["n_test"], s["d_in"])], axis=1)
    F = outputs(tc.tensor(X_all), tc.tensor(W0), tc.tensor(A)).cpu().numpy()
    peak = np.abs(F).max(axis=(1, 2))
    tc.record("max_abs_output", peak)
    claim_case = tc.control is None
    tc.conclusion.at_most("outputs vanish at initialization", peak, tc.roundoff(ZERO_OUTPUT * s["width"]),
                          scale="log",
                          tail_bound=paired_outputs_roundoff(s["d_in"], s["width"], s["instances"])
                          if claim_case else None)
    residual0 = np.linalg.norm((F[:, : s["n"]] - Y).reshape(s["instances"], -1), axis=1)
    tc.conclusion.at_most("initial residual at most sqrt(n)", residual0, np.sqrt(s["n"]),
                          tail_bound=label_ball_tail(s["n"], s["d_in"], s["d"], s["width"], s["instances"])
                          if claim_case else None)


@claim("glls24.def3_6.infinite_width_limit", source="Definition 3.6 (limit derived, not in the paper)",
       statement="H(0) -> I_d (x) K_sigma, K_sigma(x, x') = <x, x'> exp(sigma^2 <x, x'>), with rms "
                 "fluctuation Theta(m^{-1/2}); lambda_min(I_d (x) K_sigma) > 0 for distinct non-zero inputs.",
       provenance="derived",
       calibration=["the slope window is the spec's, checked on seeds 1, 2 and 0 (not re-chosen on seeds 1-10)",
                    "full tier: instances 5 -> 12 (2026-11-29).  With 5 the exact binomial at level 1e-4 "
                    "cannot reject (0.3^5 = 2.4e-3 > 1e-4): the width decay could not fail there, and on "
                    "the full-tier block 86000-86009 both controls misfired on 10 of 10 seeds (they broke "
                    "only the 20% closeness).  With 12 it rejects at 1 or fewer in the window, where the "
                    "controls put the slopes near 0.  The count follows from the level, not from seeds.",
                    Calibrated(
           decision=WIDTH_DECAY, threshold=WIDTH_DECAY_RATE,
           calibration_seeds="75000-75049", validation_seeds="75500-75549",
           how="the rate: the one-sided 99.9% Clopper-Pearson lower bound of the per-instance rate of a slope "
               "in [-0.65, -0.35] over the calibration block's 1000 instances (759 in the window, lower "
               "bound 0.715; instance slopes -0.495 +- 0.128), rounded down to 0.05; level 1e-4 from the "
               "claim's budget (the test rejects at 5 or fewer of 20). Replaces one slope of the rms over "
               "the instances, Cantelli-bounded at 3.4e-2 on 61000-61049 (its margins not normal). "
               "The window is the spec's, unchanged. Controls on the calibration block: per-instance rates "
               "0 (exp_network_limit) and 0.002 (init_scale_doubled). Validation block: 745 of 1000 instances "
               "in the window (99.9% lower bound 0.700), least count per seed 10 of 20, no claim failure; "
               "pooled trials (dispersion p 0.017) bound the decision at 1.6e-5, the claim at 2.8e-5; "
               "controls' misses 1.1e-5 and 1.2e-4")],
       controls={"exp_network_limit": Control(
           "reference", breaks=[WIDTH_DECAY],
           description="the exp network's limit <x,x'> exp(sigma^2 |x + x'|^2 / 2) as reference: off "
                       "by the factor e^{sigma^2} for unit inputs, an error that does not decay"),
                 "init_scale_doubled": Control(
           "hypothesis", breaks=[WIDTH_DECAY],
           description="W(0) drawn with standard deviation 2 sigma (initializations of its own) while the "
                       "limit keeps sigma: H(0) converges to I_d (x) K_{2 sigma}, so the error to "
                       "I_d (x) K_sigma stops decaying", constants={"init_scale": INIT_SCALE}),
                 "duplicate_input": Control(
           "hypothesis", breaks=["lambda_min of the limit kernel positive"],
           description="x_2 := x_1: the inputs are not distinct and lambda_min(H_inf) = 0")},
       sizes={"quick": {"n": 4, "d_in": 8, "d": 2, "instances": 20, "widths": [256, 1024, 4096, 16384]},
              "full": {"n": 32, "d_in": 64, "d": 4, "instances": 12, "widths": [2**10, 2**12, 2**14, 2**16, 2**18]}})
def test_infinite_width_limit(tc):
    r"""Derived limit (spec, not in the paper): ``alpha(x)/m -> exp(sigma^2 |x|^2/2)``, so
    ``m S_r(x) -> exp(w_r^T x - sigma^2|x|^2/2)``, ``E exp(w^T (x + x')) = exp(sigma^2 |x+x'|^2/2)``,
    ``<a_l, S> = 0`` at ``W(0)`` and off-diagonal output blocks average to 0: ``H(0) -> H_inf =
    I_d (x) K_sigma`` (`softmax_limit_kernel`).  One data set, ``instances`` independent symmetric
    initializations per width, sigma = 0.5.  Pass: (i) each instance's own log-log slope of
    ``||H(0) - H_inf||_F`` against m (instance k at every width: independent draws, so the slopes
    are i.i.d.) lies in the spec's window [-0.65, -0.35] around the CLT rate -1/2 with probability
    at least `WIDTH_DECAY_RATE`: an exact binomial test over the instances at level
    `WIDTH_DECAY_ALPHA` (the slope of the rms over instances is recorded); (ii) at the largest width every seed's
    ``lambda_min(H(0))`` lies within 20% of ``lambda_min(H_inf)``; (iii) ``lambda_min(H_inf) >=
    1e-8 ||H_inf||`` (positive: K_sigma is a power series in <x, x'> with positive coefficients
    and no constant term; its stated bound, `limit_kernel_positive_tail`, from the Gaussian
    condition number of the inputs).  Preconditions: inputs pairwise distinct and non-zero (a property of
    the construction, decided first on its probe; on the drawn inputs with its stated bound
    `distinct_inputs_tail`, wherever the inputs are the construction's); the entries of
    W(0) of standard deviation sigma to 10% (at least 2^13 draws each: about 20 standard
    errors).  Controls: the
    initialization drawn with ``INIT_SCALE`` sigma (its own draws; the limit's hypothesis on the
    initialization fails, the error stops decaying at the distance between the two limits);
    duplicated inputs; the exp network's limit as reference (a discrimination check)."""
    s = tc.sizes
    duplicated = tc.control == "duplicate_input"
    probe = probe_regression_data(n=s["n"], d_in=s["d_in"], d=s["d"])
    tc.precondition.at_least("the construction's inputs pairwise distinct and non-zero (probe)",
                             input_separation((duplicate_first_input(*probe) if duplicated else probe)[0][0]),
                             DISTINCT)
    X, Y = regression_instance(tc, n=s["n"], d_in=s["d_in"], d=s["d"], K=1)
    if duplicated:
        X, Y = duplicate_first_input(X, Y)
    Xt = tc.tensor(np.repeat(X, s["instances"], axis=0))
    limit = softmax_limit_kernel(Xt, Xt, SIGMA)
    if tc.control == "exp_network_limit":
        limit = exp_limit_kernel(Xt, Xt, SIGMA)
    H_inf = output_kernel(limit, s["d"])
    tc.precondition.at_least("inputs pairwise distinct and non-zero", input_separation(X[0]), DISTINCT,
                             tail_bound=None if duplicated else distinct_inputs_tail(s["n"], s["d_in"]))
    scaled = tc.control == "init_scale_doubled"
    init_sigma, init_stream = (INIT_SCALE * SIGMA, ("scale", INIT_SCALE)) if scaled else (SIGMA, ())
    rms, errors, lam0, scale_error = [], [], None, []
    for m in s["widths"]:
        W0, A = initialization(tc, d_in=s["d_in"], d=s["d"], m=m, K=s["instances"], sigma=init_sigma,
                               stream=init_stream)
        H0 = ntk_gram(Xt, Xt, tc.tensor(W0), tc.tensor(A))
        scale_error.append(abs(float(np.std(W0)) / SIGMA - 1))
        error = torch.linalg.matrix_norm(H0 - H_inf)
        errors.append(error.cpu().numpy())
        rms.append(float(error.pow(2).mean().sqrt()))
        lam0 = extreme_eigenvalues(H0)[0]
    tc.precondition.at_most("W(0) entries of standard deviation sigma (within 10%)", scale_error, 0.1)
    lam_inf, lam_inf_max = extreme_eigenvalues(H_inf[:1])
    tc.record("rms_error", dict(zip(map(str, s["widths"]), rms)))
    tc.record("lambda_min_limit", float(lam_inf[0]))
    tc.record("lambda_min_H0_largest_width", lam0)
    tc.curve("rms ||H(0) - H_inf||_F", "measured", s["widths"], rms, xscale="log", yscale="log")
    tc.curve("rms ||H(0) - H_inf||_F", "m^-1/2", s["widths"],
             rms[0] * np.sqrt(s["widths"][0] / np.asarray(s["widths"], float)), style="theory")
    slopes = instance_width_slopes(s["widths"], errors)
    tc.record("rms_error_slope", float(np.polyfit(np.log(s["widths"]), np.log(rms), 1)[0]))
    tc.record("instance_error_slopes", slopes)
    tc.conclusion.binomial(WIDTH_DECAY, (slopes >= WIDTH_SLOPE_WINDOW[0]) & (slopes <= WIDTH_SLOPE_WINDOW[1]),
                           p=WIDTH_DECAY_RATE, alpha=WIDTH_DECAY_ALPHA,
                           low_power="the level 1e-4 comes from the claim's budget; the controls that break it "
                                     "put the slopes near 0, a per-instance rate near 0, where the test rejects "
                                     "with probability 1")
    tc.conclusion.at_least("lambda_min of the limit kernel positive", lam_inf, LIMIT_KERNEL_FLOOR * lam_inf_max,
                           tail_bound=None if tc.control else limit_kernel_positive_tail(s["n"], s["d_in"]))
    tc.conclusion.at_most("lambda_min(H(0)) within 20% of the limit at the largest width",
                          np.abs(lam0 - lam_inf[0]), 0.2 * abs(lam_inf[0]))
