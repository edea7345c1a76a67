"""node.k8s.io/v1 resources. Upstream: pkg/registry/node."""
