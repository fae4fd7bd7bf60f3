r"""First-order optimizers over any model of the protocol (`theorycheck.models.base`), batched.

One update covers gradient descent, normalized GD (with a cap, heavy-ball momentum and a time
factor), Polyak steps and per-block normalized GD.  With parameter blocks b, gradients from
the model in scaled form grad_b L = exp(M_b) G_b, block norms n_b = ||G_b|| in the model's
geometry of block b, M = max_b M_b, w_b = exp(M_b - M) and the joint norm
||grad L|| = exp(M) ||G||, ||G||^2 = sum_b (w_b n_b)^2, one step is

    theta_b <- theta_b - V_b,    V_b <- mu V_b + c_b G_b    (V_b = 0 before the first step),

    eta_t = eta (t+1)^(-alpha),  and per rule, in log space:
      "gd":        log c = log eta_t + M
      "ngd":       log c = log eta_t - log ||G||                   (every step has length eta_t)
      "polyak":    log c = log(L - L_*) - M - 2 log ||G||          (L_* = inf L from the model)
    then the cap  log c <= log eta_max + M  (the step size eta_t <= eta_max), and c_b = c w_b;
      "block_ngd": c_b = eta_t / n_b                                (each block its own length)

A zero gradient gives a zero step (c = 0 where ||G|| = 0; block_ngd skips a zero block).
Because every factor is formed in log space, normalized and Polyak steps stay exact after
attention saturates and ||grad L|| underflows.

Every setting -- ``rule``, ``eta``, ``eta_max``, ``momentum``, ``alpha`` -- is one value for all
trials or a sequence / (K,) tensor with one value per trial, so that several methods, step
sizes or schedules run side by side along the trial dimension with one gradient evaluation per
step (:func:`side_by_side`).  The step never modifies its inputs and never synchronizes with
the host.  The direction G_b is the model's gradient in its parameter coordinates; the
geometry supplies the norms.
"""
from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import torch

from theorycheck.errors import DeclarationError
from theorycheck.models.base import Model, linear_combination
from theorycheck.optim.step import Step

__all__ = ["RULES", "FirstOrder", "GD", "NGD", "Polyak", "BlockNGD", "Method", "side_by_side",
           "tile", "OPTIMIZERS", "register_optimizer"]

RULES = ("gd", "ngd", "polyak", "block_ngd")


def _per_trial_setting(name, value, K, like, dtype=None):
    """A setting as a Python scalar (the same for every trial) or a (K,) tensor."""
    if isinstance(value, torch.Tensor) and value.dim() > 0 or isinstance(value, (list, tuple)):
        tensor = torch.as_tensor(value, dtype=dtype or like.dtype, device=like.device)
        if tensor.shape != (K,):
            raise DeclarationError(f"optimizer setting {name!r}: {tensor.numel()} values for "
                                   f"{K} trials")
        return tensor
    return float(value)  # host: construction (a scalar setting)


