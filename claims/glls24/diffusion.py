r"""glls24's diffusion case study (Sec. 6) beyond its data (`denoising_samples`,
`diffusion_features` in `claims.glls24.setup`): the unbiasedness z-score of the denoising label,
the forward SDE's moments by Euler-Maruyama, the early-stopping risks of kernel GD with the
network's NTK (Theorem 6.6) and the shared network run of Claim G.1."""
from __future__ import annotations

import numpy as np
import torch

from claims.glls24.setup import denoising_samples, diffusion_features, initialization
from theorycheck import shared_run
from theorycheck.batching import map_chunks
from theorycheck.models import ntk_gram
from theorycheck.solvers import ou_coefficients, softmax_limit_kernel, spectral_filter


def unbiased_label_z(label, score, h):
    r"""z-score of ``mean((label - score) h)``: zero in expectation when ``E[label | x, t] = score``."""
    v = (label - score)[:, 0] * h[:, 0]
    spread = v.std(ddof=1)
    return 0.0 if spread == 0 else float(v.mean() / (spread / np.sqrt(len(v))))


def forward_process_moments(rng, paths, steps=1000):
    r"""``E[x(1) x(0)]`` and ``E[x(1)^2]`` of ``dx = -x dt + sqrt 2 dB`` from ``x(0) ~ p_0``, by
    Euler-Maruyama (``steps`` steps) and from the closed form ``x(1) = alpha x(0) + s xi``
    (`ou_coefficients`); the tolerance is 5 Monte-Carlo standard errors plus the scheme's bias
    ``O(dt)`` (relative 1e-3 at dt = 1e-3)."""
    x0 = denoising_samples(rng, paths)[0]
    x, dt = x0.copy(), 1.0 / steps
    for _ in range(steps):
        x = x - x * dt + np.sqrt(2 * dt) * rng.standard_normal(paths)
    alpha, s = ou_coefficients(1.0)
    simulated = np.array([np.mean(x * x0), np.mean(x**2)])
    predicted = np.array([alpha * np.mean(x0**2), alpha**2 * np.mean(x0**2) + s**2])
    errors = np.array([np.std(x * x0), np.std(x**2)]) / np.sqrt(paths)
    return simulated, predicted, 5 * errors + 1e-3 * np.abs(predicted)


RISK_TIMES = [10**k for k in range(1, 13)]
"""Early-stopping times T = 10, ..., 1e12 of Theorem 6.6's kernel GD (see `test_score_estimation`)."""

NETWORK_TIMES = [10, 100, 1000]
"""The times at which the trained network's risk is compared with kernel GD's (the first three of
RISK_TIMES: GD on the network itself is run step by step)."""


def score_training_sets(tc, n, m, sets, labels="noisy"):
    r"""``sets`` independent training sets of ``n`` denoising samples (stream "train", n), their
    features, one symmetric initialization (sigma = 1, width m) per set and the test points
    (stream "test"); ``labels``: "noisy" (-xi/s), "clean" (f*) or "shuffled" (noisy labels
    permuted within each set).  Numpy labels and scores (sets, n), tensors Z (sets, n, 3), W0, A,
    Z_te (1, M, 3) and the test scores (M,)."""
    _, x, t, label, score = denoising_samples(tc.rng("train", n), sets * n)
    _, x_te, t_te, _, score_te = denoising_samples(tc.rng("test"), tc.sizes["n_test"])
    label, score = label.reshape(sets, n), score.reshape(sets, n)
    if labels == "clean":
        label = score
    if labels == "shuffled":
        rng = tc.rng("shuffle", n)
        label = np.stack([row[rng.permutation(n)] for row in label])
    Z = tc.tensor(diffusion_features(x, t).reshape(sets, n, 3))
    Z_te = tc.tensor(diffusion_features(x_te, t_te)[None])
    W0, A = (tc.tensor(a) for a in initialization(tc, d_in=3, d=1, m=m, K=sets, sigma=1.0))
    return {"label": label, "score": score, "Z": Z, "Z_te": Z_te, "W0": W0, "A": A, "score_te": score_te[:, 0]}


