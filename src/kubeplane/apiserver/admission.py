"""Admission: the plugins upstream runs on every create before validation.

Upstream: plugin/pkg/admission/namespace/lifecycle (NamespaceLifecycle) and
plugin/pkg/admission/defaulttolerationseconds (DefaultTolerationSeconds).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..api import errors
from ..api.resources import ResourceInfo, lookup

if TYPE_CHECKING:
    from .server import APIServer

Obj = dict[str, Any]

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300      # --default-not-ready/unreachable-toleration-seconds


_NAMESPACES = lookup("", "v1", "namespaces")
assert _NAMESPACES is not None

async def admit_create(api: APIServer, ri: ResourceInfo, obj: Obj, name: str | None = None) -> None:
    """Run the create-time plugins: NamespaceLifecycle, then DefaultTolerationSeconds for pods."""
    await namespace_lifecycle(api, ri, obj, name)
    if ri.group == "" and ri.plural == "pods":
        default_toleration_seconds(obj)


async def namespace_lifecycle(api: APIServer, ri: ResourceInfo, obj: Obj, name: str | None = None) -> None:
    """No new objects in a missing or terminating namespace. `name` is the one the request
    carried (admission runs before generateName is expanded, so it may be empty)."""
    if not ri.namespaced:
        return
    ns = obj["metadata"].get("namespace", "")
    kv = await api.storage.get(_NAMESPACES.key("", ns))
    if kv is None:
        raise errors.NotFound("", "namespaces", ns)
    if (kv.obj.get("status") or {}).get("phase") == "Terminating":
        raise namespace_terminating(ri, obj["metadata"].get("name", "") if name is None else name, ns)


def namespace_terminating(ri: ResourceInfo, name: str, ns: str) -> errors.StatusError:
    """Upstream: admission.NewForbidden + the NamespaceTerminating cause."""
    resource = errors.qualified(ri.group, ri.plural)
    subject = f'{resource} "{name}"' if name else resource
    details: Obj = {"name": name, "group": ri.group, "kind": ri.plural}
    details = {k: v for k, v in details.items() if v}
    details["causes"] = [{"reason": errors.NAMESPACE_TERMINATING_CAUSE, "message": f"namespace {ns} is being terminated",
                          "field": "metadata.namespace"}]
    return errors.StatusError(
        403, "Forbidden",
        f"{subject} is forbidden: unable to create new content in namespace {ns} because it is being terminated",
        details)


def default_toleration_seconds(pod: Obj) -> None:
    """Let every pod tolerate not-ready/unreachable nodes for 300 s unless it says otherwise,
    so the node lifecycle controller evicts it 5 minutes after its node is lost.

    A toleration with an empty key (or the taint's key) and an empty or NoExecute effect
    already covers the taint, as upstream's check.
    """
    spec = pod.setdefault("spec", {})
    tolerations = spec.get("tolerations") or []
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if not any(t.get("key", "") in ("", key) and t.get("effect", "") in ("", "NoExecute") for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    spec["tolerations"] = tolerations
