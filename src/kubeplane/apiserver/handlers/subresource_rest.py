"""The handlers a subresource names (Subresource.handler on its resource's definition), by
verb: what APIServer.route_subresource calls for GET, POST, PUT and PATCH of
<resource>/<name>/<subresource>.

    status               get, update, patch of the object itself through the subresource's
                         strategy (/status; a CSR's /approval, upstream's ApprovalREST)
    ephemeralcontainers  the same without server-side apply (pods/ephemeralcontainers, and
                         pods/resize: upstream's ResizeREST has its shape)
    scale                the autoscaling/v1 Scale of a workload (handlers/subresources.py)
    customscale          the same of a custom resource, at the CRD's paths (apiextensions/scale.py)
    binding              pods/binding (handlers/subresources.py)
    eviction             pods/eviction (handlers/eviction.py)
    log                  pods/log (handlers/podlog.py)
    finalize             namespaces/finalize (handlers/subresources.py)
    token                serviceaccounts/token (handlers/token.py)
    proxy                pods/proxy, services/proxy, nodes/proxy, every verb (handlers/proxy.py)

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
from . import connect, ephemeralcontainers, eviction, podlog, proxy, rest, subresources, token

if TYPE_CHECKING:
    from ..server import APIServer

# (server, request, resource, namespace, name, subresource) -> the answer
Serve = Callable[["APIServer", Request, ResourceInfo, str, str, str], Awaitable[Response]]


def _by_object(fn: Callable[..., Awaitable[Response]]) -> Serve:
    """A handler of (api, req, ri, ns, name): the subresource's name is not its concern."""
    async def serve(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
        return await fn(api, req, ri, ns, name)
    return serve


async def _finalize(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    return await subresources.finalize_namespace(api, req, ri, name)      # namespaces are cluster-scoped


_get_object = _by_object(rest.get)


def _custom_scale(verb: str) -> Serve:
    """The custom resources' /scale handlers, imported on first use: a server without CRDs
    starts without them."""
    async def serve(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
        from ..apiextensions import scale
        handler: Serve = getattr(scale, f"{verb}_scale")
        return await handler(api, req, ri, ns, name, sub)
    return serve


# handler name -> verb -> its function
REST: dict[str, dict[str, Serve]] = {
    "status": {"get": _get_object, "update": rest.update, "patch": rest.patch},
    "ephemeralcontainers": {"get": _get_object, "update": rest.update, "patch": ephemeralcontainers.patch},
    "scale": {"get": _by_object(subresources.get_scale), "update": _by_object(subresources.update_scale),
              "patch": _by_object(subresources.patch_scale)},
    "customscale": {"get": _custom_scale("get"), "update": _custom_scale("update"),   # custom resources
                    "patch": _custom_scale("patch")},
    "binding": {"create": subresources.create_binding},    # hot: no wrapper
    "eviction": {"create": _by_object(eviction.create_eviction)},
    "log": {"get": _by_object(podlog.pod_log)},
    "finalize": {"update": _finalize},
    "token": {"create": _by_object(token.create_token)},
    "proxy": dict.fromkeys(("get", "create", "update", "patch", "delete", ""), proxy.connect),   # "": OPTIONS
    "connect": {"get": connect.connect, "create": connect.connect},     # pods/exec, attach, portforward
}

