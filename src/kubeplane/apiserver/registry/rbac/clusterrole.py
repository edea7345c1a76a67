"""ClusterRoles (aggregationRule is kept; the clusterrole-aggregation controller fills rules).
Upstream: pkg/registry/rbac/clusterrole/strategy.go (no status, no generation, create on
update) and its policybased storage (escalation.py)."""
from __future__ import annotations

from ....api.validation import rbac as validation
from ...tables import rbac as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import CreateOnUpdateStrategy
from . import escalation

CLUSTER_ROLES = register(ResourceDefinition(
    "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False,
    "io.k8s.api.rbac.v1.ClusterRole",
    validate=validation.validate_cluster_role, validate_update=validation.validate_cluster_role_update,
    strategy=CreateOnUpdateStrategy(), wrapper=escalation.ROLES,
    columns=tables.role_columns, printer=tables.print_role,
))
