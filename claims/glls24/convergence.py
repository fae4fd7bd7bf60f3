r"""The decisions of glls24's GD-convergence claims (Theorem 4.2, Corollary 4.3, Lemma 5.3) on the
shared runs `softmax_gd`: the measurements per trial (contraction factor, predicted and taken
steps to `CONVERGENCE_TARGET`, the contraction envelope, the fitted log-loss slope) and the
checks they feed."""
from __future__ import annotations

import numpy as np

from claims.glls24.setup import (
    CONVERGENCE_TARGET,
    contraction_factor,
    decide_pairing,
    decide_positive_kernel,
    first_time_below,
    log_contraction,
    predicted_steps,
    regression_shape,
    relative_loss,
    softmax_gd,
)
from theorycheck.checks import fit_slope
from theorycheck.patterns import per_instance

INDUCTION_STEP = 0.01
"""The per-neuron step bound ``eta ||Delta w_r(t)|| <= 0.01`` carried by Lemma 5.3's induction."""


def control_widths(tc):
    """Every width for the claim; a control's perturbed runs need only the smallest."""
    return tc.sizes["widths"] if tc.control is None else tc.sizes["widths"][:1]


def finite_prefix(run):
    """Per trial, the last step before divergence (``steps`` when the run stayed finite)."""
    steps = len(run["t"]) - 1
    return np.where(run["diverged_at"] >= 0, run["diverged_at"] - 1, steps)


def convergence_measurements(run):
    """Per trial: contraction factor q, predicted steps to CONVERGENCE_TARGET, steps taken
    (censored at steps + 1), the run's length ``steps``, the end of the checked window (first hit of CONVERGENCE_TARGET or
    divergence), the worst slack of the envelope ``log rel(t) - t log q`` on that window from t = 1
    on, and the fitted slope of ``log rel(t)`` over its last three quarters.  At t = 0 the envelope
    is the identity ``rel(0) = 1 = q^0`` of the symmetric initialization (F(0) = 0): an atom at 0
    (up to round-off) that held the worst slack at 0 on every seed and left its margin no spread."""
    rel = relative_loss(run)
    steps = len(rel) - 1
    q = contraction_factor(run)
    predicted = predicted_steps(q, rel[0], CONVERGENCE_TARGET)
    hit = first_time_below(rel, CONVERGENCE_TARGET)
    end = np.minimum(np.minimum(hit, steps), finite_prefix(run))
    envelope, slopes = [], []
    t = np.arange(steps + 1)
    for k in range(rel.shape[1]):
        window = (t >= 1) & (t <= max(end[k], 1))
        envelope.append(np.max(np.log(rel[window, k]) - t[window] * log_contraction(q[k])))
        fit = fit_slope(t[: end[k] + 1], rel[: end[k] + 1, k], window=(end[k] / 4, end[k]),
                        x_transform="linear", y_transform="log")
        slopes.append(fit.slope)
    return {"q": q, "predicted": predicted, "hit": hit, "end": end, "envelope": np.array(envelope),
            "slope": np.array(slopes), "final": rel[-1], "steps": np.full(rel.shape[1], steps)}


def censored_count(measurements):
    """Per trial, the predicted count censored like the steps taken: the count where it lies
    within the trial's own run, else that run's length + 1 (a hit beyond the run is recorded as
    ``steps + 1``, so an uncensored count there could not be compared)."""
    steps = measurements["steps"]
    return np.where(measurements["predicted"] <= steps, measurements["predicted"], steps + 1)


def width_allows_positive_kernel(m, n, d_in, d):
    r"""``d_in m / 2 >= n d``: at a symmetric initialization the paired neurons have opposite
    Jacobian columns, so ``rank H(0) <= d_in m / 2`` and a smaller width forces ``lambda = 0``."""
    return d_in * m / 2 >= n * d


