r"""The models of Sec. 2 (eqs. (1)-(3)): attention as a row-scaled baseline, the gradient
formulas of App. E.1 / E.7, the softmax matrix and the parameter counts of Thm 2 and the tables."""
import numpy as np
import torch
from hypothesis import strategies as st
from scipy import integrate, stats

from theorycheck import Control, claim
from theorycheck.models import (RELU, BaselineNet, GlobalAttentionNet, activation_derivative,
                                global_attention_gradients, hidden_preactivations,
                                self_attention_matrix)
from theorycheck.optim import relative_error
from theorycheck.patterns import property_search
from theorycheck.tails import TailBound

from .models import numel, table_counts
from .setup import PAPER, SELF_SIZES, SOFTPLUS, self_attention_instance, self_attention_probe

#: Table 1 header (Sec. 5.1.1): parameters of the baseline and of the attention model
TABLE1_COUNTS = {"baseline": 34186, "attention": 34442}
#: Table 2 header (Sec. 5.1.2): baseline and self-attention parameters (IMDB, GloVe-100,
#: sentences padded to 2142 tokens, 256 hidden units)
TABLE2_COUNTS = {"baseline": 57_335_913, "self-attention": 57_365_913}


@claim(
    f"{PAPER}.model.attention_equals_rowscaled_baseline",
    source="eq. (1) vs the baseline of Sec. 2 (implied; needed to read Thm 1 and Table 1)",
    statement="f(x; a, W1, W2) = f_base(x; diag(a) W1, W2) for every x, a, W1, W2 and activation: "
              "global attention has the baseline's function class, restricted to s0 non-zero "
              "first-layer rows under A4.",
    provenance="derived",
    single_evidence="an algebraic identity, W1^T (x * a) = (diag(a) W1)^T x, at every input and "
                    "weight: there is no data, reference or dynamics to perturb; the searched draws "
                    "are the evidence, and the unscaled control only shows that the search resolves "
                    "a difference",
    controls={
        "unscaled_rows": Control(
            "reference", breaks=["attention equals the row-scaled baseline"],
            description="the baseline with W1 itself (no diag(a) scaling) as the reference"),
    },
    sizes={"quick": {"examples": 25}, "full": {"examples": 200}},
)
def test_attention_equals_rowscaled_baseline(tc):
    r""":math:`W_1^\top(x\odot a) = (\mathrm{diag}(a)W_1)^\top x`, so the two networks agree
    for any activation.  hypothesis draws shapes ``p in [1, 40], d in [1, 64]``, 50 inputs,
    a Gaussian mask (entries of both signs, some zero), ReLU or softplus (tau = 5), and
    searches for the largest ``max_i |f - f_base| / (1 + max_i |f|)``; pass: at most
    ``1e-12`` (the two evaluation orders differ by a few round-offs per product in a sum of
    ``p`` terms).  So any sample-complexity gain of attention comes from sparsity (A4), a
    penalty on ``a`` or the optimisation, never from expressivity.
    """
    unscaled = tc.control == "unscaled_rows"

    def margin(draw):
        seed, p, d, activation = draw
        rng = np.random.default_rng(seed)
        act = RELU if activation == "relu" else SOFTPLUS
        X = torch.as_tensor(rng.standard_normal((1, 50, p)))
        a = torch.as_tensor(rng.standard_normal((1, p)) * (rng.random((1, p)) < 0.7))
        W1, W2 = torch.as_tensor(rng.standard_normal((1, p, d))), torch.as_tensor(rng.standard_normal((1, d)))
        y = torch.zeros(1, 50, dtype=torch.float64)
        f = GlobalAttentionNet(X, y, act).output({"a": a, "W1": W1, "W2": W2})
        rows = W1 if unscaled else a.unsqueeze(-1) * W1
        base = BaselineNet(X, y, act).output({"W1": rows, "W2": W2})
        return tc.tol("accumulated") - float((f - base).abs().max() / (1 + f.abs().max()))

    strategy = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 64),
                         st.sampled_from(["relu", "softplus"]))
    property_search(tc, "attention equals the row-scaled baseline", strategy, margin,
                    max_examples=tc.sizes["examples"])


