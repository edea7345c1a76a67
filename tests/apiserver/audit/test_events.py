"""Audit events as upstream writes them: stages, levels, user, objectRef, responseStatus,
request/response objects, annotations, the Audit-ID header."""
from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

import orjson

from kubeplane.apiserver.audit import log as auditlog
from kubeplane.apiserver.audit.filter import Auditor
from kubeplane.apiserver.audit.policy import PolicyRuleEvaluator, load_policy
from kubeplane.apiserver.request import Request

METADATA_ALL = """
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
"""
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
ALLOW = {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""}


def policy(level: str, extra: str = "") -> str:
    return f"apiVersion: audit.k8s.io/v1\nkind: Policy\n{extra}rules:\n- level: {level}\n"


async def test_a_create_at_metadata_level(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL)
    r = await api.call("POST", api.PODS, body=api.pod("web"), headers={"User-Agent": "kubectl/v1.37.0"})
    assert r.status == 201
    received, complete = out.events()
    audit_id = dict(r.headers)["audit-id"]
    assert list(complete) == ["kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user",
                              "sourceIPs", "userAgent", "objectRef", "responseStatus", "requestReceivedTimestamp",
                              "stageTimestamp", "annotations"]
    assert complete["kind"] == "Event" and complete["apiVersion"] == "audit.k8s.io/v1"
    assert (received["stage"], complete["stage"]) == ("RequestReceived", "ResponseComplete")
    assert complete["auditID"] == received["auditID"] == audit_id
    assert complete["level"] == "Metadata" and complete["verb"] == "create"
    assert complete["requestURI"] == "/api/v1/namespaces/default/pods"
    assert complete["user"] == {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    assert complete["sourceIPs"] == ["127.0.0.1"] and complete["userAgent"] == "kubectl/v1.37.0"
    # the name comes from the request's object (upstream: LogRequestObject)
    assert complete["objectRef"] == {"resource": "pods", "namespace": "default", "name": "web", "apiVersion": "v1"}
    assert complete["responseStatus"] == {"metadata": {}, "code": 201}
    assert "responseStatus" not in received and "requestObject" not in complete
    assert MICRO.match(complete["stageTimestamp"]) and received["stageTimestamp"] == received["requestReceivedTimestamp"]
    # authorization's decision, and PodSecurity's (admission) as upstream records them
    assert complete["annotations"] == {**ALLOW, "pod-security.kubernetes.io/enforce-policy": "privileged:latest"}


async def test_a_failure_records_its_status(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL)
    r = await api.get(api.PODS + "/missing")
    assert r.status == 404
    ev = out.events()[-1]
    assert ev["responseStatus"] == {"metadata": {}, "status": "Failure", "message": 'pods "missing" not found',
                                    "reason": "NotFound", "details": {"name": "missing", "kind": "pods"},
                                    "code": 404}
    assert ev["objectRef"] == {"resource": "pods", "namespace": "default", "name": "missing", "apiVersion": "v1"}


async def test_request_and_response_objects(api: Any, audited: Any) -> None:
    out = audited(policy("RequestResponse"))
    r = await api.call("POST", api.PODS, body=api.pod("web"), query={"fieldManager": "kubectl"})
    assert r.status == 201
    received, complete = out.events()
    assert received["requestObject"]["metadata"]["name"] == "web"
    assert "responseObject" not in received
    assert complete["responseObject"] == r.json
    assert complete["responseObject"]["metadata"]["managedFields"]
    assert complete["requestURI"] == "/api/v1/namespaces/default/pods?fieldManager=kubectl"


async def test_request_level_has_no_response_object(api: Any, audited: Any) -> None:
    out = audited(policy("Request"))
    await api.call("POST", api.PODS, body=api.pod("web"))
    _, complete = out.events()
    assert complete["requestObject"]["kind"] == "Pod" and "responseObject" not in complete


async def test_omit_managed_fields(api: Any, audited: Any) -> None:
    out = audited(policy("RequestResponse", "omitManagedFields: true\n"))
    r = await api.call("POST", api.PODS, body=api.pod("web"), query={"fieldManager": "kubectl"})
    assert r.json["metadata"]["managedFields"]
    complete = out.events()[-1]
    assert "managedFields" not in complete["responseObject"]["metadata"]
    await api.get(api.PODS)
    listed = out.events()[-1]
    assert listed["verb"] == "list" and listed["responseObject"]["items"]
    assert all("managedFields" not in i["metadata"] for i in listed["responseObject"]["items"])


async def test_a_patch_is_logged_as_sent(api: Any, audited: Any) -> None:
    await api.call("POST", api.PODS, body=api.pod("web"))
    out = audited(policy("Request"))
    patch = {"metadata": {"labels": {"a": "b"}}}
    r = await api.call("PATCH", api.PODS + "/web", body=orjson.dumps(patch),
                       headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200
    assert out.events()[-1]["requestObject"] == patch


async def test_omit_stages_and_level_none(api: Any, audited: Any) -> None:
    out = audited("""
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
""")
    r = await api.get("/api/v1/namespaces/default/configmaps")
    assert r.status == 200 and dict(r.headers)["audit-id"]      # the header even at level None
    assert out.events() == []
    await api.get(api.PODS)
    assert [e["stage"] for e in out.events()] == ["ResponseComplete"]


async def test_an_incoming_audit_id_is_kept(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL)
    r = await api.call("GET", api.PODS, headers={"Audit-ID": "my-id"})
    assert dict(r.headers)["audit-id"] == "my-id"
    assert {e["auditID"] for e in out.events()} == {"my-id"}


async def test_non_resource_request(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL)
    await api.get("/version")
    ev = out.events()[-1]
    assert ev["requestURI"] == "/version" and ev["verb"] == "get" and "objectRef" not in ev


async def test_source_ips_as_upstream(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL)
    req = Request.build("GET", "/version", "", {"x-forwarded-for": "10.0.0.1, bogus, 10.0.0.2",
                                                 "x-real-ip": "10.0.0.3"})
    req.remote_addr = "192.168.1.9"
    await api.server.route_trusted(req)
    assert out.events()[-1]["sourceIPs"] == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "192.168.1.9"]
    req = Request.build("GET", "/version", "", {"x-forwarded-for": "10.0.0.1"})
    req.remote_addr = "10.0.0.1"        # already the last: not twice
    await api.server.route_trusted(req)
    assert out.events()[-1]["sourceIPs"] == ["10.0.0.1"]


async def test_the_query_is_part_of_the_request_uri(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL)
    await api.get(api.PODS, {"labelSelector": "app=web", "limit": "500"})
    ev = out.events()[-1]
    assert ev["requestURI"] == "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb&limit=500"
    assert ev["verb"] == "list"


async def test_a_watch_has_response_started_then_complete(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL)
    w = await api.open_watch(api.PODS)
    assert w.status == 200
    assert [e["stage"] for e in out.events()] == ["RequestReceived", "ResponseStarted"]
    await w._it.aclose()
    stages = [e["stage"] for e in await out.wait_for(3)]
    assert stages == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    assert out.events()[-1]["verb"] == "watch" and out.events()[-1]["responseStatus"]["code"] == 200


async def test_a_bug_is_the_panic_stage(api: Any, audited: Any, monkeypatch: Any) -> None:
    out = audited(METADATA_ALL)

    async def boom(*args: Any) -> Any:
        raise RuntimeError("boom")
    monkeypatch.setattr(api.server, "route", boom)
    r = await api.get(api.PODS)
    assert r.status == 500
    ev = out.events()[-1]
    assert ev["stage"] == "Panic"
    assert ev["responseStatus"] == {"metadata": {}, "status": "Failure", "message": "APIServer panic'd: RuntimeError('boom')",
                                    "reason": "InternalError", "code": 500}


async def test_admission_annotations(api: Any, audited: Any) -> None:
    await api.call("PUT", "/api/v1/namespaces/default", body={
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "default", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}})
    out = audited(METADATA_ALL)
    r = await api.call("POST", api.PODS, body=api.pod("web"))
    assert r.status == 201
    annotations = out.events()[-1]["annotations"]
    assert annotations["pod-security.kubernetes.io/enforce-policy"] == "baseline:latest"
    assert annotations["authorization.k8s.io/decision"] == "allow"


