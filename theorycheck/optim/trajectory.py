r"""Run a batched optimizer over parameter dicts and record metrics at checkpoints."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import torch

from theorycheck.errors import DeclarationError, NonFiniteIterateError, UnknownNameError
from theorycheck.lineage import computation
from theorycheck.models.base import Model
from theorycheck.optim.metrics import Iterate

__all__ = ["Trajectory", "recorded_rows", "run_trajectory", "ON_NONFINITE", "REPRESENTATIONS"]

#: what `run_trajectory` does when an iterate becomes NaN or infinite
ON_NONFINITE = ("raise", "record")
#: the representation `run_trajectory` steps in: the cheapest the step and model offer, or the
#: one the step was built on
REPRESENTATIONS = ("cheapest", "given")


@dataclass
class Trajectory:
    """A recorded run: ``t`` (C,) checkpoint iterations, ``metrics[name]`` (C, K, ...) numpy
    arrays, ``params`` the final iterate (a dict of torch tensors; ``traj.W`` is
    ``traj.params["W"]``) and ``diverged_at`` (K,): the first step whose iterate was
    non-finite per trial, -1 where it stayed finite (all -1 unless the run recorded
    divergence instead of raising)."""

    t: np.ndarray
    metrics: dict
    params: dict
    diverged_at: np.ndarray = field(default=None)

    def __getitem__(self, name):
        return self.metrics[name]

    def __getattr__(self, block):
        params = self.__dict__.get("params")
        if params is not None and block in params:
            return params[block]
        raise AttributeError(f"trajectory has no attribute or parameter block {block!r}")

    def restrict(self, trials, t_max=None):
        """The run of the trials ``trials`` (a slice or index array of the trial dimension) up to
        iteration ``t_max`` (default: every recorded iteration).  ``params`` stays the final
        iterate of the whole run, restricted to ``trials``."""
        keep = slice(None) if t_max is None else self.t <= t_max
        return Trajectory(self.t[keep], {name: v[keep][:, trials] for name, v in self.metrics.items()},
                          {b: v[trials] for b, v in self.params.items()},
                          None if self.diverged_at is None else self.diverged_at[trials])

    def at(self, name, times):
        """The rows of metric ``name`` at the iterations ``times``: (len(times), K, ...), or (K, ...)
        for one iteration; KeyError if any of them was not recorded."""
        return self.metrics[name][recorded_rows(self.t, times)]


def recorded_rows(t, times):
    """Indices i with t[i] = times (one or several iterations), for ``t`` the sorted recorded
    iterations of a run; KeyError naming the iterations in ``times`` that are not in ``t``."""
    missing = np.setdiff1d(times, t)
    if missing.size:
        raise UnknownNameError(f"iterations {missing.tolist()} were not recorded")  # host: a lookup after the run
    return np.searchsorted(t, times)


def _block_sums(params):
    """(B, K) per-trial sums of every block: NaN/inf iff the block has a non-finite entry
    (or overflows when summed, which no sane iterate does)."""
    return torch.stack([v.flatten(1).sum(1) for v in params.values()])


def _first_nonfinite(sums, t0, name, blocks):
    """``sums``: (steps, B, K) block sums of iterates t0, t0+1, ...; raise for the first
    non-finite one."""
    bad = ~torch.isfinite(sums)
    if bool(bad.any()):  # host: every check_every steps (the non-finite check)
        bad = bad.cpu()  # host: raising: the run is over
        first = int(torch.nonzero(bad.flatten(1).any(1))[0])  # host: raising: the run is over
        where = [b for b, is_bad in zip(blocks, bad[first].any(1).tolist()) if is_bad]  # host: raising: the run is over
        trials = torch.nonzero(bad[first].any(0)).flatten().tolist()  # host: raising: the run is over
        raise NonFiniteIterateError(name, t0 + first, where, trials)


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
        return {name: self.values[name].cpu().numpy() if name in self.values else np.empty((0,))  # host: the end of the run
                for name in self.metrics}


def _checkpoint_mask(steps, checkpoints):
    record = np.zeros(steps + 1, dtype=bool)
    if checkpoints is None:
        record[:] = True
        return record
    checkpoints = np.asarray(checkpoints, dtype=int)
    if checkpoints.ndim != 1 or np.any(np.diff(checkpoints) <= 0):
        raise DeclarationError("checkpoints must be a strictly increasing 1-d sequence")
    if checkpoints.size and (checkpoints[0] < 0 or checkpoints[-1] > steps):
        raise DeclarationError(f"checkpoints must lie in [0, {steps}]")
    record[checkpoints] = True
    return record


def _in_representation(step, params0, representation):
    """(step, params, model): the step and start in the representation asked for, and the model
    the step runs on (None for a step that names none)."""
    if representation not in REPRESENTATIONS:
        raise DeclarationError(f"representation={representation!r}; use one of {REPRESENTATIONS}")
    if representation == "cheapest" and hasattr(step, "cheapest"):
        step, params0 = step.cheapest(params0)
    model = getattr(step, "model", None)
    return step, dict(params0), model if isinstance(model, Model) else None


@computation('trajectory', inputs=('step', 'params0'))
def run_trajectory(step, params0: Mapping[str, torch.Tensor], steps: int, metrics, checkpoints=None,
                   check_every=256, on_nonfinite="raise", representation="cheapest"):
    r"""Iterate theta_{t+1} = step(t, theta_t) for t = 0..steps-1 from the parameter dict theta_0.

    ``representation="cheapest"`` (default): a step that offers ``step.cheapest(params0)`` (the
    first-order steps of `theorycheck.optim.gradient`, through `Model.cheapest`) runs in the
    representation of the model where it costs least -- e.g. token selection in coefficient
    space, iterates equal to round-off -- and every other step (mirror descent, Adam,
    preconditioners: their entrywise maps leave such a span) as given; ``"given"`` keeps the
    step's own.  ``params0`` are the plain blocks either way (or the coordinates of the step's
    model, where it was built on another representation), and so is ``Trajectory.params``.

    At each checkpoint t (sorted ints in [0, steps]; default: every iteration) every metric is
    called on ``Iterate(t, theta_t, theta_{t+1}, model)`` (at t = steps the step is evaluated once
    more to provide theta_{t+1}): its ``coordinates`` in the run's representation, its plain
    blocks ``params`` expanded when a metric reads them.  Metrics stay on the device and move
    to numpy once at the end.

    Every iterate is checked for NaN/inf; the host reads the result only every
    ``check_every`` steps and at the end.  ``on_nonfinite="raise"`` (default) raises
    `NonFiniteIterateError` naming the first bad iteration, the blocks and the trials.
    ``on_nonfinite="record"`` makes divergence a measurement: the run goes on (a diverged
    trial's metrics are NaN from then on; trials are independent, so the others are
    unaffected) and ``Trajectory.diverged_at`` holds the first non-finite step of each trial.
    """
    if on_nonfinite not in ON_NONFINITE:
        raise DeclarationError(f"on_nonfinite={on_nonfinite!r}; use one of {ON_NONFINITE}")
    record = _checkpoint_mask(steps, checkpoints)
    recorder = _Recorder(metrics, int(record.sum()))  # host: before the run (the checkpoint mask)
    step, params, model = _in_representation(step, params0, representation)
    blocks = list(params)
    start_sums = _block_sums({b: params0[b] for b in blocks})  # a non-finite start: step 0, in any form
    K = next(iter(params.values())).shape[0]
    sums = next(iter(params.values())).new_empty((check_every, len(blocks), K))
    first_bad = torch.full((K,), -1, dtype=torch.long, device=sums.device)
    checked = 0
    for t in range(steps + 1):
        sums[t - checked] = start_sums if t == 0 else _block_sums(params)
        if t - checked == check_every - 1 or t == steps:
            window = sums[: t - checked + 1]
            if on_nonfinite == "raise":
                _first_nonfinite(window, checked, getattr(step, "name", "step"), blocks)
            else:
                bad = ~torch.isfinite(window).all(1)                     # (steps, K)
                first = torch.where(bad.any(0), bad.float().argmax(0) + checked, -1)
                first_bad = torch.where(first_bad >= 0, first_bad, first)
            checked = t + 1
        if t < steps or record[t]:
            next_params = step(t, params)
        if record[t]:
            recorder.record(Iterate(t, params, next_params, model))
        if t < steps:
            params = next_params
    plain = params if model is None else model.dense(params)
    return Trajectory(np.flatnonzero(record), recorder.to_numpy(), plain, first_bad.cpu().numpy())  # host: the end of the run
