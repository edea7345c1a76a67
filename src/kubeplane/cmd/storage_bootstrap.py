"""The default StorageClass a kind cluster starts with, created by `kubeplane up`.

kind applies its default-storage manifest when it creates a cluster: a StorageClass `standard`
(default class, provisioner rancher.io/local-path, WaitForFirstConsumer, reclaim Delete).
`kubeplane up` creates the same object at start-up when no object of that name exists and the
API serves StorageClasses; the controller-manager runs the provisioner for it
(controller/volume/localpath). A user who deletes it gets it back on the next start, as
kubeadm's addons come back.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from ..api.resources import lookup
from ..apiserver import enablement
from ..api.localpath import default_storage_class

if TYPE_CHECKING:
    from ..apiserver.server import APIServer


async def ensure_default_storage_class(api: APIServer) -> None:
    """Create kind's `standard` StorageClass unless it exists (or StorageClasses are not served)."""
    from ..apiserver.registry import store
    if not enablement.enabled("storage.k8s.io", "v1", "storageclasses"):
        return
    ri = lookup("storage.k8s.io", "v1", "storageclasses")
    if ri is None:
        return
    obj = default_storage_class()
    if await api.storage.get(ri.key("", obj["metadata"]["name"])) is not None:
        return
    await store.create(api, store.WriteOptions(user_agent="kubeplane-up"), ri, "", copy.deepcopy(obj), [])
