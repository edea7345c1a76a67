"""One request's audit event as it is built (the AuditContext) and its audit.k8s.io/v1 JSON.

The event is filled as the request goes: metadata when it arrives (LogRequestMetadata), the
request object's name and the object itself (LogRequestObject, LogRequestPatch), annotations
from authorization and admission, the response status and object (LogResponseObject), and
it is written once per stage it reaches (ProcessEventStage), unless the policy omits that
stage. The JSON has upstream's field order and omissions:

    {"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"…",
     "stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods","verb":"create",
     "user":{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]},
     "sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.0 …",
     "objectRef":{"resource":"pods","namespace":"default","name":"web","apiVersion":"v1"},
     "responseStatus":{"metadata":{},"code":201},
     "requestReceivedTimestamp":"2026-11-26T19:04:05.123456Z",
     "stageTimestamp":"2026-11-26T19:04:05.125012Z",
     "annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}

Upstream: AuditContext (apiserver/pkg/audit/context.go), LogRequestMetadata and friends
(apiserver/pkg/audit/request.go), audit.k8s.io/v1 Event (apiserver/pkg/apis/audit/v1/types.go).
"""
from __future__ import annotations

import contextvars
import ipaddress
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import orjson

from ...utils.clock import rfc3339
from ..authentication.user import UserInfo
from . import metrics
from . import policy as p

if TYPE_CHECKING:
    from ..authorization.authorizer import Attributes
    from ..request import Request, Response
    from .log import Backend

log = logging.getLogger(__name__)

MAX_USER_AGENT_LENGTH = 1024
USER_AGENT_TRUNCATE_SUFFIX = "...TRUNCATED"
# Upstream: truncate's annotationKey — the event lost its request and response objects.
TRUNCATED_ANNOTATION = "audit.k8s.io/truncated"
# Where an in-process component's request comes from: a loopback client's address.
LOOPBACK = "127.0.0.1"

# The request being audited, for code that has no Request at hand (admission plugins' audit
# annotations: admission.Attributes.audit_annotations is this event's annotations while one is
# audited). Upstream: the AuditContext in the request's context.Context.
current: contextvars.ContextVar[AuditContext | None] = contextvars.ContextVar("audit", default=None)


def annotations_of_current() -> dict[str, str]:
    """The audited request's annotations (a fresh dict when none is audited)."""
    ac = current.get()
    return ac.annotations if ac is not None else {}


class NotAudited:
    """Request.audit of a request the policy audits at level None: recording is a no-op."""

    __slots__ = ()
    enabled = False

    def add_annotation(self, key: str, value: str) -> None:
        pass

    def set_panic(self, err: BaseException) -> None:
        pass


NOT_AUDITED = NotAudited()


