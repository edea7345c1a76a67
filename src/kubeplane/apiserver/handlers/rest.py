"""The REST verbs on a resource: get, list, create, update, patch, delete, deletecollection.

Upstream: apiserver/pkg/endpoints/handlers/{get,create,update,patch,delete}.go and the
generic registry store (apiserver/pkg/registry/generic/registry/store.go). A create goes
decode -> default -> prepare (strategy) -> admit -> validate -> admission validate -> store;
an update (patch, apply and /status writes too) decode/patch -> default -> admit -> prepare ->
validate -> admission validate -> store; a delete admit -> admission validate -> delete (the
admission chain runs on every write: admission.Attributes says which). A failure at any step
raises an api.errors StatusError and nothing is written.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.resources import ResourceInfo
from .. import admission, codec, objects
from ..objects import Obj, storage_errors
from ..registry import resource_definition, strategy_for
from ..request import Request, Response
from . import common, deletion

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
    stored, value = await create_object(api, req, ri, ns, obj, warnings, heavy=heavy)
    return common.object_response(api, req, ri, stored, value, status=201, warnings=warnings)


def _prepare_create(api: APIServer, ri: ResourceInfo, ns: str, obj: Obj) -> None:
    """Default the new object, fill its system metadata, let the strategy prepare it."""
    common.set_defaults(obj)
    objects.fill_create_meta(obj, ri, ns, api.now())
    strategy_for(ri).prepare_for_create(obj)


def _validate_create(api: APIServer, req: Request, ri: ResourceInfo, obj: Obj, warnings: list[str],
                     applied: bool, heavy: bool) -> None:
    """Validate, record ownership and check the size of a new object (nothing is written yet).

    Only a heavy request can make an object over the store's limit (objects.MAX_REQUEST_BYTES):
    below common.OFFLOAD_BYTES of body and stored object, defaulting and managedFields would
    have to grow it 24-fold. The worst we know is a pod of bare `{"name":"a1","image":"b"}`
    containers created with a fieldManager: a 60 KB body is stored as 580 KB (9.7-fold).
    """
    common.validate_create(ri, obj, warnings)
    if not applied:
        common.record_managed_fields(api, req, ri, None, obj)
    if heavy and not common.dry_run(req):
        objects.check_stored_size(obj, ri, drop_managed_fields=not applied)


# A generated name that is taken is replaced and the create tried again, up to 8 attempts in all:
# enough for a million names per generateName prefix with a 0.1 % chance of any conflict (without
# retries the chance is 50 % at ~4,500 names — a 10,000-replica Deployment would hit it).
# Upstream: maxNameGenerationCreateAttempts, createWithGenerateNameRetry (registry/store.go;
# the RetryGenerateName feature, on by default since 1.31).
MAX_NAME_GENERATION_CREATE_ATTEMPTS = 8


async def create_object(api: APIServer, req: Request, ri: ResourceInfo, ns: str, obj: Obj,
                        warnings: list[str], *, applied: bool = False,
                        heavy: bool | None = None) -> tuple[Obj, bytes | None]:
    """Default, prepare, admit, validate and store a new object; returns what was stored and
    its encoding (None for a dry run), which a response can send as it is.

    `applied`: server-side apply already recorded its managedFields entry. `heavy`: the CPU
    work goes to the worker thread (default: common.is_heavy(req)).
    """
    if heavy is None:
        heavy = common.is_heavy(req)
    requested_name = objects.object_name(obj)
    if heavy:
        await common.in_worker(_prepare_create, api, ri, ns, obj)
    else:
        _prepare_create(api, ri, ns, obj)
    strategy_for(ri).prepare_for_create_by(obj, req.user)
    attrs = attributes(req, ri, admission.Operation.CREATE, ns, requested_name, obj)
    await api.admission.admit(attrs)
    if heavy:
        await common.in_worker(_validate_create, api, req, ri, obj, warnings, applied, heavy)
    else:
        _validate_create(api, req, ri, obj, warnings, applied, heavy)
    await api.admission.validate(attrs)
    if common.dry_run(req):
        return obj, None
    for attempt in range(1, MAX_NAME_GENERATION_CREATE_ATTEMPTS + 1):
        name = objects.object_name(obj)
        try:
            with storage_errors(ri, name):
                kv = await api.storage.create(ri.key(ns, name), obj)
            return kv.obj, kv.value
        except errors.AlreadyExists as e:
            if not requested_name and attempt < MAX_NAME_GENERATION_CREATE_ATTEMPTS:
                # Only the name changes between attempts (a generated name always has the
                # same length), so what was admitted and validated still holds.
                obj["metadata"]["name"] = objects.generate_name(obj["metadata"]["generateName"])
                continue
            # Upstream: Store.Create tells a client racing a pending deletion why the name is taken.
            existing = await api.storage.get(ri.key(ns, name))
            if existing is not None and existing.obj["metadata"].get("deletionTimestamp"):
                e.message = f"object is being deleted: {e.message}"
                e.args = (e.message,)
            raise
    raise AssertionError("unreachable")


def attributes(req: Request, ri: ResourceInfo, op: admission.Operation, ns: str, name: str, obj: Obj | None = None,
               old: Obj | None = None, subresource: str = "", kind: str = "") -> admission.Attributes:
    """What the admission chain sees of a request on ri (kind: a subresource's own, e.g. Scale)."""
    return admission.Attributes(op, ri.group, ri.version, ri.plural, kind or ri.kind, ns, name, obj, old,
                                subresource, common.dry_run(req), req.user)


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
        stored, value = await create_object(api, req, ri, ns, new, warnings)
        return common.object_response(api, req, ri, stored, value, status=201, warnings=warnings)
    expected = common.precondition_revision(new, kv.mod_revision)
    stored, value = await update_object(api, req, ri, new, kv.obj, expected, subresource, warnings,
                                        heavy=common.is_heavy(req, kv))
    return common.object_response(api, req, ri, stored, value, warnings=warnings)


async def update_object(api: APIServer, req: Request, ri: ResourceInfo, new: Obj, old: Obj,
                        expected: int, subresource: str, warnings: list[str], *,
                        applied: bool = False, heavy: bool = False, admit: bool = True) -> tuple[Obj, bytes | None]:
    """Default, admit, prepare, validate and store new over old (at revision expected); returns
    the result and, when it was stored, its encoding. `heavy`: do the CPU work in the worker
    thread (common.is_heavy of the request and the stored object). `admit`: run the admission
    chain (UPDATE of ri or its subresource); False when the caller admitted the request itself
    (a /scale write admits the Scale).

    A write that changes nothing is not stored (the resourceVersion stays), as upstream; an
    update that removes the last finalizer of an object being deleted deletes it.
    """
    if str(expected) != old["metadata"].get("resourceVersion"):
        # Upstream: Store.Update compares before anything else, so a stale no-op is a conflict too.
        raise errors.Conflict(ri.group, ri.plural, objects.object_name(old), errors.OPTIMISTIC_LOCK_MSG)
    if heavy:
        await common.in_worker(common.default_update, new, old, subresource)
    else:
        common.default_update(new, old, subresource)
    name = objects.object_name(new)
    attrs = None
    if admit:
        attrs = attributes(req, ri, admission.Operation.UPDATE, new["metadata"].get("namespace", ""), name,
                           new, old, subresource)
        await api.admission.admit(attrs)
    if heavy:
        await common.in_worker(_prepare_update, api, req, ri, new, old, subresource, warnings, applied, heavy)
    else:
        _prepare_update(api, req, ri, new, old, subresource, warnings, applied, heavy)
    if attrs is not None:
        await api.admission.validate(attrs)
    if new == old:
        return old, None
    if common.dry_run(req):
        return new, None
    key = ri.key(new["metadata"].get("namespace", ""), name)
    with storage_errors(ri, name):
        if deletion.should_delete_during_update(new, old, ri):
            await api.storage.delete(key, expected)
            return new, None
        kv = await api.storage.update(key, new, expected)
    return kv.obj, kv.value


def _prepare_update(api: APIServer, req: Request, ri: ResourceInfo, new: Obj, old: Obj, subresource: str,
                    warnings: list[str], applied: bool, heavy: bool) -> None:
    """Prepare (strategy), validate, record ownership and check the size of new (a heavy
    request's only: see _validate_create); new was defaulted and admitted."""
    strategy = strategy_for(ri)
    if subresource == "status":
        strategy.prepare_for_status_update(new, old)
    elif subresource:
        strategy.prepare_for_subresource_update(subresource, new, old)
    else:
        strategy.prepare_for_update(new, old)
    # The store compares revisions itself; validation sees the stored one, as upstream's does.
    new["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
    common.validate_update(ri, new, old, subresource, warnings)
    if not applied:
        common.record_managed_fields(api, req, ri, old, new, subresource)
    if heavy and new != old and not common.dry_run(req):
        objects.check_stored_size(new, ri, drop_managed_fields=not applied)


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
        stored, value = await create_object(api, req, ri, ns, common.input_obj(ri, new), warnings, applied=True)
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
    stored, value = await update_object(api, req, ri, new, kv.obj, expected, subresource, warnings,
                                        applied=patch_type == "application/apply-patch+yaml", heavy=heavy)
    return common.object_response(api, req, ri, stored, value, warnings=warnings)


def _merges_onto_stored(ri: ResourceInfo, subresource: str, patch_type: str) -> bool:
    """Whether an in-process merge patch may apply to the stored object itself, not a copy.

    merge_patch never changes its target: it copies each dict on the patch's paths and shares
    every other value with the stored object. The write path after it only assigns top-level
    and metadata keys (type meta, system metadata, strategy, resourceVersion, managedFields;
    metadata is copied for it) — except defaulting, which fills nested values in place, and
    the events.k8s.io conversion. So this holds where neither runs: a /status write of a kind
    whose defaults are all under spec (the spec is the stored one), or a kind without any
    defaults. Saves decoding the whole stored object (a pod's status patch: about a tenth).
    """
    if patch_type != MERGE_PATCH or ri.group == "events.k8s.io":
        return False
    d = resource_definition(ri)
    if subresource == "status":
        return d.defaulter is None or not d.defaults_outside_spec
    return not subresource and d.defaulter is None


async def delete(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    """Upstream: DeleteResource (handlers/delete.go) + Store.Delete."""
    opts = deletion.DeleteOptions.from_request(req)
    # Upstream: the delete handler admits (mutating) before the store reads the object.
    await api.admission.admit(attributes(req, ri, admission.Operation.DELETE, ns, name))
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound(ri.group, ri.plural, name)
    result, deleted = await deletion.delete_object(api, req, ri, kv, opts)
    if deleted and not deletion.returns_deleted_object(ri):
        return Response(200, codec.dumps(objects.status_success(ri, name, kv.obj["metadata"].get("uid", ""))))
    # Upstream answers 202 when cascading deletion was asked for the old way and is still pending.
    status = 202 if not deleted and opts.orphan_dependents is False else 200
    return common.object_response(api, req, ri, result, None, status=status)


async def delete_collection(api: APIServer, req: Request, ri: ResourceInfo, ns: str) -> Response:
    """Upstream: Store.DeleteCollection — list with the selectors, delete each (one already gone
    is skipped, any other failure fails the request) and answer the list as it was listed.
    The handler admits the request once (no name); each item's delete runs the validating
    admission on the item (deletion.delete_object), as upstream's deleteValidation."""
    opts = deletion.DeleteOptions.from_request(req)
    sel = common.Selectors.from_request(req, ri)
    await api.admission.admit(attributes(req, ri, admission.Operation.DELETE, ns, ""))
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
            await deletion.delete_object(api, req, ri, current, opts)
        except errors.NotFound:
            continue
        items.append(common.output_bytes(ri, kv.obj, kv.value))
    return Response(200, objects.list_body(ri, items, rev))