@claim(
    f"{PAPER}.model.gradient_formulas",
    source="App. E.1 and E.7 (gradient formulas; W1 in place of the printed W1^T in grad_a)",
    statement="grad_W2 R_n = (1/n) sum u_i phi(W1^T(x_i*a)), grad_W1 = (1/n) sum u_i (x_i*a)(W2*phi'"
              "(.))^T, grad_a = (1/n) sum u_i x_i*(W1 (W2*phi'(.))); the same W1, W2 formulas "
              "with v_i = vec(W_V X_i A_i) for self-attention.",
    provenance="derived",
    single_evidence="an identity between closed-form derivatives and autograd of the same loss "
                    "at the same point: a recomputation on other data checks the same identity "
                    "again; the printed-transpose control only shows that a wrong formula is "
                    "resolved",
    controls={
        "printed_transpose": Control(
            "reference", breaks=["grad_a matches autograd"],
            description="the copy's W1^T in grad_a (p = d so that the shapes agree)"),
    },
    sizes={"quick": {"n": 20, "p": 8, "d": 6}, "full": {"n": 200, "p": 32, "d": 16}},
)
def test_gradient_formulas(tc):
    r"""Reference: ``torch.func`` autograd of :math:`R_n = \frac{1}{2n}\sum_i(f(x_i) -
    y_i)^2` (the protocol's default gradient).  Measured: the closed forms of App. E.1
    (`theorycheck.models.global_attention_gradients`), softplus with tau = 5 so that
    :math:`\phi' = \sigma(\tau z)` is smooth, evaluated with linearisation threshold 500 (the
    torch default 20 costs about 5e-11).  For self-attention the E.7 formulas for ``W1`` and
    ``W2`` are the global ones with input ``v_i = vec(W_V X_i A_i)`` and ``a = 1``.  Pass:
    relative error ``<= 1e-10`` per block (sums of ``n`` products, so a few hundred
    round-offs at most).  The printed ``W1^T`` in ``grad_a`` only type-checks for
    ``p = d``; the control evaluates it there.
    """
    s = tc.sizes
    p = s["d"] if tc.control == "printed_transpose" else s["p"]
    rng = tc.rng("data")
    X, y = torch.as_tensor(rng.standard_normal((1, s["n"], p))), torch.as_tensor(rng.standard_normal((1, s["n"])))
    params = {"a": torch.as_tensor(rng.uniform(0.2, 1.0, (1, p))),
              "W1": torch.as_tensor(rng.standard_normal((1, p, s["d"])) / np.sqrt(p)),
              "W2": torch.as_tensor(rng.standard_normal((1, s["d"])))}
    model = GlobalAttentionNet(X, y, SOFTPLUS)
    auto = model.gradient(params)
    closed = global_attention_gradients(X, y, params["a"], params["W1"], params["W2"], SOFTPLUS)
    if tc.control == "printed_transpose":
        z = hidden_preactivations(model.inputs(params), params["W1"])
        u = model.output(params) - y
        back = params["W2"].unsqueeze(1) * activation_derivative(z, SOFTPLUS)
        closed["a"] = torch.einsum("kn,knp,knp->kp", u, X,
                                   torch.einsum("kdp,knd->knp", params["W1"], back)) / s["n"]
    errors = {b: float(relative_error(closed[b], auto[b])) for b in model.blocks}
    tc.record("relative error per block (global)", errors)
    tc.conclusion.at_most("grad_a matches autograd", errors["a"], tc.tol("accumulated"))
    tc.conclusion.at_most("grad_W1, grad_W2 match autograd", [errors["W1"], errors["W2"]],
                          tc.tol("accumulated"))
    sa, sp = self_attention_instance(tc.rng("self-attention"), SOFTPLUS)
    v = sa.inputs(sp)
    ones = torch.ones(1, v.shape[-1], dtype=torch.float64)
    closed_sa = global_attention_gradients(v, sa.y, ones, sp["W1"], sp["W2"], SOFTPLUS)
    auto_sa = sa.gradient(sp)
    sa_errors = [float(relative_error(closed_sa[b], auto_sa[b])) for b in ("W1", "W2")]
    tc.record("relative error W1, W2 (self-attention)", sa_errors)
    tc.conclusion.at_most("self-attention grad_W1, grad_W2 match autograd", sa_errors,
                          tc.tol("accumulated"))


