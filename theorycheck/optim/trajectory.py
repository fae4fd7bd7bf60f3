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

    def restrict(self, trials, t_max=None):
        """The run of the trials ``trials`` (a slice or index array of the trial dimension) up to
        iteration ``t_max`` (default: every recorded iteration).  ``u`` and ``W`` stay the
        final iterate of the whole run, restricted to ``trials``."""
        keep = slice(None) if t_max is None else self.t <= t_max
        return Trajectory(self.t[keep], {name: v[keep][:, trials] for name, v in self.metrics.items()},
                          self.u[trials], self.W[trials])

    def at(self, name, times):
        """The rows of metric ``name`` at the iterations ``times``: (len(times), K, ...), or (K, ...)
        for one iteration; KeyError if any of them was not recorded."""
        return self.metrics[name][recorded_rows(self.t, times)]


def recorded_rows(t, times):
    """Indices i with t[i] = times (one or several iterations), for ``t`` the sorted recorded
    iterations of a run; KeyError naming the iterations in ``times`` that are not in ``t``."""
    missing = np.setdiff1d(times, t)
    if missing.size:
        raise KeyError(f"iterations {missing.tolist()} were not recorded")
    return np.searchsorted(t, times)


def _block_sums(u, W):
    """(2, K) per-trial sums of u and W: NaN/inf iff the block has a non-finite entry
    (or overflows when summed, which no sane iterate does)."""
    return torch.stack((u.flatten(1).sum(1), W.flatten(1).sum(1)))


def _raise_if_nonfinite(sums, t0, name):
    """``sums``: (steps, 2, K) block sums of iterates t0, t0+1, ...; raise for the first
    non-finite one."""
    bad = ~torch.isfinite(sums)
    if bool(bad.any()):
        bad = bad.cpu()
        first = int(torch.nonzero(bad.flatten(1).any(1))[0])
        blocks = [b for b, is_bad in zip(("u", "W"), bad[first].any(1).tolist()) if is_bad]
        trials = torch.nonzero(bad[first].any(0)).flatten().tolist()
        raise NonFiniteIterateError(name, t0 + first, blocks, trials)


class _Recorder:
    """Metric values at the checkpoints, written into buffers allocated once per metric.

    Keeping thousands of small per-step result tensors alive between the large temporaries
    of the steps fragments glibc's heap (measured: 31 MB of RSS per recorded step at
    n=64, T=8, d=768, an out-of-memory kill after ~700 steps); preallocated buffers do not.
    """

    def __init__(self, metrics, rows):
        self.metrics, self.rows, self.next_row, self.values = metrics, rows, 0, {}

    def record(self, it):
        for name, metric in self.metrics.items():
            value = metric(it)
            if name not in self.values:
                self.values[name] = value.new_empty((self.rows, *value.shape))
            self.values[name][self.next_row] = value
        self.next_row += 1

    def to_numpy(self):
        return {name: self.values[name].cpu().numpy() if name in self.values else np.empty((0,))
                for name in self.metrics}


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
    recorder = _Recorder(metrics, int(record.sum()))
    sums = u0.new_empty((check_every, 2, u0.shape[0]))
    checked = 0
    u, W = u0, W0
    for t in range(steps + 1):
        sums[t - checked] = _block_sums(u, W)
        if t - checked == check_every - 1 or t == steps:
            _raise_if_nonfinite(sums[: t - checked + 1], checked, step.name)
            checked = t + 1
        if t < steps or record[t]:
            next_u, next_W = step(t, u, W)
        if record[t]:
            recorder.record(Iterate(t, u, W, next_u, next_W))
        if t < steps:
            u, W = next_u, next_W
    return Trajectory(np.flatnonzero(record), recorder.to_numpy(), u, W)
