"""glls24: the kernel under perturbations of the weights (Lemma 5.1), the one-step kernel
dynamics behind Lemma E.1, and the gradient bound of Lemma D.1."""
import numpy as np
import torch

from claims.glls24.kernel import PERTURBATION_RADII, adversarial_kernel_change, width_slope_interval
from claims.glls24.setup import (
    INITIALIZATIONS,
    SIGMA,
    constructor_probe,
    decide_unit_ball,
    initialization,
    probe_regression_data,
    regression_instance,
    regression_shape,
    softmax_gd,
)
from theorycheck import Control, TailBound, claim
from theorycheck.models import loss_gradient, neuron_norms, ntk_gram, outputs

A_SCALE = 100.0
"""Lemma D.1's control runs GD with the second layer scaled by this factor (the lemma assumes
|a_{l,r}| <= 1).  The ratio grows about linearly in the factor; it must exceed the sharp bound's
slack, which widens with the sizes (the Cauchy-Schwarz step over n d terms), so it was raised from
10 after the full tier's run at a310eb8 (see docs/claims/glls24.md): chosen after seeing data."""

BEYOND_RADII = (0.25, 0.5, 1.0)
"""The radii of Lemma 5.1's ``beyond_radius`` control: far beyond R < 0.01, where a pre-activation
moves by up to R and e^{<w, x>} is no longer linear in the displacement (e^R - 1 - R is R/2 of
R at R = 1)."""

WIDTH_SLOPE_CONFIDENCE = 0.99
"""Two-sided confidence level of the slope of ``log(change / R)`` against ``log m``."""

WIDTH_SLOPE_LIMIT = 1 / 3
"""``|slope| <= 1/3``: at most a factor 2 per eightfold width (the spec's "within a factor 2" from
the middle to the largest width, 8 times wider)."""


@claim("glls24.lem5_1.kernel_perturbation", source="Lemma 5.1 = Lemma B.2; Remark 5.2",
       statement="If every neuron moves by at most R < 0.01 from an initialization whose "
                 "pre-activations are bounded by B, then ||H(W) - H(W~)||_F <= R n d e^{10B}: linear "
                 "in R and independent of m.",
       provenance="derived",
       calibration=["the width criterion (iii) was re-derived after the 20-seed sweep, where the earlier "
                    "per-instance ratio largest/middle (3 instances, factor 2) failed on seed 9 (0.45): on "
                    "seeds 1-10 the 99% interval stayed within [-0.11, 0.08]; held out on seeds 0, 11-19",
                    "the bound R n d e^{10B} holds with a margin of several orders of magnitude (recorded): "
                    "it confirms validity, not the constant"],
       controls={
           "radius_grows_with_width": Control(
               "hypothesis", breaks=["worst-case change per unit radius independent of m"],
               description="each neuron moved by R sqrt(m / m_0) instead of R (m_0 the smallest width): "
                           "the per-neuron radius is no longer bounded independently of m, and the "
                           "recomputed kernel change per unit R grows with the width"),
           "beyond_radius": Control(
               "hypothesis", breaks=["change linear in R (slope >= 0.95)", "change linear in R (slope <= 1.05)"],
               description="the probe recomputed at the radii R = 0.25, 0.5, 1 (the adversarial directions "
                           "of each width, every neuron moved exactly R): the hypothesis R < 0.01 fails, "
                           "the exponentials leave their first-order range and the change is no longer "
                           "linear in R", constants={f"R_{k}": R for k, R in enumerate(BEYOND_RADII)}),
           "bound_too_strong": Control(
               "statement", breaks=["kernel change within R n d e^{10B}"],
               description="the stronger bound ||Delta H||_F <= R / 10, which the adversarial "
                           "direction violates", constants={"divisor": 10}),
       },
       sizes={"quick": {"widths": [64, 512, 4096]}, "full": {"widths": [64, 512, 4096, 32768]}})
