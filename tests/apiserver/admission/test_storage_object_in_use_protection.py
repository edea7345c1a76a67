"""StorageObjectInUseProtection, with upstream's cases
(plugin/pkg/admission/storage/storageobjectinuseprotection/admission_test.go: TestAdmit)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.storage_object_in_use_protection import StorageObjectInUseProtection
from kubeplane.apiserver.server import APIServer


def obj(kind: str, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x"}
    if finalizers is not None:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": {}}


@pytest.mark.parametrize("resource, kind, given, expected", [
    ("persistentvolumeclaims", "PersistentVolumeClaim", None, ["kubernetes.io/pvc-protection"]),
    ("persistentvolumeclaims", "PersistentVolumeClaim", ["kubernetes.io/pvc-protection"],
     ["kubernetes.io/pvc-protection"]),
    ("persistentvolumeclaims", "PersistentVolumeClaim", ["other"], ["other", "kubernetes.io/pvc-protection"]),
    ("persistentvolumes", "PersistentVolume", None, ["kubernetes.io/pv-protection"]),
    ("persistentvolumes", "PersistentVolume", ["kubernetes.io/pv-protection"], ["kubernetes.io/pv-protection"]),
    ("pods", "Pod", None, None),
], ids=["create-pvc-add-finalizer", "pvc-finalizer-already-exists", "pvc-keeps-others", "create-pv-add-finalizer",
        "pv-finalizer-already-exists", "create-pod-ignored"])
async def test_admit(server: APIServer, resource: str, kind: str, given: list[str] | None,
                     expected: list[str] | None) -> None:
    o = obj(kind, given)
    a = Attributes(Operation.CREATE, "", "v1", resource, kind, "ns" if kind != "PersistentVolume" else "", "x", o)
    await StorageObjectInUseProtection(server).admit(a)
    assert o["metadata"].get("finalizers") == expected


async def test_subresources_are_ignored(server: APIServer) -> None:
    o = obj("PersistentVolumeClaim")
    a = Attributes(Operation.CREATE, "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", "ns", "x", o,
                   subresource="status")
    await StorageObjectInUseProtection(server).admit(a)
    assert "finalizers" not in o["metadata"]
