"""Auditing against `kubeplane up`: a `kubectl apply` leaves upstream's audit lines (stages,
level, user, objectRef, responseStatus, objects), and a bad policy file stops the start with
upstream's message."""
from __future__ import annotations

import json
import pathlib
from typing import Any

from .cluster import Cluster, eventually
from .test_up import one_error_line, run_up

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
  namespaces: [audited]
- level: Metadata
  resources: [{group: "", resources: [namespaces]}]
  verbs: [create, delete]
- level: None
"""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: audited}
data: {color: %s}
"""


def events(log: pathlib.Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_kubectl_apply_is_audited(tmp_path: pathlib.Path) -> None:
    policy, log = tmp_path / "policy.yaml", tmp_path / "logs" / "audit.log"
    policy.write_text(POLICY)
    c = Cluster(nodes=0, extra_args=("--audit-policy-file", str(policy), "--audit-log-path", str(log))).start()
    try:
        assert oct(log.stat().st_mode & 0o777) == "0o600"
        c.kubectl("create", "namespace", "audited")
        c.kubectl("apply", "-f", "-", input=CONFIGMAP % "blue")          # GET (404), then create
        c.kubectl("apply", "-f", "-", input=CONFIGMAP % "green")         # GET, then patch
        evs = eventually(lambda: [e for e in events(log) if e.get("objectRef", {}).get("resource") == "configmaps"
                                  and e["stage"] == "ResponseComplete" and e["verb"] == "patch"] and events(log),
                         "the patch's audit line")
    finally:
        c.stop()
        c.cleanup()
    ns_create = [e for e in evs if e.get("objectRef", {}).get("resource") == "namespaces"]
    assert [e["stage"] for e in ns_create] == ["RequestReceived", "ResponseComplete"]
    assert ns_create[1]["level"] == "Metadata" and ns_create[1]["objectRef"] == {
        "resource": "namespaces", "name": "audited", "apiVersion": "v1"}
    assert "requestObject" not in ns_create[1] and ns_create[1]["responseStatus"] == {"metadata": {}, "code": 201}

    cms = [e for e in evs if e.get("objectRef", {}).get("resource") == "configmaps"]
    by_id: dict[str, list[dict[str, Any]]] = {}
    for e in cms:
        by_id.setdefault(e["auditID"], []).append(e)
    # every request: RequestReceived then ResponseComplete, RequestResponse level
    assert all([e["stage"] for e in es] == ["RequestReceived", "ResponseComplete"] for es in by_id.values())
    assert {e["level"] for e in cms} == {"RequestResponse"}
    done = [es[-1] for es in by_id.values()]
    # the in-process root-CA publisher's request is audited too (upstream: a remote client, as
    # its service account)
    publisher_user = "system:serviceaccount:kube-system:root-ca-cert-publisher"
    publisher = [e for e in done if e["user"]["username"] == publisher_user]
    assert [(e["verb"], e["objectRef"]["name"]) for e in publisher] == [("create", "kube-root-ca.crt")]
    assert publisher[0]["sourceIPs"] == ["127.0.0.1"]
    done = [e for e in done if e not in publisher]
    assert [(e["verb"], e["responseStatus"]["code"]) for e in done] == [
        ("get", 404), ("create", 201), ("get", 200), ("patch", 200)]
    get404, create, _, patch = done
    user = create["user"]
    assert user["username"] and user["username"] != "system:anonymous"
    assert "system:authenticated" in user["groups"]
    assert create["userAgent"].startswith("kubectl/") and "127.0.0.1" in create["sourceIPs"]
    assert create["objectRef"] == {"resource": "configmaps", "namespace": "audited", "name": "settings",
                                   "apiVersion": "v1"}
    assert get404["responseStatus"] == {"metadata": {}, "status": "Failure",
                                        "message": 'configmaps "settings" not found', "reason": "NotFound",
                                        "details": {"name": "settings", "kind": "configmaps"}, "code": 404}
    assert create["requestObject"]["data"] == {"color": "blue"}
    assert create["responseObject"]["metadata"]["uid"]
    assert "managedFields" not in create["responseObject"]["metadata"]        # omitManagedFields
    assert patch["requestObject"]["data"] == {"color": "green"}               # the patch as sent
    assert patch["responseObject"]["data"] == {"color": "green"}
    assert create["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert create["requestURI"].startswith("/api/v1/namespaces/audited/configmaps")
    for e in done:
        assert e["stageTimestamp"] >= e["requestReceivedTimestamp"]


def test_a_bad_policy_file_stops_up(tmp_path: pathlib.Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n")
    res = run_up("--data-dir", str(tmp_path / "d"), "--port", "0", "--nodes", "0", "--audit-policy-file", str(policy),
                 "--audit-log-path", str(tmp_path / "audit.log"))
    assert one_error_line(res) == (
        'Error: loading audit policy file: rules[0].level: Unsupported value: "Everything": supported values: '
        f'"None", "Metadata", "Request", "RequestResponse": from file {policy}')


def test_the_log_on_standard_output(tmp_path: pathlib.Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n"
                      "- level: Metadata\n  resources: [{group: \"\", resources: [namespaces]}]\n")
    c = Cluster(nodes=0, extra_args=("--no-controllers", "--audit-policy-file", str(policy), "--audit-log-path", "-"))
    c.start()
    try:
        c.kubectl("create", "namespace", "on-stdout")

        def line() -> Any:
            for text in c.log_path.read_text().splitlines():
                if text.startswith("{") and '"on-stdout"' in text:
                    return json.loads(text)
            return None
        ev = eventually(line, "the audit line on stdout")
    finally:
        c.stop()
        c.cleanup()
    assert (ev["kind"], ev["stage"], ev["verb"], ev["responseStatus"]["code"]) == ("Event", "ResponseComplete", "create", 201)


def test_the_webhook_backend(tmp_path: pathlib.Path) -> None:
    """--audit-webhook-config-file: a `kubectl create` reaches a receiver that requires a bearer
    token, as audit.k8s.io/v1 EventLists (upstream: plugin/pkg/audit/webhook), batched (here
    --audit-webhook-batch-max-wait=1s so the test need not wait 30 s)."""
    from kubeplane.testing.audit_receiver import AuditReceiver

    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
                      "- level: Request\n  resources: [{group: \"\", resources: [configmaps]}]\n  namespaces: [hooked]\n")
    receiver = AuditReceiver(token="audit-s3cret").start()
    try:
        kubeconfig = receiver.kubeconfig(tmp_path / "audit-webhook.kubeconfig", token="audit-s3cret")
        c = Cluster(nodes=0, extra_args=("--no-controllers", "--audit-policy-file", str(policy),
                                         "--audit-webhook-config-file", str(kubeconfig),
                                         "--audit-webhook-batch-max-wait", "1s")).start()
        try:
            c.kubectl("create", "namespace", "hooked")
            c.kubectl("create", "configmap", "sent", "-n", "hooked", "--from-literal=k=v")
            evs = receiver.wait_for(lambda es: any(e["stage"] == "ResponseComplete" for e in es))
        finally:
            c.stop()
            c.cleanup()
    finally:
        receiver.close()
    assert receiver.refused == 0
    assert all(lst["kind"] == "EventList" and lst["apiVersion"] == "audit.k8s.io/v1" for lst in receiver.lists)
    received, complete = evs
    assert (received["stage"], complete["stage"]) == ("RequestReceived", "ResponseComplete")
    assert "kind" not in complete and complete["level"] == "Request" and complete["verb"] == "create"
    assert complete["objectRef"] == {"resource": "configmaps", "namespace": "hooked", "name": "sent", "apiVersion": "v1"}
    assert complete["requestObject"]["data"] == {"k": "v"} and complete["responseStatus"]["code"] == 201
    assert complete["userAgent"].startswith("kubectl/")