def test_kernel_perturbation(tc):
    r"""Lemma 5.1 (form derived, constant ``e^{10B}`` inferred): on the event ``|<w~_r, x_i>| <= B``
    (here ``B = B_emp``, the event itself), every ``W`` with ``||w_r - w~_r|| <= R`` has ``||H(W) -
    H(W~)||_F <= R n d e^{10B}`` -- deterministically (Remark 5.2).  Random directions cancel
    (``||Delta H|| = Theta(R m^{-1/2})``) and do not probe the worst case, so the probe is the
    first-order adversarial direction ``p_r = R g_r / ||g_r||``, ``g_r = grad_{w_r} <H(W~), U>`` for
    U in {I, H(W~), random symmetric}, R in {1e-4, 1e-3, 1e-2}, three widths, symmetric W~.  Pass:
    (i) the bound in every case; (ii) log-log slope of ``max_U ||Delta H||_F`` vs R in [0.95, 1.05]
    for every width and seed (linear in R); (iii) m-independence: the slope of ``log(max_U
    ||Delta H||_F / R)`` against ``log m``, pooled over the widths and 10 instances (data and
    initialization), has its 99% confidence interval (Student t, `width_slope_interval`) inside
    ``[-1/3, 1/3]``, i.e. at most a factor 2 per eightfold width (the spec's factor 2 from the middle
    to the largest width).  First order, ``Delta H = (1/m) sum_r d(J_r J_r^T)`` with m terms of size
    O(R) aligned by the adversarial direction, so the slope is 0.  Precondition: every neuron
    moves at most R (the lemma's hypothesis, per neuron and independent of m): per unit R each
    neuron moves ``radius_scale`` by construction (unit directions scaled), so it is decided on the
    configuration before the probes (seed-independent) and the shared run checks the drawn
    displacements against it exactly.  The probe of each
    width is the shared run `adversarial_kernel_change` (sizes n, d_in, d, seeds there).  Controls:
    the probe recomputed at ``BEYOND_RADII`` = 0.25, 0.5, 1 (runs of their own, every neuron moved
    exactly R: the hypothesis R < 0.01 fails, the exponentials leave their first-order range and
    the change is no longer linear in R -- the lemma's reason for R small); each neuron moved by
    ``R sqrt(m / m_0)`` (runs of their own: the hypothesis fails and the recomputed change per
    unit R grows like ``m^{1/2}``; borderline, since by (ii)'s linearity this growth is the
    claim's own first-order change rescaled); the stronger bound ``R / 10`` (a discrimination
    check)."""
    widths = tc.sizes["widths"]
    grow = tc.control == "radius_grows_with_width"
    radii = BEYOND_RADII if tc.control == "beyond_radius" else tuple(PERTURBATION_RADII)
    tc.precondition.at_most("radius below 0.01", max(radii), 0.01)
    scales = {m: float(np.sqrt(m / widths[0])) if grow else 1.0 for m in widths}
    tc.precondition.at_most("every neuron moves at most R (per unit R)", list(scales.values()), 1.0,
                            margin=tc.tol("exact"))
    ratios, slopes, bound_ratio, random_ratio = {}, [], [], []
    for m in widths:
        r = tc.use(adversarial_kernel_change, m=m, radius_scale=scales[m],
                   **({"radii": radii} if tc.control == "beyond_radius" else {}))
        change = r["change"]
        random_ratio.append(r["random_change_per_radius"])
        bound = np.asarray(radii)[:, None] * r["n"] * r["d"] * np.exp(10 * r["B"])[None]
        if tc.control == "bound_too_strong":
            bound = np.asarray(radii)[:, None] / 10 * np.ones_like(bound)
        bound_ratio.append(change / bound)
        ratios[m] = change[-1] / radii[-1]
        slopes.extend(np.polyfit(np.log(radii), np.log(change[:, k]), 1)[0] for k in range(change.shape[1]))
    tc.record("worst_change_per_radius", {str(m): v for m, v in ratios.items()})
    tc.record("random_direction_change_per_radius", random_ratio)
    tc.record("change_over_bound_max", float(np.max(bound_ratio)))
    tc.conclusion.at_most("kernel change within R n d e^{10B}", np.ravel(bound_ratio), 1.0)
    tc.conclusion.at_least("change linear in R (slope >= 0.95)", slopes, 0.95)
    tc.conclusion.at_most("change linear in R (slope <= 1.05)", slopes, 1.05)
    fit = width_slope_interval(ratios, WIDTH_SLOPE_CONFIDENCE)
    tc.record("width_slope_of_change_per_radius", fit)
    tc.conclusion.at_most("worst-case change per unit radius independent of m",
                          np.abs([fit["lower"], fit["upper"]]), WIDTH_SLOPE_LIMIT)
    tc.curve("worst ||Delta H||_F / R", "measured (seed 0)", widths, [ratios[m][0] for m in widths],
             xscale="log", yscale="log")


