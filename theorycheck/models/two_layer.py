r"""Two-layer networks with a trained first layer and a fixed sign second layer, batched over trials.

The softmax network (Gu, Li, Liang, Shi, Song 2024, arXiv 2405.03251) and, for comparison,
the ReLU network (coupled initialization, Song, Yang et al.) and the exponential network, all
with first layer ``W = [w_1, ..., w_m]`` (d_in x m, trained) and second layer ``A`` (d x m,
entries in {-1, +1}, fixed).  For an input ``x`` (d_in) and output coordinate ``l``:

    softmax  F(x)_l = m <a_l, S(W^T x)>,   S = exp(W^T x) / <exp(W^T x), 1>
    relu     F(x)_l = m^{-1/2} sum_r a_{l,r} max(w_r^T x, 0)
    exp      F(x)_l = m^{-1/2} sum_r a_{l,r} exp(w_r^T x)

Derivative in neuron ``r``: ``dF_l(x)/dw_r = g_{l,r}(x) x`` with

    softmax  g_{l,r} = m S_r (a_{l,r} - <a_l, S>)       (uses <1, S> = 1)
    relu     g_{l,r} = m^{-1/2} a_{l,r} 1[w_r^T x > 0]
    exp      g_{l,r} = m^{-1/2} a_{l,r} exp(w_r^T x)

Neural tangent kernel of two input sets (rows and columns output-major: index
``l * n + i`` for output ``l`` and sample ``i``):

    H_{(l1,i),(l2,j)} = c_m x_i^T x'_j sum_r g_{l1,r}(x_i) g_{l2,r}(x'_j),

``c_m = 1/m`` for the softmax network (the paper's normalisation, H = J J^T / m) and ``1``
for the others (H = J J^T).  Gradient descent on ``L(W) = 1/2 ||F - Y||_F^2`` with step
``eta`` moves the outputs by ``-eta s_m H (F - Y)`` to first order, ``s_m = 1 / c_m``
(`function_step_factor`).  The kernel is computed twice: in closed form (`ntk_gram`) and as
a contraction of the ``torch.func`` Jacobian (`ntk_gram_autograd`).

Shapes: X (K, n, d_in), Y (K, n, d), W (K, d_in, m), A (K, d, m); outputs (K, n, d).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from theorycheck.batching import chunk_slices, map_chunks
from theorycheck.errors import DeclarationError
from theorycheck.models.base import Instance, Model, register_model, unit_scaled

__all__ = [
    "ACTIVATIONS",
    "TwoLayerNetwork",
    "function_step_factor",
    "independent_initialization",
    "kernel_normalisation",
    "loss_gradient",
    "neuron_coefficients",
    "ntk_gram",
    "ntk_gram_autograd",
    "ntk_jacobian",
    "neuron_norms",
    "outputs",
    "preactivations",
    "symmetric_initialization",
]

ACTIVATIONS = ("softmax", "relu", "exp")


def _check_activation(activation):
    if activation not in ACTIVATIONS:
        raise DeclarationError(f"unknown activation {activation!r}; use one of {ACTIVATIONS}")


def _check_shapes(X, W, A):
    if X.dim() != 3 or W.dim() != 3 or A.dim() != 3:
        raise DeclarationError(f"need X (K,n,d_in), W (K,d_in,m), A (K,d,m); got shapes "
                               f"{tuple(X.shape)}, {tuple(W.shape)}, {tuple(A.shape)}")
    if X.shape[2] != W.shape[1] or W.shape[2] != A.shape[2] or not X.shape[0] == W.shape[0] == A.shape[0]:
        raise DeclarationError(f"inconsistent shapes X {tuple(X.shape)}, W {tuple(W.shape)}, "
                               f"A {tuple(A.shape)}: need X (K,n,d_in), W (K,d_in,m), A (K,d,m)")


def preactivations(X, W):
    """``w_r^T x_i``, shape (K, n, m)."""
    return torch.einsum("kne,kem->knm", X, W)


def hidden_units(X, W, activation="softmax"):
    """The hidden layer the second layer reads: ``S(W^T x_i)`` (softmax) or ``relu`` / ``exp`` of
    ``w_r^T x_i``, shape (K, n, m)."""
    Z = preactivations(X, W)
    if activation == "softmax":
        return torch.softmax(Z, dim=-1)
    return torch.relu(Z) if activation == "relu" else torch.exp(Z)


def output_scale(activation, m):
    """The factor in front of ``<a_l, hidden>``: ``m`` (softmax) or ``m^{-1/2}``."""
    return float(m) if activation == "softmax" else 1.0 / math.sqrt(m)  # host: the width m, a Python int


def outputs(X, W, A, activation="softmax"):
    """The network outputs ``F(x_i)_l``, shape (K, n, d)."""
    _check_activation(activation)
    _check_shapes(X, W, A)
    return output_scale(activation, W.shape[2]) * hidden_units(X, W, activation) @ A.transpose(1, 2)


def neuron_coefficients(X, W, A, activation="softmax"):
    r"""``g_{l,r}(x_i)`` with ``dF_l(x_i)/dw_r = g_{l,r}(x_i) x_i``, shape (K, n, d, m)."""
    _check_activation(activation)
    _check_shapes(X, W, A)
    Z = preactivations(X, W)
    m = W.shape[2]
    if activation == "softmax":
        S = torch.softmax(Z, dim=-1)                                        # (K,n,m)
        mean_a = torch.einsum("knm,kdm->knd", S, A)                         # <a_l, S_i>
        return m * S[:, :, None, :] * (A[:, None, :, :] - mean_a[..., None])
    slope = (Z > 0).to(X.dtype) if activation == "relu" else torch.exp(Z)
    return slope[:, :, None, :] * A[:, None, :, :] / math.sqrt(m)


def neuron_norms(W):
    """``||w_r||_2`` per neuron, (K, m): the square root of the column sums of squares (a
    reduction over the middle axis; ``torch.linalg.vector_norm(W, dim=1)`` takes 10-15 times
    longer on CPU at (K, d_in, m) = (16, 8, 4096))."""
    return W.square().sum(1).sqrt()


def kernel_normalisation(activation, m):
    """``c_m``: ``1/m`` for the softmax network's kernel, 1 for the others."""
    _check_activation(activation)
    return 1.0 / m if activation == "softmax" else 1.0


