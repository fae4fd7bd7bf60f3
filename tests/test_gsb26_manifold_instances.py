"""gsb26's batched manifold points (`claims/gsb26/population.py`): the instances of
`manifold_gap_instances` are those of `manifold_point_with_tail`, one at a time."""
import numpy as np
import torch

from claims.gsb26.population import manifold_point_with_tail, manifold_points_with_tail, score_tails
from claims.gsb26.setup import haar_rotations, score_tail, well_conditioned


def test_batched_manifold_points_equal_the_one_at_a_time_construction():
    rng = np.random.default_rng(5)
    problems = [well_conditioned(rng) for _ in range(4)]
    Rs = [haar_rotations(rng, p.d, 1)[0] for p in problems]
    scaled, V, K, mu = manifold_points_with_tail(problems, Rs, 0.25, torch.as_tensor)
    for j, (problem, R) in enumerate(zip(problems, Rs)):
        one, V1, K1 = manifold_point_with_tail(problem, R, 0.25)
        np.testing.assert_allclose(scaled[j].W, one.W, rtol=1e-12)
        np.testing.assert_allclose(V[j].numpy(), V1, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(K[j].numpy(), K1, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(mu, 0.25, rtol=1e-12)


def test_score_tails_is_score_tail_batched():
    rng = np.random.default_rng(6)
    problems = [well_conditioned(rng) for _ in range(3)]
    K = rng.standard_normal((3, 3, 3))
    Sigma = np.stack([p.Sigma for p in problems])
    batched = score_tails(torch.as_tensor(K), torch.as_tensor(Sigma)).numpy()
    np.testing.assert_allclose(batched, [score_tail(k, s) for k, s in zip(K, Sigma)], rtol=1e-12)
