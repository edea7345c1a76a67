"""DeleteOptions from a protobuf, JSON or query request, as upstream's delete handler reads them.

The protobuf bodies are the bytes kubectl 1.37.1's typed client (client-go) sent, captured with
`kubectl drain --disable-eviction -v=9`; the others are what client-go's generated Marshal
writes (fields in ascending order; runtime.Unknown always carries contentEncoding and
contentType, empty). Upstream: DeleteResource/DeleteCollection (handlers/delete.go),
ValidateDeleteOptions (apimachinery pkg/apis/meta/v1/validation).
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver import delete_options as do
from kubeplane.apiserver.request import Request

PODS = "/api/v1/namespaces/default/pods"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
PB = {"content-type": "application/vnd.kubernetes.protobuf"}
NOW = "2023-11-14T22:13:20Z"

# `kubectl drain --disable-eviction --grace-period 7`: DeleteOptions{GracePeriodSeconds: 7}.
DRAIN_GRACE_7 = bytes.fromhex("6b387300 0a13 0a027631 120d44656c6574654f7074696f6e73 1202 0807 1a00 2200")
# `kubectl drain --disable-eviction --dry-run=server`: DeleteOptions{DryRun: ["All"]}.
DRAIN_DRY_RUN = bytes.fromhex("6b387300 0a13 0a027631 120d44656c6574654f7074696f6e73 1205 2a03416c6c 1a00 2200")


def ld(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def envelope(api_version: str, raw: bytes) -> bytes:
    """client-go's protobuf body: k8s\\0 + runtime.Unknown{typeMeta, raw, "", ""}."""
    type_meta = ld(1, api_version.encode()) + ld(2, b"DeleteOptions")
    return b"k8s\x00" + ld(1, type_meta) + ld(2, raw) + b"\x1a\x00\x22\x00"


def pod(name: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def request(body: bytes = b"", query: str = "", headers: dict[str, str] | None = None) -> Request:
    return Request.build("DELETE", f"{PODS}/p", query, headers or (PB if body else {}), body)


def test_kubectl_drain_bytes_decode() -> None:
    assert do.delete_options(request(DRAIN_GRACE_7)) == {"kind": "DeleteOptions", "apiVersion": "v1",
                                                         "gracePeriodSeconds": 7}
    assert do.delete_options(request(DRAIN_DRY_RUN))["dryRun"] == ["All"]


def test_every_field_decodes_from_protobuf() -> None:
    # GracePeriodSeconds 0, Preconditions{UID "u-1", ResourceVersion "5"}, PropagationPolicy
    # Foreground, DryRun ["All"]: 08 00 | 12 (0a "u-1" 12 "5") | 22 "Foreground" | 2a "All"
    raw = b"\x08\x00" + ld(2, ld(1, b"u-1") + ld(2, b"5")) + ld(4, b"Foreground") + ld(5, b"All")
    opts = do.delete_options(request(envelope("apps/v1", raw)))
    assert opts == {"kind": "DeleteOptions", "apiVersion": "apps/v1", "gracePeriodSeconds": 0,
                    "preconditions": {"uid": "u-1", "resourceVersion": "5"},
                    "propagationPolicy": "Foreground", "dryRun": ["All"]}
    opts = do.delete_options(request(envelope("meta.k8s.io/v1", b"\x18\x01")))    # OrphanDependents true
    assert opts["orphanDependents"] is True


async def test_drain_grace_period_reaches_the_pod(api) -> None:
    await api.create(PODS, pod("p", node="n1"))
    r = await api.call("DELETE", f"{PODS}/p", body=DRAIN_GRACE_7, headers=PB)
    assert r.status == 200, r.json
    assert r.json["metadata"]["deletionGracePeriodSeconds"] == 7


async def test_drain_dry_run_deletes_nothing(api) -> None:
    await api.create(PODS, pod("p", node="n1"))
    r = await api.call("DELETE", f"{PODS}/p", body=DRAIN_DRY_RUN, headers=PB)
    assert r.status == 200 and "deletionTimestamp" not in (await api.get(f"{PODS}/p")).json["metadata"]


async def test_protobuf_preconditions_and_policy(api) -> None:
    await api.create(PODS, pod("p"))
    r = await api.call("DELETE", f"{PODS}/p", body=envelope("v1", ld(2, ld(1, b"not-the-uid"))), headers=PB)
    assert r.status == 409 and r.json["reason"] == "Conflict"
    created = await api.create(DEPLOYS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod("x")["spec"]}}})
    r = await api.call("DELETE", f"{DEPLOYS}/d", body=envelope("apps/v1", ld(4, b"Orphan")), headers=PB)
    assert r.status == 200 and r.json["metadata"]["finalizers"] == ["orphan"]
    assert r.json["metadata"]["uid"] == created.json["metadata"]["uid"]


