r"""Theorem 4 (flatness and sharpness), App. E.6 and Sec. 5.3: the scale maps of ReLU networks
with attention, their Jacobian, the Hessian congruence, and what fails under softplus."""
import math

import numpy as np
import torch

from theorycheck import Calibrated, Control, claim, discrepancy
from theorycheck.models import (Activation, BaselineNet, GlobalAttentionNet, hidden_preactivations,
                                scale_global_attention, scale_self_attention)
from theorycheck.solvers import dense_hessian, flatten_params, top_hessian_eigenvalues, unflatten_params
from theorycheck.tails import TailBound

from .setup import (FLAT_SIZES, HESSIAN_SIZES, HYPOTHESIS_ALPHA, HYPOTHESIS_POWER, HYPOTHESIS_RATE,
                    MINIMUM_LOSS, PAPER, PROBE_SEED, SELF_SIZES,
                    SPECTRAL_ROUNDOFF, at_c2_minimum, hessian_minima, minima_meeting_hypotheses, minimum,
                    minimum_activation, outputs, self_attention_instance, self_attention_probe,
                    spectral_allowance, top_eigenvalue, trial)

#: sec53: at the fixed alpha1 = 0.01 the growth of lambda_max and the reparametrised minimum's lead
#: over the baseline follow from the Rayleigh bound only where mu / lambda_max(H) (mu / lambda_base)
#: exceeds about alpha1^2, so they are asked of a rate of trials (exact binomial test, level
#: HYPOTHESIS_ALPHA; with 12 trials it rejects where at most one trial shows them)
GROWTH_RATE = 0.5
GROWTH_POWER = ("the statement is non-invariance, which one trial shows; the test rejects only where "
                "nearly every trial fails to show it")
#: sec53, Fig. 3 reversed: an attention minimum found sharper than its baseline's on a rate of trials
#: at least REVERSAL_RATE at level REVERSAL_ALPHA; with 9 to 12 qualifying trials the test rejects
#: exactly where no trial reverses Fig. 3 (the universal statement is refuted by one trial)
REVERSAL_RATE, REVERSAL_ALPHA = 0.3, 0.05
REVERSAL_POWER = ("one reversed trial refutes the printed statement; the rate only sizes the trials "
                  "so that a run with none is rare")

#: (alpha1, alpha2) of the invariance checks: powers of two are exact, the others round off
SCALES = [(0.5, 1.0), (0.1, 1.0), (0.01, 1.0), (1.0, 0.1), (3.0, 7.0)]


@claim(
    f"{PAPER}.thm4a.relu_scale_invariance",
    source="Theorem 4(a), App. E.6",
    statement="For ReLU and alpha1 alpha2 > 0, T(a, W1, W2) = (alpha1 a, alpha2 W1, W2/(alpha1 "
              "alpha2)) leaves the network function unchanged, and grad L(T theta) = D^{-1} grad "
              "L(theta) with D = diag(alpha1, alpha2, 1/(alpha1 alpha2)) per block.",
    provenance="stated",
    controls={
        "negative_product": Control(
            "hypothesis", breaks=["output unchanged under T"],
            description="alpha1 = -0.5, alpha2 = 2 (alpha1 alpha2 < 0): relu(-z) != -relu(z)",
            constants={"alpha1": -0.5, "alpha2": 2.0}),
        "softplus": Control(
            "hypothesis", breaks=["output unchanged under T"],
            description="the softplus network (tau = 1), not positively homogeneous"),
    },
    sizes={tier: dict(FLAT_SIZES[tier]) for tier in ("quick", "full")},
)
def test_relu_scale_invariance(tc):
    r"""For positively homogeneous :math:`\phi` (ReLU) and :math:`c = \alpha_1\alpha_2 > 0`,
    :math:`(c)^{-1}\phi(\alpha_1\alpha_2 z) = \phi(z)`, so
    :math:`f(x; T\theta) = f(x; \theta)` for every x, and differentiating
    :math:`L(T\theta) = L(\theta)` gives :math:`\nabla L(T\theta) = D^{-1} \nabla L(\theta)`.
    Measured at interpolating minima (shared L-BFGS runs, teacher data, ``p = 6, d = 5,
    n = 12``; the identity holds at every point, minima included), on 200 test inputs, for
    ``(alpha1, alpha2)`` in SCALES.  Pass: ``max |f(T theta) - f(theta)| <= 1e-12 (1 +
    max |f|)`` (about 5e3 unit round-offs: a product of three scaled factors and a sum over
    ``p d`` terms) and ``||grad L(T theta) - D^{-1} grad L(theta)|| <= 1e-10 ||D^{-1}||
    (1 + ||grad L(theta)||)`` per block (the gradient is a difference of such sums).
    Preconditions: ``alpha1 alpha2 > 0`` and a positively homogeneous activation.
    """
    activation = "softplus" if tc.control == "softplus" else "relu"
    scales = [(-0.5, 2.0)] if tc.control == "negative_product" else SCALES
    tc.precondition.holds("alpha1 alpha2 > 0", all(a1 * a2 > 0 for a1, a2 in scales))
    tc.precondition.holds("activation positively homogeneous", minimum_activation(activation).homogeneous)
    run = minimum(tc, activation)
    model = GlobalAttentionNet(run["X"], run["y"], run["activation"])
    params = run["params"]
    f = outputs(run, params)
    out_err, grad_err = [], []
    g = model.gradient(params)
    for a1, a2 in scales:
        T = scale_global_attention(params, a1, a2)
        out_err.append(float((outputs(run, T) - f).abs().max() / (1 + f.abs().max())))
        gT = model.gradient(T)
        factors = {"a": 1 / a1, "W1": 1 / a2, "W2": a1 * a2}
        worst = max(abs(v) for v in factors.values())
        grad_err.append(max(float((gT[b] - factors[b] * g[b]).norm() / (worst * (1 + g[b].norm())))
                            for b in model.blocks))
    tc.record("scales (alpha1, alpha2)", scales)
    tc.record("relative output change", out_err)
    tc.record("relative gradient error", grad_err)
    tc.conclusion.at_most("output unchanged under T", out_err, tc.tol("accumulated"))
    tc.conclusion.at_most("gradient maps by D^{-1}", grad_err, tc.tol("conditioned"))


