"""admissionregistration.k8s.io/v1 defaulting. Upstream: pkg/apis/admissionregistration/v1/defaults.go."""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _rules(rules: Any) -> None:
    """Upstream: SetDefaults_Rule — scope "*"."""
    for r in rules or []:
        if isinstance(r, dict):
            r.setdefault("scope", "*")


def _service(cc: Any) -> None:
    """Upstream: SetDefaults_ServiceReference — port 443."""
    svc = cc.get("service") if isinstance(cc, dict) else None
    if isinstance(svc, dict):
        svc.setdefault("port", 443)


def set_defaults_webhook(w: Obj, mutating: bool) -> None:
    """Upstream: SetDefaults_ValidatingWebhook / SetDefaults_MutatingWebhook."""
    w.setdefault("failurePolicy", "Fail")
    w.setdefault("matchPolicy", "Equivalent")
    if w.get("namespaceSelector") is None:
        w["namespaceSelector"] = {}
    if w.get("objectSelector") is None:
        w["objectSelector"] = {}
    w.setdefault("timeoutSeconds", 10)
    if mutating:
        w.setdefault("reinvocationPolicy", "Never")
    _rules(w.get("rules"))
    _service(w.get("clientConfig"))


def set_defaults_validating_webhook_configuration(obj: Obj) -> None:
    for w in obj.get("webhooks") or []:
        if isinstance(w, dict):
            set_defaults_webhook(w, False)


def set_defaults_mutating_webhook_configuration(obj: Obj) -> None:
    for w in obj.get("webhooks") or []:
        if isinstance(w, dict):
            set_defaults_webhook(w, True)


def set_defaults_match_resources(m: Any) -> None:
    """Upstream: SetDefaults_MatchResources"""
    if not isinstance(m, dict):
        return
    m.setdefault("matchPolicy", "Equivalent")
    if m.get("namespaceSelector") is None:
        m["namespaceSelector"] = {}
    if m.get("objectSelector") is None:
        m["objectSelector"] = {}
    for key in ("resourceRules", "excludeResourceRules"):
        _rules(m.get(key))


def set_defaults_admission_policy(obj: Obj) -> None:
    """Upstream: SetDefaults_ValidatingAdmissionPolicySpec / SetDefaults_MutatingAdmissionPolicySpec
    (failurePolicy Fail) and the match constraints."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("failurePolicy", "Fail")
        set_defaults_match_resources(spec.get("matchConstraints"))


def set_defaults_admission_policy_binding(obj: Obj) -> None:
    """The binding's matchResources (SetDefaults_MatchResources)."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        set_defaults_match_resources(spec.get("matchResources"))
