r"""jta24: the gradient correlates with the l_p-AttSVM direction inside the cone (Lemma 20,
Appendix A.3), with the exponential scale along the SVM ray.

Lemma 19 (margins in the cone) and Lemma 21 (alignment of the gradient with W) use the same
references.  Julistiono, Tarzanagh, Azizan, arXiv 2410.14581.  Reference directions: the certified
l_p-AttSVM W_mm_alpha of the tokens selected by the runs of `normalized_mirror_runs` (each run's
own p), on the runs where alpha is locally optimal (the lemma's hypothesis).
"""
import numpy as np
import torch

from theorycheck import Calibrated, Control, claim
from theorycheck.tails import TailBound
from theorycheck.models import TokenSelection
from theorycheck.optim import directional_bregman, lp_norm
from theorycheck.optim.directions import lp_unit

from .cone import (cone_constants, cone_samples, directional_roundoff, lemma19_allowances, log_correlation,
                   margin_slacks, references, support_deviation)
from .direction import DIRECTION_STEPS
from .setup import PAPER, SIZES

RADII = (2.0, 5.0, 10.0, 20.0, 50.0)
RAY = (20.0, 40.0, 80.0, 160.0)
SLOPE_WINDOW = (-1.02, -0.98)
"""The spec's window for the ray slope x ||W_mm||_p (fixed before the data)."""
SLOPE_RATE = 0.99
SLOPE_ALPHA = 0.01
"""The slope window is a binomial over the runs: P[a run's slope in SLOPE_WINDOW] >= SLOPE_RATE,
rejected at level SLOPE_ALPHA (with 16-20 runs: when 3 or more runs leave the window)."""
SLOPE_LOW_POWER = ("the runs are the locally optimal ones of the tier's 5 instances (16 to 20 a seed); the "
                   "alternative, a slope that is not -1, fails every run")
SLOPE_CAL = "91050-91099"
SLOPE_VAL = "91100-91149"


