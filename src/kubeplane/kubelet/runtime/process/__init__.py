"""The process runtime: containers as local process groups, real probes, captured logs."""
from .runtime import ProcessRuntime

__all__ = ["ProcessRuntime"]
