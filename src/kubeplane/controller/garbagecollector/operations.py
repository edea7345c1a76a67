"""The garbage collector's API calls: get, delete, patch, and removing a finalizer.

Upstream: operations.go and patch.go. Upstream reaches every resource through a metadata-only
dynamic client and a REST mapper; we serve a fixed table, so `api_resource` is a table lookup.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.resources import ResourceInfo, for_kind
from ...client.clientset import GroupClient
from ...client.rest import PatchType, ResourceClient
from .graph import ObjectReference

if TYPE_CHECKING:
    from .garbagecollector import GarbageCollector
    from .graph import Node

# retry.DefaultBackoff allows 5 attempts; a conflict re-reads the object, so retrying at once
# is safe (and keeps a FakeClock test from needing to step time for a conflict).
MAX_CONFLICT_RETRIES = 5


class RESTMappingError(Exception):
    """The reference names a kind we do not serve. Upstream: restMappingError"""

    def __init__(self, kind: str, version: str) -> None:
        super().__init__(f"unable to get REST mapping for {kind}.{version}.")


def api_resource(api_version: str, kind: str) -> ResourceInfo:
    """Upstream: apiResource (operations.go) — the served resource of an apiVersion/kind."""
    group, _, version = api_version.rpartition("/")
    ri = for_kind(group, kind)
    if ri is None or ri.version != version:
        raise RESTMappingError(kind, api_version)
    return ri


def resource_client(gc: GarbageCollector, ri: ResourceInfo, namespace: str) -> ResourceClient[Any]:
    key = (ri.group, ri.plural, namespace)
    client = gc.clients.get(key)
    if client is None:
        client = gc.clients[key] = GroupClient(gc.clientset.transport, ri.group, ri.version).resource(
            ri.plural, namespace if ri.namespaced else "")
    return client


def _client_for(gc: GarbageCollector, item: ObjectReference) -> ResourceClient[Any]:
    return resource_client(gc, api_resource(item.api_version, item.kind), item.namespace)


async def get_object(gc: GarbageCollector, item: ObjectReference) -> Any:
    """Upstream: getObject"""
    return await _client_for(gc, item).get(item.name)


async def delete_object(gc: GarbageCollector, item: ObjectReference, resource_version: str,
                        owners_at_resource_version: list[Any], policy: str | None) -> None:
    """Delete item with preconditions on its uid and (when given) resourceVersion.

    A resourceVersion conflict only matters if the ownerReferences changed meanwhile (they
    were the reason to delete); otherwise the delete is retried on the uid alone.
    Upstream: deleteObject (operations.go)
    """
    client = _client_for(gc, item)
    preconditions = {"uid": item.uid}
    if resource_version:
        preconditions["resourceVersion"] = resource_version
    try:
        await client.delete(item.name, propagation_policy=policy, preconditions=preconditions)
        return
    except errors.Conflict:
        if not resource_version:
            raise
        live = await client.get(item.name)
        if live.metadata.uid != item.uid:
            raise errors.NotFound(client.ri.group, client.ri.plural, item.name) from None
        if list(live.metadata.owner_references or []) != list(owners_at_resource_version or []):
            raise
    await client.delete(item.name, propagation_policy=policy, preconditions={"uid": item.uid})


async def patch_object(gc: GarbageCollector, item: ObjectReference, patch: Any, patch_type: PatchType) -> Any:
    """Upstream: patchObject"""
    return await _client_for(gc, item).patch(item.name, patch, patch_type)


async def patch(gc: GarbageCollector, item: Node, smp: dict[str, Any]) -> Any:
    """Upstream: gc.patch (patch.go). Every resource we serve takes strategic merge patches, so
    upstream's JSON-merge-patch fallback (for custom resources) is not needed."""
    return await patch_object(gc, item.identity, smp, "strategic")


def generate_delete_owner_ref_strategic_merge_bytes(dependent_uid: str, owner_uids: list[str],
                                                    *finalizers: str) -> dict[str, Any]:
    """A strategic merge patch that deletes the ownerReferences with owner_uids (merge key uid).

    The dependent's uid in the patch makes it fail if the name now holds another object.
    Upstream: GenerateDeleteOwnerRefStrategicMergeBytes (controller_utils.go)
    """
    meta: dict[str, Any] = {"uid": dependent_uid,
                            "ownerReferences": [{"$patch": "delete", "uid": uid} for uid in owner_uids]}
    if finalizers:
        meta["$deleteFromPrimitiveList/finalizers"] = list(finalizers)
    return {"metadata": meta}


async def remove_finalizer(gc: GarbageCollector, owner: Node, target: str) -> None:
    """Remove target from the owner's finalizers (a merge patch pinned to the resourceVersion
    read), retrying on conflict. Removing the last finalizer lets the API server delete it.

    Upstream: removeFinalizer (operations.go)
    """
    for attempt in range(MAX_CONFLICT_RETRIES):
        try:
            obj = await get_object(gc, owner.identity)
        except errors.NotFound:
            return
        finalizers = list(obj.metadata.finalizers or [])
        if target not in finalizers:
            return
        remaining = [f for f in finalizers if f != target]
        body = {"metadata": {"resourceVersion": obj.metadata.resource_version, "finalizers": remaining or None}}
        try:
            await patch_object(gc, owner.identity, body, "merge")
            return
        except errors.NotFound:
            return
        except errors.Conflict:
            if attempt == MAX_CONFLICT_RETRIES - 1:
                raise
