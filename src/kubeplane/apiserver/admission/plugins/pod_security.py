"""PodSecurity: the Pod Security Standards per namespace label (admission/podsecurity).

Pods are refused when they violate the namespace's enforce level (403 `violates PodSecurity
"restricted:latest": ...`); the warn level adds `would violate PodSecurity ...` Warning headers
and the audit level an audit annotation, for pods and for the kinds carrying a pod template
(Deployments, Jobs, …: never refused, their pods are). A namespace's labels are validated, and
tightening its enforce level warns about the existing pods that would now be refused.

Cost: a namespace without pod-security labels (nearly all) is privileged by default, so a pod
create costs a scan of the namespace's labels for the prefix and one audit annotation: no
storage read (the namespace is the one NamespaceLifecycle read for this request,
Attributes.namespace_obj), no coroutine beyond validate's own (~2k instructions in all).

Upstream: Plugin.Validate (plugin/pkg/admission/security/podsecurity/admission.go).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....api.resources import ResourceInfo, lookup
from ..chain import register
from ..interface import Attributes, Operation, Plugin
from ..podsecurity import POD_SPEC_EXTRACTORS, Admission, Response, from_admission_config_file
from ..podsecurity.admission import IGNORED_POD_SUBRESOURCES
from ..podsecurity.api import ENFORCED_POLICY_ANNOTATION, has_policy_labels
from ..podsecurity.check import Obj

if TYPE_CHECKING:
    from ...server import APIServer


def _core(plural: str) -> ResourceInfo:
    ri = lookup("", "v1", plural)
    assert ri is not None
    return ri


_NAMESPACES = _core("namespaces")
_PODS = _core("pods")
PRIVILEGED_LATEST = "privileged:latest"


@register
class PodSecurity(Plugin):
    NAME = "PodSecurity"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE})
    RESOURCES = frozenset({("", "pods"), ("", "namespaces"), *POD_SPEC_EXTRACTORS})
    VALIDATING = True

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        # --admission-control-config-file, once the server has the flag (the defaults otherwise).
        config_file = getattr(api.options, "admission_control_config_file", None)
        self.admission = Admission(from_admission_config_file(config_file))
        config = self.admission.config
        # Whether a pod in a namespace without pod-security labels can be admitted on the spot:
        # the defaults are privileged and no namespace or user is exempt (whose answers differ
        # only in the audit annotation).
        self._fast_path = (self.admission.default_fully_privileged and not config.exempt_namespaces
                           and not config.exempt_usernames)
        # The last namespace object found without pod-security labels. Storage hands out the
        # same object until the namespace changes, so pods created one after the other in a
        # namespace skip even the label scan (an identity test; the reference keeps it alive).
        self._last_unlabelled: Obj | None = None

    def acts_on(self, group: str, resource: str, subresource: str) -> bool:
        """Pods but for the subresources that cannot change what the checks see; namespaces
        and pod controllers themselves (upstream's Validate* answer any subresource allowed)."""
        if (group, resource) == ("", "pods"):
            return subresource not in IGNORED_POD_SUBRESOURCES
        return not subresource and super().acts_on(group, resource, subresource)

    def handles(self, op: Operation) -> bool:
        return op is Operation.CREATE or op is Operation.UPDATE     # no Enum hash: runs for every write

    def validate_now(self, a: Attributes) -> bool:
        """The common case without a coroutine: a pod in a namespace without pod-security labels."""
        ns = a.namespace_obj
        if not (a.group == "" and a.resource == "pods" and self._fast_path
                and ((ns is self._last_unlabelled and ns is not None) or self._unlabelled(ns))):
            return False
        if a.subresource not in IGNORED_POD_SUBRESOURCES:
            a.audit_annotations[ENFORCED_POLICY_ANNOTATION] = PRIVILEGED_LATEST
        return True

    async def validate(self, a: Attributes) -> None:
        if a.group == "" and a.resource == "pods":
            if self._fast_path and self._unlabelled(a.namespace_obj):
                # Admission.validate_pod's answer for this case, without its coroutine.
                if a.subresource not in IGNORED_POD_SUBRESOURCES:
                    a.audit_annotations[ENFORCED_POLICY_ANNOTATION] = PRIVILEGED_LATEST
                return
            response = await self.admission.validate_pod(a, self._get_namespace)
        elif a.group == "" and a.resource == "namespaces":
            response = await self.admission.validate_namespace(a, self._list_pods)
        elif (a.group, a.resource) in POD_SPEC_EXTRACTORS:
            response = await self.admission.validate_pod_controller(a, self._get_namespace)
        else:
            return
        record(a, response)

    def _unlabelled(self, ns: Obj | None) -> bool:
        """Whether the namespace NamespaceLifecycle read has no pod-security label."""
        if ns is self._last_unlabelled:
            return ns is not None
        if ns is None or has_policy_labels((ns.get("metadata") or {}).get("labels")):
            return False
        self._last_unlabelled = ns
        return True

    async def _get_namespace(self, name: str) -> Obj | None:
        """Only when NamespaceLifecycle did not read it already (Attributes.namespace_obj)."""
        kv = await self.api.storage.get(_NAMESPACES.key("", name))
        return kv.obj if kv is not None else None

    async def _list_pods(self, namespace: str) -> list[Obj]:
        kvs, _ = await self.api.storage.list(f"{_PODS.prefix}{namespace}/")
        return [kv.obj for kv in kvs]


def record(a: Attributes, response: Response) -> None:
    """Hand the response's warnings and audit annotations to the request; raise its refusal."""
    if response.warnings:
        a.warnings.extend(response.warnings)
    a.audit_annotations.update(response.audit_annotations)
    if response.error is not None:
        raise response.error
