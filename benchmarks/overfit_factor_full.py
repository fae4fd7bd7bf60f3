"""The full-tier overfit factor of glls24 Theorem 6.6 (its `Calibrated` record of tier "full").

Decision (i) of `claims.glls24.test_diffusion.test_score_estimation` counts the training sets at
n > smallest whose risk at the last time is at least F times their best risk over T, and accepts
when the exact binomial test of rate 0.9 over those sets does not reject at level 0.05.  The
factor F is calibrated on a block of seeds and confirmed on another:

    python benchmarks/overfit_factor_full.py run OUT.json SEED [SEED ...]   # risks per seed
    python benchmarks/overfit_factor_full.py choose CALIBRATION.json [VALIDATION.json]

``run`` computes, per seed and n of the full tier, the kernel-GD risks over RISK_TIMES with the
claim's own functions (`score_training_sets`, `kernel_score_risks`: the claim's streams, so a
seed's sets are the claim's at that seed) and writes them to OUT.json (gzipped when the name
ends in .gz); it skips the network part (iv), which (i) does not read.  ``choose`` applies the
rule: q* is the true rate at which the test over one seed's sets rejects with probability 1e-4
(the claim's false-failure budget, with room), and F is the largest factor of the 0.05 grid whose
95% Clopper-Pearson lower bound of P[ratio >= F] over the calibration block's pooled sets reaches
q*.  Given a validation file it prints each seed's count at F and whether the test passes.
Results: benchmarks/results/overfit-factor-full/.
"""
from __future__ import annotations

import gzip
import json
import sys

import numpy as np
from scipy import optimize, stats

GRID = np.round(np.arange(1.0, 3.0001, 0.05), 2)
FALSE_FAILURE = 1e-4


def open_text(path, mode="rt"):
    return gzip.open(path, mode) if str(path).endswith(".gz") else open(path, mode[0])


def run(out, seeds):
    """Per seed and n: the risks (sets, len(RISK_TIMES)) of the claim's kernel GD at the full tier."""
    import torch

    import claims.glls24.test_diffusion as diffusion
    from claims.glls24.diffusion import kernel_score_risks, score_training_sets
    from theorycheck.context import ClaimContext
    from theorycheck.runtime import Runtime

    torch.set_num_threads(1)
    spec = diffusion.test_score_estimation.__theorycheck_claim__
    risks = {}
    for seed in seeds:
        tc = ClaimContext(spec, None, Runtime(tier="full", seed=seed))
        s = tc.sizes
        risks[seed] = {n: kernel_score_risks(tc, score_training_sets(tc, n, s["width"], s["training_sets"]))[0].tolist()
                       for n in s["ns"]}
        with open_text(out, "wt") as f:
            json.dump(risks, f)
        print(f"seed {seed} done", flush=True)


def ratios(path):
    """seed -> the final-over-best risk ratios of its sets at every n but the smallest, pooled."""
    with open_text(path) as f:
        risks = json.load(f)
    out = {}
    for seed, by_n in risks.items():
        ns = sorted(by_n, key=int)[1:]
        r = [np.asarray(by_n[n]) for n in ns]
        out[int(seed)] = np.concatenate([x[:, -1] / x.min(1) for x in r])
    return out


def factor(per_seed):
    """(F, c, q*): the chosen factor over the calibration block's sets ``per_seed`` (seed ->
    ratios), the test's rejection count and q* (module docstring); the grid is printed."""
    from theorycheck.checks import critical_count

    sets = len(next(iter(per_seed.values())))
    c = critical_count(sets, 0.9, 0.05)
    q = optimize.brentq(lambda p: stats.binom.cdf(c, sets, p) - FALSE_FAILURE, 0.9, 1 - 1e-12)
    pooled = np.concatenate(list(per_seed.values()))
    chosen = None
    for F in GRID:
        k = int((pooled >= F).sum())
        lower = stats.beta.ppf(0.05, k, len(pooled) - k + 1) if k else 0.0
        print(f"F = {F:.2f}: {k} of {len(pooled)} pooled sets, lower bound {lower:.4f}")
        if lower >= q:
            chosen = float(F)
    return chosen, c, q


def validate(per_seed, F, c):
    """seed -> whether the test passes on its sets at factor F (more than c of them reach F)."""
    return {seed: int((x >= F).sum()) > c for seed, x in sorted(per_seed.items())}


def choose(calibration, validation=None):
    F, c, q = factor(ratios(calibration))
    print(f"the test rejects at {c} or fewer; q* = {q:.4f}; F = {F}")
    if validation is not None:
        per_seed = ratios(validation)
        for seed, passed in validate(per_seed, F, c).items():
            print(f"validation seed {seed}: {int((per_seed[seed] >= F).sum())} of {len(per_seed[seed])} "
                  f"at F, {'pass' if passed else 'FAIL'}")


if __name__ == "__main__":
    verb, *args = sys.argv[1:] or ["--help"]
    if verb == "run" and len(args) >= 2:
        run(args[0], [int(s) for s in args[1:]])
    elif verb == "choose" and 1 <= len(args) <= 2:
        choose(*args)
    else:
        sys.exit(__doc__)
