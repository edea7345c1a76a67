"""DefaultIngressClass: an Ingress that names no class gets the cluster's default IngressClass.

An Ingress has a class when spec.ingressClassName is set or it carries the
`kubernetes.io/ingress.class` annotation. The default is the newest IngressClass annotated
`ingressclass.kubernetes.io/is-default-class: "true"`; none, nothing.

Upstream: plugin/pkg/admission/network/defaultingressclass/admission.go (Admit, getDefaultClass).
"""
from __future__ import annotations

from ..chain import register
from ..interface import Attributes, Operation, Plugin
from ._default_class import newest_default_class

ANNOTATION_INGRESS_CLASS = "kubernetes.io/ingress.class"
ANNOTATION_IS_DEFAULT_INGRESS_CLASS = "ingressclass.kubernetes.io/is-default-class"
PREFIX = "/registry/ingressclasses/"


@register
class DefaultIngressClass(Plugin):
    NAME = "DefaultIngressClass"
    OPERATIONS = frozenset({Operation.CREATE})
    RESOURCES = frozenset({("networking.k8s.io", "ingresses")})
    SUBRESOURCES = frozenset({""})
    MUTATING = True

    async def admit(self, a: Attributes) -> None:
        if not a.targets("networking.k8s.io", "ingresses") or not isinstance(a.obj, dict):
            return
        spec = a.obj.setdefault("spec", {})
        annotations = (a.obj.get("metadata") or {}).get("annotations") or {}
        if spec.get("ingressClassName") is not None or ANNOTATION_INGRESS_CLASS in annotations:
            return
        default = await newest_default_class(self.api.storage, PREFIX, (ANNOTATION_IS_DEFAULT_INGRESS_CLASS,))
        if default is not None:
            spec["ingressClassName"] = default["metadata"]["name"]
