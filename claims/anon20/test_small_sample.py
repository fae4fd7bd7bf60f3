r"""Theorem 5 (small samples), App. E.7 and App. C.4: the last-layer certificate, wide networks
trained to zero loss, and the rank condition the paper states without saying where."""
import numpy as np
import torch
from hypothesis import strategies as st

from theorycheck import Control, claim, discrepancy
from theorycheck.models import (RELU, GlobalAttentionNet, activate, hidden_preactivations,
                                last_layer_certificate)
from theorycheck.optim import adam_steps, cosine_schedule
from theorycheck.patterns import property_search
from theorycheck.solvers import flatten_params
from theorycheck.tails import TailBound

from .setup import (CERTIFICATE_ROUNDOFF, PAPER, PROBE_SEED, SOFTPLUS, certificate_roundoff,
                    decide_distinct_samples, decide_trained_interpolation,
                    duplicate_first_sample, gaussian_problem, init_global, self_attention_probe,
                    trained_self_attention)

#: App. C.4 / Thm 5 small-sample regime: n samples < p inputs, width d >= n, mask sparsity s0
SMALL = {"n": 20, "p": 30, "d": 64, "s0": 5}


@claim(
    f"{PAPER}.thm5a.gradient_certificate",
    source="Theorem 5(a), App. E.7",
    statement="For every theta, grad_W2 R_n = Phi u / n, and with d >= n, R_n <= n ||grad_W2 "
              "R_n||^2 / (2 sigma_n(Phi)^2): a point stationary in W2 where Phi has rank n has "
              "zero loss.",
    provenance="derived",
    single_evidence="an inequality, ||Phi u|| >= sigma_n(Phi) ||u||, that holds at every point "
                    "(the searched points are the evidence): other data check the same inequality "
                    "again",
    controls={
        "largest_singular_value": Control(
            "reference", breaks=["certificate bounds the loss"],
            description="sigma_1(Phi), the largest singular value, in place of sigma_n"),
    },
    calibration=[
        "issue 31 (2026-11-29): the search's allowance became the larger of tol('conditioned') and "
        "the instance's forward-error bound (setup.certificate_roundoff; a constructed tight instance "
        "at kappa(Phi) = 1.8e6 computed 1 - 5.4e-10, below 1 - 2^14 u), and the decision states bound "
        "0 (setup.CERTIFICATE_ROUNDOFF); calibrated on 68000-68049 (was Cantelli 3.8e-2)",
    ],
    sizes={"quick": {"examples": 40, **SMALL}, "full": {"examples": 200, **SMALL}},
)
def test_gradient_certificate(tc):
    r"""With residuals :math:`u_i = f(x_i) - y_i` and :math:`\Phi = [\phi(W_1^\top(x_i \odot
    a))]_i \in \mathbb{R}^{d\times n}`, :math:`\nabla_{W_2}R_n = \Phi u/n` (checked against
    autograd to ``1e-12`` relative), and for ``d >= n``,
    :math:`\|\Phi u\| \ge \sigma_n(\Phi)\|u\|`, i.e.
    :math:`R_n = \|u\|^2/2n \le n\|\nabla_{W_2}R_n\|^2/(2\sigma_n(\Phi)^2)`
    (`theorycheck.models.last_layer_certificate`).  Only stationarity in ``W2`` is used.
    hypothesis searches random points (ReLU and softplus tau = 5; ``n = 20, p = 30, d = 64``,
    half of ``a`` zeroed; Gaussian data and targets, scales of ``W1, W2`` drawn) steered
    towards the smallest ``certificate / R_n - 1``; pass: that margin at least minus its
    round-off allowance on the worst, the larger of ``tol("conditioned")`` and the forward-error
    bound `certificate_roundoff` of the instance (it grows with the condition number of
    ``Phi``; `CERTIFICATE_ROUNDOFF` states the decision's failure probability 0).  Random
    features: for random ``(a, W1)`` and ``W2`` the least-squares solution, ``R_n <= 1e-20``
    (zero up to round-off of ``||y||^2 ~ 20``).
    """
    s = tc.sizes
    use_sigma_1 = tc.control == "largest_singular_value"
    identity_errors = []

    def margin(draw):
        seed, activation, w_scale = draw
        act = RELU if activation == "relu" else SOFTPLUS
        rng = np.random.default_rng(seed)
        X, y = gaussian_problem(rng, 1, s["n"], s["p"])
        params = init_global(rng, 1, s["p"], s["d"])
        params["a"] = torch.as_tensor(rng.uniform(0, 1, (1, s["p"])) * (rng.random((1, s["p"])) < 0.5))
        params["W1"] = w_scale * params["W1"]
        model = GlobalAttentionNet(X, y, act)
        grad = model.gradient(params)["W2"]
        features = model.features(params)
        u = model.output(params) - y
        identity_errors.append(float((grad - torch.einsum("knd,kn->kd", features, u) / s["n"]).norm()
                                     / grad.norm()))
        if use_sigma_1:
            bound = s["n"] * (grad ** 2).sum(-1) / (2 * torch.linalg.svdvals(features)[..., 0] ** 2)
        else:
            bound = last_layer_certificate(features, grad)
        return (float(bound / model.loss(params)) - 1
                + max(tc.tol("conditioned"), float(certificate_roundoff(features, grad)[0])))

    strategy = st.tuples(st.integers(0, 2**32 - 1), st.sampled_from(["relu", "softplus"]),
                         st.floats(0.1, 10.0))
    property_search(tc, "certificate bounds the loss", strategy, margin, max_examples=s["examples"],
                    tail_bound=None if tc.control else CERTIFICATE_ROUNDOFF)
    tc.conclusion.at_most("grad_W2 equals Phi u / n (autograd)", max(identity_errors),
                          tc.tol("accumulated"))
    rng = tc.rng("random features")
    X, y = gaussian_problem(rng, 1, s["n"], s["p"])
    params = init_global(rng, 1, s["p"], s["d"])
    model = GlobalAttentionNet(X, y, RELU)
    params["W2"] = torch.linalg.lstsq(model.features(params), y.unsqueeze(-1)).solution[..., 0]
    tc.record("random-features least-squares loss", model.loss(params))
    tc.conclusion.at_most("random-features least squares interpolates", model.loss(params), 1e-20)