@claim(
    f"{PAPER}.lem20.gradient_correlation",
    source="Lemma 20 (Appendix A.3), generalizing Tarzanagh et al. 2023, Lemma 13",
    statement="For locally optimal alpha and W in a cone C_{p,mu,R}(W_mm_alpha) at large norm, "
              "<-grad L(W), W_mm_alpha> > 0, with an exp(-||W||_p/||W_mm||_p) scale.",
    provenance="inferred",
    controls={"lowest_tokens": Control(
        "hypothesis", breaks=["<-grad L(W), W_mm> > 0 on every cone sample"],
        description="alpha_bad = the lowest-score token of every sample (not locally optimal) "
                    "and its l_p-AttSVM")},
    calibration=["slope window [-1.02, -0.98] the spec's, fixed before the data; the spec observed "
                 "slopes -1.0003 to -1.0009 with the logistic loss",
                 "every run -> binomial over the runs (2026-11-30): over seeds 81000-81299 (5884 runs) the "
                 "slopes were -1.0005 +- 0.0003, from -1.0027 to -0.9993, none outside the window; the least "
                 "slope of a seed is skewed (Shapiro-Wilk p 6e-10), so only Cantelli bounded it (3.4e-4)",
                 Calibrated(decision="runs with ray slope x ||W_mm||_p in [-1.02, -0.98]",
                            threshold=f"P >= {SLOPE_RATE} at level {SLOPE_ALPHA}",
                            calibration_seeds=SLOPE_CAL, validation_seeds=SLOPE_VAL,
                            how="rate and level stated before the blocks; kept if the 95% Clopper-Pearson "
                                "lower bound of the per-run rate on the calibration block is >= 0.99: 985 of "
                                "985 runs in the window (17-20 a seed; slopes -1.0005 +- 0.0003, from -1.0022 "
                                "to -1.0000), bound 0.997.  Validation: 0 of 50 seeds failed, 980 of 980 runs "
                                "(from -1.0022 to -1.0000); rows 3.1e-5 on each block (pooled trials)")],
    sizes={tier: dict(SIZES[tier], steps=DIRECTION_STEPS[tier]) for tier in SIZES},
)
def test_gradient_correlation(tc):
    r"""(a) Positivity: for every run with locally optimal alpha, W = R U/||U||_p with
    U = W_mm/||W_mm||_p + s E/||E||_p, E Gaussian, s in {1e-3, 1e-2} (cone samples: their
    divergence D_psi is recorded), R in {2, 5, 10, 20, 50} ||W_mm||_p: <-grad L(W), W_mm> > 0 on
    every sample (the spec: 100% for mu <= 0.1).  (b) Scale (derived): along the ray
    W = R W_mm/||W_mm||_p the support tokens' logit gaps are R/||W_mm||_p, so
    d/dR log <-grad L, W_mm> -> -1/||W_mm||_p; the least-squares slope on R in {20, 40, 80, 160}
    ||W_mm||_p times ||W_mm||_p must lie in [-1.02, -0.98] (the spec's window, fixed before the
    data; the spec's observation is in the calibration record) on a run with probability >= 0.99,
    a binomial over the runs at level 0.01.  The limit is asymptotic: at c = R/||W_mm||_p a
    non-support token of margin 1 + delta adds a share ~exp(-delta c) of slope -(1 + delta), so the
    slope at finite c is off by up to about max_delta delta exp(-delta c) = 1/(e c) (0.018 at
    c = 20) times that token's weight relative to the support tokens': a run with delta near 1/c
    can leave the window, at a rate set by the draw of the margins, which the lemma does not
    exclude.  A non-finite slope counts as outside.  The log
    correlation comes from the log-domain gradient (exact at gaps ~160).  The control
    (hypothesis kind) uses alpha_bad = argmin_t gamma_{i,t}: the precondition (alpha locally
    optimal) fails and the correlation turns negative.
    """
    refs, p, inst, data, _ = references(tc, tc.control == "lowest_tokens")
    W, ps, insts, cone_refs = cone_samples(tc.rng("cone samples"), refs, p, inst, RADII)
    t = data.to_torch(tc.device, tc.dtype)
    model = TokenSelection(t.X[insts], t.y[insts], t.u[insts])
    W, R_ref = tc.tensor(W), tc.tensor(cone_refs)
    _, inner = log_correlation(model, W, R_ref)
    D = directional_bregman(R_ref, W, tc.tensor(ps))
    tc.record("largest cone divergence of the samples", float(D.max()))
    tc.conclusion.at_least("<-grad L(W), W_mm> > 0 on every cone sample", float(inner.min()), 1e-300)

    ray_W, ray_refs, ray_inst, scale = [], [], [], []
    for ref, pv, k in zip(refs, p, inst):
        norm = float(lp_norm(torch.as_tensor(ref)[None], pv))
        for c in RAY:
            ray_W.append(c * ref), ray_refs.append(ref), ray_inst.append(k)
        scale.append(norm)
    model = TokenSelection(t.X[ray_inst], t.y[ray_inst], t.u[ray_inst])
    logc, _ = log_correlation(model, tc.tensor(np.stack(ray_W)), tc.tensor(np.stack(ray_refs)))
    logc = logc.cpu().numpy().reshape(len(refs), len(RAY))
    scale = np.array(scale)
    slopes = np.array([np.polyfit(np.array(RAY) * scale[i], logc[i], 1)[0] * scale[i]
                       if np.all(np.isfinite(logc[i])) else np.nan for i in range(len(refs))])
    tc.record("slope x ||W_mm||_p per run", slopes)
    in_window = (slopes >= SLOPE_WINDOW[0]) & (slopes <= SLOPE_WINDOW[1])
    tc.conclusion.binomial("runs with ray slope x ||W_mm||_p in [-1.02, -0.98]", in_window, p=SLOPE_RATE,
                           alpha=SLOPE_ALPHA, low_power=SLOPE_LOW_POWER)


ALIGN_RADII = (5.0, 10.0, 20.0, 50.0)
PI = 0.05


