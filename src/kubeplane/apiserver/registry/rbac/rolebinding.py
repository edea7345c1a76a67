"""RoleBindings (roleRef is immutable: `cannot change roleRef`).
Upstream: pkg/registry/rbac/rolebinding/strategy.go (create on update) and its policybased
storage (escalation.py)."""
from __future__ import annotations

from ....api.defaulting import rbac as defaulting
from ....api.validation import rbac as validation
from ...tables import rbac as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import CreateOnUpdateStrategy
from . import escalation

ROLE_BINDINGS = register(ResourceDefinition(
    "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True,
    "io.k8s.api.rbac.v1.RoleBinding",
    defaulter=defaulting.set_defaults_binding, defaults_outside_spec=True,
    validate=validation.validate_role_binding, validate_update=validation.validate_role_binding_update,
    strategy=CreateOnUpdateStrategy(), wrapper=escalation.BINDINGS,
    columns=tables.binding_columns, printer=tables.print_binding,
))
