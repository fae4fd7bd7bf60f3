r"""Fig. 2 (Sec. 5.2, NoisyMNIST): the attention network converges faster and to a better
minimum than the plain MLP, on a surrogate with class templates (MNIST cannot be fetched)."""
import numpy as np
import torch

from theorycheck import Control, claim, shared_run
from theorycheck.models import RELU, BiasedAttentionNet, BiasedBaselineNet

from .setup import PAPER

SIZES = {"quick": {"image": 16, "classes": 10, "train": 2000, "test": 1000, "width": 128,
                   "batch": 64, "steps": 200, "every": 40, "lr": 0.05, "trials": 3},
         "full": {"image": 48, "classes": 10, "train": 5000, "test": 2000, "width": 128,
                  "batch": 64, "steps": 5000, "every": 250, "lr": 0.05, "trials": 5}}


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
    K, H, C, N = s["trials"], s["image"], s["classes"], s["train"] + s["test"]
    templates = rng.standard_normal((K, C, patch, patch))
    labels = rng.integers(0, C, (K, N))
    images = rng.standard_normal((K, N, H, H))
    top = (H - patch) // 2
    images[:, :, top:top + patch, top:top + patch] = (
        np.stack([templates[k][labels[k]] for k in range(K)]) + 0.3 * rng.standard_normal((K, N, patch, patch)))
    X, Y = torch.as_tensor(images.reshape(K, N, H * H)), torch.as_tensor(labels)
    train, test = slice(0, s["train"]), slice(s["train"], None)
    bound = lambda fan_in, *shape: torch.as_tensor(  # noqa: E731
        rng.uniform(-1, 1, (K, *shape)) / np.sqrt(fan_in))
    start = {"W1": bound(H * H, H * H, s["width"]), "b1": bound(H * H, s["width"]),
             "W2": bound(s["width"], s["width"], C), "b2": bound(s["width"], C)}
    order = np.concatenate([rng.permutation(s["train"]) for _ in range(
        s["steps"] * s["batch"] // s["train"] + 1)])
    curves = {}
    for arm, cls in (("baseline", BiasedBaselineNet), ("attention", BiasedAttentionNet)):
        params = dict(start, a=torch.ones(K, H * H, dtype=torch.float64)) if arm == "attention" else dict(start)
        model = cls(X[:, train], Y[:, train], RELU, objective="cross_entropy")
        test_model = model.with_data(X[:, test], Y[:, test])
        curve = []
        for t in range(s["steps"]):
            batch = torch.as_tensor(order[t * s["batch"]:(t + 1) * s["batch"]])
            grads = model.with_data(model.X[:, batch], model.Y[:, batch]).gradient(params)
            params = {b: v - s["lr"] * grads[b] for b, v in params.items()}
            if (t + 1) % s["every"] == 0:
                curve.append(test_model.loss(params).numpy())
        curves[arm] = np.stack(curve, 1)
    return curves


@claim(
    f"{PAPER}.fig2.noisy_convergence",
    source="Sec. 5.2, Fig. 2, App. F.1 (NoisyMNIST convergence)",
    statement="When the relevant signal occupies a small region of the input, the attention "
              "network (a trainable input mask) reaches a lower test loss than the MLP at every "
              "checkpoint after the first and ends at least 10% lower.",
    provenance="derived",
    controls={
        "template_fills_image": Control(
            "hypothesis", breaks=["attention final test loss at most 0.9 of the baseline's"],
            description="the template fills the whole image (no irrelevant region)"),
    },
    sizes=SIZES,
)
def test_noisy_convergence(tc):
    r"""The reconstruction's surrogate (MNIST is not available offline): 10 class templates
    of ``5 x 5`` in a ``16 x 16`` noise image, 2000 training and 1000 test samples, MLP
    ``256 -> 128 -> 10`` with biases (Table 1's kind of network on the library's
    ``BiasedAttentionNet``), SGD with batch 64 and step 0.05 for 200 steps, 3 trials, test
    cross-entropy every 40 steps.  Precondition: an irrelevant region exists (patch smaller
    than the image).  Pass: the trial-mean test loss of attention below the baseline's at
    every checkpoint after the first, and the final ratio at most 0.9 (the reconstruction's
    criterion; it saw 0.58 after 400 steps at step 0.05).  Criterion fixed from the
    reconstruction before running; seeds 1 and 2 checked, then 0 (the second step size 0.01,
    where the reconstruction saw 0.84, is not run: one step size keeps the tier quick).  The control fills the image with the template:
    the mask then has nothing to suppress.
    """
    s = tc.sizes
    patch = s["image"] if tc.control == "template_fills_image" else 5
    curves = tc.use(noisy_templates, patch=patch)
    mean = {arm: c.mean(0) for arm, c in curves.items()}
    steps = s["every"] * np.arange(1, len(mean["baseline"]) + 1)
    for arm, values in mean.items():
        tc.curve("Fig. 2 (surrogate): test cross-entropy during SGD", arm, steps, values,
                 yscale="log", ylabel="test cross-entropy")
    tc.record("mean test cross-entropy per checkpoint", mean)
    tc.precondition.at_most("an irrelevant region exists (patch smaller than the image)", patch,
                            s["image"] - 1)
    tc.conclusion.at_least("attention below the baseline after the first checkpoint",
                           mean["baseline"][1:] - mean["attention"][1:], 0.0, margin=0.0)
    tc.conclusion.at_most("attention final test loss at most 0.9 of the baseline's",
                          mean["attention"][-1] / mean["baseline"][-1], 0.9)