@claim("glls24.gd.one_step_kernel_dynamics", source="Lemma E.1 (structure); Fact A.3",
       statement="||F(t+1) - Y||^2 = ||F(t) - Y||^2 - 2 <F(t) - Y, F(t) - F(t+1)> + ||F(t+1) - F(t)||^2, "
                 "and the first-order change of the loss is -2 eta m e^T H(t) e, with an O(eta^2) remainder.",
       provenance="derived",
       calibration=["the slope window is the spec's, checked on seeds 1, 2 and 0 (not re-chosen on seeds 1-10); "
                    "at c = 1e-4 the relative remainder is recorded (relative_remainder; about 4e-5 at "
                    "dddadf4, an earlier note said 1e-9), far above round-off and far below the 1e-3 bound"],
       controls={"without_factor_m": Control(
           "reference", breaks=["remainder is second order in eta"],
           description="predict the first-order change as -2 eta e^T H e (the factor m dropped): "
                       "the remainder becomes first order"),
                 "random_direction_step": Control(
           "dynamics", breaks=["remainder is second order in eta"],
           description="the step taken along a fresh random direction of the gradient's norm instead of "
                       "the gradient (a draw of its own): the loss's first-order change is no longer "
                       "-2 eta m e^T H e, so the remainder is first order")},
       sizes={"quick": {"n": 4, "d_in": 8, "d": 2, "width": 512, "instances": 3},
              "full": {"n": 32, "d_in": 64, "d": 4, "width": 2**14, "instances": 3}})
