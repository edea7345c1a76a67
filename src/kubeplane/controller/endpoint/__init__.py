"""The Endpoints controller and the helpers it shares with the EndpointSlice controller.
Upstream: pkg/controller/endpoint, pkg/controller/util/endpoint."""
from .endpoints_controller import CONTROLLER_NAME, EndpointsController

__all__ = ["CONTROLLER_NAME", "EndpointsController"]
