"""Deletion: options, graceful deletion, finalizers and garbage-collection policies.

Upstream: Store.Delete, BeforeDelete (apiserver/pkg/registry/rest/delete.go) and
deletionFinalizersForGarbageCollection (generic/registry/store.go). An object with finalizers
is only marked (deletionTimestamp set); a pod on a node gets a deletionTimestamp and waits for
its kubelet's final delete (grace 0); everything else is removed at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...api import errors
from ...api.resources import ResourceInfo
from ...storage.interface import KeyValue
from ...utils.clock import parse_rfc3339, rfc3339
from .. import admission, objects
from ..admission import options as admission_options
from ..authentication.user import UserInfo
from ..objects import Obj, storage_errors
from .core.service import alloc as service_alloc
from .registry import resource_definition, strategy_for

if TYPE_CHECKING:
    from ..server import APIServer

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False


def returns_deleted_object(ri: ResourceInfo) -> bool:
    """Pods and namespaces answer a delete with the object itself (ReturnDeletedObject), others
    with a Status."""
    return resource_definition(ri).returns_deleted_object


def _gc_finalizers(finalizers: list[str], opts: DeleteOptions) -> list[str]:
    """Upstream: deletionFinalizersForGarbageCollection — drop orphan/foreground, add back per policy.

    orphanDependents wins over propagationPolicy; without either, the object's own finalizer
    decides (kept as it is). Example: ["a", "orphan"] with Foreground -> ["a", "foregroundDeletion"].
    """
    if opts.orphan_dependents is not None:
        orphan, foreground = opts.orphan_dependents, False
    elif opts.propagation_policy is not None:
        orphan, foreground = opts.propagation_policy == "Orphan", opts.propagation_policy == "Foreground"
    else:
        return list(finalizers)
    fs = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if orphan:
        fs.append(ORPHAN)
    if foreground:
        fs.append(FOREGROUND)
    return fs if set(fs) != set(finalizers) else list(finalizers)


def _check_preconditions(ri: ResourceInfo, obj: Obj, opts: DeleteOptions) -> None:
    """Upstream: BeforeDelete's early precondition check (a Conflict on the Kind, not the resource)."""
    meta = obj["metadata"]
    name = meta.get("name", "")
    kind = ri.kind
    if opts.precondition_uid is not None and opts.precondition_uid != meta.get("uid"):
        raise errors.Conflict(ri.group, kind, name,
                              f"the UID in the precondition ({opts.precondition_uid}) does not match the UID in "
                              f"record ({meta.get('uid')}). The object might have been deleted and then recreated")
    if opts.precondition_rv is not None and opts.precondition_rv != meta.get("resourceVersion"):
        raise errors.Conflict(ri.group, kind, name,
                              f"the ResourceVersion in the precondition ({opts.precondition_rv}) does not match the "
                              f"ResourceVersion in record ({meta.get('resourceVersion')}). The object might have "
                              "been modified")


