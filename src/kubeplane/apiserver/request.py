"""What a request asks for: the transport-neutral Request/Response and RequestInfo parsing.

Both the HTTP front end (ASGI) and the in-process transport build a `Request` and get a
`Response`, so every behaviour is the same whichever way a client connects.
Upstream: RequestInfoFactory.NewRequestInfo (apiserver/pkg/endpoints/request/requestinfo.go)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator
from urllib.parse import parse_qsl

from .authentication.user import ANONYMOUS, UserInfo

if TYPE_CHECKING:
    from .authentication.x509 import X509Identity


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]                 # lower-cased names
    body: bytes = b""
    user: UserInfo = ANONYMOUS              # set by authentication (or the in-process transport)
    # The body of an in-process component's create, update, merge/strategic patch or delete
    # (its DeleteOptions), already
    # decoded (then body is b""); the server owns it. Trusted like the component's own code: no
    # JSON parsing, no Go-type or unknown-field walk (see client/rest.py ResourceClient._body).
    obj: dict | None = None
    # Authentication (authentication/): the connection's verified client certificate (set by
    # the HTTPS front end, app.py), the headers as received (repeated ones included: the
    # Impersonate-* headers), and, for an impersonating request, the user who authenticated
    # (`user` is then the impersonated one; audit logs both).
    x509: X509Identity | None = None
    raw_headers: list[tuple[bytes, bytes]] | None = None
    impersonated_by: UserInfo | None = None
    # Auditing (audit/): the request's audit event while one is written (audit.event.AuditContext,
    # or NOT_AUDITED), None when auditing is off; and the client's address (HTTPS only, when auditing).
    audit: Any = None
    remote_addr: str = ""
    # The query as received (handlers/proxy.py passes it on unchanged), and a proxied request's
    # body, streamed to its backend rather than read whole (app.py; handlers/proxy.py StreamedBody).
    query_string: str = ""
    body_stream: Any = None
    # An upgrade request's means to take its connection over (apiserver/upgrade.py), else None.
    hijack: Any = None
    # An in-process caller that reads nothing of a successful answer but its status code
    # (InProcessTransport.request_unread): a handler may leave the body of a success empty
    # where it would only encode it for nobody, unless the request is audited (the audit
    # event may hold the response). Never set for an HTTPS request.
    result_unread: bool = False

    @classmethod
    def build(cls, method: str, path: str, query_string: str = "", headers: dict[str, str] | None = None,
              body: bytes = b"") -> Request:
        pairs = parse_qsl(query_string, keep_blank_values=True) if query_string else []
        query = dict(pairs)
        if len(query) < len(pairs):
            # A parameter given twice is its first value, as upstream's parameter codec reads
            # url.Values (runtime.Convert_Slice_string_To_string takes in[0]; Go's Values.Get too).
            query = {}
            for k, v in pairs:
                query.setdefault(k, v)
        return cls(method.upper(), path, query, headers or {}, body, query_string=query_string)

    def flag(self, name: str) -> bool:
        """A boolean query parameter as upstream's parameter codec reads it: absent, "false" or
        "0" (any case) is false, any other value — the empty one too — true. Upstream:
        runtime.Convert_Slice_string_To_bool (apimachinery pkg/runtime/conversion.go)."""
        value = self.query.get(name)
        return value is not None and value.lower() not in ("false", "0")


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
    """Split /api/v1/namespaces/ns/pods/name/status (and /apis/<g>/<v>/...) into its parts.

    Every request passes here, the in-process components' too: the parts are indexed in place
    rather than popped off a list.
    """
    parts = tuple(filter(None, req.path.split("/")))
    info = RequestInfo(parts=parts)
    n = len(parts)
    if not n:
        return info
    prefix = parts[0]
    if prefix == "apis":
        info.api_prefix = prefix
        if n < 4:
            return info
        info.group, info.version, i = parts[1], parts[2], 3
    elif prefix == "api":
        info.api_prefix = prefix
        if n < 3:
            return info
        info.version, i = parts[1], 2
    else:
        return info
    info.is_resource_request = True
    verb = _VERBS.get(req.method, "")
    if parts[i] == "watch":               # deprecated /watch/ prefix
        i += 1
        verb = "watch"
        if i == n:                        # /api/v1/watch names no resource: a plain 404
            info.verb = verb
            info.is_resource_request = False
            return info
    rest = parts[i:]
    if rest[0] == "namespaces" and len(rest) > 1:
        info.namespace = rest[1]
        if len(rest) == 2:                # /namespaces/<name> is the namespace itself
            info.resource, info.name, info.namespace = "namespaces", rest[1], ""
            rest = ()
        else:
            rest = rest[2:]
            if rest[0] == "status" or len(rest) == 1 and rest[0] == "finalize":
                info.resource, info.name, info.subresource, info.namespace = "namespaces", parts[-2], rest[0], ""
                rest = ()
    if len(rest) > 3 and rest[2] != "proxy":      # no route but proxy's serves deeper paths: a plain 404
        info.verb = verb
        info.is_resource_request = False
        return info
    if rest:
        info.resource = rest[0]
        if len(rest) > 1:
            info.name = rest[1]
            if len(rest) > 2:
                info.subresource = rest[2]
    if not info.name:
        if verb == "get":
            verb = "watch" if req.flag("watch") else "list"
        elif verb == "delete":
            verb = "deletecollection"
    elif verb == "get" and req.flag("watch"):
        verb = "watch"
    info.verb = verb
    return info
