r"""Run a batched optimizer for a number of steps and record metrics at checkpoints."""

from dataclasses import dataclass

import numpy as np
import torch

from theorycheck.optim.metrics import Iterate


class NonFiniteIterateError(FloatingPointError):
    """An iterate became NaN or infinite; ``step``, ``blocks`` and ``trials`` say where."""

    def __init__(self, name, step, blocks, trials):
        super().__init__(f"NaN/inf in {'/'.join(blocks)} at step {step} of {name}, trials {trials}")
        self.step, self.blocks, self.trials = step, blocks, trials


@dataclass
class Trajectory:
    """Recorded run: ``t`` (C,) checkpoint iterations, ``metrics[name]`` (C, K, ...) numpy
    arrays, and the final iterate (``u``, ``W``, torch tensors) after the last step."""

    t: np.ndarray
    metrics: dict
    u: torch.Tensor
    W: torch.Tensor

    def __getitem__(self, name):
        return self.metrics[name]


def _block_sums(u, W):
    """(2, K) per-trial sums of u and W: NaN/inf iff the block has a non-finite entry
    (or overflows when summed, which no sane iterate does)."""
    return torch.stack((u.flatten(1).sum(1), W.flatten(1).sum(1)))


def _raise_if_nonfinite(sums, t0, name):
    """``sums``: block sums of iterates t0, t0+1, ...; raise for the first non-finite one."""
    bad = ~torch.isfinite(torch.stack(sums))  # (steps, 2, K)
    if bool(bad.any()):
        bad = bad.cpu()
        first = int(torch.nonzero(bad.flatten(1).any(1))[0])
        blocks = [b for b, is_bad in zip(("u", "W"), bad[first].any(1).tolist()) if is_bad]
        trials = torch.nonzero(bad[first].any(0)).flatten().tolist()
        raise NonFiniteIterateError(name, t0 + first, blocks, trials)


def run_trajectory(step, u0, W0, steps, metrics, checkpoints=None, check_every=256):
    r"""Iterate theta_{t+1} = step(t, theta_t) for t = 0..steps-1 from theta_0 = (u0, W0).

    At each checkpoint t (sorted ints in [0, steps]; default: every iteration) every
    metric is called on ``Iterate(t, u_t, W_t, u_{t+1}, W_{t+1})`` (at t = steps the
    step is evaluated once more to provide theta_{t+1}).  Metrics are kept as
    tensors on the device and moved to numpy once at the end.  Every iterate is
    checked for NaN/inf, but the host reads the result only every ``check_every``
    steps and at the end; a failure raises `NonFiniteIterateError` naming the
    first bad iteration, the block (u or W) and the trials.
    """
    record = np.zeros(steps + 1, dtype=bool)
    if checkpoints is None:
        record[:] = True
    else:
        checkpoints = np.asarray(checkpoints, dtype=int)
        if checkpoints.ndim != 1 or np.any(np.diff(checkpoints) <= 0):
            raise ValueError("checkpoints must be a strictly increasing 1-d sequence")
        if checkpoints.size and (checkpoints[0] < 0 or checkpoints[-1] > steps):
            raise ValueError(f"checkpoints must lie in [0, {steps}]")
        record[checkpoints] = True
    rows = {name: [] for name in metrics}
    sums, checked = [], 0
    u, W = u0, W0
    for t in range(steps + 1):
        sums.append(_block_sums(u, W))
        if t % check_every == 0 or t == steps:
            _raise_if_nonfinite(sums, checked, step.name)
            sums, checked = [], t + 1
        if t < steps or record[t]:
            next_u, next_W = step(t, u, W)
        if record[t]:
            it = Iterate(t, u, W, next_u, next_W)
            for name, metric in metrics.items():
                rows[name].append(metric(it))
        if t < steps:
            u, W = next_u, next_W
    values = {name: torch.stack(r).cpu().numpy() if r else np.empty((0,)) for name, r in rows.items()}
    return Trajectory(np.flatnonzero(record), values, u, W)
