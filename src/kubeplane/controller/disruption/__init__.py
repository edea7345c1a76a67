"""The disruption controller. Upstream: pkg/controller/disruption."""
from .disruption import DELETION_TIMEOUT, DisruptionController, DisruptionControllerOptions

__all__ = ["DELETION_TIMEOUT", "DisruptionController", "DisruptionControllerOptions"]
