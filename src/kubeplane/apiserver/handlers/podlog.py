"""pods/log: the API server asks the pod's node for a container's output and passes it on.

Two ways to reach a node's kubelet:
- in-process kubelets (`kubeplane up --nodes N`) register a `NodeConnection` in `api.nodes`
  and are called directly;
- any other kubelet (`kubeplane kubelet`) is reached as upstream does: GET the Node, take its
  preferred address and status.daemonEndpoints.kubeletEndpoint.Port, and proxy over HTTPS to
  /containerLogs/{namespace}/{pod}/{container} (kubelet/server.py), passing its status code
  and body on, streaming for follow.

Upstream: pkg/registry/core/pod/rest/log.go (LogREST), pod.LogLocation
(pkg/registry/core/pod/strategy.go), NodeConnectionInfoGetter (pkg/kubelet/client).
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, AsyncIterator, Protocol
from urllib.parse import quote

import orjson

from ...api import errors
from ...api.podlog import LogOptions
from ...api.resources import ResourceInfo, lookup
from ...utils.clock import parse_rfc3339
from ..request import Request, Response

if TYPE_CHECKING:
    from ..server import APIServer


class NodeConnection(Protocol):
    """What the API server needs from a node's kubelet."""

    def container_logs(self, namespace: str, pod: str, uid: str, opts: LogOptions) -> AsyncIterator[bytes]:
        """The container's output per opts (follow: keep streaming until the container stops).
        Raises errors.StatusError (e.g. BadRequest "previous terminated container ... not found")."""

    async def kubelet_server(self) -> tuple[int, str]:
        """(port, token) of the kubelet's HTTPS server on loopback, started on the first call
        (nodes/proxy passes requests on to it)."""


def _int(req: Request, name: str) -> int | None:
    value = req.query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.BadRequest(f"invalid {name}: {value!r}") from None


def validate_container(pod: dict, name: str, requested: str) -> str:
    """The container a pods/log, exec or attach request is for: the one asked for, which must
    be one of the pod's containers, init containers or ephemeral containers; else the pod's
    only container; else a 400 naming them all (init, then app, then ephemeral containers, as
    VisitContainers walks them).

    Example: containers [c1 c2], init [i1], ephemeral [dbg], none asked for ->
    "a container name must be specified for pod web, choose one of: [i1 c1 c2 dbg]"

    Upstream: validateContainer and podHasContainerWithName (pkg/registry/core/pod/strategy.go)
    """
    spec = pod.get("spec") or {}
    containers = [c.get("name") for c in spec.get("containers") or []]
    every = [c.get("name") for key in ("initContainers", "containers", "ephemeralContainers")
             for c in spec.get(key) or []]
    if requested:
        if requested not in every:
            raise errors.BadRequest(f"container {requested} is not valid for pod {name}")
        return requested
    if len(containers) == 1:
        return str(containers[0])
    if not containers:
        raise errors.BadRequest(f"a container name must be specified for pod {name}")
    raise errors.BadRequest(f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]")


