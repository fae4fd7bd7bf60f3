"""Tests of theorycheck.models.two_layer against independent references: torch.func autograd
of the outputs and the loss, the symmetric initialization's zero output, and the errors."""
import math

import numpy as np
import pytest
import torch

from theorycheck.errors import DeclarationError
from theorycheck.models import two_layer
from theorycheck.models import (
    ACTIVATIONS,
    TwoLayerNetwork,
    independent_initialization,
    loss_gradient,
    neuron_coefficients,
    ntk_gram,
    ntk_gram_autograd,
    outputs,
    symmetric_initialization,
)

torch.set_num_threads(1)


def problem(activation, K=2, n=4, d_in=5, d=3, m=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((K, n, d_in))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    Y = rng.standard_normal((K, n, d))
    W, A = independent_initialization(rng, K, d_in, d, m, 0.7)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    return t(X), t(Y), t(W), t(A)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_closed_form_kernel_equals_jacobian_contraction(activation):
    X, Y, W, A = problem(activation)
    X2 = X.flip(1)[:, :3]
    closed, auto = ntk_gram(X, X2, W, A, activation), ntk_gram_autograd(X, X2, W, A, activation)
    assert closed.shape == (2, 3 * 4, 3 * 3)
    assert float((closed - auto).norm() / auto.norm()) < 1e-13


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_closed_form_gradient_equals_autograd(activation):
    X, Y, W, A = problem(activation)
    model = TwoLayerNetwork(X, Y, A, activation)
    auto = torch.func.grad(lambda w: model.loss({"W": w}).sum())(W)
    closed = loss_gradient(X, Y, W, A, activation)
    assert float((closed - auto).norm() / auto.norm()) < 1e-13


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gradient_over_slices_of_samples_equals_autograd(activation, monkeypatch):
    """With a one-byte slice budget the samples go in slices of d_in = 5 rows (5, 5, 3): the
    summed slice gradients and the concatenated outputs equal the one-piece autograd values."""
    monkeypatch.setattr(two_layer, "SLICE_BYTES", 1)
    X, Y, W, A = problem(activation, n=13)
    model = TwoLayerNetwork(X, Y, A, activation)
    auto = torch.func.grad(lambda w: model.loss({"W": w}).sum())(W)
    F, closed = two_layer.outputs_and_loss_gradient(X, Y, W, A, activation)
    assert float((closed - auto).norm() / auto.norm()) < 1e-13
    torch.testing.assert_close(F, outputs(X, W, A, activation), rtol=1e-13, atol=1e-15)


def test_softmax_output_and_shift_invariance():
    X, Y, W, A = problem("softmax")
    m = W.shape[2]
    S = torch.softmax(torch.einsum("kne,kem->knm", X, W), -1)
    torch.testing.assert_close(outputs(X, W, A), m * torch.einsum("knm,kdm->knd", S, A))
    G = neuron_coefficients(X, W, A)
    assert float(G.sum(-1).abs().max()) < 1e-12 * float(G.abs().max())


def test_output_major_ordering():
    """Row l*n + i of the Gram matrix belongs to output l and sample i."""
    X, Y, W, A = problem("softmax")
    H = ntk_gram(X, X, W, A)
    G = neuron_coefficients(X, W, A)
    l, i, l2, j, m = 2, 1, 0, 3, W.shape[2]
    expected = (X[0, i] @ X[0, j]) * (G[0, i, l] @ G[0, j, l2]) / m
    torch.testing.assert_close(H[0, l * 4 + i, l2 * 4 + j], expected)


def test_symmetric_initialization_gives_zero_outputs():
    rng = np.random.default_rng(1)
    W, A = symmetric_initialization(rng, 3, 4, 2, 10, 1.0)
    assert np.array_equal(W[..., 0::2], W[..., 1::2]) and np.array_equal(A[..., 0::2], -A[..., 1::2])
    X = torch.as_tensor(rng.standard_normal((3, 7, 4)))
    for activation in ACTIVATIONS:
        assert float(outputs(X, torch.as_tensor(W), torch.as_tensor(A), activation).abs().max()) < 1e-12


def test_bad_input_raises():
    X, Y, W, A = problem("softmax")
    with pytest.raises(DeclarationError, match="activation"):
        outputs(X, W, A, "tanh")
    with pytest.raises(DeclarationError, match="inconsistent shapes"):
        outputs(X, W.transpose(1, 2), A)
    with pytest.raises(DeclarationError, match="even width"):
        symmetric_initialization(np.random.default_rng(0), 1, 2, 2, 5, 1.0)
    with pytest.raises(DeclarationError, match="labels Y"):
        TwoLayerNetwork(X, Y[:, :2], A)


def test_gradient_forward_is_reused_for_the_same_unmodified_weights():
    X, Y, W, A = problem("softmax")
    model = TwoLayerNetwork(X, Y, A)
    model.scaled_gradient({"W": W})
    shared = model.outputs(W)
    assert shared is model.outputs(W)                       # one forward pass for step and loss
    torch.testing.assert_close(shared, outputs(X, W, A), rtol=1e-14, atol=1e-14)
    assert model.outputs(W.clone()) is not shared           # another tensor: computed afresh
    W.mul_(1.5)                                             # in-place change: the cache is stale
    torch.testing.assert_close(model.outputs(W), outputs(X, W, A), rtol=1e-14, atol=1e-14)
    assert float((model.outputs(W) - shared).abs().max()) > 1e-3


def test_unit_scaled_gradient_keeps_the_tensor_and_marks_zero_trials():
    """`unit_scaled` (the two-layer network's gradient form): direction = the tensor itself,
    log scale 0, and -inf on a trial whose tensor is exactly zero (as `scaled` does), so that
    rules which skip zero gradients (mirror descent) see it."""
    from theorycheck.models.base import scaled, unit_scaled

    tensor = torch.randn(3, 4, 5, dtype=torch.float64)
    tensor[1] = 0.0
    unit = unit_scaled(tensor)
    assert unit.direction is tensor
    assert unit.log_scale.tolist() == [0.0, -math.inf, 0.0]
    torch.testing.assert_close(unit.value(), scaled(tensor).value(), rtol=1e-15, atol=0)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("same_inputs", [True, False])
def test_kernel_formed_over_chunks_of_trials_equals_one_batch(activation, same_inputs, monkeypatch):
    """`ntk_gram` one trial at a time (`GRAM_CHUNK_BYTES` below one trial's coefficients): each
    trial's kernel is the one-batch kernel's slice, also with gradients flowing through W."""
    X, _, W, A = problem(activation, K=3, n=9, d=2, m=32, seed=5)
    X2 = X if same_inputs else X[:, :5]
    whole = ntk_gram(X, X2, W, A, activation)
    ulps = 16 * torch.finfo(whole.dtype).eps * float(whole.abs().max())
    monkeypatch.setattr(two_layer, "GRAM_CHUNK_BYTES", 1)
    torch.testing.assert_close(ntk_gram(X, X2, W, A, activation), whole, rtol=0, atol=ulps)
    for k in range(3):
        torch.testing.assert_close(ntk_gram(X[k:k + 1], X2[k:k + 1], W[k:k + 1], A[k:k + 1], activation),
                                   whole[k:k + 1], rtol=0, atol=ulps)
    if activation != "relu":                # the ReLU kernel is piecewise constant in W
        W_grad = W.clone().requires_grad_()
        ntk_gram(X, X2, W_grad, A, activation).sum().backward()
        assert torch.isfinite(W_grad.grad).all() and float(W_grad.grad.abs().max()) > 0


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_kernel_formed_over_slices_of_samples_equals_one_batch(activation, monkeypatch):
    X, _, W, A = problem(activation, K=2, n=70, d=2, m=64, seed=4)
    X2 = X[:, :37]
    whole = ntk_gram(X, X2, W, A, activation)
    monkeypatch.setattr(two_layer, "COEFFICIENT_SLICE_BYTES", 1)   # slices of 8 to 16 samples
    # the same values up to the batched products' rounding: bitwise where the BLAS kernels of a
    # slice and of the whole batch agree (the VM of earlier sessions), within an ulp or two of the largest entry
    # where they do not (an AMD EPYC VM; the measured gap is in BENCHMARKS.md)
    torch.testing.assert_close(ntk_gram(X, X2, W, A, activation), whole, rtol=0,
                               atol=16 * torch.finfo(whole.dtype).eps * float(whole.abs().max()))
    W_grad = W.clone().requires_grad_()    # with gradients flowing: one batch, the graph intact
    kernel = ntk_gram(X, X2, W_grad, A, activation)
    assert torch.equal(kernel.detach(), whole)
    if activation != "relu":                # the ReLU kernel is piecewise constant in W
        kernel.sum().backward()
        assert torch.isfinite(W_grad.grad).all() and float(W_grad.grad.abs().max()) > 0
