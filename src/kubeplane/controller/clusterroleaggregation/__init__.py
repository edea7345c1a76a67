"""The clusterrole-aggregation controller. Upstream: pkg/controller/clusterroleaggregation."""
from .clusterroleaggregation_controller import ClusterRoleAggregationController

__all__ = ["ClusterRoleAggregationController"]