async def delete(api: APIServer, user: UserInfo, ri: ResourceInfo, kv: KeyValue,
                 opts: DeleteOptions, *, validate: bool = True, served: Obj | None = None) -> tuple[Obj, bool]:
    """Delete or only mark kv's object; returns (resulting object, whether it is gone).
    `validate`: run the validating admission of the delete (False: an eviction's delete, which
    upstream makes with rest.ValidateAllObjectFunc after admitting the Eviction itself).
    `served`: the object as ri's version shows it, what admission sees (a custom object stored
    in another version); None: kv's.

    Upstream: Store.Delete -> BeforeDelete -> updateForGracefulDeletionAndFinalizers. An
    object with finalizers is marked (deletionTimestamp, grace 0) and stays; a pod on a node
    gets deletionTimestamp = now + grace and stays for its kubelet; a graceful kind (pods)
    deleted with grace 0 is first written with its deletion marks, then removed, so watchers
    see MODIFIED then DELETED carrying them, as upstream.
    """
    # Upstream: the store's deleteValidation, the validating admission of each object deleted
    # (once per item of a deletecollection).
    meta = kv.obj["metadata"]
    if validate:
        await api.admission.validate(admission.Attributes(
            admission.DELETE, ri.group, ri.version, ri.plural, ri.kind, meta.get("namespace", ""),
            meta.get("name", ""), None, kv.obj if served is None else served, dry_run=opts.dry_run, user=user,
            options=admission_options.delete_options(opts)))
    if ri.plural == "namespaces":
        return await _delete_namespace(api, ri, kv, opts)
    if (begin := getattr(ri, "begin_delete", None)) is not None and not meta.get("deletionTimestamp"):
        return await begin(api, ri, kv, opts), False
    _check_preconditions(ri, kv.obj, opts)
    new = _with_own_metadata(kv.obj)
    graceful, pending = _before_delete(api, ri, new, opts)
    if pending:
        return kv.obj, False
    meta = new["metadata"]
    finalizers = _gc_finalizers(list(meta.get("finalizers") or []), opts)
    if graceful or finalizers or meta.get("finalizers"):
        _set_finalizers(meta, finalizers)
        if not graceful:
            if not finalizers:
                return await _remove(api, ri, kv, opts)
            _mark_as_deleting(new, api.clock.now())
            return await _write(api, ri, kv, new, opts), False
        stored = await _write(api, ri, kv, new, opts)
        if finalizers or meta["deletionGracePeriodSeconds"] > 0:
            return stored, False
        if not opts.dry_run:
            kv = await api.storage.get(kv.key) or kv
    return await _remove(api, ri, kv, opts)


def _with_own_metadata(obj: Obj) -> Obj:
    """obj with its top level and metadata copied: all that deletion changes (its marks and
    finalizers are metadata). The rest stays shared with the stored object, which the store
    allows as long as nobody mutates it (storage/memory.py stamp). Not decoding a whole copy
    (objects.mutable_copy) saves ~17 % of the kubelet's final delete of a pod (instructions,
    benchmarks/status_patch_instructions.py), and as much of each graceful delete."""
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    return new


def _before_delete(api: APIServer, ri: ResourceInfo, obj: Obj, opts: DeleteOptions) -> tuple[bool, bool]:
    """Upstream: rest.BeforeDelete — (graceful, graceful deletion already pending); sets the marks on obj.

    Only a shorter grace period may replace a pending one, moving the deadline by the
    difference: deleted at 10:00:00 with grace 30 (deadline 10:00:30), then grace 5 ->
    deadline 10:00:30 - 30 + 5 = 10:00:05.
    """
    strategy = strategy_for(ri)
    meta = obj["metadata"]
    requested = opts.grace_period_seconds
    if requested is not None and requested < 0:
        requested = 1                     # negative grace means "1s" on the delete path
    if not strategy.graceful:
        return False, False
    if meta.get("deletionTimestamp"):
        current = meta.get("deletionGracePeriodSeconds")
        if not current:
            return False, False
        if requested is None or requested >= current:
            return False, True
        deadline = parse_rfc3339(meta["deletionTimestamp"]) - current + requested
        meta["deletionTimestamp"], meta["deletionGracePeriodSeconds"] = rfc3339(deadline), requested
        return True, False
    period = strategy.check_graceful_delete(obj, requested)
    meta["deletionTimestamp"] = rfc3339(api.clock.now() + period)
    meta["deletionGracePeriodSeconds"] = period
    if meta.get("generation", 0) > 0:
        meta["generation"] += 1           # so clients can see the deletion request
    return True, False


def _mark_as_deleting(obj: Obj, now: float) -> None:
    """Upstream: markAsDeleting — deletionTimestamp now (never later), grace 0, generation bumped once."""
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp"):
        if meta.get("generation", 0) > 0:
            meta["generation"] += 1
        meta["deletionTimestamp"] = rfc3339(now)
    elif parse_rfc3339(meta["deletionTimestamp"]) > now:
        meta["deletionTimestamp"] = rfc3339(now)
    meta["deletionGracePeriodSeconds"] = 0


