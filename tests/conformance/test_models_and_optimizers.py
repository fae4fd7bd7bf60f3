"""Conformance of every registered model and optimizer (the benchopt / neural-tangents lesson).

Parametrized over `theorycheck.models.MODELS` (each registers a small instance) and
`theorycheck.optim.OPTIMIZERS`, so a new model or optimizer is covered by registering it:

* the batch equals trial by trial (gradients, losses, optimizer steps);
* the scaled gradient equals ``torch.func`` autograd of the plain reference loss away from
  saturation, and its direction has entries of order one;
* loss, gradient and one step of every optimizer stay finite deep in saturation;
* a zero gradient gives a zero step, for every optimizer;
* each block's geometry is consistent: ||A||^2 = <A, A>, symmetric and linear;
* the Hessian-vector product agrees with central finite differences of the gradient;
* every model and optimizer class (library and paper packages) is registered, none in a test file;
* each model's step time (NGD, CPU microseconds) is measured and reported beside the library's
  linear classifier's at the same K (`user_properties` of the test, and a table in the terminal
  summary): a measurement, never an assertion on time.

Models and optimizers that a paper package registers (``claims/<key>/models.py``) are
collected too: ``conftest.py`` imports the paper packages first.

Matrices are compared by relative Frobenius error (`relative_error`), tolerances from the
float64 round-off of the operations involved.
"""
import functools
import statistics
import time

import pytest
import torch

from theorycheck.discovery import classes_in_test_files, import_paper_modules, unregistered_classes
from theorycheck.errors import DeclarationError
from theorycheck.models import MODELS, Model, Scaled
from theorycheck.optim import OPTIMIZERS, relative_error

K, SEED = 3, 0
torch.set_num_threads(1)


def instance(name):
    return MODELS[name](K, SEED)


def trial(params, k):
    return {b: v[k:k + 1] for b, v in params.items()}


def polyak_unsupported(model, params):
    try:
        model.log_excess_loss(params)
    except DeclarationError:
        return True
    return False


def optimizer_or_skip(opt_name, model, params):
    if opt_name.startswith("polyak") and polyak_unsupported(model, params):
        pytest.skip(f"{type(model).__name__} declares no infimum (Polyak steps need one)")
    return OPTIMIZERS[opt_name](model)


def test_something_is_registered():
    assert MODELS and OPTIMIZERS