async def test_protobuf_deletecollection(api) -> None:
    for n in ("a", "b"):
        await api.create(PODS, pod(n))
    r = await api.call("DELETE", PODS, body=envelope("v1", b"\x08\x00"), headers=PB)
    assert r.status == 200 and (await api.get(PODS)).json["items"] == []


def test_a_body_makes_the_query_ignored() -> None:
    """Upstream reads the query only when there is no body."""
    opts = do.delete_options(request(b'{"propagationPolicy":"Orphan"}', "dryRun=All&gracePeriodSeconds=3",
                                     {"content-type": "application/json"}))
    assert opts == {"propagationPolicy": "Orphan"}
    assert do.delete_options(request(query="dryRun=All&gracePeriodSeconds=3")) == {"dryRun": ["All"],
                                                                                  "gracePeriodSeconds": 3}


@pytest.mark.parametrize("value,orphan", [("true", True), ("1", True), ("", True), ("yes", True),
                                          ("false", False), ("FALSE", False), ("0", False)])
def test_query_orphan_dependents_as_go_converts_it(value: str, orphan: bool) -> None:
    assert do.delete_options(request(query=f"orphanDependents={value}"))["orphanDependents"] is orphan


@pytest.mark.parametrize("value,message", [
    ("abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ("1_000", 'strconv.ParseInt: parsing "1_000": invalid syntax'),
    (" 5", 'strconv.ParseInt: parsing " 5": invalid syntax'),
    ("9223372036854775808", 'strconv.ParseInt: parsing "9223372036854775808": value out of range'),
])
async def test_query_grace_period_parse_errors(api, value: str, message: str) -> None:
    await api.create(PODS, pod("p"))
    r = await api.call("DELETE", f"{PODS}/p", {"gracePeriodSeconds": value})
    assert (r.status, r.json["reason"], r.json["message"]) == (400, "BadRequest", message)


@pytest.mark.parametrize("body,message", [
    ({"propagationPolicy": "Sideways"},
     'propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"'),
    ({"propagationPolicy": "Orphan", "orphanDependents": True},
     'propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set'),
    ({"dryRun": ["All", "Nope"]}, 'dryRun: Unsupported value: []string{"All", "Nope"}: supported values: "All"'),
    ({"propagationPolicy": "", "orphanDependents": False, "dryRun": ["x"]},
     '[propagationPolicy: Invalid value: "": orphanDependents and deletionPropagation cannot be both set, '
     'propagationPolicy: Unsupported value: "": supported values: "Foreground", "Background", "Orphan", "nil", '
     'dryRun: Unsupported value: []string{"x"}: supported values: "All"]'),
])
async def test_validation_as_upstream(api, body: dict[str, Any], message: str) -> None:
    await api.create(PODS, pod("p"))
    r = await api.call("DELETE", f"{PODS}/p", body=body)
    assert (r.status, r.json["reason"]) == (422, "Invalid")
    assert r.json["message"] == f'DeleteOptions.meta.k8s.io "" is invalid: {message}'
    assert (await api.get(f"{PODS}/p")).status == 200