class AuditContext:
    """The event of one audited request (level above None). Upstream: AuditContext"""

    __slots__ = ("config", "sink", "audit_id", "request_uri", "verb", "user", "impersonated_user",
                 "source_ips", "user_agent", "object_ref", "response_status", "request_object",
                 "response_object", "received", "annotations", "level", "panicked")
    enabled = True

    def __init__(self, config: p.RequestAuditConfig, sink: Backend, audit_id: str, received: float) -> None:
        self.config = config
        self.level = p.RANK[config.level]
        self.sink = sink
        self.audit_id = audit_id
        self.received = micro_time(received)
        self.request_uri = ""
        self.verb = ""
        self.user: dict[str, Any] = {}
        self.impersonated_user: dict[str, Any] | None = None
        self.source_ips: list[str] = []
        self.user_agent = ""
        self.object_ref: dict[str, str] | None = None
        self.response_status: dict[str, Any] | None = None
        self.request_object: Any = None          # orjson.Fragment (JSON bytes) or None
        self.response_object: Any = None
        self.annotations: dict[str, str] = {}
        self.panicked = False

    # --- filling in ----------------------------------------------------------------------------

    def log_request_metadata(self, req: Request, a: Attributes) -> None:
        """Upstream: LogRequestMetadata (with the original user: the impersonated one, if any,
        is LogImpersonatedUser's)."""
        self.verb = a.verb
        self.request_uri = request_uri(req)
        ua = req.headers.get("user-agent", "")
        self.user_agent = ua if len(ua) <= MAX_USER_AGENT_LENGTH else ua[:MAX_USER_AGENT_LENGTH] + USER_AGENT_TRUNCATE_SUFFIX
        self.source_ips = source_ips(req)
        self.user = user_info(a.user)
        if a.resource_request:
            self.object_ref = {k: v for k, v in (
                ("resource", a.resource), ("namespace", a.namespace), ("name", a.name),
                ("apiGroup", a.api_group), ("apiVersion", a.api_version), ("subresource", a.subresource)) if v}

    def log_impersonated_user(self, user: UserInfo) -> None:
        """Upstream: LogImpersonatedUser."""
        self.impersonated_user = user_info(user)

    def log_request_object(self, obj: dict[str, Any] | None, raw: bytes | None) -> None:
        """The request's object: its name, namespace, uid and resourceVersion fill what the
        path did not give objectRef; at Request level and above the object itself (raw: its
        JSON as sent, used when managedFields need not go). Upstream: LogRequestObject"""
        if obj is not None:
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                ref = self.object_ref if self.object_ref is not None else {}
                for key in ("namespace", "name", "uid", "resourceVersion"):
                    if not ref.get(key) and isinstance(v := meta.get(key), str) and v:
                        ref[key] = v
                self.object_ref = _ordered_ref(ref)
        if self.level < p.RANK[p.REQUEST]:
            return
        if obj is not None and (self.config.omit_managed_fields or raw is None):
            self.request_object = orjson.Fragment(orjson.dumps(without_managed_fields(obj)
                                                               if self.config.omit_managed_fields else obj))
        elif raw is not None:
            self.request_object = orjson.Fragment(raw)

    def log_request_patch(self, patch: bytes) -> None:
        """Upstream: LogRequestPatch — the patch as sent (JSON), at Request level and above."""
        if self.level >= p.RANK[p.REQUEST]:
            self.request_object = orjson.Fragment(patch)

    def log_response(self, resp: Response) -> None:
        """The response's code, the Status of a failure (or a Status answer) in full, and at
        RequestResponse level the object. Upstream: LogResponseObject + the response writer's
        processCode."""
        body = resp.body if isinstance(resp.body, (bytes, bytearray)) else b""    # a stream: no object
        is_json = resp.content_type.startswith("application/json")
        if is_json and body[:16] == b'{"kind":"Status"':
            st = orjson.loads(body)
            self.response_status = {"metadata": {}}
            for key in ("status", "message", "reason", "details"):
                if st.get(key):
                    self.response_status[key] = st[key]
        else:
            self.response_status = {"metadata": {}}
        self.response_status["code"] = resp.status
        if self.level == p.RANK[p.REQUEST_RESPONSE] and is_json and body:
            if self.config.omit_managed_fields:
                self.response_object = orjson.Fragment(orjson.dumps(without_managed_fields(orjson.loads(body))))
            else:
                self.response_object = orjson.Fragment(bytes(body))

    def set_panic(self, err: BaseException) -> None:
        """Upstream: WithAudit's recover()."""
        self.panicked = True
        self.response_status = {"metadata": {}, "status": "Failure", "message": f"APIServer panic'd: {err!r}",
                                "reason": "InternalError", "code": 500}

    def add_annotation(self, key: str, value: str) -> None:
        """The first value set wins, as upstream's addAuditAnnotationLocked."""
        old = self.annotations.setdefault(key, value)
        if old != value:
            log.warning("Failed to set annotations[%r] to %r for audit:%r, it has already been set to %r",
                        key, value, self.audit_id, old)

    # --- writing -------------------------------------------------------------------------------

    def process_event_stage(self, stage: str, now: float | None) -> Any:
        """Hand the event at this stage to the sink (nothing if the policy omits the stage);
        returns the sink's answer (see log.Backend.process). Upstream: ProcessEventStage"""
        if stage in self.config.omit_stages:
            return True
        metrics.events[0] += 1
        return self.sink.process(self, stage, self.received if now is None else micro_time(now))

    def encode(self, stage: str, stage_timestamp: str, truncated: bool = False) -> bytes:
        """The audit.k8s.io/v1 Event as one JSON line; `truncated`: without the request and
        response objects, annotated audit.k8s.io/truncated (upstream: truncate.truncate)."""
        ev: dict[str, Any] = {"kind": "Event", "apiVersion": p.GROUP_VERSION, "level": self.config.level,
                              "auditID": self.audit_id, "stage": stage, "requestURI": self.request_uri,
                              "verb": self.verb, "user": self.user}
        if self.impersonated_user is not None:
            ev["impersonatedUser"] = self.impersonated_user
        if self.source_ips:
            ev["sourceIPs"] = self.source_ips
        if self.user_agent:
            ev["userAgent"] = self.user_agent
        if self.object_ref is not None:
            ev["objectRef"] = self.object_ref
        if self.response_status is not None:
            ev["responseStatus"] = self.response_status
        if self.request_object is not None and not truncated:
            ev["requestObject"] = self.request_object
        if self.response_object is not None and not truncated:
            ev["responseObject"] = self.response_object
        ev["requestReceivedTimestamp"] = self.received
        ev["stageTimestamp"] = stage_timestamp
        if truncated:
            ev["annotations"] = {**self.annotations, TRUNCATED_ANNOTATION: "true"}
        elif self.annotations:
            ev["annotations"] = self.annotations
        return orjson.dumps(ev, option=orjson.OPT_APPEND_NEWLINE)

    def legacy(self, stage: str) -> bytes:
        """The one-line text form (--audit-log-format=legacy). Upstream: EventString"""
        username, groups = "<none>", "<none>"
        if self.user.get("username"):
            username = self.user["username"]
            if self.user.get("groups"):
                groups = ",".join(_go_q(g) for g in self.user["groups"])
        asuser, asgroups = "<self>", "<lookup>"
        if self.impersonated_user is not None:
            asuser = self.impersonated_user["username"]
            if self.impersonated_user.get("groups") is not None:
                asgroups = ",".join(_go_q(g) for g in self.impersonated_user["groups"])
        namespace = (self.object_ref or {}).get("namespace") or "<none>"
        response = str(self.response_status["code"]) if self.response_status is not None else "<deferred>"
        ip = self.source_ips[0] if self.source_ips else "<unknown>"
        fields = (("id", self.audit_id), ("stage", stage), ("ip", ip), ("method", self.verb),
                  ("user", username), ("groups", groups), ("as", asuser), ("asgroups", asgroups),
                  ("user-agent", self.user_agent), ("namespace", namespace), ("uri", self.request_uri))
        text = " ".join(f"{k}={_go_q(v)}" for k, v in fields)
        return f'{self.received} AUDIT: {text} response="{response}"\n'.encode()


