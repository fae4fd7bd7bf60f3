"""The optimizer-step protocol: ``step(t, params) -> params`` over a model of the protocol.

Every optimizer class of the library derives from :class:`Step`, so the conformance suite can
find each one (`theorycheck.discovery.unregistered_classes`) and require that it is registered
with `theorycheck.optim.register_optimizer`.
"""
from __future__ import annotations

__all__ = ["Step"]


class Step:
    """theta_{t+1} = step(t, theta_t): one optimizer step of a batch of K trials; subclasses
    implement ``__call__(t, params) -> params`` and set ``self.model``."""

    def __call__(self, t: int, params):  # pragma: no cover - the protocol
        raise NotImplementedError