def kernel_score_risks(tc, data, times=RISK_TIMES):
    r"""Test risks ``E(f(T) - f*)^2`` of kernel GD with each set's NTK H(0) and function step ``eta m
    = 1 / lambda_max(H(0))``, for every T in ``times``, on the training sets of
    `score_training_sets` (batched along the set dimension, in memory-bounded chunks; one
    eigendecomposition of H per set).  Returns the risks (sets, len(times)), the training z-score
    of E[(y - f*) f*] pooled over the sets' samples (the labels' generator is the same for every
    set, and the product's heavy tails make a z over one set's n samples far from normal), the
    training label noise mean (y - f*)^2 per set, and E f*^2 on the test points."""
    from theorycheck.solvers import spectral_filter

    Z_te, score_te = data["Z_te"], tc.tensor(data["score_te"])

    def risks(Z, W0, A, y):
        H = ntk_gram(Z, Z, W0, A)
        K_te = ntk_gram(Z_te.expand(len(Z), -1, -1), Z, W0, A)
        mu, V = torch.linalg.eigh(H)
        step = (1.0 / mu[:, -1])[:, None]
        coeff = torch.einsum("kji,kj->ki", V, y)
        Phi = torch.stack([spectral_filter(mu, step, float(T)) * coeff for T in times], -1)
        pred = K_te @ (V @ Phi)                                                  # (sets, M, T)
        return (pred - score_te[None, :, None]).pow(2).mean(1)                  # (sets, T)

    n, m = data["Z"].shape[1], data["W0"].shape[2]
    item_bytes = 8 * 3 * Z_te.shape[1] * (n + m)
    values = map_chunks(risks, data["Z"], data["W0"], data["A"], tc.tensor(data["label"]),
                        item_bytes=item_bytes).cpu().numpy()
    label, score = data["label"], data["score"]
    z = unbiased_label_z(label.reshape(-1, 1), score.reshape(-1, 1), score.reshape(-1, 1))
    return values, z, np.mean((label - score) ** 2, axis=1), float(np.mean(data["score_te"] ** 2))


def network_score_risks(tc, data, sets, times=NETWORK_TIMES):
    r"""Test risks ``E(f_W(T) - f*)^2`` of the softmax network itself (width m, the set's symmetric
    initialization) trained by GD on the first ``sets`` training sets with ``eta = 1 / (m
    lambda_max(H(0)))`` -- the network whose kernel GD is `kernel_score_risks` -- at every T in
    ``times`` (sets, len(times))."""
    from theorycheck.models import TwoLayerNetwork
    from theorycheck.optim import GD, run_trajectory

    Z, W0, A = data["Z"][:sets], data["W0"][:sets], data["A"][:sets]
    y = tc.tensor(data["label"][:sets, :, None])
    model = TwoLayerNetwork(Z, y, A)
    m = W0.shape[2]
    eta = 1.0 / (m * torch.linalg.eigvalsh(model.gram(W0))[:, -1])
    Z_te = data["Z_te"].expand(sets, -1, -1)
    target = tc.tensor(data["score_te"])[None, :]
    metric = {"risk": lambda it: (model.outputs(it.params["W"], Z_te)[..., 0] - target).pow(2).mean(1)}
    traj = run_trajectory(GD(model, eta), {"W": W0}, max(times), metric, checkpoints=list(times))
    return np.asarray(traj["risk"]).T


def risk(values, score):
    """Monte-Carlo ``E ||g||^2`` of ``g = values - score`` on the test points (time-weight 1)."""
    return float(np.mean((values - score) ** 2))


CLAIM_G1_SIZES = {"quick": {"n": 64, "widths": [64, 256, 1024, 4096], "instances": 4, "steps": 1000,
                            "auxiliary": 2000, "n_test": 2000},
                  "full": {"n": 2048, "widths": [2**12, 2**13, 2**14], "instances": 3, "steps": 10000,
                           "auxiliary": 20000, "n_test": 5000}}


#: the fields of `claim_g1_network` that differ between instances (stacked by `claim_g1_fits`)
PER_INSTANCE = ("Z", "label", "score", "W0", "A", "H", "eta", "f_W")


