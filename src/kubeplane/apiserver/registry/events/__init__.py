"""events.k8s.io/v1 resources (stored as core/v1 Events). Upstream: pkg/registry/core/event."""