_REF_ORDER = ("resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "resourceVersion", "subresource")


def _ordered_ref(ref: dict[str, str]) -> dict[str, str]:
    return {k: ref[k] for k in _REF_ORDER if ref.get(k)}


def micro_time(ts: float) -> str:
    """metav1.MicroTime's JSON form ("2026-11-26T19:04:05.123456Z"); the seconds part is
    rfc3339's, cached (strftime costs ~3 µs, three times per audited request)."""
    seconds = int(ts)
    return f"{rfc3339(seconds)[:-1]}.{int((ts - seconds) * 1e6):06d}Z"


def _go_q(s: str) -> str:
    return orjson.dumps(s).decode()


def user_info(u: UserInfo) -> dict[str, Any]:
    """authentication.k8s.io/v1 UserInfo: username, uid, groups, extra (empty ones left out;
    no user at all, a failed authentication's: {})."""
    return u.to_dict() if u.name else {}


def request_uri(req: Request) -> str:
    """Go's URL.RequestURI(): the path, and the query as the client sent it (kubectl's is
    sorted and escaped as urlencode does)."""
    return f"{req.path}?{urlencode(req.query)}" if req.query else req.path


def source_ips(req: Request) -> list[str]:
    """X-Forwarded-For's valid addresses, then X-Real-Ip unless already there, then the peer's
    address unless it is the last one already. Upstream: utilnet.SourceIPs"""
    ips: list[str] = []
    if xff := req.headers.get("x-forwarded-for"):
        ips.extend(ip for part in xff.split(",") if (ip := _ip(part.strip())))
    if (real := req.headers.get("x-real-ip")) and (ip := _ip(real)) and ip not in ips:
        ips.append(ip)
    remote = getattr(req, "remote_addr", "") or LOOPBACK
    if not ips or ips[-1] != remote:
        ips.append(remote)
    return ips


def _ip(text: str) -> str:
    """The address's canonical text, "" if it is not one (Go's net.IP.String)."""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return ""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def without_managed_fields(obj: Any) -> Any:
    """A copy without metadata.managedFields, in a list's items and a Table's rows' objects too.
    Upstream: copyWithoutManagedFields"""
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    if isinstance(items := out.get("items"), list):
        out["items"] = [without_managed_fields(i) for i in items]
    if out.get("kind") == "Table" and isinstance(rows := out.get("rows"), list):
        out["rows"] = [{**r, "object": without_managed_fields(r.get("object"))} if isinstance(r, dict) else r
                       for r in rows]
    return out