def _set_finalizers(meta: Obj, finalizers: list[str]) -> None:
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)


async def _write(api: APIServer, ri: ResourceInfo, kv: KeyValue, new: Obj, opts: DeleteOptions) -> Obj:
    """Store the marked object (nothing when unchanged or a dry run)."""
    if new == kv.obj or opts.dry_run:
        return new
    with storage_errors(ri, new["metadata"].get("name", "")):
        stored = await api.storage.update(kv.key, new, kv.mod_revision)
    return stored.obj


async def _remove(api: APIServer, ri: ResourceInfo, kv: KeyValue, opts: DeleteOptions) -> tuple[Obj, bool]:
    if opts.dry_run:
        return kv.obj, True
    name = kv.obj["metadata"].get("name", "")
    with storage_errors(ri, name):
        gone = await api.storage.delete(kv.key, kv.mod_revision)
    await service_alloc.after_delete(api.service_alloc, ri.plural, ri.group, gone.obj)   # upstream: Store.AfterDelete
    return gone.obj, True


async def _delete_namespace(api: APIServer, ri: ResourceInfo, kv: KeyValue, opts: DeleteOptions) -> tuple[Obj, bool]:
    """Upstream: namespace REST.Delete — the first delete only starts termination (deletionTimestamp,
    phase Terminating, GC finalizers); the namespace controller empties it and clears
    spec.finalizers (PUT /finalize), and the namespace goes once nothing holds it."""
    meta = kv.obj["metadata"]
    name = meta.get("name", "")
    if opts.precondition_uid is not None and opts.precondition_uid != meta.get("uid"):
        raise errors.Conflict("", "namespaces", name, f"Precondition failed: UID in precondition: "
                              f"{opts.precondition_uid}, UID in object meta: {meta.get('uid')}")
    if opts.precondition_rv is not None and opts.precondition_rv != meta.get("resourceVersion"):
        raise errors.Conflict("", "namespaces", name, f"Precondition failed: ResourceVersion in precondition: "
                              f"{opts.precondition_rv}, ResourceVersion in object meta: {meta.get('resourceVersion')}")
    if not meta.get("deletionTimestamp"):
        new = objects.mutable_copy(kv)
        new["metadata"]["deletionTimestamp"] = rfc3339(api.clock.now())
        new.setdefault("status", {})["phase"] = "Terminating"
        _set_finalizers(new["metadata"], _gc_finalizers(list(meta.get("finalizers") or []), opts))
        return await _write(api, ri, kv, new, opts), False
    if (kv.obj.get("spec") or {}).get("finalizers"):
        return kv.obj, False
    new = objects.mutable_copy(kv)
    finalizers = _gc_finalizers(list(meta.get("finalizers") or []), opts)
    if not finalizers:
        return await _remove(api, ri, kv, opts)
    _set_finalizers(new["metadata"], finalizers)
    _mark_as_deleting(new, api.clock.now())
    return await _write(api, ri, kv, new, opts), False


def should_delete_during_update(new: Obj, old: Obj, ri: ResourceInfo | None = None) -> bool:
    """Upstream: ShouldDeleteDuringUpdate — an update leaving no finalizers on an object whose
    deletion is pending with no grace period (0 or unset) deletes it; a namespace also needs
    empty spec.finalizers (ShouldDeleteNamespaceDuringUpdate)."""
    if new["metadata"].get("finalizers"):
        return False
    om = old["metadata"]
    if not om.get("deletionTimestamp") or om.get("deletionGracePeriodSeconds"):
        return False
    if ri is not None and ri.plural == "namespaces" and (new.get("spec") or {}).get("finalizers"):
        return False
    return True
