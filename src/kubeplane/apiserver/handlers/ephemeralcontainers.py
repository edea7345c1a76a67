"""pods/ephemeralcontainers: get, update and patch of a pod's ephemeral containers.

`kubectl debug <pod> --image=...` adds a container this way: a strategic merge patch of
`spec.ephemeralContainers` on the subresource (a 404 without details makes it panic).

Upstream: EphemeralContainersREST (pkg/registry/core/pod/storage/storage.go) is the pod store
with podEphemeralContainersStrategy (pkg/registry/core/pod/strategy.go): get answers the pod;
an update or patch is decoded and defaulted as a Pod, then dropNonEphemeralContainerUpdates
keeps the stored pod and takes only spec.ephemeralContainers (and name, namespace,
resourceVersion, uid) from the request, and ValidatePodEphemeralContainersUpdate
(api/validation/ephemeral.py) allows additions only. The answer is the pod.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.resources import ResourceInfo
from ...api.validation.ephemeral import validate_pod_ephemeral_containers_update
from .. import admission, codec, objects
from ..objects import Obj, storage_errors
from ..registry import store
from ..request import Request, Response
from . import common, rest

if TYPE_CHECKING:
    from ..server import APIServer

SUBRESOURCE = "ephemeralcontainers"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json")


async def serve(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, verb: str) -> Response:
    """get, update or patch pods/<name>/ephemeralcontainers."""
    if verb == "get":
        return await rest.get(api, req, ri, ns, name)
    if verb == "patch":
        patch_type = codec.media_type(req.headers)
        if patch_type not in PATCH_TYPES:
            raise errors.UnsupportedMediaType(patch_type, list(PATCH_TYPES))
        if len(req.body) > codec.MAX_BODY:
            raise errors.RequestEntityTooLarge()
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound(ri.group, ri.plural, name)
    warnings: list[str] = []
    if verb == "update":
        new, warnings = await common.decode_object(api, req, ri, False)
        objects.check_namespace_matches(new, ns, ri)
    else:
        new = _patched(req, ri, kv, warnings)
    objects.check_name(new, name)
    stored, value = await update_ephemeral_containers(api, req, ri, new, kv, warnings)
    return common.object_response(api, req, ri, stored, value, warnings=warnings)


def _patched(req: Request, ri: ResourceInfo, kv: Any, warnings: list[str]) -> Obj:
    """The patch applied to the stored pod and decoded as upstream decodes a patch result."""
    from ..patch import apply_patch
    live = objects.mutable_copy(kv)
    new = apply_patch(codec.media_type(req.headers), live, req.obj if req.obj is not None else req.body,
                      ri.definition)
    common.check_patched_fields(req, ri, new, warnings)
    objects.check_type_meta(new, ri)
    return new


async def update_ephemeral_containers(api: APIServer, req: Request, ri: ResourceInfo, new: Obj, kv: Any,
                                      warnings: list[str]) -> tuple[Obj, bytes | None]:
    """Default new, keep only its ephemeral containers, validate and store; returns the pod
    and its encoding (None when nothing was written)."""
    old = kv.obj
    name = objects.object_name(new)
    expected = common.precondition_revision(new, kv.mod_revision)
    if str(expected) != old["metadata"].get("resourceVersion"):
        raise errors.Conflict(ri.group, ri.plural, name, errors.OPTIMISTIC_LOCK_MSG)
    opts = common.write_options(req)
    store.set_defaults(new)
    pod = drop_non_ephemeral_container_updates(new, objects.mutable_copy(kv))
    objects.fill_update_meta(pod, old)
    attrs = store.attributes(opts, ri, admission.Operation.UPDATE, old["metadata"].get("namespace", ""), name,
                             pod, old, SUBRESOURCE, warnings=warnings)
    await api.admission.admit(attrs)
    pod["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
    errs = validate_pod_ephemeral_containers_update(pod, old)
    if errs:
        raise errors.Invalid(ri.group, ri.kind, name, errs)
    await api.admission.validate(attrs)
    store.record_managed_fields(api, opts, ri, old, pod, SUBRESOURCE)
    if pod == old:
        return old, kv.value
    if opts.dry_run:
        return pod, None
    with storage_errors(ri, name):
        stored = await api.storage.update(kv.key, pod, expected)
    return stored.obj, stored.value


def drop_non_ephemeral_container_updates(new: Obj, old_copy: Obj) -> Obj:
    """old_copy with new's spec.ephemeralContainers and its name, namespace, resourceVersion
    and uid: every other change of the request is dropped.
    Upstream: dropNonEphemeralContainerUpdates, dropPodUpdates (pkg/registry/core/pod/strategy.go)"""
    meta, new_meta = old_copy["metadata"], new.get("metadata") or {}
    for key in ("name", "namespace", "resourceVersion", "uid"):
        if new_meta.get(key):
            meta[key] = new_meta[key]
        else:
            meta.pop(key, None)
    spec = old_copy.setdefault("spec", {})
    ecs = (new.get("spec") or {}).get("ephemeralContainers")
    if ecs:
        spec["ephemeralContainers"] = ecs
    else:
        spec.pop("ephemeralContainers", None)
    return old_copy
