"""Both webhook plugins end to end in one process: configurations written through the API,
writes through the API, a real HTTPS webhook server (webhook_server.py). Upstream's cases
(plugin/webhook/testing/testcase.go: NewNonMutatingTestCases, NewMutatingTestCases) where they
apply; the attacker's inputs answer with upstream's statuses, never a 500 traceback."""
from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest
from aiohttp import web
from conftest import NS, call
from kubeplane.testing.webhook_server import SERVICE_HOST, WebhookServer, allow, patch_response

from kubeplane.apiserver.admission.webhook import client as client_mod
from kubeplane.apiserver.admission.webhook import matchconditions
from kubeplane.apiserver.server import APIServer

ADM = "/apis/admissionregistration.k8s.io/v1"
PODS = f"/api/v1/namespaces/{NS}/pods"
Obj = dict[str, Any]


def pod(name: str = "p", labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": NS}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def webhook(hooks: WebhookServer, name: str, path: str, **kw: Any) -> Obj:
    h: Obj = {"name": name, "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca_bundle},
              "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                         "resources": ["pods"]}],
              "sideEffects": "None", "admissionReviewVersions": ["v1"]}
    h.update(kw)
    return h


async def configure(api: APIServer, kind: str, name: str, *hooks: Obj) -> None:
    plural = "mutatingwebhookconfigurations" if kind == "Mutating" else "validatingwebhookconfigurations"
    status, body, _ = await call(api, "POST", f"{ADM}/{plural}", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name}, "webhooks": list(hooks)})
    assert status == 201, body


