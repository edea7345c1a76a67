"""A pod create encodes its spec once: the registry store encodes it for validation (the spec
memo's key) and hands the same bytes to the storage, which embeds them (Storage.create's
spec_json) instead of encoding the spec again. The stored bytes are exactly orjson's encoding
of the stored object, and each write stores its own spec's bytes."""
from __future__ import annotations

import asyncio
import copy
from typing import Any, Callable

import orjson
import pytest

from kubeplane.api.validation import core, memo
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage.memory import encode, stamp

pytestmark = pytest.mark.every_admission_plugin      # `server` with ServiceAccount (tests/apiserver/conftest.py)

SPEC = {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                        "terminationMessagePolicy": "File"}],
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}


def pod(name: str = "p", spec: Any = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": copy.deepcopy(SPEC) if spec is None else spec, "status": {"phase": "Pending"}}


def test_the_store_embeds_the_spec_bytes_it_is_handed() -> None:
    p = pod()
    kv = stamp("/registry/pods/default/p", p, 1, 1, orjson.dumps(p["spec"]))
    assert kv.value == orjson.dumps(kv.obj) and orjson.loads(kv.value) == kv.obj
    assert kv.obj["spec"] is p["spec"]              # the stored object holds the spec, not the bytes
    assert encode(p) == orjson.dumps(p) == encode(p, orjson.dumps(p["spec"]))


def test_the_memo_key_from_handed_bytes_is_the_key_it_encodes() -> None:
    spec = dict(copy.deepcopy(SPEC), volumes=[{"name": "kube-api-access-ab1c2", "emptyDir": {}}])
    spec["containers"][0]["volumeMounts"] = [{"name": "kube-api-access-ab1c2", "mountPath": "/x"}]
    for path, is_pod in (("spec", True), ("spec.template.spec", False)):
        assert memo.pod_spec_key(spec, path, is_pod, orjson.dumps(spec)) == memo.pod_spec_key(spec, path, is_pod)
    p = pod(spec=spec)
    assert core.validate_pod(p, orjson.dumps(spec)) == [] == core.validate_pod(p)


def recording_encodes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """orjson.dumps, recording (a copy of) every dict it is given; bytes embedded as they are
    (orjson.Fragment) are recorded as None."""
    args: list[Any] = []
    dumps: Callable[..., bytes] = orjson.dumps

    def recording(obj: Any, *more: Any, **kwargs: Any) -> bytes:
        if type(obj) is dict:
            args.append(copy.deepcopy({k: None if type(v) is orjson.Fragment else v for k, v in obj.items()}))
        return dumps(obj, *more, **kwargs)
    monkeypatch.setattr(orjson, "dumps", recording)
    return args


def encodes_of(spec: Any, args: list[Any]) -> int:
    """How many of the recorded encodes encoded spec: alone, or in an object holding it as a
    dict (not as bytes already encoded). The request's decoding encodes the spec as sent, before
    defaulting and admission: not this one."""
    return sum(a == spec or a.get("spec") == spec for a in args)


async def call(server: APIServer, method: str, path: str, body: Any, ct: str = "application/json") -> Any:
    resp = await server.route_trusted(Request.build(method, path, "", {"content-type": ct}, orjson.dumps(body)))
    assert resp.status in (200, 201), resp.body
    return orjson.loads(resp.body)


async def test_a_pod_create_encodes_its_spec_once(server: APIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    await call(server, "POST", "/api/v1/namespaces/default/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    spec = {"containers": [{"name": "c", "image": "nginx", "env": [{"name": "E", "value": "é\u2028\x00"}]}],
            "tolerations": [{"key": "k", "operator": "Exists"}]}
    bodies = [orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": spec})
              for i in range(3)]
    for body in bodies:
        encoded = recording_encodes(monkeypatch)
        resp = await server.route_trusted(Request.build("POST", "/api/v1/namespaces/default/pods", "",
                                                        {"content-type": "application/json"}, body))
        monkeypatch.undo()
        assert resp.status == 201, resp.body
        kv = await server.storage.get(f"/registry/pods/default/{orjson.loads(body)['metadata']['name']}")
        assert kv is not None and kv.value == orjson.dumps(kv.obj)
        assert kv.obj["spec"]["volumes"][0]["name"].startswith("kube-api-access-")   # admission's additions stored
        # once: the store's, for validation's memo key and the stored bytes
        assert encodes_of(kv.obj["spec"], encoded) == 1


async def test_concurrent_creates_store_their_own_specs(server: APIServer) -> None:
    """Writes in flight together (each waits in admission between validation and storage) each
    store the bytes of their own spec."""
    images = [f"image-{i}" for i in range(6)]
    await call(server, "POST", "/api/v1/namespaces/default/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    await asyncio.gather(*(call(server, "POST", "/api/v1/namespaces/default/pods",
                                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
                                 "spec": {"containers": [{"name": "c", "image": image}]}})
                           for i, image in enumerate(images)))
    for i, image in enumerate(images):
        kv = await server.storage.get(f"/registry/pods/default/p{i}")
        assert kv is not None and kv.value == orjson.dumps(kv.obj)
        assert orjson.loads(kv.value)["spec"]["containers"][0]["image"] == image


