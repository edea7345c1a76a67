"""The handlers a subresource names (Subresource.handler on its resource's definition), by
verb: what APIServer.route_subresource calls for GET, POST, PUT and PATCH of
<resource>/<name>/<subresource>.

    status               get, update, patch of the object itself through the subresource's
                         strategy (/status; a CSR's /approval, upstream's ApprovalREST)
    ephemeralcontainers  the same without server-side apply (pods/ephemeralcontainers, and
                         pods/resize: upstream's ResizeREST has its shape)
    scale                the autoscaling/v1 Scale of a workload (handlers/subresources.py)
    binding              pods/binding (handlers/subresources.py)
    eviction             pods/eviction (handlers/eviction.py)
    log                  pods/log (handlers/podlog.py)
    finalize             namespaces/finalize (handlers/subresources.py)
    token                serviceaccounts/token (handlers/token.py)

Upstream: each subresource is a REST storage of its own (StatusREST, ScaleREST, BindingREST,
EvictionREST, LogREST, FinalizeREST, TokenREST, … in pkg/registry/<group>/<kind>/storage),
and the API installer registers a route for each interface it implements (rest.Getter,
Creater, Updater, Patcher, Connecter: endpoints/installer.go registerResourceHandlers).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...api.resources import ResourceInfo
from ..request import Request, Response
from . import ephemeralcontainers, eviction, podlog, rest, subresources, token

if TYPE_CHECKING:
    from ..server import APIServer

# (server, request, resource, namespace, name, subresource) -> the answer
Serve = Callable[["APIServer", Request, ResourceInfo, str, str, str], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class SubresourceREST:
    """A subresource handler: one function per verb it serves (None: not served)."""
    get: Serve | None = None
    create: Serve | None = None
    update: Serve | None = None
    patch: Serve | None = None

    def serves(self, verb: str) -> Serve | None:
        if verb == "get":
            return self.get
        if verb == "create":
            return self.create
        if verb == "update":
            return self.update
        return self.patch if verb == "patch" else None


async def _get_object(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await rest.get(api, req, ri, ns, name)


async def _get_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.get_scale(api, req, ri, ns, name)


async def _update_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.update_scale(api, req, ri, ns, name)


async def _patch_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.patch_scale(api, req, ri, ns, name)


async def _binding(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.create_binding(api, req, ri, ns, name)


async def _eviction(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await eviction.create_eviction(api, req, ri, ns, name)


async def _log(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await podlog.pod_log(api, req, ri, ns, name)


async def _finalize(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.finalize_namespace(api, req, ri, name)


async def _token(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await token.create_token(api, req, ri, ns, name)


REST: dict[str, SubresourceREST] = {
    "status": SubresourceREST(get=_get_object, update=rest.update, patch=rest.patch),
    "ephemeralcontainers": SubresourceREST(get=_get_object, update=rest.update, patch=ephemeralcontainers.patch),
    "scale": SubresourceREST(get=_get_scale, update=_update_scale, patch=_patch_scale),
    "binding": SubresourceREST(create=_binding),
    "eviction": SubresourceREST(create=_eviction),
    "log": SubresourceREST(get=_log),
    "finalize": SubresourceREST(update=_finalize),
    "token": SubresourceREST(create=_token),
}