async def test_the_legacy_format(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL, fmt=auditlog.FORMAT_LEGACY)
    await api.get("/version")
    line = out.data.decode().splitlines()[-1]
    assert re.match(r'^\S+ AUDIT: id="[0-9a-f-]{36}" stage="ResponseComplete" ip="127.0.0.1" method="get" '
                    r'user="system:anonymous" groups="\\"system:unauthenticated\\"" as="<self>" asgroups="<lookup>" '
                    r'user-agent="" namespace="<none>" uri="/version" response="200"$', line), line


async def test_batch_mode_does_not_wait(api: Any, audited: Any) -> None:
    out = audited(METADATA_ALL, mode=auditlog.MODE_BATCH)
    await api.get("/version")
    api.server.audit.sink.shutdown()         # writes what is queued
    assert [e["stage"] for e in out.events()] == ["RequestReceived", "ResponseComplete"]


async def test_no_policy_no_audit_id(api: Any) -> None:
    r = await api.get("/version")
    assert "audit-id" not in dict(r.headers)


class Stuck:
    """A Writer whose first write waits until released: the writer thread is busy meanwhile."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.started.set()
        self.release.wait(10)
        self.lines.append(data)

    def flush(self) -> None:
        pass


async def test_batch_mode_drops_events_when_the_buffer_is_full(api: Any, caplog: Any) -> None:
    """Upstream's buffered backend: a full buffer drops the event ("audit buffer queue blocked")
    and the request goes on."""
    out = Stuck()
    backend = auditlog.LogBackend(out, mode=auditlog.MODE_BATCH, buffer_size=2)
    api.server.audit = Auditor(api.server, PolicyRuleEvaluator(load_policy(METADATA_ALL.encode())), backend)
    assert (await api.get("/version")).status == 200           # 2 events: the thread takes the first
    await asyncio.to_thread(out.started.wait, 5)
    for _ in range(2):
        assert (await api.get("/version")).status == 200       # 4 more: 2 fit, 2 are dropped
    assert backend.dropped >= 2 and "audit buffer queue blocked" in caplog.text
    out.release.set()
    backend.shutdown()
    assert len(out.lines) == 6 - backend.dropped


class Broken:
    def write(self, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        pass


async def test_blocking_strict_fails_the_request_blocking_does_not(api: Any) -> None:
    policy = PolicyRuleEvaluator(load_policy(METADATA_ALL.encode()))
    strict = auditlog.LogBackend(Broken(), mode=auditlog.MODE_BLOCKING_STRICT)
    api.server.audit = Auditor(api.server, policy, strict)
    r = await api.get("/version")
    assert (r.status, r.body) == (500, b'Internal Server Error: "/version": failed to store audit event\n')
    strict.shutdown()
    blocking = auditlog.LogBackend(Broken(), mode=auditlog.MODE_BLOCKING)
    api.server.audit = Auditor(api.server, policy, blocking)
    assert (await api.get("/version")).status == 200
    assert blocking.failed == 2
    blocking.shutdown()


async def test_metrics(api: Any, audited: Any) -> None:
    from kubeplane.apiserver.audit import metrics
    from kubeplane.apiserver.audit.options import AuditOptions, configure
    configure(api.server, AuditOptions(policy_file="", log_path=""))      # nothing configured: no auditor
    before_events, before_none = metrics.events[0], metrics.levels.get("None", 0)
    metrics.register()
    audited("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/healthz]\n"
            "- level: Metadata\n")
    await api.get("/version")
    await api.get("/healthz")
    assert metrics.events[0] - before_events == 2 and metrics.levels["None"] - before_none == 1
    r = await api.get("/metrics")
    assert "apiserver_audit_event_total" in r.body.decode() and 'apiserver_audit_level_total{level="Metadata"}' in r.body.decode()


async def test_a_failed_authentication(api: Any, audited: Any) -> None:
    """Upstream: WithFailedAuthenticationAudit — one ResponseStarted event, no user."""
    from kubeplane.apiserver.app import ASGIApp
    out = audited(METADATA_ALL)
    api.server.tokens = {"good": "admin"}
    api.server.token_users = {}
    app = ASGIApp(api.server)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(msg: dict[str, Any]) -> None:
        sent.append(msg)
    await app({"type": "http", "method": "GET", "path": "/api/v1/namespaces/default/pods", "query_string": b"",
               "headers": [(b"authorization", b"Bearer wrong")], "client": ("10.1.2.3", 5555)}, receive, send)
    assert sent[0]["status"] == 401 and (b"audit-id", out.events()[0]["auditID"].encode()) in sent[0]["headers"]
    (ev,) = out.events()
    assert ev["stage"] == "ResponseStarted" and ev["user"] == {} and ev["sourceIPs"] == ["10.1.2.3"]
    assert ev["responseStatus"] == {"metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401}
    assert ev["verb"] == "list" and ev["objectRef"] == {"resource": "pods", "namespace": "default", "apiVersion": "v1"}


async def test_impersonation(api: Any, audited: Any) -> None:
    """The requester is the event's user (and what the policy matches), the impersonated one its
    impersonatedUser (upstream: LogImpersonatedUser). Authentication keeps the requester as
    Request.impersonated_by when it impersonates."""
    from kubeplane.apiserver.authentication.user import authenticated

    out = audited("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  users: [alice]\n")
    req = Request("GET", "/version", {}, {})
    req.user, req.impersonated_by = authenticated("bob", "devs"), authenticated("alice")
    assert (await api.server.route_trusted(req)).status == 200
    ev = out.events()[-1]
    assert ev["user"] == {"username": "alice", "groups": ["system:authenticated"]}
    assert ev["impersonatedUser"] == {"username": "bob", "groups": ["devs", "system:authenticated"]}
    assert list(ev).index("impersonatedUser") == list(ev).index("user") + 1


async def test_a_big_body_is_decoded_off_the_loop(api: Any, audited: Any, monkeypatch: Any) -> None:
    from kubeplane.apiserver.audit import filter as audit_filter
    offloaded: list[Any] = []
    real = audit_filter.in_worker

    async def spy(fn: Any, *args: Any) -> Any:
        offloaded.append(fn.__name__)
        return await real(fn, *args)
    monkeypatch.setattr(audit_filter, "in_worker", spy)
    out = audited(policy("RequestResponse", "omitManagedFields: true\n"))
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x" * 100_000}}
    r = await api.call("POST", "/api/v1/namespaces/default/configmaps", body=big)
    assert r.status == 201
    assert offloaded == ["log_request_body", "log_response"]
    complete = out.events()[-1]
    assert complete["objectRef"]["name"] == "big" and complete["requestObject"]["data"]["k"] == "x" * 100_000
    assert complete["responseObject"]["metadata"]["name"] == "big"


async def test_a_forbidden_request_records_the_decision(api: Any, audited: Any) -> None:
    from kubeplane.apiserver.authorization.authorizer import Decision

    class Deny:
        def authorize(self, a: Any) -> tuple[Decision, str]:
            return Decision.NO_OPINION, "no RBAC policy matched"
    api.server.authorizer = Deny()
    out = audited(METADATA_ALL)
    r = await api.get(api.PODS)
    assert r.status == 403
    ev = out.events()[-1]
    assert ev["annotations"] == {"authorization.k8s.io/decision": "forbid",
                                 "authorization.k8s.io/reason": "no RBAC policy matched"}
    assert ev["responseStatus"]["code"] == 403 and ev["responseStatus"]["reason"] == "Forbidden"


async def test_a_non_resource_verb_is_the_method(api: Any, audited: Any) -> None:
    """Upstream's RequestInfo verb for a non-resource request: the HTTP method in lower case."""
    out = audited("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  verbs: [head]\n")
    await api.call("GET", "/version")
    await api.call("HEAD", "/version")
    assert [(e["verb"], e["requestURI"]) for e in out.events()] == [("head", "/version")] * 2
