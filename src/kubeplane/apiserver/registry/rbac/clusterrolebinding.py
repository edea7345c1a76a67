"""ClusterRoleBindings (roleRef is immutable: `cannot change roleRef`).
Upstream: pkg/registry/rbac/clusterrolebinding/strategy.go (create on update) and its
policybased storage (escalation.py)."""
from __future__ import annotations

from ....api.defaulting import rbac as defaulting
from ....api.validation import rbac as validation
from ...tables import rbac as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import CreateOnUpdateStrategy
from . import escalation

CLUSTER_ROLE_BINDINGS = register(ResourceDefinition(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", False,
    "io.k8s.api.rbac.v1.ClusterRoleBinding",
    defaulter=defaulting.set_defaults_binding, defaults_outside_spec=True,
    validate=validation.validate_cluster_role_binding,
    validate_update=validation.validate_cluster_role_binding_update,
    strategy=CreateOnUpdateStrategy(), wrapper=escalation.BINDINGS,
    columns=tables.binding_columns, printer=tables.print_binding,
))