@claim(
    f"{PAPER}.lem21.gradient_alignment",
    source="Lemma 21 (Appendix A.3), generalizing Tarzanagh et al. 2023, Lemma 14",
    statement="For every pi > 0 there is R_pi such that on C_{p,mu,R_pi}(W_mm_alpha): "
              "<-grad L(W), W/||W||_p> <= (1 + pi) <-grad L(W), W_mm_alpha/||W_mm_alpha||_p>.",
    provenance="inferred",
    controls={"lowest_tokens": Control(
        "hypothesis", breaks=["<-G, W/||W||_p> <= (1 + pi) <-G, W_mm/||W_mm||_p> on every cone sample"],
        description="alpha_bad = the lowest-score token of every sample (not locally optimal) "
                    "and its l_p-AttSVM")},
    calibration=["pi = 0.05 and R >= 5 ||W_mm||_p the spec's, fixed before the data; the spec observed "
                 "ratios <= 1.013 with the logistic loss"],
    sizes={tier: dict(SIZES[tier], steps=DIRECTION_STEPS[tier]) for tier in SIZES},
)
def test_gradient_alignment(tc):
    r"""Cone samples as in Lemma 20 (W = R U/||U||_p, U = W_mm/||W_mm||_p + s E/||E||_p,
    s in {1e-3, 1e-2}, so D_psi(W_mm/||W_mm||_p, W/||W||_p) <= 1e-2 = mu, a precondition) at
    R in {5, 10, 20, 50} ||W_mm||_p, for every run whose alpha is locally optimal, pi = 0.05 (the
    spec's test, fixed before the data).  With G = grad L(W) (the log-domain direction: the
    positive scale cancels), pass: (1 + pi) <-G, W_mm>/||W_mm||_p - <-G, W>/||W||_p >= 0 on every
    sample, relative to |<-G, W_mm>|/||W_mm||_p, with allowance tc.tol("conditioned").  The lemma's R_pi is a
    dataset constant that is lost (~ pi^-1 log(1/pi)); R >= 5 ||W_mm||_p is the spec's reading
    (the spec's observation: the calibration record; the largest ratio is recorded).  The control
    (hypothesis kind) uses alpha_bad = argmin_t gamma_{i,t}: the right side turns negative and
    (1 + pi) times it falls below the left side at every sample (the spec).
    """
    refs, p, inst, data, _ = references(tc, tc.control == "lowest_tokens")
    W, ps, insts, cone_refs = cone_samples(tc.rng("alignment samples"), refs, p, inst, ALIGN_RADII)
    t = data.to_torch(tc.device, tc.dtype)
    model = TokenSelection(t.X[insts], t.y[insts], t.u[insts])
    W, R_ref, pt = tc.tensor(W), tc.tensor(cone_refs), tc.tensor(ps)
    D = directional_bregman(R_ref, W, pt)
    tc.precondition.at_most("cone samples: D_psi(W_mm, W) <= mu = 1e-2", float(D.max()), 1e-2)
    G = model.scaled_gradient({"W": W})["W"].direction
    along_W = -(G * W).flatten(1).sum(1) / lp_norm(W, pt)
    along_mm = -(G * R_ref).flatten(1).sum(1) / lp_norm(R_ref, pt)
    slack = ((1 + PI) * along_mm - along_W) / along_mm.abs()
    tc.record("largest ratio <-G, W/||W||> / <-G, W_mm/||W_mm||>", float((along_W / along_mm).max()))
    tc.conclusion.at_least("<-G, W/||W||_p> <= (1 + pi) <-G, W_mm/||W_mm||_p> on every cone sample",
                           float(slack.min()), -tc.tol("conditioned"))


CONE_DRAWS = 200
FAR_NOISE = 0.3
IN_CONE = "directions used: in the cone D + E_D <= mu(delta)"
CONE_RATE = 0.05
r"""At least 5% of the directions drawn for the runs used lie in the cone (are used): the exact
one-sided binomial test of P >= CONE_RATE at level 1/2 rejects exactly the counts below the median
of Bin(N, 0.05), N = CONE_DRAWS times the runs used that have a non-support token: 100 at N = 2000
(the decision `at_least(kept, 100)` was).  A normal model of the count over seeds is not assured (it mixes N and
the instances' cones); as a binomial its calibration row is bounded through the draws (pooled
trials, beta-binomial where they are over-dispersed).  It is a precondition of power, not a
hypothesis of the lemma: the lemma is decided on every direction used."""
#: why "every sample used lies in the cone" cannot fail on the claim's case: it keeps exactly the
#: samples whose computed D_psi plus E_D is at most mu(delta) (the far_directions control keeps them all)
KEPT_BY_CONSTRUCTION = TailBound(0.0, "by construction: the claim's case uses exactly the directions "
                                      "whose computed D_psi(W_mm, W) plus its round-off bound E_D is at most "
                                      "mu(delta)")