@discrepancy(
    f"{PAPER}.thm4a.DISCREPANCY_softplus",
    source="Sec. 3 ('phi denotes the softplus ... results hold for any large tau') vs Theorem 4",
    statement="For the softplus network of Sec. 3 the map T(a, W1, W2) = (alpha1 a, alpha2 W1, "
              "W2/(alpha1 alpha2)) preserves the loss, so minima come in flat orbits.",
    corrected_by=f"{PAPER}.thm4a.relu_scale_invariance",
    provenance="derived",
    controls={
        "relu": Control(
            "hypothesis", breaks=["loss gap at T_{0.5,1} above 1e-8"],
            description="the ReLU minimum: positively homogeneous, the loss gap is round-off"),
    },
    calibration=["softplus L-BFGS stopped between 1e-28 and 2e-7 on seeds 0-2 (minimum "
                 "threshold 1e-6); the spec saw a loss gap 3.5e-2",
                 "issue 31 (2026-11-30): the loss gap declared scale='log' (a gap against a "
                 "round-off-sized tolerance); blocks 88000-88049 and 88050-88099: 50 of 50 passed "
                 "on each, gap at least 2.2e4 times 1e-8, its log-normal model accepted (1.4e-18, "
                 "1.5e-21), claim bound 1.1e-4 and 1.2e-5 (9.9e-3 counted on 81000-81299 before)"],
    sizes={tier: dict(FLAT_SIZES[tier]) for tier in ("quick", "full")},
)
def test_softplus_discrepancy(tc):
    r"""Softplus :math:`\phi_\tau(z) = \tau^{-1}\log(1 + e^{\tau z})` satisfies
    :math:`c^{-1}\phi_\tau(cz) = \phi_{c\tau}(z)`, so with :math:`c = \alpha_1\alpha_2`,
    :math:`f_\tau(x; T\theta) = f_{c\tau}(x; \theta)`: T changes the temperature, not nothing.
    Per unit :math:`\phi_\tau(cz) - c\phi_\tau(z) \in (-c\log 2/\tau, \log 2/\tau)`, hence
    :math:`\sup_x |f_\tau(x;T\theta) - f_\tau(x;\theta)| \le \|W_2\|_1 \max(1, 1/c) \log 2/\tau`.
    At softplus (``tau = 1``) interpolating minima (L-BFGS, shared run; precondition: train
    loss ``<= 1e-6``, above where softplus L-BFGS stops) the counterexample is the loss gap
    ``|L(T theta) - L(theta)|`` at ``(alpha1, alpha2) = (0.5, 1)``: the literal invariance
    ``<= 1e-8`` fails (a loss gap against a round-off-sized tolerance, which spans decades over
    draws: the decision declares ``scale="log"``).  Also checked: the temperature identity to
    1e-12 relative, and the bound (with margin 1e-12).  Control: the ReLU minimum, where the gap
    is round-off.
    """
    activation = "relu" if tc.control == "relu" else "softplus"
    tc.precondition.holds("activation is softplus", activation == "softplus")
    run = minimum(tc, activation)
    act = run["activation"]
    model = GlobalAttentionNet(run["X"], run["y"], act)
    params = run["params"]
    T = scale_global_attention(params, 0.5, 1.0)
    gap = (model.loss(T) - model.loss(params)).abs()
    tc.record("train loss at the minima", model.loss(params))
    tc.record("loss gap |L(T theta) - L(theta)|", gap)
    tc.record("||grad L(T theta)||", flatten_params(model, model.gradient(T)).norm(dim=1))
    tc.precondition.at_most("theta is a minimum (train loss)", model.loss(params), 1e-6)
    tc.conclusion.at_least("loss gap at T_{0.5,1} above 1e-8", gap, 1e-8, scale="log")
    if act.name == "softplus":
        c = 0.5
        f, fT = outputs(run, params), outputs(run, T)
        hotter = GlobalAttentionNet(run["X_test"], run["y_test"], Activation("softplus", c * act.tau))
        tc.conclusion.close("f_tau(T theta) = f_{c tau}(theta)", fT, hotter.output(params),
                            rtol=tc.tol("accumulated"), atol=tc.tol("accumulated"),
                            tail_bound=POWER_OF_TWO_EXACT)
        bound = params["W2"].abs().sum(-1) * max(1.0, 1 / c) * math.log(2) / act.tau
        tc.conclusion.at_most("sup |f(T theta) - f(theta)| within ||W2||_1 max(1, 1/c) log 2/tau",
                              (fT - f).abs().amax(-1), bound, margin=tc.tol("accumulated"))


#: the temperature identity at T_{0.5,1} holds bitwise: why it cannot fail on any draw
POWER_OF_TWO_EXACT = TailBound(0.0, (
    "T_{0.5,1} scales a by 1/2 and W2 by 2 and the hotter network has beta = c tau = tau/2: scaling by a "
    "power of two is exact in binary floating point for every value above the subnormal range (2.2e-308; "
    "a zero stays zero), so the pre-activations at T theta are bitwise half those at theta, torch's "
    "softplus evaluates log1p(exp(z/2)) on both sides (and the same threshold branch), and both outputs "
    "are the same sums of the same products times powers of two: they agree bitwise whatever the draw"))


