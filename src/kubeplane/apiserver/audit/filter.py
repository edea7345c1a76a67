"""The audit step of the request path: evaluate the policy, write the event at each stage.

APIServer.route_trusted hands every request to Auditor.serve while auditing is configured
(APIServer.audit; None: not one more step than the attribute check), the in-process
components' requests too: upstream audits them as any remote client. Per request:

1. the audit ID: the client's Audit-ID header, or a new UUID; sent back in Audit-ID;
2. the policy's level for the request as authenticated (the requester, before impersonation);
   level None: served without an event (Request.audit = NOT_AUDITED);
3. RequestReceived, with the metadata and the request object (its name for objectRef; the
   object itself from level Request); then the request is served, with Request.audit and the
   `current` context variable set so authorization and admission add annotations;
4. the response status (and object at RequestResponse), then ResponseComplete; a long-running
   request (watch, pods/log) has ResponseStarted when its response starts and ResponseComplete
   when its stream ends; a request that failed on a bug has Panic instead.

Upstream: WithAuditInit (endpoints/filters/audit_init.go) and WithAudit (endpoints/filters/audit.go).
"""
from __future__ import annotations

import logging
import random
import uuid
from typing import TYPE_CHECKING, Any, AsyncIterator

import orjson

from .. import codec
from ..authentication.user import UserInfo
from ..authorization.authorizer import Attributes, attributes_of
from ..filters.longrunning import is_long_running
# A body or response this large is decoded in the worker thread, as the handlers decide.
from ..handlers.common import OFFLOAD_BYTES
from ..request import Request, RequestInfo, Response
from ..worker import in_worker
from . import metrics
from . import policy as p
from .event import NOT_AUDITED, AuditContext, current
from .log import Backend

if TYPE_CHECKING:
    from ..server import APIServer

log = logging.getLogger(__name__)

NO_USER = UserInfo("")              # a request that failed authentication: upstream's nil user
HEADER_AUDIT_ID = "audit-id"
RANK_REQUEST_RESPONSE = p.RANK[p.REQUEST_RESPONSE]        # upstream: audit.k8s.io/v1 HeaderAuditID ("Audit-ID")
_WITH_OBJECT = frozenset({"create", "update"})
_WITH_OPTIONS = frozenset({"delete", "deletecollection"})


