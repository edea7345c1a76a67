"""pods/log: the API server asks the pod's node for a container's output and passes it on.

Upstream: pkg/registry/core/pod/rest/log.go (LogREST) and pod.LogLocation, which proxies to the
kubelet's /containerLogs endpoint. Here each kubelet registers a `NodeConnection` with the API
server for its nodes (in-process kubelets hand themselves over directly).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, AsyncIterator, Protocol

from ...api import errors
from ...api.resources import ResourceInfo
from ..request import Request, Response

if TYPE_CHECKING:
    from ..server import APIServer


@dataclass(frozen=True, slots=True)
class LogOptions:
    """Upstream: PodLogOptions."""

    container: str
    follow: bool = False
    previous: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    timestamps: bool = False
    since_seconds: int | None = None


class NodeConnection(Protocol):
    """What the API server needs from a node's kubelet."""

    def container_logs(self, namespace: str, pod: str, uid: str, opts: LogOptions) -> AsyncIterator[bytes]:
        """The container's output per opts (follow: keep streaming until the container stops).
        Raises errors.StatusError (e.g. BadRequest "previous terminated container ... not found")."""


def _int(req: Request, name: str) -> int | None:
    value = req.query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.BadRequest(f"invalid {name}: {value!r}") from None


def _container(pod: dict, name: str, requested: str) -> str:
    """Upstream: podLogOptions container defaulting and validation in LogLocation."""
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []]
    init = [c["name"] for c in spec.get("initContainers") or []]
    if requested:
        if requested not in names and requested not in init:
            raise errors.BadRequest(f"container {requested} is not valid for pod {name}")
        return requested
    if len(names) == 1:
        return names[0]
    msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
    if init:
        msg += f" or one of the init containers: [{' '.join(init)}]"
    raise errors.BadRequest(msg)


async def pod_log(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound("", "pods", name)
    pod = kv.obj
    opts = LogOptions(_container(pod, name, req.query.get("container", "")), req.flag("follow"),
                      req.flag("previous"), _int(req, "tailLines"), _int(req, "limitBytes"),
                      req.flag("timestamps"), _int(req, "sinceSeconds"))
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise errors.BadRequest(f"pod {name} does not have a host assigned")
    conn = api.nodes.get(node)
    if conn is None:
        raise errors.StatusError(500, "InternalError",
                                 f'Get "https://{node}:10250/containerLogs/{ns}/{name}/{opts.container}": '
                                 f"no kubelet is serving node {node}")
    stream = conn.container_logs(ns, name, pod["metadata"].get("uid", ""), opts)
    if not opts.follow:
        chunks = [c async for c in stream]
        return Response(200, b"".join(chunks), "text/plain")
    return Response(200, stream, "text/plain")