def function_step_factor(activation, m):
    """``s_m = 1 / c_m``: GD with step eta moves the outputs by ``-eta s_m H (F - Y)``."""
    return 1.0 / kernel_normalisation(activation, m)


#: bytes of coefficients (with their output-major copy) per chunk of trials when `ntk_gram`
#: forms the kernels trial chunk by trial chunk (glls24's Definition 3.6 claim at the full tier:
#: 12 trials of 32 samples, 4 outputs, m = 2^18 are 3.2 GB of coefficients, and as much again
#: for the copy, if formed at once)
GRAM_CHUNK_BYTES = 2**30


def ntk_gram(X1, X2, W, A, activation="softmax"):
    r"""The NTK between two input sets in closed form, shape (K, d n1, d n2) (output-major),
    formed over chunks of the trials (the leading dimension of every argument) of about
    `GRAM_CHUNK_BYTES` of coefficients: a trial's kernel depends on that trial's arguments
    only, so the chunks give the values of one batch up to the rounding of the sample slices
    (`_output_major_coefficients`)."""
    same = X2 is X1
    samples = X1.shape[1] + (0 if same else X2.shape[1])
    per_trial = 2 * samples * A.shape[1] * W.shape[2] * W.element_size()
    return map_chunks(lambda x1, x2, w, a: _trials_ntk_gram(x1, x1 if same else x2, w, a, activation),
                      X1, X2, W, A, item_bytes=per_trial, budget=GRAM_CHUNK_BYTES)


def _trials_ntk_gram(X1, X2, W, A, activation):
    """`ntk_gram` of one chunk of trials."""
    G1 = _output_major_coefficients(X1, W, A, activation)
    G2 = G1 if X2 is X1 else _output_major_coefficients(X2, W, A, activation)
    d = A.shape[1]
    inputs = torch.einsum("kie,kje->kij", X1, X2).repeat(1, d, d)
    return (G1 @ G2.transpose(1, 2)) * inputs * kernel_normalisation(activation, W.shape[2])


