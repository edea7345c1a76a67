"""rbac.authorization.k8s.io/v1 validation. Upstream: pkg/apis/rbac/validation/validation.go."""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import is_dns1123_subdomain, name_is_path_segment

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"


def _meta(obj: Obj, namespaced: bool) -> list[FieldError]:
    """ValidateObjectMeta with ValidateRBACName (a path segment name)."""
    return m.validate_object_meta(obj.get("metadata") or {}, namespaced, name_is_path_segment)


def validate_policy_rule(rule: Obj, namespaced: bool, path: str) -> list[FieldError]:
    """Upstream: ValidatePolicyRule"""
    errs: list[FieldError] = []
    if not rule.get("verbs"):
        errs.append(errors.required(path + ".verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            errs.append(errors.invalid(path + ".nonResourceURLs", urls,
                                       "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(errors.invalid(path + ".nonResourceURLs", urls,
                                       "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(errors.required(path + ".apiGroups", "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(errors.required(path + ".resources", "resource rules must supply at least one resource"))
    return errs


def _rules(obj: Obj, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(obj.get("rules") or []):
        errs += validate_policy_rule(rule or {}, namespaced, f"rules[{i}]")
    return errs


def validate_role(role: Obj) -> list[FieldError]:
    """Upstream: ValidateRole"""
    return _meta(role, True) + _rules(role, True)


def validate_role_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateRoleUpdate"""
    return validate_role(new) + m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def validate_cluster_role(role: Obj) -> list[FieldError]:
    """Upstream: ValidateClusterRole (rules, and an aggregationRule's selectors)."""
    errs = _meta(role, False) + _rules(role, False)
    agg = role.get("aggregationRule")
    if agg is not None:
        selectors = (agg or {}).get("clusterRoleSelectors") or []
        if not selectors:
            errs.append(errors.required("aggregationRule.clusterRoleSelectors",
                                        "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for i, sel in enumerate(selectors):
            errs += m.validate_label_selector(sel, f"aggregationRule.clusterRoleSelectors[{i}]")
    return errs


def validate_cluster_role_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateClusterRoleUpdate"""
    return validate_cluster_role(new) + m.validate_object_meta_update(new.get("metadata") or {},
                                                                      old.get("metadata") or {})


def validate_subject(s: Obj, namespaced: bool, path: str) -> list[FieldError]:
    """Upstream: ValidateRoleBindingSubject"""
    errs: list[FieldError] = []
    name, kind, group = s.get("name") or "", s.get("kind") or "", s.get("apiGroup") or ""
    if not name:
        errs.append(errors.required(path + ".name"))
    if kind == "ServiceAccount":
        if group:
            errs.append(errors.not_supported(path + ".apiGroup", group, [""]))
        if name:
            errs += [errors.invalid(path + ".name", name, msg) for msg in is_dns1123_subdomain(name)]
        if not s.get("namespace") and not namespaced:
            errs.append(errors.required(path + ".namespace"))
    elif kind in ("User", "Group"):
        if group != GROUP:
            errs.append(errors.not_supported(path + ".apiGroup", group, [GROUP]))
    else:
        errs.append(errors.not_supported(path + ".kind", kind, ["ServiceAccount", "User", "Group"]))
    return errs


def _role_ref(ref: Obj, kinds: list[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    if (ref.get("apiGroup") or "") != GROUP:
        errs.append(errors.not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [GROUP]))
    if (ref.get("kind") or "") not in kinds:
        errs.append(errors.not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    name = ref.get("name") or ""
    if not name:
        errs.append(errors.required("roleRef.name"))
    else:
        errs += [errors.invalid("roleRef.name", name, msg) for msg in name_is_path_segment(name, False)]
    return errs


def _binding(b: Obj, namespaced: bool) -> list[FieldError]:
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    errs = _meta(b, namespaced) + _role_ref(b.get("roleRef") or {}, kinds)
    for i, s in enumerate(b.get("subjects") or []):
        errs += validate_subject(s or {}, namespaced, f"subjects[{i}]")
    return errs


class GoRoleRef:
    """The internal rbac.RoleRef as field.Error renders it (json.Marshal of a type without json
    tags, since apimachinery's "Nicer value rendering in API errors", 1.34) in `cannot change roleRef`."""

    def __init__(self, ref: Obj) -> None:
        self.ref = ref

    def __str__(self) -> str:
        r = self.ref
        return (f'{{"APIGroup":{errors.go_quote(r.get("apiGroup") or "")},'
                f'"Kind":{errors.go_quote(r.get("kind") or "")},"Name":{errors.go_quote(r.get("name") or "")}}}')


def _binding_update(new: Obj, old: Obj, namespaced: bool) -> list[FieldError]:
    """Upstream: ValidateRoleBindingUpdate / ValidateClusterRoleBindingUpdate"""
    errs = _binding(new, namespaced) + m.validate_object_meta_update(new.get("metadata") or {},
                                                                     old.get("metadata") or {})
    ref, old_ref = new.get("roleRef") or {}, old.get("roleRef") or {}
    if any((ref.get(k) or "") != (old_ref.get(k) or "") for k in ("apiGroup", "kind", "name")):
        errs.append(errors.invalid("roleRef", GoRoleRef(ref), "cannot change roleRef"))
    return errs


def validate_role_binding(b: Obj) -> list[FieldError]:
    """Upstream: ValidateRoleBinding"""
    return _binding(b, True)


def validate_role_binding_update(new: Obj, old: Obj) -> list[FieldError]:
    return _binding_update(new, old, True)


def validate_cluster_role_binding(b: Obj) -> list[FieldError]:
    """Upstream: ValidateClusterRoleBinding"""
    return _binding(b, False)


def validate_cluster_role_binding_update(new: Obj, old: Obj) -> list[FieldError]:
    return _binding_update(new, old, False)
