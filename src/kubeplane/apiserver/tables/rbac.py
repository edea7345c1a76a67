"""Tables of rbac.authorization.k8s.io/v1. Upstream: AddHandlers (pkg/printers/internalversion/printers.go):
roleColumnDefinitions, roleBindingsColumnDefinitions, printRole(Binding), printClusterRole(Binding)."""
from __future__ import annotations

from typing import Any

from .columns import Column, _age, _col, _name
from .printers import Row, format_rfc3339, translate_timestamp_since

Obj = dict[str, Any]


def role_columns() -> list[Column]:
    return [_name(), _col("Created At", "date", "Time when this Role was created")]


def binding_columns() -> list[Column]:
    return [
        _name(), _col("Role", "string", "Role referenced by this binding"), _age(),
        _col("Users", "string", "Users in the roleBinding", priority=1),
        _col("Groups", "string", "Groups in the roleBinding", priority=1),
        _col("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", priority=1),
    ]


def print_role(role: Obj, now: float) -> Row:
    meta = role.get("metadata") or {}
    return [meta.get("name", ""), format_rfc3339(meta.get("creationTimestamp"))], None


def subjects_strings(subjects: list[Obj] | None) -> tuple[str, str, str]:
    """Upstream: rbac.SubjectsStrings — users, groups, namespace:serviceaccounts."""
    users, groups, sas = [], [], []
    for s in subjects or []:
        kind = s.get("kind")
        if kind == "ServiceAccount":
            sas.append(f"{s.get('namespace', '')}/{s.get('name', '')}" if s.get("namespace") else s.get("name", ""))
        elif kind == "User":
            users.append(s.get("name", ""))
        elif kind == "Group":
            groups.append(s.get("name", ""))
    return ", ".join(users), ", ".join(groups), ", ".join(sas)


def print_binding(b: Obj, now: float) -> Row:
    meta, ref = b.get("metadata") or {}, b.get("roleRef") or {}
    users, groups, sas = subjects_strings(b.get("subjects"))
    return [meta.get("name", ""), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            translate_timestamp_since(meta.get("creationTimestamp"), now), users, groups, sas], None
