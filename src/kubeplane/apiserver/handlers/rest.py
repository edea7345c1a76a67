"""The REST verbs on a resource: get, list, create, update, patch, delete, deletecollection.

Upstream: apiserver/pkg/endpoints/handlers/{get,create,update,patch,delete}.go. A handler
parses the request (decode, options), hands the object to the generic store
(registry/store.py, registry/deletion.py: defaulting, admission, strategy, validation,
storage) and encodes the answer; an update or a patch hands it the function that makes the
new object from the stored one (_Put, Patcher: store.UpdatedObjectInfo), and the store's
update_object reads, calls it, writes and retries. A failure at any step raises an
api.errors StatusError and nothing is written.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.resources import ResourceInfo
from ...storage.interface import KeyValue
from .. import admission, codec, objects
from ..admission import options as admission_options
from ..registry import deletion, store
from ..objects import Obj
from ..patch import apply_patch, json_merge_patch, server_side_apply
from ..registry import resource_definition, strategy_for
from ..request import Request, Response
from . import common

if TYPE_CHECKING:
    from ..registry.deletion import DeleteOptions
    from ..server import APIServer

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")


async def get(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    """Upstream: GetResource (handlers/get.go); a resourceVersion asks for an object at least
    that fresh (we serve the latest): a malformed one is 400, a future one 504, as the etcd3
    store's validateMinimumResourceVersion answers."""
    if rv := req.query.get("resourceVersion", ""):
        n, current = common.parse_resource_version(rv), api.storage.revision
        if n > current:
            raise common.too_large_resource_version(n, current)
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound(ri.group, ri.plural, name)
    kv = await common.served_kv(ri, kv)
    return common.object_response(api, req, ri, kv.obj, kv.value)


async def list_(api: APIServer, req: Request, ri: ResourceInfo, ns: str) -> Response:
    """Upstream: ListResource (handlers/get.go) with label/field selectors and limit/continue."""
    sel = common.Selectors.from_request(req, ri)
    prefix = ri.prefix + (f"{ns}/" if ri.namespaced and ns else "")
    common.check_list_resource_version(api, req)
    kvs, rev = await api.storage.list(prefix)
    if not sel.empty:                   # custom resources: selectors see the requested version
        kvs = await common.served_kvs(ri, kvs)
    start, rev = common.parse_continue(req.query.get("continue", ""), rev, api)
    limit = common.parse_limit(req.query.get("limit", ""))
    items, cont, remaining = common.page(kvs, sel, start, limit, prefix)
    if sel.empty:                       # only the page is converted
        items = await common.served_kvs(ri, items)
    if codec.wants_table(req.headers):
        objs = [common.output_obj(ri, kv.obj) for kv in items]
        cont_token = common.make_continue(cont, rev) if cont else ""
        return common.table_response(api, req, ri, objs, rev, cont_token)
    bodies = [common.output_bytes(ri, kv.obj, kv.value) for kv in items]
    cont_token = common.make_continue(cont, rev) if cont else ""
    return Response(200, objects.list_body(ri, bodies, rev, cont_token, remaining if sel.empty else None))


async def create(api: APIServer, req: Request, ri: ResourceInfo, ns: str) -> Response:
    """Upstream: createHandler (handlers/create.go) + Store.Create."""
    heavy = common.is_heavy(req)
    obj, warnings = await common.decode_object(api, req, ri, heavy)
    if resource_definition(ri).review is not None:         # TokenReview, SubjectAccessReview, ...
        from ..registry import review
        return await review.create(api, req, ri, ns, obj, warnings)
    objects.check_namespace_matches(obj, ns, ri)
    stored, value = await store.create(api, common.write_options(req), ri, ns, obj, warnings, heavy=heavy)
    return common.object_response(api, req, ri, stored, value, status=201, warnings=warnings)


async def update(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str,
                 subresource: str = "") -> Response:
    """Upstream: UpdateResource (handlers/update.go) + Store.Update."""
    new, warnings = await common.decode_object(api, req, ri, common.is_heavy(req))
    objects.check_namespace_matches(new, ns, ri)
    objects.check_name(new, name)
    stored, value, created = await store.update_object(api, common.write_options(req), ri, ns, name,
                                                       _Put(req, ri, name, subresource, new), warnings)
    return common.object_response(api, req, ri, stored, value, status=201 if created else 200, warnings=warnings)


