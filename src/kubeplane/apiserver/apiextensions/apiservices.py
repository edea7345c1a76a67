"""The Local APIService of every group-version a CRD serves: `kubectl get apiservices` lists
`v1.example.com  Local  True` while a CRD of example.com serves v1, and drops it when the last
one stops serving it (deleted, or the version no longer served).

Upstream: crdregistration_controller.go (kube-apiserver pkg/controlplane/controller/
crdregistration: handleVersionUpdate adds `<version>.<group>` with groupPriorityMinimum 1000
and versionPriority 100 for every served version of any CRD in the group, removes it when no
CRD serves it) and the autoregister controller it feeds (kube-aggregator pkg/controllers/
autoregister: sync-managed APIServices carry `kube-aggregator.kubernetes.io/automanaged: "true"`,
only those are changed or removed; one created by a user is left alone), with the availability
controller's verdict on a local APIService (Available True, reason Local). The built-in
group-versions keep their own onstart APIServices (registry/apiregistration/apiservice.py).
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...api import errors
from ...api.resources import GROUP_VERSIONS
from ..authentication.user import APISERVER
from ..registry import store
from ..registry.apiregistration.apiservice import API_SERVICES, AUTOMANAGED_LABEL
from ..registry.definition import Obj
from ..registry.deletion import DeleteOptions, delete
from ..tables import apiregistration as tables

if TYPE_CHECKING:
    from ..server import APIServer

SYNC_MANAGED = "true"           # Upstream: AutoRegisterManagedLabel's value for sync-managed ones
# Upstream: "CRDs should have relatively low priority"; "sorted by kube-like versions like any
# other APIService with the same VersionPriority".
GROUP_PRIORITY_MINIMUM, VERSION_PRIORITY = 1000, 100
_BUILTIN = frozenset(GROUP_VERSIONS)


def desired_group_versions(crds: Iterable[Obj]) -> set[tuple[str, str]]:
    """Every (group, version) some CRD serves, built-in group-versions left out."""
    out: set[tuple[str, str]] = set()
    for crd in crds:
        spec = crd.get("spec") or {}
        group = spec.get("group")
        for v in spec.get("versions") or []:
            if isinstance(v, dict) and v.get("served") and isinstance(group, str) and group:
                out.add((group, str(v.get("name", ""))))
    return out - _BUILTIN


def api_service(group: str, version: str) -> Obj:
    """Upstream: the APIService handleVersionUpdate adds to sync, with the autoregister label."""
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": f"{version}.{group}", "labels": {AUTOMANAGED_LABEL: SYNC_MANAGED}},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": GROUP_PRIORITY_MINIMUM,
                     "versionPriority": VERSION_PRIORITY}}


def _managed(obj: Obj) -> bool:
    return (obj["metadata"].get("labels") or {}).get(AUTOMANAGED_LABEL) == SYNC_MANAGED


async def sync_api_services(api: APIServer, crds: Iterable[Obj]) -> None:
    """Make the sync-managed APIServices those of the group-versions the CRDs serve.
    Upstream: autoRegisterController.checkAPIService for each of them."""
    desired = desired_group_versions(crds)
    kvs, _ = await api.storage.list(API_SERVICES.prefix)
    existing = {kv.obj["metadata"]["name"]: kv for kv in kvs}
    for kv in kvs:
        spec = kv.obj.get("spec") or {}
        if _managed(kv.obj) and (spec.get("group", ""), spec.get("version", "")) not in desired:
            try:
                await delete(api, APISERVER, API_SERVICES, kv, DeleteOptions())
            except errors.NotFound:
                pass
    opts = store.WriteOptions(user=APISERVER, field_manager="kube-apiserver")
    for group, version in sorted(desired):
        want = api_service(group, version)
        found = existing.get(want["metadata"]["name"])
        if found is None:
            try:
                stored, _ = await store.create(api, opts, API_SERVICES, "", want, [])
            except errors.AlreadyExists:
                continue
        elif not _managed(found.obj):
            continue                    # a user's APIService of that name: not ours to change
        else:
            stored = found.obj
        await _mark_available(api, opts, stored)


async def _mark_available(api: APIServer, opts: store.WriteOptions, stored: Obj) -> None:
    """Upstream: the availability controller — a local APIService is always available."""
    if tables.available(stored) == "True":
        return
    new = copy.deepcopy(stored)
    new["status"] = {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": api.now(),
                                     "reason": "Local", "message": "Local APIServices are always available"}]}
    await store.update(api, opts, API_SERVICES, new, stored, int(stored["metadata"]["resourceVersion"]), "status", [])
