"""The simulated runtime: pod sandboxes and containers driven by kwok-style stages (YAML)."""
from .runtime import API_VERSION, RUNTIME_NAME, RUNTIME_VERSION, SimRuntime, image_ref, normalize_image

__all__ = ["API_VERSION", "RUNTIME_NAME", "RUNTIME_VERSION", "SimRuntime", "image_ref", "normalize_image"]
