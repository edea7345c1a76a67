"""DefaultIngressClass, with upstream's cases
(plugin/pkg/admission/network/defaultingressclass/admission_test.go: TestAdmission)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.default_ingress_class import DefaultIngressClass
from kubeplane.apiserver.server import APIServer

DEFAULT = {"ingressclass.kubernetes.io/is-default-class": "true"}


def ic(name: str, annotations: dict[str, str] | None = None, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": meta,
            "spec": {"controller": "example.com/c"}}


def ingress(class_name: str | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if class_name is not None:
        spec["ingressClassName"] = class_name
    meta: dict[str, Any] = {"name": "testing", "namespace": "ns"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


@pytest.mark.parametrize("obj, classes, expected", [
    (ingress(), [ic("default1", DEFAULT)], "default1"),
    (ingress(), [ic("nondefault1"), ic("nondefault2", {"ingressclass.kubernetes.io/is-default-class": "false"})],
     None),
    (ingress(), [], None),
    (ingress("custom"), [ic("default1", DEFAULT)], "custom"),
    (ingress(annotations={"kubernetes.io/ingress.class": "custom"}), [ic("default1", DEFAULT)], None),
    (ingress(), [ic("default1", DEFAULT), ic("default2", DEFAULT, "2026-02-01T00:00:00Z")], "default2"),
    (ingress(), [ic("default2", DEFAULT), ic("default1", DEFAULT)], "default1"),
], ids=["one-default", "no-default", "no-classes", "class-given", "annotation-given", "newest-default",
        "same-age-first-by-name"])
async def test_admission(server: APIServer, obj: dict[str, Any], classes: list[dict[str, Any]],
                         expected: str | None) -> None:
    for c in classes:
        await server.storage.create(f"/registry/ingressclasses/{c['metadata']['name']}", c)
    a = Attributes(Operation.CREATE, "networking.k8s.io", "v1", "ingresses", "Ingress", "ns", "testing", obj)
    await DefaultIngressClass(server).admit(a)
    assert obj["spec"].get("ingressClassName") == expected
