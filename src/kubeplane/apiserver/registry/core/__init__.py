"""The core (legacy, "") group's resources: one module per kind. Upstream: pkg/registry/core."""
