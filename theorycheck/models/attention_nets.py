r"""Two-layer networks whose input is multiplied by an attention mask, on the model protocol.

Global ("naive") attention, one mask ``a`` for every input::

    f(x; a, W1, W2) = W2^T phi(W1^T (x * a)),      x, a in R^p, W1 (p, d), W2 (d,)

the baseline is the same network without the mask (``a = 1``).  Self-attention over the
``p`` columns ("words") of ``X in R^{t x p}``::

    A(X)[:, z] = softmax_j( (W_Q x^z)^T (W_K x^j) / sqrt(d_q) )       (columns on the simplex)
    v(X)       = vec(W_V X A(X))   (column-stacking: word 1's value first),   v in R^{p d_v}
    f(X)       = W2^T phi(W1^T v(X)),   W1 (p d_v, d), W2 (d,)

Both are trained on the empirical squared loss ``R_n = (1/2n) sum_i (f(x_i) - y_i)^2``.  The
activation is ReLU or the softplus ``phi_tau(z) = log(1 + exp(tau z)) / tau`` (ReLU as
``tau -> inf``); softplus is evaluated with a large linearisation threshold so that its value
and derivative are exact to float64 round-off (torch's default threshold 20 replaces it by the
identity where ``tau z > 20``, an error of ``exp(-20)/tau`` that gradient checks see).

The ReLU network is positively homogeneous in each layer, so
``T(a, W1, W2) = (c1 a, c2 W1, W2 / (c1 c2))`` (global) and ``(W1, W2) -> (c W1, W2 / c)``
(self-attention), ``c1 c2 > 0``, leave ``f`` unchanged; for softplus
``(1/c) phi_tau(c z) = phi_{c tau}(z)``, so the same map changes the temperature instead.

Source of the models: "Understanding Attention Mechanisms" (anonymous, ICLR 2020 submission),
Sec. 2, eqs. (1)-(4), (6).  Batched over the protocol's leading trial dimension ``K``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from theorycheck.errors import DeclarationError, UsageError
from theorycheck.models.base import Instance, Model, register_model

__all__ = [
    "parameters_reached",
    "Activation",
    "RELU",
    "SOFTPLUS_THRESHOLD",
    "activate",
    "activation_derivative",
    "attended_inputs",
    "hidden_preactivations",
    "hidden_features",
    "global_attention_output",
    "global_attention_gradients",
    "squared_loss",
    "GlobalAttentionNet",
    "BaselineNet",
    "scale_global_attention",
    "self_attention_matrix",
    "self_attention_values",
    "self_attention_output",
    "SelfAttentionNet",
    "scale_self_attention",
    "last_layer_certificate",
    "OBJECTIVES",
    "BiasedAttentionNet",
    "BiasedBaselineNet",
    "biased_attention_output",
]

#: softplus is replaced by the identity only where tau z > 500: exp(-500) is below float64 range
SOFTPLUS_THRESHOLD = 500.0


@dataclass(frozen=True)
class Activation:
    """``relu`` or ``softplus`` with inverse temperature ``tau`` (``phi_tau``)."""

    name: str
    tau: float = 1.0

    def __post_init__(self):
        if self.name not in ("relu", "softplus"):
            raise DeclarationError(f"activation {self.name!r}: use 'relu' or 'softplus'")
        if not self.tau > 0:
            raise DeclarationError(f"activation {self.name!r}: tau must be positive, got {self.tau}")

    @property
    def homogeneous(self) -> bool:
        """Whether ``phi(c z) = c phi(z)`` for every ``c > 0`` (ReLU only)."""
        return self.name == "relu"


RELU = Activation("relu")


def activate(z: torch.Tensor, act: Activation) -> torch.Tensor:
    """``phi(z)`` elementwise."""
    if act.name == "relu":
        return torch.relu(z)
    return torch.nn.functional.softplus(z, beta=act.tau, threshold=SOFTPLUS_THRESHOLD)


def activation_derivative(z: torch.Tensor, act: Activation) -> torch.Tensor:
    """``phi'(z)`` elementwise (ReLU: the indicator of ``z > 0``; softplus: ``sigmoid(tau z)``)."""
    if act.name == "relu":
        return (z > 0).to(z.dtype)
    return torch.sigmoid(act.tau * z)


