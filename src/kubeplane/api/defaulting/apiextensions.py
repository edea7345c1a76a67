"""apiextensions.k8s.io/v1 defaulting.

Upstream: apiextensions-apiserver pkg/apis/apiextensions/v1/defaults.go. In v1 the scope has no
default (it is required); the conversion strategy, the singular name and the list kind do.
"""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def set_defaults_custom_resource_definition(crd: Obj) -> None:
    """Upstream: SetDefaults_CustomResourceDefinition — the spec's defaults, and the storage
    version as the first stored version when none is recorded yet."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    set_defaults_custom_resource_definition_spec(spec)
    status = crd.get("status")
    if status is not None and not isinstance(status, dict):
        return
    if not (status or {}).get("storedVersions"):
        for v in _versions(spec):
            if v.get("storage"):
                crd.setdefault("status", {})["storedVersions"] = [v.get("name", "")]
                break


def set_defaults_custom_resource_definition_spec(spec: Obj) -> None:
    """Upstream: SetDefaults_CustomResourceDefinitionSpec — singular is the lower-cased kind,
    listKind is kind+"List", the conversion strategy None; and SetDefaults_ServiceReference
    (port 443) for a conversion webhook's service."""
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind") or ""
        if not names.get("singular"):
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if conversion is None or conversion == {}:
        # {}: what server-side apply leaves of a conversion kubectl's upgrade from client-side
        # apply handed over whole; upstream's prune removes the struct itself
        # (EnsureNamedFieldsAreMembers) and this default makes it anew. Here prune keeps the
        # struct (patch/apply.py), so the empty one is defaulted.
        spec["conversion"] = {"strategy": "None"}
    conversion = spec["conversion"]
    if isinstance(conversion, dict):
        webhook = conversion.get("webhook")
        client = webhook.get("clientConfig") if isinstance(webhook, dict) else None
        service = client.get("service") if isinstance(client, dict) else None
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443


def _versions(spec: Obj) -> list[Obj]:
    versions = spec.get("versions")
    return [v for v in versions if isinstance(v, dict)] if isinstance(versions, list) else []
