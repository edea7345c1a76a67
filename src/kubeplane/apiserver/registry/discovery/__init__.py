"""discovery.k8s.io: EndpointSlices."""
