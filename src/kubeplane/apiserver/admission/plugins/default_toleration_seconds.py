"""DefaultTolerationSeconds: every pod tolerates not-ready and unreachable nodes for 300 s unless
it says otherwise, so the node lifecycle controller evicts it 5 minutes after its node is lost.

Upstream: plugin/pkg/admission/defaulttolerationseconds/admission.go.
"""
from __future__ import annotations

from typing import Any

from ..chain import register
from ..interface import Attributes, Operation, Plugin

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300      # --default-not-ready/unreachable-toleration-seconds


@register
class DefaultTolerationSeconds(Plugin):
    NAME = "DefaultTolerationSeconds"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE})
    RESOURCES = frozenset({("", "pods")})
    SUBRESOURCES = frozenset({""})
    MUTATING = True

    def admit_now(self, a: Attributes) -> bool:
        pod = a.obj
        if pod is None or a.resource != "pods" or a.group or a.subresource:
            return True
        spec = pod.get("spec")
        if spec is not None and not spec.get("tolerations"):      # (most pods: no loop, no call)
            spec["tolerations"] = [NOT_READY_TOLERATION, UNREACHABLE_TOLERATION]
        else:
            default_toleration_seconds(pod)
        return True

    async def admit(self, a: Attributes) -> None:
        self.admit_now(a)


def default_toleration_seconds(pod: dict[str, Any]) -> None:
    """Add the two NoExecute tolerations a pod lacks. A toleration with an empty key (or the
    taint's key) and an empty or NoExecute effect already covers the taint, as upstream's check."""
    spec = pod.setdefault("spec", {})
    tolerations = spec.get("tolerations") or []
    not_ready = unreachable = False
    for t in tolerations:
        if t.get("effect", "") in ("", "NoExecute"):
            key = t.get("key", "")
            not_ready = not_ready or key in ("", NOT_READY_TAINT)
            unreachable = unreachable or key in ("", UNREACHABLE_TAINT)
    added = ([] if not_ready else [NOT_READY_TOLERATION]) + ([] if unreachable else [UNREACHABLE_TOLERATION])
    # a new list: on UPDATE the pod's may be the stored object's (Plugin.admit)
    spec["tolerations"] = [*tolerations, *added] if added else tolerations


def _toleration(key: str) -> dict[str, Any]:
    return {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}


# Shared by every admitted pod, as the ServiceAccount plugin's token volume source: stored
# objects are never changed in place, and two dicts fewer per pod is less for the collector.
NOT_READY_TOLERATION = _toleration(NOT_READY_TAINT)
UNREACHABLE_TOLERATION = _toleration(UNREACHABLE_TAINT)
