"""apps/v1 resources. Upstream: pkg/registry/apps."""