@claim(
    f"{PAPER}.thm5a.wide_training_interpolates",
    source="Theorem 5(a), App. C.4 ('perfect in-sample prediction on small sample size')",
    statement="With width d >= n (and n < p), gradient training of the attention network reaches "
              "R_n ~ 0, and at the final iterate sigma_n(Phi) is bounded away from 0 so the "
              "last-layer certificate proves the loss is (near) zero.",
    provenance="derived",
    controls={
        "duplicate_inputs": Control(
            "hypothesis", breaks=["trained loss near zero"],
            description="sample 1 repeats sample 0's input with its target + 1: Phi loses rank, "
                        "and no network interpolates, R_n >= 1/(4n)"),
    },
    calibration=[
        "the claim was one draw with per-trial R_n <= 1e-12 after 500 steps and failed on seeds "
        "9, 11, 15 of the 20-seed sweep (the sparse arm, sigma_n about 0.15, at 1e-9 .. 3e-6: "
        "slower, not stuck); on seeds 1-10 only, 500 steps reached 1e-12 on 80% of sparse-arm "
        "trials and 1000 steps on all 40 (worst 4e-14; a rate 1.0), so the quick tier runs "
        "1000 steps and decides the rate setup.INTERPOLATION_RATE = 0.8; held out: seeds 0, 11-19",
        "the spec's constant-step Adam with 1500 steps spikes back to 5e-5 on seed 0; the cosine "
        "decay removes it",
        "instances raised from 8 to 60 trials (30 draws, two arms) after the review of "
        "2026-11-26 (4 of 8 passed the binomial): power 0.83 at the framework's alternative "
        "0.65; rate 0.8 unchanged",
        "issue 31 (2026-11-29): the rank hypothesis decided by the conclusions' binomial test at "
        "rate 0.8 (was the fraction at least 0.8: no spread, counted), 'certificate at least the "
        "loss' against R_n (1 - e), e the trial's forward-error bound, stated bound 0 "
        "(setup.CERTIFICATE_ROUNDOFF); calibrated on 68000-68049",
    ],
    sizes={"quick": {"instances": 30, "steps": 1000, **SMALL}, "full": {"instances": 40, "steps": 2000, **SMALL}},
)
def test_wide_training_interpolates(tc):
    r"""Full-batch Adam (lr ``1e-2`` decayed to 0 by a cosine over the run,
    `theorycheck.optim.Adam`) from ``a = 1``,
    ``W1 ~ N(0, 1/p)``, ``W2 ~ N(0, 1/d)`` on random targets ``y ~ N(0, I)``, ReLU,
    ``n = 20, p = 30, d = 64``; two arms per draw (30 draws, 60 trials batched; full 40
    draws): the dense mask and a mask restricted to ``s0 = 5 < n`` coordinates (inputs
    zeroed off the support).  Thm 5's hypothesis at the final point, ``sigma_n(Phi) >=
    1e-2``, is counted per trial (precondition: on a rate of them consistent with at least
    0.8, the conclusions' binomial test).  Pass
    (`setup.decide_trained_interpolation`): ``R_n <= 1e-12`` and the certificate ``n
    ||grad_W2||^2 / (2 sigma_n^2) <= 1e-2`` each on a fraction of the trials consistent with
    at least 0.8 (exact one-sided binomial, level 0.05; with 60 trials its power at the
    framework's alternative 0.65 is above 0.8, recorded), and the certificate at least
    ``R_n (1 - e)`` on every trial meeting the rank hypothesis, ``e`` the trial's forward-error
    bound of the computed ratio (`setup.certificate_roundoff`; an inequality at every point,
    so round-off is its only failure).  The cosine-decayed step avoids the late spikes of constant-step Adam near zero
    loss.  The samples are pairwise distinct (decided on the construction's probe first,
    `setup.decide_distinct_samples`).  Control: duplicated attended input with a different
    target, where no network interpolates (``R_n >= 1/(4n)``) and ``Phi`` loses rank.
    """
    s = tc.sizes
    duplicated = tc.control == "duplicate_inputs"
    construction = lambda X, y: duplicate_first_sample(X, y) if duplicated else (X, y)  # noqa: E731
    decide_distinct_samples(tc, construction(*gaussian_problem(np.random.default_rng(PROBE_SEED), 1,
                                                                s["n"], s["p"]))[0])
    rng = tc.rng("data")
    K = 2 * s["instances"]
    X, y = gaussian_problem(rng, K, s["n"], s["p"])
    X[1::2, :, s["s0"]:] = 0.0                     # the sparse arm: support = first s0 inputs
    X, y = construction(X, y)
    model = GlobalAttentionNet(X, y, RELU)
    params = adam_steps(model, init_global(tc.rng("init"), K, s["p"], s["d"]), s["steps"], 1e-2,
                        schedule=cosine_schedule(s["steps"]))
    decide_trained_interpolation(tc, model, params, features="Phi", loss="trained loss")


