"""Readiness, liveness and startup probing on the injected clock (the runtime decides each probe's outcome)."""
from .prober_manager import ProbeManager

__all__ = ["ProbeManager"]
