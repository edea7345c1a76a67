"""Object-level helpers shared by the REST handlers: metadata filling, storage error mapping,
list/Status bodies.

Upstream: rest.BeforeCreate / BeforeUpdate (apiserver/pkg/registry/rest/create.go, update.go),
names.SimpleNameGenerator.
"""
from __future__ import annotations

import os
import random
from typing import Any

import orjson

from ..api import errors
from ..api.resources import ResourceInfo
from ..storage import interface as st

Obj = dict[str, Any]

# Upstream's utilrand alphabet: no vowels (no words) and no confusable characters.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_NAME_LENGTH = 63 - 5
_name_rng = random.Random()           # seeded from os.urandom; private, so nobody's seed() repeats names
# Suffixes are drawn some hundreds at a time: random bytes below 243 (9 * 27) map uniformly
# onto the 27 characters (bytes.translate), the others are dropped (its delete argument).
_SUFFIX_BATCH_BYTES = 3072                       # ~580 suffixes
_SUFFIX_TABLE = (_NAME_ALPHABET * 10)[:256].encode()
_SUFFIX_DROPPED = bytes(range(9 * len(_NAME_ALPHABET), 256))
_suffixes: list[str] = []


class _RandomPool:
    """os.urandom read 4 KiB at a time: one system call per 256 UIDs instead of one each."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._buf = b""
        self._pos = 0

    def take(self, n: int) -> bytes:
        if self._pos + n > len(self._buf):
            self._buf, self._pos = os.urandom(self._size), 0
        out = self._buf[self._pos:self._pos + n]
        self._pos += n
        return out


_uid_random = _RandomPool()


def new_uid() -> str:
    """A random (version 4) UUID string; uuid.uuid4() builds an object we would only format."""
    h = bytearray(_uid_random.take(16))
    h[6] = (h[6] & 0x0F) | 0x40
    h[8] = (h[8] & 0x3F) | 0x80
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def generate_name(base: str) -> str:
    """Upstream: SimpleNameGenerator.GenerateName — base (trimmed) + 5 random characters.

    Upstream draws them from math/rand, not crypto/rand (a taken name is retried by the
    client); so do we: Python's PRNG, seeded from os.urandom at start. Every pod asks twice
    (its name, its token volume's), so the suffixes are drawn in batches (_draw_suffixes): a
    name costs a pop, ~1.5k instructions, where one 64-bit draw cut into base-27 digits cost
    ~5k and random.choices three times that.
    """
    try:
        suffix = _suffixes.pop()
    except IndexError:              # (a pop, not a test first: worker threads generate names too)
        _suffixes.extend(_draw_suffixes())
        return generate_name(base)
    return base[:_MAX_GENERATED_NAME_LENGTH] + suffix


def _draw_suffixes() -> list[str]:
    chars = _name_rng.randbytes(_SUFFIX_BATCH_BYTES).translate(_SUFFIX_TABLE, _SUFFIX_DROPPED).decode()
    return [chars[i:i + 5] for i in range(0, len(chars) - 4, 5)]


# etcd's default --max-request-bytes (embed.DefaultMaxRequestBytes, 1.5 MiB): the largest write
# the store accepts. kube-apiserver learns of a larger object when etcd refuses it, after
# decoding, defaulting, admission and validation, with nothing written.
MAX_REQUEST_BYTES = 1536 * 1024


def request_too_large() -> errors.StatusError:
    """etcd's refusal as the client sees it. Upstream passes etcd's error on as a 500 with no
    reason (ErrorToAPIStatus; kubernetes#112152 asks for a 4xx): the same message, as the 413
    it is — the client's object is too large, retrying cannot help."""
    return errors.StatusError(413, "RequestEntityTooLarge", "etcdserver: request is too large")


def check_stored_size(obj: Obj, ri: ResourceInfo, *, drop_managed_fields: bool = True) -> None:
    """Refuse an object the store could not take (MAX_REQUEST_BYTES encoded).

    As upstream's create/update/patch handlers, a too-large object is tried once more
    without its managedFields (which can be large), except for server-side apply, whose
    managedFields are the point (isTooLargeError in handlers/create.go, update.go, patch.go).
    Nesting deeper than the store encodes (orjson: 254 levels) is refused too.
    """
    size = _encoded_size(obj, ri)
    if size <= MAX_REQUEST_BYTES:
        return
    meta = obj.get("metadata")
    if drop_managed_fields and isinstance(meta, dict) and meta.get("managedFields"):
        del meta["managedFields"]
        size = _encoded_size(obj, ri)
    if size > MAX_REQUEST_BYTES:
        raise request_too_large()


def _encoded_size(obj: Obj, ri: ResourceInfo) -> int:
    try:
        return len(orjson.dumps(obj))
    except orjson.JSONEncodeError:
        raise errors.BadRequest(f"{ri.kind} in version {errors.go_quote(ri.version)} cannot be handled as a "
                                f"{ri.kind}: exceeded max depth") from None


def mutable_copy(kv: st.KeyValue) -> Obj:
    """An independent copy of a stored object to change: decoded from the bytes the store
    already holds (kv.value), so nothing is encoded again."""
    return orjson.loads(kv.value)


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


def check_namespace_matches(obj: Obj, namespace: str, ri: ResourceInfo | None = None) -> None:
    """Default the body's namespace to the URL's (clear it for cluster-scoped kinds); refuse a different one.

    Upstream: rest.EnsureObjectNamespaceMatchesRequestNamespace
    """
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    ns = meta.get("namespace") or ""
    if ri is not None and not ri.namespaced:
        namespace = ""
    if ns == namespace:
        return
    if not ns:
        meta["namespace"] = namespace
    elif not namespace:
        meta.pop("namespace", None)
    else:
        raise errors.BadRequest("the namespace of the provided object does not match the namespace sent on the request")


# The legacy scheme's name as upstream's "not registered" errors print it.
LEGACY_SCHEME = "pkg/api/legacyscheme/scheme.go:30"
# Kinds the scheme knows besides the served ones: older versions of the served kinds (they
# decode, then fail the version check) and the subresource kinds.
_EXTRA_REGISTERED = frozenset({
    ("apps/v1beta1", "Deployment"), ("apps/v1beta2", "Deployment"), ("apps/v1beta2", "ReplicaSet"),
    ("extensions/v1beta1", "Deployment"), ("extensions/v1beta1", "ReplicaSet"),
    ("events.k8s.io/v1beta1", "Event"), ("coordination.k8s.io/v1beta1", "Lease"),
    ("autoscaling/v1", "Scale"), ("v1", "Binding"), ("v1", "Status"), ("v1", "DeleteOptions"),
})
# Internal (hub) package of each group; events.k8s.io and extensions share core's and apps' types.
_INTERNAL_PACKAGE = {"": "core", "events.k8s.io": "core", "extensions": "apps", "apps": "apps",
                     "coordination.k8s.io": "coordination", "autoscaling": "autoscaling"}


def _registered(api_version: str, kind: str) -> bool:
    from ..api.resources import RESOURCES
    if (api_version, kind) in _EXTRA_REGISTERED:
        return True
    return any(r.api_version == api_version and r.kind == kind for r in RESOURCES)


def _internal_type(api_version: str, kind: str) -> str:
    group = api_version.rpartition("/")[0]
    return f"{_INTERNAL_PACKAGE.get(group, group.split('.')[0])}.{kind}"


def check_type_meta(obj: Obj, ri: ResourceInfo, kind: str | None = None, api_version: str | None = None) -> None:
    """Fill apiVersion/kind from the URL when absent; refuse a body the URL cannot take.

    Upstream decodes the body with the scheme into the URL's internal type: a kind the scheme
    does not know in that version, or one that cannot convert into the URL's type, fails in
    transformDecodeError; a known kind of another version decodes, then fails the version check.
    Upstream: createHandler / UpdateResource (handlers/create.go, update.go), transformDecodeError
    """
    kind = kind or ri.kind
    api_version = api_version or ri.api_version
    got_v, got_k = obj.get("apiVersion") or api_version, obj.get("kind") or kind
    if (got_v, got_k) != (api_version, kind):
        version = got_v.rpartition("/")[2]
        prefix = f'{got_k} in version "{version}" cannot be handled as a {kind}: '
        if not _registered(got_v, got_k):
            raise errors.BadRequest(prefix + f'no kind "{got_k}" is registered for version "{got_v}" '
                                    f'in scheme "{LEGACY_SCHEME}"')
        want = _internal_type(api_version, kind)
        if _internal_type(got_v, got_k) != want:
            raise errors.BadRequest(prefix + f"converting ({version}.{got_k}) to ({want}): unknown conversion")
        raise errors.BadRequest(
            f"the API version in the data ({got_v}) does not match the expected API version ({api_version})")
    obj["apiVersion"], obj["kind"] = api_version, kind


class storage_errors:   # noqa: N801 — used like the function it was: `with storage_errors(ri, name):`
    """Translate storage failures into API errors for resource ri/name (most specific first).

    A class, not a @contextmanager generator: every write enters one, and this costs a fifth.
    """

    __slots__ = ("ri", "name")

    def __init__(self, ri: ResourceInfo, name: str) -> None:
        self.ri, self.name = ri, name

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool:
        if typ is None:
            return False
        ri, name = self.ri, self.name
        if issubclass(typ, st.KeyExists):
            raise errors.AlreadyExists(ri.group, ri.plural, name) from None
        if issubclass(typ, st.KeyNotFound):
            raise errors.NotFound(ri.group, ri.plural, name) from None
        if issubclass(typ, st.RevisionMismatch):
            raise errors.Conflict(ri.group, ri.plural, name, errors.OPTIMISTIC_LOCK_MSG) from None
        if issubclass(typ, st.Compacted):
            raise errors.Gone() from None
        return False


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


def check_name(obj: Obj, name: str) -> None:
    """The body's name must be the URL's (an empty one too: an update is not a rename).

    Upstream: checkName (handlers/rest.go)
    """
    got = object_name(obj)
    if got != name:
        raise errors.BadRequest(f"the name of the object ({got}) does not match the name on the URL ({name})")


def object_name(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


_UINT64_MAX = 2**64 - 1


def parse_uint64(s: str) -> tuple[int, str]:
    """strconv.ParseUint(s, 10, 64): (value, "") or (0, its error text), e.g.
    `strconv.ParseUint: parsing "1e3": invalid syntax`, `... "18446744073709551616": value out of range`."""
    if s.isascii() and s.isdigit():
        if len(s.lstrip("0")) <= 20 and (n := int(s)) <= _UINT64_MAX:
            return n, ""
        why = "value out of range"
    else:
        why = "invalid syntax"
    return 0, f"strconv.ParseUint: parsing {errors.go_quote(s)}: {why}"


def precondition_revision(obj: Obj, current: int) -> int:
    """The revision an update must find: the body's resourceVersion if it carries one."""
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    if not rv:
        return current
    n, problem = parse_uint64(rv)
    if problem:
        # Upstream: APIObjectVersioner.ObjectResourceVersion's strconv error, which reaches
        # the client as a 500; it is the client's mistake, so a 400 with the same text.
        raise errors.BadRequest(problem)
    return n