#: why (12a)-(12c) and the distance bound cannot fail on the claim's case: every sample used satisfies the
#: lemma's hypothesis exactly (E_D admission), so the exact slacks are at least -d_s (0 for (12b) and the
#: distance), and the computed ones are within the forward error the allowances add
LEMMA19_ROUNDOFF = TailBound(0.0, (
    "a sample is used only when its computed D + E_D <= mu(delta), E_D bounding the computed D's error "
    "(`cone.directional_roundoff`), so the exact directional divergence of the exact unit matrices is at most "
    "mu(delta) (up to the formula's few u relative, absorbed below); Lemma 13 (p >= 2: ||u - v||_p^p <= "
    "p 2^p D; p < 2: ||u - v||_2^2 <= 2D/(p - 1)) with Lemma 12 (||.||_p <= N^(1/p - 1/2) ||.||_2) gives "
    "||u - v||_p <= eps = delta/(2 A_q ||W_mm||_p), so ||W - W_mm||_p <= delta/(2 A_q) and, by Hoelder "
    "(|<F, V>| <= A_q ||V||_p for every margin and every difference of two margins of one sample), every "
    "margin and every difference moves by at most delta/2: the exact slacks of (12a) and (12c) are >= -d_s "
    "(d_s the support margins' distance to 1), of (12b) and the distance >= 0.  The computed slacks add the "
    "margins' evaluation (N products: (N + 3)u kappa each, kappa = A_q ||W_mm||_p), delta's and the "
    "constants' (relative few u, delta <= kappa), and the sample's norm (within 2(N + 8)u of ||W_mm||_p): "
    "at most d_s + 7 (N + 8)u kappa for the margins and 4 (N + 8)u ||W_mm||_p for the distance, below the "
    "allowances d_s + 8 (N + 8)u kappa and 8 (N + 8)u ||W_mm||_p (`cone.lemma19_allowances`; the "
    "accounting in docs/claims/jta24.md)"))


