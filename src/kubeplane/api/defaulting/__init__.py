"""Defaulting of the kinds served since issue 11, one module per API group (upstream\x27s pkg/apis/<group>/v1/defaults.go); api/defaults.py has the older kinds."""
