"""PodSecurity: the Pod Security Standards per namespace label (admission/podsecurity).

Pods are refused when they violate the namespace's enforce level (403 `violates PodSecurity
"restricted:latest": ...`); the warn level adds `would violate PodSecurity ...` Warning headers
and the audit level an audit annotation, for pods and for the kinds carrying a pod template
(Deployments, Jobs, …: never refused, their pods are). A namespace's labels are validated, and
tightening its enforce level warns about the existing pods that would now be refused.

Cost: a namespace without pod-security labels (nearly all) is privileged by default, so a pod
create costs a frozenset lookup or two, a scan of the namespace's labels for the prefix, and
no storage read: the namespace is the one NamespaceLifecycle read for this request
(Attributes.namespace_obj).

Upstream: Plugin.Validate (plugin/pkg/admission/security/podsecurity/admission.go).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....api.resources import lookup
from ..chain import register
from ..interface import Attributes, Operation, Plugin
from ..podsecurity import POD_SPEC_EXTRACTORS, Admission, Response, from_admission_config_file
from ..podsecurity.api import AUDIT_ANNOTATION_PREFIX
from ..podsecurity.check import Obj

if TYPE_CHECKING:
    from ...server import APIServer

_NAMESPACES = lookup("", "v1", "namespaces")
_PODS = lookup("", "v1", "pods")
assert _NAMESPACES is not None and _PODS is not None


@register
class PodSecurity(Plugin):
    NAME = "PodSecurity"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE})
    VALIDATING = True

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        # --admission-control-config-file, once the server has the flag (the defaults otherwise).
        config_file = getattr(api.options, "admission_control_config_file", None)
        self.admission = Admission(from_admission_config_file(config_file))

    async def validate(self, a: Attributes) -> None:
        if a.group == "" and a.resource == "pods":
            response = await self.admission.validate_pod(a, self._namespace_getter(a))
        elif a.group == "" and a.resource == "namespaces":
            response = await self.admission.validate_namespace(a, self._list_pods)
        elif (a.group, a.resource) in POD_SPEC_EXTRACTORS:
            response = await self.admission.validate_pod_controller(a, self._namespace_getter(a))
        else:
            return
        record(a, response)

    def _namespace_getter(self, a: Attributes):  # type: ignore[no-untyped-def]
        async def get_namespace(name: str) -> Obj | None:
            if a.namespace_obj is not None and name == a.namespace:
                return a.namespace_obj
            kv = await self.api.storage.get(_NAMESPACES.key("", name))
            return kv.obj if kv is not None else None
        return get_namespace

    async def _list_pods(self, namespace: str) -> list[Obj]:
        kvs, _ = await self.api.storage.list(f"{_PODS.prefix}{namespace}/")
        return [kv.obj for kv in kvs]


def record(a: Attributes, response: Response) -> None:
    """Hand the response's warnings and audit annotations to the request; raise its refusal."""
    if response.warnings:
        a.warnings.extend(response.warnings)
    for k, v in response.audit_annotations.items():
        a.audit_annotations[AUDIT_ANNOTATION_PREFIX + k] = v
    if response.error is not None:
        raise response.error
