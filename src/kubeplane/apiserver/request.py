"""What a request asks for: the transport-neutral Request/Response and RequestInfo parsing.

Both the HTTP front end (ASGI) and the in-process transport build a `Request` and get a
`Response`, so every behaviour is the same whichever way a client connects.
Upstream: RequestInfoFactory.NewRequestInfo (apiserver/pkg/endpoints/request/requestinfo.go)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AsyncIterator
from urllib.parse import parse_qsl


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]                 # lower-cased names
    body: bytes = b""
    user: str = ""
    # The body of an in-process component's create, update or merge/strategic patch, already
    # decoded (then body is b""); the server owns it. Trusted like the component's own code: no
    # JSON parsing, no Go-type or unknown-field walk (see client/rest.py ResourceClient._body).
    obj: dict | None = None

    @classmethod
    def build(cls, method: str, path: str, query_string: str = "", headers: dict[str, str] | None = None,
              body: bytes = b"") -> Request:
        return cls(method.upper(), path, dict(parse_qsl(query_string, keep_blank_values=True)),
                   headers or {}, body)

    def flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("true", "1")


@dataclass(slots=True)
class Response:
    status: int
    body: bytes | AsyncIterator[bytes] = b""
    content_type: str = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class RequestInfo:
    verb: str = ""
    api_prefix: str = ""        # "api" or "apis"
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    is_resource_request: bool = False
    parts: tuple[str, ...] = ()


_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def parse_request_info(req: Request) -> RequestInfo:
    """Split /api/v1/namespaces/ns/pods/name/status (and /apis/<g>/<v>/...) into its parts."""
    parts = tuple(p for p in req.path.split("/") if p)
    info = RequestInfo(parts=parts)
    if not parts or parts[0] not in ("api", "apis"):
        return info
    info.api_prefix = parts[0]
    rest = list(parts[1:])
    if info.api_prefix == "apis":
        if len(rest) < 3:
            return info
        info.group = rest.pop(0)
    elif len(rest) < 2:
        return info
    info.version = rest.pop(0)
    info.is_resource_request = True
    info.verb = _VERBS.get(req.method, "")
    if rest and rest[0] == "watch":       # deprecated /watch/ prefix
        rest.pop(0)
        info.verb = "watch"
        if not rest:                      # /api/v1/watch names no resource: a plain 404
            info.is_resource_request = False
            return info
    if rest[0] == "namespaces" and len(rest) > 1:
        info.namespace = rest[1]
        if len(rest) == 2:                # /namespaces/<name> is the namespace itself
            info.resource, info.name, info.namespace = "namespaces", rest[1], ""
            rest = []
        else:
            rest = rest[2:]
            if rest and rest[0] == "status" or len(rest) == 1 and rest[0] == "finalize":
                info.resource, info.name, info.subresource, info.namespace = "namespaces", parts[-2], rest[0], ""
                rest = []
    if len(rest) > 3:                     # no route serves deeper paths: a plain 404
        info.is_resource_request = False
        return info
    if rest:
        info.resource = rest[0]
        if len(rest) > 1:
            info.name = rest[1]
        if len(rest) > 2:
            info.subresource = rest[2]
    if not info.name:
        if info.verb == "get":
            info.verb = "watch" if req.flag("watch") else "list"
        elif info.verb == "delete":
            info.verb = "deletecollection"
    elif info.verb == "get" and req.flag("watch"):
        info.verb = "watch"
    return info