def linear_convergence_runs(tc, configs):
    """The `softmax_gd` runs of ``configs`` (the keyword arguments of each, all from the symmetric
    initialization), after the preconditions "width allows lambda > 0" and Def. 3.7's pairing are
    decided on their configurations (the overrides, else the tier's sizes of `softmax_gd`; the
    pairing on the constructor, `decide_pairing`): facts of the configuration and the
    construction, decided before any run so that they are seed-independent."""
    sizes = softmax_gd.sizes_of(tc.tier)
    shapes = [(c["m"], *regression_shape(sizes, n=c.get("n"), d_in=c.get("d_in"), d=c.get("d"))) for c in configs]
    tc.precondition.holds("width allows lambda > 0 (d_in m / 2 >= n d)",
                          [width_allows_positive_kernel(*shape) for shape in shapes])
    decide_pairing(tc, [(d_in, d, m) for m, _, d_in, d in shapes])
    return [tc.use(softmax_gd, **c) for c in configs]


ENVELOPE = "loss within the contraction envelope"
WITHIN_COUNT = "steps to epsilon at most the predicted count"
SLOPE = "log-loss slope at most log(1 - m eta lambda / 2)"
REACHES = "loss reaches epsilon within the run"


def decide_linear_convergence(tc, runs, *, instances, kernel_tail=None):
    """The decisions shared by Theorem 4.2 and Corollary 4.3 over a list of runs (after the
    width's, `linear_convergence_runs`).  The runs may differ in length (each lasts its own
    slowest trial's count): every trial is censored at its own run's length.  The final relative
    loss is compared with epsilon in the log (a loss ratio, which GD drives down by decades past
    epsilon towards the round-off floor of ``rel``).  ``kernel_tail``: the stated bound of
    "lambda_min(H(0)) > 0" where one is proved (`paired_kernel_tail`: d = 1 or 2).
    ``instances``: ``(rate, alpha, low_power)``; each of the four conclusions is decided per trial
    and accepted by the exact binomial test of ``P[it holds on a trial] >= rate`` at level
    ``alpha`` (`per_instance`: the statement "with high probability over the draw", the trials
    independent draws).  A trial whose step is beyond the theorem's range (``q <= 0``,
    `log_contraction`) meets neither the envelope nor the slope."""
    ms = [convergence_measurements(r) for r in runs]
    cat = {k: np.concatenate([m[k] for m in ms]) for k in ms[0]}
    lam = np.concatenate([r["lambda"] for r in runs])
    lam_max = np.concatenate([r["lambda_max"] for r in runs])
    tc.record("lambda_over_lambda_max", lam / lam_max)
    tc.record("steps_to_epsilon", cat["hit"])
    tc.record("predicted_steps", cat["predicted"])
    tc.record("fitted_log_loss_slope", cat["slope"])
    log_q = log_contraction(cat["q"])
    tc.record("log_contraction_factor", log_q)
    decide_positive_kernel(tc, runs, tail_bound=kernel_tail)
    tc.record("trials_with_predicted_count_beyond_run", int(np.sum(cat["predicted"] > cat["steps"])))
    count = censored_count(cat)
    rate, alpha, low_power = instances
    with np.errstate(divide="ignore"):
        final = np.log(cat["final"] / CONVERGENCE_TARGET)
    for name, values, holds in [
            (ENVELOPE, cat["envelope"], cat["envelope"] <= 1e-9),
            (WITHIN_COUNT, cat["hit"] - count, cat["hit"] <= count),
            (SLOPE, cat["slope"] - log_q, cat["slope"] <= log_q + 1e-9),
            (REACHES, final, cat["final"] <= CONVERGENCE_TARGET)]:
        per_instance(tc, name, values, holds, p=rate, alpha=alpha, low_power=low_power)
    for r in runs:
        tc.curve("relative loss", f"m={r['m']}", r["t"], relative_loss(r)[:, 0], yscale="log")
    return cat


def induction_base_case(run):
    """Per trial: Lemma 5.3's hypotheses at s = 0 -- ``w_r(0) - w_r(0) = 0 <= R`` and the loss
    bound hold trivially, the first step ``max_r eta ||Delta w_r(0)|| <= 0.01`` must be checked."""
    return run["max_step_per_neuron"][0] <= INDUCTION_STEP
