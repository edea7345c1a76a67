"""Deletion: options, graceful deletion, finalizers and garbage-collection policies.

Upstream: Store.Delete, BeforeDelete (apiserver/pkg/registry/rest/delete.go) and
deletionFinalizersForGarbageCollection (generic/registry/store.go). An object with finalizers
is only marked (deletionTimestamp set); a pod on a node gets a deletionTimestamp and waits for
its kubelet's final delete (grace 0); everything else is removed at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors
from ...api.resources import ResourceInfo
from ...storage.interface import KeyValue
from ...utils.clock import rfc3339
from .. import objects
from ..objects import Obj, storage_errors
from ..registry import strategy_for
from ..request import Request

if TYPE_CHECKING:
    from ..server import APIServer

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
POLICIES = ("Orphan", "Background", "Foreground")


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False

    @classmethod
    def from_request(cls, req: Request) -> DeleteOptions:
        """Merge the DeleteOptions body (kubectl sends one) with the query parameters."""
        body: dict[str, Any] = {}
        if req.body.strip():
            try:
                body = orjson.loads(req.body)
            except orjson.JSONDecodeError as e:
                raise errors.BadRequest(f"error decoding DeleteOptions: {e}") from None
            if not isinstance(body, dict):
                raise errors.BadRequest("DeleteOptions must be an object")
        q = req.query
        grace = body.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
        policy = body.get("propagationPolicy", q.get("propagationPolicy"))
        orphan = body.get("orphanDependents", q.get("orphanDependents"))
        pre = body.get("preconditions") or {}
        dry = body.get("dryRun") or ([q["dryRun"]] if q.get("dryRun") else [])
        if policy is not None and policy not in POLICIES:
            raise _invalid_options("propagationPolicy", policy,
                                   'supported values: "Foreground", "Background", "Orphan", nil')
        if policy is not None and orphan is not None:
            raise _invalid_options("orphanDependents", orphan,
                                   "orphanDependents and deletionPropagation cannot be both set")
        try:
            grace = int(grace) if grace is not None else None
        except (TypeError, ValueError):
            raise errors.BadRequest(f"invalid gracePeriodSeconds: {grace!r}") from None
        if isinstance(orphan, str):
            orphan = orphan.lower() == "true"
        if dry and dry != ["All"]:
            raise errors.BadRequest(f"Invalid dry run value: {dry}")
        return cls(grace, policy, orphan, pre.get("uid"), pre.get("resourceVersion"), bool(dry))


def _invalid_options(field: str, value: Any, detail: str) -> errors.StatusError:
    return errors.Invalid("meta.k8s.io", "DeleteOptions", "", [errors.invalid(field, value, detail)])


def returns_deleted_object(ri: ResourceInfo) -> bool:
    """Pods answer a delete with the pod itself (ReturnDeletedObject), others with a Status."""
    return ri.plural in ("pods", "namespaces")


def _gc_finalizers(finalizers: list[str], opts: DeleteOptions) -> list[str]:
    """Upstream: deletionFinalizersForGarbageCollection — set orphan/foreground per policy."""
    fs = [f for f in finalizers]
    policy = opts.propagation_policy
    if policy is None and opts.orphan_dependents is not None:
        policy = "Orphan" if opts.orphan_dependents else "Background"
    if policy is None:
        return fs                     # keep whatever the object already asked for
    fs = [f for f in fs if f not in (ORPHAN, FOREGROUND)]
    if policy == "Orphan":
        fs.append(ORPHAN)
    elif policy == "Foreground":
        fs.append(FOREGROUND)
    return fs


def _check_preconditions(ri: ResourceInfo, obj: Obj, opts: DeleteOptions) -> None:
    meta = obj["metadata"]
    name = meta.get("name", "")
    if opts.precondition_uid and opts.precondition_uid != meta.get("uid"):
        raise errors.Conflict(ri.group, ri.plural, name,
                              f"Precondition failed: UID in precondition: {opts.precondition_uid}, "
                              f"UID in object meta: {meta.get('uid')}")
    if opts.precondition_rv and opts.precondition_rv != meta.get("resourceVersion"):
        raise errors.Conflict(ri.group, ri.plural, name,
                              f"Precondition failed: ResourceVersion in precondition: {opts.precondition_rv}, "
                              f"ResourceVersion in object meta: {meta.get('resourceVersion')}")


async def delete_object(api: APIServer, req: Request, ri: ResourceInfo, kv: KeyValue,
                        opts: DeleteOptions) -> tuple[Obj, bool]:
    """Delete or mark kv's object; returns (resulting object, whether it is gone)."""
    obj = kv.obj
    _check_preconditions(ri, obj, opts)
    meta = obj["metadata"]
    finalizers = _gc_finalizers(list(meta.get("finalizers") or []), opts)
    grace = strategy_for(ri).graceful_delete_seconds(obj, opts.grace_period_seconds)
    if opts.grace_period_seconds == 0:
        grace = 0
    namespace_pending = ri.plural == "namespaces" and bool((obj.get("spec") or {}).get("finalizers"))
    if not finalizers and grace == 0 and not namespace_pending:
        return await _remove(api, ri, kv, opts)
    return await _mark(api, ri, kv, finalizers, grace, opts), False


async def _remove(api: APIServer, ri: ResourceInfo, kv: KeyValue, opts: DeleteOptions) -> tuple[Obj, bool]:
    if opts.dry_run:
        return kv.obj, True
    name = kv.obj["metadata"].get("name", "")
    with storage_errors(ri, name):
        gone = await api.storage.delete(kv.key, kv.mod_revision)
    return gone.obj, True


async def _mark(api: APIServer, ri: ResourceInfo, kv: KeyValue, finalizers: list[str], grace: int,
                opts: DeleteOptions) -> Obj:
    """Set deletionTimestamp (now + grace) and the finalizers; a shorter grace may replace a longer one."""
    new = objects.deep_copy(kv.obj)
    meta = new["metadata"]
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)
    current = meta.get("deletionGracePeriodSeconds")
    if not meta.get("deletionTimestamp") or (current is not None and grace < current):
        meta["deletionTimestamp"] = rfc3339(api.clock.now() + grace)
        meta["deletionGracePeriodSeconds"] = grace
    if ri.plural == "namespaces":
        new.setdefault("status", {})["phase"] = "Terminating"
    if new == kv.obj or opts.dry_run:
        return new
    with storage_errors(ri, meta.get("name", "")):
        stored = await api.storage.update(kv.key, new, kv.mod_revision)
    return stored.obj


def should_delete_during_update(new: Obj, old: Obj) -> bool:
    """Upstream: Store.shouldDeleteDuringUpdate — the last finalizer of a marked object went away."""
    if new["metadata"].get("finalizers") or not old["metadata"].get("finalizers"):
        return False
    om = old["metadata"]
    return bool(om.get("deletionTimestamp")) and om.get("deletionGracePeriodSeconds") == 0