async def pod_log(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound("", "pods", name)
    pod = kv.obj
    opts = LogOptions(validate_container(pod, name, req.query.get("container", "")), req.flag("follow"),
                      req.flag("previous"), _int(req, "tailLines"), _int(req, "limitBytes"),
                      req.flag("timestamps"), _int(req, "sinceSeconds"))
    since_time = req.query.get("sinceTime", "")
    validate_pod_log_options(name, opts, since_time)
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        # Upstream: LogLocation gives no location for a pod not yet scheduled, and StreamObject
        # answers a null stream with 204 No Content (`kubectl logs` prints nothing, exit 0).
        return Response(204, b"", "text/plain")
    conn = api.nodes.get(node)
    if conn is None:
        return await proxy_container_logs(api, node, ns, name, opts, since_time)
    if since_time:
        # What a kubelet does with sinceTime: the output since then, i.e. the last now - t seconds.
        opts = replace(opts, since_seconds=max(0.0, api.clock.now() - parse_rfc3339(since_time)))  # type: ignore[arg-type]
    stream = conn.container_logs(ns, name, pod["metadata"].get("uid", ""), opts)
    if not opts.follow:
        chunks = [c async for c in stream]
        return Response(200, b"".join(chunks), "text/plain")
    return Response(200, stream, "text/plain")


def validate_pod_log_options(name: str, opts: LogOptions, since_time: str) -> None:
    """400 for a sinceTime that is no time; 422 for values upstream's ValidatePodLogOptions
    rejects (tailLines < 0, limitBytes < 1, sinceSeconds < 1, both sinceSeconds and sinceTime)."""
    if since_time:
        try:
            parse_rfc3339(since_time)
        except ValueError:
            raise errors.BadRequest(f'parsing time "{since_time}" as "2006-01-02T15:04:05Z07:00": '
                                    "cannot parse it as RFC 3339") from None
    errs = []
    if opts.tail_lines is not None and opts.tail_lines < 0:
        errs.append(errors.invalid("tailLines", opts.tail_lines, "must be greater than or equal to 0"))
    if opts.limit_bytes is not None and opts.limit_bytes < 1:
        errs.append(errors.invalid("limitBytes", opts.limit_bytes, "must be greater than 0"))
    if opts.since_seconds is not None and since_time:
        errs.append(errors.forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif opts.since_seconds is not None and opts.since_seconds < 1:
        errs.append(errors.invalid("sinceSeconds", opts.since_seconds, "must be greater than 0"))
    if errs:
        raise errors.Invalid("", "PodLogOptions", name, errs)


# --- proxying to a kubelet over HTTPS ------------------------------------------------------

# Which node address to dial, best first. Upstream's default (--kubelet-preferred-address-types)
# is Hostname, InternalDNS, InternalIP, ExternalDNS, ExternalIP; our nodes' Hostname is the node
# name, which resolves nowhere, so InternalIP (where a kubelet server listens) comes first and the
# rest keep upstream's order.
PREFERRED_ADDRESS_TYPES = ("InternalIP", "Hostname", "InternalDNS", "ExternalDNS", "ExternalIP")
KUBELET_PORT = 10250             # when the node reports none (upstream: KubeletClientConfig.Port)
DIAL_TIMEOUT = 5.0               # seconds to connect (upstream: KubeletClientConfig.HTTPTimeout)
MAX_ERROR_BODY = 50000           # bytes of an error body kept (upstream: maxReadLength)


def preferred_node_address(node: dict[str, Any], types: tuple[str, ...] = PREFERRED_ADDRESS_TYPES) -> str:
    """The first address of the first type in `types` the node reports; a missing Hostname
    address falls back to the kubernetes.io/hostname label. Upstream: GetPreferredNodeAddress
    (pkg/util/node)."""
    addresses = (node.get("status") or {}).get("addresses") or []
    for t in types:
        for a in addresses:
            if a.get("type") == t and a.get("address"):
                return str(a["address"])
        hostname = ((node.get("metadata") or {}).get("labels") or {}).get("kubernetes.io/hostname")
        if t == "Hostname" and hostname:
            return str(hostname)
    known = " ".join(f"{{{a.get('type', '')} {a.get('address', '')}}}" for a in addresses)
    # Upstream's GetConnectionInfo returns this as a plain error (a 500 InternalError); nothing
    # is wrong in the server, the node cannot be reached: 503, the same message.
    raise errors.StatusError(503, "ServiceUnavailable", f"no preferred addresses found; known addresses: [{known}]")


def kubelet_port(node: dict[str, Any]) -> int:
    """status.daemonEndpoints.kubeletEndpoint.Port, or 10250. Upstream: NodeConnectionInfoGetter"""
    port = (((node.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    return int(port) if port and int(port) > 0 else KUBELET_PORT


def log_location(node: dict[str, Any], ns: str, name: str, opts: LogOptions, since_time: str = "") -> str:
    """The kubelet URL for the container's log, query included.

    Example: node with InternalIP 127.0.0.1 and port 41234, pod default/web, container c,
    follow + tailLines 10 -> https://127.0.0.1:41234/containerLogs/default/web/c?follow=true&tailLines=10

    Upstream: LogLocation (pkg/registry/core/pod/strategy.go)
    """
    host = preferred_node_address(node)
    if ":" in host:
        host = f"[{host}]"                      # an IPv6 literal
    params = [(k, "true") for k, on in (("follow", opts.follow), ("previous", opts.previous),
                                        ("timestamps", opts.timestamps)) if on]
    params += [(k, str(v)) for k, v in (("sinceSeconds", opts.since_seconds), ("sinceTime", since_time or None),
                                        ("tailLines", opts.tail_lines), ("limitBytes", opts.limit_bytes))
               if v is not None]
    path = "/".join(quote(p, safe="") for p in ("containerLogs", ns, name, opts.container))
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in params)
    return f"https://{host}:{kubelet_port(node)}/{path}" + (f"?{query}" if query else "")


async def proxy_container_logs(api: APIServer, node_name: str, ns: str, name: str, opts: LogOptions,
                               since_time: str = "") -> Response:
    """GET the log from the node's kubelet server and pass its answer on.

    The kubelet's certificate is not verified (upstream's default without
    --kubelet-certificate-authority); the request carries the API server's bearer token,
    which the kubelet checks. Upstream: LogREST.Get + genericrest.LocationStreamer.
    """
    import aiohttp

    nodes = lookup("", "v1", "nodes")
    assert nodes is not None
    kv = await api.storage.get(nodes.key("", node_name))
    if kv is None:
        raise errors.NotFound("", "nodes", node_name)
    url = log_location(kv.obj, ns, name, opts, since_time)
    token = next(iter(api.tokens), "")
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False),
                                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=DIAL_TIMEOUT))
    try:
        resp = await session.get(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as e:
        await session.close()
        raise errors.StatusError(500, "InternalError", f'Get "{url}": {_dial_error(e)}') from None
    except BaseException:
        await session.close()
        raise
    if resp.status == 200 and opts.follow:
        return Response(200, _relay(session, resp), "text/plain")
    try:
        body = await resp.read() if resp.status == 200 else await resp.content.read(MAX_ERROR_BODY)
    finally:
        resp.release()
        await session.close()
    return Response(200, body, "text/plain") if resp.status == 200 else kubelet_error(resp.status, body)


async def _relay(session: Any, resp: Any) -> AsyncIterator[bytes]:
    """The kubelet's body chunk by chunk; closing this (the client went away) closes the
    connection to the kubelet, which then stops reading the log."""
    try:
        async for chunk in resp.content.iter_any():
            yield chunk
    finally:
        resp.release()
        await session.close()


def kubelet_error(code: int, body: bytes) -> Response:
    """The kubelet's failure as our answer: a Status body passes through as it is; plain text
    becomes a Status as upstream's response checker makes it (500 -> InternalError,
    400 -> BadRequest, others keep their code). Upstream: GenericHttpResponseChecker.Check"""
    try:
        st = orjson.loads(body)
    except orjson.JSONDecodeError:
        st = None
    if isinstance(st, dict) and st.get("kind") == "Status":
        return Response(code, body)
    text = body.decode("utf-8", "replace")
    if code == 500:
        err: errors.StatusError = errors.InternalError(text)
    elif code == 400:
        err = errors.BadRequest(text)
    else:
        err = errors.StatusError(code, _REASONS.get(code, ""), text or f"the server responded with the status "
                                 f"code {code} but did not return more information")
    return Response(err.code, orjson.dumps(err.status()))


_REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict",
            422: "Invalid", 429: "TooManyRequests", 503: "ServiceUnavailable", 504: "Timeout"}


def _dial_error(e: BaseException) -> str:
    """Like Go's dial errors where we can: "dial tcp 127.0.0.1:10250: connect: connection refused"."""
    if isinstance(e, asyncio.TimeoutError):
        return "dial tcp: i/o timeout"
    os_err = getattr(e, "os_error", None)
    if isinstance(os_err, OSError) and os_err.errno:
        where = f"{getattr(e, 'host', '')}:{getattr(e, 'port', '')}"
        return f"dial tcp {where}: connect: {os.strerror(os_err.errno).lower()}"
    return str(e) or type(e).__name__
