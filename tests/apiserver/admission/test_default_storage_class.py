"""DefaultStorageClass, with upstream's cases
(plugin/pkg/admission/storage/storageclass/setdefault/admission_test.go: TestAdmission)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.default_storage_class import DefaultStorageClass
from kubeplane.apiserver.server import APIServer


def sc(name: str, annotations: dict[str, str] | None = None, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta, "provisioner": "p"}


DEFAULT1 = sc("default1", {"storageclass.kubernetes.io/is-default-class": "true"})
DEFAULT2 = sc("default2", {"storageclass.kubernetes.io/is-default-class": "true"})
DEFAULT_NEWER = sc("default-newer", {"storageclass.kubernetes.io/is-default-class": "true"}, "2026-02-01T00:00:00Z")
BETA_DEFAULT = sc("betadefault", {"storageclass.beta.kubernetes.io/is-default-class": "true"})
NON_DEFAULT1 = sc("nondefault1", {"storageclass.kubernetes.io/is-default-class": "false"})
NON_DEFAULT2 = sc("nondefault2")
CLASS_WITH_FALSE = sc("nondefault3", {"storageclass.kubernetes.io/is-default-class": "no"})


def claim(class_name: str | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if class_name is not None:
        spec["storageClassName"] = class_name
    meta: dict[str, Any] = {"name": "claimWithNoClass", "namespace": "ns"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


@pytest.mark.parametrize("claim_obj, classes, expected", [
    (claim(), [DEFAULT1, NON_DEFAULT1, NON_DEFAULT2], "default1"),
    (claim(), [BETA_DEFAULT, NON_DEFAULT1], "betadefault"),
    (claim(""), [DEFAULT1], ""),                               # "" is a class: no class
    (claim("foo"), [DEFAULT1], "foo"),
    (claim(annotations={"volume.beta.kubernetes.io/storage-class": "foo"}), [DEFAULT1], None),
    (claim(), [NON_DEFAULT1, NON_DEFAULT2, CLASS_WITH_FALSE], None),
    (claim(), [], None),
    (claim(), [DEFAULT1, DEFAULT2], "default1"),               # same age: the first by name
    (claim(), [DEFAULT1, DEFAULT_NEWER], "default-newer"),     # the newest wins
], ids=["no-class-one-default", "beta-default", "empty-class-kept", "class-kept", "beta-annotation-kept",
        "no-default", "no-classes", "two-defaults-same-age", "two-defaults-newest"])
async def test_admission(server: APIServer, claim_obj: dict[str, Any], classes: list[dict[str, Any]],
                         expected: str | None) -> None:
    for c in classes:
        await server.storage.create(f"/registry/storageclasses/{c['metadata']['name']}", c)
    a = Attributes(Operation.CREATE, "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", "ns",
                   "claimWithNoClass", claim_obj)
    await DefaultStorageClass(server).admit(a)
    assert claim_obj["spec"].get("storageClassName") == expected


async def test_other_resources_are_left_alone(server: APIServer) -> None:
    await server.storage.create("/registry/storageclasses/default1", DEFAULT1)
    obj = claim()
    a = Attributes(Operation.CREATE, "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", "ns", "c", obj,
                   subresource="status")
    await DefaultStorageClass(server).admit(a)
    assert "storageClassName" not in obj["spec"]
