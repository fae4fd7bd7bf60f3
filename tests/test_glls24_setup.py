"""claims.glls24.setup's construction checks: the properties a construction makes true (Def. 3.7's
pairing, data in the unit ball) hold on the constructors' probes and on every draw, and a drawn
array that breaks them is a clear error, not a silent pass."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claims.glls24.setup import (
    INITIALIZATIONS,
    SIGMA,
    constructor_probe,
    in_unit_ball,
    probe_regression_data,
    regression_data,
    require_pairing,
)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(1, 4), d_in=st.integers(1, 6), d=st.integers(1, 3),
       half=st.integers(1, 16))
def test_symmetric_draws_are_paired_and_data_in_the_unit_ball(seed, K, d_in, d, half):
    rng = np.random.default_rng(seed)
    W, A = INITIALIZATIONS["symmetric"](rng, K, d_in, d, 2 * half, SIGMA)
    require_pairing(W, A)
    assert in_unit_ball(*regression_data(rng, K, 3, d_in, d)).all()


def test_unpaired_weights_are_an_error_naming_the_property():
    W, A = INITIALIZATIONS["independent"](np.random.default_rng(1), 2, 3, 2, 8, SIGMA)
    with pytest.raises(RuntimeError, match=r"initialization is symmetric \(Def. 3.7\)"):
        require_pairing(W, A)


def test_probes_do_not_depend_on_anything_but_the_shape():
    first, second = probe_regression_data(n=4, d_in=8, d=2), probe_regression_data(n=4, d_in=8, d=2)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert constructor_probe().standard_normal() == constructor_probe().standard_normal()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 5), extra=st.integers(0, 4), half=st.integers(2, 64))
def test_two_output_kernel_is_two_schur_products(seed, n, extra, half):
    """`two_output_kernel_tail`'s argument on symmetric draws at d = 2: H(0)'s spectrum is 2m times the
    union of those of X X^T o M_+ and X X^T o M_- (the sign types of a_r), and lambda_min / lambda_max
    is at least kappa(X X^T)^{-1} min_i,+- (M_+-)_ii / max_i,+- (M_+-)_ii."""
    import torch

    from theorycheck.models import TwoLayerNetwork

    rng = np.random.default_rng(seed)
    d_in, m = n + extra, 2 * half
    X, Y = regression_data(rng, 1, n, d_in, 2)
    W, A = INITIALIZATIONS["symmetric"](rng, 1, d_in, 2, m, SIGMA)
    H = TwoLayerNetwork(*(torch.tensor(a, dtype=torch.float64) for a in (X, Y, A))).gram(
        torch.tensor(W, dtype=torch.float64))[0].numpy()
    z = X[0] @ W[0]
    S = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    G, sign = X[0] @ X[0].T, A[0, 0] * A[0, 1]
    M = [S[:, sign == t] @ S[:, sign == t].T for t in (1.0, -1.0)]
    union = np.sort(np.concatenate([np.linalg.eigvalsh(G * Mt) for Mt in M]))
    eigenvalues = np.linalg.eigvalsh(H)
    np.testing.assert_allclose(eigenvalues, 2 * m * union, rtol=1e-9, atol=1e-12 * eigenvalues[-1])
    diagonal, g = np.concatenate([np.diag(Mt) for Mt in M]), np.linalg.eigvalsh(G)
    assert eigenvalues[0] / eigenvalues[-1] >= g[0] / g[-1] * diagonal.min() / diagonal.max() - 1e-12   # round-off


def test_two_output_kernel_tail_states_a_bound_at_d_2_only():
    from claims.glls24.setup import INFORMATIVE_TAIL, two_output_kernel_tail

    shapes = [(4, 8, 256), (4, 8, 1024), (4, 8, 4096)]
    one, many = two_output_kernel_tail(shapes, 1, 2), two_output_kernel_tail(shapes, 16, 2)
    assert 0 < one.probability < many.probability <= INFORMATIVE_TAIL
    assert many.probability == pytest.approx(16 * one.probability)
    assert two_output_kernel_tail(shapes, 1, 1) is None and two_output_kernel_tail(shapes, 1, 3) is None
    assert two_output_kernel_tail([(4, 8, 16)], 16, 2) is None      # too narrow: nothing useful proved


def test_paired_kernel_tail_takes_the_runs_shapes_and_trials():
    from claims.glls24.setup import paired_kernel_tail, scalar_output_kernel_tail, two_output_kernel_tail

    def run(n, d_in, d, m, trials):
        return {"X": np.zeros((trials, n, d_in)), "Y": np.zeros((trials, n, d)), "m": m, "lambda": np.ones(trials)}

    two = [run(4, 8, 2, m, 3) for m in (256, 1024, 4096)]
    assert paired_kernel_tail(two) == two_output_kernel_tail([(4, 8, m) for m in (256, 1024, 4096)], 3, 2)
    one = [run(n, 2 * n, 1, 512, 3) for n in (4, 8, 16)]
    assert paired_kernel_tail(one) == scalar_output_kernel_tail([(n, 2 * n, 512) for n in (4, 8, 16)], 3)
    assert paired_kernel_tail([run(4, 8, 3, 256, 3)]) is None
