"""A write that keeps the very same spec dict as the version it replaces (a status write, a
delete) stores the previous version's spec bytes instead of encoding the spec again
(memory.stamp, KeyValue.spec_at); the stored bytes stay exactly orjson's encoding of the stored
object, on every backend."""
from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest

from kubeplane.storage import KeyValue, Storage
from kubeplane.storage.memory import encode_around, stamp

MakeStore = Callable[..., Awaitable[Storage]]
KEY = "/registry/pods/default/p"


def spec_bytes(kv: KeyValue) -> bytes:
    at = kv.spec_at
    return kv.value[at >> 32:at & 0xFFFFFFFF]


def pod(spec: Any = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", **meta},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]} if spec is None else spec,
            "status": {"phase": "Pending"}}


def sound(kv: KeyValue) -> None:
    """kv's bytes are orjson's encoding of its object, and its spec's bytes, if known, the spec's."""
    assert kv.value == orjson.dumps(kv.obj)
    assert orjson.loads(kv.value) == kv.obj
    if kv.spec_at:
        assert spec_bytes(kv) == orjson.dumps(kv.obj["spec"])


TRICKY = [
    pod(annotations={"a": '"spec":{"containers":[]}', "b": "spec", "c": "\u00ff\u2028\x00é"}),
    {"spec": {}},
    {"spec": {"x": 1}, "status": {"spec": {"x": 1}}},
    {"metadata": {"name": "p", "spec": {"x": 1}}, "spec": {"x": 1}},
    {"kind": "X", "status": {"a": [1, 2.5, None, True]}, "spec": {"\"spec\"": "\ud7ff"}},
]


@pytest.mark.parametrize("obj", TRICKY)
def test_the_spec_is_placed_where_it_belongs(obj: dict[str, Any]) -> None:
    spec_json = orjson.dumps(obj["spec"])
    value, at = encode_around(obj, spec_json)
    assert value == orjson.dumps(obj)
    assert value[at >> 32:at & 0xFFFFFFFF] == spec_json
    assert type(value) is bytes


def test_a_write_keeping_the_spec_reuses_its_bytes_from_the_second_on() -> None:
    first = stamp(KEY, pod(), 1, 1)
    assert first.spec_at == 0                       # a spec written once: nothing to remember
    second = stamp(KEY, {**first.obj, "status": {"phase": "Running"}}, 1, 2, None, first)
    assert second.spec_at and second.obj["spec"] is first.obj["spec"]
    third = stamp(KEY, {**second.obj, "status": {"phase": "Succeeded"}}, 1, 3, None, second)
    for kv in (first, second, third):
        sound(kv)
    assert spec_bytes(third) == spec_bytes(second) == orjson.dumps(first.obj["spec"])
    assert orjson.loads(third.value)["status"] == {"phase": "Succeeded"}


def test_an_equal_but_other_spec_is_encoded() -> None:
    """Identity, not equality: a new spec dict is encoded, never taken from prev; an update
    that changed the spec (a binding) places the new spec's bytes for the writes after it."""
    first = stamp(KEY, pod(), 1, 1)
    second = stamp(KEY, {**first.obj}, 1, 2, None, first)
    changed = copy.deepcopy(second.obj)
    changed["spec"]["containers"][0]["image"] = "redis"
    third = stamp(KEY, changed, 1, 3, None, second)
    sound(third)
    assert orjson.loads(third.value)["spec"]["containers"][0]["image"] == "redis"
    assert third.spec_at and spec_bytes(third) == orjson.dumps(changed["spec"])
    fourth = stamp(KEY, {**third.obj, "status": {"phase": "Running"}}, 1, 4, None, third)
    sound(fourth)
    assert spec_bytes(fourth) == spec_bytes(third)
    # A prev that holds no decoded object (a lean version) or no dict spec is not looked into.
    assert stamp(KEY, {**second.obj}, 1, 4, None, second.lean()).spec_at == 0
    assert stamp(KEY, {"spec": None}, 1, 5, None, second).value == b'{"spec":null,"metadata":{"resourceVersion":"5"}}'


@pytest.mark.parametrize("obj", TRICKY)
async def test_status_writes_spec_changes_and_deletes_store_their_own_bytes(
        store: Storage, obj: dict[str, Any]) -> None:
    w = store.watch("/registry/pods/", store.revision)
    kvs = [await store.create(KEY, copy.deepcopy(obj))]
    for phase in ("Running", "Succeeded"):          # status writes: the stored spec kept
        kvs.append(await store.update(KEY, {**kvs[-1].obj, "status": {"phase": phase}}, kvs[-1].mod_revision))
        assert kvs[-1].obj["spec"] is kvs[0].obj["spec"] or type(store).__name__ == "EtcdStorage"
    spec = copy.deepcopy(kvs[-1].obj["spec"])
    spec["added"] = {"spec": '"spec":{}'}
    kvs.append(await store.update(KEY, {**kvs[-1].obj, "spec": spec}, kvs[-1].mod_revision))     # a spec change
    for phase in ("Failed", "Unknown"):
        kvs.append(await store.update(KEY, {**kvs[-1].obj, "status": {"phase": phase}}, kvs[-1].mod_revision))
    kvs.append(await store.delete(KEY, kvs[-1].mod_revision))
    for kv in kvs:
        sound(kv)
    assert [orjson.loads(kv.value)["spec"].get("added") for kv in kvs] == [None] * 3 + [{"spec": '"spec":{}'}] * 4
    assert [orjson.loads(kv.value).get("status") for kv in kvs][1:] == [
        {"phase": p} for p in ("Running", "Succeeded", "Succeeded", "Failed", "Unknown", "Unknown")]
    if type(store).__name__ != "EtcdStorage":
        # (the spec change places its new spec's bytes too: the status writes after it copy them)
        assert [bool(kv.spec_at) for kv in kvs] == [False, True, True, True, True, True, True]
    for kv in kvs:                                  # what watchers get: the same bytes
        ev = await anext(aiter(w))
        sound(ev.kv)
        assert ev.kv.value == kv.value
    w.stop()
