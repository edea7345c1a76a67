"""batch/v1 resources. Upstream: pkg/registry/batch."""