def test_every_model_and_optimizer_class_is_registered(claims_root):
    """Every `Model` and `Step` subclass of the library and of the paper packages (their test
    files included) is produced by a registered factory, so this suite checks it; none is
    defined in a test file."""
    if claims_root.exists():
        import_paper_modules(claims_root, tests=True)
    assert not classes_in_test_files(), (
        f"model or optimizer classes defined in test files: {classes_in_test_files()} -- move "
        "each to its paper's models.py and register it (register_model / register_optimizer)")
    assert not unregistered_classes(), (
        f"unregistered model or optimizer classes: {unregistered_classes()} -- register a small "
        "instance (register_model(name)(factory) / register_optimizer(name)(factory)), or mark "
        "a base class with conformance_base = True")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_batch_equals_trial_by_trial(name):
    inst = instance(name)
    model, params = inst.model, inst.params
    model.check_params(params)
    grads, log_loss = model.gradient(params), model.log_loss(params)
    for k in range(K):
        alone = model.restrict(slice(k, k + 1))
        torch.testing.assert_close(alone.log_loss(trial(params, k)), log_loss[k:k + 1], rtol=1e-13, atol=0)
        for b, g in alone.gradient(trial(params, k)).items():
            assert float(relative_error(g, grads[b][k:k + 1])) <= 1e-13, (b, k)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradient_equals_autograd_away_from_saturation(name):
    inst = instance(name)
    model, params = inst.model, inst.params
    auto = torch.func.grad(lambda p: model.reference_loss(p).sum())(dict(params))
    scaled = model.scaled_gradient(params)
    for b in model.blocks:
        assert isinstance(scaled[b], Scaled)
        assert float(relative_error(scaled[b].value(), auto[b]).max()) <= 1e-12, b
        peak = scaled[b].direction.abs().flatten(1).amax(1)
        assert bool(((peak > 1e-3) & (peak < 1e3)).all()), f"{b}: direction not of order one"
    torch.testing.assert_close(model.loss(params), model.reference_loss(params), rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_finite_deep_in_saturation(name):
    inst = instance(name)
    if inst.saturated is None:
        pytest.skip(f"{name} cannot saturate")
    model, params = inst.model, inst.saturated
    assert bool(torch.isfinite(model.log_loss(params)).all())
    for b, g in model.scaled_gradient(params).items():
        assert bool(torch.isfinite(g.direction).all()) and bool((g.log_scale < 1e300).all()), b
        assert bool((g.direction.abs().flatten(1).amax(1) > 0).all()), f"{b}: gradient lost"
    for opt_name in sorted(OPTIMIZERS):
        if opt_name.startswith("polyak") and polyak_unsupported(model, params):
            continue
        new = OPTIMIZERS[opt_name](model)(0, params)
        assert all(bool(torch.isfinite(v).all()) for v in new.values()), opt_name


class _ZeroGradientOnFirstTrial(Model):
    """Wraps a model; its gradient is exactly zero on trial 0 (log scale -inf, direction 0)."""

    def __init__(self, inner):
        self.inner, self.blocks, self.infimum = inner, inner.blocks, inner.infimum

    def data_tensor(self):
        return self.inner.data_tensor()

    def log_loss(self, params):
        return self.inner.log_loss(params)

    def log_excess_loss(self, params):
        return self.inner.log_excess_loss(params)

    def restrict(self, trials):
        raise NotImplementedError

    def geometry(self, block):
        return self.inner.geometry(block)

    def scaled_gradient(self, params):
        out = {}
        for b, g in self.inner.scaled_gradient(params).items():
            keep = torch.ones_like(g.log_scale)
            keep[0] = 0.0
            out[b] = Scaled(torch.where(keep > 0, g.log_scale, -torch.inf),
                            g.direction * keep.reshape((-1,) + (1,) * (g.direction.dim() - 1)))
        return out


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_zero_gradient_gives_zero_step(name, opt_name):
    inst = instance(name)
    model = _ZeroGradientOnFirstTrial(inst.model)
    step = optimizer_or_skip(opt_name, model, inst.params)
    new = step(0, inst.params)
    for b in model.blocks:
        assert torch.equal(new[b][0], inst.params[b][0]), b
        assert not torch.equal(new[b][1:], inst.params[b][1:]), f"{b}: the other trials must move"


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_optimizer_batch_equals_trial_by_trial(name, opt_name):
    inst = instance(name)
    model = inst.model
    step = optimizer_or_skip(opt_name, model, inst.params)
    params = dict(inst.params)
    alone = [trial(inst.params, k) for k in range(K)]
    steps_alone = [OPTIMIZERS[opt_name](model.restrict(slice(k, k + 1))) for k in range(K)]
    for t in range(5):
        params = step(t, params)
        alone = [s(t, p) for s, p in zip(steps_alone, alone)]
    for k in range(K):
        for b in model.blocks:
            torch.testing.assert_close(params[b][k:k + 1], alone[k][b], rtol=1e-12, atol=1e-300,
                                       equal_nan=True, msg=f"{b}, trial {k}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_geometry_is_consistent(name):
    inst = instance(name)
    g = torch.Generator().manual_seed(1)
    for b in inst.model.blocks:
        geo = inst.model.geometry(b)
        A, B = (torch.randn(inst.params[b].shape, generator=g, dtype=torch.float64) for _ in range(2))
        torch.testing.assert_close(geo.norm(A) ** 2, geo.inner(A, A), rtol=1e-13, atol=0)
        torch.testing.assert_close(geo.inner(A, B), geo.inner(B, A), rtol=1e-13, atol=1e-15)
        torch.testing.assert_close(geo.inner(2.0 * A + B, B), 2.0 * geo.inner(A, B) + geo.inner(B, B),
                                   rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_hessian_vector_product_matches_finite_differences(name):
    """(grad L(theta + h v) - grad L(theta - h v)) / 2h = H v + O(h^2); h = 1e-4 makes the
    truncation ~1e-8 and the round-off ~1e-12 relative."""
    inst = instance(name)
    model, params = inst.model, inst.params
    g = torch.Generator().manual_seed(2)
    v = {b: torch.randn(p.shape, generator=g, dtype=p.dtype) for b, p in params.items()}
    hv = model.hessian_vector_product(params, v)
    h = 1e-4
    plus = model.gradient({b: params[b] + h * v[b] for b in params})
    minus = model.gradient({b: params[b] - h * v[b] for b in params})
    for b in model.blocks:
        fd = (plus[b] - minus[b]) / (2 * h)
        assert float(relative_error(hv[b], fd).max()) <= 1e-6, b


def step_microseconds(model, params, steps=20, repeats=3):
    """Median over ``repeats`` of the CPU microseconds per NGD step of ``model`` from ``params``
    (``steps`` consecutive steps a timing, after one warm-up step)."""
    step = OPTIMIZERS["ngd"](model)
    params = step(0, params)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        for t in range(1, steps + 1):
            params = step(t, params)
        times.append((time.process_time() - start) / steps * 1e6)
    return statistics.median(times)


@functools.cache
def library_step_microseconds():
    """The library's reference: `LinearClassifier` (logistic) at the suite's K."""
    inst = instance("linear_logistic")
    return step_microseconds(inst.model, inst.params)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_step_time_is_reported_beside_the_librarys(name, record_property):
    """The model's NGD step time beside the linear classifier's (reported, not judged: a slow
    step shows in the terminal summary's table, see conftest.py)."""
    inst = instance(name)
    mine, library = step_microseconds(inst.model, inst.params), library_step_microseconds()
    assert mine > 0 and library > 0
    record_property("step_us", mine)
    record_property("library_step_us", library)
