r"""Fig. 2 (Sec. 5.2, NoisyMNIST): the attention network converges faster and to a better
minimum than the plain MLP, on a surrogate with class templates (MNIST cannot be fetched)."""
import numpy as np

from theorycheck import Control, claim

from .convergence import SIZES, noisy_templates
from .setup import PAPER


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
    calibration=[
        "criterion (ratio 0.9) fixed from the reconstruction before running (it saw 0.58 after "
        "400 steps at step 0.05, 0.84 at step 0.01, not run here); seeds 1 and 2 checked, "
        "then 0",
    ],
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
    criterion).  One step size keeps the tier quick.  The control fills the image with the
    template: the mask then has nothing to suppress.
    """
    s = tc.sizes
    patch = s["image"] if tc.control == "template_fills_image" else 5
    tc.precondition.at_most("an irrelevant region exists (patch smaller than the image)", patch,
                            s["image"] - 1)
    curves = tc.use(noisy_templates, patch=patch)
    mean = {arm: c.mean(0) for arm, c in curves.items()}
    steps = s["every"] * np.arange(1, len(mean["baseline"]) + 1)
    for arm, values in mean.items():
        tc.curve("Fig. 2 (surrogate): test cross-entropy during SGD", arm, steps, values,
                 yscale="log", ylabel="test cross-entropy")
    tc.record("mean test cross-entropy per checkpoint", mean)
    tc.conclusion.at_least("attention below the baseline after the first checkpoint",
                           mean["baseline"][1:] - mean["attention"][1:], 0.0, margin=0.0)
    tc.conclusion.at_most("attention final test loss at most 0.9 of the baseline's",
                          mean["attention"][-1] / mean["baseline"][-1], 0.9)