async def test_a_heavy_create_hands_the_spec_over_from_the_worker_thread(server: APIServer,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A body over handlers.common.OFFLOAD_BYTES is validated in the worker thread: its spec's
    bytes come back from there to the store."""
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "annotations": {"a": "x" * 70_000}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    await call(server, "POST", "/api/v1/namespaces/default/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    encoded = recording_encodes(monkeypatch)
    await call(server, "POST", "/api/v1/namespaces/default/pods", big)
    monkeypatch.undo()
    kv = await server.storage.get("/registry/pods/default/big")
    assert kv is not None and kv.value == orjson.dumps(kv.obj)
    # the store's, and objects.check_stored_size's of the whole object (heavy requests only)
    assert encodes_of(kv.obj["spec"], encoded) == 2


async def test_pods_updated_through_the_api_store_orjsons_bytes(server: APIServer) -> None:
    await call(server, "POST", "/api/v1/namespaces/default/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    for i in range(2):
        await call(server, "POST", "/api/v1/namespaces/default/pods",
                   {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    await call(server, "PATCH", "/api/v1/namespaces/default/pods/p0", {"spec": {"containers": [{"name": "c", "image": "redis"}]}},
               "application/strategic-merge-patch+json")
    await call(server, "PATCH", "/api/v1/namespaces/default/pods/p1", {"metadata": {"labels": {"a": "b"}}},
               "application/merge-patch+json")
    kvs, _ = await server.storage.list("/registry/pods/")
    for kv in kvs:
        assert kv.value == orjson.dumps(kv.obj)
    images = {kv.obj["metadata"]["name"]: kv.obj["spec"]["containers"][0]["image"] for kv in kvs}
    assert images == {"p0": "redis", "p1": "nginx"}


async def test_status_writes_and_deletes_keep_the_stored_spec_bytes(server: APIServer,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod's status writes keep its stored spec (the status strategy), and the store places
    the stored version's spec bytes instead of encoding the spec again (memory.stamp's prev);
    a spec change in between encodes its new spec once and places those bytes too."""
    await call(server, "POST", "/api/v1/namespaces/default/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    await call(server, "POST", "/api/v1/namespaces/default/pods",
               {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"a": '"spec":{}'}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}})
    key = "/registry/pods/default/p"
    created = await server.storage.get(key)
    assert created is not None and created.spec_at
    encoded = recording_encodes(monkeypatch)
    in_store: list[Any] = []
    update = server.storage.update

    async def recording_update(*args: Any, **kwargs: Any) -> Any:
        """The store's update, with what it encodes kept apart."""
        mark = len(encoded)
        try:
            return await update(*args, **kwargs)
        finally:
            in_store.extend(encoded[mark:])
    monkeypatch.setattr(server.storage, "update", recording_update)
    status = "/api/v1/namespaces/default/pods/p/status"
    # Running: the bytes of the version created (the store had the create's spec bytes); the
    # spec change: the new spec encoded once, alone (a PATCH's spec is not handed over, yet),
    # its bytes placed and their place kept; the status writes after it: none.
    for body, spec_encodes in [({"status": {"phase": "Running"}}, 0),
                               ({"spec": {"containers": [{"name": "c", "image": "redis"}]}}, 1),
                               ({"status": {"message": '"spec":{"x":1}'}}, 0),
                               ({"status": {"message": "ok"}}, 0)]:
        path = status if "status" in body else "/api/v1/namespaces/default/pods/p"
        del in_store[:]
        await call(server, "PATCH", path, body, "application/strategic-merge-patch+json")
        kv = await server.storage.get(key)
        assert kv is not None and kv.value == orjson.dumps(kv.obj)
        at = kv.spec_at
        assert at and kv.value[at >> 32:at & 0xFFFFFFFF] == orjson.dumps(kv.obj["spec"])
        assert encodes_of(kv.obj["spec"], in_store) == spec_encodes
    assert kv.obj["spec"]["containers"][0]["image"] == "redis" and kv.obj["status"]["message"] == "ok"
    del in_store[:]
    await call(server, "DELETE", "/api/v1/namespaces/default/pods/p", {"gracePeriodSeconds": 30})
    monkeypatch.undo()
    marked = await server.storage.get(key)
    assert marked is not None and marked.value == orjson.dumps(marked.obj) and marked.spec_at
    assert marked.obj["metadata"]["deletionTimestamp"] and encodes_of(marked.obj["spec"], in_store) == 0
