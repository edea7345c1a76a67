"""Roles. Upstream: pkg/registry/rbac/role/strategy.go (no status, no generation, create on
update) and its policybased storage (escalation.py)."""
from __future__ import annotations

from ....api.validation import rbac as validation
from ...tables import rbac as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import CreateOnUpdateStrategy
from . import escalation

ROLES = register(ResourceDefinition(
    "rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True, "io.k8s.api.rbac.v1.Role",
    validate=validation.validate_role, validate_update=validation.validate_role_update,
    strategy=CreateOnUpdateStrategy(), wrapper=escalation.ROLES,
    columns=tables.role_columns, printer=tables.print_role,
))
