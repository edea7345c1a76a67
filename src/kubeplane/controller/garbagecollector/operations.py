"""The garbage collector's API calls: get, delete, patch, and removing a finalizer.

Upstream: operations.go and patch.go. Upstream reaches every resource through a metadata-only
dynamic client and a REST mapper. The built-in kinds are a fixed table (`api_resource` is a
table lookup) read through typed clients; custom resources come from discovery
(GarbageCollector.api_resource) and are read through the metadata client.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ...api import errors
from ...api import types
from ...api.resources import ResourceInfo, for_kind, lookup
from ...client.clientset import GroupClient
from ...client.metadata import MetadataClient
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
    key = (ri.group, ri.version, ri.plural, namespace)
    client = gc.clients.get(key)
    if client is None:
        ns = namespace if ri.namespaced else ""
        if lookup(ri.group, ri.version, ri.plural) is None:
            client = MetadataClient(gc.clientset.transport, ri, ns)
        else:
            client = GroupClient(gc.clientset.transport, ri.group, ri.version).resource(ri.plural, ns)
        gc.clients[key] = client
    return client


def _client_for(gc: GarbageCollector, item: ObjectReference) -> ResourceClient[Any]:
    return resource_client(gc, gc.api_resource(item.api_version, item.kind), item.namespace)


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


async def patch(gc: GarbageCollector, item: Node, smp: dict[str, Any],
                jmp: Callable[[GarbageCollector, Node], Awaitable[dict[str, Any]]]) -> Any:
    """A strategic merge patch; a resource that does not take them (custom resources answer
    415) gets the JSON merge patch jmp computes from the live object instead.

    Upstream: gc.patch (patch.go)
    """
    try:
        return await patch_object(gc, item.identity, smp, "strategic")
    except errors.UnsupportedMediaType:
        pass
    return await patch_object(gc, item.identity, await jmp(gc, item), "merge")


def delete_owner_ref_json_merge_patch(*owner_uids: str) -> Callable[[GarbageCollector, Node], Awaitable[dict[str, Any]]]:
    """The live ownerReferences less owner_uids, pinned to the resourceVersion read (a merge
    patch replaces the whole list).

    Upstream: deleteOwnerRefJSONMergePatch (patch.go)
    """
    async def jmp(gc: GarbageCollector, item: Node) -> dict[str, Any]:
        obj = await get_object(gc, item.identity)
        refs = [types.to_dict(r) for r in obj.metadata.owner_references or () if r.uid not in owner_uids]
        return {"metadata": {"resourceVersion": obj.metadata.resource_version, "ownerReferences": refs or None}}
    return jmp


async def unblock_owner_references_json_merge_patch(gc: GarbageCollector, item: Node) -> dict[str, Any]:
    """The live ownerReferences with blockOwnerDeletion false on those that block, pinned to the
    resourceVersion read. Upstream: unblockOwnerReferencesJSONMergePatch (patch.go)"""
    obj = await get_object(gc, item.identity)
    refs = []
    for r in obj.metadata.owner_references or ():
        d = types.to_dict(r)
        if r.block_owner_deletion:
            d["blockOwnerDeletion"] = False
        refs.append(d)
    return {"metadata": {"resourceVersion": obj.metadata.resource_version, "ownerReferences": refs}}


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
