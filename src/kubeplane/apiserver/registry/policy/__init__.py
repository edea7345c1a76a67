"""policy/v1 resources. Upstream: pkg/registry/policy."""