@claim(
    f"{PAPER}.thm4a.jacobian_determinant",
    source="App. E.6 ('the jacobian determinant for T is alpha1^{p-d} alpha2^{pd-d}'), Thm 4(b)",
    statement="log|det J_T| = (p - d) log alpha1 + (pd - d) log alpha2 for the global map "
              "(scalar output), and (p d_v - 1) d log alpha for the self-attention map.",
    provenance="stated",
    nature="identity",
    single_evidence="the Jacobian of a linear map against its closed-form determinant: an "
                    "identity at every point, with no data or dynamics to perturb",
    controls={
        "without_output_layer": Control(
            "reference", breaks=["global log|det J_T| equals (p-d) log a1 + (pd-d) log a2"],
            description="the formula p log a1 + pd log a2 that forgets the W2 block"),
    },
    sizes={"quick": {"p": 3, "d": 2}, "full": {"p": 6, "d": 5}},
)
def test_jacobian_determinant(tc):
    r"""T is linear: :math:`J_T = \mathrm{diag}(\alpha_1 I_p, \alpha_2 I_{pd},
    (\alpha_1\alpha_2)^{-1} I_d)`, so :math:`\log|\det J_T| = p\log\alpha_1 + pd\log\alpha_2 -
    d\log(\alpha_1\alpha_2) = (p - d)\log\alpha_1 + (pd - d)\log\alpha_2`; for
    self-attention :math:`(W_1, W_2) \mapsto (\alpha W_1, W_2/\alpha)` gives
    :math:`(p d_v - 1) d \log\alpha`.  Measured: ``torch.func.jacrev`` of the library's maps
    on the flattened parameters, ``slogdet``, at a fixed point (`setup.PROBE_SEED`,
    `setup.self_attention_probe`): T is linear, so its Jacobian is the same at every point
    and a drawn point adds nothing; the claim draws nothing and is seed-independent in the
    calibration.  Since ``pd > d`` for ``p >= 2`` the volume of
    ``T(B)`` is unbounded as ``alpha2 -> inf`` (the infinite-volume half of Thm 4).  Pass:
    agreement to ``1e-10`` absolute in log (slogdet of a diagonal Jacobian is exact to a few
    round-offs).
    """
    p, d = tc.sizes["p"], tc.sizes["d"]
    like = {"a": torch.ones(1, p), "W1": torch.ones(1, p, d), "W2": torch.ones(1, d)}
    model = GlobalAttentionNet(torch.zeros(1, 1, p, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64))
    theta = torch.as_tensor(np.random.default_rng(PROBE_SEED).standard_normal(p + p * d + d))
    measured, formula = [], []
    for a1, a2 in [(0.5, 3.0), (2.0, 0.1), (7.0, 7.0)]:
        def T(vec, a1=a1, a2=a2):
            return flatten_params(model, scale_global_attention(
                unflatten_params(model, vec.unsqueeze(0), like), a1, a2))[0]
        measured.append(float(torch.linalg.slogdet(torch.func.jacrev(T)(theta))[1]))
        if tc.control == "without_output_layer":
            formula.append(p * math.log(a1) + p * d * math.log(a2))
        else:
            formula.append((p - d) * math.log(a1) + (p * d - d) * math.log(a2))
    tc.record("log|det J_T| (global)", measured)
    tc.conclusion.close("global log|det J_T| equals (p-d) log a1 + (pd-d) log a2", measured,
                        formula, atol=tc.tol("accumulated"))
    sa, sp = self_attention_probe(Activation("relu"))
    s = SELF_SIZES
    sa_measured, sa_formula = [], []
    for alpha in (0.3, 4.0):
        def TS(vec, alpha=alpha):
            return flatten_params(sa, scale_self_attention(unflatten_params(sa, vec.unsqueeze(0), sp),
                                                           alpha))[0]
        J = torch.func.jacrev(TS)(flatten_params(sa, sp)[0])
        sa_measured.append(float(torch.linalg.slogdet(J)[1]))
        sa_formula.append((s["p"] * s["dv"] - 1) * s["d"] * math.log(alpha))
    tc.record("log|det J_T| (self-attention)", sa_measured)
    tc.conclusion.close("self-attention log|det J_T| equals (p d_v - 1) d log alpha", sa_measured,
                        sa_formula, atol=tc.tol("accumulated"))


