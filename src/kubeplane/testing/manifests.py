"""Apply manifests to a control plane, as `kubectl apply --server-side` would, CRDs first.

Each object goes as a server-side apply (PATCH application/apply-patch+yaml, force=true) under
the field manager "kubeplane-testing", so applying the same files twice changes nothing. The
CustomResourceDefinitions among them are applied first and waited for until Established, so the
custom objects in the same files (or the tests that follow) find their kind served. Kinds are
resolved through discovery, as kubectl's RESTMapper does (Upstream: DeferredDiscoveryRESTMapper,
client-go/restmapper), so custom kinds work as built-in ones do.
"""
from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Callable, Iterable
from typing import Any

import orjson
import yaml

from ..client.transport import RawResponse, Transport

FIELD_MANAGER = "kubeplane-testing"
CRD_KIND = ("apiextensions.k8s.io", "CustomResourceDefinition")

Source = str | pathlib.Path | dict[str, Any]


class ApplyError(Exception):
    """An object the server refused (its Status message), or a CRD never Established."""


def load(sources: Iterable[Source]) -> list[dict[str, Any]]:
    """The objects of each source: a dict, a YAML/JSON file, a directory (its *.yaml, *.yml and
    *.json files, sorted), or YAML text; List kinds are flattened and empty documents dropped."""
    out: list[dict[str, Any]] = []
    for src in sources:
        if isinstance(src, dict):
            out.extend(_flatten(src))
        elif isinstance(src, pathlib.Path) or _names_a_file(src):
            path = pathlib.Path(src)
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json")) \
                if path.is_dir() else [path]
            for f in files:
                out.extend(_documents(f.read_text(), str(f)))
        else:
            out.extend(_documents(src, "<text>"))
    return out


def _names_a_file(text: str) -> bool:
    try:
        return "\n" not in text and pathlib.Path(text).exists()
    except (OSError, ValueError):      # too long a name, a NUL: text, not a path
        return False


def _documents(text: str, origin: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        raise ApplyError(f"{origin}: {err}") from None
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise ApplyError(f"{origin}: a document is not a Kubernetes object (no apiVersion and kind)")
        out.extend(_flatten(doc))
    return out


def _flatten(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj.get("kind", "").endswith("List") and isinstance(obj.get("items"), list):
        return [o for item in obj["items"] for o in _flatten(item)]
    return [obj]


def _group_version(obj: dict[str, Any]) -> tuple[str, str]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return group, version


def is_crd(obj: dict[str, Any]) -> bool:
    return (_group_version(obj)[0], obj.get("kind")) == CRD_KIND


async def apply(transport: Transport, objects: list[dict[str, Any]], *, namespace: str = "default",
                timeout: float = 30.0) -> list[dict[str, Any]]:
    """Apply objects (CRDs first, then waited for until Established, then the rest in order);
    namespaced objects without a namespace go to `namespace`. Returns what the server stored."""
    crds = [o for o in objects if is_crd(o)]
    applied = [await _apply_one(transport, o, _CRD_RESOURCE, namespace) for o in crds]
    await asyncio.wait_for(asyncio.gather(*(_established(transport, o["metadata"]["name"]) for o in crds)), timeout)
    mapper = _Discovery(transport)
    for obj in objects:
        if not is_crd(obj):
            applied.append(await _apply_one(transport, obj, await mapper.resource(obj), namespace))
    return applied


_CRD_RESOURCE = ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False)


async def _apply_one(transport: Transport, obj: dict[str, Any], resource: tuple[str, str, bool],
                     namespace: str) -> dict[str, Any]:
    prefix, plural, namespaced = resource
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ApplyError(f"{obj['kind']}: apply needs metadata.name")
    if namespaced:
        ns = meta.get("namespace") or namespace
        obj = {**obj, "metadata": {**meta, "namespace": ns}}
        path = f"{prefix}/namespaces/{ns}/{plural}/{name}"
    else:
        path = f"{prefix}/{plural}/{name}"
    resp = await transport.request("PATCH", path, {"fieldManager": FIELD_MANAGER, "force": "true"},
                                   orjson.dumps(obj), content_type="application/apply-patch+yaml")
    return decoded(resp, f"{obj['kind']} {name}")


def decoded(resp: RawResponse, what: str) -> dict[str, Any]:
    body = orjson.loads(resp.body) if resp.body else {}
    if resp.status >= 300:
        raise ApplyError(f"{what}: {body.get('message') or resp.status}")
    return body


async def _established(transport: Transport, name: str) -> None:
    """Wait until the CRD's Established condition is True (the CRD controller sets it at once)."""
    def established(crd: dict[str, Any]) -> bool:
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
    await wait_for(transport, f"{_CRD_RESOURCE[0]}/{_CRD_RESOURCE[1]}", name, established)


async def wait_for(transport: Transport, collection: str, name: str,
                   ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The object `name` of a collection (its path) once ready(object) says so: listed by name, then
    watched from that list's resourceVersion, as `kubectl wait` does (Upstream: UntilWithSync)."""
    query = {"fieldSelector": f"metadata.name={name}"}
    listing = decoded(await transport.request("GET", collection, query), f"{collection}: list")
    for item in listing.get("items") or []:
        if ready(item):
            return item
    query |= {"watch": "true", "resourceVersion": listing["metadata"]["resourceVersion"]}
    events = transport.stream(collection, query)
    try:
        async for line in events:
            event = orjson.loads(line)
            if event.get("type") in ("ADDED", "MODIFIED") and ready(event["object"]):
                return event["object"]
            if event.get("type") == "ERROR" or "type" not in event:
                raise ApplyError(f"{collection}: watching {name}: {(event.get('object') or event).get('message')}")
    finally:
        aclose = getattr(events, "aclose", None)      # the watch ends with us (a timeout cancels us)
        if aclose is not None:
            await aclose()
    raise ApplyError(f"{collection}: the watch for {name} ended")


class _Discovery:
    """kind -> (path prefix, plural, namespaced), from /api/v1 and /apis/<group>/<version>, each
    read once per apply."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.lists: dict[str, dict[str, tuple[str, bool]]] = {}

    async def resource(self, obj: dict[str, Any]) -> tuple[str, str, bool]:
        group, version = _group_version(obj)
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        kinds = self.lists.get(prefix)
        if kinds is None:
            resp = await self.transport.request("GET", prefix)
            if resp.status == 404:
                raise ApplyError(f'{obj["kind"]}: no matches for kind "{obj["kind"]}" in version "{obj["apiVersion"]}"')
            listing = decoded(resp, f"discovery of {obj['apiVersion']}")
            kinds = self.lists[prefix] = {r["kind"]: (r["name"], bool(r.get("namespaced")))
                                          for r in listing.get("resources", []) if "/" not in r["name"]}
        found = kinds.get(obj["kind"])
        if found is None:
            raise ApplyError(f'{obj["kind"]}: no matches for kind "{obj["kind"]}" in version "{obj["apiVersion"]}"')
        return prefix, found[0], found[1]