@claim(
    f"{PAPER}.model.param_counts",
    source="Table 1 and Table 2 headers, Sec. 5.1",
    statement="The parameter counts printed in Tables 1 and 2 are consistent with a 256-128-10 "
              "network with biases (plus a in R^256) and an embedding + 2142*100-256-1 network "
              "(plus bias-free W_Q, W_K, W_V in R^{100x100}): an architecture fitted to the "
              "printed totals, so this checks consistency, not the paper's networks.",
    provenance="derived",
    nature="identity",
    single_evidence="a consistency check of a reconstruction fitted to the printed totals (width, "
                    "biases, the counted embedding and W_V's shape were chosen so that the sums "
                    "match): integer arithmetic, no data or dynamics to perturb, and no "
                    "independent confirmation of the architecture",
    controls={
        "value_matrix_as_in_text": Control(
            "statement", breaks=["Table 2 counts reproduced"],
            description="W_V in R^{100 x 2142}, as the text of Sec. 5.1.2 says"),
    },
    sizes={"quick": {}, "full": {}},
)
def test_param_counts(tc):
    r"""Our count (``numel`` summed over ``torch.nn`` modules built on the meta device, so
    the 57M-parameter network allocates nothing) against the counts printed in the tables:
    Table 1 ``34186 = 256*128 + 128 + 128*10 + 10`` and ``34442 = 34186 + 256``, so the
    student has width 128 and biases (unlike eq. (1)); Table 2 ``57,335,913`` (the embedding
    table of 25002 x 100 counted as trainable) and ``57,365,913 = 57,335,913 + 3 * 100^2``,
    which fixes ``W_V in R^{100 x 100}``: the text's ``W_V in R^{100 x 2142}`` gives
    57,570,113.  The printed second baseline 111,744,625 matches width 512 with a 20,732-word
    vocabulary (recorded as a hypothesis, not decided).  Pass: exact integers.

    What this tests: the architecture (width 128, biases, a trainable embedding, ``W_V`` of
    ``100 x 100``) was chosen so that these sums match the printed totals, so the claim is an
    identity of that reconstruction (nature ``identity``): it shows that a consistent reading
    of the tables exists, and where the text contradicts it (the value matrix), not that the
    paper's networks had these shapes.
    """
    width = 2142 if tc.control == "value_matrix_as_in_text" else 100
    ours = table_counts(width)
    tc.record("our counts", ours)
    nn = torch.nn
    tc.record("width-512 hypothesis for 111,744,625",
              numel(nn.Embedding(20732, 100, device="meta"), nn.Linear(214200, 512, device="meta"),
                    nn.Linear(512, 1, device="meta")))
    tc.conclusion.close("Table 1 counts reproduced", [ours["table1 baseline"], ours["table1 attention"]],
                        [TABLE1_COUNTS["baseline"], TABLE1_COUNTS["attention"]], atol=0.5)
    tc.conclusion.close("Table 2 counts reproduced",
                        [ours["table2 baseline"], ours["table2 self-attention"]],
                        [TABLE2_COUNTS["baseline"], TABLE2_COUNTS["self-attention"]], atol=0.5)


SIMPLEX_ROUNDOFF = TailBound(0.0, (
    "a column of p softmax weights exp(l_j - max)/s: each exponential within 1 ulp (the vectorized "
    "exp), the sum s of p terms within (p - 1) u, each quotient within u, and the column's sum of "
    "p quotients within (p - 1) u: |sum - 1| <= (2 p + 2) u = 12 u at p = 5, against tc.tol('exact') "
    "= 64 u on every draw"))