async def test_mutating_webhook_adds_a_label(api: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/mutate"] = lambda r: patch_response(
        [{"op": "add", "path": "/metadata/labels", "value": {"added": "yes"}}])
    await configure(api, "Mutating", "m", webhook(hooks, "label.example.com", "/mutate"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 201, body
    assert body["metadata"]["labels"] == {"added": "yes"}
    status, stored, _ = await call(api, "GET", f"{PODS}/p")
    assert stored["metadata"]["labels"] == {"added": "yes"}


async def test_admission_review_carries_what_upstream_fills(api: APIServer, hooks: WebhookServer) -> None:
    await configure(api, "Validating", "v", webhook(hooks, "v.example.com", "/v", timeoutSeconds=7))
    status, body, _ = await call(api, "POST", PODS, pod(labels={"x": "1"}))
    assert status == 201, body
    [review] = hooks.reviews["/v"]
    req = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    assert review["query"] == {"timeout": "7s"}
    assert len(req["uid"]) == 36
    assert req["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert req["requestKind"] == req["kind"] and req["requestResource"] == req["resource"]
    assert req["name"] == "p" and req["namespace"] == NS and req["operation"] == "CREATE"
    assert req["userInfo"]["username"]
    assert req["object"]["metadata"]["labels"] == {"x": "1"} and req["oldObject"] is None
    assert req["dryRun"] is False
    assert req["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}


async def test_validating_webhook_denies_with_its_message(api: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/deny"] = lambda r: {"allowed": False, "status": {"code": 403, "reason": "Forbidden",
                                                                      "message": "pods are not welcome"}}
    await configure(api, "Validating", "v", webhook(hooks, "deny.example.com", "/deny"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == 'admission webhook "deny.example.com" denied the request: pods are not welcome'
    status, _, _ = await call(api, "GET", f"{PODS}/p")
    assert status == 404


@pytest.mark.parametrize(("result", "code", "message"), [
    pytest.param(None, 400, 'admission webhook "d.example.com" denied the request without explanation', id="none"),
    pytest.param({"code": 200, "reason": "Nope"}, 400,
                 'admission webhook "d.example.com" denied the request: Nope', id="reason-low-code"),
    pytest.param({"code": 422, "message": "bad"}, 422, 'admission webhook "d.example.com" denied the request: bad',
                 id="code-kept"),
])
async def test_denial_status_as_to_status_err(api: APIServer, hooks: WebhookServer, result: Any, code: int,
                                              message: str) -> None:
    hooks.handlers["/d"] = lambda r: {"allowed": False, **({"status": result} if result else {})}
    await configure(api, "Validating", "v", webhook(hooks, "d.example.com", "/d"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert (status, body["code"], body["message"]) == (code, code, message)


async def test_warnings_become_warning_headers(api: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/w"] = lambda r: {"allowed": True, "warnings": ["mind the gap"]}
    await configure(api, "Validating", "v", webhook(hooks, "w.example.com", "/w"))
    status, _, headers = await call(api, "POST", PODS, pod())
    assert status == 201
    assert ("warning", '299 - "mind the gap"') in headers


@pytest.mark.parametrize(("policy", "expect"), [("Fail", 500), ("Ignore", 201)])
async def test_failure_policy_when_the_server_is_down(api: APIServer, hooks: WebhookServer, policy: str,
                                                      expect: int) -> None:
    port = hooks.port
    await hooks.stop()
    await configure(api, "Validating", "v", webhook(hooks, "down.example.com", "/x", failurePolicy=policy))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == expect, body
    if expect == 500:
        assert body["reason"] == "InternalError"
        assert body["message"] == (
            'Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: '
            f'Post "https://127.0.0.1:{port}/x?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused')


async def test_mutating_failure_policy_ignore_records_failed_open(api: APIServer, hooks: WebhookServer) -> None:
    await hooks.stop()
    await configure(api, "Mutating", "m", webhook(hooks, "down.example.com", "/x", failurePolicy="Ignore"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 201, body


def raw(body: bytes, status: int = 200, content_type: str = "application/json") -> Any:
    return lambda r: web.Response(body=body, status=status, content_type=content_type)


@pytest.mark.parametrize(("handler", "reason"), [
    pytest.param(raw(b"garbage"), "failed to call webhook: couldn't get version/kind; json parse error", id="garbage"),
    pytest.param(raw(b"oops", 500, "text/plain"),
                 'failed to call webhook: an error on the server ("oops") has prevented the request from succeeding',
                 id="500-text"),
    pytest.param(raw(b'{"kind":"Status","message":"not today","code":503}', 503),
                 "failed to call webhook: not today", id="503-status"),
    pytest.param(raw(b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}'),
                 "received invalid webhook response: webhook response was absent", id="no-response"),
    pytest.param(raw(b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":'
                     b'{"uid":"other","allowed":true}}'),
                 'received invalid webhook response: expected response.uid="', id="wrong-uid"),
    pytest.param(raw(b"[1, 2]"), "received invalid webhook response: unexpected response type", id="a-list"),
    pytest.param(lambda r: {"allowed": True, "patchType": "JSONPatch", "patch": "W10="},
                 "received invalid webhook response: validating webhook may not return response.patch",
                 id="validating-patch"),
])
async def test_a_webhook_answering_garbage(api: APIServer, hooks: WebhookServer, handler: Any, reason: str) -> None:
    hooks.handlers["/g"] = handler
    await configure(api, "Validating", "v", webhook(hooks, "g.example.com", "/g"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 500, body
    assert body["message"].startswith(f'Internal error occurred: failed calling webhook "g.example.com": {reason}')


async def test_a_huge_body_is_a_failed_call(api: APIServer, hooks: WebhookServer,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mod, "MAX_RESPONSE_BYTES", 64 * 1024)
    hooks.handlers["/big"] = raw(b'{"a":"' + b"x" * (1024 * 1024) + b'"}')
    await configure(api, "Validating", "v", webhook(hooks, "big.example.com", "/big"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 500
    assert "response body larger than 65536 bytes" in body["message"]


async def test_a_slow_server_times_out(api: APIServer, hooks: WebhookServer) -> None:
    release = asyncio.Event()

    async def slow(review: Obj) -> Obj:
        await release.wait()
        return {"allowed": True}
    hooks.handlers["/slow"] = slow
    await configure(api, "Validating", "v", webhook(hooks, "slow.example.com", "/slow", timeoutSeconds=1))
    try:
        status, body, _ = await call(api, "POST", PODS, pod())
    finally:
        release.set()
    assert status == 500
    assert body["message"].endswith(f'Post "{hooks.url("/slow")}?timeout=1s": context deadline exceeded')


async def test_a_certificate_from_another_ca_is_refused(api: APIServer, hooks: WebhookServer) -> None:
    other = WebhookServer()
    h = webhook(hooks, "tls.example.com", "/t")
    h["clientConfig"]["caBundle"] = other.ca_bundle
    await configure(api, "Validating", "v", h)
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 500
    assert "x509: certificate signed by unknown authority" in body["message"]


@pytest.mark.parametrize(("ops", "code", "text"), [
    pytest.param([{"op": "remove", "path": "/spec/containers"}], 422, "spec.containers: Required value",
                 id="invalid-object"),
    pytest.param([{"op": "add", "path": "/metadata/labels", "value": 5}], 500,
                 "cannot unmarshal number into Go struct field", id="wrong-type"),
    pytest.param([{"op": "remove", "path": "/nothing/here"}], 500, "Internal error occurred", id="bad-path"),
    pytest.param([{"op": "replace", "path": "/kind", "value": "Secret"}], 500, "apiVersion and kind", id="kind"),
])
async def test_a_patch_that_makes_the_object_invalid(api: APIServer, hooks: WebhookServer, ops: list[Obj],
                                                     code: int, text: str) -> None:
    hooks.handlers["/p"] = lambda r: patch_response(ops)
    await configure(api, "Mutating", "m", webhook(hooks, "p.example.com", "/p"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == code, body
    assert text in body["message"]
    assert (await call(api, "GET", f"{PODS}/p"))[0] == 404


async def test_an_undecodable_patch_follows_the_failure_policy(api: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/p"] = lambda r: {"allowed": True, "patchType": "JSONPatch",
                                      "patch": base64.b64encode(b"{not json").decode()}
    await configure(api, "Mutating", "m", webhook(hooks, "p.example.com", "/p", failurePolicy="Ignore"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 201, body


async def test_selectors(api: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/d"] = lambda r: {"allowed": False, "status": {"message": "no"}}
    await configure(api, "Validating", "v",
                    webhook(hooks, "ns.example.com", "/d", namespaceSelector={"matchLabels": {"team": "b"}}),
                    webhook(hooks, "obj.example.com", "/d", objectSelector={
                        "matchExpressions": [{"key": "deny", "operator": "Exists"}]}))
    assert (await call(api, "POST", PODS, pod("ok")))[0] == 201
    status, body, _ = await call(api, "POST", PODS, pod("bad", labels={"deny": ""}))
    assert status == 400 and body["message"] == 'admission webhook "obj.example.com" denied the request: no'
    assert len(hooks.reviews["/d"]) == 1


async def test_dry_run_and_side_effects(api: APIServer, hooks: WebhookServer) -> None:
    """v1 validation allows only None and NoneOnDryRun: a configuration stored by an older
    version (v1beta1 allowed Some and Unknown) is written straight into storage."""
    await api.storage.create("/registry/validatingwebhookconfigurations/v", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "v"},
        "webhooks": [webhook(hooks, "some.example.com", "/s", sideEffects="Some"),
                     webhook(hooks, "none.example.com", "/n", sideEffects="NoneOnDryRun")]})
    status, body, _ = await call(api, "POST", PODS, pod(), query="dryRun=All")
    assert status == 400
    assert body["message"] == 'admission webhook "some.example.com" does not support dry run'
    assert hooks.reviews["/n"][0]["request"]["dryRun"] is True
    assert "/s" not in hooks.reviews
    assert (await call(api, "POST", PODS, pod()))[0] == 201


async def test_reinvocation_if_needed(api: APIServer, hooks: WebhookServer) -> None:
    def first(review: Obj) -> Obj:
        labels = review["request"]["object"]["metadata"].get("labels") or {}
        return patch_response([{"op": "add", "path": "/metadata/labels", "value": {**labels, "first": "yes"}}])

    def second(review: Obj) -> Obj:
        labels = review["request"]["object"]["metadata"].get("labels") or {}
        return patch_response([{"op": "add", "path": "/metadata/labels", "value": {**labels, "second": "yes"}}])
    hooks.handlers["/1"], hooks.handlers["/2"] = first, second
    await configure(api, "Mutating", "m", webhook(hooks, "a.example.com", "/1", reinvocationPolicy="IfNeeded"),
                    webhook(hooks, "b.example.com", "/2"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 201, body
    assert body["metadata"]["labels"] == {"first": "yes", "second": "yes"}
    assert len(hooks.reviews["/1"]) == 2 and len(hooks.reviews["/2"]) == 1
    assert hooks.reviews["/1"][1]["request"]["object"]["metadata"]["labels"] == {"first": "yes", "second": "yes"}


async def test_never_reinvoked_by_default(api: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/2"] = lambda r: patch_response([{"op": "add", "path": "/metadata/labels", "value": {"b": "1"}}])
    await configure(api, "Mutating", "m", webhook(hooks, "a.example.com", "/1"), webhook(hooks, "b.example.com", "/2"))
    assert (await call(api, "POST", PODS, pod()))[0] == 201
    assert len(hooks.reviews["/1"]) == 1


async def test_service_reference_resolves_to_an_endpoint(api: APIServer, hooks: WebhookServer) -> None:
    await api.storage.create(f"/registry/services/{NS}/webhook", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook", "namespace": NS},
        "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.9", "ports": [{"name": "https", "port": 443}]}})
    await api.storage.create(f"/registry/endpointslices/{NS}/webhook-abc", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
        "metadata": {"name": "webhook-abc", "namespace": NS, "labels": {"kubernetes.io/service-name": "webhook"}},
        "ports": [{"name": "https", "port": hooks.port, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.9.9.9"], "conditions": {"ready": False}},
                      {"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]})
    h = webhook(hooks, "svc.example.com", "/")
    h["clientConfig"] = {"service": {"namespace": NS, "name": "webhook", "path": "/svc"}, "caBundle": hooks.ca_bundle}
    await configure(api, "Validating", "v", h)
    hooks.handlers["/svc"] = lambda r: {"allowed": False, "status": {"message": "via service"}}
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 400 and body["message"].endswith("via service"), body
    assert SERVICE_HOST == "webhook.test.svc"      # the name the certificate is checked for


async def test_service_without_endpoints(api: APIServer, hooks: WebhookServer) -> None:
    h = webhook(hooks, "svc.example.com", "/")
    h["clientConfig"] = {"service": {"namespace": NS, "name": "missing", "port": 8443}, "caBundle": hooks.ca_bundle}
    await configure(api, "Validating", "v", h)
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 500
    assert body["message"] == ('Internal error occurred: failed calling webhook "svc.example.com": failed to call '
                               'webhook: Post "https://missing.test.svc:8443?timeout=10s": service "missing" not found')


@pytest.mark.parametrize(("policy", "expect"), [("Fail", 403), ("Ignore", 201)])
async def test_match_conditions_without_a_cel_engine(api: APIServer, hooks: WebhookServer, policy: str,
                                                     expect: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matchconditions, "EVALUATOR", None)
    hooks.handlers["/d"] = lambda r: {"allowed": False}
    await configure(api, "Validating", "v", webhook(hooks, "mc.example.com", "/d", failurePolicy=policy,
                                                    matchConditions=[{"name": "c", "expression": "true"}]))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == expect, body
    if expect == 403:
        assert body["message"] == f'pods "p" is forbidden: {matchconditions.NOT_AVAILABLE}'
    assert "/d" not in hooks.reviews


async def test_match_conditions_through_an_evaluator(api: APIServer, hooks: WebhookServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """What the CEL engine plugs in: one result per condition; any false skips the webhook."""
    seen: list[Obj] = []

    def evaluator(conditions: Any, activation: Obj) -> list[Any]:
        seen.append(activation)
        labels = activation["object"]["metadata"].get("labels") or {}
        return ["skip" not in labels for _ in conditions]
    monkeypatch.setattr(matchconditions, "EVALUATOR", evaluator)
    hooks.handlers["/d"] = lambda r: {"allowed": False}
    await configure(api, "Validating", "v", webhook(hooks, "mc.example.com", "/d",
                                                    matchConditions=[{"name": "c", "expression": "true"}]))
    assert (await call(api, "POST", PODS, pod("a", labels={"skip": "1"})))[0] == 201
    assert (await call(api, "POST", PODS, pod("b")))[0] == 400
    assert seen[0]["request"]["operation"] == "CREATE" and seen[0]["oldObject"] is None


async def test_match_conditions_in_cel(api: APIServer, hooks: WebhookServer) -> None:
    """The CEL engine decides: a false condition skips the webhook, an error under Fail refuses
    the request; a condition that does not compile is refused when the configuration is written."""
    hooks.handlers["/d"] = lambda r: {"allowed": False}
    skip = "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"
    await configure(api, "Validating", "v", webhook(hooks, "mc.example.com", "/d",
                                                    matchConditions=[{"name": "not-skipped", "expression": skip},
                                                                     {"name": "create", "expression":
                                                                      "request.operation == 'CREATE'"}]))
    assert (await call(api, "POST", PODS, pod("a", labels={"skip": "1"})))[0] == 201
    assert (await call(api, "POST", PODS, pod("b")))[0] == 400
    status, body, _ = await call(api, "POST", f"{ADM}/validatingwebhookconfigurations",
                                 {"apiVersion": "admissionregistration.k8s.io/v1",
                                  "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bad"},
                                  "webhooks": [webhook(hooks, "bad.example.com", "/d",
                                                       matchConditions=[{"name": "c", "expression": "object.("}])]})
    assert status == 422, body
    assert body["details"]["causes"][0]["field"] == "webhooks[0].matchConditions[0].expression"


async def test_configurations_are_never_sent_to_webhooks(api: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/d"] = lambda r: {"allowed": False}
    h = webhook(hooks, "all.example.com", "/d")
    h["rules"] = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]
    await configure(api, "Validating", "v", h)
    await configure(api, "Validating", "v2", webhook(hooks, "other.example.com", "/o"))
    assert "/d" not in hooks.reviews
    status, _, _ = await call(api, "DELETE", f"{ADM}/validatingwebhookconfigurations/v")
    assert status == 200
    assert (await call(api, "POST", PODS, pod()))[0] == 201


async def test_configuration_changes_apply_at_once(api: APIServer, hooks: WebhookServer) -> None:
    assert (await call(api, "POST", PODS, pod("a")))[0] == 201
    hooks.handlers["/d"] = lambda r: {"allowed": False}
    await configure(api, "Validating", "v", webhook(hooks, "d.example.com", "/d"))
    assert (await call(api, "POST", PODS, pod("b")))[0] == 400
    assert (await call(api, "DELETE", f"{ADM}/validatingwebhookconfigurations/v"))[0] == 200
    assert (await call(api, "POST", PODS, pod("c")))[0] == 201


async def test_update_sends_the_old_object_and_delete_has_no_object(api: APIServer, hooks: WebhookServer) -> None:
    h = webhook(hooks, "u.example.com", "/u")
    h["rules"][0]["operations"] = ["UPDATE", "DELETE"]
    await configure(api, "Validating", "v", h)
    assert (await call(api, "POST", PODS, pod()))[0] == 201
    status, body, _ = await call(api, "PATCH", f"{PODS}/p", {"metadata": {"labels": {"n": "1"}}},
                                 content_type="application/merge-patch+json")
    assert status == 200, body
    status, body, _ = await call(api, "DELETE", f"{PODS}/p")
    assert status == 200, body
    upd, dele = (r["request"] for r in hooks.reviews["/u"])
    assert upd["operation"] == "UPDATE" and upd["object"]["metadata"]["labels"] == {"n": "1"}
    assert upd["oldObject"]["metadata"].get("labels") is None
    assert upd["options"]["kind"] == "UpdateOptions"
    assert dele["operation"] == "DELETE" and dele["object"] is None and dele["oldObject"]["metadata"]["name"] == "p"


async def test_audit_annotations_and_metrics(api: APIServer, hooks: WebhookServer) -> None:
    from kubeplane.apiserver.admission import Attributes, Operation
    from kubeplane.apiserver.admission.webhook import metrics

    hooks.handlers["/m"] = lambda r: patch_response([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}],
                                                    auditAnnotations={"k": "v"})
    await configure(api, "Mutating", "m", webhook(hooks, "an.example.com", "/m"))
    plugin = next(p for p in api.admission.plugins if p.NAME == "MutatingAdmissionWebhook")
    a = Attributes(Operation.CREATE, "", "v1", "pods", "Pod", NS, "p", pod())
    await plugin.admit(a)
    assert a.obj is not None and a.obj["metadata"]["labels"] == {"a": "b"}
    assert a.audit_annotations["an.example.com/k"] == "v"
    assert orjson.loads(a.audit_annotations["mutation.webhook.admission.k8s.io/round_0_index_0"]) == {
        "configuration": "m", "webhook": "an.example.com", "mutated": True}
    assert orjson.loads(a.audit_annotations["patch.webhook.admission.k8s.io/round_0_index_0"])["patch"] == [
        {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
    families = {f.name: f for f in metrics.collect()}
    samples = families["apiserver_admission_webhook_admission_duration_seconds"].samples
    assert any(s.labels.get("name") == "an.example.com" and s.labels.get("type") == "admit" for s in samples)


async def test_no_webhook_no_call(api: APIServer, hooks: WebhookServer) -> None:
    """allow() is the default handler: nothing configured, nothing received."""
    assert allow({}) == {"allowed": True}
    assert (await call(api, "POST", PODS, pod()))[0] == 201
    assert hooks.reviews == {}


async def test_a_patch_growing_the_object_past_the_store_limit(api: APIServer, hooks: WebhookServer) -> None:
    big = "x" * (3 * 1024 * 1024 + 10)
    hooks.handlers["/p"] = lambda r: patch_response([{"op": "add", "path": "/metadata/annotations",
                                                      "value": {"big": big}}])
    await configure(api, "Mutating", "m", webhook(hooks, "p.example.com", "/p"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 413, body["message"][:200]
    assert body["reason"] == "RequestEntityTooLarge"


async def test_virtual_resources_are_never_sent_to_webhooks(api: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/d"] = lambda r: {"allowed": False}
    h = webhook(hooks, "all.example.com", "/d")
    h["rules"] = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]
    await configure(api, "Validating", "v", h)
    status, body, _ = await call(api, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert status == 201, body
    assert "/d" not in hooks.reviews


async def test_a_compressed_answer_is_not_expanded(api: APIServer, hooks: WebhookServer) -> None:
    """A gzip bomb (64 MiB of zeros in ~64 KiB) is never decompressed: identity was asked for."""
    import gzip
    bomb = gzip.compress(b"0" * (64 * 1024 * 1024), compresslevel=9)
    hooks.handlers["/z"] = lambda r: web.Response(body=bomb, headers={"Content-Encoding": "gzip"},
                                                  content_type="application/json")
    await configure(api, "Validating", "v", webhook(hooks, "z.example.com", "/z"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 500
    assert "json parse error" in body["message"]
    assert hooks.reviews["/z"][0]["query"] == {"timeout": "10s"}


async def test_in_tree_plugins_run_again_after_a_webhook_changed_the_object(api: APIServer,
                                                                          hooks: WebhookServer) -> None:
    """Upstream's reinvoker: a sidecar a webhook injects gets LimitRanger's defaults, and an
    IfNeeded webhook is called again when the in-tree plugins changed the object."""
    await api.storage.create(f"/registry/limitranges/{NS}/lr", {
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": NS},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "100m"}}]}})
    hooks.handlers["/observe"] = allow
    hooks.handlers["/inject"] = lambda r: patch_response([{"op": "add", "path": "/spec/containers/-",
                                                           "value": {"name": "sidecar", "image": "envoy"}}])
    await configure(api, "Mutating", "m", webhook(hooks, "a-observe.example.com", "/observe",
                                                  reinvocationPolicy="IfNeeded"),
                    webhook(hooks, "b-inject.example.com", "/inject"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 201, body
    sidecar = body["spec"]["containers"][1]
    assert sidecar["name"] == "sidecar"
    assert sidecar["resources"] == {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}
    assert len(hooks.reviews["/inject"]) == 1
    second = hooks.reviews["/observe"][1]["request"]["object"]
    assert second["spec"]["containers"][1]["resources"]["limits"] == {"cpu": "200m"}


def hpa_v1() -> Obj:
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": NS},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}}


@pytest.mark.parametrize(("versions", "policy", "sent"), [
    pytest.param(["v1"], "Equivalent", "v1", id="exact-version"),
    pytest.param(["v2"], "Equivalent", "v2", id="equivalent-version"),
    pytest.param(["v2"], "Exact", None, id="exact-policy"),
])
async def test_match_policy(api: APIServer, hooks: WebhookServer, versions: list[str], policy: str,
                            sent: str | None) -> None:
    """Upstream's matchPolicy: a v1 HorizontalPodAutoscaler request reaches a webhook that asks
    for v2 only when Equivalent, with the object converted to the webhook's version."""
    h = webhook(hooks, "hpa.example.com", "/hpa", matchPolicy=policy)
    h["rules"] = [{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": versions,
                   "resources": ["horizontalpodautoscalers"]}]
    hooks.handlers["/hpa"] = lambda r: patch_response([{"op": "add", "path": "/metadata/labels",
                                                        "value": {"seen": r["request"]["kind"]["version"]}}])
    await configure(api, "Mutating", "m", h)
    status, body, _ = await call(api, "POST", f"/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers",
                                 hpa_v1())
    assert status == 201, body
    assert body["spec"]["targetCPUUtilizationPercentage"] == 50
    if sent is None:
        assert "/hpa" not in hooks.reviews
        return
    req = hooks.reviews["/hpa"][0]["request"]
    assert req["object"]["apiVersion"] == f"autoscaling/{sent}"
    assert req["kind"] == {"group": "autoscaling", "version": sent, "kind": "HorizontalPodAutoscaler"}
    assert req["resource"]["version"] == sent
    assert req["requestKind"]["version"] == "v1" and req["requestResource"]["version"] == "v1"
    assert body["metadata"]["labels"] == {"seen": sent}


async def test_admission_review_v1beta1(api: APIServer, hooks: WebhookServer) -> None:
    """A webhook speaking only v1beta1 gets it; its patch needs no patchType (upstream's v1beta1 case)."""
    def answer(review: Obj) -> Any:
        patch = base64.b64encode(orjson.dumps([{"op": "add", "path": "/metadata/labels", "value": {"b": "1"}}]))
        return web.Response(body=orjson.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                                               "response": {"uid": review["request"]["uid"], "allowed": True,
                                                            "patch": patch.decode()}}),
                            content_type="application/json")
    hooks.handlers["/b"] = answer
    await configure(api, "Mutating", "m", webhook(hooks, "beta.example.com", "/b", admissionReviewVersions=["v1beta1"]))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 201, body
    assert body["metadata"]["labels"] == {"b": "1"}
    assert hooks.reviews["/b"][0]["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_validating_webhooks_are_asked_at_once_and_the_first_refusal_wins(api: APIServer,
                                                                                hooks: WebhookServer) -> None:
    """All matching validating webhooks are called concurrently (each waits for the other here);
    configurations in name order, so "a" refuses before "b"."""
    both = asyncio.Event()
    arrived: list[str] = []

    async def deny(review: Obj, name: str) -> Obj:
        arrived.append(name)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 5)
        return {"allowed": False, "status": {"message": f"no from {name}"}}
    hooks.handlers["/a"] = lambda r: deny(r, "a")
    hooks.handlers["/b"] = lambda r: deny(r, "b")
    await configure(api, "Validating", "z-second", webhook(hooks, "b.example.com", "/b"))
    await configure(api, "Validating", "a-first", webhook(hooks, "a.example.com", "/a"))
    status, body, _ = await call(api, "POST", PODS, pod())
    assert status == 400
    assert body["message"] == 'admission webhook "a.example.com" denied the request: no from a'
    assert sorted(arrived) == ["a", "b"]


def core_event() -> Obj:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS}, "reason": "Started",
            "message": "started", "type": "Normal", "source": {"component": "kubelet"}}


async def test_match_policy_equivalent_across_groups(api: APIServer, hooks: WebhookServer) -> None:
    """A webhook for events.k8s.io/v1 events is called for a core/v1 event write (both are stored
    under /registry/events/: upstream's cohabiting resources), sees the request as its own kind
    (converted: `note`, `regarding`), and its patch on that form is stored."""
    h = webhook(hooks, "events.example.com", "/ev")
    h["rules"] = [{"operations": ["CREATE"], "apiGroups": ["events.k8s.io"], "apiVersions": ["v1"],
                   "resources": ["events"]}]
    hooks.handlers["/ev"] = lambda r: patch_response([{"op": "replace", "path": "/note",
                                                       "value": r["request"]["object"]["note"] + " (seen)"}])
    await configure(api, "Mutating", "m", h)
    status, body, _ = await call(api, "POST", f"/api/v1/namespaces/{NS}/events", core_event())
    assert status == 201, body
    assert body["message"] == "started (seen)"
    req = hooks.reviews["/ev"][0]["request"]
    assert req["kind"] == {"group": "events.k8s.io", "version": "v1", "kind": "Event"}
    assert req["resource"] == {"group": "events.k8s.io", "version": "v1", "resource": "events"}
    assert req["requestKind"] == {"group": "", "version": "v1", "kind": "Event"}
    assert req["requestResource"] == {"group": "", "version": "v1", "resource": "events"}
    assert req["object"]["apiVersion"] == "events.k8s.io/v1"
    assert req["object"]["regarding"]["name"] == "p"


async def test_match_policy_exact_across_groups(api: APIServer, hooks: WebhookServer) -> None:
    h = webhook(hooks, "events.example.com", "/ev", matchPolicy="Exact")
    h["rules"] = [{"operations": ["CREATE"], "apiGroups": ["events.k8s.io"], "apiVersions": ["v1"],
                   "resources": ["events"]}]
    hooks.handlers["/ev"] = lambda r: patch_response([])
    await configure(api, "Validating", "v", h)
    status, body, _ = await call(api, "POST", f"/api/v1/namespaces/{NS}/events", core_event())
    assert status == 201, body
    assert "/ev" not in hooks.reviews


async def test_options_carry_the_requests_options(api: APIServer, hooks: WebhookServer) -> None:
    """request.options is the request's CreateOptions / UpdateOptions (a PATCH's PatchOptions as
    UpdateOptions, force dropped) / DeleteOptions, as upstream's handlers pass them."""
    h = webhook(hooks, "o.example.com", "/o")
    h["rules"][0]["operations"] = ["*"]
    await configure(api, "Validating", "v", h)
    status, body, _ = await call(api, "POST", PODS, pod(), query="fieldManager=mgr&fieldValidation=Strict&dryRun=All")
    assert status == 201, body
    assert (await call(api, "POST", PODS, pod()))[0] == 201
    # force only with server-side apply (ValidatePatchOptions: a merge patch with force is a 422)
    status, body, _ = await call(api, "PATCH", f"{PODS}/p", {"metadata": {"labels": {"n": "1"}}},
                                 query="fieldManager=patcher&force=true", content_type="application/merge-patch+json")
    assert status == 422 and body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'), body
    status, body, _ = await call(api, "PATCH", f"{PODS}/p", {"apiVersion": "v1", "kind": "Pod",
                                                             "metadata": {"name": "p", "labels": {"n": "1"}}},
                                 query="fieldManager=patcher&force=true", content_type="application/apply-patch+yaml")
    assert status == 200, body
    status, body, _ = await call(api, "DELETE", f"{PODS}/p",
                                 {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                                  "propagationPolicy": "Background", "preconditions": {"uid": body["metadata"]["uid"]}})
    assert status == 200, body
    dry, create, patch, delete = (r["request"] for r in hooks.reviews["/o"])
    assert dry["dryRun"] is True
    assert dry["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"],
                              "fieldManager": "mgr", "fieldValidation": "Strict"}
    assert create["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert patch["options"] == {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "patcher"}
    assert delete["options"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "gracePeriodSeconds": 0,
                                 "preconditions": {"uid": body["metadata"]["uid"]}, "propagationPolicy": "Background"}
