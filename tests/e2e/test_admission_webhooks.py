"""Admission webhooks with `kubeplane up` and the real kubectl, served by a real HTTPS webhook
server in this process (kubeplane.testing.webhook_server): a mutating webhook adds a label, a
validating one denies with a message kubectl shows, failurePolicy Fail vs Ignore when the
webhook server is down."""
from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from kubeplane.testing.webhook_server import ThreadedWebhookServer, WebhookServer, patch_response

from .cluster import Cluster

NS = "default"
SELECTOR = {"matchLabels": {"webhook-e2e": "on"}}      # only this module's pods


@pytest.fixture(scope="module")
def webhook_server() -> Iterator[ThreadedWebhookServer]:
    t = ThreadedWebhookServer()
    t.start()
    yield t
    t.close()


def pod(name: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": NS, "labels": {"webhook-e2e": "on"}},
                       "spec": {"containers": [{"name": "c", "image": "busybox"}]}})


def configuration(kind: str, name: str, hooks: WebhookServer, path: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": f"{kind}WebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.example.com", "objectSelector": SELECTOR,
                          "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca_bundle},
                          "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["pods"]}],
                          "sideEffects": "None", "admissionReviewVersions": ["v1"], **extra}]}


def test_mutating_webhook_adds_a_label(cluster: Cluster, webhook_server: ThreadedWebhookServer) -> None:
    hooks = webhook_server.server
    hooks.handlers["/label"] = lambda r: patch_response(
        [{"op": "add", "path": "/metadata/labels/mutated", "value": "by-webhook"}])
    cluster.apply_yaml(configuration("Mutating", "add-label", hooks, "/label"))
    try:
        res = cluster.kubectl("create", "-f", "-", input=pod("mutated"))
        assert res.stdout.strip() == "pod/mutated created"
        got = cluster.get_json("pod", "mutated", "-n", NS)
        assert got["metadata"]["labels"] == {"webhook-e2e": "on", "mutated": "by-webhook"}
        # the in-tree plugins ran again after the webhook's change (upstream's reinvoker): still
        # one token volume and one mount
        volumes = [v["name"] for v in got["spec"].get("volumes") or []]
        mounts = [m["name"] for m in got["spec"]["containers"][0].get("volumeMounts") or []]
        assert len(volumes) == len(set(volumes)) and len(mounts) == len(set(mounts))
        assert hooks.reviews["/label"][0]["request"]["userInfo"]["username"]
    finally:
        cluster.kubectl("delete", "mutatingwebhookconfiguration", "add-label")


def test_validating_webhook_denies_with_its_message(cluster: Cluster, webhook_server: ThreadedWebhookServer) -> None:
    hooks = webhook_server.server
    hooks.handlers["/deny"] = lambda r: {"allowed": False, "status": {
        "code": 403, "reason": "Forbidden", "message": "pods named bad are not allowed"}}
    cluster.apply_yaml(configuration("Validating", "deny", hooks, "/deny"))
    try:
        res = cluster.kubectl("create", "-f", "-", input=pod("bad"), check=False)
        assert res.returncode != 0
        assert res.stderr.strip() == ('Error from server (Forbidden): error when creating "STDIN": admission webhook '
                                      '"deny.example.com" denied the request: pods named bad are not allowed')
        assert cluster.kubectl("get", "pod", "bad", "-n", NS, check=False).returncode != 0
    finally:
        cluster.kubectl("delete", "validatingwebhookconfiguration", "deny")


def test_failure_policy_when_the_server_is_down(cluster: Cluster, webhook_server: ThreadedWebhookServer) -> None:
    hooks = webhook_server.server
    url = hooks.url("/gone")
    webhook_server.stop_serving()
    cluster.apply_yaml(configuration("Validating", "fail", hooks, "/gone", failurePolicy="Fail"))
    try:
        res = cluster.kubectl("create", "-f", "-", input=pod("refused"), check=False)
        assert res.returncode != 0
        host = url.split("/")[2]
        assert res.stderr.strip() == (
            'Error from server (InternalError): error when creating "STDIN": Internal error occurred: failed calling '
            f'webhook "fail.example.com": failed to call webhook: Post "{url}?timeout=10s": dial tcp {host}: '
            'connect: connection refused')
    finally:
        cluster.kubectl("delete", "validatingwebhookconfiguration", "fail")
    cluster.apply_yaml(configuration("Validating", "ignore", hooks, "/gone", failurePolicy="Ignore"))
    try:
        res = cluster.kubectl("create", "-f", "-", input=pod("allowed"))
        assert res.stdout.strip() == "pod/allowed created"
    finally:
        cluster.kubectl("delete", "validatingwebhookconfiguration", "ignore")