@claim(
    f"{PAPER}.thm4a.hessian_congruence_and_blowup",
    source="Theorem 4(a), second half; App. E.6",
    statement="Where L is C^2, Hess L(T theta) = D^{-1} Hess L(theta) D^{-1}; hence lambda_max at "
              "T_{alpha1,1} theta is at least delta/alpha1^2 (delta the largest diagonal entry of "
              "the a-block) and grows without bound as alpha1 -> 0, at minima equivalent to theta.",
    provenance="stated",
    controls={
        "softplus": Control(
            "hypothesis", breaks=["Hessian congruence"],
            description="softplus minima (tau = 1): T is not a symmetry, the Hessians do not map"),
    },
    calibration=[
        "WINDOW MOVED AFTER SEEING DATA (not held out): the spec's window was the ratio at "
        "(0.1, 0.01); on seed 0 one trial gave 87.2 there (mu = 0.048, c = 0.78); moved one "
        "decade further, to (0.01, 0.001), by the perturbation argument; checked on seeds 1 "
        "and 2 and the default 0",
        "20-seed sweep: one L-BFGS run in two stopped at a spurious minimum (loss 1e-7 .. 1e-1) "
        "or at a kink, and seeds 6 and 15 had no qualifying trial of two (an error on empty "
        "arrays); restarts added (setup.RESTARTS = 6; seeds 1-10: 45% of starts stopped at a "
        "spurious minimum, so a trial misses after 6 runs with probability about 0.45^6 < 1%)",
        "helper h13 (2026-11-30, issue 31): the row was over the budget (0.042, counted) on "
        "'trials at a C^2 minimum' (at least one of the shared run's two trials; pooled over the "
        "row's 140 trials one missed, so both miss at a rate of order 1e-4 .. 1e-3, and two trials "
        "cannot bound it below the budget) and on the Rayleigh bound by Lanczos (a slack with a "
        "tail to 0 against a factor 1 - 1e-9 with no proved accuracy). Now: the trials are the "
        "12 minima of sec53's Fig. 3 comparison (one run shared by both claims), the hypotheses "
        "a rate at least 0.5 (exact binomial test at level 0.01); lambda_max is the dense "
        "Hessian's (41 parameters; cheaper than Lanczos), the Rayleigh bound compared with a "
        "proved round-off allowance (stated bound 0); the window [90, 110] of the ratio (moved "
        "after seeing seed 0) is replaced by the window Weyl's inequality proves (stated bound "
        "0), since a trial whose a-block curvature mu is small against ||H|| (seen in sec53: "
        "growth 2.96 at alpha1 = 0.01) leaves the ratio outside any fixed window while the "
        "theorem holds; decided one decade deeper, lambda_max(1e-4) / lambda_max(0.001) in 100 mu "
        "/ (mu + e(0.001)) .. 100 (mu + e(1e-4)) / mu, where the window is within [94, 101] on "
        "the 40 trials of the sweep 1430086168-1430086187 (mu / ||H|| >= 0.0165; at (0.01, "
        "0.001) its lower end would be 62 .. 98); chosen knowing those trials' mu / ||H||, no "
        "threshold fitted",
        "block 117000-117049 (quick tier, 50 seeds, commit 2835118; runs /work/runs/h13-anon20/"
        "cal-117000): passed on all 50; 0.042 (counted) -> 8.8e-16 (the hypotheses' pooled trials: "
        "587 of 600 qualified; the other decisions stated 0 or log-normal). Least slack of the "
        "Rayleigh bound 1.3e-3 relative, of the ratio's window 1.6e-4; the window's lower end fell "
        "to 24.9 on one trial (seed 117043, mu / ||H|| near 3e-4) where the ratio was 99.9999: "
        "Weyl's first-order window is loose where mu is small (the departure is second order). "
        "The softplus control failed as declared on 50 of 50",
    ],
    sizes=HESSIAN_SIZES,
)
def test_hessian_congruence_and_blowup(tc):
    r"""Differentiating :math:`L(T\theta) = L(\theta)` twice (T linear, diagonal D):
    :math:`\nabla^2 L(T\theta) = D^{-1}\nabla^2 L(\theta) D^{-1}`.  With
    :math:`\alpha_2 = 1` the a-block scales by :math:`\alpha_1^{-2}`, so
    :math:`\lambda_{\max}(T\theta) \ge e_k^\top D^{-1} H D^{-1} e_k = H_{kk}/\alpha_1^2` for the
    a-coordinate ``k`` with the largest diagonal ``delta``.  Measured at the ReLU minima
    shared with sec53's comparison (`setup.hessian_minima`, 12 trials; float64): the dense
    Hessian (``torch.func.hessian``, 41 parameters) at theta and at ``T_{alpha1,1} theta``
    for alpha1 in {0.5, 0.1, 0.01, 0.001, 1e-4}, lambda_max its top eigenvalue (LAPACK,
    backward stable).  Hypotheses, per trial: every pre-activation ``|z| >= 1e-8`` (L is
    C^2 there; the spec's guard) and train loss ``<= 1e-8`` (a minimum); the checks run on
    the trials that meet them (an identity must hold on each), the others are counted and
    reported.  The shared run restarts L-BFGS from fresh starts (at most 6 runs) while a
    trial misses them.  Preconditions: a homogeneous activation, and the hypotheses met on
    a rate of trials at least 0.5 (exact one-sided binomial test at level 0.01: it rejects
    where at most one of 12 trials meets them).  Pass: congruence relative Frobenius error
    ``<= tol('conditioned')``; ``lambda_max >= delta / alpha1^2`` less the round-off
    allowance of `setup.spectral_allowance` (Weyl's inequality for ``H_T`` against
    ``D^{-1} H D^{-1}`` plus the eigensolver's backward error; `setup.SPECTRAL_ROUNDOFF`,
    stated bound 0); and the ``alpha1^{-2}`` law, ``lambda_max(1e-4) / lambda_max(0.001)``
    near 100, within the window Weyl's inequality proves: with ``S = diag(I_a, alpha1 I,
    alpha1^2 I)``, ``alpha1^2 lambda_max(T theta) = lambda_max(S H S)``, which is at least
    ``mu`` (Rayleigh on the a-block, ``mu = lambda_max(H_aa)``) and at most ``mu +
    e(alpha1)``, ``e(alpha1) = (alpha1 + alpha1^2) ||H||_2`` (``S H S - diag(H_aa, 0)`` has
    off-diagonal blocks of norm ``<= alpha1 ||H||`` and a lower-right block of norm ``<=
    alpha1^2 ||H||``), so the ratio lies in ``[100 mu / (mu + e(0.001)), 100 (mu + e(1e-4))
    / mu]``, widened by the same round-off allowances (stated bound 0).  The window is
    within 10% of 100 where ``mu / ||H|| >= 0.01`` and widens as ``mu / ||H||`` falls (mu is
    at most ``||H||``): the law is a limit, reached at a given alpha1 only where ``alpha1
    ||H|| << mu``; the ratios at (0.1, 0.01) and (0.01, 0.001) and both ends of the window
    are recorded.  The blow-up sends ``W2 -> W2/alpha1`` outside any ball of A2.
    """
    activation = "softplus" if tc.control == "softplus" else "relu"
    tc.precondition.holds("activation positively homogeneous", minimum_activation(activation).homogeneous)
    run = hessian_minima(tc, activation)
    model = GlobalAttentionNet(run["X"], run["y"], run["activation"])
    p, d = tc.sizes["p"], tc.sizes["d"]
    alphas = [0.5, 0.1, 0.01, 0.001, 1e-4]
    congruence, lam, bound, slack, low, high = [], [], [], [], [], []
    trials = minima_meeting_hypotheses(tc, model, run, run["params"])
    if not trials:
        return      # hypotheses not met on any trial: reported as such, nothing to decide
    for k in trials:
        sub, theta = model.restrict([k]), trial(run["params"], k)
        H = dense_hessian(sub, theta)
        delta = float(H.diagonal()[:p].max())
        spectrum = torch.linalg.eigvalsh(H)
        mu = top_eigenvalue(H[:p, :p])
        # |computed - true| of mu and ||H||_2 (the a-block's and H's own eigensolver error)
        mu_err = 2 * p ** 2 * torch.finfo(H.dtype).eps * float(H[:p, :p].norm())
        norm = float(spectrum.abs().max()) + 2 * H.shape[0] ** 2 * torch.finfo(H.dtype).eps * float(H.norm())
        top, allow = {}, {}
        for a1 in alphas:
            T = scale_global_attention(theta, a1, 1.0)
            Dinv = torch.cat([torch.full((p,), 1 / a1, dtype=torch.float64),
                              torch.ones(p * d, dtype=torch.float64),
                              torch.full((d,), a1, dtype=torch.float64)])
            expected = Dinv[:, None] * H * Dinv[None, :]
            H_T = dense_hessian(sub, T)
            congruence.append(float((H_T - expected).norm() / expected.norm()))
            top[a1], allow[a1] = top_eigenvalue(H_T), spectral_allowance(H_T, expected)
            lam.append(top[a1])
            bound.append(delta / a1 ** 2)
            slack.append(allow[a1])
        # Weyl's window of the ratio lambda_max(1e-4) / lambda_max(0.001), round-off included
        upper = {a1: (mu + mu_err + (a1 + a1 ** 2) * norm) / a1 ** 2 + allow[a1] for a1 in (1e-3, 1e-4)}
        lower = {a1: (mu - mu_err) / a1 ** 2 - allow[a1] for a1 in (1e-3, 1e-4)}
        low.append(lower[1e-4] / upper[1e-3])
        high.append(upper[1e-4] / lower[1e-3])
    lam = np.reshape(lam, (-1, len(alphas)))
    tc.record("alpha1", alphas)
    tc.record("lambda_max per trial", lam)
    tc.record("delta / alpha1^2 per trial", np.reshape(bound, lam.shape))
    tc.conclusion.at_most("Hessian congruence", congruence, tc.tol("conditioned"))
    stated = None if tc.control else SPECTRAL_ROUNDOFF
    tc.conclusion.at_least("lambda_max >= delta / alpha1^2", lam.ravel(),
                           np.asarray(bound) - np.asarray(slack), tail_bound=stated)
    ratio = lam[:, 4] / lam[:, 3]
    tc.record("lambda_max(0.01) / lambda_max(0.1), lambda_max(0.001) / lambda_max(0.01) (not decided)",
              [lam[:, 2] / lam[:, 1], lam[:, 3] / lam[:, 2]])
    tc.record("Weyl window of lambda_max(1e-4) / lambda_max(0.001), per trial", [low, high])
    tc.conclusion.at_least("lambda_max(1e-4) / lambda_max(0.001) at least 100 mu / (mu + e(0.001))",
                           ratio, low, tail_bound=stated)
    tc.conclusion.at_most("lambda_max(1e-4) / lambda_max(0.001) at most 100 (mu + e(1e-4)) / mu",
                          ratio, high, tail_bound=stated)