#: bytes of temporaries per slice of samples when `ntk_gram` forms the coefficients slice by
#: slice, and the fewest samples a full slice holds (balanced slices hold at least half of it:
#: the batched products round differently on one or two rows; from three on they agreed bitwise
#: on the VM of earlier sessions and within an ulp or two on an AMD EPYC one, whose BLAS kernels
#: depend on the number of rows)
COEFFICIENT_SLICE_BYTES, COEFFICIENT_SLICE_ROWS = 256 * 2**20, 16


def _output_major_coefficients(X, W, A, activation):
    r"""`neuron_coefficients` output-major, (K, d n, m), formed over slices of the samples of about
    `COEFFICIENT_SLICE_BYTES` of temporaries (the preactivations, the softmax and the (K, n, d, m)
    products: 3 + 2d arrays of the slice's size) and written into one tensor.  A sample's
    coefficients depend on that sample only and each operation is row by row, so the slices give
    the values of all samples at once up to the batched products' rounding (balanced slices of at
    least 8 samples; bitwise where the BLAS kernels do not depend on the number of rows, within
    an ulp or two of the largest entry where they do: tests/test_two_layer_model.py); only the
    result is as large as all samples (Claim
    G.1 of glls24 at the full tier, 7048 samples, m = 16384, three trials: 2.8 GB, against five
    times that at once).  Where gradients flow through the inputs, all samples at once (an
    in-place write would cut the graph)."""
    K, n, _ = X.shape
    d, m = A.shape[1], W.shape[2]
    row_bytes = (3 + 2 * d) * K * m * X.element_size()
    slices = chunk_slices(n, row_bytes, max(COEFFICIENT_SLICE_BYTES, COEFFICIENT_SLICE_ROWS * row_bytes),
                          balanced=True)
    if len(slices) == 1 or (torch.is_grad_enabled() and any(t.requires_grad for t in (X, W, A))):
        return _output_major(neuron_coefficients(X, W, A, activation))
    G = X.new_empty((K, n, d, m))
    for rows in slices:
        G[:, rows] = neuron_coefficients(X[:, rows], W, A, activation)
    return _output_major(G)


def _output_major(G):
    """Coefficients (K, n, d, m) as rows ``l * n + i``: (K, d n, m)."""
    K, n, d, m = G.shape
    return G.transpose(1, 2).reshape(K, d * n, m)


def ntk_jacobian(X, W, A, activation="softmax"):
    r"""``J = d vec F / d W`` by ``torch.func.jacrev``, shape (K, d n, d_in m); ``vec`` is
    output-major (row ``l * n + i``) and W is flattened row-major (entry (e, r) at ``e m + r``)."""
    _check_activation(activation)
    _check_shapes(X, W, A)

    def vec_outputs(x, w, a):
        return outputs(x[None], w[None], a[None], activation)[0].T.reshape(-1)

    jac = torch.func.vmap(torch.func.jacrev(vec_outputs, argnums=1))(X, W, A)   # (K, dn, d_in, m)
    return jac.flatten(2)


def ntk_gram_autograd(X1, X2, W, A, activation="softmax"):
    r"""The NTK as ``c_m J(X1) J(X2)^T`` from `ntk_jacobian` (independent of `ntk_gram`)."""
    J1 = ntk_jacobian(X1, W, A, activation)
    J2 = J1 if X2 is X1 else ntk_jacobian(X2, W, A, activation)
    return kernel_normalisation(activation, W.shape[2]) * J1 @ J2.transpose(1, 2)


#: bytes of one (K, rows, m) hidden-layer slice: the gradient is formed over slices of the
#: samples of about this size, so that its dozen passes over the hidden layer stay in cache
#: (the rows are independent until the final sum; measured on the CI-class VM with its 1 MiB L2
#: and 32 MiB L3: 0.85 -> 0.27 CPU s a step at n = 2048, m = 16384, d_in = 3; best between 1 and 4 MiB)
SLICE_BYTES = 2 * 2**20


