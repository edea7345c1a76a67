"""rbac.authorization.k8s.io/v1 defaulting. Upstream: pkg/apis/rbac/v1/defaults.go."""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"


def set_defaults_subject(s: Obj) -> None:
    """Upstream: SetDefaults_Subject — User and Group subjects are in the rbac group."""
    if not s.get("apiGroup"):
        if s.get("kind") == "ServiceAccount":
            s["apiGroup"] = ""
        elif s.get("kind") in ("User", "Group"):
            s["apiGroup"] = GROUP


def set_defaults_binding(b: Obj) -> None:
    """Upstream: SetDefaults_RoleBinding / SetDefaults_ClusterRoleBinding (roleRef.apiGroup)."""
    ref = b.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for s in b.get("subjects") or []:
        if isinstance(s, dict):
            set_defaults_subject(s)
