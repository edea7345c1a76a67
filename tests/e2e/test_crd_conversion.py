"""Real kubectl against `kubeplane up`: a CRD with two versions converted by a real HTTPS
conversion webhook (kubeplane.testing.webhook_server, a free loopback port). v1 (the storage
version) calls the field `cronSpec`, v2 calls it `schedule`: kubectl reads and writes either
version and sees each in its own shape and columns; a failing webhook is answered as
upstream's API server answers it.
"""
from __future__ import annotations

import copy
import json
from typing import Any, Iterator

import pytest
import yaml
from aiohttp import web

from kubeplane.testing.webhook_server import ThreadedWebhookServer, WebhookServer

from .cluster import Cluster, eventually

NS = "default"
V1, V2 = "widgets.v1.conv.example.com", "widgets.v2.conv.example.com"
FAIL = {"on": False}        # the webhook refuses every review while on


def convert(obj: dict[str, Any], to: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    spec = out.setdefault("spec", {})
    if to.endswith("/v2") and "cronSpec" in spec:
        spec["schedule"] = spec.pop("cronSpec")
    elif to.endswith("/v1") and "schedule" in spec:
        spec["cronSpec"] = spec.pop("schedule")
    out["apiVersion"] = to
    return out


def answer(review: dict[str, Any]) -> web.Response:
    req = review["request"]
    if FAIL["on"]:
        response = {"uid": req["uid"], "result": {"status": "Failure", "message": "the converter is down for repairs"}}
    else:
        response = {"uid": req["uid"], "result": {"status": "Success"},
                    "convertedObjects": [convert(o, req["desiredAPIVersion"]) for o in req["objects"]]}
    return web.json_response({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                              "response": response})


@pytest.fixture(scope="module")
def hooks() -> Iterator[WebhookServer]:
    t = ThreadedWebhookServer()
    server = t.start()
    server.handlers["/convert"] = answer
    yield server
    t.close()


def crd(hooks: WebhookServer) -> str:
    def version(name: str, field: str, storage: bool) -> dict[str, Any]:
        return {"name": name, "served": True, "storage": storage,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {field: {"type": "string"},
                                                              "replicas": {"type": "integer"}}}}}},
                "additionalPrinterColumns": [{"name": field.capitalize(), "type": "string",
                                              "jsonPath": f".spec.{field}"}]}
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.conv.example.com"},
        "spec": {"group": "conv.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [version("v1", "cronSpec", True), version("v2", "schedule", False)],
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "clientConfig": {"url": hooks.url("/convert"), "caBundle": hooks.ca_bundle},
                     "conversionReviewVersions": ["v1"]}}}})


def widget(version: str, name: str, **spec: Any) -> str:
    return json.dumps({"apiVersion": f"conv.example.com/{version}", "kind": "Widget",
                       "metadata": {"name": name, "namespace": NS}, "spec": spec})


@pytest.fixture(scope="module")
def widgets(cluster: Cluster, hooks: WebhookServer) -> Iterator[None]:
    cluster.kubectl("apply", "-f", "-", input=crd(hooks))
    cluster.kubectl("wait", "--for=condition=Established", "crd/widgets.conv.example.com", "--timeout=20s")
    eventually(lambda: cluster.kubectl("get", V2, check=False).returncode == 0, "v2 served")
    yield
    FAIL["on"] = False
    cluster.kubectl("delete", "crd", "widgets.conv.example.com", "--wait=false", check=False)


def test_kubectl_reads_and_writes_both_versions(cluster: Cluster, hooks: WebhookServer, widgets: None) -> None:
    out = cluster.kubectl("apply", "-f", "-", input=widget("v2", "w2", schedule="*/5 * * * *", replicas=2)).stdout
    assert out.strip() == "widget.conv.example.com/w2 created"
    v1 = cluster.get_json(V1, "w2", "-n", NS)
    v2 = cluster.get_json(V2, "w2", "-n", NS)
    assert (v1["apiVersion"], v1["spec"]) == ("conv.example.com/v1", {"cronSpec": "*/5 * * * *", "replicas": 2})
    assert (v2["apiVersion"], v2["spec"]) == ("conv.example.com/v2", {"schedule": "*/5 * * * *", "replicas": 2})
    assert any(r["request"]["desiredAPIVersion"] == "conv.example.com/v1" for r in hooks.reviews["/convert"])

    # each version's printer columns over its own shape
    cluster.kubectl("create", "-f", "-", input=widget("v1", "w1", cronSpec="0 * * * *"))
    rows = [line.split() for line in cluster.kubectl("get", V2, "-n", NS).stdout.strip().splitlines()]
    assert rows == [["NAME", "SCHEDULE"], ["w1", "0", "*", "*", "*", "*"], ["w2", "*/5", "*", "*", "*", "*"]]
    rows = [line.split() for line in cluster.kubectl("get", V1, "w2", "-n", NS).stdout.strip().splitlines()]
    assert rows == [["NAME", "CRONSPEC"], ["w2", "*/5", "*", "*", "*", "*"]]

    # round trips: a patch in v2 of an object created in v1, read back in v1; apply in v1 again
    cluster.kubectl("patch", V2, "w1", "-n", NS, "--type", "merge", "-p", '{"spec":{"schedule":"1 2 3 4 5"}}')
    assert cluster.get_json(V1, "w1", "-n", NS)["spec"] == {"cronSpec": "1 2 3 4 5"}
    cluster.kubectl("apply", "-f", "-", input=widget("v1", "w2", cronSpec="9 9 9 9 9", replicas=3))
    assert cluster.get_json(V2, "w2", "-n", NS)["spec"] == {"schedule": "9 9 9 9 9", "replicas": 3}
    items = cluster.get_json(V2, "-n", NS)["items"]
    assert [(o["metadata"]["name"], o["spec"]["schedule"]) for o in items] == [("w1", "1 2 3 4 5"), ("w2", "9 9 9 9 9")]

    out = cluster.kubectl("delete", V2, "w1", "w2", "-n", NS).stdout
    assert out.split("\n")[0] == 'widget.conv.example.com "w1" deleted from default namespace'


def test_a_failing_webhook_is_answered_as_upstream(cluster: Cluster, widgets: None) -> None:
    cluster.kubectl("create", "-f", "-", input=widget("v1", "kept", cronSpec="0 0 * * *"))
    FAIL["on"] = True
    try:
        res = cluster.kubectl("get", V2, "kept", "-n", NS, check=False)
        assert res.returncode != 0
        assert res.stderr.strip() == ("Error from server: conversion webhook for conv.example.com/v1, Kind=Widget "
                                      "failed: the converter is down for repairs")
        res = cluster.kubectl("create", "-f", "-", input=widget("v2", "new", schedule="x"), check=False)
        assert res.returncode != 0 and "conversion webhook for conv.example.com/v2, Kind=Widget failed: " \
            "the converter is down for repairs" in res.stderr
        # the storage version needs no conversion: still served
        assert cluster.get_json(V1, "kept", "-n", NS)["spec"] == {"cronSpec": "0 0 * * *"}
    finally:
        FAIL["on"] = False
    assert cluster.kubectl("get", V2, "new", "-n", NS, check=False).returncode != 0       # nothing was written
    assert cluster.get_json(V2, "kept", "-n", NS)["spec"] == {"schedule": "0 0 * * *"}