def outputs_and_loss_gradient(X, Y, W, A, activation="softmax"):
    r"""The outputs F (K, n, d) and ``dL/dW`` of ``L = 1/2 ||F - Y||_F^2`` (K, d_in, m) from one
    forward pass: ``dL/dw_r = sum_i c_{i,r} x_i`` with ``c_{i,r} = sum_l E_{i,l} g_{l,r}(x_i)``,
    ``E = F - Y``; with ``P = E A`` (K, n, m) this is ``m S_{i,r} (P_{i,r} - <E_i, F_i> / m)`` for
    the softmax (``<a_l, S_i> = F_{i,l} / m``) and ``m^{-1/2} sigma'(w_r^T x_i) P_{i,r}`` otherwise,
    so no (K, n, d, m) tensor is formed: two products of size n d_in m and two of size n d m.
    Samples are processed in slices of ``SLICE_BYTES`` of hidden layer, but of at least d_in
    rows (each slice reads W once: a slice as large as W keeps those reads below a tenth of the
    traffic), and the slices' gradients summed (the same sum, in another order)."""
    _check_activation(activation)
    _check_shapes(X, W, A)
    K, n, _ = X.shape
    m = W.shape[2]
    F, grad = [], None
    row_bytes = K * m * X.element_size()
    for rows in chunk_slices(n, row_bytes, max(SLICE_BYTES, X.shape[2] * row_bytes)):
        F_rows, C = _slice_outputs_and_coefficients(X[:, rows], Y[:, rows], W, A, activation)
        if grad is None:
            grad = torch.bmm(X[:, rows].transpose(1, 2), C)
        else:
            grad.baddbmm_(X[:, rows].transpose(1, 2), C)
        F.append(F_rows)
    return torch.cat(F, 1), W.new_zeros(W.shape) if grad is None else grad


def _slice_outputs_and_coefficients(X, Y, W, A, activation):
    """F and the coefficients ``c_{i,r}`` of `outputs_and_loss_gradient` on a slice of samples."""
    m = W.shape[2]
    h = hidden_units(X, W, activation)
    F = output_scale(activation, m) * h @ A.transpose(1, 2)
    E = F - Y
    C = E @ A                                                   # P, then c in place
    if activation == "softmax":
        C.sub_((E * F).sum(-1, keepdim=True) / m).mul_(h).mul_(m)
    else:
        C.mul_((h > 0).to(h.dtype) if activation == "relu" else h).mul_(output_scale(activation, m))
    return F, C


def loss_gradient(X, Y, W, A, activation="softmax"):
    r"""``dL/dW`` of ``L = 1/2 ||F - Y||_F^2`` in closed form (`outputs_and_loss_gradient`):
    ``dL/dw_r = sum_{i,l} (F_{l,i} - Y_{l,i}) g_{l,r}(x_i) x_i``, shape (K, d_in, m)."""
    return outputs_and_loss_gradient(X, Y, W, A, activation)[1]