@claim(
    f"{PAPER}.lem19.cone_margins",
    source="Lemma 19 (Appendix A.3), eqs. (12a)-(12c); generalizes Tarzanagh et al. 2023, eq. (64)",
    statement="For alpha locally optimal and W with ||W||_p = ||W_mm||_p and "
              "D_psi(W_mm/||W_mm||_p, W/||W||_p) <= mu(delta): (12a) (x_t - x_tau)^T W z >= 3 delta/2, "
              "(12b) (x_alpha - x_tau)^T W z >= 1 + 3 delta/2, (12c) |(x_alpha - x_t)^T W z - 1| <= delta/2 "
              "for support tokens t and non-support tokens tau of every sample.",
    provenance="inferred",
    controls={"far_directions": Control(
        "hypothesis", breaks=["(12c) |m_t - 1| <= delta/2"],
        description="directions with s = 0.3 (far outside the cone D <= mu(delta)), not filtered",
        constants={"s": FAR_NOISE})},
    calibration=["Issue 31, 2026-11-30 (sixteenth session; no threshold chosen on data): the E_D design's row on "
                 "123600-123899 (300 seeds, all passed, the control failed as declared on all) had every "
                 "conclusion at its stated 0 but the precondition at_least(kept, 100) at 5e-3: its counts over "
                 "seeds failed the normality test, so the row fell back to Cantelli.  The count became the "
                 "binomial IN_CONE (P >= 0.05 at level 1/2: 100 at 2000 draws, the old count; not chosen on "
                 "data), calibrated afresh on 124000-124299: 300 of 300 passed, the control failed as declared "
                 "on all; the claim within the budget, the control at its counted 0.0099 (figures in "
                 "docs/claims/jta24.md)."],
    sizes={tier: dict(SIZES[tier], steps=DIRECTION_STEPS[tier]) for tier in SIZES},
)
def test_cone_margins(tc):
    r"""Constants (reconstructed, spec section 1.7): delta from the non-support margins of the
    certified W_mm (support: |m - 1| <= 1e-6), A_q, mu(delta) (about 1e-9 to 1e-12: Lemma 13,
    with Lemma 12 for p < 2, turns D <= mu into ||W - W_mm||_p <= delta/(2 A_q), and Hoelder into
    margin errors <= delta/2).  For every run with locally optimal alpha and a non-support token
    (runs without one have delta = inf and are counted, not used): 200 directions
    W = ||W_mm||_p U/||U||_p, U = W_mm/||W_mm||_p + s E/||E||_p, s log-uniform in [1e-7, 1e-1];
    those with D_psi + E_D <= mu(delta) are kept (the lemma's hypothesis for the exact D: E_D bounds
    the computed D's round-off, `cone.directional_roundoff`; at least a CONE_RATE = 0.05 share of
    the drawn directions kept is a precondition, `IN_CONE`).
    Pass: (12a)-(12c) on every kept sample, and the mechanism ||W - W_mm||_p <= delta/(2 A_q), each
    slack at least minus its proven allowance (`cone.lemma19_allowances`: the reference's support
    deviation d_s plus 8 (N + 8) u kappa, kappa = A_q ||W_mm||_p, for the margins; 8 (N + 8) u
    ||W_mm||_p for the distance), decided as the least slack over its allowance >= -1, with the
    stated bound 0 of `LEMMA19_ROUNDOFF` (only a wrong lemma or code can break them).  The control
    (hypothesis kind) keeps directions with s = 0.3 unfiltered, drawn from a stream of their own:
    they leave the cone and (12c) fails.
    """
    refs, p, inst, data, alphas = references(tc, False)
    far = tc.control == "far_directions"
    rng = tc.rng("lemma 19 directions", "far") if far else tc.rng("lemma 19 directions")
    worst = {"12a": np.inf, "12b": np.inf, "12c": np.inf}      # least slack / allowance
    used, outside, distance_ratio, unused, largest_d_s = [], 0, np.inf, 0, 0.0
    for ref, pv, k, alpha in zip(refs, p, inst, alphas):
        norm = float(lp_norm(torch.as_tensor(ref)[None], pv))
        A, B, index, support, delta, A_q, mu = cone_constants(data.X[k], alpha, ref, norm, pv)
        if not np.isfinite(delta):
            unused += 1
            continue
        s = np.full(CONE_DRAWS, FAR_NOISE) if far else 10.0 ** rng.uniform(-7, -1, CONE_DRAWS)
        E = rng.standard_normal((CONE_DRAWS,) + ref.shape)
        unit_ref = lp_unit(ref, pv)
        U = unit_ref + s[:, None, None] * E / lp_norm(torch.as_tensor(E), pv).numpy()[:, None, None]
        V = U / lp_norm(torch.as_tensor(U), pv).numpy()[:, None, None]
        W = norm * V
        D = directional_bregman(torch.as_tensor(ref)[None], torch.as_tensor(W), pv).numpy()
        inside = D + directional_roundoff(unit_ref, V, pv) <= mu
        use = np.ones(len(W), bool) if far else inside
        used.append(use)
        outside += int(np.sum(~inside[use]))
        if not use.any():
            continue
        d_s = support_deviation(A, B, support, ref)
        largest_d_s = max(largest_d_s, d_s)
        margin_allowance, distance_allowance = lemma19_allowances(A_q, norm, ref.size, d_s)
        for name, value in margin_slacks(A, B, index, support, delta, W[use]).items():
            worst[name] = min(worst[name], value / margin_allowance)
        gap = delta / (2 * A_q) - lp_norm(torch.as_tensor(W[use] - ref), pv).numpy()
        distance_ratio = min(distance_ratio, float(gap.min()) / distance_allowance)
    tc.record("runs without a non-support token (delta = inf, not used)", unused)
    tc.record("worst slacks over their allowance (12a), (12b), (12c)", worst)
    tc.record("largest support deviation d_s", largest_d_s)
    tc.precondition.binomial(IN_CONE, np.concatenate(used), p=CONE_RATE, alpha=0.5)
    tc.precondition.holds("every sample used lies in the cone D <= mu(delta)", outside == 0,
                          detail={"outside": outside}, tail_bound=None if far else KEPT_BY_CONSTRUCTION)
    stated = None if far else LEMMA19_ROUNDOFF
    tc.conclusion.at_least("(12a) m_tau - m_t >= 3 delta/2", worst["12a"], -1.0, tail_bound=stated)
    tc.conclusion.at_least("(12b) m_tau >= 1 + 3 delta/2", worst["12b"], -1.0, tail_bound=stated)
    tc.conclusion.at_least("(12c) |m_t - 1| <= delta/2", worst["12c"], -1.0, tail_bound=stated)
    tc.conclusion.at_least("||W - W_mm||_p <= delta / (2 A_q)", distance_ratio, -1.0, tail_bound=stated)
