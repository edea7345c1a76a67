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
from typing import TYPE_CHECKING

from ...api.resources import ResourceInfo
from ..request import Request, Response
from . import ephemeralcontainers, eviction, podlog, rest, subresources, token

if TYPE_CHECKING:
    from ..server import APIServer

# (server, request, resource, namespace, name, subresource) -> the answer
Serve = Callable[["APIServer", Request, ResourceInfo, str, str, str], Awaitable[Response]]


async def _get_object(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await rest.get(api, req, ri, ns, name)


async def _get_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.get_scale(api, req, ri, ns, name)


async def _update_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.update_scale(api, req, ri, ns, name)


async def _patch_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.patch_scale(api, req, ri, ns, name)


async def _eviction(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await eviction.create_eviction(api, req, ri, ns, name)


async def _log(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await podlog.pod_log(api, req, ri, ns, name)


async def _finalize(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.finalize_namespace(api, req, ri, name)


async def _token(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await token.create_token(api, req, ri, ns, name)


# handler name -> verb -> its function
REST: dict[str, dict[str, Serve]] = {
    "status": {"get": _get_object, "update": rest.update, "patch": rest.patch},
    "ephemeralcontainers": {"get": _get_object, "update": rest.update, "patch": ephemeralcontainers.patch},
    "scale": {"get": _get_scale, "update": _update_scale, "patch": _patch_scale},
    "binding": {"create": subresources.create_binding},    # hot: no wrapper
    "eviction": {"create": _eviction},
    "log": {"get": _log},
    "finalize": {"update": _finalize},
    "token": {"create": _token},
}

