"""The scheduler cache (with assumed pods) and its per-cycle snapshot."""
from .cache import Cache
from .snapshot import Snapshot

__all__ = ["Cache", "Snapshot"]
