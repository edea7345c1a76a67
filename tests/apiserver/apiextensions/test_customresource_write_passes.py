"""What a custom-object write shows and stores when the write path skips a pass: the storage
encode coerces only what changed since the storage version's defaulter (conversion/codec.py),
and a write's response is defaulted on read only when the stored object may lack a default.

Whatever admission does after defaulting, what is stored is pruned with the storage version's
schema (upstream's schemaCoercingConverter), and what a client reads back has the defaults
(upstream's decoder defaults what it reads), also inside array items."""
from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from kubeplane.apiserver.admission import Attributes, Plugin
from kubeplane.apiserver.apiextensions import schema
from kubeplane.apiserver.apiextensions.conversion.codec import CustomResourceCodec
from kubeplane.storage.interface import KeyValue

from .test_crd_controller import CRDS, MERGE, crd_manifest, established, served  # noqa: F401  (its fixture)

BASE = "/apis/example.com/v1/namespaces/default/foos"
KEY = "/registry/example.com/foos/default/"
ROOT = {"type": "object", "properties": {
    "metadata": {"type": "object"},                 # as controller-gen writes it
    "spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "default": 1},
        "plain": {"type": "string"},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}}}},
    "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}}}


class Edits(Plugin):
    """A mutating plugin that edits the object in place after defaulting: `edit(obj)`."""
    NAME = "EditsCustomObjects"
    MUTATING = True
    edit: Any = None

    async def admit(self, a: Attributes) -> None:
        if a.obj is not None and a.group == "example.com" and self.edit is not None:
            self.edit(a.obj)


@pytest.fixture
async def crd_api(served: Any) -> Any:  # noqa: F811  (the imported fixture)
    api = served
    m = crd_manifest()
    m["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": ROOT}
    assert (await api.create(CRDS, m)).status == 201
    await established(api, "foos.example.com")
    plugin = Edits(api.server)
    api.server.admission.append(plugin)
    api.edits = plugin
    return api


