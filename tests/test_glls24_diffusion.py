"""claims.glls24.diffusion's pieces of Claim G.1 that its stated tail bounds rest on: the
feature map's unit ball (`UNIT_BALL_EXACT`), kernel GD's contraction of the labels at the
training points (`CONTRACTION_EXACT`), and the round-off bound of the label mismatch's linearity
taken per trial when every trial has its own labels."""
import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from claims.glls24.diffusion import linearity_roundoff_bound
from claims.glls24.setup import TIME_WINDOW, diffusion_features
from theorycheck.solvers import kernel_gd_predictions
from theorycheck.tolerance import tolerance


def gram_batch(rng, trials, n):
    """``trials`` positive semi-definite Gram matrices of rank n - 1 (one direction at zero, as
    the round-off eigenvalues of the claim's H(0)), (trials, n, n)."""
    B = rng.standard_normal((trials, n, n - 1))
    return torch.tensor(B @ B.transpose(0, 2, 1))


@given(x=st.floats(-1e150, 1e150), t=st.floats(*TIME_WINDOW))     # x^2 finite
def test_features_lie_in_the_unit_ball_for_every_sample(x, t):
    z = diffusion_features(np.array([[x]]), np.array([t]))
    assert np.abs(z * np.sqrt(3)).max() <= 1.0                   # each rounded coordinate (at |x| >> 1 it is 1)
    assert np.linalg.norm(z) <= 1.0 + tolerance("float64", "exact")   # the precondition's margin


def test_kernel_gd_contracts_the_labels_at_the_training_points():
    rng = np.random.default_rng(4)
    H = gram_batch(rng, 3, 12)
    step = 1.0 / torch.linalg.eigvalsh(H)[:, -1]                 # eta m = 1 / lambda_max, the claim's
    v = torch.tensor(rng.standard_normal((3, 12)))
    for T in (1, 10, 1000):
        fitted = kernel_gd_predictions(H, H, v, step, [T])[0]
        assert (fitted.pow(2).sum(1) <= v.pow(2).sum(1)).all()


def test_linearity_bound_of_a_batch_is_each_trials_own():
    rng = np.random.default_rng(5)
    H = gram_batch(rng, 2, 8)
    K_test = torch.tensor(rng.standard_normal((2, 5, 8)))
    step = 1.0 / torch.linalg.eigvalsh(H)[:, -1]
    y1, y2 = rng.standard_normal((2, 8)), 10.0 * rng.standard_normal((2, 8))
    v = y1 - y2
    image = kernel_gd_predictions(H, K_test, torch.tensor(v), step, [50])[0].numpy()
    batch = linearity_roundoff_bound(H, K_test, step, 50, (y1, y2, v), image, 2.0**-53)
    for k in range(2):
        alone = linearity_roundoff_bound(H[k:k + 1], K_test[k:k + 1], step[k:k + 1], 50,
                                         (y1[k:k + 1], y2[k:k + 1], v[k:k + 1]), image[k:k + 1], 2.0**-53)
        np.testing.assert_allclose(batch[k], alone[0], rtol=1e-12)
