"""The in-process transport: a client's requests handed straight to this API server.

Components sharing the server's process (`kubeplane up`) skip sockets, TLS and HTTP parsing but
get exactly the same behaviour (authentication aside: in-process callers are trusted, each named
by its own user). It implements the client's Transport protocol, so the client package needs no
server code. Upstream: the API server's loopback client (LoopbackClientConfig, genericapiserver).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator

from ..client.transport import RawResponse
from .authentication.user import UserInfo, component
from .request import Request, RequestInfo, parse_request_info

if TYPE_CHECKING:
    from .server import APIServer

MAX_INFOS = 4096        # remembered RequestInfos of write paths (bounded: names come and go)
_infos: dict[tuple[str, str], RequestInfo] = {}


def request_info(req: Request) -> RequestInfo:
    """parse_request_info(req), remembered for a write (POST, PUT, PATCH, DELETE), whose info
    is a function of method and path alone (only a GET's verb reads the query: watch). The
    components write the same paths again and again: an Event POST, a ReplicaSet's pod create,
    a pod's four /status patches. Nobody changes a RequestInfo once parsed (server.py, audit,
    authorization, admission only read it), so one may be shared."""
    if req.method in ("GET", "HEAD"):
        return parse_request_info(req)
    key = (req.method, req.path)
    info = _infos.get(key)
    if info is None:
        if len(_infos) >= MAX_INFOS:
            _infos.clear()
        info = _infos[key] = parse_request_info(req)
    return info


class InProcessTransport:
    """Calls APIServer.route_trusted directly: no sockets, no TLS, the same routing as HTTPS requests.

    A create/update body may be a dict (a typed client's object): it reaches the server as
    Request.obj, already decoded.
    """

    accepts_objects = True

    def __init__(self, api: APIServer, user: UserInfo | str = "system:kube-controller-manager",
                 user_agent: str = "kubeplane") -> None:
        self.api = api
        # A name is a component's: its upstream user and groups (authentication/user.py component).
        self.user = component(user) if isinstance(user, str) else user
        self.user_agent = user_agent

    def _request(self, method: str, path: str, query: dict[str, str] | None, body: bytes | dict[str, Any] | None,
                 content_type: str) -> Request:
        headers = {"content-type": content_type, "user-agent": self.user_agent}
        if isinstance(body, dict):
            return Request(method, path, dict(query or {}), headers, b"", self.user, body)
        return Request(method, path, dict(query or {}), headers, body or b"", self.user)

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | dict[str, Any] | None = None,
                      content_type: str = "application/json") -> RawResponse:
        return await self._send(self._request(method, path, query, body, content_type))

    async def request_unread(self, method: str, path: str, query: dict[str, str] | None = None,
                             body: bytes | dict[str, Any] | None = None,
                             content_type: str = "application/json") -> RawResponse:
        """request, for a caller that reads nothing of a success but its status (an error's
        body it reads: the Status it raises): the server may then leave a success's body empty
        (Request.result_unread; handlers/rest.py delete, the kubelet's final delete of a pod)."""
        req = self._request(method, path, query, body, content_type)
        req.result_unread = True
        return await self._send(req)

    async def _send(self, req: Request) -> RawResponse:
        resp = await self.api.route_trusted(req, request_info(req))
        if isinstance(resp.body, (bytes, bytearray)):
            return RawResponse(resp.status, bytes(resp.body))
        chunks = [c async for c in resp.body]
        return RawResponse(resp.status, b"".join(chunks))

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        resp = await self.api.route_trusted(self._request("GET", path, query, None, "application/json"))
        if isinstance(resp.body, (bytes, bytearray)):
            yield bytes(resp.body)            # an error Status: the caller decodes it
            return
        body = resp.body
        try:
            async for chunk in body:
                for line in chunk.splitlines():
                    if line:
                        yield line
        finally:
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                await aclose()

    def event_writer(self) -> Any:
        """A writer of this user's core/v1 Event POSTs (registry/core/event_writer.py): what the
        client's event sink uses instead of the generic request path, with the same outcome."""
        from .registry.core.event_writer import InProcessEventWriter
        return InProcessEventWriter(self.api, self.user, self.user_agent)

    async def close(self) -> None:
        pass