def symmetric_initialization(rng: np.random.Generator, K, d_in, d, m, sigma):
    r"""Symmetric (coupled) initialization, numpy arrays W (K, d_in, m), A (K, d, m): for each
    pair r, ``w_{2r} = w_{2r+1} ~ N(0, sigma^2 I)`` and the sign column ``a_{:,2r}`` uniform in
    {-1,+1}^d with ``a_{:,2r+1} = -a_{:,2r}``; every output is then zero at every input."""
    if m % 2:
        raise DeclarationError(f"symmetric initialization needs an even width, got m={m}")
    half_W = sigma * rng.standard_normal((K, d_in, m // 2))
    half_A = rng.choice([-1.0, 1.0], size=(K, d, m // 2))
    W = np.repeat(half_W, 2, axis=2)
    A = np.stack([half_A, -half_A], axis=3).reshape(K, d, m)
    return W, A


def independent_initialization(rng: np.random.Generator, K, d_in, d, m, sigma):
    """Every column drawn independently: ``w_r ~ N(0, sigma^2 I)``, signs uniform in {-1,+1}."""
    return sigma * rng.standard_normal((K, d_in, m)), rng.choice([-1.0, 1.0], size=(K, d, m))


class TwoLayerNetwork(Model):
    r"""Squared loss ``L(W) = 1/2 sum_{i,l} (F(x_i)_l - Y_{i,l})^2`` of a two-layer network of
    the module docstring; one block ``W`` (K, d_in, m), the second layer ``A`` fixed.  The
    gradient is the closed form `loss_gradient` (no saturation: the softmax outputs are
    bounded by ``m``)."""

    blocks = ("W",)
    infimum = None

    def __init__(self, X, Y, A, activation="softmax"):
        _check_activation(activation)
        if Y.dim() != 3 or Y.shape[:2] != X.shape[:2] or Y.shape[2] != A.shape[1]:
            raise DeclarationError(f"labels Y must be (K, n, d) with X (K, n, d_in) and A (K, d, m); "
                                   f"got Y {tuple(Y.shape)}, X {tuple(X.shape)}, A {tuple(A.shape)}")
        self.X, self.Y, self.A, self.activation = X, Y, A, activation
        self._last_forward = None

    def restrict(self, trials):
        return TwoLayerNetwork(self.X[trials], self.Y[trials], self.A[trials], self.activation)

    def outputs(self, W, X=None):
        """The outputs on the training inputs (or on ``X``), (K, n, d); on the training inputs
        at the ``W`` of the last gradient (same tensor, not modified since) they are reused:
        a GD step and the loss metric of the same iterate share one forward pass."""
        last = self._last_forward
        if X is None and last is not None and last[0] is W and last[1] == W._version:
            return last[2]
        return outputs(self.X if X is None else X, W, self.A, self.activation)

    def loss(self, params):
        return 0.5 * (self.outputs(params["W"]) - self.Y).pow(2).flatten(1).sum(1)

    def log_loss(self, params):
        return torch.log(self.loss(params))

    def scaled_gradient(self, params):
        W = params["W"]
        F, grad = outputs_and_loss_gradient(self.X, self.Y, W, self.A, self.activation)
        self._last_forward = (W, W._version, F)
        return {"W": unit_scaled(grad)}

    def gram(self, W):
        """The NTK Gram matrix of the training inputs at ``W``, (K, d n, d n)."""
        return ntk_gram(self.X, self.X, W, self.A, self.activation)

    def metrics(self, W0=None, H0=None, X_test=None):
        r""""log_loss"; with the initialization ``W0``: "max_movement" ``max_r ||w_r - w_r(0)||``
        and "rms_movement"; with ``H0``: "kernel_drift" ``||H(W) - H0||_F``; with test inputs
        ``X_test`` (K, n_te, d_in): "test_outputs" (K, n_te, d)."""
        from theorycheck.optim.metrics import once_per_iterate

        metrics = {"log_loss": lambda it: self.log_loss(it.params)}
        if W0 is not None:
            movement = once_per_iterate(lambda it: neuron_norms(it.params["W"] - W0))
            metrics["max_movement"] = lambda it: movement(it).amax(1)
            metrics["rms_movement"] = lambda it: movement(it).pow(2).mean(1).sqrt()
        if H0 is not None:
            metrics["kernel_drift"] = lambda it: torch.linalg.matrix_norm(self.gram(it.params["W"]) - H0)
        if X_test is not None:
            metrics["test_outputs"] = lambda it: self.outputs(it.params["W"], X_test)
        return metrics


def _conformance_instance(K, seed, activation):
    rng = np.random.default_rng(seed)
    n, d_in, d, m = 4, 5, 2, 8
    X = rng.standard_normal((K, n, d_in))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    Y = 0.5 * rng.standard_normal((K, n, d))
    W, A = independent_initialization(rng, K, d_in, d, m, 0.5)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)                       # noqa: E731
    return Instance(TwoLayerNetwork(t(X), t(Y), t(A), activation), {"W": t(W)}, None)


for _activation in ACTIVATIONS:
    register_model(f"two_layer_{_activation}")(
        lambda K, seed, _a=_activation: _conformance_instance(K, seed, _a))
