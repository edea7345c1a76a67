"""Volumes as real files for the process runtime: the atomic writer, payloads of configMap,
secret, downwardAPI and projected volumes, and the per-pod manager (see manager.py)."""
