"""A typed client for one resource: get, list, watch, create, update, patch, delete, and the
status/scale/binding subresources.

Upstream: client-go's generated typed clients (kubernetes/typed/apps/v1/deployment.go) on top
of rest.Request. Objects are the generated msgspec Structs (kubeplane.api.types); a non-2xx
answer raises the api.errors class its Status names (NotFound, Conflict, Invalid, ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Generic, Literal, TypeVar, cast

import msgspec
import orjson

from ..api import errors, types
from ..api.resources import ResourceInfo, lookup
from .transport import RawResponse, Transport

if TYPE_CHECKING:
    from ..api.types import autoscaling_v1

T = TypeVar("T")

PATCH_CONTENT_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
PatchType = Literal["strategic", "merge", "json", "apply"]


@dataclass(slots=True)
class ObjectList(Generic[T]):
    items: list[T]
    resource_version: str
    continue_: str = ""


@dataclass(slots=True)
class Event(Generic[T]):
    """One watch event: ADDED, MODIFIED, DELETED or BOOKMARK (obj then carries only metadata)."""

    type: str
    obj: T
    resource_version: str


class _RawWatchEvent(msgspec.Struct):
    type: str
    object: msgspec.Raw


_WATCH_EVENT = msgspec.json.Decoder(_RawWatchEvent)


class _TypedWatchEvent(msgspec.Struct, Generic[T]):
    type: str
    object: T


_TYPED_WATCH_EVENTS: dict[Any, msgspec.json.Decoder[Any]] = {}


def _typed_watch_event(type_: Any) -> msgspec.json.Decoder[Any]:
    """The decoder of a watch event whose object is a type_: the line in one pass, where the
    raw event and then its object would scan the object's bytes twice (~30 % of a pod event's
    decoding)."""
    dec = _TYPED_WATCH_EVENTS.get(type_)
    if dec is None:
        dec = _TYPED_WATCH_EVENTS[type_] = msgspec.json.Decoder(_TypedWatchEvent[type_])
    return dec


def raise_for_status(resp: RawResponse) -> None:
    if resp.status < 300:
        return
    try:
        st = orjson.loads(resp.body)
    except orjson.JSONDecodeError:
        st = None
    if isinstance(st, dict) and st.get("kind") == "Status":
        raise errors.StatusError.from_status(st)
    raise errors.StatusError(resp.status, "", resp.body.decode(errors="replace")[:1000])


_ADDED_LINE = b'{"type":"ADDED"'
# The fields of a kind whose spec a watch can hand over (_SpecSharing): every top-level kind
# with a spec has these, and only these.
_SPEC_KIND_FIELDS = ("api_version", "kind", "metadata", "spec", "status")


class _SpecSharing:
    """One watch stream's decoding that hands an unchanged spec over (ResourceClient.watch's
    share_unchanged_specs): a MODIFIED or DELETED event's object is decoded with its spec left
    as JSON (msgspec.Raw, the bytes skipped over), and when those bytes are the ones of the
    spec last decoded for that object (by uid) in this stream, the object gets that spec,
    otherwise the bytes are decoded (and kept for the next event). An ADDED event is decoded as
    it is, in one pass (its spec usually changes next: a pod's binding), and its spec is
    compared decoded (==) with the next event's, as the informer compared every update before.

    Equal bytes decode to equal specs, so only who holds the spec changes. A status write keeps
    the stored spec's bytes as they are (storage stamp, KeyValue.spec_at), so every status
    update of a pod comes with the very same spec bytes. A pod's 1.2 KB spec is ~33k of the
    ~82k instructions of decoding its watch line; skipped and compared it is ~1.6k, and handlers
    that compare the two specs of an update (the kubelet's needs_sync, the scheduler's cache)
    find the same object at once (see pod_watch_bench.py). Upstream decodes each event's object
    afresh; the handlers see equal objects either way.
    """

    def __init__(self, type_: Any, typed: msgspec.json.Decoder[Any], raw_event: msgspec.json.Decoder[Any],
                 spec: msgspec.json.Decoder[Any]) -> None:
        self.type = type_
        self.typed = typed
        self.raw_event = raw_event
        self.spec = spec
        # uid -> (its last spec's JSON, or None after an ADDED event; that spec decoded)
        self.last: dict[str, tuple[msgspec.Raw | None, Any]] = {}

    @classmethod
    def of(cls, type_: Any) -> _SpecSharing | None:
        """A fresh sharing decoder for a stream of type_, None for a kind without a spec."""
        if type_ not in _SPEC_SHARING_DECODERS:
            _SPEC_SHARING_DECODERS[type_] = _spec_sharing_decoders(type_)
        decoders = _SPEC_SHARING_DECODERS[type_]
        return None if decoders is None else cls(type_, _typed_watch_event(type_), *decoders)

    def decode(self, line: bytes) -> Any:
        """The event of line (a _TypedWatchEvent); ERROR events keep their object as decoded."""
        if line.startswith(_ADDED_LINE):
            ev = self.typed.decode(line)
            meta, spec = ev.object.metadata, ev.object.spec
            if spec is not None and meta is not None and meta.uid:
                self.last[meta.uid] = (None, spec)
            return ev
        ev = self.raw_event.decode(line)
        if ev.type == "ERROR":
            return ev
        raw = ev.object
        spec_json, meta = raw.spec, raw.metadata
        spec = None
        if spec_json is not None:
            uid: str = meta.uid if meta is not None else ""
            last = self.last.get(uid) if uid else None
            if last is not None and last[0] is not None and last[0] == spec_json:
                spec = last[1]
            else:
                spec = self.spec.decode(spec_json)
                if last is not None and last[0] is None and spec == last[1]:
                    spec = last[1]                               # as the ADDED event's
                if uid and ev.type != "DELETED":
                    self.last[uid] = (spec_json.copy(), spec)    # the spec's bytes, not the line's
            if last is not None and ev.type == "DELETED":
                del self.last[uid]
        ev.object = self.type(api_version=raw.api_version, kind=raw.kind, metadata=meta, spec=spec,
                              status=raw.status)
        return ev


_SPEC_SHARING_DECODERS: dict[Any, tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]] | None] = {}


def _spec_sharing_decoders(type_: Any) -> tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]] | None:
    """The decoders of a _SpecSharing: the event with its object's spec as JSON (a subclass of
    type_ whose spec is a msgspec.Raw), and the spec. None unless type_ is a kind with a spec."""
    if not (isinstance(type_, type) and issubclass(type_, msgspec.Struct)):
        return None
    fields = {f.name: f for f in msgspec.structs.fields(type_)}
    if tuple(fields) != _SPEC_KIND_FIELDS:
        return None
    raw_type = msgspec.defstruct(f"{type_.__name__}RawSpec", [("spec", msgspec.Raw, None)], bases=(type_,))
    return (msgspec.json.Decoder(_TypedWatchEvent[raw_type]),        # type: ignore[valid-type]
            msgspec.json.Decoder(fields["spec"].type))


def _encode(obj: Any) -> bytes:
    return obj if isinstance(obj, bytes) else (orjson.dumps(obj) if isinstance(obj, (dict, list)) else types.encode(obj))


def _validation(obj: Any) -> str:
    """A typed object cannot carry unknown or duplicate fields (msgspec encodes only known
    ones), so the server's field walk would find nothing: ask it to skip the walk."""
    return "Ignore" if isinstance(obj, types.Struct) else ""


