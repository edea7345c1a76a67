"""A pod spec encoded by validation (the memo key) is embedded by the store, not encoded again
(utils/encoded_spec.py): the stored bytes are exactly orjson's encoding of the stored object,
and bytes offered for one spec never reach the write of another object or a changed spec."""
from __future__ import annotations

import copy
from typing import Any, AsyncIterator

import orjson
import pytest

from kubeplane.api.validation import core
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.storage.memory import encode, stamp
from kubeplane.utils import encoded_spec

SPEC = {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                        "terminationMessagePolicy": "File"}],
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}


def pod(name: str = "p", spec: Any = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": copy.deepcopy(SPEC) if spec is None else spec, "status": {"phase": "Pending"}}


@pytest.fixture(autouse=True)
def empty_slot() -> None:
    encoded_spec.slot = None


def test_validation_offers_a_pods_spec_and_the_store_takes_it() -> None:
    p = pod()
    assert core.validate_pod(p) == []
    assert encoded_spec.slot is not None and encoded_spec.slot[0] is p["spec"]
    assert encoded_spec.slot[1] == orjson.dumps(p["spec"])
    kv = stamp("/registry/pods/default/p", p, 1, 1)
    assert encoded_spec.slot is None
    assert kv.value == orjson.dumps(kv.obj) and orjson.loads(kv.value) == kv.obj
    assert kv.obj["spec"] is p["spec"]              # the stored object holds the spec, not the bytes


def test_a_template_spec_is_not_offered() -> None:
    assert core.validate_pod_spec(copy.deepcopy(SPEC), "spec.template.spec", False) == []
    assert encoded_spec.slot is None


def test_the_next_write_empties_the_slot_whatever_it_stores() -> None:
    p = pod()
    assert core.validate_pod(p) == []
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    assert encode(other) == orjson.dumps(other)
    assert encoded_spec.slot is None
    # the offered spec changed afterwards (a request that failed, its object reused): encoded anew
    p["spec"]["containers"][0]["image"] = "busybox"
    assert orjson.loads(encode(p))["spec"]["containers"][0]["image"] == "busybox"


def test_an_offer_for_another_spec_is_not_used() -> None:
    a, b = pod("a"), pod("b", spec=dict(copy.deepcopy(SPEC), restartPolicy="Never"))
    assert core.validate_pod(a) == [] == core.validate_pod(b)        # b's offer replaces a's
    assert encode(a) == orjson.dumps(a)
    assert encoded_spec.slot is None
    assert core.validate_pod(b) == []
    equal = dict(b, spec=copy.deepcopy(b["spec"]))                   # equal, not the same object
    assert encode(equal) == orjson.dumps(equal) and encoded_spec.slot is None


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    s = APIServer(new_storage("memory"))
    await s.bootstrap()
    yield s
    await s.storage.close()


async def test_pods_written_through_the_api_store_orjsons_bytes(server: APIServer,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    taken = []
    take = encoded_spec.take

    def counting(obj: dict[str, Any]) -> dict[str, Any]:
        out = take(obj)
        if out is not obj:
            taken.append(obj["metadata"]["name"])
        return out
    monkeypatch.setattr(encoded_spec, "take", counting)
    async def call(method: str, path: str, body: Any, ct: str = "application/json") -> Any:
        resp = await server.route_trusted(Request.build(method, path, "", {"content-type": ct}, orjson.dumps(body)))
        assert resp.status in (200, 201), resp.body
        return orjson.loads(resp.body)
    await call("POST", "/api/v1/namespaces/default/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    spec = {"containers": [{"name": "c", "image": "nginx", "env": [{"name": "E", "value": "é\u2028\x00"}]}],
            "tolerations": [{"key": "k", "operator": "Exists"}]}
    for i in range(3):
        await call("POST", "/api/v1/namespaces/default/pods",
                   {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": spec})
    await call("PATCH", "/api/v1/namespaces/default/pods/p0", {"spec": {"containers": [{"name": "c", "image": "redis"}]}},
               "application/strategic-merge-patch+json")
    await call("PATCH", "/api/v1/namespaces/default/pods/p1", {"metadata": {"labels": {"a": "b"}}},
               "application/merge-patch+json")
    assert taken == ["p0", "p1", "p2", "p0", "p1"]          # every create and update embedded its spec
    kvs, _ = await server.storage.list("/registry/pods/")
    assert len(kvs) == 3
    for kv in kvs:
        assert kv.value == orjson.dumps(kv.obj)
    images = {kv.obj["metadata"]["name"]: kv.obj["spec"]["containers"][0]["image"] for kv in kvs}
    assert images == {"p0": "redis", "p1": "nginx", "p2": "nginx"}
