"""Custom objects across versions, as upstream's customresource handler serves them: a real
HTTPS conversion webhook (ConversionReview v1/v1beta1) on every path where an object changes
version, the write pipeline in the request's version (validation before the storage version's
pruning), upstream's answers when the webhook fails, deprecation warnings and storedVersions.

Upstream: apiextensions-apiserver test/integration/conversion (conversion_test.go: the
nontrivial converter, expectConversionFailureMessage over every verb, validateObjectMetaMutation,
validateUIDMutation), pkg/apiserver/conversion/webhook_converter.go, customresource_handler.go.
"""
from __future__ import annotations

import asyncio
import base64
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web

from kubeplane.testing.webhook_server import serve_posts, serving_tls

from .test_crd_controller import CRDS, MERGE, crd_manifest, established, served, until  # noqa: F401  (its fixture)

Obj = dict[str, Any]
KEY = "/registry/example.com/foos/default/"
V1 = "/apis/example.com/v1/namespaces/default/foos"
V2 = "/apis/example.com/v2/namespaces/default/foos"


def rename(obj: Obj, to: str) -> Obj:
    """The webhook's conversion: v1's spec.color is v2's spec.colour."""
    out = copy.deepcopy(obj)
    spec = out.get("spec") or {}
    if to == "example.com/v2" and "color" in spec:
        spec["colour"] = spec.pop("color")
    if to == "example.com/v1" and "colour" in spec:
        spec["color"] = spec.pop("colour")
    out["apiVersion"] = to
    return out


def convert(review: Obj) -> Obj:
    req = review["request"]
    return {"uid": req["uid"], "result": {"status": "Success"},
            "convertedObjects": [rename(o, req["desiredAPIVersion"]) for o in req["objects"]]}


class ConversionHook:
    """An HTTPS conversion webhook on a free loopback port; `answer(review) -> response` (a
    web.StreamResponse is sent as it is); every review received is kept."""

    def __init__(self) -> None:
        self.ca_pem, self._ssl, self._dir = serving_tls()
        self.answer: Callable[[Obj], Any] = convert
        self.reviews: list[Obj] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner, self.port = await serve_posts(self._serve, self._ssl)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        review = orjson.loads(await request.read())
        self.reviews.append(review)
        out = self.answer(review)
        if asyncio.iscoroutine(out):
            out = await out
        if isinstance(out, web.StreamResponse):
            return out
        body = {"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": out}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    def client_config(self) -> Obj:
        return {"url": f"https://127.0.0.1:{self.port}/convert", "caBundle": base64.b64encode(self.ca_pem).decode()}


@pytest.fixture
async def hook() -> AsyncIterator[ConversionHook]:
    h = ConversionHook()
    await h.start()
    yield h
    await h.stop()
    h._dir.cleanup()


