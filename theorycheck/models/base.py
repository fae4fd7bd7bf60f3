r"""The model protocol: what every model gives the optimizers, the runner and the metrics.

A model is a loss over **named parameter blocks**.  Parameters are a ``dict`` of tensors,
every block with a leading trial dimension ``K``: trial ``k`` of every block belongs to one
independent problem, and the model's data carry the same leading dimension.  A model provides

``blocks``
    the names of its parameter blocks, in a fixed order (e.g. ``("u", "W")``).
``log_loss(params) -> (K,)``
    ``log L(theta)`` per trial (the log form, because losses that saturate leave the float
    range: ``L - L_*`` of a softmax model reaches ``1e-300`` long before training ends).
``scaled_gradient(params) -> {block: Scaled}``
    the gradient of ``L`` in each block as ``exp(M) * G`` (:class:`Scaled`): ``M`` (K,) a log
    scale and ``G`` a direction with entries of order one, so that normalized and Polyak steps
    stay exact after ``||grad L||`` underflows.  The default differentiates ``loss`` by
    reverse mode (`loss_gradient`) and then scales; a model whose gradient loses precision that
    way overrides it.
``geometry(block) -> Geometry``
    the inner product and norm of a block (:class:`Frobenius` by default; a weighted norm, an
    ``l_p`` norm or a coefficient-space representation are other geometries).  Normalized steps,
    the joint norm over blocks, alignment and displacement all go through it.
``log_excess_loss(params) -> (K,)``, optional
    ``log(L - L_*)`` with ``L_* = inf L`` over the model's parameters; Polyak steps need it.
    The default uses the attribute ``infimum`` (a float, or ``None`` when the model declares none).
``reference_loss(params) -> (K,)``
    the loss written plainly, for autograd cross-checks (accurate away from saturation only);
    the default is ``exp(log_loss)``.
``hessian_vector_product(params, vector)``
    the Hessian of ``reference_loss`` applied to a direction (``torch.func`` forward over
    reverse by default), for curvature measurements (Lanczos through scipy).
``restrict(trials) -> Model``
    the same model on a subset of its trials (an index tensor or slice of the trial
    dimension; an index may repeat trials); the conformance suite checks that the batch
    equals trial by trial.
``metrics(**options) -> {name: metric}``, optional
    the model's own quantities along a trajectory (at least ``"log_loss"``), for
    `theorycheck.optim.standard_metrics`.
``cheapest(params0)``, ``dense(params)``, ``representer(block, value)``, optional
    representations: ``cheapest`` gives the model and start in the coordinates where a
    first-order step costs least (by default the model itself: its plain blocks), ``dense``
    expands coordinates back to the plain blocks, and ``representer`` expresses a plain tensor
    ``value`` as the vector r with ``<theta_b, value> = sum(coordinates_b * r)`` (the Frobenius
    inner product, exact for any value).  `theorycheck.optim.run_trajectory` steps in the
    cheapest representation by itself and hands metrics both the coordinates and the plain
    blocks (`theorycheck.optim.Iterate`).

Nothing here knows a paper: a model module cites its source in its own docstring.  A model
that a conformance test should cover registers a small instance with :func:`register_model`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Mapping, NamedTuple

import torch

from theorycheck.errors import DeclarationError

__all__ = [
    "Params",
    "Scaled",
    "scaled",
    "loss_gradient",
    "Geometry",
    "Frobenius",
    "FROBENIUS",
    "Gram",
    "Model",
    "Instance",
    "MODELS",
    "register_model",
    "per_trial",
    "linear_combination",
    "peak_magnitude",
    "rescale",
    "smallest_positive",
    "unit_scaled",
]

Params = Mapping[str, torch.Tensor]


def per_trial(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``values`` (K,) shaped to broadcast against a block ``like`` (K, ...) (a view)."""
    return values.view(-1, *(1,) * (like.dim() - 1))