@claim(
    f"{PAPER}.thm4b.selfattention_scale_invariance",
    source="Theorem 4(b), App. E.6",
    statement="For the ReLU self-attention network, (W1, W2, WQ, WK, WV) -> (alpha W1, W2/alpha, "
              "WQ, WK, WV) leaves f unchanged, the Hessian maps by congruence, and lambda_max "
              "grows like alpha^{-2} as alpha -> 0.",
    provenance="stated",
    controls={
        "softplus": Control(
            "hypothesis", breaks=["self-attention output unchanged under T_alpha"],
            description="softplus (tau = 5) in place of ReLU"),
    },
    calibration=[
        "helper h12 (2026-11-30): 'lambda_max(0.01) / lambda_max(0.1) at least 50' never failed but "
        "kept the row over the budget (Cantelli at 37 sd on 22000-22049,1400593500-1400593519: its "
        "margins left-skewed by instances whose coupling c/mu still shows at alpha = 0.1); decided "
        "one decade deeper, lambda_max(0.001) / lambda_max(0.01) within 10% of 100, the law and "
        "tolerance of thm4a's ratio, by the perturbation argument of the docstring (a deeper window "
        "shrinks the ratio's departure from 100 a hundredfold); chosen knowing that row, not on "
        "seeds of the calibration block; the ratio at (0.1, 0.01) stays recorded",
    ],
    sizes={"quick": dict(SELF_SIZES), "full": dict(SELF_SIZES)},
)
def test_selfattention_scale_invariance(tc):
    r"""ReLU: :math:`W_2^\top\phi(\alpha W_1^\top v)/\alpha = W_2^\top\phi(W_1^\top v)`, the
    attention logits untouched.  Measured on a random network (``t = 4, p = 5, d_q = 3,
    d_v = 2, d = 16``, 10 sentences; random point, the identity holds everywhere): the
    relative output change for alpha in {0.05, 0.5, 4} (pass ``<= 1e-12``, as for the global
    map); the dense Hessian (208 parameters) at theta and at ``T_{0.1}`` theta, congruent by
    ``D = diag(alpha I_{W1}, I_{W2}/alpha, I)`` (pass: relative Frobenius error ``<= 1e-10``);
    and the Lanczos lambda_max at alpha = 0.1, 0.01 and 0.001.  The W1 block, PSD for ReLU
    because f is linear in W1 on a fixed activation pattern, scales by alpha^{-2}; by
    perturbation, as in thm4a, ``lambda_max(alpha) = mu/alpha^2 + c + O(alpha)`` with ``mu``
    the top eigenvalue of the W1 block and ``c`` from the coupling blocks, so the ratio of two
    values a decade apart is ``100 (1 + c alpha_1^2/mu) / (1 + c alpha_2^2/mu) + ...``: its
    departure from 100 shrinks by 100 with every decade towards the limit alpha -> 0 the
    statement is about.  Decided on the deepest decade, ``lambda_max(0.001) / lambda_max(0.01)``
    within 10% of 100 (the alpha^{-2} law; reached for any ``|c|/mu`` below about 1e3), as
    thm4a's ratio; the ratio at (0.1, 0.01), where an instance's ``c/mu`` still shows, is
    recorded.  Preconditions: ReLU, pre-activations ``|z| >= 1e-8``.
    Control: a softplus network (tau = 5, its own draw of weights), not positively
    homogeneous: its output moves under ``T_alpha``.
    """
    softplus = tc.control == "softplus"
    act = Activation("softplus", 5.0) if softplus else Activation("relu")
    tc.precondition.holds("activation positively homogeneous", act.homogeneous)
    # the softplus network is another network: its weights are a draw of their own
    model, params = self_attention_instance(tc.rng("network", "softplus") if softplus
                                            else tc.rng("network"), act)
    f = model.output(params)
    change = [float((model.output(scale_self_attention(params, a)) - f).abs().max()
                    / (1 + f.abs().max())) for a in (0.05, 0.5, 4.0)]
    tc.record("relative output change", change)
    z = hidden_preactivations(model.inputs(params), params["W1"])
    tc.precondition.at_least("pre-activations away from the kink", float(z.abs().min()), 1e-8)
    tc.conclusion.at_most("self-attention output unchanged under T_alpha", change, tc.tol("accumulated"))
    H = dense_hessian(model, params)
    sizes = [params[b][0].numel() for b in model.blocks]
    alpha = 0.1
    Dinv = torch.cat([torch.full((n,), f_, dtype=torch.float64) for n, f_ in zip(sizes, [1 / alpha, alpha, 1, 1, 1])])
    expected = Dinv[:, None] * H * Dinv[None, :]
    congruence = float((dense_hessian(model, scale_self_attention(params, alpha)) - expected).norm()
                       / expected.norm())
    tc.record("Hessian congruence error", congruence)
    lam = [float(top_hessian_eigenvalues(model, scale_self_attention(params, a))[0, 0])
           for a in (0.1, 0.01, 0.001)]
    tc.record("lambda_max at alpha = 0.1, 0.01, 0.001", lam)
    tc.record("lambda_max(0.01) / lambda_max(0.1) (not decided)", lam[1] / lam[0])
    tc.conclusion.at_most("self-attention Hessian congruence", congruence, tc.tol("conditioned"))
    tc.conclusion.close("lambda_max(0.001) / lambda_max(0.01) near 100", lam[2] / lam[1], 100.0, rtol=0.1)