def softmax_underflow_tail(sizes: dict) -> TailBound:
    r"""The probability that a softmax entry of `self_attention_instance`'s draw falls below the
    smallest normal float (the decision "softmax entries positive" fails), bounded from the draw.

    ``A_jz = exp(l_jz - m_z) / s_z`` (torch's softmax subtracts the column's maximum ``m_z``;
    ``1 <= s_z <= p``), so ``A_jz >= exp(-R) / p`` with ``R = 2 max_{j,z} |l_jz|`` over the
    sentence, and in float64 an entry is below ``tiny = 2^-1022`` only if ``R > -log(p tiny) -
    O(u) > 706``; the claim can fail only where ``R > 700`` (the logits' round-off, a few ulps
    of ``||W_Q x_z|| ||W_K x_j||``, is far inside the 6 left).  With ``l_jz = (W_Q x_z)^T (W_K
    x_j) / sqrt(d_q)``, Cauchy-Schwarz and AM-GM give ``|l_jz| <= a b c_z c_j / sqrt(d_q) <=
    (S_jz / 4)^2 / sqrt(d_q)`` with ``a = ||W_Q||_F``, ``b = ||W_K||_F``, ``c_j = ||x_j||`` and
    ``S_jz = a^2 + b^2 + c_z^2 + c_j^2``, so ``R > 700`` needs some pair with ``S_jz > 4
    sqrt(350 sqrt(d_q))``.  The draw's entries are i.i.d. N(0, 1): ``a^2 + b^2 ~ chi2(2 d_q
    t)``, each word's ``c^2 ~ chi2(t)``, independent, so ``S_jz ~ chi2(2 d_q t + 2 t)`` for ``j
    != z`` and ``chi2(2 d_q t) + 2 chi2(t)`` for ``j = z`` (its tail by numerical
    convolution); the union over the ``n`` sentences' ``p`` diagonal and ``p (p - 1) / 2``
    unordered pairs bounds the failure probability."""
    t, p, dq, n = sizes["t"], sizes["p"], sizes["dq"], sizes["n"]
    level = 4.0 * np.sqrt(350.0 * np.sqrt(dq))
    off = float(stats.chi2.sf(level, 2 * dq * t + 2 * t))
    diag = integrate.quad(lambda y: stats.chi2.pdf(y, t) * stats.chi2.sf(level - 2 * y, 2 * dq * t),
                          0.0, np.inf, epsabs=1e-30, limit=200)[0]
    probability = min(1.0, n * (p * diag + p * (p - 1) / 2 * off))
    return TailBound(probability, (
        f"a softmax entry is at least exp(-R)/p, R twice the largest |logit| of its sentence, so it "
        f"can fall below 2^-1022 only where R > 700; |l_jz| <= (S_jz/4)^2/sqrt(d_q) with S_jz = "
        f"||W_Q||_F^2 + ||W_K||_F^2 + ||x_z||^2 + ||x_j||^2 (Cauchy-Schwarz, AM-GM), chi2({2 * dq * t + 2 * t}) "
        f"for j != z and chi2({2 * dq * t}) + 2 chi2({t}) for j = z on the N(0, 1) draw; P[S > {level:.1f}] "
        f"is {off:.2e} and {diag:.2e}, and the union over the {n} sentences' {p} diagonal and "
        f"{p * (p - 1) // 2} unordered pairs is {probability:.2e} (softmax_underflow_tail)"))


