"""Conformance of token selection's two representations, dense and coefficient space, side by side.

`TokenSelection.in_span` holds W (and u in joint training) as coefficients over the span of the
data; every first-order optimizer of `theorycheck.optim.OPTIMIZERS` that accepts a coefficient
block must produce the same iterates as in the dense form, expanded back with
`TokenSelection.dense`.  Checked from a point away from saturation and from one deep in it
(1 - s_opt < 1e-100 on every sample, asserted), with the fixed decoder and in joint training,
for each variant of the model: self-attention with the exponential loss (the default), with the
logistic loss, and cross-attention (a query z_i per sample) with the logistic loss (the papers'
experimental setting; its span is that of x_{i,t} z_i^T).

Tolerances: 20 steps of a first-order method amplify round-off; a relative perturbation of 1e-16
of the dense start moves the dense iterates by at most ~1e-13 (Polyak, the most sensitive rule,
measured on the conformance instances), so iterates equal to 1e-12 relative are equal to
round-off.  Single evaluations (losses, norms) are compared at 1e-13.
"""
import math

import numpy as np
import pytest
import torch

from theorycheck.errors import DeclarationError
from theorycheck.models.base import Gram
from theorycheck.models.token_selection import (
    TokenSelection,
    _conformance_data,
    _conformance_queries,
    _separating_W,
    log_one_minus_s_opt,
    span_is_cheaper,
    span_kernel,
    token_scores,
)
from theorycheck.optim import (
    OPTIMIZERS,
    Adam,
    MirrorDescent,
    Preconditioned,
    relative_error,
    run_trajectory,
    standard_metrics,
)

K, SEED, STEPS = 3, 0, 20
torch.set_num_threads(1)


#: variant -> (loss, cross-attention)
VARIANTS = {"exponential": ("exponential", False), "logistic": ("logistic", False),
            "cross_logistic": ("logistic", True)}


def problem(joint, saturated, variant="exponential"):
    """(dense model, dense start): the conformance data of the registered token-selection
    instances; deep in saturation every sample has 1 - s_opt < 1e-100 at the start."""
    X, y, u, W = _conformance_data(K, SEED)
    loss, cross = VARIANTS[variant]
    Z = _conformance_queries(K, SEED) if cross else None
    W0 = 2000.0 * _separating_W(X, y, u, Z) if saturated else 0.5 * W
    if saturated:
        opt = token_scores(X, y, u).argmax(-1)
        assert bool((log_one_minus_s_opt(X, W0, opt, queries=Z) < -100 * math.log(10)).all())
    if joint:
        return TokenSelection(X, y, loss=loss, queries=Z), {"u": 50.0 * u if saturated else u, "W": W0}
    return TokenSelection(X, y, u, loss=loss, queries=Z), {"W": W0}


def max_relative_error(A, B):
    return float(relative_error(A, B).max())


CASES = [(joint, saturated, variant) for variant in VARIANTS for joint in (False, True)
         for saturated in (False, True)]


def case_id(case):
    return (("joint" if case[0] else "fixed") + ("-saturated" if case[1] else "")
            + ("" if case[2] == "exponential" else "-" + case[2]))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_start_loss_and_norms_agree(case):
    model, params = problem(*case)
    span_model, coefficients = model.in_span(params)
    dense = span_model.dense(coefficients)
    for b in model.blocks:
        assert max_relative_error(dense[b], params[b]) <= 1e-14, b
        torch.testing.assert_close(span_model.geometry(b).norm(coefficients[b]),
                                   model.geometry(b).norm(params[b]), rtol=1e-13, atol=0)
    torch.testing.assert_close(span_model.log_loss(coefficients), model.log_loss(params), rtol=1e-13, atol=0)
    torch.testing.assert_close(span_model.log_excess_loss(coefficients), model.log_excess_loss(params),
                               rtol=1e-13, atol=0)


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_iterates_equal_to_round_off(case, opt_name):
    model, params = problem(*case)
    span_model, coefficients = model.in_span(params)
    try:
        span_step = OPTIMIZERS[opt_name](span_model)
    except DeclarationError:
        pytest.skip(f"{opt_name} acts on parameter entries: dense form only")
    dense_step = OPTIMIZERS[opt_name](model)
    for t in range(STEPS):
        params, coefficients = dense_step(t, params), span_step(t, coefficients)
    expanded = span_model.dense(coefficients)
    for b in model.blocks:
        assert max_relative_error(expanded[b], params[b]) <= 1e-12, (b, opt_name)
        torch.testing.assert_close(span_model.geometry(b).norm(coefficients[b]),
                                   model.geometry(b).norm(params[b]), rtol=1e-12, atol=0)
    torch.testing.assert_close(span_model.log_loss(coefficients), model.log_loss(params), rtol=1e-12, atol=0)


