"""The attention networks: closed-form gradients, the softmax matrix, the scale maps, the
last-layer certificate and bad input."""
import pytest
import torch

from theorycheck.errors import DeclarationError, UsageError
from theorycheck.models.base import loss_gradient
from theorycheck.models import (RELU, Activation, BaselineNet, BiasedAttentionNet, BiasedBaselineNet,
                                GlobalAttentionNet, SelfAttentionNet,
                                global_attention_gradients, last_layer_certificate,
                                parameters_reached,
                                scale_global_attention, scale_self_attention, self_attention_matrix,
                                self_attention_values)

torch.set_num_threads(1)
G = torch.Generator().manual_seed(3)


def randn(*shape):
    return torch.randn(*shape, generator=G, dtype=torch.float64)


def global_problem(K=2, n=9, p=5, d=4):
    return randn(K, n, p), randn(K, n), {"a": randn(K, p), "W1": randn(K, p, d), "W2": randn(K, d)}


@pytest.mark.parametrize("act", [Activation("softplus", 3.0), RELU])
def test_closed_form_gradients_equal_autograd(act):
    X, y, params = global_problem()
    model = GlobalAttentionNet(X, y, act)
    auto = model.gradient(params)
    closed = global_attention_gradients(X, y, params["a"], params["W1"], params["W2"], act)
    for b in model.blocks:
        assert torch.allclose(auto[b], closed[b], rtol=1e-12, atol=1e-14), b


def test_attention_is_baseline_with_rows_scaled():
    X, y, params = global_problem()
    att = GlobalAttentionNet(X, y, RELU).output(params)
    base = BaselineNet(X, y, RELU).output({"W1": params["a"].unsqueeze(-1) * params["W1"],
                                           "W2": params["W2"]})
    assert torch.allclose(att, base, rtol=1e-13, atol=1e-13)


def test_softmax_columns_on_simplex_and_vec_order():
    X = randn(2, 3, 4, 5)
    WQ, WK, WV = randn(2, 3, 4), randn(2, 3, 4), randn(2, 2, 4)
    A = self_attention_matrix(X, WQ, WK)
    assert torch.allclose(A.sum(-2), torch.ones(2, 3, 5, dtype=torch.float64), atol=1e-14)
    assert (A > 0).all()
    v = self_attention_values(X, WQ, WK, WV)
    # word z's value vector W_V X A[:, z] occupies coordinates [z d_v, (z+1) d_v)
    z = 3
    direct = torch.einsum("vt,tp,p->v", WV[1], X[1, 2], A[1, 2, :, z])
    assert torch.allclose(v[1, 2, z * 2:(z + 1) * 2], direct, atol=1e-13)


def test_relu_scale_maps_leave_the_function_unchanged():
    X, y, params = global_problem()
    model = GlobalAttentionNet(X, y, RELU)
    assert torch.allclose(model.output(scale_global_attention(params, 0.25, 8.0)),
                          model.output(params), rtol=1e-13, atol=1e-13)
    sa = SelfAttentionNet(randn(2, 6, 3, 4), randn(2, 6), RELU)
    sp = {"W1": randn(2, 8, 5), "W2": randn(2, 5), "WQ": randn(2, 2, 3), "WK": randn(2, 2, 3),
          "WV": randn(2, 2, 3)}
    assert torch.allclose(sa.output(scale_self_attention(sp, 0.125)), sa.output(sp), atol=1e-12)
    softplus = GlobalAttentionNet(X, y, Activation("softplus", 1.0))
    assert not torch.allclose(softplus.output(scale_global_attention(params, 0.5, 1.0)),
                              softplus.output(params), atol=1e-3)
    with pytest.raises(UsageError, match="non-zero"):
        scale_global_attention(params, 0.0, 1.0)


def test_last_layer_certificate_bounds_the_loss():
    X, y, params = global_problem(K=3, n=6, p=4, d=10)
    model = GlobalAttentionNet(X, y, Activation("softplus", 2.0))
    bound = last_layer_certificate(model.features(params), model.gradient(params)["W2"])
    assert (bound >= model.loss(params)).all()
    with pytest.raises(UsageError, match="d >= n"):
        last_layer_certificate(randn(1, 6, 3), randn(1, 3))


def test_bad_input_is_named():
    with pytest.raises(DeclarationError, match="X must be"):
        GlobalAttentionNet(randn(2, 5), randn(2, 5))
    with pytest.raises(DeclarationError, match="activation"):
        Activation("tanh")
    with pytest.raises(DeclarationError, match="tau"):
        Activation("softplus", 0.0)