def linear_combination(terms) -> torch.Tensor:
    """sum of coef * tensor over ``terms`` ((coef, tensor) pairs, coef a number or a (K,) tensor
    scaling each trial): one pass over memory per term after the first (``add`` with ``alpha``,
    ``addcmul``), no product by 1."""
    terms = iter(terms)
    coef, tensor = next(terms)
    if isinstance(coef, float):
        total = tensor if coef == 1.0 else coef * tensor
    else:
        total = per_trial(coef, tensor) * tensor
    for coef, tensor in terms:
        if isinstance(coef, float):
            total = torch.add(total, tensor, alpha=coef)
        else:
            total = torch.addcmul(total, per_trial(coef, tensor), tensor)
    return total


class Scaled(NamedTuple):
    r"""A tensor stored as ``exp(log_scale) * direction``.

    ``log_scale`` (K,): one log scale per trial, ``-inf`` where the tensor is exactly zero (the
    direction is then zero too).  ``direction`` (K, ...): entries of order one (`scaled`), or
    the tensor itself where it cannot underflow (`unit_scaled`).
    """

    log_scale: torch.Tensor
    direction: torch.Tensor

    def value(self) -> torch.Tensor:
        """``exp(M) * G`` in plain floating point (underflows where ``M`` is very negative)."""
        return per_trial(torch.exp(self.log_scale), self.direction) * self.direction


def loss_gradient(loss, params: Params, blocks) -> dict[str, torch.Tensor]:
    """``{block: d (sum over trials of loss(params)) / d block}`` by reverse mode.

    Plain ``torch.autograd.grad`` on detached copies of the blocks: the same graph and kernels,
    hence the same bits, as ``torch.func.grad``, without its per-call cost (a third of a small
    model's gradient).  Where the result must itself stay differentiable -- under a
    ``torch.func`` transform, or when a block requires grad -- it is ``torch.func.grad``."""
    tensors = [params[b] for b in blocks]
    if torch._C._are_functorch_transforms_active() or any(v.requires_grad for v in tensors):
        grads = torch.func.grad(lambda p: loss(p).sum())(dict(params))
        return {b: grads[b] for b in blocks}
    with torch.enable_grad():
        leaves = dict(params, **{b: v.detach().requires_grad_() for b, v in zip(blocks, tensors)})
        grads = torch.autograd.grad(loss(leaves).sum(), [leaves[b] for b in blocks],
                                    materialize_grads=True)
    return dict(zip(blocks, grads))


@functools.cache
def smallest_positive(dtype: torch.dtype) -> float:
    """The smallest positive (subnormal) number of a floating ``dtype``: 2^-1074 in float64."""
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps


#: from this many entries on, `peak_magnitude` reads the tensor twice (max, min) instead of
#: copying it (abs) and reading the copy: measured on one CPU thread, 129 against 230 us at 2^18
#: entries, but 5.8 against 3.5 us at ten (two more operations to dispatch)
EXTREMES_FROM = 1 << 16