@shared_run(sizes=CLAIM_G1_SIZES)
def claim_g1_network(run, *, m, init="symmetric", k=0):
    r"""Claim G.1's instance ``k`` at width ``m``: its own n denoising samples (training, the same at
    every width), the ``n_test`` fresh ones and the ``auxiliary`` ones for f_H that every instance
    shares, as features ``Z``; the softmax network of width m (sigma = 1) from initialization ``k``
    of the ``instances`` independent initializations of kind ``init`` (all drawn, the k-th kept: one
    cached piece per instance, so that the full tier's 10^4 steps at m = 16384 split into
    independent jobs) after ``steps`` GD steps with ``eta = 1/(m lambda_max(H(0)))``; returns the
    samples' features, labels and true scores (1, n, ...), W0, A (1, ...), the NTK Gram matrix H(0)
    (1, n, n), eta (1,) and ``f_W`` on the test points (1, M)."""
    from theorycheck.models import TwoLayerNetwork
    from theorycheck.optim import GD, run_trajectory

    s = run.sizes
    _, x, t, label, score = denoising_samples(run.rng("train", s["n"], k), s["n"])
    _, x_te, t_te, _, score_te = denoising_samples(run.rng("test"), s["n_test"])
    _, x_aux, t_aux, _, score_aux = denoising_samples(run.rng("auxiliary"), s["auxiliary"])
    Z, Z_te, Z_aux = (diffusion_features(a, b) for a, b in ((x, t), (x_te, t_te), (x_aux, t_aux)))
    W0, A = initialization(run, d_in=3, d=1, m=m, K=s["instances"], init=init, sigma=1.0)
    W0, A, Z, label, score = W0[k:k + 1], A[k:k + 1], Z[None], label[None], score[None]
    W0t, At, Z_te_t = run.tensor(W0), run.tensor(A), run.tensor(Z_te[None])
    model = TwoLayerNetwork(run.tensor(Z), run.tensor(label), At)
    H = model.gram(W0t)
    eta = 1.0 / (m * torch.linalg.eigvalsh(H)[:, -1])
    traj = run_trajectory(GD(model, eta), {"W": W0t}, s["steps"], {}, checkpoints=[])
    return {"Z": Z, "Z_te": Z_te, "Z_aux": Z_aux, "label": label, "score": score, "score_te": score_te,
            "score_aux": score_aux, "W0": W0, "A": A, "H": H.cpu().numpy(), "eta": eta.cpu().numpy(), "m": m,
            "f_W": model.outputs(traj.W, Z_te_t)[:, :, 0].cpu().numpy()}


def claim_g1_fits(tc, m, init):
    """`claim_g1_network` at width ``m`` for every instance of the tier: the pieces' per-instance
    fields (`PER_INSTANCE`) stacked (K, ...), the shared test and auxiliary points from the first."""
    pieces = [tc.use(claim_g1_network, m=m, init=init, k=k) for k in range(tc.sizes["instances"])]
    return dict(pieces[0], **{key: np.concatenate([p[key] for p in pieces]) for key in PER_INSTANCE})


def limit_kernel_ridge(Z, values, ridge):
    r"""The coefficients c of kernel ridge regression with the limit kernel K_sigma (sigma = 1) on
    the points ``Z`` (1, N, d_in): ``(K_sigma(Z, Z) + ridge I) c = values``.  The kernel matrix is
    formed and regularized in place and freed on return: one N x N matrix and the solver's factor at
    once (6.4 GB at the full tier's N = 20000 auxiliary points, four such matrices before)."""
    kernel = softmax_limit_kernel(Z, Z, 1.0)[0]
    kernel.diagonal().add_(ridge)
    return torch.linalg.solve(kernel, values)


LINEARITY_PRODUCTS = 4
"""The rounded operations on the labels in `linearity_roundoff_bound`: three inner-product chains
(``V^T y``, ``V (phi * .)``, ``K_test .``) and the labels' own subtraction."""


def linearity_roundoff_bound(H, K_test, step, steps, labels, image, u):
    r"""Round-off bound of the relative error ``||L y1 - L y2 - L v|| / ||L v||`` of kernel GD
    (`kernel_gd_predictions`), per trial, for labels ``(y1, y2, v)`` (each (K, N), a trial's own
    labels in its row) with ``v = y1 - y2`` in exact arithmetic and ``image = L v`` (computed).

    ``L = K_test V diag(phi_T(mu)) V^T`` is computed once per call from the same ``H`` by the same
    eigensolver, so the three evaluations share one computed matrix, which is exactly linear: the
    eigendecomposition's error (``O(cond(H) N u)`` in ``phi``) cancels.  What is not linear is the
    rounding of the products with the labels: each of the ``LINEARITY_PRODUCTS`` operations on a
    vector of norm at most ``||y||`` adds at most ``N u ||K_test||_F phi_max ||y||`` (inner products
    of length N, ``|fl(a^T b) - a^T b| <= N u |a|^T |b|``, ``||V||_2 = 1``, ``||K_test||_2 <=
    ||K_test||_F``, ``phi_max = max_j phi_T(mu_j) <= min(step T, 1/mu_min)``: the filter's bound
    that replaces cond(H)), so

        ``error <= LINEARITY_PRODUCTS N u ||K_test||_F phi_max (||y1|| + ||y2|| + ||v||) / ||L v||``.

    ``||L v||`` in the denominator is where conditioning enters: it is small when v lies in the
    directions the filter damps."""
    mu = torch.linalg.eigvalsh(H)
    phi_max = spectral_filter(mu, torch.as_tensor(step, dtype=H.dtype, device=H.device).reshape(-1, 1),
                              float(steps)).amax(1).cpu().numpy()
    k_norm = torch.linalg.matrix_norm(K_test).cpu().numpy()
    N = H.shape[-1]
    label_norms = sum(np.linalg.norm(y, axis=-1) for y in labels)
    return LINEARITY_PRODUCTS * N * u * k_norm * phi_max * label_norms / np.linalg.norm(image, axis=1)
