"""Defaulting per API group (upstream: pkg/apis/<group>/v1/defaults.go), one module per group."""