@claim(
    f"{PAPER}.thm4b.extra_symmetries",
    source="not in the paper: strengthens Theorem 4(b)",
    statement="(WQ, WK) -> (G WQ, G^{-T} WK) for any invertible G leaves the self-attention "
              "network unchanged for any activation; for ReLU so does (WV, W2) -> (beta WV, W2/beta).",
    provenance="derived",
    nature="identity",
    single_evidence="algebraic invariances of the logits and of positive homogeneity, at every "
                    "point: no data or dynamics whose change could break them",
    controls={
        "no_inverse_transpose": Control(
            "reference", breaks=["output unchanged under (G WQ, G^{-T} WK)"],
            description="(G WQ, G WK): the logits become x_j^T WK^T G^T G WQ x_z"),
    },
    sizes={"quick": dict(SELF_SIZES), "full": dict(SELF_SIZES)},
)
def test_extra_symmetries(tc):
    r"""The logits are :math:`(W_K x^j)^\top (W_Q x^z) = x_j^\top W_K^\top W_Q x_z`, unchanged
    by :math:`W_Q \to G W_Q`, :math:`W_K \to G^{-\top} W_K` (:math:`W_K^\top G^{-1} G W_Q`),
    whatever the activation (checked with softplus, tau = 5); for ReLU,
    :math:`\phi(W_1^\top \beta v) = \beta\phi(W_1^\top v)` for ``beta > 0``, so
    :math:`(\beta W_V, W_2/\beta)` is a symmetry too.  These make the flat directions of
    self-attention larger than Thm 4(b) states.  G = I + 0.3 N(0, 1) (condition number of a
    few; recorded), beta in {0.2, 5}.  Pass: relative output change ``<= 1e-12`` (round-off
    of the inverse and of the softmax; float64).
    """
    rng = tc.rng("network")
    model, params = self_attention_instance(rng, Activation("softplus", 5.0))
    dq = params["WQ"].shape[1]
    G = torch.eye(dq, dtype=torch.float64) + 0.3 * torch.as_tensor(rng.standard_normal((dq, dq)))
    tc.record("cond(G)", float(torch.linalg.cond(G)))
    other = G if tc.control == "no_inverse_transpose" else torch.linalg.inv(G).T
    moved = dict(params, WQ=G @ params["WQ"], WK=other @ params["WK"])
    f = model.output(params)
    qk = float((model.output(moved) - f).abs().max() / (1 + f.abs().max()))
    tc.record("relative change under the Q/K map", qk)
    tc.conclusion.at_most("output unchanged under (G WQ, G^{-T} WK)", qk, tc.tol("accumulated"))
    relu_model, relu_params = self_attention_instance(rng, Activation("relu"))
    g = relu_model.output(relu_params)
    vw = [float((relu_model.output(dict(relu_params, WV=b * relu_params["WV"], W2=relu_params["W2"] / b))
                 - g).abs().max() / (1 + g.abs().max())) for b in (0.2, 5.0)]
    tc.record("relative change under the V/W2 map", vw)
    tc.conclusion.at_most("ReLU output unchanged under (beta WV, W2/beta)", vw, tc.tol("accumulated"))


