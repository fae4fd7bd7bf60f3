r"""Fig. 2's run (Sec. 5.2, NoisyMNIST): SGD of the MLP with and without a trainable input
mask on a surrogate with class templates (MNIST cannot be fetched)."""
from __future__ import annotations

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.models import RELU, BiasedAttentionNet, BiasedBaselineNet

SIZES = {"quick": {"image": 16, "classes": 10, "n": 2000, "n_test": 1000, "width": 128,
                   "batch": 64, "steps": 200, "every": 40, "instances": 3},
         "full": {"image": 48, "classes": 10, "n": 5000, "n_test": 2000, "width": 128,
                  "batch": 64, "steps": 5000, "every": 250, "instances": 5}}
SGD_ETA = 0.05
"""The SGD step size of both arms in both tiers."""


@shared_run(sizes=SIZES)
def noisy_templates(run, *, patch):
    r"""Test cross-entropy per trial every ``every`` SGD steps of the MLP ``image^2 -> width
    -> classes`` (biases, ReLU, torch's default uniform initialisation) with and without a
    trainable input mask ``a`` (from 1), on "NoisyTemplates": class c has a template ``T_c``
    (``patch x patch``, N(0, 1)); a sample is ``T_y + 0.3 N(0, I)`` at a fixed centred place
    in an ``image x image`` field of N(0, 1) noise.  Minibatch SGD (batches drawn without
    replacement per epoch, the same for both arms), cross-entropy loss."""
    s = run.sizes
    rng = run.rng("templates", patch)
    K, H, C, N = s["instances"], s["image"], s["classes"], s["n"] + s["n_test"]
    templates = rng.standard_normal((K, C, patch, patch))
    labels = rng.integers(0, C, (K, N))
    images = rng.standard_normal((K, N, H, H))
    top = (H - patch) // 2
    images[:, :, top:top + patch, top:top + patch] = (
        np.stack([templates[k][labels[k]] for k in range(K)]) + 0.3 * rng.standard_normal((K, N, patch, patch)))
    X, Y = torch.as_tensor(images.reshape(K, N, H * H)), torch.as_tensor(labels)
    train, test = slice(0, s["n"]), slice(s["n"], None)
    bound = lambda fan_in, *shape: torch.as_tensor(  # noqa: E731
        rng.uniform(-1, 1, (K, *shape)) / np.sqrt(fan_in))
    start = {"W1": bound(H * H, H * H, s["width"]), "b1": bound(H * H, s["width"]),
             "W2": bound(s["width"], s["width"], C), "b2": bound(s["width"], C)}
    order = np.concatenate([rng.permutation(s["n"]) for _ in range(
        s["steps"] * s["batch"] // s["n"] + 1)])
    curves = {}
    for arm, cls in (("baseline", BiasedBaselineNet), ("attention", BiasedAttentionNet)):
        params = dict(start, a=torch.ones(K, H * H, dtype=torch.float64)) if arm == "attention" else dict(start)
        model = cls(X[:, train], Y[:, train], RELU, objective="cross_entropy")
        test_model = model.with_data(X[:, test], Y[:, test])
        curve = []
        for t in range(s["steps"]):
            batch = torch.as_tensor(order[t * s["batch"]:(t + 1) * s["batch"]])
            grads = model.with_data(model.X[:, batch], model.Y[:, batch]).gradient(params)
            params = {b: v - SGD_ETA * grads[b] for b, v in params.items()}
            if (t + 1) % s["every"] == 0:
                curve.append(test_model.loss(params).numpy())
        curves[arm] = np.stack(curve, 1)
    return curves
