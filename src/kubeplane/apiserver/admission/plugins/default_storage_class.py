"""DefaultStorageClass: a claim that names no storage class gets the cluster's default one.

A claim has a class when spec.storageClassName is set (even to "", which means "no class") or
it carries the beta storage-class annotation. The default is the newest StorageClass annotated
`storageclass.kubernetes.io/is-default-class: "true"` (or the beta annotation); none, nothing.

Upstream: plugin/pkg/admission/storage/storageclass/setdefault/admission.go (Admit), helper
PersistentVolumeClaimHasClass, volumeutil.GetDefaultClass.
"""
from __future__ import annotations

from ..chain import register
from ..interface import Attributes, Operation, Plugin
from ._default_class import newest_default_class

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
IS_DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
PREFIX = "/registry/storageclasses/"


@register
class DefaultStorageClass(Plugin):
    NAME = "DefaultStorageClass"
    OPERATIONS = frozenset({Operation.CREATE})
    RESOURCES = frozenset({("", "persistentvolumeclaims")})
    SUBRESOURCES = frozenset({""})
    MUTATING = True

    async def admit(self, a: Attributes) -> None:
        if not a.targets("", "persistentvolumeclaims") or not isinstance(a.obj, dict):
            return
        spec = a.obj.setdefault("spec", {})
        annotations = (a.obj.get("metadata") or {}).get("annotations") or {}
        if spec.get("storageClassName") is not None or BETA_STORAGE_CLASS_ANNOTATION in annotations:
            return                                  # the user asked for a class
        default = await newest_default_class(
            self.api.storage, PREFIX, (IS_DEFAULT_STORAGE_CLASS_ANNOTATION, BETA_IS_DEFAULT_STORAGE_CLASS_ANNOTATION))
        if default is not None:
            spec["storageClassName"] = default["metadata"]["name"]