def test_one_step_kernel_dynamics(tc):
    r"""One GD step from a generic point ``W = W(0) + 0.3 N(0, 1)`` with ``eta = c/(m lambda_max(H))``,
    c in {1e-1, 1e-2, 1e-3, 1e-4}.  Fact A.3 is exact: the identity holds to 1e4 unit
    round-offs of ``||F - Y||^2``.  The first-order term of ``Delta = ||F(t+1)-Y||^2 - ||F(t)-Y||^2``
    is ``-2 eta m e^T H e`` (``e = vec(F - Y)``, the factor m from ``H = J J^T / m``); pass: the
    log-log slope of ``|Delta - (-2 eta m e^T H e)|`` vs eta lies in [1.9, 2.1] for every seed, and
    at c = 1e-4 the remainder is <= 1e-3 of the first-order term (the spec's window around the
    exponent 2; the smallest c keeps the remainder above round-off).  Precondition: the point is
    generic, ``max |F(W)| >= 1e-3`` (``<a_l, S> != 0``; a magnitude spanning decades across draws:
    ``scale="log"``).  Controls: the step along a
    fresh random direction of the gradient's norm (other dynamics: the first-order term is not the
    kernel's, the remainder is first order); the prediction without the factor m (a discrimination
    check)."""
    s = tc.sizes
    X, Y = regression_instance(tc, n=s["n"], d_in=s["d_in"], d=s["d"], K=s["instances"])
    W0, A = initialization(tc, d_in=s["d_in"], d=s["d"], m=s["width"], K=s["instances"])
    W = tc.tensor(W0 + 0.3 * tc.rng("perturbation").standard_normal(W0.shape))
    Xt, Yt, At = tc.tensor(X), tc.tensor(Y), tc.tensor(A)
    H = ntk_gram(Xt, Xt, W, At)
    lam_max = torch.linalg.eigvalsh(H)[:, -1]
    F0 = outputs(Xt, W, At)
    e = (F0 - Yt).transpose(1, 2).reshape(s["instances"], -1)          # output-major vec
    first_order_kernel = s["width"] * torch.einsum("ki,kij,kj->k", e, H, e)
    if tc.control == "without_factor_m":
        first_order_kernel = first_order_kernel / s["width"]
    grad = loss_gradient(Xt, Yt, W, At)
    if tc.control == "random_direction_step":
        direction = tc.tensor(tc.rng("direction", "random step").standard_normal(W0.shape))
        grad = direction * (torch.linalg.vector_norm(grad.flatten(1), dim=1)
                            / torch.linalg.vector_norm(direction.flatten(1), dim=1))[:, None, None]
    cs = np.array([1e-1, 1e-2, 1e-3, 1e-4])
    residual, relative, identity = [], [], []
    for c in cs:
        eta = c / (s["width"] * lam_max)
        F1 = outputs(Xt, W - eta[:, None, None] * grad, At)
        new, old = (F1 - Yt).pow(2).sum((1, 2)), (F0 - Yt).pow(2).sum((1, 2))
        expanded = old - 2 * ((F0 - Yt) * (F0 - F1)).sum((1, 2)) + (F1 - F0).pow(2).sum((1, 2))
        identity.append(((new - expanded).abs() / old).cpu().numpy())
        predicted = -2 * eta * first_order_kernel
        residual.append((new - old - predicted).abs().cpu().numpy())
        relative.append(residual[-1] / predicted.abs().cpu().numpy())
    residual = np.array(residual)
    slopes = [np.polyfit(np.log(cs), np.log(residual[:, k]), 1)[0] for k in range(s["instances"])]
    tc.record("remainder_slopes", slopes)
    tc.record("relative_remainder", relative)
    tc.precondition.at_least("generic point (<a_l, S> != 0)",
                             (outputs(Xt, W, At).abs().amax((1, 2))).cpu().numpy(), 1e-3, scale="log")
    tc.conclusion.at_most("Fact A.3 identity exact", np.ravel(identity), tc.roundoff(1e4))
    tc.conclusion.at_least("remainder is second order in eta", slopes, 1.9)
    tc.conclusion.at_most("remainder is second order in eta (slope <= 2.1)", slopes, 2.1)
    tc.conclusion.at_most("remainder below 1e-3 of the first-order term at c = 1e-4", relative[-1], 1e-3)
    tc.curve("one-step remainder", "seed 0", cs, residual[:, 0], xscale="log", yscale="log")


def preactivation_allowance_units(d_in):
    """The round-off allowance of ``|<w_r(t), x_i>| / (B + R)`` against 1, in units of ``u (1 + W*)``
    (``W* = max_r max(||w_r(0)||, ||w_r(T)||)`` of the trial): ``4 (d_in + 6)`` (`PREACTIVATION_ROUNDOFF`)."""
    return 4 * (d_in + 6)


#: why "pre-activations within B + R along GD" cannot fail on the claim's runs
PREACTIVATION_ROUNDOFF = TailBound(0.0, (
    "the hypothesis holds on every run: at W(0), |<w_r(0), x_i>| <= B_emp = max(1, max |<w_r(0), x_i>|), "
    "computed by the same numpy einsum of the same arrays (identical floats, ratio B/(B + R) <= 1); at "
    "W(T), |<w_r(T), x_i>| <= |<w_r(0), x_i>| + ||w_r(T) - w_r(0)|| ||x_i|| <= B + R with R = max_r "
    "||w_r(T) - w_r(0)||.  Forward error, the stored arrays taken as exact: each dot product of length "
    "d_in errs by at most d_in u ||w_r|| (||x_i|| <= 1 + d_in u), B's by d_in u ||w_r(0)||, R by (d_in + 6)u "
    "relative (the difference, d_in squares and a root), B + R and the division by 3u: the computed "
    "ratio is at most 1 + (2 d_in W* + d_in + 23) u / (B + R) <= 1 + 4 (d_in + 6) u (1 + W*) (B >= 1), "
    "the allowance, W* = max_r max(||w_r(0)||, ||w_r(T)||) of the trial"))