def peak_magnitude(tensor: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
    """max |entry| of each trial of ``tensor`` (K, ...), shape (K,) (``keepdim``: (K, 1, ...)):
    ``abs`` then ``amax`` for a small tensor (fewest operations), ``max(amax, -amin)`` for a
    large one (no copy); the same value either way (NaN where a trial holds one).  The trial's
    entries are reduced over their own dimensions (no flattened view: one dispatch less)."""
    source = tensor.detach() if tensor.requires_grad else tensor
    entries = tuple(range(1, tensor.dim())) or (1,)   # (1,): a (K,) tensor has no entries: amax raises
    if tensor.numel() < EXTREMES_FROM:
        return source.abs().amax(entries, keepdim)
    return torch.maximum(source.amax(entries, keepdim), source.amin(entries, keepdim).neg())


def scaled(tensor: torch.Tensor) -> Scaled:
    """``tensor`` (K, ...) as :class:`Scaled` with ``M = log max|entry|`` per trial (``-inf`` for
    a zero trial) and direction ``tensor / max|entry|``, whose largest entry is exactly 1.

    Two passes over the tensor (the peak, `peak_magnitude`, kept in the tensor's shape so that
    it divides without a reshape, and the division) and two operations on the K peaks: a zero
    trial is divided by the smallest positive float (`smallest_positive`) instead of being
    special-cased (``0 / tiny = 0``).  For a gradient that is a weighted sum ``sum_i c_i v_i``
    the scaled form is cheaper still, and exact where the c_i underflow, from the weights'
    logarithms (`rescale`): one pass over the (K, n) weights and none over the gradient."""
    peak = peak_magnitude(tensor, keepdim=True)
    log_scale = peak.view(-1).log()
    return Scaled(log_scale, tensor / peak.clamp_min_(smallest_positive(tensor.dtype)))


def rescale(log_abs: torch.Tensor, sign: torch.Tensor | None = None, dim=-1):
    r"""(m, w) with ``c = sign exp(log_abs) = exp(m) w``: ``m`` the max of ``log_abs`` over ``dim``
    (kept as size 1), ``w = sign exp(log_abs - m)`` with max|w| = 1 (``sign`` None: all +1).

    The weights of a gradient ``sum_i c_i v_i`` in the log domain: ``exp(m) (sum_i w_i v_i)`` is
    exact however far the c_i lie below the float range.  m = -inf when every entry is zero
    (log_abs = -inf); the w are then 0, not NaN."""
    m = log_abs.amax(dim, keepdim=True)
    w = torch.sub(log_abs, m.nan_to_num(neginf=0.0)).exp_()
    return m, w if sign is None else sign * w


def unit_scaled(tensor: torch.Tensor) -> Scaled:
    """``tensor`` (K, ...) as :class:`Scaled` with ``M = 0`` (``-inf`` where a trial's tensor is
    exactly zero) and the tensor itself as direction: for gradients that cannot underflow
    (models without saturation), one read of the tensor instead of `scaled`'s two passes."""
    nonzero = tensor.detach().flatten(1).any(1)
    return Scaled(torch.where(nonzero, 0.0, -math.inf).to(tensor.dtype), tensor)


class Geometry:
    """Inner product and norm of one parameter block, per trial (shape (K,)).

    ``entrywise``: whether the block's coordinates are the entries of the parameter itself
    (true unless the block holds coefficients over a basis, as in :class:`Gram`); entrywise
    maps such as mirror descent's potential need them."""

    name = "geometry"
    entrywise = True

    def inner(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def norm(self, A: torch.Tensor) -> torch.Tensor:
        return self.inner(A, A).clamp_min(0).sqrt()

    def combined(self, result: torch.Tensor, terms) -> None:
        """Told that ``result`` = sum of coef * tensor over ``terms`` ((coef, tensor) pairs, coef
        a number or a (K,) tensor), so that a geometry that keeps products of the block can
        derive the product of ``result`` from theirs.  Nothing to do by default."""


class Frobenius(Geometry):
    r"""``<A, B> = sum of the entries of A * B``, ``||A|| = ||A||_F`` (per trial), reduced over
    each trial's entries as one row (`_trial_rows`)."""

    name = "frobenius"

    def inner(self, A, B):
        return _trial_rows(A * B).sum(1)

    def norm(self, A):
        return torch.linalg.vector_norm(_trial_rows(A), dim=1)


def _trial_rows(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` (K, ...) as (K, entries): the tensor itself when it has two dimensions (no
    dispatch of ``flatten``, which would return it unchanged), else ``flatten(1)``."""
    return tensor if tensor.dim() == 2 else tensor.flatten(1)


FROBENIUS = Frobenius()


class Gram(Geometry):
    r"""A block held as coefficients c (K, m) over m basis elements B_1..B_m of the parameter
    space, with Gram matrix ``gram`` (K, m, m), gram_{jk} = <B_j, B_k>: the Frobenius geometry of
    the parameters sum_j c_j B_j, ``<a, b> = a^T gram b`` per trial (exact for a linearly
    dependent basis too).

    Products gram c are kept for the last `KEPT` coefficient tensors, keyed by the tensor
    object (tensors are never modified in place here): a step and the metrics of its
    checkpoint ask for the same iterate's product -- the logits, the norm -- and each product
    reads the whole (K, m, m) Gram matrix.  A tensor that an optimizer reports as a linear
    combination of tensors with kept products (`combined`: the step c g, the next iterate
    c - step) gets its product by the same combination, so a gradient step reads the Gram
    matrix once (for gram g) instead of twice.  A derived product is at most `REFRESH`
    combinations away from an exact one -- the combination after that is formed exactly --
    so round-off does not accumulate beyond that many steps."""

    name = "gram"
    entrywise = False
    #: how many recent products are kept
    KEPT = 6
    #: the most combinations between a derived product and an exact one
    REFRESH = 64

    def __init__(self, gram: torch.Tensor):
        self.gram = (gram + gram.transpose(-1, -2)) / 2
        self._kept = []

    def _find(self, B):
        """(product, combinations since an exact product) kept for ``B``, or None."""
        for kept, product, depth in self._kept:
            if kept is B:
                return product, depth
        return None

    def _keep(self, B, product, depth):
        self._kept = [(B, product, depth), *self._kept[: self.KEPT - 1]]

    def apply(self, B: torch.Tensor) -> torch.Tensor:
        r"""gram B per trial, (K, m), kept or derived where it can be (class docstring).  An
        exact product is formed as the row B^T gram (the matrix is symmetrized once, on
        construction): batched matrix-vector products run several times faster in that
        orientation than as gram B (measured in BENCHMARKS.md)."""
        found = self._find(B)
        if found is not None:
            return found[0]
        product = torch.bmm(B[:, None, :], self.gram).squeeze(1)
        self._keep(B, product, 0)
        return product

    def combined(self, result, terms):
        found = [self._find(tensor) for _, tensor in terms]
        if any(f is None for f in found):
            return
        depth = 1 + max(depth for _, depth in found)
        if depth > self.REFRESH:
            self.apply(result)  # exact again, so that the chain (an iterate, a velocity) goes on
            return
        product = linear_combination([(coef, kept) for (coef, _), (kept, _) in zip(terms, found)])
        self._keep(result, product, depth)

    def inner(self, A, B):
        return (A * self.apply(B)).sum(-1)


class Model:
    """Base class of the model protocol (see the module docstring).  Subclasses set
    ``blocks`` and implement ``log_loss`` and ``restrict``; everything else has a default."""

    blocks: tuple[str, ...] = ()
    #: inf L over the parameters where the model knows it in closed form (for Polyak steps)
    infimum: float | None = None

    # -- required ---------------------------------------------------------------------------
    def log_loss(self, params: Params) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement log_loss")

    def restrict(self, trials) -> "Model":
        raise NotImplementedError(f"{type(self).__name__} must implement restrict")

    # -- defaults ---------------------------------------------------------------------------
    def loss(self, params: Params) -> torch.Tensor:
        """``L(theta)`` per trial, ``exp(log_loss)``."""
        return self.log_loss(params).exp()

    def reference_loss(self, params: Params) -> torch.Tensor:
        """The loss written plainly, for autograd cross-checks; default ``loss``."""
        return self.loss(params)

    def geometry(self, block: str) -> Geometry:
        """The geometry of ``block`` (Frobenius unless a model says otherwise)."""
        return FROBENIUS

    def scaled_gradient(self, params: Params) -> dict[str, Scaled]:
        """``{block: exp(M_b) G_b}``: by default the reverse-mode gradient of ``loss``
        (`loss_gradient`), then scaled."""
        grads = loss_gradient(self.loss, params, self.blocks)
        return {b: scaled(grads[b]) for b in self.blocks}

    def gradient(self, params: Params) -> dict[str, torch.Tensor]:
        """The gradient in plain floating point (underflows once ``L`` saturates): the value of
        the model's `scaled_gradient`, or, where the model has no exact form of its own, the
        reverse-mode gradient itself (`loss_gradient`, without the scaling's passes and
        roundings)."""
        if type(self).scaled_gradient is Model.scaled_gradient:
            return loss_gradient(self.loss, params, self.blocks)
        return {b: g.value() for b, g in self.scaled_gradient(params).items()}

    def hessian_vector_product(self, params: Params, vector: Params) -> dict[str, torch.Tensor]:
        """``H v`` per trial, H the Hessian of ``reference_loss`` over all blocks: forward-over-
        reverse mode of ``torch.func`` (accurate away from saturation)."""
        def grad(p):
            return torch.func.grad(lambda q: self.reference_loss(q).sum())(p)

        return torch.func.jvp(grad, (dict(params),), (dict(vector),))[1]

    def log_excess_loss(self, params: Params) -> torch.Tensor:
        """``log(L - inf L)`` per trial, from ``infimum``; models that saturate override it
        with an exact form.  A model without a known infimum raises DeclarationError."""
        if self.infimum is None:
            raise DeclarationError(f"{type(self).__name__} declares no infimum of its loss: "
                                   "Polyak steps need log_excess_loss")
        return torch.log(self.loss(params) - self.infimum)

    def metrics(self) -> dict:
        """The model's own metrics for `theorycheck.optim.standard_metrics`: at least
        "log_loss" (``metric(it) -> (K,)``).  Models add theirs (sharing one forward pass)."""
        return {"log_loss": lambda it: self.log_loss(it.params)}

    # -- representations ---------------------------------------------------------------------
    def cheapest(self, params0: Params) -> tuple["Model", dict[str, torch.Tensor]]:
        """(model, params): this model and the start ``params0`` in the representation where a
        first-order step costs least; by default the model itself (its plain blocks)."""
        return self, dict(params0)

    def dense(self, params: Params) -> dict[str, torch.Tensor]:
        """The parameters as the model's plain blocks (the identity unless the model holds its
        blocks in other coordinates, e.g. coefficients over a basis)."""
        return dict(params)

    def representer(self, block: str, value: torch.Tensor) -> torch.Tensor:
        r"""r with <theta_block, value>_F = sum(coordinates * r) per trial, for a plain tensor
        ``value`` of the block's shape: ``value`` itself in plain coordinates."""
        return value

    def require_entrywise(self, method: str, blocks=None) -> None:
        """DeclarationError if any of ``blocks`` (default: all) is held as coefficients over a
        basis (its geometry is not ``entrywise``): ``method`` acts on parameter entries, which
        would leave the basis' span."""
        coefficient_blocks = [b for b in (self.blocks if blocks is None else blocks)
                              if not self.geometry(b).entrywise]
        if coefficient_blocks:
            raise DeclarationError(f"{method} acts on parameter entries, but {type(self).__name__} "
                                   f"holds blocks {coefficient_blocks} as coefficients over a basis "
                                   "(the entrywise map leaves their span): use the dense form")

    def check_params(self, params: Params) -> None:
        """DeclarationError unless ``params`` has exactly this model's blocks."""
        if set(params) != set(self.blocks):
            raise DeclarationError(f"{type(self).__name__} has blocks {self.blocks}, got "
                                   f"parameters {tuple(params)}")

    def data_tensor(self) -> torch.Tensor:
        """A tensor of the model's data (its device and dtype are the model's): by default the
        first tensor attribute."""
        for value in vars(self).values():
            if isinstance(value, torch.Tensor):
                return value
        raise DeclarationError(f"{type(self).__name__} holds no tensor: override data_tensor")

    def tiled(self, copies: int) -> "Model":
        """The model's K trials repeated ``copies`` times (trials [mK, (m+1)K) are copy m),
        matching `theorycheck.optim.tile` of the parameters."""
        return self.restrict(torch.arange(self.trial_count()).repeat(copies))

    def trial_count(self) -> int:
        """K, the number of trials of the model's data (the leading dimension of `data_tensor`)."""
        return self.data_tensor().shape[0]


@dataclass(frozen=True)
class Instance:
    """A small instance of a model for the conformance suite: ``params`` lies away from
    saturation (autograd of ``reference_loss`` is accurate there); ``saturated`` deep in it
    (``None`` for models that cannot saturate)."""

    model: Model
    params: dict[str, torch.Tensor]
    saturated: dict[str, torch.Tensor] | None = None


#: name -> factory(K, seed) -> Instance, for every model the conformance suite runs over
MODELS: dict[str, Callable[[int, int], Instance]] = {}


def register_model(name: str):
    """Register ``factory(K, seed) -> Instance`` under ``name`` for the conformance suite."""

    def decorate(factory):
        if name in MODELS and MODELS[name] is not factory:
            raise DeclarationError(f"model {name!r} is registered twice")
        MODELS[name] = factory
        return factory

    return decorate