@claim(
    f"{PAPER}.thm2.selfattention_shapes_and_count",
    source="Sec. 2 (eqs. (2), (3)), Theorem 2, App. E.4",
    statement="The softmax columns A_i e_z lie on the simplex, vec(W_V X_i A_i) has p d_v entries, "
              "and the self-attention network has p d_v d + d + 2 d_q t + d_v t parameters.",
    provenance="stated",
    nature="identity",
    single_evidence="identities of the construction (simplex columns, shapes, a parameter "
                    "count, eq. (2) against the library's implementation): no data or dynamics "
                    "whose change could break them for the theorem's reason",
    calibration=["issue 31: 'softmax entries positive' was bounded by Cantelli (5.5e-4 on "
                 "73000-73299, over the claim budget 3e-4); it now states its bound from the draw "
                 "(softmax_underflow_tail, 5.8e-5; no threshold changed). Block 74000-74299 (300 "
                 "seeds, quick tier): held on 300 of 300, claim bound 5.9e-5; proof_count missed "
                 "0 (bound 0), query_axis_softmax 0 of 300 (0.0099)"],
    controls={
        "proof_count": Control(
            "statement", breaks=["parameter count equals p d_v d + d + 2 d_q t + d_v t"],
            description="the proof's expression p d_v d + d + 2 p d_q (App. E.4)"),
        "query_axis_softmax": Control(
            "reference", breaks=["A(X) equals eq. (2) evaluated directly"],
            description="eq. (2) evaluated directly with the softmax taken over the queries z "
                        "(the wrong axis) instead of the keys j"),
    },
    sizes={"quick": dict(SELF_SIZES), "full": dict(SELF_SIZES)},
)
def test_selfattention_shapes_and_count(tc):
    r"""Measured on a random network of the library (``t = 4, p = 5, d_q = 3, d_v = 2,
    d = 16``, 10 sentences): the column sums of ``A(X)`` (softmax over keys for each query;
    pass ``|sum - 1| <= tc.tol("exact")``, a few round-offs of a normalised sum: its stated bound
    `SIMPLEX_ROUNDOFF`) and their positivity (every entry at least the smallest normal float,
    strictly positive: an entry underflows only where a column's logits spread by about 706, whose
    probability on the Gaussian draw `softmax_underflow_tail` bounds from chi-square tails of the
    weights' and words' norms, its stated bound; the ratio to that floor spans hundreds of
    decades, ``scale="log"``), column z of ``A`` against
    eq. (2) evaluated directly in numpy for the first sentence,
    ``softmax_j((W_Q x^z)^T (W_K x^j) / sqrt(d_q))`` (pass ``tc.tol("accumulated")``: round-off of
    a normalised exponential), the length of ``v = vec(W_V X A)`` (``p d_v``), and the number
    of trainable entries of the blocks against Theorem 2's factor ``p d_v d + d + 2 d_q t + d_v t = 208``.
    The length and the count follow from the sizes, not from the drawn values, so they are
    decided first, on `setup.self_attention_probe` (the same constructor on a fixed generator,
    before any seeded draw: seed-independent in the calibration).  The
    proof's ``p d_v d + d + 2 p d_q`` (App. E.4) is not the parameter count (the control
    ``proof_count``); the control ``query_axis_softmax`` recomputes eq. (2) directly with the
    softmax over the queries, which a library normalising over the wrong axis would match.
    """
    s = SELF_SIZES
    if tc.control == "proof_count":
        formula = s["p"] * s["dv"] * s["d"] + s["d"] + 2 * s["p"] * s["dq"]
    else:
        formula = s["p"] * s["dv"] * s["d"] + s["d"] + 2 * s["dq"] * s["t"] + s["dv"] * s["t"]
    probe, probe_params = self_attention_probe(RELU)
    count = sum(probe_params[b][0].numel() for b in probe.blocks)
    tc.record("parameter count", count)
    tc.conclusion.close("vec(W_V X A) has p d_v entries", probe.inputs(probe_params).shape[-1],
                        s["p"] * s["dv"], atol=0.5)
    tc.conclusion.close("parameter count equals p d_v d + d + 2 d_q t + d_v t", count, formula,
                        atol=0.5)
    model, params = self_attention_instance(tc.rng("network"), RELU)
    A = self_attention_matrix(model.X, params["WQ"], params["WK"])
    X0, WQ, WK = (v[0].numpy() for v in (model.X[0], params["WQ"], params["WK"]))
    logits = (WK @ X0).T @ (WQ @ X0) / np.sqrt(s["dq"])          # [key j, query z], eq. (2)
    axis = 1 if tc.control == "query_axis_softmax" else 0
    shifted = np.exp(logits - logits.max(axis, keepdims=True))
    direct = shifted / shifted.sum(axis, keepdims=True)
    tc.conclusion.close("A(X) equals eq. (2) evaluated directly", A[0, 0].numpy(), direct,
                        atol=tc.tol("accumulated"))
    tc.conclusion.close("softmax columns sum to one", A.sum(-2), 1.0, atol=tc.tol("exact"),
                        tail_bound=None if tc.control else SIMPLEX_ROUNDOFF)
    tc.conclusion.at_least("softmax entries positive", float(A.min()), torch.finfo(A.dtype).tiny,
                           scale="log", tail_bound=None if tc.control else softmax_underflow_tail(s))