class Auditor:
    """The policy and the backend, and the step that uses them (see the module docstring)."""

    def __init__(self, api: APIServer, evaluator: p.PolicyRuleEvaluator, sink: Backend) -> None:
        self.api = api
        self.evaluator = evaluator
        self.sink = sink

    async def serve(self, req: Request, info: RequestInfo) -> Response:
        api = self.api
        audit_id = req.headers.get(HEADER_AUDIT_ID) or new_audit_id()
        requester = req.impersonated_by or req.user      # an impersonating request: who asked
        a = audit_attributes(requester, info, req)
        config = self.evaluator.evaluate_policy_rule(a)
        metrics.observe_policy_level(config.level)
        if config.level == p.NONE:
            req.audit = NOT_AUDITED
            resp = await api.route_trusted(req, info)
            resp.headers.append((HEADER_AUDIT_ID, audit_id))
            return resp
        clock = api.clock
        ac = AuditContext(config, self.sink, audit_id, clock.now())
        ac.log_request_metadata(req, a)
        if requester is not req.user:
            ac.log_impersonated_user(req.user)
        if len(req.body) > OFFLOAD_BYTES:          # decoded in the worker thread, as the handlers do
            await in_worker(log_request_body, ac, req, info)
        else:
            log_request_body(ac, req, info)
        req.audit = ac
        if not await _done(ac.process_event_stage(p.REQUEST_RECEIVED, None)):
            metrics.rejected[0] += 1
            return Response(500, f'Internal Server Error: "{ac.request_uri}": failed to store audit event\n'.encode(),
                            "text/plain; charset=utf-8", [(HEADER_AUDIT_ID, audit_id)])
        token = current.set(ac)
        try:
            resp = await api.route_trusted(req, info)
        finally:
            current.reset(token)
        resp.headers.append((HEADER_AUDIT_ID, audit_id))
        if ac.panicked:
            await _done(ac.process_event_stage(p.PANIC, clock.now()))
            return resp
        if ac.level == RANK_REQUEST_RESPONSE and config.omit_managed_fields and _size(resp) > OFFLOAD_BYTES:
            await in_worker(ac.log_response, resp)    # a big list decoded and encoded again
        else:
            ac.log_response(resp)
        if is_long_running(info):
            await _done(ac.process_event_stage(p.RESPONSE_STARTED, clock.now()))
            if not isinstance(resp.body, (bytes, bytearray)):
                resp.body = _CompleteWhenDone(resp.body, ac, clock)
                return resp
        await _done(ac.process_event_stage(p.RESPONSE_COMPLETE, clock.now()))
        return resp

    async def answered_outside(self, req: Request, info: RequestInfo, resp: Response) -> None:
        """The event of a request answered by a filter that upstream runs inside its audit
        filter (DefaultBuildHandlerChain: WithAudit wraps WithMaxInFlightLimit, and the handler
        reads the body) or that lets the audited handler finish (WithTimeoutForNonLongRunning-
        Requests): a 429, a 413, a 504. Its ResponseComplete with the answer's status; and its
        RequestReceived first when the request did not reach the audit step (only its metadata:
        no handler read its body)."""
        ac = req.audit
        if ac is None:
            audit_id = req.headers.get(HEADER_AUDIT_ID) or new_audit_id()
            requester = req.impersonated_by or req.user
            a = audit_attributes(requester, info, req)
            config = self.evaluator.evaluate_policy_rule(a)
            metrics.observe_policy_level(config.level)
            resp.headers.append((HEADER_AUDIT_ID, audit_id))
            if config.level == p.NONE:
                req.audit = NOT_AUDITED
                return
            ac = AuditContext(config, self.sink, audit_id, self.api.clock.now())
            ac.log_request_metadata(req, a)
            if requester is not req.user:
                ac.log_impersonated_user(req.user)
            req.audit = ac
            await _done(ac.process_event_stage(p.REQUEST_RECEIVED, None))
        elif isinstance(ac, AuditContext):
            resp.headers.append((HEADER_AUDIT_ID, ac.audit_id))
        if not isinstance(ac, AuditContext):
            return
        ac.log_response(resp)
        await _done(ac.process_event_stage(p.RESPONSE_COMPLETE, self.api.clock.now()))

    async def failed_request(self, req: Request, info: RequestInfo, resp: Response, message: str) -> None:
        """A request refused before authentication for another reason than credentials (a bad
        ?timeout=, 400): one ResponseStarted event with no user, the refusal's message and code.
        Upstream: withFailedRequestAudit (endpoints/filters/request_deadline.go)."""
        await self.failed_authentication(req, info, resp, message)

    async def failed_authentication(self, req: Request, info: RequestInfo, resp: Response,
                                    message: str | None = None) -> None:
        """A 401: one ResponseStarted event, with no user and the methods tried as the message.
        Upstream: WithFailedAuthenticationAudit (endpoints/filters/authn_audit.go)"""
        audit_id = req.headers.get(HEADER_AUDIT_ID) or new_audit_id()
        resp.headers.append((HEADER_AUDIT_ID, audit_id))
        a = audit_attributes(NO_USER, info, req)
        config = self.evaluator.evaluate_policy_rule(a)
        metrics.observe_policy_level(config.level)
        if config.level == p.NONE:
            return
        ac = AuditContext(config, self.sink, audit_id, self.api.clock.now())
        ac.log_request_metadata(req, a)
        ac.response_status = {"metadata": {}, "message": auth_methods(req) if message is None else message,
                              "code": resp.status}
        await _done(ac.process_event_stage(p.RESPONSE_STARTED, self.api.clock.now()))

    def shutdown(self) -> None:
        self.sink.shutdown()


def audit_attributes(user: UserInfo, info: RequestInfo, req: Request) -> Attributes:
    """What the policy matches and the event records: a resource request's parts, or for any
    other request its path and the HTTP method in lower case (upstream's RequestInfo verb for a
    non-resource request: "get", "post", "head", ...)."""
    if info.is_resource_request:
        return attributes_of(user, info, req.path)
    return Attributes(user, req.method.lower(), False, path=req.path)


