"""The pod garbage collector. Upstream: pkg/controller/podgc"""
from .gc_controller import PodGCController, PodGCControllerOptions

__all__ = ["PodGCController", "PodGCControllerOptions"]
