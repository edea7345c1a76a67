"""The TTL-after-finished controller. Upstream: pkg/controller/ttlafterfinished"""
from .ttlafterfinished_controller import TTLAfterFinishedController

__all__ = ["TTLAfterFinishedController"]