def test_biased_network_output_and_losses():
    X, Y = randn(2, 7, 4), randn(2, 7, 3)
    params = {"a": randn(2, 4), "W1": randn(2, 4, 5), "b1": randn(2, 5), "W2": randn(2, 5, 3),
              "b2": randn(2, 3)}
    F = BiasedAttentionNet(X, Y, RELU).output(params)
    direct = torch.relu((X[1, 2] * params["a"][1]) @ params["W1"][1] + params["b1"][1]) \
        @ params["W2"][1] + params["b2"][1]
    assert torch.allclose(F[1, 2], direct, atol=1e-13)
    mse = BiasedAttentionNet(X, Y, RELU).loss(params)
    assert torch.allclose(2 * mse, ((F - Y) ** 2).mean((1, 2)), atol=1e-13)
    classes = torch.tensor([[0, 2, 1, 1, 0, 2, 2], [1, 1, 0, 2, 0, 0, 1]])
    ce = BiasedAttentionNet(X, classes, RELU, objective="cross_entropy").loss(params)
    reference = torch.stack([torch.nn.functional.cross_entropy(F[k], classes[k]) for k in range(2)])
    assert torch.allclose(ce, reference, atol=1e-13)
    base = {b: params[b] for b in BiasedBaselineNet.blocks}
    ones = dict(base, a=torch.ones(2, 4, dtype=torch.float64))
    assert torch.allclose(BiasedBaselineNet(X, Y, RELU).output(base),
                          BiasedAttentionNet(X, Y, RELU).output(ones), atol=0)


def test_biased_network_bad_input_is_named():
    X = randn(1, 5, 3)
    with pytest.raises(DeclarationError, match="objective"):
        BiasedAttentionNet(X, randn(1, 5, 2), objective="hinge")
    with pytest.raises(DeclarationError, match=r"Y \(K, n, m\)"):
        BiasedAttentionNet(X, randn(1, 5))
    with pytest.raises(DeclarationError, match="integer classes"):
        BiasedAttentionNet(X, randn(1, 5), objective="cross_entropy")


def test_parameters_reached_counts_dead_units_and_skips_unused_tensors():
    """A ReLU unit inactive on every input has zero gradient but is a parameter of the output
    (the seed-dependent count of non-zero gradients missed t + 1 = 7 entries per dead unit);
    a tensor the output never touches is not counted."""
    X = torch.ones(3, 2, dtype=torch.float64)
    W1 = torch.tensor([[1.0, -1.0], [1.0, -1.0]], dtype=torch.float64, requires_grad=True)
    W2 = torch.ones(2, dtype=torch.float64, requires_grad=True)
    unused = torch.ones(4, dtype=torch.float64, requires_grad=True)
    out = torch.relu(X @ W1) @ W2
    out.sum().backward()
    assert int((W1.grad != 0).sum()) + int((W2.grad != 0).sum()) == 3  # unit 2 is dead
    assert parameters_reached(torch.relu(X @ W1) @ W2, [W1, W2, unused]) == 6


def test_parameters_reached_rejects_detached_input():
    W = torch.ones(2, dtype=torch.float64, requires_grad=True)
    with pytest.raises(UsageError, match="autograd graph"):
        parameters_reached(torch.ones(2, dtype=torch.float64), [W])
    with pytest.raises(UsageError, match="require grad"):
        parameters_reached(W * 2, [torch.ones(2, dtype=torch.float64)])


def test_default_gradient_is_bitwise_torch_func_grad():
    """`loss_gradient` (plain reverse mode, the models' default gradient) gives the bits of
    ``torch.func.grad``; a block the loss does not read gets zeros, as torch.func.grad's."""
    X, y, params = global_problem()
    model = GlobalAttentionNet(X, y, RELU)
    reference = torch.func.grad(lambda p: model.loss(p).sum())(dict(params))
    fast = loss_gradient(model.loss, params, model.blocks)
    assert all(torch.equal(fast[b], reference[b]) for b in model.blocks)
    # a model without an exact scaled form of its own: gradient() is that reverse-mode gradient
    assert all(torch.equal(g, reference[b]) for b, g in model.gradient(params).items())
    unused = loss_gradient(lambda p: model.loss(p), dict(params, c=randn(2, 3)), ("W2", "c"))
    assert torch.equal(unused["c"], torch.zeros(2, 3, dtype=torch.float64))


def test_default_gradient_stays_differentiable_under_torch_func():
    """Under a torch.func transform the default gradient is torch.func.grad's, so a Hessian
    through ``model.gradient`` equals the Hessian of the loss (a detached gradient would give 0)."""
    X, y, params = global_problem(K=1)
    model = GlobalAttentionNet(X, y, Activation("softplus", 3.0))

    def w2_gradient(w2):
        return model.gradient(dict(params, W2=w2))["W2"]

    through_gradient = torch.func.jacrev(w2_gradient)(params["W2"])
    direct = torch.func.hessian(lambda w2: model.loss(dict(params, W2=w2)).sum())(params["W2"])
    assert torch.allclose(through_gradient, direct, rtol=1e-10, atol=1e-12)
    assert through_gradient.abs().max() > 0