@claim("glls24.lemD_1.gradient_bound", source="Lemma D.1 (and D.2)",
       statement="||Delta w_r(t)|| <= 2 max_i(m S_{i,r}(t)) sqrt(nd) ||F(t) - Y||_F <= e^{3B} sqrt(nd) "
                 "||F(t) - Y||_F whenever |<w_r(t), x_i>| <= B + R.",
       provenance="derived",
       constants={"a_scale": A_SCALE},
       calibration=["a_scale of the second-layer control raised from 10 to 100 after the full tier at "
                    "a310eb8 found the control (then a rescaling of the same points) misfiring at width "
                    "1024: chosen after seeing data; the control is now a GD run of its own",
                    "'pre-activations within B + R along GD' (true on every run by the triangle inequality; its "
                    "margin, R (1 - cos) / (B + R) at the binding pair, about 1e-4, was rejected by both shapes "
                    "and counted) is now checked against 1 plus its derived round-off allowance, 4 (d_in + 6) u "
                    "(1 + W*) (about 2e-14 at the quick tier), with the stated bound 0 (`PREACTIVATION_ROUNDOFF`). "
                    "Block 69000-69049 (50 seeds, quick): no failure, the claim's bound 0.058 -> 1.5e-17 "
                    "('2 e^{2R} <= e^B' normal at 10.8 sd); second_layer_scaled 1.7e-11"],
       controls={"second_layer_scaled": Control(
           "hypothesis", breaks=["sharp gradient bound"],
           description=f"GD run of its own (smallest width) with the second layer scaled, |a_{{l,r}}| = "
                       f"{A_SCALE:g} > 1: the bound's factor 2 (from |a_{{l,r}} - <a_l, S_i>| <= 2) no "
                       f"longer holds along the trajectory", constants={"a_scale": A_SCALE})},
       sizes={"quick": {"widths": [256, 1024, 4096]}, "full": {"widths": [1024, 4096, 16384, 65536]}})
