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
from theorycheck.solvers import kernel_gd_predictions, ou_coefficients


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
"""Early-stopping times T = 10, ..., 1e12 (1e8 until the full tier's n = 2048 still had its best risk at
T = 1e8: it had not fitted the noise yet; see `test_score_estimation`)."""


def kernel_score_risks(tc, n, m, sets, labels="noisy"):
    r"""Test risks ``E(f(T) - f*)^2`` of kernel GD with the width-m softmax network's NTK at a
    symmetric initialization (sigma = 1) and step ``eta m = 1 / lambda_max(H(0))``, for every T in
    RISK_TIMES, on ``sets`` independent training sets of ``n`` denoising samples (each with its own
    initialization; batched along the trial dimension, in memory-bounded chunks); ``labels``:
    "noisy" (-xi/s), "clean" (f*) or "shuffled" (noisy labels permuted within each set).  Returns
    per set the risks (sets, len(T)), the training z-score of E[(y - f*) f*] and the training label
    noise mean (y - f*)^2, and E f*^2 on the test points."""
    _, x, t, label, score = denoising_samples(tc.rng("train", n), sets * n)
    _, x_te, t_te, _, score_te = denoising_samples(tc.rng("test"), tc.sizes["test_points"])
    label, score = label.reshape(sets, n), score.reshape(sets, n)
    if labels == "clean":
        label = score
    if labels == "shuffled":
        rng = tc.rng("shuffle", n)
        label = np.stack([row[rng.permutation(n)] for row in label])
    Z = tc.tensor(diffusion_features(x, t).reshape(sets, n, 3))
    Z_te = tc.tensor(diffusion_features(x_te, t_te)[None])
    W0, A = (tc.tensor(a) for a in initialization(tc, d_in=3, d=1, m=m, K=sets, sigma=1.0))

    def risks(Z, W0, A, y):
        H = ntk_gram(Z, Z, W0, A)
        K_te = ntk_gram(Z_te.expand(len(Z), -1, -1), Z, W0, A)
        pred = kernel_gd_predictions(H, K_te, y, 1.0 / torch.linalg.eigvalsh(H)[:, -1], RISK_TIMES)
        return (pred - tc.tensor(score_te[None, None, :, 0])).pow(2).mean(-1).T       # (sets, T)

    item_bytes = 8 * 3 * len(x_te) * (n + m)
    values = map_chunks(risks, Z, W0, A, tc.tensor(label), item_bytes=item_bytes).cpu().numpy()
    z = np.array([unbiased_label_z(y[:, None], f[:, None], f[:, None]) for y, f in zip(label, score)])
    return values, z, np.mean((label - score) ** 2, axis=1), float(np.mean(score_te**2))


def risk(values, score):
    """Monte-Carlo ``E ||g||^2`` of ``g = values - score`` on the test points (time-weight 1)."""
    return float(np.mean((values - score) ** 2))


CLAIM_G1_SIZES = {"quick": {"n": 64, "m": 256, "steps": 1000, "auxiliary": 2000, "test_points": 5000},
                  "full": {"n": 2048, "m": 2**14, "steps": 10000, "auxiliary": 20000, "test_points": 20000}}


@shared_run(sizes=CLAIM_G1_SIZES)
def claim_g1_network(run):
    r"""Claim G.1's data and network, shared by the claim and its controls (neither changes
    them): n denoising samples (training), ``test_points`` fresh ones and ``auxiliary`` ones for
    f_H, as features ``Z``; the softmax network of width m (sigma = 1, symmetric init) after
    ``steps`` GD steps with ``eta = 1/(m lambda_max(H(0)))``; returns the samples' labels and true
    scores, W0, A, the NTK Gram matrix H(0), eta and ``f_W`` on the test points."""
    from theorycheck.models import TwoLayerNetwork
    from theorycheck.optim import GD, run_trajectory

    s = run.sizes
    _, x, t, label, score = denoising_samples(run.rng("train", s["n"]), s["n"])
    _, x_te, t_te, _, score_te = denoising_samples(run.rng("test"), s["test_points"])
    _, x_aux, t_aux, _, score_aux = denoising_samples(run.rng("auxiliary"), s["auxiliary"])
    Z, Z_te, Z_aux = (diffusion_features(a, b) for a, b in ((x, t), (x_te, t_te), (x_aux, t_aux)))
    W0, A = initialization(run, d_in=3, d=1, m=s["m"], K=1, sigma=1.0)
    Zt, W0t, At = run.tensor(Z[None]), run.tensor(W0), run.tensor(A)
    model = TwoLayerNetwork(Zt, run.tensor(label[None]), At)
    H = model.gram(W0t)
    eta = 1.0 / (s["m"] * torch.linalg.eigvalsh(H)[:, -1])
    traj = run_trajectory(GD(model, eta), {"W": W0t}, s["steps"], {}, checkpoints=[])
    return {"Z": Z, "Z_te": Z_te, "Z_aux": Z_aux, "label": label, "score": score, "score_te": score_te,
            "score_aux": score_aux, "W0": W0, "A": A, "H": H.cpu().numpy(), "eta": eta.cpu().numpy(),
            "f_W": model.outputs(traj.W, run.tensor(Z_te[None]))[0, :, 0].cpu().numpy()}
