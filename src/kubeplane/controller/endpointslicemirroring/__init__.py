"""The EndpointSlice mirroring controller. Upstream: pkg/controller/endpointslicemirroring."""
from .endpointslicemirroring_controller import CONTROLLER_NAME, EndpointSliceMirroringController

__all__ = ["CONTROLLER_NAME", "EndpointSliceMirroringController"]