class _Put(store.UpdatedObjectInfo):
    """An update's body, written over whatever is stored (upstream: DefaultUpdatedObjectInfo);
    it creates where the strategy allows (AllowCreateOnUpdate), never on a subresource."""
    __slots__ = ("req", "ri", "name", "subresource", "new", "heavy")

    def __init__(self, req: Request, ri: ResourceInfo, name: str, subresource: str, new: Obj) -> None:
        self.req, self.ri, self.name, self.subresource, self.new = req, ri, name, subresource, new

    async def updated_object(self, kv: KeyValue | None) -> Obj:
        if kv is None and (self.subresource or not strategy_for(self.ri).allow_create_on_update):
            raise errors.NotFound(self.ri.group, self.ri.plural, self.name)
        self.heavy = common.is_heavy(self.req, kv)
        return self.new


async def patch(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str,
                subresource: str = "", patch_types: tuple[str, ...] = PATCH_TYPES) -> Response:
    """Upstream: PatchResource (handlers/patch.go): the store applies the patch to the current
    object and stores the result (server-side apply creates a missing object), retrying on a
    conflict unless the patch itself pins a resourceVersion. `patch_types`: what the
    resource accepts (its subresources may take fewer)."""
    patch_type = codec.media_type(req.headers)
    if not getattr(ri, "strategic_merge", True):        # custom resources (ri: the registry's definition)
        patch_types = tuple(t for t in patch_types if t != STRATEGIC_MERGE_PATCH)
    if patch_type not in patch_types:
        raise errors.UnsupportedMediaType(patch_type, list(patch_types))
    if len(req.body) > codec.MAX_BODY:
        raise errors.RequestEntityTooLarge()
    common.validate_patch_options(req, patch_type)
    warnings: list[str] = []
    stored, value, created = await store.update_object(api, common.write_options(req), ri, ns, name,
                                                       Patcher(api, req, ri, name, subresource, patch_type, warnings),
                                                       warnings)
    return common.object_response(api, req, ri, stored, value, status=201 if created else 200, warnings=warnings)


class Patcher(store.UpdatedObjectInfo):
    """A patch applied to the stored object (upstream: the patcher's applyPatch, the updated
    object function it hands Store.Update)."""
    __slots__ = ("api", "req", "ri", "name", "subresource", "patch_type", "applied", "warnings", "heavy")

    def __init__(self, api: APIServer, req: Request, ri: ResourceInfo, name: str, subresource: str,
                 patch_type: str, warnings: list[str]) -> None:
        self.api, self.req, self.ri, self.name, self.subresource = api, req, ri, name, subresource
        self.patch_type, self.warnings = patch_type, warnings
        self.applied = patch_type == APPLY_PATCH

    async def updated_object(self, kv: KeyValue | None) -> Obj:
        req, ri = self.req, self.ri
        if kv is not None and req.obj is not None and _merges_onto_stored(ri, self.subresource, self.patch_type):
            self.heavy = False
            new = json_merge_patch(kv.obj, req.obj)
            if new.get("metadata") is kv.obj.get("metadata"):
                new["metadata"] = dict(new["metadata"])     # the store writes its top level
        else:
            self.heavy = heavy = common.is_heavy(req, kv)
            args = (self.api, req, ri, self.name, self.patch_type, kv, self.warnings, self.subresource)
            new = await common.in_worker(_patched, *args) if heavy else _patched(*args)
        if kv is None:                  # server-side apply creates
            new.setdefault("metadata", {})["name"] = self.name
            return common.input_obj(ri, new)
        objects.check_type_meta(new, ri)
        objects.check_name(new, self.name)
        return common.input_obj(ri, new)

    def retry_on_conflict(self) -> bool:
        return not common.patch_pins_revision(self.req, self.patch_type)


def _patched(api: APIServer, req: Request, ri: ResourceInfo, name: str, patch_type: str, kv: Any,
             warnings: list[str], subresource: str = "") -> Obj:
    """The patch applied to the stored object (None: server-side apply creates), decoded as
    upstream decodes a patch result into the typed object (common.check_patched_fields).

    Patches apply to the object as the request's API version shows it (events.k8s.io Events
    are stored as core Events); the caller stores the result back in the stored form.
    """
    live = common.output_obj(ri, objects.mutable_copy(kv)) if kv else None
    try:
        if patch_type == APPLY_PATCH:
            # Not a typed decode: undeclared fields are server_side_apply's to refuse.
            config, found = codec.decode_object(req.headers, req.body, ri, common.field_validation(req),
                                                prune_unknown=False)
            warnings.extend(found)
            objects.check_type_meta(config, ri)
            return server_side_apply(live, config, ri.definition, manager=req.query.get("fieldManager", ""),
                                     force=req.flag("force"), api_version=ri.api_version, now=api.now(),
                                     subresource=subresource)
        if live is None:
            raise errors.NotFound(ri.group, ri.plural, name)
        if req.obj is not None:     # an in-process component's patch: trusted, see Request.obj
            return apply_patch(patch_type, live, req.obj, ri.definition)
        new = apply_patch(patch_type, live, req.body, ri.definition)
    except RecursionError:          # a patch nesting deeper than our walks go
        raise errors.BadRequest(f"{ri.kind} in version {errors.go_quote(ri.version)} cannot be handled as a "
                                f"{ri.kind}: exceeded max depth") from None
    common.check_patched_fields(req, ri, new, warnings)
    return new


