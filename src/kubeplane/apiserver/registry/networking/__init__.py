"""networking.k8s.io/v1 resources. Upstream: pkg/registry/networking."""
