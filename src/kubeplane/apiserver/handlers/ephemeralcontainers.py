"""pods/ephemeralcontainers: get, update and patch of a pod's ephemeral containers.

`kubectl debug <pod> --image=...` adds a container this way: a strategic merge patch of
`spec.ephemeralContainers` on the subresource (a 404 without details makes it panic).

Upstream: EphemeralContainersREST (pkg/registry/core/pod/storage/storage.go) is the pod store
with podEphemeralContainersStrategy (pkg/registry/core/pod/strategy.go): get answers the pod;
an update or patch is decoded and defaulted as a Pod, then dropNonEphemeralContainerUpdates
keeps the stored pod and takes only spec.ephemeralContainers (and name, namespace,
resourceVersion, uid) from the request, and ValidatePodEphemeralContainersUpdate
(api/validation/ephemeral.py) allows additions only (both on the pod's definition,
registry/core/pod.py; the write is the generic store's update). The answer is the pod.

pods/resize (`kubectl patch pod p --subresource resize`, `kubectl edit --subresource resize`)
is served the same way with podResizeStrategy: dropNonResizeUpdates keeps only the containers'
resources and resizePolicy, ValidatePodResize (api/validation/resize.py) checks them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.resources import ResourceInfo
from .. import codec, objects
from ..objects import Obj
from ..registry import store
from ..request import Request, Response
from . import common, rest

if TYPE_CHECKING:
    from ..server import APIServer

SUBRESOURCE = "ephemeralcontainers"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json")


async def serve(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, verb: str,
                subresource: str = SUBRESOURCE) -> Response:
    """get, update or patch pods/<name>/ephemeralcontainers (or pods/<name>/resize, the same
    but for the containers' resources: the pod strategy and the definition tell them apart)."""
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
    # The generic update with the pod strategy's ephemeralcontainers rules (PodStrategy,
    # the definition's validate_subresource_update).
    expected = common.precondition_revision(new, kv.mod_revision)
    stored, value = await store.update(api, common.write_options(req), ri, new, kv.obj, expected, subresource,
                                       warnings)
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