def _merges_onto_stored(ri: ResourceInfo, subresource: str, patch_type: str) -> bool:
    """Whether an in-process merge patch may apply to the stored object itself, not a copy.

    merge_patch never changes its target: it copies each dict on the patch's paths and shares
    every other value with the stored object. The write path after it only assigns top-level
    and metadata keys (type meta, system metadata, strategy, resourceVersion, managedFields;
    metadata is copied for it) — except defaulting, which fills nested values in place, and
    a version conversion (ResourceDefinition.from_storage). So this holds where neither runs: a /status write of a kind
    whose defaults are all under spec (the spec is the stored one), or a kind without any
    defaults. Saves decoding the whole stored object (a pod's status patch: about a tenth).
    """
    d = resource_definition(ri)
    if patch_type != MERGE_PATCH or d.from_storage is not None:
        return False
    if subresource == "status":
        return d.defaulter is None or not d.defaults_outside_spec
    return not subresource and d.defaulter is None


async def delete(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    """Upstream: DeleteResource (handlers/delete.go) + Store.Delete."""
    opts = common.delete_options(req)
    # Upstream: the delete handler admits (mutating) before the store reads the object.
    await api.admission.admit(store.attributes(common.write_options(req), ri, admission.DELETE, ns, name,
                                               options=admission_options.delete_options(opts)))
    kv, result, deleted = await _delete_current(api, req, ri, ns, name, opts)
    if deleted and not deletion.returns_deleted_object(ri):
        return Response(200, codec.dumps(objects.status_success(ri, name, kv.obj["metadata"].get("uid", ""))))
    # Upstream answers 202 when cascading deletion was asked for the old way and is still pending.
    status = 202 if not deleted and opts.orphan_dependents is False else 200
    result = await common.served_obj(ri, kv.key, result)
    if req.result_unread and req.audit is None:
        # The in-process caller reads only the status (the kubelet's final delete of a pod):
        # the deleted object's encoding (~30k instructions) would be for nobody. Metrics
        # observe no size for a DELETE; an audited request gets its body.
        return Response(status)
    return common.object_response(api, req, ri, result, None, status=status)


async def _delete_current(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str,
                          opts: DeleteOptions) -> tuple[KeyValue, Obj, bool]:
    """Read the object and delete it: (what was read, the result, whether it is gone). When
    another writer got in between (a controller's status write), again on the newer object, its
    preconditions checked again. Upstream: the etcd3 store's conditionalDelete and
    GuaranteedUpdate, which retry on the current state."""
    for attempt in range(1, store.MAX_UPDATE_ATTEMPTS + 1):
        kv = await api.storage.get(ri.key(ns, name))
        if kv is None:
            raise errors.NotFound(ri.group, ri.plural, name)
        served = await common.served_kv(ri, kv)     # custom resources: no delete where the read fails, as upstream
        try:
            result, deleted = await deletion.delete(api, req.user, ri, kv, opts, served=served.obj)
            return kv, result, deleted
        except errors.Conflict as err:
            if not store.may_retry_conflict(err, attempt):
                raise
    raise AssertionError("unreachable")


async def delete_collection(api: APIServer, req: Request, ri: ResourceInfo, ns: str) -> Response:
    """Upstream: Store.DeleteCollection — list with the selectors, delete each (one already gone
    is skipped, any other failure fails the request) and answer the list as it was listed.
    The handler admits the request once (no name); each item's delete runs the validating
    admission on the item (registry/deletion.delete), as upstream's deleteValidation."""
    opts = common.delete_options(req)
    sel = common.Selectors.from_request(req, ri)
    await api.admission.admit(store.attributes(common.write_options(req), ri, admission.DELETE, ns, "",
                                               options=admission_options.delete_options(opts)))
    prefix = ri.prefix + (f"{ns}/" if ri.namespaced and ns else "")
    kvs, rev = await api.storage.list(prefix)
    kvs = await common.served_kvs(ri, kvs)
    items = []
    for kv in kvs:
        if not sel.matches(kv.obj):
            continue
        current = await api.storage.get(kv.key)
        if current is None:
            continue
        try:
            await deletion.delete(api, req.user, ri, current, opts,
                                  served=kv.obj if current.mod_revision == kv.mod_revision else None)
        except errors.NotFound:
            continue
        items.append(common.output_bytes(ri, kv.obj, kv.value))
    return Response(200, objects.list_body(ri, items, rev))