def schema(props: Obj, **extra: Any) -> Obj:
    return {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": props, **extra},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}


def webhook_crd(hook: ConversionHook, review_versions: tuple[str, ...] = ("v1", "v1beta1")) -> Obj:
    m = crd_manifest(versions=("v1", "v2"))
    v1, v2 = m["spec"]["versions"]
    v1["schema"] = schema({"color": {"type": "string"}, "replicas": {"type": "integer"}})
    v2["schema"] = schema({"colour": {"type": "string", "enum": ["red", "blue", "green"]},
                           "replicas": {"type": "integer"}})
    for v in (v1, v2):
        v["subresources"] = {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas"}}
    m["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "clientConfig": hook.client_config(), "conversionReviewVersions": list(review_versions)}}
    return m


def foo(version: str, name: str, **spec: Any) -> Obj:
    return {"apiVersion": f"example.com/{version}", "kind": "Foo", "metadata": {"name": name}, "spec": spec}


async def stored(api: Any, name: str) -> Obj | None:
    kv = await api.storage.get(KEY + name)
    return kv.obj if kv is not None else None


# --- the round trip through the webhook ------------------------------------------------------

@pytest.mark.parametrize("review_version", ["v1", "v1beta1"])
async def test_every_verb_converts_through_the_webhook(served: Any, hook: ConversionHook,  # noqa: F811
                                                       review_version: str) -> None:
    api = served
    assert (await api.create(CRDS, webhook_crd(hook, (review_version,)))).status == 201
    await established(api, "foos.example.com")

    r = await api.create(V2, foo("v2", "a", colour="red", replicas=1))
    assert r.status == 201, r.json
    assert (r.json["apiVersion"], r.json["spec"]) == ("example.com/v2", {"colour": "red", "replicas": 1})
    assert (await stored(api, "a"))["spec"] == {"color": "red", "replicas": 1}          # type: ignore[index]
    review = hook.reviews[0]
    assert review["apiVersion"] == f"apiextensions.k8s.io/{review_version}"
    assert review["request"]["desiredAPIVersion"] == "example.com/v1"
    assert [o["spec"] for o in review["request"]["objects"]] == [{"colour": "red", "replicas": 1}]

    # reads in both versions; the storage version's needs no call
    calls = len(hook.reviews)
    assert (await api.get(f"{V1}/a")).json["spec"] == {"color": "red", "replicas": 1}
    assert len(hook.reviews) == calls
    assert (await api.get(f"{V2}/a")).json["spec"] == {"colour": "red", "replicas": 1}
    assert (await api.create(V1, foo("v1", "b", color="blue"))).status == 201
    calls = len(hook.reviews)
    items = (await api.get(V2)).json["items"]
    assert [(o["apiVersion"], o["spec"].get("colour")) for o in items] == [
        ("example.com/v2", "red"), ("example.com/v2", "blue")]
    assert len(hook.reviews) == calls + 1 and len(hook.reviews[-1]["request"]["objects"]) == 2   # one review

    # patch, update, /status, /scale in v2
    r = await api.call("PATCH", f"{V2}/a", body={"spec": {"colour": "green"}}, headers=MERGE)
    assert (r.status, r.json["spec"]["colour"]) == (200, "green"), r.json
    assert (await stored(api, "a"))["spec"]["color"] == "green"                          # type: ignore[index]
    obj = (await api.get(f"{V2}/a")).json
    obj["spec"]["colour"] = "blue"
    r = await api.call("PUT", f"{V2}/a", body=obj)
    assert (r.status, r.json["spec"]["colour"]) == (200, "blue"), r.json
    r = await api.call("PATCH", f"{V2}/a/status", body={"status": {"phase": "Ready"}}, headers=MERGE)
    assert (r.status, r.json["status"], r.json["spec"]["colour"]) == (200, {"phase": "Ready"}, "blue"), r.json
    r = await api.call("PATCH", f"{V2}/a/scale", body={"spec": {"replicas": 4}}, headers=MERGE)
    assert (r.status, r.json["spec"]) == (200, {"replicas": 4}), r.json
    assert (await stored(api, "a"))["spec"] == {"color": "blue", "replicas": 4}          # type: ignore[index]
    assert (await api.get(f"{V2}/a/scale")).json["spec"] == {"replicas": 4}

    # watch in v2: the initial objects and the changes, converted
    w = await api.open_watch(V2)
    events = await w.events(2)
    assert sorted(e["object"]["spec"].get("colour", "") for e in events) == ["blue", "blue"]
    await api.call("PATCH", f"{V1}/b", body={"spec": {"color": "red"}}, headers=MERGE)
    (ev,) = await w.events(1)
    assert (ev["type"], ev["object"]["apiVersion"], ev["object"]["spec"]) == (
        "MODIFIED", "example.com/v2", {"colour": "red"})
    await w.close()

    # delete and deletecollection answer in v2
    r = await api.call("DELETE", f"{V2}/a")
    assert r.status == 200 and await stored(api, "a") is None, r.json
    r = await api.call("DELETE", V2)
    assert (r.status, [o["spec"] for o in r.json["items"]]) == (200, [{"colour": "red"}]), r.json
    assert await stored(api, "b") is None


async def test_labels_and_annotations_may_change_the_rest_of_metadata_is_restored(
        served: Any, hook: ConversionHook) -> None:  # noqa: F811
    api = served
    await api.create(CRDS, webhook_crd(hook))
    await established(api, "foos.example.com")

    def relabel(review: Obj) -> Obj:
        out = convert(review)
        for o in out["convertedObjects"]:
            o["metadata"]["labels"] = {"converted": "yes"}
            o["metadata"]["finalizers"] = ["ignored/by-the-server"]
            o["metadata"]["generation"] = 99
        return out
    hook.answer = relabel
    r = await api.create(V2, {**foo("v2", "a", colour="red"), "metadata": {"name": "a", "labels": {"x": "y"}}})
    assert r.status == 201, r.json
    meta = (await stored(api, "a"))["metadata"]                                          # type: ignore[index]
    assert meta["labels"] == {"converted": "yes"}
    assert "finalizers" not in meta and meta["generation"] == 1


# --- the webhook failing, answered as upstream ----------------------------------------------

def _answer(status: int, body: bytes, content_type: str = "application/json") -> Callable[[Obj], Any]:
    return lambda review: web.Response(status=status, body=body, content_type=content_type)


def _mutate(fn: Callable[[Obj], None]) -> Callable[[Obj], Any]:
    def answer(review: Obj) -> Obj:
        out = convert(review)
        fn(out)
        return out
    return answer


GVK = "example.com/v2, Kind=Foo"
FAILURES = [
    pytest.param(_mutate(lambda o: o.update(uid="nope")), f'conversion webhook for {GVK} failed: expected '
                 'response.uid="{uid}", got "nope"', id="wrong uid"),
    pytest.param(_mutate(lambda o: o.update(convertedObjects=[])),
                 f"conversion webhook for {GVK} returned 0 objects, expected 1", id="empty response"),
    pytest.param(_mutate(lambda o: o.update(result={"status": "Failure", "message": "custom webhook conversion error"})),
                 f"conversion webhook for {GVK} failed: custom webhook conversion error", id="failure message"),
    pytest.param(_mutate(lambda o: o["convertedObjects"][0]["metadata"].update(name="other")),
                 f"conversion webhook for {GVK} returned invalid object: must have the same name: a != other",
                 id="name changed"),
    pytest.param(_mutate(lambda o: o["convertedObjects"][0]["metadata"].update(uid="other")),
                 f"conversion webhook for {GVK} returned invalid object: must have the same UID: ", id="uid changed"),
    pytest.param(_mutate(lambda o: o["convertedObjects"][0].update(apiVersion="example.com/v2")),
                 f"conversion webhook for {GVK} returned invalid object at index 0: invalid groupVersion "
                 "(expected example.com/v1, received example.com/v2)", id="wrong apiVersion"),
    pytest.param(_mutate(lambda o: o["convertedObjects"][0]["metadata"].update(labels={"a": "b/c/d"})),
                 f"conversion webhook for {GVK} returned invalid metadata: metadata.labels: Invalid value: ",
                 id="invalid label"),
    pytest.param(_answer(400, b"nope", "text/plain"),
                 f"conversion webhook for {GVK} failed: the server rejected our request for an unknown reason",
                 id="unhandled"),
    pytest.param(_answer(200, b"{"), f"conversion webhook for {GVK} failed: ", id="garbage"),
]


@pytest.mark.parametrize(("answer", "message"), FAILURES)
async def test_a_failing_webhook_fails_the_create_with_upstreams_message(
        served: Any, hook: ConversionHook, answer: Callable[[Obj], Any], message: str) -> None:  # noqa: F811
    api = served
    await api.create(CRDS, webhook_crd(hook, ("v1",)))
    await established(api, "foos.example.com")
    hook.answer = answer
    r = await api.create(V2, foo("v2", "a", colour="red"))
    if "{uid}" in message:
        message = message.replace("{uid}", hook.reviews[-1]["request"]["uid"])
    assert (r.status, r.json["status"]) == (500, "Failure"), r.json
    assert "reason" not in r.json and r.json["message"].startswith(message), r.json
    assert await stored(api, "a") is None


async def test_every_verb_fails_when_the_webhook_does(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    """Upstream's expectConversionFailureMessage: stored in the storage version, every verb in
    another fails with the webhook's message; nothing is written or deleted."""
    api = served
    await api.create(CRDS, webhook_crd(hook, ("v1",)))
    await established(api, "foos.example.com")
    assert (await api.create(V1, foo("v1", "a", color="red"))).status == 201
    hook.answer = _mutate(lambda o: o.update(result={"status": "Failure", "message": "custom webhook conversion error"}))
    obj = foo("v2", "a", colour="red")
    obj["metadata"] = (await api.get(f"{V1}/a")).json["metadata"]
    for method, path, body in (("GET", f"{V2}/a", None), ("GET", V2, None), ("POST", V2, foo("v2", "b")),
                               ("PUT", f"{V2}/a", obj), ("PATCH", f"{V2}/a", {"metadata": {"labels": {"p": "t"}}}),
                               ("GET", f"{V2}/a/scale", None), ("PATCH", f"{V2}/a/status", {"status": {}}),
                               ("DELETE", f"{V2}/a", None), ("DELETE", V2, None)):
        r = await api.call(method, path, body=body, headers=MERGE if method == "PATCH" else None)
        assert (r.status, r.json.get("reason")) == (500, None), (method, path, r.json)
        assert "custom webhook conversion error" in r.json["message"], (method, path, r.json)
    assert (await stored(api, "a"))["spec"] == {"color": "red"}                          # type: ignore[index]
    assert await stored(api, "b") is None

    # a watch gets the error as an event, then ends (upstream's etcd3 watcher)
    w = await api.open_watch(V2)
    (ev,) = await w.events(1)
    assert (ev["type"], ev["object"]["code"], ev["object"]["reason"]) == ("ERROR", 500, "InternalError")
    assert ev["object"]["message"].startswith("Internal error occurred: conversion webhook for example.com/v2, "
                                              "Kind=FooList failed: custom webhook conversion error")
    await w.close()


async def test_an_unreachable_webhook(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    api = served
    await api.create(CRDS, webhook_crd(hook))
    await established(api, "foos.example.com")
    await hook.stop()
    r = await api.create(V2, foo("v2", "a", colour="red"))
    assert r.status == 500 and r.json["message"] == (
        f'conversion webhook for {GVK} failed: Post "https://127.0.0.1:{hook.port}/convert?timeout=30s": '
        f"dial tcp 127.0.0.1:{hook.port}: connect: connection refused"), r.json


# --- the write pipeline in the request's version (conversion None) -------------------------

def none_crd() -> Obj:
    """v1 (storage) knows `legacy`, v2 knows `extra` and requires it; size is at most 10 in v1, 3 in v2."""
    m = crd_manifest(versions=("v1", "v2"))
    v1, v2 = m["spec"]["versions"]
    v1["schema"] = schema({"size": {"type": "integer", "maximum": 10}, "legacy": {"type": "string"}})
    v2["schema"] = schema({"size": {"type": "integer", "maximum": 3}, "extra": {"type": "string"}},
                          required=["extra"])
    return m


async def test_a_write_is_validated_in_its_version_before_the_storage_versions_pruning(served: Any) -> None:  # noqa: F811
    """Upstream validates, prunes and defaults in the request's version and prunes with the
    storage version's schema only when it encodes for storage."""
    api = served
    await api.create(CRDS, none_crd())
    await established(api, "foos.example.com")

    # v2's required field, unknown to v1: valid in v2, then dropped on the way to storage
    r = await api.create(V2, foo("v2", "a", extra="x", size=2))
    assert (r.status, r.json["spec"]) == (201, {"size": 2}), r.json
    assert (await stored(api, "a"))["spec"] == {"size": 2}                               # type: ignore[index]
    r = await api.create(V2, foo("v2", "b", size=2))
    assert (r.status, r.json["message"]) == (422, 'Foo.example.com "b" is invalid: spec.extra: Required value'), r.json

    # valid in v1 (size 5, legacy), which v2 would refuse and prune: v1's rules only
    r = await api.create(V1, foo("v1", "c", size=5, legacy="l"))
    assert (r.status, r.json["spec"]) == (201, {"size": 5, "legacy": "l"}), r.json
    r = await api.create(V2, foo("v2", "d", size=5, extra="x", legacy="l"))
    assert r.status == 422 and r.json["message"] == (
        'Foo.example.com "d" is invalid: spec.size: Invalid value: 5: spec.size in body should be less than or '
        "equal to 3"), r.json
    assert (await api.get(f"{V2}/c")).json["spec"] == {"size": 5}             # v1's legacy pruned on the way out

    # an update in v2 is validated against v2, ratcheting on the old object as v2 shows it: the
    # unchanged spec (without v2's required field, with v1's size) passes
    r = await api.call("PATCH", f"{V2}/c", body={"metadata": {"labels": {"l": "v"}}}, headers=MERGE)
    assert r.status == 200, r.json
    r = await api.call("PATCH", f"{V2}/c", body={"spec": {"extra": "x"}}, headers=MERGE)
    assert (r.status, r.json["spec"]) == (200, {"size": 5}), r.json     # size 5 ratcheted; extra not stored in v1
    # conversion None round-trips through v2's schema: v1's legacy is lost, as upstream loses it
    assert (await stored(api, "c"))["spec"] == {"size": 5}                               # type: ignore[index]
    r = await api.call("PATCH", f"{V2}/c", body={"spec": {"extra": "x", "size": 6}}, headers=MERGE)
    assert r.status == 422 and "spec.size in body should be less than or equal to 3" in r.json["message"], r.json


# --- served versions, deprecation, storedVersions ---------------------------------------------

async def test_an_unserved_version_is_a_404(served: Any) -> None:  # noqa: F811
    api = served
    m = none_crd()
    m["spec"]["versions"][1]["served"] = False
    await api.create(CRDS, m)
    await established(api, "foos.example.com")
    assert (await api.get(V1)).status == 200
    r = await api.get(V2)
    assert r.status == 404, r.json
    assert [v["version"] for v in (await api.get("/apis/example.com")).json["versions"]] == ["v1"]


async def test_the_default_deprecation_warning_names_the_version_to_use(served: Any) -> None:  # noqa: F811
    """Upstream: defaultDeprecationWarning — the highest served, not deprecated, newer version."""
    api = served
    m = crd_manifest(versions=("v1", "v1beta1", "v1alpha1", "v2alpha1"))
    for v in m["spec"]["versions"][1:]:
        v["deprecated"] = True
    await api.create(CRDS, m)
    await established(api, "foos.example.com")
    for version, expected in (("v1beta1", "example.com/v1beta1 Foo is deprecated; use example.com/v1 Foo"),
                              ("v2alpha1", "example.com/v2alpha1 Foo is deprecated; use example.com/v1 Foo")):
        r = await api.get(f"/apis/example.com/{version}/namespaces/default/foos")
        assert [v for k, v in r.headers if k == "warning"] == [f'299 - "{expected}"'], r.headers
    assert [v for k, v in (await api.get(V1)).headers if k == "warning"] == []


async def test_stored_versions_follow_the_storage_version(served: Any) -> None:  # noqa: F811
    """Upstream's strategy records each storage version; a version may leave spec.versions only
    once a storage migration took it out of status.storedVersions."""
    api = served
    await api.create(CRDS, none_crd())
    crd = await established(api, "foos.example.com")
    assert crd["status"]["storedVersions"] == ["v1"]
    crd["spec"]["versions"][0]["storage"], crd["spec"]["versions"][1]["storage"] = False, True
    r = await api.call("PUT", f"{CRDS}/foos.example.com", body=crd)
    assert (r.status, r.json["status"]["storedVersions"]) == (200, ["v1", "v2"]), r.json

    drop_v1 = r.json
    drop_v1["spec"]["versions"] = drop_v1["spec"]["versions"][1:]
    r = await api.call("PUT", f"{CRDS}/foos.example.com", body=drop_v1)
    assert r.status == 422 and r.json["message"].endswith(
        'status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was previously a storage '
        "version, and must remain in spec.versions until a storage migration ensures no data remains persisted in "
        "v1 and removes v1 from status.storedVersions"), r.json

    r = await api.call("PATCH", f"{CRDS}/foos.example.com/status", body={"status": {"storedVersions": ["v2"]}},
                       headers=MERGE)
    assert (r.status, r.json["status"]["storedVersions"]) == (200, ["v2"]), r.json
    drop_v1["metadata"]["resourceVersion"] = r.json["metadata"]["resourceVersion"]
    r = await api.call("PUT", f"{CRDS}/foos.example.com", body=drop_v1)
    assert (r.status, [v["name"] for v in r.json["spec"]["versions"]]) == (200, ["v2"]), r.json


def _samples(name: str) -> dict[tuple[tuple[str, str], ...], float]:
    from kubeplane.apiserver.apiextensions.conversion import metrics
    return {tuple(sorted(s.labels.items())): s.value for fam in metrics.collect() for s in fam.samples
            if s.name == name}


async def test_conversion_webhook_metrics(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    """Upstream's apiserver_conversion_webhook_request_total (result, failure_type) and
    apiserver_crd_conversion_webhook_duration_seconds (crd_name, from/to version, succeeded)."""
    api = served
    await api.create(CRDS, webhook_crd(hook))
    await established(api, "foos.example.com")
    before = _samples("apiserver_conversion_webhook_request_total")
    crd_before = _samples("apiserver_crd_conversion_webhook_duration_seconds_count")
    assert (await api.create(V2, foo("v2", "a", colour="red"))).status == 201      # v2 -> v1, then v1 -> v2
    hook.answer = _mutate(lambda o: o.update(convertedObjects=[]))
    assert (await api.create(V2, foo("v2", "b", colour="red"))).status == 500
    after = _samples("apiserver_conversion_webhook_request_total")
    success = (("failure_type", ""), ("result", "success"))
    partial = (("failure_type", "conversion_webhook_partial_response_failure"), ("result", "failure"))
    assert after[success] - before.get(success, 0) == 2
    assert after[partial] - before.get(partial, 0) == 1
    crd_after = _samples("apiserver_crd_conversion_webhook_duration_seconds_count")
    key = (("crd_name", "foos.example.com"), ("from_version", "v2"), ("succeeded", "false"), ("to_version", "v1"))
    assert crd_after[key] - crd_before.get(key, 0) == 1


APPLY = {"content-type": "application/apply-patch+yaml"}


async def test_server_side_apply_and_dry_run_convert(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    """Server-side apply in v2 creates and updates through the webhook, its managedFields in
    v2; a dry run converts as a write would (upstream's DryRunnableStorage.copyInto) and stores
    nothing."""
    api = served
    await api.create(CRDS, webhook_crd(hook))
    await established(api, "foos.example.com")
    body = orjson.dumps(foo("v2", "a", colour="red"))
    r = await api.call("PATCH", f"{V2}/a", {"fieldManager": "me"}, body=body, headers=APPLY)
    assert (r.status, r.json["spec"]) == (201, {"colour": "red"}), r.json
    assert [m["apiVersion"] for m in r.json["metadata"]["managedFields"]] == ["example.com/v2"]
    body = orjson.dumps(foo("v2", "a", colour="blue"))
    r = await api.call("PATCH", f"{V2}/a", {"fieldManager": "me"}, body=body, headers=APPLY)
    assert (r.status, r.json["spec"]) == (200, {"colour": "blue"}), r.json
    assert (await stored(api, "a"))["spec"] == {"color": "blue"}                       # type: ignore[index]

    calls = len(hook.reviews)
    r = await api.create(V2, foo("v2", "dry", colour="green", unknown=1), {"dryRun": "All"})
    assert (r.status, r.json["apiVersion"], r.json["spec"]) == (201, "example.com/v2", {"colour": "green"}), r.json
    assert len(hook.reviews) == calls + 2 and await stored(api, "dry") is None


async def test_a_service_reference_resolves_to_an_endpoint(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    """clientConfig.service: dialled at a ready endpoint of the service, the certificate checked
    for <name>.<namespace>.svc (the admission webhooks' client, as upstream's ClientManager)."""
    api = served
    await api.storage.create("/registry/services/test/webhook", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook", "namespace": "test"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.9", "ports": [{"name": "https", "port": 443}]}})
    await api.storage.create("/registry/endpointslices/test/webhook-abc", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
        "metadata": {"name": "webhook-abc", "namespace": "test", "labels": {"kubernetes.io/service-name": "webhook"}},
        "ports": [{"name": "https", "port": hook.port, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]})
    m = webhook_crd(hook)
    m["spec"]["conversion"]["webhook"]["clientConfig"] = {
        "service": {"namespace": "test", "name": "webhook", "path": "/convert"},
        "caBundle": base64.b64encode(hook.ca_pem).decode()}
    assert (await api.create(CRDS, m)).status == 201
    await established(api, "foos.example.com")
    r = await api.create(V2, foo("v2", "a", colour="red"))
    assert r.status == 201, r.json
    assert (await stored(api, "a"))["spec"] == {"color": "red"}                          # type: ignore[index]

    # an unknown service is upstream's client error, in the conversion's message
    m = (await api.get(f"{CRDS}/foos.example.com")).json
    m["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"] = "missing"
    assert (await api.call("PUT", f"{CRDS}/foos.example.com", body=m)).status == 200

    async def refused() -> Any:
        r = await api.create(V2, foo("v2", "b", colour="red"))
        return r if r.status == 500 else None
    r = await until(refused, "the new clientConfig served")
    assert r.json["message"] == (f"conversion webhook for {GVK} failed: Post "
                                 '"https://missing.test.svc:443/convert?timeout=30s": service "missing" not found')


async def test_metadata_only_reads_convert_too(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    """The garbage collector's metadata list and watch of a custom kind go through the same
    conversion (upstream converts before it keeps the metadata): a failing webhook fails them."""
    api = served
    await api.create(CRDS, webhook_crd(hook))
    await established(api, "foos.example.com")
    assert (await api.create(V1, foo("v1", "a", color="red"))).status == 201
    partial = {"accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}
    calls = len(hook.reviews)
    r = await api.call("GET", V2, headers=partial)
    assert r.status == 200 and [i["metadata"]["name"] for i in r.json["items"]] == ["a"], r.json
    assert len(hook.reviews) == calls + 1
    hook.answer = _mutate(lambda o: o.update(result={"status": "Failure", "message": "down"}))
    r = await api.call("GET", V2, headers=partial)
    assert (r.status, r.json["message"]) == (500, "conversion webhook for example.com/v2, Kind=FooList failed: down")


async def test_admission_sees_a_delete_in_the_requests_version(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    """The validating admission of a delete (and of each item of a deletecollection) gets the
    old object as the request's version shows it (upstream decodes it in that version)."""
    api = served
    await api.create(CRDS, webhook_crd(hook))
    await established(api, "foos.example.com")
    for name in ("a", "b"):
        assert (await api.create(V1, foo("v1", name, color="red"))).status == 201
    seen: list[Any] = []
    chain = api.server.admission
    validate = chain.validate

    async def recording(attrs: Any) -> None:
        if attrs.operation.value == "DELETE" and attrs.old_obj is not None:
            seen.append((attrs.version, attrs.old_obj["apiVersion"], attrs.old_obj["spec"]))
        await validate(attrs)
    chain.validate = recording
    try:
        assert (await api.call("DELETE", f"{V2}/a")).status == 200
        assert (await api.call("DELETE", V2)).status == 200
    finally:
        chain.validate = validate
    assert seen == [("v2", "example.com/v2", {"colour": "red"})] * 2


async def test_a_webhook_that_does_not_answer_in_time(served: Any, hook: ConversionHook,  # noqa: F811
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The call is bounded (upstream: the webhook client's 30 s; shortened here), and the
    timeout is client-go's error in the conversion's message."""
    from kubeplane.apiserver.apiextensions.conversion import webhook_converter
    monkeypatch.setattr(webhook_converter, "REQUEST_TIMEOUT", 0.2)
    api = served
    await api.create(CRDS, webhook_crd(hook))
    await established(api, "foos.example.com")

    async def slow(review: Obj) -> Obj:
        await asyncio.sleep(1)
        return convert(review)
    hook.answer = slow
    r = await api.create(V2, foo("v2", "a", colour="red"))
    assert (r.status, r.json["message"]) == (500, f'conversion webhook for {GVK} failed: Post '
                                             f'"https://127.0.0.1:{hook.port}/convert?timeout=1s": context deadline '
                                             "exceeded"), r.json
    assert await stored(api, "a") is None


async def test_a_page_converts_only_its_items(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    """A list with limit converts the page it answers (one review), a label-selected list every
    object first: the webhook may change labels."""
    api = served
    await api.create(CRDS, webhook_crd(hook))
    await established(api, "foos.example.com")
    for name in ("a", "b", "c"):
        assert (await api.create(V1, foo("v1", name, color="red"))).status == 201
    calls = len(hook.reviews)
    r = await api.get(V2, {"limit": "2"})
    assert [o["metadata"]["name"] for o in r.json["items"]] == ["a", "b"] and r.json["metadata"]["continue"]
    assert [len(rv["request"]["objects"]) for rv in hook.reviews[calls:]] == [2]

    def relabel(review: Obj) -> Obj:
        out = convert(review)
        for o in out["convertedObjects"]:
            o["metadata"]["labels"] = {"v2": "yes"}
        return out
    hook.answer = relabel
    r = await api.get(V2, {"labelSelector": "v2=yes", "limit": "2"})
    assert [o["metadata"]["name"] for o in r.json["items"]] == ["a", "b"], r.json
    assert len(hook.reviews[-1]["request"]["objects"]) == 3


async def test_a_ca_bundle_without_certificates_makes_the_kind_unresolvable(served: Any, hook: ConversionHook) -> None:  # noqa: F811
    """Allowed on create (the CRD is not established yet), but no webhook client can be made of
    it: upstream's NewConverter fails, and every request to the kind is "error resolving
    resource"; a whitespace-only caBundle counts as none (the system roots)."""
    api = served
    m = webhook_crd(hook)
    m["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = base64.b64encode(b"not a certificate").decode()
    assert (await api.create(CRDS, m)).status == 201
    await established(api, "foos.example.com")
    for method, path, body in (("GET", V1, None), ("POST", V1, foo("v1", "a")), ("GET", V2, None)):
        r = await api.call(method, path, body=body)
        assert (r.status, r.json["reason"], r.json["message"]) == (
            500, "InternalError", "Internal error occurred: error resolving resource"), (method, path, r.json)

    m = (await api.get(f"{CRDS}/foos.example.com")).json
    m["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = base64.b64encode(b" \n").decode()
    assert (await api.call("PUT", f"{CRDS}/foos.example.com", body=m)).status == 200

    async def resolved() -> Any:
        r = await api.create(V2, foo("v2", "a", colour="red"))
        return r if r.json.get("message") != "Internal error occurred: error resolving resource" else None
    r = await until(resolved, "the CRD served again")
    assert r.status == 500 and "x509: certificate signed by unknown authority" in r.json["message"], r.json
