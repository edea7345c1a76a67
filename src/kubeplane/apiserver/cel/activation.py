"""The admission variables CEL expressions see: `request`, `namespaceObject`, `authorizer`.

Upstream: CreateAdmissionRequest, CreateNamespaceObject (pkg/admission/plugin/cel/condition.go).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..admission.interface import Attributes

Obj = dict[str, Any]

AUTHORIZER = {"@authorizer": True}       # the `authorizer` variable (library.py: checks ask the request's)
REQUEST_RESOURCE = "authorizer.requestResource"


def request_resource(a: Attributes) -> Obj:
    """The `authorizer.requestResource` variable: a check of the request's own resource.
    Upstream: library.ResourceCheck built by newActivation (activation.go)."""
    return {"@authorizer": True, "@resourcecheck": {
        "group": a.group, "resource": a.resource, "subresource": a.subresource,
        "namespace": a.namespace, "name": a.name}}


def admission_request(a: Attributes) -> Obj:
    """The admission.k8s.io/v1 AdmissionRequest of a (without object/oldObject: variables of their own)."""
    gvk = {"group": a.group, "version": a.version, "kind": a.kind}
    gvr = {"group": a.group, "version": a.version, "resource": a.resource}
    u = a.user
    return {
        "kind": gvk, "resource": gvr, "subResource": a.subresource,
        "requestKind": gvk, "requestResource": gvr, "requestSubResource": a.subresource,
        "name": a.name, "namespace": a.namespace, "operation": a.operation.value,
        "userInfo": {"username": u.name, "uid": u.uid, "groups": list(u.groups),
                     "extra": {k: list(v) for k, v in u.extra}},
        "dryRun": a.dry_run, "options": a.options or None,
    }


_NAMESPACE_META = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation",
                   "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                   "annotations", "finalizers")


def namespace_object(ns: Obj | None) -> Obj | None:
    """The namespace with only what upstream exposes (no managedFields, ownerReferences)."""
    if ns is None:
        return None
    meta = ns.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in _NAMESPACE_META if k in meta},
            "spec": ns.get("spec") or {}, "status": ns.get("status") or {}}
