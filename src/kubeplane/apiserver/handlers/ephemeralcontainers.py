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

from typing import TYPE_CHECKING

from ...api.resources import ResourceInfo
from ..request import Request, Response
from . import rest

if TYPE_CHECKING:
    from ..server import APIServer

SUBRESOURCE = "ephemeralcontainers"
# Upstream serves no server-side apply here.
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json")


async def serve(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, verb: str,
                subresource: str = SUBRESOURCE) -> Response:
    """get, update or patch pods/<name>/ephemeralcontainers (or pods/<name>/resize, the same
    but for the containers' resources: the pod strategy and the definition tell them apart):
    the generic update and patch (registry/store.update_object) on the subresource."""
    if verb == "get":
        return await rest.get(api, req, ri, ns, name)
    if verb == "update":
        return await rest.update(api, req, ri, ns, name, subresource)
    return await rest.patch(api, req, ri, ns, name, subresource, PATCH_TYPES)