@discrepancy(
    f"{PAPER}.thm5a.DISCREPANCY_rank_at_point",
    source="Theorem 5 wording ('if rank(...) = n, then every stationary point is a global minimum')",
    statement="Read as a landscape statement, Theorem 5(a) says that every stationary point of (4) "
              "is a global minimum (the network has d >= n units, so Phi can have rank n).",
    corrected_by=f"{PAPER}.thm5a.gradient_certificate",
    provenance="derived",
    controls={
        "drawn_point": Control(
            "hypothesis", breaks=["gradient zero at the point"],
            description="W1 drawn anew (its own stream) with row k left as drawn: units of "
                        "either sign are active on the positive coordinate k, so the point is "
                        "not stationary"),
        "alive_units": Control(
            "hypothesis", breaks=["gradient zero at the point"],
            description="W1 row k = +1 instead of -1: every unit is active, the point is not "
                        "stationary"),
    },
    calibration=[
        "issue 31 (2026-11-29): every decision of the claim's case is exact arithmetic on the "
        "dead-unit construction, stated bound 0 (DEAD_POINT_EXACT); calibrated on 68000-68049 "
        "(was counted, 4.2e-2); the controls stay counted",
    ],
    sizes={"quick": dict(SMALL), "full": dict(SMALL)},
)
def test_rank_at_point_discrepancy(tc):
    r"""Counterexample (bias-free ReLU model (1), ``n = 20, p = 30, d = 64 >= n``): make
    coordinate ``k`` of every sample positive, ``x_{ik} <- |x_{ik}| + 0.1``; take ``a = e_k``,
    row ``k`` of ``W1`` equal to ``-1`` and ``W2`` Gaussian.  Every pre-activation is
    ``-x_{ik} <= -0.1 < 0``, so all units are dead on a neighbourhood: ``f = 0`` there, the
    gradient is exactly zero (a non-strict local minimum), ``Phi = 0`` (rank 0), and
    ``R_n = (1/2n) sum y_i^2 > 0``, while the same data are interpolated by the trained
    width-64 network (`thm5a.wide_training_interpolates`).  So Thm 5 holds only with the rank
    evaluated *at* the stationary point.  Pass: ``||grad R_n|| <= 1e-14`` (it is exactly 0),
    ``R_n >= 0.1 (1/2n) sum y^2`` (it equals it), rank ``Phi = 0``.  Preconditions: every unit
    strictly dead (max pre-activation ``<= -0.1``) and ``d >= n``.  Controls: a point with
    ``W1`` drawn anew and row ``k`` not set (a real recomputation: some units alive), and row
    ``k`` set to ``+1`` (every unit alive).
    """
    s = tc.sizes
    tc.precondition.at_least("width d >= n", s["d"], s["n"])
    rng = tc.rng("data")
    X, y = gaussian_problem(rng, 1, s["n"], s["p"])
    X[:, :, 0] = X[:, :, 0].abs() + 0.1
    drawn = tc.control == "drawn_point"
    params = init_global(tc.rng("init", "drawn") if drawn else tc.rng("init"), 1, s["p"], s["d"])
    params["a"] = torch.zeros_like(params["a"])
    params["a"][:, 0] = 1.0
    if not drawn:
        params["W1"][:, 0] = 1.0 if tc.control == "alive_units" else -1.0
    model = GlobalAttentionNet(X, y, RELU)
    z = hidden_preactivations(model.inputs(params), params["W1"])
    grad = float(flatten_params(model, model.gradient(params)).norm())
    loss, floor = model.loss(params), 0.5 * (y ** 2).mean(-1)
    rank = int(torch.linalg.matrix_rank(model.features(params)[0]))
    tc.record("||grad R_n||", grad)
    tc.record("R_n and (1/2n) sum y^2", [loss, floor])
    tc.record("rank Phi", rank)
    exact = None if tc.control else DEAD_POINT_EXACT
    tc.precondition.at_most("every unit strictly dead", float(z.max()), -0.1, tail_bound=exact)
    tc.conclusion.at_most("gradient zero at the point", grad, tc.tol("exact"), tail_bound=exact)
    tc.conclusion.at_least("loss at the stationary point positive", loss, 0.1 * floor, tail_bound=exact)
    tc.conclusion.at_most("rank Phi below n at the point", rank, s["n"] - 1, tail_bound=exact)