@pytest.mark.parametrize("opt_name", ["ngd", "ngd_momentum_capped", "polyak"])
@pytest.mark.parametrize("case", [c for c in CASES if c[1]], ids=case_id)
def test_iterates_equal_past_the_refresh_of_derived_products(case, opt_name):
    """Over 3 x `Gram.REFRESH` steps the span step derives most of its Gram products from the
    previous ones (`Gram.combined`) and refreshes them exactly every REFRESH combinations: the
    iterates stay equal to the dense ones at the 20-step tolerance (measured <= 1.3e-14 after
    200 steps, as with every product exact)."""
    model, params = problem(*case)
    span_model, coefficients = model.in_span(params)
    dense_step, span_step = OPTIMIZERS[opt_name](model), OPTIMIZERS[opt_name](span_model)
    for t in range(3 * Gram.REFRESH):
        params, coefficients = dense_step(t, params), span_step(t, coefficients)
    expanded = span_model.dense(coefficients)
    for b in model.blocks:
        assert max_relative_error(expanded[b], params[b]) <= 1e-12, (b, opt_name)


def test_gram_derives_products_of_combinations_and_refreshes_them():
    """A combination of tensors with kept products gets the combined product (per-trial and
    scalar coefficients); a product more than REFRESH combinations from an exact one is formed
    exactly again (seen by changing the matrix under the kept products); a combination of a
    tensor without a kept product is not derived."""
    g = torch.Generator().manual_seed(0)
    M = torch.randn(2, 5, 5, generator=g, dtype=torch.float64)
    geometry = Gram(M @ M.transpose(1, 2))
    exact = lambda c: torch.einsum("kij,kj->ki", geometry.gram, c)  # noqa: E731
    c, v = (torch.randn(2, 5, generator=g, dtype=torch.float64) for _ in range(2))
    torch.testing.assert_close(geometry.apply(c), exact(c), rtol=1e-14, atol=0)
    geometry.apply(v)
    coef = torch.tensor([0.5, -2.0], dtype=torch.float64)
    step = coef[:, None] * v
    geometry.combined(step, [(coef, v)])
    nxt = c - step
    geometry.combined(nxt, [(1.0, c), (-1.0, step)])
    torch.testing.assert_close(geometry.apply(nxt), exact(nxt), rtol=1e-13, atol=1e-14)
    geometry.gram = 2 * geometry.gram  # kept products now disagree with the matrix
    chain = [c]  # its product is exact (0 combinations away) under the old matrix
    for _ in range(Gram.REFRESH + 1):
        chain.append(-chain[-1])
        geometry.combined(chain[-1], [(-1.0, chain[-2])])
    torch.testing.assert_close(geometry.apply(chain[-2]), exact(chain[-2]) / 2, rtol=1e-14, atol=0)
    torch.testing.assert_close(geometry.apply(chain[-1]), exact(chain[-1]), rtol=1e-14, atol=0)
    other = torch.randn(2, 5, generator=g, dtype=torch.float64)
    geometry.combined(other + c, [(1.0, other), (1.0, c)])
    torch.testing.assert_close(geometry.apply(other), exact(other), rtol=1e-14, atol=0)


@pytest.mark.parametrize("case", [c for c in CASES if not c[1]], ids=case_id)
def test_gradient_is_the_coefficient_vector_of_the_dense_gradient(case):
    """The span gradient of each block, expanded over the basis, is the dense gradient at the
    expanded point; gram times it is the coordinate gradient of the plainly written loss
    (autograd through the expansion), i.e. it is the gradient's Riesz representer in `Gram`."""
    model, params = problem(*case)
    span_model, coefficients = model.in_span(params)
    g = torch.Generator().manual_seed(3)
    coefficients = {b: c + 0.1 * torch.randn(c.shape, generator=g, dtype=c.dtype)
                    for b, c in coefficients.items()}
    dense_grad = model.gradient(span_model.dense(coefficients))
    span_grad = span_model.gradient(coefficients)
    autograd = torch.func.grad(lambda p: span_model.reference_loss(p).sum())(coefficients)
    for b in model.blocks:
        assert bool((span_grad[b][:, 0] == 0).all()), f"{b}: the gradient has no part on the start"
        only_b = {c: span_grad[b] if c == b else torch.zeros_like(span_grad[c]) for c in model.blocks}
        assert max_relative_error(span_model.dense(only_b)[b], dense_grad[b]) <= 1e-13, b
        riesz = torch.bmm(span_model.geometry(b).gram, span_grad[b][:, :, None]).squeeze(-1)
        assert max_relative_error(riesz, autograd[b]) <= 1e-12, b


