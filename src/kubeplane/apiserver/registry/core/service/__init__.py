"""Services. Upstream: pkg/registry/core/service (strategy.py: the definition and strategy)."""
