"""The generic store: the create, update and delete pipeline every resource shares.

create   default -> admit -> the kind's wrapper (registry/wrapper.py) -> system metadata ->
         strategy PrepareForCreate -> validate -> admission validate -> store (a generated name
         retried when taken)
update   default -> system metadata -> admit -> the kind's wrapper -> strategy PrepareForUpdate
         (or the status strategy's) -> validate -> admission validate -> store (nothing when
         unchanged; the last finalizer gone from an object being deleted deletes it)
delete   registry/deletion.py: preconditions, admission validate, graceful deletion, finalizers

update_object  read -> the handler's updated-object function (UpdatedObjectInfo: PUT's body, a
         patch or server-side apply applied to what is stored, a Scale's replicas) -> update
         (or create, where the write may create) -> a lost race retried from the newer object

Handlers (handlers/rest.py, subresources.py) decode the request, build its WriteOptions and its
UpdatedObjectInfo and call these, as upstream's patcher drives Store.Update with an
updated-object function. A failure at any step raises an api.errors StatusError and nothing is
written.
Upstream: genericregistry.Store (apiserver/pkg/registry/generic/registry/store.go) and
rest.BeforeCreate / BeforeUpdate (apiserver/pkg/registry/rest).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors
from ...api.resources import ResourceInfo
from ...storage.interface import KeyValue
from .. import admission, objects
from ..apiextensions import celvalidation
from ..admission import options as admission_options
from ..authentication.user import ANONYMOUS, UserInfo
from ..objects import Obj, storage_errors
from ..worker import in_worker
from . import scheme
from .core.service import alloc as service_alloc
from .definition import StorageCodec
from .deletion import should_delete_during_update
from .registry import resource_definition, strategy_for

if TYPE_CHECKING:
    from ..server import APIServer


@dataclass(slots=True)
class WriteOptions:
    """What the pipeline needs of a write request: its user, dryRun=All, the fieldManager
    (upstream's Create/Update/PatchOptions) and the User-Agent (the manager's name when none
    is given). handlers.common.write_options builds it from a request, once per write (not
    frozen: a frozen dataclass's __init__ costs twice as much)."""
    user: UserInfo = ANONYMOUS
    dry_run: bool = False
    field_manager: str = ""
    user_agent: str = ""
    field_validation: str = ""          # as the query gives it (admission's Create/UpdateOptions)


def default_update(new: Obj, old: Obj, subresource: str) -> None:
    """Default an update's new object and give it the stored one's system metadata (what
    admission then sees)."""
    set_defaults(new, subresource)
    objects.fill_update_meta(new, old)


def set_defaults(obj: Obj, subresource: str = "") -> None:
    """Defaulting (registry/scheme.py); a /status write's spec is the stored one, already defaulted."""
    if subresource == "status":
        scheme.set_defaults_except_spec(obj)
    else:
        scheme.set_defaults(obj)


# --- validation -----------------------------------------------------------------------------

def _invalid(ri: ResourceInfo, obj: Obj, errs: list[Any]) -> errors.Invalid:
    return errors.Invalid(ri.group, ri.kind, (obj.get("metadata") or {}).get("name", ""), errs)


def validate_create(ri: ResourceInfo, obj: Obj, warnings: list[str]) -> bytes | None:
    """Validate a new object (Invalid if it is not valid). Returns orjson.dumps(obj["spec"]) where
    the kind's validation takes it (ResourceDefinition.validate_with_spec_json: pods), for the
    write to store as it is (Storage.create's spec_json): the spec is encoded once."""
    d = resource_definition(ri)
    spec_json = None
    if d.validates_served_version:
        errs = d.validate(obj)
    elif d.validate_with_spec_json is not None and (spec_json := _spec_json(obj)) is not None:
        errs = d.validate_with_spec_json(obj, spec_json)
    else:
        errs = scheme.validate(obj)
    if errs:
        raise _invalid(ri, obj, errs)
    warnings.extend(scheme.warnings(obj))
    return spec_json


def _spec_json(obj: Obj) -> bytes | None:
    """obj's spec as orjson encodes it; None if it is not a dict or not JSON (the validators
    then find what is wrong with it)."""
    spec = obj.get("spec")
    if type(spec) is not dict:
        return None
    try:
        return orjson.dumps(spec)
    except (TypeError, orjson.JSONEncodeError):
        return None


def validate_update(ri: ResourceInfo, new: Obj, old: Obj, subresource: str, warnings: list[str]) -> None:
    d = resource_definition(ri)
    if d.validates_served_version:      # custom resources: the served version's schema
        with celvalidation.warnings(warnings):      # ratcheted CEL rule errors are warnings
            errs = d.validate_status_update(new, old) if subresource == "status" else d.validate_update(new, old)
    elif subresource == "status":
        errs = scheme.validate_status_update(new, old)
    elif subresource and (own := d.validate_subresource_update.get(subresource)):
        errs = own(new, old)
    else:
        errs = scheme.validate_update(new, old)
    if errs:
        raise _invalid(ri, new, errs)
    if subresource != "status":         # upstream: rest.BeforeUpdate, strategy.WarningsOnUpdate
        warnings.extend(d.warnings_on_update(new, old))


def record_managed_fields(api: APIServer, opts: WriteOptions, ri: ResourceInfo, old: Obj | None, new: Obj,
                          subresource: str = "") -> None:
    """Track which manager set which fields (operation Update), as upstream's fieldmanager.

    Deviation, for speed: upstream tracks every write. We track writes that name a fieldManager
    (kubectl always does) and writes to objects that already carry managedFields (so ownership
    stays consistent for apply users) or that bring managedFields of their own (which are
    checked then: upstream replaces fields that do not decode); anonymous writes to untracked
    objects — the bulk of controller traffic on pods — skip it, which halves the cost of a pod
    create.
    """
    manager = opts.field_manager
    if not manager:
        if not (old and old["metadata"].get("managedFields")) and not (new.get("metadata") or {}).get("managedFields"):
            return
        manager = manager_from_user_agent(opts.user_agent)
    from ..patch import update_managed_fields
    update_managed_fields(old, new, manager=manager, operation="Update", api_version=ri.api_version,
                          now=api.now(), subresource=subresource)


def manager_from_user_agent(ua: str) -> str:
    """Upstream: prefixFromUserAgent — "kubectl/v1.37.1 (linux/amd64)" -> "kubectl"."""
    return ua.split("/", 1)[0][:128] if ua else ""


# --- create -----------------------------------------------------------------------------------

def _prepare_and_validate_create(api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, obj: Obj,
                                 warnings: list[str], applied: bool, heavy: bool) -> bytes | None:
    """Fill the admitted object's system metadata, let the strategy prepare it, validate it;
    returns its spec's encoding if validation made one (validate_create)."""
    objects.fill_create_meta(obj, ri, ns, api.now())
    strategy = strategy_for(ri)
    strategy.prepare_for_create(obj)
    strategy.prepare_for_create_by(obj, opts.user)       # who asks (a CSR's username)
    return _validate_create(api, opts, ri, obj, warnings, applied, heavy)


def _validate_create(api: APIServer, opts: WriteOptions, ri: ResourceInfo, obj: Obj, warnings: list[str],
                     applied: bool, heavy: bool) -> bytes | None:
    """Validate, record ownership and check the size of a new object (nothing is written yet);
    returns its spec's encoding if validation made one (validate_create).

    Only a heavy request can make an object over the store's limit (objects.MAX_REQUEST_BYTES):
    below handlers.common.OFFLOAD_BYTES of body and stored object, defaulting and managedFields would
    have to grow it 24-fold. The worst we know is a pod of bare `{"name":"a1","image":"b"}`
    containers created with a fieldManager: a 60 KB body is stored as 580 KB (9.7-fold).
    """
    spec_json = validate_create(ri, obj, warnings)
    if heavy and not opts.dry_run:
        objects.check_stored_size(obj, ri, drop_managed_fields=not applied)
    return spec_json


# A generated name that is taken is replaced and the create tried again, up to 8 attempts in all:
# enough for a million names per generateName prefix with a 0.1 % chance of any conflict (without
# retries the chance is 50 % at ~4,500 names — a 10,000-replica Deployment would hit it).
# Upstream: maxNameGenerationCreateAttempts, createWithGenerateNameRetry (registry/store.go;
# the RetryGenerateName feature, on by default since 1.31).
MAX_NAME_GENERATION_CREATE_ATTEMPTS = 8


async def create(api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, obj: Obj,
                        warnings: list[str], *, applied: bool = False,
                        heavy: bool = False, request_name: str = "") -> tuple[Obj, bytes | None]:
    """Default, prepare, admit, validate and store a new object; returns what was stored and
    its encoding (None for a dry run), which a response can send as it is.

    `applied`: server-side apply already recorded its managedFields entry. `heavy`: the CPU
    work goes to the worker thread (handlers.common.is_heavy of the request). `request_name`:
    the URL's name ("" for a POST to the collection), what the kind's wrapper sees.
    """
    requested_name = objects.object_name(obj)
    # Mutating admission sees the defaulted object before the strategy prepares it (upstream:
    # createHandler admits, then Store.Create runs BeforeCreate), so what a plugin adds (e.g.
    # LimitRanger's requests) counts in what PrepareForCreate derives (the pod's qosClass).
    if heavy:
        await in_worker(_default_and_record, api, opts, ri, obj, applied)
    else:
        _default_and_record(api, opts, ri, obj, applied)
    attrs = attributes(opts, ri, admission.CREATE, ns, requested_name, obj, warnings=warnings)
    await api.admission.admit(attrs)
    wrapper = resource_definition(ri).wrapper
    if wrapper is not None:             # upstream: a storage wrapping the kind's Store (RBAC's policybased)
        await wrapper.before_create(api, opts, ri, ns, request_name, obj)
    # Upstream: Store.BeginCreate (a Service's ClusterIPs and NodePorts), committed once stored.
    # Any other kind allocates nothing: no transaction to enter and leave (begin_create's NOTHING).
    begin = service_alloc.begin_create(api.service_alloc, ri.plural, ri.group, obj, opts.dry_run)
    if begin is service_alloc.NOTHING:
        return await _validate_and_store(api, opts, ri, ns, obj, warnings, attrs, requested_name, applied, heavy)
    async with begin:
        return await _validate_and_store(api, opts, ri, ns, obj, warnings, attrs, requested_name, applied, heavy)


def _default_and_record(api: APIServer, opts: WriteOptions, ri: ResourceInfo, obj: Obj, applied: bool) -> None:
    """Default the new object and record its manager's fields: what the request set, not what
    admission or the strategy add after (upstream's createHandler updates managedFields before
    mutating admission and Store.Create's BeforeCreate)."""
    set_defaults(obj)
    if not applied:
        record_managed_fields(api, opts, ri, None, obj)


async def _validate_and_store(api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, obj: Obj,
                              warnings: list[str], attrs: admission.Attributes, requested_name: str,
                              applied: bool, heavy: bool) -> tuple[Obj, bytes | None]:
    if heavy:
        spec_json = await in_worker(_prepare_and_validate_create, api, opts, ri, ns, obj, warnings, applied, heavy)
    else:
        spec_json = _prepare_and_validate_create(api, opts, ri, ns, obj, warnings, applied, heavy)
    # Validating admission only reads obj, and a retried generated name changes only its name:
    # the spec stored is the one spec_json encodes.
    await api.admission.validate(attrs)
    codec = resource_definition(ri).storage_codec      # custom resources: converted at storage
    if opts.dry_run:
        return (obj if codec is None else await _dry_run_round_trip(codec, obj)), None
    for attempt in range(1, MAX_NAME_GENERATION_CREATE_ATTEMPTS + 1):
        name = objects.object_name(obj)
        try:
            stored = obj if codec is None else await codec.encode(obj)
            with storage_errors(ri, name):
                kv = await api.storage.create(ri.key(ns, name), stored, spec_json if codec is None else None)
            if codec is not None:
                kv = (await codec.decode([kv]))[0]
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


async def _dry_run_round_trip(codec: StorageCodec, obj: Obj) -> Obj:
    """What a dry run answers of an object converted at storage: encoded and decoded as a write
    would be, nothing stored (upstream: DryRunnableStorage.copyInto through the codec)."""
    stored = await codec.encode(obj)
    return (await codec.decode([KeyValue("", orjson.dumps(stored), stored, 0, 0)]))[0].obj


def attributes(opts: WriteOptions, ri: ResourceInfo, op: admission.Operation, ns: str, name: str,
               obj: Obj | None = None, old: Obj | None = None, subresource: str = "",
               kind: str = "", warnings: list[str] | None = None, options: Obj | None = None) -> admission.Attributes:
    """What the admission chain sees of a request on ri (kind: a subresource's own, e.g. Scale).
    `warnings`: the request's list, so plugins' warnings (PodSecurity's) join its Warning headers.
    `options`: the request's options object (default: the Create/UpdateOptions of opts)."""
    return admission.Attributes(op, ri.group, ri.version, ri.plural, kind or ri.kind, ns, name, obj, old,
                                subresource, opts.dry_run, opts.user,
                                options if options is not None else admission_options.write_options(
                                    op, opts.dry_run, opts.field_manager, opts.field_validation),
                                warnings=warnings if warnings is not None else [])


# --- update through an updated-object function ------------------------------------------------

# A patch that lost a race with another writer is applied again to the newer object, up to 5
# attempts in all. Upstream: maxRetryWhenPatchConflicts (endpoints/handlers/patch.go).
MAX_UPDATE_ATTEMPTS = 5


def may_retry_conflict(err: errors.StatusError, attempt: int) -> bool:
    """Whether a write's Conflict is a lost race with another writer (the optimistic lock, not
    a precondition or an apply conflict) that attempt number `attempt` may try again."""
    return errors.OPTIMISTIC_LOCK_MSG in err.message and attempt < MAX_UPDATE_ATTEMPTS


class UpdatedObjectInfo:
    """What an update writes, as a function of the stored object: the handlers' part of an
    update (PUT's body, a patch applied to the stored object, a Scale's replicas copied into
    its owner), which update_object calls with the object it read.

    `subresource`: the write's (the strategy and validation it gets); `applied`: server-side
    apply recorded its managedFields entry itself; `admit`: the store runs the admission chain
    (False: updated_object admitted what it was sent, a Scale); `heavy`, set by updated_object:
    the store's CPU work on its result belongs in the worker thread (handlers.common.is_heavy).
    Upstream: rest.UpdatedObjectInfo (apiserver/pkg/registry/rest/update.go).
    """
    __slots__ = ()
    subresource = ""
    applied = False
    admit = True
    heavy = False

    async def updated_object(self, kv: KeyValue | None) -> Obj:
        """The object to write over kv (None: nothing is stored, and the result is created;
        raise NotFound where the write cannot create). The result is the caller's to change."""
        raise NotImplementedError

    def retry_on_conflict(self) -> bool:
        """Whether a lost race (the optimistic lock) may be retried on the newer object: not
        when the write pins its own resourceVersion (then the conflict is the client's)."""
        return False


async def update_object(api: APIServer, opts: WriteOptions, ri: ResourceInfo, ns: str, name: str,
                        info: UpdatedObjectInfo, warnings: list[str]) -> tuple[Obj, bytes | None, bool]:
    """Read the object, ask info for the new one and write it (or create it when nothing is
    stored and info allows); a write that lost a race with another writer starts again from
    the newer object while info.retry_on_conflict(). Returns what was stored, its encoding
    (None: dry run or nothing written) and whether it was created.

    The new object's resourceVersion, if it has one, is the revision the write must find (a
    precondition); otherwise the one read. Update (PUT), every patch type, server-side apply
    and the subresource writes (status, scale, ephemeralcontainers, resize, approval) share it.
    Upstream: Store.Update (registry/generic/registry/store.go) and the patcher's retry loop
    (endpoints/handlers/patch.go).
    """
    key = ri.key(ns, name)
    mark = len(warnings)
    codec = resource_definition(ri).storage_codec      # custom resources: updated in the request's version
    for attempt in range(1, MAX_UPDATE_ATTEMPTS + 1):
        kv = await api.storage.get(key)
        if kv is not None and codec is not None:
            kv = (await codec.decode([kv]))[0]
        try:
            new = await info.updated_object(kv)
            if kv is None:
                stored, value = await create(api, opts, ri, ns, new, warnings, applied=info.applied,
                                             heavy=info.heavy, request_name=name)
                return stored, value, True
            expected = objects.precondition_revision(new, kv.mod_revision)
            stored, value = await update(api, opts, ri, new, kv.obj, expected, info.subresource, warnings,
                                         applied=info.applied, heavy=info.heavy, admit=info.admit)
            return stored, value, False
        except errors.Conflict as err:
            # Only a lost race with another writer, never an apply conflict between field
            # managers, nor a write that pinned its own resourceVersion.
            if (not may_retry_conflict(err, attempt)
                    or not info.retry_on_conflict()):
                raise
            del warnings[mark:]         # the next attempt reports its own
    raise AssertionError("unreachable")


async def update(api: APIServer, opts: WriteOptions, ri: ResourceInfo, new: Obj, old: Obj,
                        expected: int, subresource: str, warnings: list[str], *,
                        applied: bool = False, heavy: bool = False, admit: bool = True) -> tuple[Obj, bytes | None]:
    """Default, admit, prepare, validate and store new over old (at revision expected); returns
    the result and, when it was stored, its encoding. `heavy`: do the CPU work in the worker
    thread (handlers.common.is_heavy of the request and the stored object). `admit`: run the admission
    chain (UPDATE of ri or its subresource); False when the caller admitted the request itself
    (a /scale write admits the Scale).

    A write that changes nothing is not stored (the resourceVersion stays), as upstream; an
    update that removes the last finalizer of an object being deleted deletes it.
    """
    if heavy:
        await in_worker(default_update, new, old, subresource)
    else:
        default_update(new, old, subresource)
    name = objects.object_name(new)
    attrs = None
    if admit:
        attrs = attributes(opts, ri, admission.UPDATE, new["metadata"].get("namespace", ""), name,
                           new, old, subresource, warnings=warnings)
        await api.admission.admit(attrs)
    wrapper = resource_definition(ri).wrapper
    if wrapper is not None:             # upstream: the wrapping storage's updated-object function
        await wrapper.before_update(api, opts, ri, new["metadata"].get("namespace", ""), name, new, old)
    if str(expected) != old["metadata"].get("resourceVersion"):
        # Upstream: Store.Update compares once the updated object is made (mutating admission and
        # a wrapping storage's checks, e.g. RBAC's escalation 403, come first) and before anything
        # else, so a stale no-op is a conflict too.
        raise errors.Conflict(ri.group, ri.plural, objects.object_name(old), errors.OPTIMISTIC_LOCK_MSG)
    # Upstream: Store.BeginUpdate (a Service's ClusterIPs and NodePorts), committed once stored.
    async with service_alloc.begin_update(api.service_alloc, ri.plural, ri.group, new, old, subresource,
                                    opts.dry_run) as txn:
        if heavy:
            await in_worker(_prepare_update, api, opts, ri, new, old, subresource, warnings, applied, heavy)
        else:
            _prepare_update(api, opts, ri, new, old, subresource, warnings, applied, heavy)
        if attrs is not None:
            await api.admission.validate(attrs)
        if new == old:
            return old, None
        if opts.dry_run:
            codec = resource_definition(ri).storage_codec
            return (new if codec is None else await _dry_run_round_trip(codec, new)), None
        key = ri.key(new["metadata"].get("namespace", ""), name)
        with storage_errors(ri, name):
            if should_delete_during_update(new, old, ri):
                gone = await api.storage.delete(key, expected)
                txn.revert()        # upstream: finishUpdate(false), then AfterDelete
                await txn.flush()
                await service_alloc.after_delete(api.service_alloc, ri.plural, ri.group, gone.obj)
                return new, None
            codec = resource_definition(ri).storage_codec
            kv = await api.storage.update(key, new if codec is None else await codec.encode(new), expected)
            if codec is not None:
                kv = (await codec.decode([kv]))[0]
        return kv.obj, kv.value


def _prepare_update(api: APIServer, opts: WriteOptions, ri: ResourceInfo, new: Obj, old: Obj, subresource: str,
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
    validate_update(ri, new, old, subresource, warnings)
    if not applied:
        record_managed_fields(api, opts, ri, old, new, subresource)
    if heavy and new != old and not opts.dry_run:
        objects.check_stored_size(new, ri, drop_managed_fields=not applied)