@pytest.mark.parametrize("variant", VARIANTS)
def test_reference_in_the_span_has_exact_coordinates_and_alignment(variant):
    """The W-SVM-like reference (the minimum-norm W with unit logit gaps, a combination of
    (x_o - x_t) z^T) lies in the span: its coordinates expand back to it, and alignment and
    norms measured in coefficient space equal the dense ones."""
    model, params = problem(False, False, variant)
    X, y, u, _ = _conformance_data(K, SEED)
    reference = _separating_W(X, y, u, model.queries)
    span_model, coefficients = model.in_span(params)
    ref_coefficients = span_model.span_coordinates("W", reference)
    assert max_relative_error(span_model.dense({"W": ref_coefficients})["W"], reference) <= 1e-10
    geometry = span_model.geometry("W")
    dense_alignment = (params["W"] * reference).flatten(1).sum(1) / (
        params["W"].flatten(1).norm(dim=1) * reference.flatten(1).norm(dim=1))
    span_alignment = geometry.inner(coefficients["W"], ref_coefficients) / (
        geometry.norm(coefficients["W"]) * geometry.norm(ref_coefficients))
    torch.testing.assert_close(span_alignment, dense_alignment, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_equals_trial_by_trial_in_span(variant):
    model, params = problem(True, False, variant)
    span_model, coefficients = model.in_span(params)
    grads = span_model.gradient(coefficients)
    for k in range(K):
        alone = span_model.restrict(slice(k, k + 1))
        one = {b: c[k:k + 1] for b, c in coefficients.items()}
        torch.testing.assert_close(alone.log_loss(one), span_model.log_loss(coefficients)[k:k + 1],
                                   rtol=1e-13, atol=0)
        for b, g in alone.gradient(one).items():
            assert max_relative_error(g, grads[b][k:k + 1]) <= 1e-13


def test_entrywise_methods_refuse_coefficient_blocks():
    model, params = problem(False, False)
    span_model, _ = model.in_span(params)
    with pytest.raises(DeclarationError, match="entries"):
        MirrorDescent(span_model, 1.5, 0.1)
    with pytest.raises(DeclarationError, match="entries"):
        Adam(span_model, 0.01)
    with pytest.raises(DeclarationError, match="entries"):
        Preconditioned(span_model, 0.1, {"W": torch.eye(25, dtype=torch.float64).expand(K, 25, 25)})
    zero = {"W": torch.zeros(K, 25, dtype=torch.float64)}
    with pytest.raises(DeclarationError, match="dense form"):
        span_model.hessian_vector_product(zero, zero)
    with pytest.raises(DeclarationError, match="span form already"):
        span_model.in_span(params)


def test_cheapest_follows_the_cost_model():
    """Coefficient space where (nT + 1)^2 < n d^2: the canonical (6, 4, 32) and Example 1's full
    (64, 8, 768) sizes are spanned; the conformance size (4, 3, 6) and a long sequence in low
    dimension (2, 64, 4) stay dense."""
    assert span_is_cheaper(6, 4, 32) and span_is_cheaper(64, 8, 768)
    assert not span_is_cheaper(4, 3, 6) and not span_is_cheaper(2, 64, 4)
    model, params = problem(False, False)
    chosen, same = model.cheapest(params)
    assert chosen is model and same["W"] is params["W"]
    g = torch.Generator().manual_seed(4)
    X = torch.randn(1, 6, 4, 32, generator=g, dtype=torch.float64)
    canonical = TokenSelection(X, torch.ones(1, 6, dtype=torch.float64), torch.ones(1, 32, dtype=torch.float64))
    chosen, coefficients = canonical.cheapest({"W": torch.zeros(1, 32, 32, dtype=torch.float64)})
    assert chosen.span is not None and coefficients["W"].shape == (1, 25)


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_span_kernel_is_the_gram_matrix_of_the_rank_one_matrices(cross):
    """span_kernel(X)_{ab} = <x_a z_{i(a)}^T, x_b z_{i(b)}^T>_F (z_i = x_{i,1}, or the given
    cross-attention query), checked against the explicit matrices (entries O(1), float64 sums of
    d^2 = 36 products: 1e-13)."""
    X, *_ = _conformance_data(K, SEED)
    n, T, d = X.shape[1:]
    Z = _conformance_queries(K, SEED) if cross else None
    B = torch.einsum("knte,knf->kntef", X, X[:, :, 0] if Z is None else Z).reshape(K, n * T, d * d)
    torch.testing.assert_close(span_kernel(X, queries=Z), torch.bmm(B, B.transpose(1, 2)),
                               rtol=1e-13, atol=1e-14)


def canonical_problem(joint, K=4, seed=5, n=6, T=4, d=32, variant="exponential"):
    """The canonical size (6, 4, 32), where the cost model picks coefficient space."""
    X, y, u, W = _conformance_data(K, seed, n=n, T=T, d=d)
    loss, cross = VARIANTS[variant]
    Z = _conformance_queries(K, seed, n=n, d=d) if cross else None
    options = dict(loss=loss, queries=Z)
    if joint:
        return (TokenSelection(X, y, **options), {"u": u, "W": 0.5 * W},
                {"u": u, "W": _separating_W(X, y, u, Z)})
    return TokenSelection(X, y, u, **options), {"W": 0.5 * W}, {"W": _separating_W(X, y, u, Z)}


def recorded_form(it):
    """1 where the run steps in coefficient space, 0 where dense (K,)."""
    spanned = it.model is not None and it.model.span is not None
    return torch.full(it.coordinates["W"].shape[:1], float(spanned), dtype=torch.float64)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("opt_name", ["gd", "ngd_momentum_capped", "polyak_capped", "block_ngd_time_factor"])
@pytest.mark.parametrize("joint", [False, True], ids=["fixed", "joint"])
def test_run_trajectory_picks_the_span_by_itself_with_equal_results(joint, opt_name, variant):
    """run_trajectory steps a first-order method in coefficient space where the cost model says so
    (representation "cheapest", the default) and dense with representation "given"; every
    standard metric -- norms, displacement, alignment with a reference in the span (the
    separating W) and one outside it (a Gaussian matrix, measured through its representer),
    loss, s_opt, logit gaps -- the recorded dense iterates and the final ones agree to 1e-11
    relative (100 steps of round-off; 1e-12 after 20 steps in the tests above)."""
    model, params0, refs = canonical_problem(joint, variant=variant)
    g = torch.Generator().manual_seed(9)
    outside = torch.randn(params0["W"].shape, generator=g, dtype=torch.float64)
    opt = token_scores(model.X, model.y, refs.get("u", model.u)).argmax(-1)
    metrics = standard_metrics(model, refs=refs, iterates=True, opt=opt)
    metrics["outside_alignment"] = lambda it: it.alignment("W", outside)
    metrics["outside_step_inner"] = lambda it: it.inner("W", outside, of="step")
    metrics["form"] = recorded_form
    checkpoints = [0, 1, 10, 100]
    runs = {rep: run_trajectory(OPTIMIZERS[opt_name](model), params0, 100, metrics, checkpoints=checkpoints,
                                representation=rep) for rep in ("cheapest", "given")}
    auto, dense = runs["cheapest"], runs["given"]
    assert (auto["form"] == 1).all() and (dense["form"] == 0).all()
    for name in metrics:
        if name == "form":
            continue
        scale = np.nanmax(np.abs(dense[name]))  # NaN: log(L - L_*) where L < L_* (opt not the argmax)
        np.testing.assert_allclose(auto[name], dense[name], rtol=1e-11, atol=1e-11 * scale, err_msg=name)
    for b in model.blocks:
        assert max_relative_error(auto.params[b], dense.params[b]) <= 1e-11, b


def test_entrywise_steps_stay_dense_and_bad_representation_is_refused():
    """Mirror descent's step has no coefficient form: run_trajectory runs it as given, on the dense
    model; an unknown representation is a DeclarationError naming the choices."""
    model, params0, _ = canonical_problem(False)
    traj = run_trajectory(MirrorDescent(model, 1.5, 0.1), params0, 3, {"form": recorded_form})
    assert (traj["form"] == 0).all()
    with pytest.raises(DeclarationError, match="representation"):
        run_trajectory(OPTIMIZERS["gd"](model), params0, 3, {}, representation="sparse")
