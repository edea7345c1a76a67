"""The Endpoints controller and the helpers it shares with the EndpointSlice controller.
Upstream: pkg/controller/endpoint, pkg/controller/util/endpoint."""
