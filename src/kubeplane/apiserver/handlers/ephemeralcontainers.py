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

# No server-side apply on these subresources (tests/apiserver/test_ephemeral_containers.py); upstream's
# installer lists apply-patch for every patcher: a deviation kept, as /scale's.
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json")


async def patch(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, subresource: str) -> Response:
    """A patch of pods/<name>/ephemeralcontainers or pods/<name>/resize: the generic patch
    (registry/store.update_object) on the subresource, without server-side apply. Their get
    and update are the generic ones (handlers/subresource_rest.py)."""
    return await rest.patch(api, req, ri, ns, name, subresource, PATCH_TYPES)
