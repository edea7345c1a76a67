"""Object-level helpers shared by the REST handlers: metadata filling, storage error mapping,
list/Status bodies.

Upstream: rest.BeforeCreate / BeforeUpdate (apiserver/pkg/registry/rest/create.go, update.go),
names.SimpleNameGenerator.
"""
from __future__ import annotations

import copy
import secrets
import os
from contextlib import contextmanager
from typing import Any, Iterator

from ..api import errors
from ..api.resources import ResourceInfo
from ..storage import interface as st

Obj = dict[str, Any]

# Upstream's utilrand alphabet: no vowels (no words) and no confusable characters.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_NAME_LENGTH = 63 - 5


def new_uid() -> str:
    """A random (version 4) UUID string; uuid.uuid4() builds an object we would only format."""
    h = bytearray(os.urandom(16))
    h[6] = (h[6] & 0x0F) | 0x40
    h[8] = (h[8] & 0x3F) | 0x80
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def generate_name(base: str) -> str:
    """Upstream: SimpleNameGenerator.GenerateName — base (trimmed) + 5 random characters."""
    base = base[:_MAX_GENERATED_NAME_LENGTH]
    return base + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))


def deep_copy(obj: Obj) -> Obj:
    return copy.deepcopy(obj)


def fill_create_meta(obj: Obj, ri: ResourceInfo, namespace: str, now: str) -> None:
    """Upstream: rest.BeforeCreate + FillObjectMetaSystemFields."""
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise errors.BadRequest("metadata must be an object")
    if ri.namespaced:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generate_name(meta["generateName"])
    meta["uid"] = new_uid()
    meta["creationTimestamp"] = now
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
        meta.pop(field, None)
    meta.pop("generation", None)


def fill_update_meta(obj: Obj, old: Obj) -> None:
    """Upstream: rest.BeforeUpdate — system fields cannot be changed by an update."""
    meta, old_meta = obj["metadata"], old["metadata"]
    if not meta.get("uid"):
        meta["uid"] = old_meta.get("uid")
    meta["creationTimestamp"] = old_meta.get("creationTimestamp")
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    if "generation" in old_meta:
        meta["generation"] = old_meta["generation"]
    meta.pop("selfLink", None)


def check_namespace_matches(obj: Obj, namespace: str) -> None:
    ns = (obj.get("metadata") or {}).get("namespace")
    if ns and namespace and ns != namespace:
        raise errors.BadRequest("the namespace of the provided object does not match the namespace sent on the request")


def check_type_meta(obj: Obj, ri: ResourceInfo, kind: str | None = None, api_version: str | None = None) -> None:
    """Fill apiVersion/kind from the URL when absent; refuse a body of another kind."""
    kind = kind or ri.kind
    api_version = api_version or ri.api_version
    got_v, got_k = obj.get("apiVersion"), obj.get("kind")
    if got_k and got_k != kind:
        raise errors.BadRequest(f"the kind in the request body ({got_k}) does not match the kind of the URL ({kind})")
    if got_v and got_v != api_version:
        raise errors.BadRequest(
            f"the API version in the data ({got_v}) does not match the expected API version ({api_version})")
    obj["apiVersion"], obj["kind"] = api_version, kind


@contextmanager
def storage_errors(ri: ResourceInfo, name: str) -> Iterator[None]:
    """Translate storage failures into API errors for resource ri/name (most specific first)."""
    try:
        yield
    except st.KeyExists:
        raise errors.AlreadyExists(ri.group, ri.plural, name) from None
    except st.KeyNotFound:
        raise errors.NotFound(ri.group, ri.plural, name) from None
    except st.RevisionMismatch:
        raise errors.Conflict(ri.group, ri.plural, name, errors.OPTIMISTIC_LOCK_MSG) from None
    except st.Compacted:
        raise errors.Gone() from None


def status_success(ri: ResourceInfo, name: str, uid: str = "") -> Obj:
    """The Status body upstream returns for a completed delete of most resources."""
    details: Obj = {"name": name, "kind": ri.plural}
    if ri.group:
        details["group"] = ri.group
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def list_body(ri: ResourceInfo, items: list[bytes], rv: int, cont: str = "", remaining: int | None = None) -> bytes:
    """A <Kind>List built from stored bytes without re-encoding the items."""
    meta = f'"resourceVersion":"{rv}"'
    if cont:
        meta += f',"continue":"{cont}"'
        if remaining is not None:
            meta += f',"remainingItemCount":{remaining}'
    head = f'{{"kind":"{ri.list_kind}","apiVersion":"{ri.api_version}","metadata":{{{meta}}},"items":['
    return head.encode() + b",".join(items) + b"]}"


def object_name(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name") or ""