@discrepancy(
    f"{PAPER}.sec53.DISCREPANCY_hessian_flatness_comparison",
    source="Sec. 5.3 and Fig. 3",
    statement="Baseline models exhibit higher top Hessian eigenvalues than attention models at the "
              "minima found, so the loss landscape of attention models is flatter.",
    corrected_by=f"{PAPER}.thm4a.hessian_congruence_and_blowup",
    provenance="derived",
    controls={
        "softplus": Control(
            "hypothesis", breaks=["test loss unchanged under T_{0.01,1}"],
            description="softplus minima: the reparametrisation changes the function"),
    },
    calibration=[
        "20-seed sweep: seeds 3, 6 and 15 had no trial with both networks at a minimum (the "
        "checks errored on empty arrays); restarts added",
        "Fig. 3 as printed: the minima found on seed 0 had lambda_max attention 7.7 / 2.7 "
        "against the baseline's 5.0 / 2.4 (review of 2026-11-26: recorded only); now decided "
        "('an attention minimum found is sharper than its baseline's'); threshold 0 (a sign), "
        "no window to choose; on the shared run's 2 trials seeds 0-7 gave 11 of 16 trials with "
        "the attention minimum sharper and seeds 5, 6 none, so the claim runs its own minima "
        "with 8 trials (chosen after seeing seeds 0-7, not held out; a seed without a "
        "counterexample then has probability about 0.3^8 at that rate); the other decisions "
        "stay on the shared run's minima (on 8 trials the 50-fold growth missed one trial of "
        "seed 6 at 41-fold: a small a-block curvature; not adopted for them)",
        Calibrated(
            decision="lambda_max grows under T_{0.01,1} on a rate of trials at least 0.5",
            threshold="1 + tol('iterative') per trial",
            calibration_seeds="9000-9024", validation_seeds="9100-9124",
            how="derived, not fitted: the statement is that lambda_max is not invariant under a "
                "loss-preserving reparametrisation, so 'grows' is lambda_max(H_T) / lambda_max(H) >= 1 + "
                "tol('iterative'), growth beyond the Lanczos round-off. It replaces a 50-fold factor set "
                "after seeing seeds 0-7, which failed at 25.55 on an unseen seed; by the Rayleigh bound "
                "lambda_max(H_T) >= mu / alpha1^2 (decided beside it) the growth is at least "
                "10^4 mu / lambda_max(H), which depends on the instance, so no fixed factor follows. "
                "Calibration block 9000-9024: no failure, least growth 2.96 (the old 50 would have "
                "failed); validation block 9100-9124: no failure, least growth 103.7. The growth is "
                "heavy-tailed, so the normal model's 1.4-1.7 sd understates the room to a threshold of "
                "1 + 1.2e-10. The Rayleigh bound held on every trial (least relative slack 4.7e-5, >= 0 "
                "by the theorem up to Lanczos accuracy). The softplus control failed as declared on 50 of "
                "50. The table row holds the validation block (25 seeds), so its Clopper-Pearson bound "
                "(0.11) is over the budget: a count that small cannot show 3e-4. Helper h13 "
                "(2026-11-30): the per-trial threshold is unchanged; the decision is now the rate of trials that grow "
                "(at least 0.5, exact binomial test at level 0.01), since at a fixed alpha1 the growth "
                "follows from the theorem only where mu / lambda_max(H) exceeds about alpha1^2"),
        "helper h13 (2026-11-30, issue 31): all decisions on the 12-trial run shared with thm4a "
        "(setup.hessian_minima), the hypotheses and the curvature comparisons at alpha1 = 0.01 as "
        "rates of trials (exact binomial tests), Fig. 3's reversal as a rate at least 0.3, "
        "lambda_max from the dense Hessian with a proved allowance; block 117000-117049 (quick "
        "tier, 50 seeds, commit 2835118; runs /work/runs/h13-anon20/cal-117000): passed on all "
        "50; 0.042 (counted) -> 1.1e-4, all of it Fig. 3's reversal (pooled trials: 390 of 581 "
        "qualifying trials had the attention minimum sharper, 0.67; a seed with 9 qualifying "
        "trials sets the bound); the least growth under T was 3.3 (seed 117043, a trial with "
        "mu / lambda_max(H) near 3e-4: a fixed-factor or every-trial decision has this tail). "
        "The softplus control failed as declared on 50 of 50",
    ],
    sizes=HESSIAN_SIZES,
)
def test_hessian_flatness_comparison(tc):
    r"""Top Hessian eigenvalues are not invariant under the symmetry T, so they cannot rank
    two models' flatness.  On the teacher data of the Hessian claims' run (`setup.hessian_minima`,
    12 trials, shared with thm4a) an attention network and a baseline network are trained to
    interpolating minima (L-BFGS with restarts, at most 6 runs per trial); lambda_max, the top
    eigenvalue of the dense Hessian (41 and 35 parameters; LAPACK, backward stable), is
    measured at the attention minimum theta, at the equivalent minimum ``T_{0.01,1} theta``
    and at the baseline minimum.  Hypotheses per trial: both networks at C^2 minima (train
    loss ``<= 1e-8``, attention pre-activations ``|z| >= 1e-8``); preconditions: ReLU, and
    the hypotheses met on a rate of trials at least 0.5 (exact one-sided binomial tests at
    level 0.01, for the attention network and for both); the trials meeting them are
    checked, the others counted and reported.  The counterexample: the test loss (200 fresh
    teacher inputs) is unchanged on every trial (relative ``tol('accumulated')``: T is exact
    up to round-off for ReLU), lambda_max is not invariant, and the reparametrised attention
    minimum is sharper than the baseline's, reversing "attention is flatter" without
    changing the function.  In the coordinates ``T theta`` the Hessian is ``D^{-1} H D^{-1}``
    with ``D = diag(alpha1 I_a, I, I / alpha1)``, so by Cauchy interlacing on the a-block
    ``lambda_max(H_T) >= mu / alpha1^2``, ``mu = lambda_max(H_aa)``: decided on every trial
    against that bound less the round-off allowance of `setup.spectral_allowance` (Weyl's
    inequality for the computed ``H_T`` against ``D^{-1} H D^{-1}`` plus the eigensolver's
    backward error; stated bound 0, `setup.SPECTRAL_ROUNDOFF`).  The growth factor is
    therefore at least ``10^4 mu / lambda_max(H)`` and the lead over the baseline at least
    ``10^4 mu - lambda_base``, which depend on the instance (``mu`` small against the
    coupling blocks gives a small factor; the calibration record has the values seen):
    at the fixed alpha1 = 0.01 they follow from the theorem only on trials with
    ``mu`` above about ``alpha1^2`` times ``lambda_max(H)`` (``lambda_base``), so both are
    decided as rates: growth beyond round-off, ``lambda_max(H_T) / lambda_max(H) >= 1 +
    tol('iterative')``, and ``lambda_max(H_T) > lambda_base``, each on a rate of trials at
    least 0.5 (exact one-sided binomial tests at level 0.01; with 12 trials they reject
    where at most one trial shows it).  Fig. 3's comparison is decided as printed, at the
    minima L-BFGS finds without any reparametrisation: the statement is universal ("baseline
    models exhibit higher top eigenvalues"), so one trial whose attention minimum has the
    larger lambda_max contradicts it; decided as the rate of such trials at least 0.3 (exact
    one-sided binomial test at level 0.05, which with 9 to 12 qualifying trials rejects
    exactly where no trial reverses Fig. 3; every difference is recorded; not under the
    softplus control).
    """
    activation = "softplus" if tc.control == "softplus" else "relu"
    tc.precondition.holds("activation positively homogeneous", minimum_activation(activation).homogeneous)
    run = hessian_minima(tc, activation)
    act = run["activation"]
    att = GlobalAttentionNet(run["X"], run["y"], act)
    test_att = GlobalAttentionNet(run["X_test"], run["y_test"], act)
    base = BaselineNet(run["X"], run["y"], act)
    minima_meeting_hypotheses(tc, att, run, run["params"])
    base_loss = base.loss(run["baseline"])
    tc.record("baseline train loss per trial", base_loss)
    both = at_c2_minimum(att, run["params"]) & (base_loss <= MINIMUM_LOSS)
    tc.precondition.binomial(f"trials with both networks at a minimum on a rate at least "
                             f"{HYPOTHESIS_RATE}", both, p=HYPOTHESIS_RATE, alpha=HYPOTHESIS_ALPHA,
                             low_power=HYPOTHESIS_POWER)
    trials = [k for k in range(len(both)) if both[k]]
    if not trials:
        return      # hypotheses not met on any trial: reported as such, nothing to decide
    test_att = test_att.restrict(trials)
    theta = {b: v[trials] for b, v in run["params"].items()}
    alpha1, p = 0.01, tc.sizes["p"]
    T = scale_global_attention(theta, alpha1, 1.0)
    Dinv = torch.cat([torch.full((p,), 1 / alpha1, dtype=torch.float64),
                      torch.ones(p * tc.sizes["d"], dtype=torch.float64),
                      torch.full((tc.sizes["d"],), alpha1, dtype=torch.float64)])
    lam, lam_T, lam_base, mu, slack = [], [], [], [], []
    for i, k in enumerate(trials):
        sub = att.restrict([k])
        H, H_T = dense_hessian(sub, trial(theta, i)), dense_hessian(sub, trial(T, i))
        lam.append(top_eigenvalue(H))
        lam_T.append(top_eigenvalue(H_T))
        lam_base.append(top_eigenvalue(dense_hessian(base.restrict([k]), trial(run["baseline"], k))))
        mu.append(top_eigenvalue(H[:p, :p]))
        slack.append(spectral_allowance(H_T, Dinv[:, None] * H * Dinv[None, :]))
    lam, lam_T, lam_base, mu = map(np.asarray, (lam, lam_T, lam_base, mu))
    test, test_T = test_att.loss(theta), test_att.loss(T)
    tc.record("lambda_max attention, attention after T, baseline", [lam, lam_T, lam_base])
    tc.record("test loss before / after T", [test, test_T])
    tc.conclusion.close("test loss unchanged under T_{0.01,1}", test_T, test, rtol=tc.tol("accumulated"))
    bound = mu / alpha1 ** 2
    tc.record("a-block bound mu / alpha1^2 and its ratio to lambda_max before T", [bound, bound / lam])
    tc.conclusion.at_least("lambda_max after T_{0.01,1} at least the a-block bound mu / alpha1^2",
                           lam_T, bound - np.asarray(slack),
                           tail_bound=None if tc.control else SPECTRAL_ROUNDOFF)
    tc.record("growth lambda_max(H_T) / lambda_max(H) per trial", lam_T / lam)
    tc.conclusion.binomial(f"lambda_max grows under T_{{0.01,1}} on a rate of trials at least {GROWTH_RATE}",
                           lam_T / lam >= 1 + tc.tol("iterative"), p=GROWTH_RATE, alpha=HYPOTHESIS_ALPHA,
                           low_power=GROWTH_POWER)
    tc.conclusion.binomial(f"reparametrised attention sharper than the baseline on a rate of trials at "
                           f"least {GROWTH_RATE}", lam_T > lam_base, p=GROWTH_RATE, alpha=HYPOTHESIS_ALPHA,
                           low_power=GROWTH_POWER)
    if tc.control is None:      # Fig. 3 as printed, at the minima found (ReLU only)
        sharper = lam - lam_base
        tc.record("lambda_max attention - baseline at the minima found, per trial", sharper)
        tc.conclusion.binomial(f"an attention minimum found is sharper than its baseline's (Fig. 3 "
                               f"reversed) on a rate of trials at least {REVERSAL_RATE}", sharper > 0,
                               p=REVERSAL_RATE, alpha=REVERSAL_ALPHA, low_power=REVERSAL_POWER)