class FirstOrder(Step):
    r"""The first-order step of the module docstring for ``model``; ``step(t, params) -> params``.

    ``rule``: one of ``RULES`` or a sequence of K of them; ``eta``, ``eta_max``, ``momentum``,
    ``alpha``: numbers or (K,) sequences/tensors.  ``name`` labels the run in error messages.
    """

    def __init__(self, model: Model, *, rule, eta=1.0, eta_max=math.inf, momentum=0.0, alpha=0.0,
                 name: str | None = None):
        self.model = model
        like, K = model.data_tensor(), model.trial_count()
        rules = (rule,) if isinstance(rule, str) else tuple(rule)
        unknown = sorted(set(rules) - set(RULES))
        if unknown:
            raise DeclarationError(f"unknown optimizer rule(s) {unknown}; use one of {RULES}")
        if len(rules) not in (1, K):
            raise DeclarationError(f"optimizer setting 'rule': {len(rules)} values for {K} trials")
        self.rules = rules
        # fixed by the settings, read at every step (the step does no bookkeeping of its own):
        # the rules some trial follows, whether any trial needs the block norms, the rules of the
        # jointly normalized coefficient, and whether a schedule, a cap or momentum apply at all
        self._rule_set = frozenset(rules)
        self._needs_norms = self._rule_set != {"gd"}
        self._joint_rules = [rule for rule in ("gd", "ngd", "polyak") if rule in self._rule_set]
        self.name = name or (rules[0] if len(self._rule_set) == 1 else "first_order")
        self._mask = {}
        if len(self._rule_set) > 1:
            self._mask = {r: torch.tensor([x == r for x in rules], device=like.device)
                          for r in self._rule_set}
        self.log_eta = _log(_per_trial_setting("eta", eta, K, like))
        self.log_eta_max = _log(_per_trial_setting("eta_max", eta_max, K, like))
        self.momentum = _per_trial_setting("momentum", momentum, K, like)
        self.alpha = _per_trial_setting("alpha", alpha, K, like)
        self._scheduled = not _everywhere(self.alpha, 0.0)
        self._capped = not _everywhere(self.log_eta_max, math.inf)
        self._heavy_ball = not _everywhere(self.momentum, 0.0)
        # the numbers the step combines with tensors, kept as tensors of the model's dtype and
        # device: an operation wraps a Python number into a new tensor at every call (on the
        # CPU about 0.5 us, as much as the arithmetic at small K); the value, rounded to the
        # dtype once here instead of at each operation, and so every result, are the same
        self._zero = _kept(0.0, like)
        self._log_eta = _kept(self.log_eta, like)
        self._log_eta_max = _kept(self.log_eta_max, like)
        self._velocity = None

    # -- pieces ----------------------------------------------------------------------------
    def _where(self, rule, value, otherwise):
        """``value`` on the trials following ``rule``, ``otherwise`` elsewhere."""
        if rule not in self._rule_set:
            return otherwise
        if not self._mask:
            return value
        return torch.where(self._mask[rule], value, otherwise)

    def _log_eta_t(self, t):
        if isinstance(self.alpha, float) and self.alpha == 0.0:
            return self.log_eta
        return self.log_eta - self.alpha * math.log(t + 1)

    def _joint_scale(self, grads):
        """(M, {b: w_b or None}, {b: n_b}, ||G||); the norms are None where every trial follows
        "gd" (whose step needs none: a zero gradient is a zero direction or M = -inf)."""
        norms = None
        if self._needs_norms:
            norms = {b: self.model.geometry(b).norm(g.direction) for b, g in grads.items()}
        if len(grads) == 1:
            (b, g), = grads.items()
            return g.log_scale, {b: None}, norms, None if norms is None else norms[b]
        M = functools.reduce(torch.maximum, [g.log_scale for g in grads.values()])
        shift = M.nan_to_num(neginf=0.0)
        weights = {b: torch.exp(g.log_scale - shift) for b, g in grads.items()}
        joint = None
        if norms is not None:
            joint = torch.sqrt(functools.reduce(torch.add, [(weights[b] * norms[b]) ** 2 for b in grads]))
        return M, weights, norms, joint

    def _log_coef(self, params, log_eta_t, M, norm):
        """log c of the jointly normalized rules, capped (NaN only where the gradient is 0); each
        rule's formula is evaluated only where some trial follows it."""
        log_norm = None if norm is None else torch.log(norm)

        def formula(rule):
            if rule == "gd":
                return log_eta_t + M
            if rule == "ngd":
                return log_eta_t - log_norm
            return self.model.log_excess_loss(params) - M - (log_norm + log_norm)   # 2 log ||G||, exactly

        first, *others = self._joint_rules
        log_coef = formula(first)
        for rule in others:
            log_coef = self._where(rule, formula(rule), log_coef)
        if self._capped:
            log_coef = torch.minimum(log_coef, self._log_eta_max + M)
        return log_coef

    def cheapest(self, params0: Mapping[str, torch.Tensor]) -> tuple["FirstOrder", dict[str, torch.Tensor]]:
        """(step, params): this step, with the same settings and no momentum yet, on the model's
        cheapest representation of the start ``params0`` (`Model.cheapest`); itself where that
        is the model as given.  Every rule works in any geometry, so no rule keeps it dense."""
        model, params = self.model.cheapest(params0)
        if model is self.model:
            return self, params
        twin = copy.copy(self)
        twin.model, twin._velocity = model, None
        return twin, params

    # -- the step --------------------------------------------------------------------------
    def __call__(self, t: int, params: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        grads = self.model.scaled_gradient(params)
        coefs = self._coefficients(t, params, grads)
        if not self._heavy_ball:
            return self._moved(params, {b: (-c_b, grads[b].direction) for b, c_b in coefs.items()})
        steps = {b: self._combination(b, [(c_b, grads[b].direction)]) for b, c_b in coefs.items()}
        restart = t == 0 or self._velocity is None
        if not restart:
            steps = {b: self._combination(b, [(self.momentum, self._velocity[b]), (1.0, s)])
                     for b, s in steps.items()}
        self._velocity = steps
        if restart:
            return self._moved(params, {b: (-c_b, grads[b].direction) for b, c_b in coefs.items()})
        return self._moved(params, {b: (-1.0, s) for b, s in steps.items()})

    def _coefficients(self, t, params, grads):
        """{b: c_b}: the coefficient of each block's direction G_b in the step (module docstring)."""
        M, weights, norms, norm = self._joint_scale(grads)
        log_eta_t = self._log_eta_t(t)
        coef = 0.0
        if self._joint_rules:
            coef = torch.exp(self._log_coef(params, log_eta_t if self._scheduled else self._log_eta, M, norm))
            if norm is not None:
                coef = torch.where(norm > self._zero, coef, self._zero)
        coefs = {}
        for b in grads:
            coefs[b] = coef if weights[b] is None else coef * weights[b]
            if "block_ngd" in self._rule_set:
                n = norms[b]
                coefs[b] = self._where("block_ngd", torch.where(n > self._zero, _exp(log_eta_t) / n, self._zero),
                                       coefs[b])
        return coefs

    def _moved(self, params, moves):
        """``params`` with the terms ``moves`` ({block: (coef, tensor)}) added."""
        return {b: self._combination(b, [(1.0, params[b]), moves[b]]) if b in moves else params[b]
                for b in params}

    def _combination(self, block, terms):
        """sum of coef * tensor over ``terms`` ((coef, tensor), coef a number or a (K,) tensor),
        reported to the block's geometry (`Geometry.combined`, which may derive its products)."""
        result = linear_combination(terms)
        self.model.geometry(block).combined(result, terms)
        return result


def _everywhere(setting, value) -> bool:
    """Whether a setting (a number or a (K,) tensor) is the number ``value`` for every trial."""
    return isinstance(setting, float) and setting == value


def _kept(value, like):
    """A setting as a tensor: a number as a 0-dim tensor of ``like``'s dtype and device, a (K,)
    tensor as itself."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.tensor(value, dtype=like.dtype, device=like.device)


def _log(value):
    return torch.log(value) if isinstance(value, torch.Tensor) else math.log(value)


def _exp(value):
    return torch.exp(value) if isinstance(value, torch.Tensor) else math.exp(value)


def GD(model: Model, eta, *, momentum=0.0, name="gd") -> FirstOrder:
    r"""Gradient descent theta <- theta - eta grad L (``eta`` a number or one per trial)."""
    return FirstOrder(model, rule="gd", eta=eta, momentum=momentum, name=name)


def NGD(model: Model, eta, *, eta_max=math.inf, momentum=0.0, alpha=0.0, name=None) -> FirstOrder:
    r"""Normalized GD theta <- theta - eta_t grad L/||grad L||, eta_t = eta (t+1)^-alpha, with the
    step size eta_t/||grad L|| capped at ``eta_max``, heavy ball ``momentum`` mu, and ||.|| the
    joint norm over the model's blocks."""
    default = "ngd_momentum" if momentum else "ngd"
    return FirstOrder(model, rule="ngd", eta=eta, eta_max=eta_max, momentum=momentum, alpha=alpha,
                      name=name or default)


def Polyak(model: Model, *, eta_max=math.inf, name="polyak") -> FirstOrder:
    r"""Polyak step theta <- theta - eta_t grad L, eta_t = min((L - L_*)/||grad L||^2, eta_max),
    L_* = inf L as the model gives it (``model.log_excess_loss``)."""
    return FirstOrder(model, rule="polyak", eta_max=eta_max, name=name)


def BlockNGD(model: Model, eta, *, alpha=0.0, name="block_ngd") -> FirstOrder:
    r"""Per-block normalized GD with a time factor: theta_b <- theta_b - eta (t+1)^-alpha
    grad_b L/||grad_b L|| for every block b (a block with zero gradient does not move)."""
    return FirstOrder(model, rule="block_ngd", eta=eta, alpha=alpha, name=name)


@dataclass(frozen=True)
class Method:
    """One optimizer of a side-by-side batch: a label and the settings of :class:`FirstOrder`."""

    label: str
    rule: str
    eta: float = 1.0
    eta_max: float = math.inf
    momentum: float = 0.0
    alpha: float = 0.0

    def __post_init__(self):
        if self.rule not in RULES:
            raise DeclarationError(f"method {self.label!r}: unknown rule {self.rule!r}; use one of "
                                   f"{RULES}")

    def step(self, model: Model) -> FirstOrder:
        """This method alone on ``model``."""
        return FirstOrder(model, rule=self.rule, eta=self.eta, eta_max=self.eta_max,
                          momentum=self.momentum, alpha=self.alpha, name=self.label)


def tile(params: Mapping[str, torch.Tensor], copies: int) -> dict[str, torch.Tensor]:
    """Every block repeated ``copies`` times along the trial dimension (trials [mK, (m+1)K) are
    copy m)."""
    return {b: v.repeat(copies, *([1] * (v.dim() - 1))) for b, v in params.items()}


def side_by_side(model: Model, methods: Sequence[Method]) -> FirstOrder:
    """Several methods in one batched step: the model's K trials repeated once per method;
    trials [mK, (m+1)K) follow ``methods[m]``.  Start it from ``tile(params, len(methods))``."""
    K = model.trial_count()
    tiled = model.tiled(len(methods))

    def each(field):
        return [getattr(m, field) for m in methods for _ in range(K)]

    return FirstOrder(tiled, rule=each("rule"), eta=each("eta"), eta_max=each("eta_max"),
                      momentum=each("momentum"), alpha=each("alpha"),
                      name="+".join(m.label for m in methods))


def register_optimizer(name: str):
    """Register ``factory(model) -> step`` under ``name`` for the conformance suite (an optimizer
    that works on any model of the protocol)."""

    def decorate(factory):
        if name in OPTIMIZERS and OPTIMIZERS[name] is not factory:
            raise DeclarationError(f"optimizer {name!r} is registered twice")
        OPTIMIZERS[name] = factory
        return factory

    return decorate


#: name -> factory(model) -> step, for the conformance suite (every rule, with cap and momentum;
#: other modules add theirs with `register_optimizer`)
OPTIMIZERS = {
    "gd": lambda model: GD(model, 0.3),
    "ngd": lambda model: NGD(model, 0.1),
    "ngd_momentum_capped": lambda model: NGD(model, 0.1, eta_max=5.0, momentum=0.9),
    "polyak": lambda model: Polyak(model),
    "polyak_capped": lambda model: Polyak(model, eta_max=5.0),
    "block_ngd_time_factor": lambda model: BlockNGD(model, 0.2, alpha=2 / 3),
}