#: why the dead-point counterexample's decisions cannot fail on any draw (claim's case only)
DEAD_POINT_EXACT = TailBound(0.0, (
    "the construction decides every check in exact arithmetic: x_k = fl(|x_k| + 0.1) >= 0.1 (rounding "
    "is monotone and 0.1 is the same double on both sides), a = e_k makes x * a exact (x_k * 1, the "
    "others * 0 = +-0), and with row k of W1 equal to -1 each pre-activation is -x_k plus signed zeros, "
    "i.e. exactly -x_k <= -0.1: 'every unit strictly dead' holds bitwise; then relu(z) = 0 and relu'(z) = 0 "
    "exactly, so Phi = 0, f = 0 and every gradient entry (through Phi or the zero backward of relu) is "
    "+-0: ||grad|| = 0 and rank Phi = 0 exactly; R_n and the floor are both 0.5 mean(y^2) of the same "
    "y (f = 0), each within (n + 2)u = 5e-15 relative, so R_n / (0.1 floor) - 1 = 9 up to 1e-13 (and "
    "R_n = floor = 0 only where all 20 Gaussian targets are exactly 0, where at_least(0, 0) passes)"))


@discrepancy(
    f"{PAPER}.appC4.DISCREPANCY_preactivation_rank",
    source="App. C.4 ('the linear dependence of <W1, x_i * a> holds with measure zero')",
    statement="For d > n the pre-activations W1^T (x_i * a) are linearly independent almost surely, "
              "so the features keep full column rank n after the activation.",
    corrected_by=f"{PAPER}.thm5a.wide_training_interpolates",
    provenance="derived",
    controls={
        "dense_mask": Control(
            "hypothesis", breaks=["pre-activation rank below n"],
            description="a mask drawn on all p inputs (s0 = p, from its own stream): the "
                        "attended inputs then span n dimensions, and App. C.4's independence "
                        "before the activation holds"),
        "identity_activation": Control(
            "hypothesis", breaks=["ReLU features have rank n"],
            description="the identity in place of ReLU (not a non-linearity): rank stays s0"),
    },
    sizes={"quick": dict(SMALL), "full": dict(SMALL)},
)
def test_preactivation_rank_discrepancy(tc):
    r"""The pre-activation matrix :math:`W_1^\top[x_1\odot a, \dots, x_n\odot a]` has rank
    at most :math:`\min(d, s_0, n)`: the attended inputs lie in the ``s0``-dimensional span of
    the support.  With ``n = 20, p = 30, d = 64, s0 = 5`` it has rank 5 < n, so App. C.4's
    argument (independence before the activation) is false; the full rank ``n`` of ``Phi``
    is created by the non-linearity (generic for ``d >= n`` and distinct attended inputs, not
    positive multiples of each other for bias-free ReLU).  Measured against
    ``torch.linalg.matrix_rank``'s default SVD tolerance ``sigma_1 max(n, d) eps`` (the ranks
    are recorded): rank ``<= k`` exactly when ``sigma_{k+1}`` is within the tolerance, rank
    ``n`` (of ``n`` rows) when ``sigma_n`` is above it, so each rank decision is made on that
    singular value against the tolerance (the same decision as on the integer rank, with a
    continuous margin).  The feature ranks are declared ``scale="log"``: a singular value of full
    rank over a round-off tolerance spans decades from seed to seed, so the calibration models the
    log of that ratio.  The pre-activation ranks stay linear: there ``sigma_{s0+1}`` and
    ``sigma_n`` are round-off far below the tolerance, whose margin is near 1
    with a small spread and whose log is not normal (docs/writing-claims.md).
    Pass: pre-activation ``sigma_{s0+1}`` and ``sigma_n`` within the
    tolerance (rank ``<= s0`` and ``< n``); ReLU and softplus (tau = 5) feature ``sigma_n``
    at least the tolerance (rank ``n``).  Preconditions: a non-linear activation, and a mask sparser
    than the sample (``s0 < n``: the counterexample's case).  Controls: a dense mask
    (``s0 = p >= n``, drawn from its own stream: the pre-activations then have rank ``n``,
    so the discrepancy is the sparsity's), and the identity activation.
    """
    s = tc.sizes
    dense = tc.control == "dense_mask"
    support = s["p"] if dense else s["s0"]
    identity = tc.control == "identity_activation"
    tc.precondition.holds("activation is non-linear", not identity)
    tc.precondition.at_most("mask support below n (s0 < n)", support, s["n"] - 1)
    rng = tc.rng("data")
    X, _ = gaussian_problem(rng, 1, s["n"], s["p"])
    W1 = torch.as_tensor(rng.standard_normal((1, s["p"], s["d"])))
    a = torch.zeros(1, s["p"], dtype=torch.float64)
    a[:, :support] = torch.as_tensor(tc.rng("mask", "dense" if dense else "sparse")
                                     .uniform(0.5, 1.0, (1, support)))
    z = hidden_preactivations(X * a.unsqueeze(1), W1)[0]
    relu = z if identity else activate(z, RELU)
    softplus = activate(z, SOFTPLUS)
    tc.record("ranks: pre-activation, ReLU, softplus",
              [int(torch.linalg.matrix_rank(m)) for m in (z, relu, softplus)])
    tc.record("singular values of the ReLU features", torch.linalg.svdvals(relu))
    tc.conclusion.at_most("pre-activation rank at most s0", singular_value(z, support + 1),
                          rank_tolerance(z))
    tc.conclusion.at_most("pre-activation rank below n", singular_value(z, s["n"]), rank_tolerance(z))
    tc.conclusion.at_least("ReLU features have rank n", singular_value(relu, s["n"]),
                           rank_tolerance(relu), scale="log")
    tc.conclusion.at_least("softplus features have rank n", singular_value(softplus, s["n"]),
                           rank_tolerance(softplus), scale="log")