def test_gradient_bound(tc):
    r"""Lemma D.1 (derived form): ``Delta w_r = sum_{i,l} (F_{l,i} - y_{l,i}) m S_{i,r} (a_{l,r} -
    <a_l, S_i>) x_i``, with ``|a_{l,r} - <a_l, S_i>| <= 2``, ``||x_i|| <= 1`` and Cauchy-Schwarz gives
    ``||Delta w_r|| <= 2 max_i(m S_{i,r}) sqrt(nd) ||F - Y||_F`` (sharp form); with ``m S_{i,r} <=
    e^{2(B+R)}`` and ``2 e^{2R} <= e^B`` this is ``<= e^{3B} sqrt(nd) ||F - Y||_F`` (the paper's
    form, inferred).  Measured along the shared GD runs (every width, every seed) at the
    initialization and at the last iterate, for every neuron, with the lemma's quantities taken
    from the run: ``B = B_emp(W(0)) = max(1, max |<w_r(0), x_i>|)`` (the event of Lemma B.1 Part 1)
    and ``R = max_r ||w_r(T) - w_r(0)||`` (the movement of the run; at ``W(0)`` itself the gradient
    is linear in A, so the later iterate is where the bound is tested away from that structure).
    Preconditions: the lemma's hypothesis ``|<w_r(t), x_i>| <= B + R`` at both points (true on every
    run by the triangle inequality, with this R; checked up to its round-off, an allowance derived in
    `PREACTIVATION_ROUNDOFF`), ``2 e^{2R}
    <= e^B`` (the step from the sharp to the paper's form; the lemma's ``R < 0.01`` is not met by
    every quick-tier run, and the proof needs only this), the inputs in the unit ball and
    ``|a_{l,r}| <= 1`` (the source of the factor 2).  Pass: both ratios <= 1 (proof bounds, no
    tolerance).  The control is a GD run of its own at the smallest width with the second layer
    scaled by ``A_SCALE``: the last precondition fails, and so does the sharp bound, whose factor 2
    rested on it.  The inputs' unit ball and ``|a_{l,r}| <= 1`` are properties of the construction
    (unit inputs; entries +-1 times ``a_scale``), decided on probes of the constructors before the
    runs (seed-independent); `softmax_gd` checks the drawn numbers exactly."""
    scaled = tc.control == "second_layer_scaled"
    widths, a_scale = (tc.sizes["widths"][:1], A_SCALE) if scaled else (tc.sizes["widths"], 1.0)
    n, d_in, d = regression_shape(softmax_gd.sizes_of(tc.tier))
    decide_unit_ball(tc, "inputs in the unit ball", probe_regression_data(n=n, d_in=d_in, d=d)[0])
    probes = [INITIALIZATIONS["symmetric"](constructor_probe(), 1, d_in, d, m, SIGMA)[1] for m in widths]
    tc.precondition.at_most("second-layer entries |a_{l,r}| <= 1", [a_scale * np.abs(A).max() for A in probes], 1.0)
    runs = [tc.use(softmax_gd, m=m, **({"a_scale": A_SCALE} if scaled else {})) for m in widths]
    sharp, paper_form, hypothesis, allowance, step_room = [], [], [], [], []
    for r in runs:
        X, Y, A = tc.tensor(r["X"]), tc.tensor(r["Y"]), tc.tensor(r["A"])
        n, d = r["Y"].shape[1:]
        B = r["B_emp"]
        R = np.linalg.norm(r["W_final"] - r["W0"], axis=1).max(axis=1)
        step_room.append(2 * np.exp(2 * R) / np.exp(B))
        largest = np.maximum(*(np.linalg.norm(W, axis=1).max(axis=1) for W in (r["W0"], r["W_final"])))
        for W_np in (r["W0"], r["W_final"]):
            allowance.append(tc.roundoff(preactivation_allowance_units(r["X"].shape[2])) * (1 + largest))
            W = tc.tensor(W_np)
            preactivation = np.abs(np.einsum("kne,kem->knm", r["X"], W_np)).max(axis=(1, 2))
            hypothesis.append(preactivation / (B + R))
            lhs = neuron_norms(loss_gradient(X, Y, W, A))                                 # (K, m)
            residual = torch.linalg.vector_norm((outputs(X, W, A) - Y).flatten(1), dim=1)[:, None]
            S = torch.softmax(torch.einsum("kne,kem->knm", X, W), -1)
            peak = (r["m"] * S).amax(1)                                                      # (K, m)
            sharp.append((lhs / (2 * peak * np.sqrt(n * d) * residual)).amax(1).cpu().numpy())
            paper_form.append((lhs / (tc.tensor(np.exp(3 * B))[:, None] * np.sqrt(n * d) * residual))
                              .amax(1).cpu().numpy())
    tc.precondition.at_most("pre-activations within B + R along GD", np.ravel(hypothesis), 1 + np.ravel(allowance),
                            tail_bound=None if scaled else PREACTIVATION_ROUNDOFF)
    tc.precondition.at_most("2 e^{2R} <= e^B (sharp to paper form)", np.ravel(step_room), 1.0)
    tc.record("sharp_ratio", sharp)
    tc.record("paper_form_ratio", paper_form)
    tc.conclusion.at_most("sharp gradient bound", np.ravel(sharp), 1.0)
    tc.conclusion.at_most("e^{3B} gradient bound", np.ravel(paper_form), 1.0)