def _check_data(X: torch.Tensor, y: torch.Tensor, input_dims: int, what: str) -> None:
    if X.dim() != input_dims + 2 or y.shape != X.shape[:2]:
        raise DeclarationError(f"{what}: X must be (K, n, {'t, p' if input_dims == 2 else 'p'}) "
                               f"and y (K, n); got X {tuple(X.shape)}, y {tuple(y.shape)}")


def squared_loss(output: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``R_n = (1/2n) sum_i (f_i - y_i)^2`` per trial, (K,)."""
    return 0.5 * ((output - y) ** 2).mean(-1)


# -- global attention ----------------------------------------------------------------------------
def attended_inputs(X: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """``x_i * a`` for every sample: X (K, n, p), a (K, p) -> (K, n, p)."""
    return X * a.unsqueeze(1)


def hidden_preactivations(inputs: torch.Tensor, W1: torch.Tensor) -> torch.Tensor:
    """``W1^T v_i`` for every sample: inputs (K, n, q), W1 (K, q, d) -> (K, n, d)."""
    return torch.einsum("knq,kqd->knd", inputs, W1)


def hidden_features(inputs: torch.Tensor, W1: torch.Tensor, act: Activation) -> torch.Tensor:
    """``Phi^T``: row i is ``phi(W1^T v_i)``, (K, n, d) (the paper's Phi is its transpose)."""
    return activate(hidden_preactivations(inputs, W1), act)


def global_attention_output(X, a, W1, W2, act: Activation) -> torch.Tensor:
    """``f(x_i) = W2^T phi(W1^T (x_i * a))`` per sample, (K, n)."""
    return torch.einsum("knd,kd->kn", hidden_features(attended_inputs(X, a), W1, act), W2)


def global_attention_gradients(X, y, a, W1, W2, act: Activation) -> dict[str, torch.Tensor]:
    r"""The gradients of ``R_n`` in closed form, with ``u_i = f(x_i) - y_i``:

    ``grad_W2 = (1/n) sum_i u_i phi(W1^T (x_i * a))``,
    ``grad_W1 = (1/n) sum_i u_i (x_i * a) (W2 * phi'(W1^T (x_i * a)))^T``,
    ``grad_a  = (1/n) sum_i u_i x_i * (W1 (W2 * phi'(W1^T (x_i * a))))``.
    """
    inputs = attended_inputs(X, a)
    z = hidden_preactivations(inputs, W1)
    n = X.shape[1]
    u = torch.einsum("knd,kd->kn", activate(z, act), W2) - y
    back = W2.unsqueeze(1) * activation_derivative(z, act)                    # (K, n, d)
    return {
        "a": torch.einsum("kn,knp,knp->kp", u, X, torch.einsum("kpd,knd->knp", W1, back)) / n,
        "W1": torch.einsum("kn,knp,knd->kpd", u, inputs, back) / n,
        "W2": torch.einsum("kn,knd->kd", u, activate(z, act)) / n,
    }


class GlobalAttentionNet(Model):
    r"""``R_n(a, W1, W2)`` of the global-attention network (module docstring), per trial.

    X (K, n, p), y (K, n); blocks a (K, p), W1 (K, p, d), W2 (K, d).
    """

    blocks = ("a", "W1", "W2")
    infimum = 0.0

    def __init__(self, X: torch.Tensor, y: torch.Tensor, act: Activation = RELU):
        _check_data(X, y, 1, type(self).__name__)
        self.X, self.y, self.act = X, y, act

    def output(self, params) -> torch.Tensor:
        """``f(x_i)`` per sample, (K, n)."""
        return global_attention_output(self.X, params["a"], params["W1"], params["W2"], self.act)

    def inputs(self, params) -> torch.Tensor:
        """The vectors the first layer reads, ``x_i * a`` (K, n, p)."""
        return attended_inputs(self.X, params["a"])

    def loss(self, params) -> torch.Tensor:
        return squared_loss(self.output(params), self.y)

    def log_loss(self, params) -> torch.Tensor:
        return torch.log(self.loss(params))

    def features(self, params) -> torch.Tensor:
        """``Phi^T`` (K, n, d): the hidden features of every sample."""
        return hidden_features(self.inputs(params), params["W1"], self.act)

    def restrict(self, trials):
        return type(self)(self.X[trials], self.y[trials], self.act)

    def with_targets(self, y: torch.Tensor) -> "GlobalAttentionNet":
        """The same inputs with other targets."""
        return type(self)(self.X, y, self.act)


class BaselineNet(GlobalAttentionNet):
    r"""The baseline without attention, ``f(x) = W2^T phi(W1^T x)``: blocks W1 (K, p, d), W2 (K, d)."""

    blocks = ("W1", "W2")

    def output(self, params) -> torch.Tensor:
        ones = torch.ones(self.X.shape[0], self.X.shape[2], dtype=self.X.dtype, device=self.X.device)
        return global_attention_output(self.X, ones, params["W1"], params["W2"], self.act)

    def inputs(self, params) -> torch.Tensor:
        return self.X


def _positive_product(c1: float, c2: float) -> float:
    if not (math.isfinite(c1) and math.isfinite(c2)) or c1 == 0 or c2 == 0:
        raise UsageError(f"scale transform: the factors must be finite and non-zero, got {c1}, {c2}")
    return c1 * c2


def scale_global_attention(params, alpha1: float, alpha2: float) -> dict[str, torch.Tensor]:
    """``T(a, W1, W2) = (alpha1 a, alpha2 W1, W2 / (alpha1 alpha2))``."""
    c = _positive_product(alpha1, alpha2)
    return {"a": alpha1 * params["a"], "W1": alpha2 * params["W1"], "W2": params["W2"] / c}


# -- self-attention ------------------------------------------------------------------------------
def self_attention_matrix(X: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    r"""``A(X)`` (K, n, p, p): column z is ``softmax_j((W_Q x^z)^T (W_K x^j) / sqrt(d_q))``.

    X (K, n, t, p), WQ and WK (K, d_q, t).  The logit of key j and query z, (W_K x^j)^T (W_Q x^z),
    is formed as x^j^T (W_K^T W_Q) x^z: one t x t product per trial, then two products with the
    words (t (t + p) multiplications a sample against d_q (2 t + p) for projecting queries and
    keys separately: fewer whenever t <= d_q, as in the papers' nets).
    """
    bilinear = WK.transpose(-1, -2) @ WQ                                         # (K, t, t)
    mapped = torch.einsum("kst,kntp->knsp", bilinear, X)                       # one bmm over the words
    logits = X.transpose(-1, -2) @ mapped / math.sqrt(WQ.shape[1])              # [key j, query z]
    return torch.softmax(logits, dim=-2)


def self_attention_values(X, WQ, WK, WV) -> torch.Tensor:
    """``vec(W_V X A(X))`` (K, n, p d_v), column-stacked (word 1's value vector first)."""
    V = torch.einsum("kvt,kntp->knvp", WV, X)
    mixed = torch.einsum("knvj,knjz->knvz", V, self_attention_matrix(X, WQ, WK))
    return mixed.transpose(-1, -2).flatten(-2)


def self_attention_output(X, params, act: Activation) -> torch.Tensor:
    """``f(X_i) = W2^T phi(W1^T vec(W_V X_i A(X_i)))`` per sample, (K, n)."""
    v = self_attention_values(X, params["WQ"], params["WK"], params["WV"])
    return torch.einsum("knd,kd->kn", hidden_features(v, params["W1"], act), params["W2"])


class SelfAttentionNet(Model):
    r"""``R_n(W1, W2, W_Q, W_K, W_V)`` of the self-attention network (module docstring).

    X (K, n, t, p), y (K, n); blocks W1 (K, p d_v, d), W2 (K, d), WQ, WK (K, d_q, t), WV (K, d_v, t).
    """

    blocks = ("W1", "W2", "WQ", "WK", "WV")
    infimum = 0.0

    def __init__(self, X: torch.Tensor, y: torch.Tensor, act: Activation = RELU):
        _check_data(X, y, 2, type(self).__name__)
        self.X, self.y, self.act = X, y, act

    def output(self, params) -> torch.Tensor:
        return self_attention_output(self.X, params, self.act)

    def inputs(self, params) -> torch.Tensor:
        """The vectors the first layer reads, ``vec(W_V X_i A(X_i))`` (K, n, p d_v)."""
        return self_attention_values(self.X, params["WQ"], params["WK"], params["WV"])

    def features(self, params) -> torch.Tensor:
        return hidden_features(self.inputs(params), params["W1"], self.act)

    def loss(self, params) -> torch.Tensor:
        return squared_loss(self.output(params), self.y)

    def log_loss(self, params) -> torch.Tensor:
        return torch.log(self.loss(params))

    def restrict(self, trials):
        return SelfAttentionNet(self.X[trials], self.y[trials], self.act)


def scale_self_attention(params, alpha: float) -> dict[str, torch.Tensor]:
    """``T(W1, W2, W_Q, W_K, W_V) = (alpha W1, W2 / alpha, W_Q, W_K, W_V)``."""
    _positive_product(alpha, 1.0)
    out = dict(params)
    out["W1"], out["W2"] = alpha * params["W1"], params["W2"] / alpha
    return out


# -- the experiments' networks: biases, several outputs --------------------------------------
#: the losses of the biased networks: the squared loss averaged over samples and outputs, or
#: the cross-entropy of a softmax over the outputs (integer class targets)
OBJECTIVES = ("squared", "cross_entropy")


def biased_attention_output(X, params, act: Activation) -> torch.Tensor:
    r"""``F(x_i) = W2^T phi(W1^T (x_i * a) + b1) + b2`` per sample, (K, n, m); ``a = 1`` when
    ``params`` has no block ``a``.  X (K, n, p), W1 (K, p, d), b1 (K, d), W2 (K, d, m), b2 (K, m).

    The first layer is formed as ``X (diag(a) W1)`` -- the same product as ``(X diag(a)) W1``:
    backpropagation then needs only ``X^T delta`` (p x d), from which the gradients in ``W1``
    and ``a`` follow by (p x d) products, instead of the extra (n x p) product ``delta W1^T``
    (40% of a full-batch step at Table 1's n = 20000)."""
    W1 = params["a"].unsqueeze(-1) * params["W1"] if "a" in params else params["W1"]
    hidden = activate(hidden_preactivations(X, W1) + params["b1"].unsqueeze(1), act)
    return torch.einsum("knd,kdm->knm", hidden, params["W2"]) + params["b2"].unsqueeze(1)


class BiasedAttentionNet(Model):
    r"""The global-attention network with biases in both layers and ``m`` outputs (the networks
    of the experiments, whose parameter counts include biases)::

        F(x) = W2^T phi(W1^T (x * a) + b1) + b2,   a (p,), W1 (p, d), b1 (d,), W2 (d, m), b2 (m,)

    objective ``"squared"``: ``L = (1/2nm) sum_i ||F(x_i) - y_i||^2``, Y (K, n, m) (twice the
    loss is the mean squared error over samples and outputs); ``"cross_entropy"``: ``L = (1/n)
    sum_i -log softmax(F(x_i))_{y_i}``, Y (K, n) integer classes in ``[0, m)``.  X (K, n, p).
    """

    blocks = ("a", "W1", "b1", "W2", "b2")
    infimum = 0.0

    def __init__(self, X: torch.Tensor, Y: torch.Tensor, act: Activation = RELU, *,
                 objective: str = "squared"):
        name = type(self).__name__
        if objective not in OBJECTIVES:
            raise DeclarationError(f"{name}: objective {objective!r}, use one of {OBJECTIVES}")
        shape = X.shape[:2] + ((Y.shape[-1],) if objective == "squared" else ())
        if X.dim() != 3 or Y.shape != shape or (objective == "squared" and Y.dim() != 3):
            raise DeclarationError(f"{name}: X must be (K, n, p) and Y (K, n, m) for the squared "
                                   f"loss or (K, n) classes for cross_entropy; got X "
                                   f"{tuple(X.shape)}, Y {tuple(Y.shape)} ({objective})")
        if objective == "cross_entropy" and (Y.dtype.is_floating_point or bool((Y < 0).any())):  # host: construction (validating the labels)
            raise DeclarationError(f"{name}: cross_entropy needs non-negative integer classes Y")
        self.X, self.Y, self.act, self.objective = X, Y, act, objective

    def output(self, params) -> torch.Tensor:
        """``F(x_i)`` per sample, (K, n, m)."""
        return biased_attention_output(self.X, params, self.act)

    def loss(self, params) -> torch.Tensor:
        F = self.output(params)
        if self.objective == "squared":
            return 0.5 * ((F - self.Y) ** 2).mean((-2, -1))
        picked = torch.gather(torch.log_softmax(F, -1), -1, self.Y.unsqueeze(-1)).squeeze(-1)
        return -picked.mean(-1)

    def log_loss(self, params) -> torch.Tensor:
        return torch.log(self.loss(params))

    def with_data(self, X: torch.Tensor, Y: torch.Tensor) -> "BiasedAttentionNet":
        """The same network on other samples (a minibatch, a test set)."""
        return type(self)(X, Y, self.act, objective=self.objective)

    def restrict(self, trials):
        return self.with_data(self.X[trials], self.Y[trials])


class BiasedBaselineNet(BiasedAttentionNet):
    r""":class:`BiasedAttentionNet` without the mask (``a = 1``): blocks W1, b1, W2, b2."""

    blocks = ("W1", "b1", "W2", "b2")


# -- the last-layer certificate ------------------------------------------------------------------
def last_layer_certificate(features: torch.Tensor, grad_W2: torch.Tensor) -> torch.Tensor:
    r"""Upper bound on ``R_n`` from the last-layer gradient, per trial (K,):

    ``grad_W2 R_n = Phi u / n`` with ``Phi`` (d, n) of rank n gives
    ``||grad_W2|| >= sigma_n(Phi) ||u|| / n``, i.e. ``R_n = ||u||^2/(2n) <= n ||grad_W2||^2 /
    (2 sigma_n(Phi)^2)``; ``inf`` where ``sigma_n(Phi) = 0`` (rank-deficient: no certificate).
    features: ``Phi^T`` (K, n, d) with d >= n; grad_W2 (K, d).
    """
    n, d = features.shape[-2:]
    if d < n:
        raise UsageError(f"last-layer certificate: needs width d >= n samples, got d={d}, n={n}")
    sigma_n = torch.linalg.svdvals(features)[..., n - 1]
    bound = n * (grad_W2 ** 2).sum(-1) / (2 * sigma_n ** 2)
    return torch.where(sigma_n > 0, bound, torch.inf)


# -- parameter counts ----------------------------------------------------------------------------
def parameters_reached(output: torch.Tensor, parameters) -> int:
    r"""The number of trainable entries ``output`` is a function of: ``numel`` summed over the
    tensors of ``parameters`` that the autograd graph of ``output`` reaches.

    Structural, so independent of the point: an entry whose gradient happens to vanish here (a
    ReLU unit inactive on every probe input, a zero in the upstream gradient) still counts, a
    tensor the output never uses does not.  Counting non-zero gradient entries instead makes a
    parameter count depend on the draw.
    """
    params = list(parameters)
    if not params or not all(p.requires_grad for p in params):
        raise UsageError("parameters_reached: needs a non-empty list of tensors that require grad")
    if not output.requires_grad:
        raise UsageError("parameters_reached: the output is not attached to an autograd graph")
    grads = torch.autograd.grad(output.sum(), params, allow_unused=True, retain_graph=True)
    return sum(p.numel() for p, g in zip(params, grads) if g is not None)


# -- conformance instances -----------------------------------------------------------------------
def _normal(g, *shape, scale=1.0):
    return scale * torch.randn(*shape, generator=g, dtype=torch.float64)


@register_model("global_attention_softplus")
def _global_instance(K, seed):
    g = torch.Generator().manual_seed(seed)
    n, p, d = 7, 4, 3
    model = GlobalAttentionNet(_normal(g, K, n, p), _normal(g, K, n), Activation("softplus", 2.0))
    params = {"a": 0.5 + torch.rand(K, p, generator=g, dtype=torch.float64),
              "W1": _normal(g, K, p, d, scale=0.5), "W2": _normal(g, K, d, scale=0.5)}
    return Instance(model, params, None)


@register_model("baseline_relu")
def _baseline_instance(K, seed):
    g = torch.Generator().manual_seed(seed)
    n, p, d = 7, 4, 3
    model = BaselineNet(_normal(g, K, n, p), _normal(g, K, n), RELU)
    return Instance(model, {"W1": _normal(g, K, p, d), "W2": _normal(g, K, d)}, None)


@register_model("self_attention_softplus")
def _self_instance(K, seed):
    g = torch.Generator().manual_seed(seed)
    n, t, p, dq, dv, d = 5, 3, 4, 2, 2, 3
    model = SelfAttentionNet(_normal(g, K, n, t, p), _normal(g, K, n), Activation("softplus", 1.5))
    params = {"W1": _normal(g, K, p * dv, d, scale=0.5), "W2": _normal(g, K, d),
              "WQ": _normal(g, K, dq, t, scale=0.5), "WK": _normal(g, K, dq, t, scale=0.5),
              "WV": _normal(g, K, dv, t, scale=0.5)}
    return Instance(model, params, None)


@register_model("biased_attention_squared")
def _biased_instance(K, seed):
    g = torch.Generator().manual_seed(seed)
    n, p, d, m = 6, 4, 3, 2
    model = BiasedAttentionNet(_normal(g, K, n, p), _normal(g, K, n, m), Activation("softplus", 2.0))
    params = {"a": 0.5 + torch.rand(K, p, generator=g, dtype=torch.float64),
              "W1": _normal(g, K, p, d, scale=0.5), "b1": _normal(g, K, d, scale=0.5),
              "W2": _normal(g, K, d, m, scale=0.5), "b2": _normal(g, K, m, scale=0.5)}
    return Instance(model, params, None)


@register_model("biased_baseline_cross_entropy")
def _biased_baseline_instance(K, seed):
    g = torch.Generator().manual_seed(seed)
    n, p, d, m = 6, 4, 3, 3
    Y = torch.randint(0, m, (K, n), generator=g)
    model = BiasedBaselineNet(_normal(g, K, n, p), Y, RELU, objective="cross_entropy")
    params = {"W1": _normal(g, K, p, d), "b1": _normal(g, K, d), "W2": _normal(g, K, d, m),
              "b2": _normal(g, K, m)}
    return Instance(model, params, None)