def foo(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": name}, "spec": spec}


async def stored(api: Any, name: str) -> dict[str, Any]:
    kv = await api.storage.get(KEY + name)
    assert orjson.loads(kv.value) == kv.obj
    return kv.obj


async def test_a_create_is_stored_and_answered_defaulted_and_pruned(crd_api: Any) -> None:
    api = crd_api
    r = await api.create(BASE, foo("a", ports=[{"name": "http"}], unknown=1))
    assert r.status == 201, r.json
    want = {"replicas": 1, "ports": [{"name": "http", "protocol": "TCP"}]}
    assert r.json["spec"] == want
    assert (await stored(api, "a"))["spec"] == want
    assert (await api.get(f"{BASE}/a")).json == r.json


async def test_admission_adding_unknown_fields_is_pruned_before_storage(crd_api: Any) -> None:
    api = crd_api

    def add(obj: dict[str, Any]) -> None:
        obj["spec"]["injected"] = {"x": 1}
        obj["spec"]["ports"][0]["extra"] = True
        obj["extraTop"] = "y"
    api.edits.edit = add
    r = await api.create(BASE, foo("a", ports=[{"name": "http"}]))
    assert r.status == 201, r.json
    want = {"replicas": 1, "ports": [{"name": "http", "protocol": "TCP"}]}
    assert "extraTop" not in r.json and r.json["spec"] == want
    obj = await stored(api, "a")
    assert "extraTop" not in obj and obj["spec"] == want

    r = await api.call("PATCH", f"{BASE}/a", body={"spec": {"plain": "p"}}, headers=MERGE)
    assert r.status == 200, r.json
    assert (await stored(api, "a"))["spec"] == {**want, "plain": "p"}


async def test_admission_dropping_a_default_stores_without_it_and_reads_with_it(crd_api: Any) -> None:
    """Upstream's encoder stores what it is given (no defaulting); its decoder defaults what is
    read, the write's own response included."""
    api = crd_api

    def drop(obj: dict[str, Any]) -> None:
        del obj["spec"]["replicas"]
        obj["spec"]["ports"].append({"name": "added"})
    api.edits.edit = drop
    r = await api.create(BASE, foo("a", ports=[{"name": "http"}]))
    assert r.status == 201, r.json
    want = {"ports": [{"name": "http", "protocol": "TCP"}, {"name": "added", "protocol": "TCP"}], "replicas": 1}
    assert r.json["spec"] == want
    assert (await stored(api, "a"))["spec"] == {"ports": [{"name": "http", "protocol": "TCP"}, {"name": "added"}]}
    assert (await api.get(f"{BASE}/a")).json["spec"] == want
    assert (await api.get(BASE)).json["items"][0]["spec"] == want


async def test_a_status_write_and_a_put_are_pruned_too(crd_api: Any) -> None:
    api = crd_api
    created = (await api.create(BASE, foo("a"))).json
    status = {**created, "status": {"ready": 1, "unknown": 2}}
    r = await api.call("PUT", f"{BASE}/a/status", body=status)
    assert r.status == 200 and r.json["status"] == {"ready": 1}, r.json
    put = copy.deepcopy(r.json)
    put["spec"] = {"plain": "q", "bogus": 1}
    r = await api.call("PUT", f"{BASE}/a", body=put)
    assert r.status == 200, r.json
    assert r.json["spec"] == {"plain": "q", "replicas": 1}
    obj = await stored(api, "a")
    assert (obj["spec"], obj["status"]) == ({"plain": "q", "replicas": 1}, {"ready": 1})


# --- the codec alone ---------------------------------------------------------------------------

def _codec() -> CustomResourceCodec:
    s = schema.structural_from(ROOT)
    return CustomResourceCodec("example.com", "FooList", "v1", {"v1": s}, {"v1"}, converter=None)  # type: ignore[arg-type]


async def test_encode_coerces_what_changed_since_the_defaulter() -> None:
    codec = _codec()
    s = codec.schemas["v1"]
    a, b = foo("a", plain="x"), foo("b", plain="y")
    schema.default_and_coerce(a, s)
    codec.defaulted(a)
    schema.default_and_coerce(b, s)
    codec.defaulted(b)                  # another write's defaulter ran in between
    a["spec"]["unknown"] = 1
    assert (await codec.encode(a))["spec"] == {"plain": "x", "replicas": 1}
    b["metadata"]["uid"] = "u"          # metadata only: b's content is the defaulter's
    assert await codec.encode(b) is b
    b["spec"]["late"] = 1               # changed after its encode: a later encode coerces it
    assert (await codec.encode(b))["spec"] == {"plain": "y", "replicas": 1}


async def test_unchanged_content_still_has_its_declared_metadata_coerced() -> None:
    root = copy.deepcopy(ROOT)
    root["properties"]["metadata"] = {"type": "object", "properties": {"generateName": {"type": "string"}}}
    s = schema.structural_from(root)
    codec = CustomResourceCodec("example.com", "FooList", "v1", {"v1": s}, {"v1"}, converter=None)  # type: ignore[arg-type]
    obj = foo("a")
    schema.default_and_coerce(obj, s)
    codec.defaulted(obj)
    obj["metadata"]["generateName"] = None
    assert (await codec.encode(obj))["metadata"] == {"name": "a"}


async def test_a_response_is_defaulted_unless_it_is_what_encode_let_through() -> None:
    codec = _codec()
    s = codec.schemas["v1"]
    obj = foo("a")
    schema.default_and_coerce(obj, s)
    codec.defaulted(obj)
    enc = await codec.encode(obj)
    kv = KeyValue(KEY + "a", orjson.dumps(enc), {**enc, "metadata": {"name": "a", "resourceVersion": "2"}}, 2, 2)
    other = {**kv.obj, "spec": {}}                      # a stored object that lacks the default
    kv2 = KeyValue(kv.key, orjson.dumps(other), other, 2, 3)
    assert (await codec.decode([kv2], "v1"))[0].obj["spec"] == {"replicas": 1}
    assert await codec.decode([kv], "v1") == [kv]       # the same stored values: served as stored
