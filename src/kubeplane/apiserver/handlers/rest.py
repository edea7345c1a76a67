"""The REST verbs on a resource: get, list, create, update, patch, delete, deletecollection.

Upstream: apiserver/pkg/endpoints/handlers/{get,create,update,patch,delete}.go. A handler
parses the request (decode, patch, options), hands the object to the generic store
(registry/store.py, registry/deletion.py: defaulting, admission, strategy, validation,
storage) and encodes the answer. A failure at any step raises an api.errors StatusError and
nothing is written.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.resources import ResourceInfo
from .. import admission, codec, objects
from ..registry import deletion, store
from ..objects import Obj
from ..registry import resource_definition, strategy_for
from ..request import Request, Response
from . import common

if TYPE_CHECKING:
    from ..server import APIServer

MERGE_PATCH = "application/merge-patch+json"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")
MAX_PATCH_RETRIES = 5


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
    return common.object_response(api, req, ri, kv.obj, kv.value)


async def list_(api: APIServer, req: Request, ri: ResourceInfo, ns: str) -> Response:
    """Upstream: ListResource (handlers/get.go) with label/field selectors and limit/continue."""
    sel = common.Selectors.from_request(req, ri)
    prefix = ri.prefix + (f"{ns}/" if ri.namespaced and ns else "")
    common.check_list_resource_version(api, req)
    kvs, rev = await api.storage.list(prefix)
    start, rev = common.parse_continue(req.query.get("continue", ""), rev, api)
    limit = common.parse_limit(req.query.get("limit", ""))
    items, cont, remaining = common.page(kvs, sel, start, limit, prefix)
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
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        if subresource or not strategy_for(ri).allow_create_on_update:
            raise errors.NotFound(ri.group, ri.plural, name)
        stored, value = await store.create(api, common.write_options(req), ri, ns, new, warnings,
                                           heavy=common.is_heavy(req))
        return common.object_response(api, req, ri, stored, value, status=201, warnings=warnings)
    expected = common.precondition_revision(new, kv.mod_revision)
    stored, value = await store.update(api, common.write_options(req), ri, new, kv.obj, expected, subresource,
                                       warnings, heavy=common.is_heavy(req, kv))
    return common.object_response(api, req, ri, stored, value, warnings=warnings)


async def patch(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str,
                subresource: str = "") -> Response:
    """Upstream: PatchResource (handlers/patch.go): apply the patch to the current object and
    store the result, retrying on a conflict unless the patch itself pins a resourceVersion."""
    patch_type = codec.media_type(req.headers)
    if patch_type not in PATCH_TYPES:
        raise errors.UnsupportedMediaType(patch_type, list(PATCH_TYPES))
    if len(req.body) > codec.MAX_BODY:
        raise errors.RequestEntityTooLarge()
    key = ri.key(ns, name)
    for attempt in range(MAX_PATCH_RETRIES):
        kv = await api.storage.get(key)
        try:
            return await _patch_once(api, req, ri, ns, name, subresource, patch_type, kv)
        except errors.Conflict as err:
            # Retry only a lost race with another writer (the optimistic lock), never an apply
            # conflict between field managers, nor a patch that pinned its own resourceVersion.
            lost_race = errors.OPTIMISTIC_LOCK_MSG in err.message
            if not lost_race or attempt == MAX_PATCH_RETRIES - 1 or common.patch_pins_revision(req, patch_type):
                raise
    raise AssertionError("unreachable")


async def _patch_once(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str,
                      subresource: str, patch_type: str, kv: Any) -> Response:
    from ..patch import json_merge_patch

    warnings: list[str] = []
    if kv is not None and req.obj is not None and _merges_onto_stored(ri, subresource, patch_type):
        new = json_merge_patch(kv.obj, req.obj)
        if new.get("metadata") is kv.obj.get("metadata"):
            new["metadata"] = dict(new["metadata"])     # the handlers below write its top level
        return await _store_patched(api, req, ri, name, subresource, patch_type, kv, new, warnings)
    heavy = common.is_heavy(req, kv)
    if heavy:
        new = await common.in_worker(_patched, api, req, ri, name, patch_type, kv, warnings)
    else:
        new = _patched(api, req, ri, name, patch_type, kv, warnings)
    if kv is None:                  # server-side apply creates
        new.setdefault("metadata", {})["name"] = name
        stored, value = await store.create(api, common.write_options(req), ri, ns, common.input_obj(ri, new), warnings,
                                           applied=True, heavy=common.is_heavy(req))
        return common.object_response(api, req, ri, stored, value, status=201, warnings=warnings)
    return await _store_patched(api, req, ri, name, subresource, patch_type, kv, new, warnings, heavy=heavy)


def _patched(api: APIServer, req: Request, ri: ResourceInfo, name: str, patch_type: str, kv: Any,
             warnings: list[str]) -> Obj:
    """The patch applied to the stored object (None: server-side apply creates), decoded as
    upstream decodes a patch result into the typed object (common.check_patched_fields).

    Patches apply to the object as the request's API version shows it (events.k8s.io Events
    are stored as core Events); the caller stores the result back in the stored form.
    """
    from ..patch import apply_patch, server_side_apply

    live = common.output_obj(ri, objects.mutable_copy(kv)) if kv else None
    try:
        if patch_type == "application/apply-patch+yaml":
            # Not a typed decode: undeclared fields are server_side_apply's to refuse.
            config, found = codec.decode_object(req.headers, req.body, ri, common.field_validation(req),
                                                prune_unknown=False)
            warnings.extend(found)
            objects.check_type_meta(config, ri)
            return server_side_apply(live, config, ri.definition, manager=req.query.get("fieldManager", ""),
                                     force=req.flag("force"), api_version=ri.api_version, now=api.now())
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


async def _store_patched(api: APIServer, req: Request, ri: ResourceInfo, name: str, subresource: str,
                         patch_type: str, kv: Any, new: Obj, warnings: list[str], *, heavy: bool = False) -> Response:
    objects.check_type_meta(new, ri)
    objects.check_name(new, name)
    new = common.input_obj(ri, new)
    expected = common.precondition_revision(new, kv.mod_revision)
    stored, value = await store.update(api, common.write_options(req), ri, new, kv.obj, expected, subresource,
                                       warnings, applied=patch_type == "application/apply-patch+yaml", heavy=heavy)
    return common.object_response(api, req, ri, stored, value, warnings=warnings)


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
    await api.admission.admit(store.attributes(common.write_options(req), ri, admission.Operation.DELETE, ns, name))
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound(ri.group, ri.plural, name)
    result, deleted = await deletion.delete(api, req.user, ri, kv, opts)
    if deleted and not deletion.returns_deleted_object(ri):
        return Response(200, codec.dumps(objects.status_success(ri, name, kv.obj["metadata"].get("uid", ""))))
    # Upstream answers 202 when cascading deletion was asked for the old way and is still pending.
    status = 202 if not deleted and opts.orphan_dependents is False else 200
    return common.object_response(api, req, ri, result, None, status=status)


async def delete_collection(api: APIServer, req: Request, ri: ResourceInfo, ns: str) -> Response:
    """Upstream: Store.DeleteCollection — list with the selectors, delete each (one already gone
    is skipped, any other failure fails the request) and answer the list as it was listed.
    The handler admits the request once (no name); each item's delete runs the validating
    admission on the item (registry/deletion.delete), as upstream's deleteValidation."""
    opts = common.delete_options(req)
    sel = common.Selectors.from_request(req, ri)
    await api.admission.admit(store.attributes(common.write_options(req), ri, admission.Operation.DELETE, ns, ""))
    prefix = ri.prefix + (f"{ns}/" if ri.namespaced and ns else "")
    kvs, rev = await api.storage.list(prefix)
    items = []
    for kv in kvs:
        if not sel.matches(kv.obj):
            continue
        current = await api.storage.get(kv.key)
        if current is None:
            continue
        try:
            await deletion.delete(api, req.user, ri, current, opts)
        except errors.NotFound:
            continue
        items.append(common.output_bytes(ri, kv.obj, kv.value))
    return Response(200, objects.list_body(ri, items, rev))