class ResourceClient(Generic[T]):
    """Verbs on one resource in one namespace ("" for cluster-scoped or all namespaces)."""

    def __init__(self, transport: Transport, ri: ResourceInfo, namespace: str = "") -> None:
        self._bind(transport, ri, namespace)
        self.type = cast("type[T]", types.kind_type(ri.api_version, ri.kind))
        # Create-only reviews (TokenReview, SubjectAccessReview, ...) have no List kind.
        self.list_type = types.list_type(ri.api_version, ri.kind) if "list" in ri.verbs else None

    def _bind(self, transport: Transport, ri: ResourceInfo, namespace: str) -> None:
        """Transport, resource and path: what every client of a resource has, typed or not
        (MetadataClient)."""
        self.transport = transport
        # The in-process transport takes request objects as they are (Request.obj): no JSON.
        self.in_process = bool(getattr(transport, "accepts_objects", False))
        self.ri = ri
        self.namespace = namespace if ri.namespaced else ""
        base = "/api/" + ri.version if not ri.group else f"/apis/{ri.group}/{ri.version}"
        ns = f"/namespaces/{self.namespace}" if self.namespace else ""
        self.path = f"{base}{ns}/{ri.plural}"

    def _decode(self, body: bytes) -> T:
        return types.decode(body, self.type)

    def _body(self, obj: Any) -> bytes | dict[str, Any]:
        """What a create/update sends: JSON bytes, or over the in-process transport a typed
        object's dict (a fresh one: the server takes it over). The server then neither parses
        JSON nor walks the object for wrongly typed or unknown fields: the in-process components
        are part of the server and build their objects in code, so a wrongly typed field would be
        our bug, and the fake clientset, which keeps JSON bytes, makes every unit test of a
        component go through the server's full checks. Merge and strategic patches travel the
        same way (copied: the server stores their nested values)."""
        if isinstance(obj, types.Struct) and self.in_process:
            return types.to_dict(obj)
        return _encode(obj)

    async def _call(self, method: str, path: str, query: dict[str, str] | None = None,
                    body: bytes | dict[str, Any] | None = None, content_type: str = "application/json") -> bytes:
        resp = await self.transport.request(method, path, query, body, content_type)
        raise_for_status(resp)
        return resp.body

    async def get(self, name: str) -> T:
        return self._decode(await self._call("GET", f"{self.path}/{name}"))

    async def list(self, *, label_selector: str = "", field_selector: str = "", limit: int = 0,
                   continue_: str = "", resource_version: str = "") -> ObjectList[T]:
        q = _query(labelSelector=label_selector, fieldSelector=field_selector, limit=str(limit) if limit else "",
                   resourceVersion=resource_version, **{"continue": continue_})
        lst: Any = types.decode(await self._call("GET", self.path, q), cast("type[Any]", self.list_type))
        meta = lst.metadata
        return ObjectList(list(lst.items or []), meta.resource_version or "", meta.continue_ or "")

    async def watch(self, *, resource_version: str = "", label_selector: str = "", field_selector: str = "",
                    timeout_seconds: int | None = None, allow_watch_bookmarks: bool = False,
                    send_initial_events: bool = False, share_unchanged_specs: bool = False) -> AsyncIterator[Event[T]]:
        """Stream events; a 410 (or any ERROR event) is raised as its StatusError.

        share_unchanged_specs: an object whose spec's JSON is that of the object's previous
        event in this stream gets that event's spec object instead of a decoded copy
        (_SpecSharing), for a caller that never modifies the objects (an informer)."""
        q = _query(watch="true", resourceVersion=resource_version, labelSelector=label_selector,
                   fieldSelector=field_selector,
                   timeoutSeconds=str(timeout_seconds) if timeout_seconds is not None else "",
                   allowWatchBookmarks="true" if allow_watch_bookmarks else "",
                   sendInitialEvents="true" if send_initial_events else "",
                   resourceVersionMatch="NotOlderThan" if send_initial_events else "")
        typed = _typed_watch_event(self.type)
        sharing = _SpecSharing.of(self.type) if share_unchanged_specs else None
        async for line in self.transport.stream(self.path, q):
            # One pass for the event and its object; what does not decode so (an ERROR event,
            # a plain Status, an object that is not a T) is read again step by step below, whose
            # errors are the caller's.
            try:
                ev: Any = typed.decode(line) if sharing is None else sharing.decode(line)
            except msgspec.ValidationError:
                ev = None
            if ev is not None and ev.type != "ERROR":
                obj = ev.object
            else:
                try:
                    ev = _WATCH_EVENT.decode(line)    # the object stays raw
                except msgspec.ValidationError:       # the stream never started: a plain Status
                    raise errors.StatusError.from_status(orjson.loads(line)) from None
                if ev.type == "ERROR":
                    raise errors.StatusError.from_status(msgspec.json.decode(ev.object))
                obj = types.decode(ev.object, self.type)
            meta = getattr(obj, "metadata", None)
            yield Event(ev.type, obj, (meta.resource_version if meta else None) or "")

    async def create(self, obj: T | dict[str, Any], *, field_manager: str = "", dry_run: bool = False) -> T:
        q = _query(fieldManager=field_manager, dryRun="All" if dry_run else "", fieldValidation=_validation(obj))
        return self._decode(await self._call("POST", self.path, q, self._body(obj)))

    async def update(self, obj: T, *, field_manager: str = "") -> T:
        name = types.object_name(obj).name
        q = _query(fieldManager=field_manager, fieldValidation=_validation(obj))
        return self._decode(await self._call("PUT", f"{self.path}/{name}", q, self._body(obj)))

    async def update_status(self, obj: T) -> T:
        name = types.object_name(obj).name
        q = _query(fieldValidation=_validation(obj))
        return self._decode(await self._call("PUT", f"{self.path}/{name}/status", q, self._body(obj)))

    async def update_approval(self, obj: T) -> T:
        """PUT certificatesigningrequests/<name>/approval (client-go's UpdateApproval)."""
        name = types.object_name(obj).name
        return self._decode(await self._call("PUT", f"{self.path}/{name}/approval", None, self._body(obj)))

    async def patch(self, name: str, patch: Any, patch_type: PatchType = "strategic", *, subresource: str = "",
                    field_manager: str = "", force: bool = False) -> T:
        return self._decode(await self.patch_raw(name, patch, patch_type, subresource=subresource,
                                                 field_manager=field_manager, force=force))

    async def patch_raw(self, name: str, patch: Any, patch_type: PatchType = "strategic", *, subresource: str = "",
                        field_manager: str = "", force: bool = False, handed_over: bool = False) -> bytes:
        """patch, answering the response body undecoded (client-go's Do().Raw()): for a caller
        that does not read the patched object (the kubelet's status writes), which then
        costs no decoding of the whole object.

        In process a merge or strategic patch goes as a dict, which the server keeps parts of
        (the stored object takes the patch's lists and values): a copy, unless the caller hands
        it over (`handed_over`): the patch was built for this call and neither it nor any value
        in it is ever changed afterwards, by the caller or by whatever shares those values (the
        status manager's patches: values it keeps as its own immutable record of the status)."""
        path = f"{self.path}/{name}" + (f"/{subresource}" if subresource else "")
        q = _query(fieldManager=field_manager, force="true" if force else "") if field_manager or force else None
        if isinstance(patch, dict) and patch_type != "apply" and self.in_process:
            body: bytes | dict[str, Any] = patch if handed_over else orjson.loads(orjson.dumps(patch))
        else:
            body = _encode(patch)
        return await self._call("PATCH", path, q, body, PATCH_CONTENT_TYPES[patch_type])

    async def delete(self, name: str, *, propagation_policy: str | None = None,
                     grace_period_seconds: int | None = None, preconditions: dict[str, str] | None = None) -> None:
        opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            opts["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            opts["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            opts["preconditions"] = dict(preconditions)
        # In process the options go as the dict they are (a fresh one: the server takes it over),
        # as a create's object does: the server does not parse and type-check their JSON; and
        # the answer's body, which this method does not return, need not be made
        # (InProcessTransport.request_unread: errors still come with their Status).
        path = f"{self.path}/{name}"
        if self.in_process and (unread := getattr(self.transport, "request_unread", None)) is not None:
            raise_for_status(await unread("DELETE", path, None, opts))
            return
        await self._call("DELETE", path, None, opts if self.in_process else orjson.dumps(opts))

    async def get_scale(self, name: str) -> autoscaling_v1.Scale:
        from ..api.types import autoscaling_v1
        return types.decode(await self._call("GET", f"{self.path}/{name}/scale"), autoscaling_v1.Scale)

    async def update_scale(self, name: str, scale: autoscaling_v1.Scale | dict[str, Any]) -> autoscaling_v1.Scale:
        from ..api.types import autoscaling_v1
        return types.decode(await self._call("PUT", f"{self.path}/{name}/scale", None, _encode(scale)),
                            autoscaling_v1.Scale)

    async def bind(self, name: str, node_name: str, *, uid: str = "") -> None:
        """pods/binding: assign the pod to a node (the scheduler's write)."""
        meta: dict[str, Any] = {"name": name, "namespace": self.namespace}
        if uid:
            meta["uid"] = uid
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        # In process, the Binding goes as the dict (Request.obj, fresh: the server takes it
        # over), as a typed create does (_body): built here, it needs no JSON parse or typed
        # decode (create_binding trusts an in-process binding's decoded body).
        await self._call("POST", f"{self.path}/{name}/binding", None, body if self.in_process else orjson.dumps(body))


class GroupClient:
    """One group-version's resources by plural, for code that picks the resource at run time
    (the garbage collector, namespace deletion). The generated clients (clientset.py) subclass it
    with one typed accessor per resource: `.deployments(ns)`, `.nodes()`."""

    def __init__(self, transport: Transport, group: str, version: str) -> None:
        self.transport, self.group, self.version = transport, group, version

    def resource(self, plural: str, namespace: str = "") -> ResourceClient[Any]:
        ri = lookup(self.group, self.version, plural)
        if ri is None:
            raise KeyError(f"no resource {plural} in {self.group or 'core'}/{self.version}")
        return ResourceClient(self.transport, ri, namespace)


def _query(**params: str) -> dict[str, str]:
    return {k: v for k, v in params.items() if v}