def auth_methods(req: Request) -> str:
    """Upstream: getAuthMethods (a client certificate is not seen here: kubeplane's front end
    authenticates bearer tokens)."""
    methods = []
    auth = req.headers.get("authorization", "").strip()
    if auth[:6].lower() == "basic ":
        methods.append("basic")
    parts = auth.split(" ")
    if len(parts) > 1 and parts[0].lower() == "bearer":
        methods.append("bearer")
    if req.query.get("access_token", "").strip():
        methods.append("access_token")
    if methods:
        return "Authentication failed, attempted: " + ", ".join(methods)
    return "Authentication failed, no credentials provided"


def _size(resp: Response) -> int:
    return len(resp.body) if isinstance(resp.body, (bytes, bytearray)) else 0


def new_audit_id() -> str:
    """A random (version 4) UUID. From Python's Mersenne Twister, not os.urandom: an audit ID
    names a request and guards nothing, and the getrandom call releases the GIL, which the log's
    writer thread then holds (measured: ~300 µs of waiting per request under load)."""
    return str(uuid.UUID(int=random.getrandbits(128), version=4))


async def _done(result: Any) -> bool:
    """The sink's answer, awaited if it is to come (blocking modes)."""
    return result if isinstance(result, bool) else bool(await result)


class _CompleteWhenDone:
    """The stream, then ResponseComplete when it ends or is closed (the client went away, it
    timed out), even if it was never read; not waited for, whatever the mode: the stream may
    be closing because its task is cancelled."""

    def __init__(self, body: AsyncIterator[bytes], ac: AuditContext, clock: Any) -> None:
        self.body, self.ac, self.clock = body, ac, clock
        self.it = body.__aiter__()
        self.done = False

    def __aiter__(self) -> _CompleteWhenDone:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.it.__anext__()
        except StopAsyncIteration:
            self._complete()
            raise

    async def aclose(self) -> None:
        try:
            aclose = getattr(self.body, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            self._complete()

    def _complete(self) -> None:
        if not self.done:
            self.done = True
            self.ac.process_event_stage(p.RESPONSE_COMPLETE, self.clock.now())


def log_request_body(ac: AuditContext, req: Request, info: RequestInfo) -> None:
    """What upstream's handlers log of the body: a create's or update's object (LogRequestObject),
    a patch (LogRequestPatch), a delete's DeleteOptions. An in-process component's object is
    already decoded (Request.obj); a body that does not decode is left out (the request fails)."""
    verb = info.verb
    if verb in _WITH_OBJECT:
        if req.obj is not None:
            ac.log_request_object(req.obj, None)
        elif req.body:
            obj, raw = _decode(req)
            if isinstance(obj, dict):
                ac.log_request_object(obj, raw)
    elif verb == "patch":
        if ac.level < p.RANK[p.REQUEST]:
            return
        if req.obj is not None:
            ac.log_request_patch(orjson.dumps(req.obj))
        elif req.body:
            obj, raw = _decode(req)
            if raw is not None:
                ac.log_request_patch(raw)
            elif obj is not None:
                ac.log_request_patch(orjson.dumps(obj))
    elif verb in _WITH_OPTIONS and req.body and ac.level >= p.RANK[p.REQUEST]:
        obj, raw = _decode(req)
        if isinstance(obj, dict):
            ac.log_request_object(None, raw if raw is not None else orjson.dumps(obj))


def _decode(req: Request) -> tuple[Any, bytes | None]:
    """(the decoded body, its JSON bytes if it was sent as JSON); (None, None) if it does not decode."""
    mt = codec.media_type(req.headers)
    try:
        if mt == codec.JSON or mt.endswith("+json"):
            return orjson.loads(req.body), req.body
        if mt == codec.PROTOBUF:
            from ...api import protobuf
            return protobuf.decode(req.body), None
        import yaml
        return yaml.load(req.body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), None
    except Exception:                   # the handler answers the bad body
        return None, None
