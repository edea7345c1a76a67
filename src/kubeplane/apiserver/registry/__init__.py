"""Per-resource strategies: what the generic REST store does differently for each kind."""
from .strategy import Strategy, strategy_for

__all__ = ["Strategy", "strategy_for"]