def singular_value(m: torch.Tensor, k: int) -> float:
    """The ``k``-th largest singular value of ``m`` (from 1), 0 beyond ``min(m.shape)``."""
    values = torch.linalg.svdvals(m)
    return float(values[k - 1]) if k <= values.numel() else 0.0


def rank_tolerance(m: torch.Tensor) -> float:
    """``torch.linalg.matrix_rank``'s default tolerance, ``sigma_1 max(m.shape) eps``: the rank
    is the number of singular values above it, so ``rank <= k`` exactly when ``sigma_{k+1}``
    is at most it and ``rank >= k`` when ``sigma_k`` is above it."""
    return singular_value(m, 1) * max(m.shape) * torch.finfo(m.dtype).eps


@claim(
    f"{PAPER}.thm5b.selfattention_interpolation",
    source="Theorem 5(b), App. E.7",
    statement="For the self-attention network the last-layer certificate holds with Phi_sa = "
              "[phi(W1^T vec(W_V X_i A_i))]_i, and a wide model (d >= n) trains to zero loss "
              "with sigma_n(Phi_sa) bounded away from 0.",
    provenance="derived",
    controls={
        "duplicate_sentence": Control(
            "hypothesis", breaks=["trained self-attention loss near zero"],
            description="sentence 1 repeats sentence 0 with its target + 1: no network "
                        "interpolates, R_n >= 1/(4n)"),
    },
    calibration=[
        "the claim was one instance and missed its rank hypothesis on seed 10 of the 20-seed "
        "sweep (training lost rank: sigma_n = 1e-15, R_n = 0.076); on seeds 1-10 (80 instances) "
        "79 kept the rank and 77 of those reached 1e-12 (a rate 0.96 at 1500 steps); rate 0.8 "
        "(setup.INTERPOLATION_RATE) fixed then; held out: seeds 0, 11-19",
        "instances raised from 8 to 60 after the review of 2026-11-26 (4 of 8 passed the "
        "binomial): power 0.83 at the framework's alternative 0.65; rate unchanged",
        "issue 31 (2026-11-29): the rank hypothesis decided by the conclusions' binomial test at "
        "rate 0.8 (was the fraction at least 0.8, Cantelli), 'certificate at least the loss' "
        "against R_n (1 - e), e the trial's forward-error bound, stated bound 0 "
        "(setup.CERTIFICATE_ROUNDOFF); calibrated on 68000-68049",
    ],
    sizes={"quick": {"steps": 1500, "instances": 60}, "full": {"steps": 4000, "instances": 80}},
)
def test_selfattention_interpolation(tc):
    r"""``grad_W2 R_n = Phi_sa u / n`` as for global attention (the features are now
    ``phi(W1^T v_i)``, ``v_i = vec(W_V X_i A_i)``), so ``R_n <= n ||grad_W2||^2 / (2
    sigma_n(Phi_sa)^2)`` when ``d >= n``.  Training: the ReLU self-attention network
    (``t = 4, p = 5, d_q = 3, d_v = 2, d = 16``, ``n = 10`` random sentences, random targets),
    full-batch Adam, lr ``1e-2`` with a cosine decay, float64, 60 independent instances
    batched (full: 80).  Precondition (Thm 5(b)'s rank hypothesis, at the trained point,
    counted): ``sigma_n(Phi_sa) >= 1e-2`` on a rate of the trials consistent with at least
    0.8 (the conclusions' binomial test).  Pass
    (`setup.decide_trained_interpolation`): ``R_n <= 1e-12`` and the certificate ``<= 1e-2``
    each on a fraction consistent with at least 0.8 (exact one-sided binomial, level 0.05,
    60 trials: power above 0.8 at the framework's alternative 0.65, recorded), and the
    certificate at least ``R_n (1 - e)`` on every trial meeting the rank hypothesis (``e`` the
    forward-error bound `setup.certificate_roundoff`); the sentences pairwise
    distinct (the construction's probe, `setup.decide_distinct_samples`).  Control: a
    duplicated sentence with another target (``R_n >= 1/(4n)``, rank lost on every trial).
    """
    duplicated = tc.control == "duplicate_sentence"
    probe, _ = self_attention_probe(RELU)
    decide_distinct_samples(tc, duplicate_first_sample(probe.X, probe.y)[0] if duplicated else probe.X)
    model, params = tc.use(trained_self_attention, duplicate=duplicated,
                           steps=tc.sizes["steps"], instances=tc.sizes["instances"])
    decide_trained_interpolation(tc, model, params, features="Phi_sa",
                                 loss="trained self-attention loss")
