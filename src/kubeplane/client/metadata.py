"""Resources learnt from discovery at run time, reached through a metadata-only client.

Upstream: k8s.io/client-go/discovery (ServerPreferredResources) and k8s.io/client-go/metadata
(PartialObjectMetadata). The built-in kinds are a fixed table (api/resources.py) with typed
objects; the kinds a CustomResourceDefinition adds exist only on the server. Controllers that
walk every resource (garbage collector, namespace deleter) learn those from discovery and read
them as PartialObjectMetadata: apiVersion, kind and a typed ObjectMeta, the rest ignored.

    extra = await custom_resources(clientset.transport)      # [ResourceInfo(group="stable.example.com", ...)]
    client = MetadataClient(clientset.transport, extra[0], "default")
    (await client.get("foo")).metadata.owner_references
"""
from __future__ import annotations

from typing import Any

import msgspec
import orjson

from ..api import errors
from ..api.resources import GROUP_VERSIONS, RESOURCES, ResourceInfo
from ..api.types import meta_v1
from ..api.types.base import Struct
from .rest import ResourceClient, raise_for_status
from .transport import Transport

_BUILTIN_GROUP_VERSIONS = frozenset(GROUP_VERSIONS)
_BUILTIN_RESOURCES = frozenset((r.group, r.plural) for r in RESOURCES)


class PartialObjectMetadata(Struct):
    """Upstream: metav1.PartialObjectMetadata — any object, metadata only."""

    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None


class PartialObjectMetadataList(Struct):
    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ListMeta | None = None
    items: list[PartialObjectMetadata] | None = None


class MetadataClient(ResourceClient[PartialObjectMetadata]):
    """A ResourceClient for a resource with no generated type: objects decode as
    PartialObjectMetadata. Upstream: metadata.Client (it asks for the PartialObjectMetadata
    media type; we decode the full JSON and keep the metadata, which is the same to the caller)."""

    def __init__(self, transport: Transport, ri: ResourceInfo, namespace: str = "") -> None:
        self._bind(transport, ri, namespace)
        self.type = PartialObjectMetadata
        self.list_type = PartialObjectMetadataList


async def _get_json(transport: Transport, path: str) -> Any:
    resp = await transport.request("GET", path)
    raise_for_status(resp)
    return orjson.loads(resp.body)


async def custom_resources(transport: Transport) -> list[ResourceInfo]:
    """The resources discovery lists that the built-in table does not know (the custom
    resources: in their own groups, or in a built-in group-version), each in the most preferred
    version that serves it, from legacy discovery: GET /apis, then one APIResourceList per
    group-version (a group-version that vanished meanwhile is skipped).

    Upstream: discovery.ServerPreferredResources — a resource is listed in the first version
    of its group's preference order that has it, so one only a less preferred version serves
    (a CRD kept at v1 beside another group's CRD at v2) is there too; restricted to what is not
    compiled in. The core group holds no custom resources (a CRD's group has a dot).
    """
    groups = (await _get_json(transport, "/apis")).get("groups") or []
    out: list[ResourceInfo] = []
    seen: set[tuple[str, str]] = set()
    for g in groups:
        name = g.get("name") or ""
        for v in g.get("versions") or []:
            version = (v or {}).get("version") or ""
            if not name or not version or ("." not in name and (name, version) in _BUILTIN_GROUP_VERSIONS):
                continue
            try:
                lst = await _get_json(transport, f"/apis/{name}/{version}")
            except errors.NotFound:
                continue
            for r in lst.get("resources") or []:
                plural = r.get("name", "")
                if "/" in plural or (name, plural) in seen:
                    continue
                seen.add((name, plural))
                if (name, plural) not in _BUILTIN_RESOURCES:
                    out.append(resource_info(name, version, r))
    return out


def resource_info(group: str, version: str, r: dict[str, Any]) -> ResourceInfo:
    """A ResourceInfo from one APIResourceList entry (no schema definition: not a built-in)."""
    return ResourceInfo(group, version, r.get("kind", ""), r.get("name", ""), r.get("singularName", ""),
                        bool(r.get("namespaced")), "", tuple(r.get("shortNames") or ()),
                        tuple(r.get("categories") or ()), (), tuple(r.get("verbs") or ()))
