"""The EndpointSlice controller. Upstream: pkg/controller/endpointslice, k8s.io/endpointslice."""
from .endpointslice_controller import CONTROLLER_NAME, EndpointSliceController
from .reconciler import DEFAULT_MAX_ENDPOINTS_PER_SLICE, Reconciler

__all__ = ["CONTROLLER_NAME", "DEFAULT_MAX_ENDPOINTS_PER_SLICE", "EndpointSliceController", "Reconciler"]
