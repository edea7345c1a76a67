"""ResourceClient.watch decodes each event line into (type, typed object, resourceVersion): a
line in one pass where it can, everything else (ERROR events, a plain Status, an object that is
not of the client's type) as before, step by step, with the same outcome.

Upstream: client-go's StreamWatcher with the watch decoder (rest/watch/decoder.go): an ERROR
event's object is a Status and ends the watch as its error.
"""
from __future__ import annotations

from typing import Any, AsyncIterator

import msgspec
import orjson
import pytest

from kubeplane.api import errors
from kubeplane.api.resources import lookup
from kubeplane.api.types import core_v1
from kubeplane.client import rest
from kubeplane.client.metadata import MetadataClient, PartialObjectMetadata
from kubeplane.client.rest import ResourceClient
from kubeplane.client.transport import RawResponse

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web", "namespace": "default", "resourceVersion": "12", "labels": {"app": "web"}},
       "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "n1"},
       "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
GONE = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "too old resource version: 1 (5)", "reason": "Expired", "code": 410}


class Lines:
    """A transport whose watch stream is the given lines."""

    accepts_objects = True

    def __init__(self, *lines: bytes) -> None:
        self.lines = lines

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        for line in self.lines:
            yield line

    async def request(self, *args: Any, **kwargs: Any) -> RawResponse:
        raise AssertionError("a watch makes no request")

    async def close(self) -> None:
        pass


def line(type_: str, obj: Any) -> bytes:
    return orjson.dumps({"type": type_, "object": obj})


async def events(client: ResourceClient[Any]) -> list[Any]:
    return [ev async for ev in client.watch(resource_version="5")]


def pods(*lines: bytes) -> ResourceClient[Any]:
    return ResourceClient(Lines(*lines), lookup("", "v1", "pods"), "default")


async def test_events_decode_into_typed_objects() -> None:
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "20"}}
    got = await events(pods(line("ADDED", POD), line("MODIFIED", {**POD, "metadata": {**POD["metadata"],
                                                                                      "resourceVersion": "13"}}),
                            line("BOOKMARK", bookmark), line("DELETED", POD)))
    assert [(e.type, e.resource_version) for e in got] == [("ADDED", "12"), ("MODIFIED", "13"), ("BOOKMARK", "20"),
                                                           ("DELETED", "12")]
    pod = got[0].obj
    assert isinstance(pod, core_v1.Pod)
    assert pod == msgspec.json.decode(orjson.dumps(POD), type=core_v1.Pod)
    assert pod.status.conditions[0].type == "Ready" and pod.spec.node_name == "n1"
    assert got[0].obj is not got[3].obj                   # every event its own object


async def test_the_object_first_in_the_line_decodes_the_same() -> None:
    got = await events(pods(b'{"object":' + orjson.dumps(POD) + b',"type":"ADDED"}'))
    assert got[0].type == "ADDED" and got[0].obj.metadata.name == "web"


async def test_an_error_event_raises_its_status() -> None:
    with pytest.raises(errors.Gone) as info:
        await events(pods(line("ADDED", POD), line("ERROR", GONE)))
    assert info.value.code == 410 and "too old" in info.value.message


async def test_an_error_event_of_a_type_the_status_also_decodes_as_raises() -> None:
    """A Status decodes as a ConfigMap (no field of theirs conflicts): still the ERROR it is."""
    cms = ResourceClient(Lines(line("ERROR", GONE)), lookup("", "v1", "configmaps"), "default")
    msgspec.json.decode(orjson.dumps(GONE), type=core_v1.ConfigMap)      # the premise
    with pytest.raises(errors.Gone):
        await events(cms)


async def test_a_plain_status_instead_of_a_stream_raises_it() -> None:
    forbidden = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": "pods is forbidden", "reason": "Forbidden", "code": 403}
    with pytest.raises(errors.Forbidden):
        await events(pods(orjson.dumps(forbidden)))


async def test_an_object_not_of_the_type_fails_as_before() -> None:
    with pytest.raises(msgspec.ValidationError):
        await events(pods(line("ADDED", {**POD, "spec": "not a spec"})))


async def test_a_metadata_client_decodes_partial_objects() -> None:
    client = MetadataClient(Lines(line("MODIFIED", POD)), lookup("", "v1", "pods"), "default")
    (ev,) = await events(client)
    assert type(ev.obj) is PartialObjectMetadata and ev.obj.metadata.labels == {"app": "web"}
    assert ev.resource_version == "12"


async def test_each_event_decodes_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The common case does not read the object twice: no raw event, no second typed decode."""
    def unused(*args: Any) -> Any:
        raise AssertionError("decoded twice")
    monkeypatch.setattr(rest.types, "decode", unused)
    monkeypatch.setattr(rest, "_WATCH_EVENT", type("NoRaw", (), {"decode": staticmethod(unused)})())
    got = await events(pods(line("ADDED", POD), line("MODIFIED", POD)))
    assert [e.type for e in got] == ["ADDED", "MODIFIED"]


# --- share_unchanged_specs: an unchanged spec's bytes hand the previous event's spec over --------

def version(rv: int, *, node: str = "n1", phase: str = "Running", uid: str = "u1") -> dict[str, Any]:
    """POD at resourceVersion rv (its uid given), bound to node, in phase."""
    return {**POD, "metadata": {**POD["metadata"], "resourceVersion": str(rv), "uid": uid},
            "spec": {**POD["spec"], "nodeName": node}, "status": {**POD["status"], "phase": phase}}


async def shared_events(*lines: bytes, client: ResourceClient[Any] | None = None) -> list[Any]:
    client = client or pods(*lines)
    return [ev async for ev in client.watch(resource_version="5", share_unchanged_specs=True)]


async def test_an_unchanged_spec_is_the_previous_events_spec_object() -> None:
    """A status write keeps the spec's bytes: the object gets the spec decoded for the event
    before (the same uid), every object still equal to its line decoded afresh. A changed spec
    is decoded; an ADDED event is decoded as it is."""
    objs = [version(12, node=""), version(13), version(14, phase="Succeeded"), version(15, node="n2"),
            version(16, node="n2", phase="Failed"), version(16, node="n2", phase="Failed")]
    types_ = ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    got = await shared_events(*(line(t, o) for t, o in zip(types_, objs)))
    assert [e.type for e in got] == types_
    for ev, obj in zip(got, objs):
        assert type(ev.obj) is core_v1.Pod
        assert ev.obj == msgspec.json.decode(orjson.dumps(obj), type=core_v1.Pod)
        assert ev.resource_version == obj["metadata"]["resourceVersion"]
    specs = [e.obj.spec for e in got]
    assert specs[2] is specs[1] and specs[1] is not specs[0]        # bound (changed), then a status write
    assert specs[3] is not specs[2] and specs[3].node_name == "n2"   # changed again
    assert specs[4] is specs[3] and specs[5] is specs[3]             # status write, delete
    assert specs[2].node_name == "n1" and got[2].obj.status.phase == "Succeeded"
    assert len({id(e.obj) for e in got}) == len(got)               # every event its own object


async def test_an_added_objects_spec_is_compared_decoded_with_the_next_events() -> None:
    """ADDED is decoded in one pass (no spec bytes kept): the next event's spec, if equal, is
    still the ADDED object's; after that the bytes decide."""
    got = await shared_events(line("ADDED", version(12)), line("MODIFIED", version(13, phase="Succeeded")),
                              line("MODIFIED", version(14, phase="Failed")), line("ADDED", version(15, uid="u2")),
                              line("MODIFIED", version(16, uid="u2", node="n2")),
                              line("DELETED", version(16, uid="u2", node="n2")))
    specs = [e.obj.spec for e in got]
    assert specs[1] is specs[0] and specs[2] is specs[0]
    assert specs[4] is not specs[3] and specs[4].node_name == "n2" and specs[5] is specs[4]
    assert [e.obj for e in got] == [msgspec.json.decode(orjson.dumps(o), type=core_v1.Pod) for o in (
        version(12), version(13, phase="Succeeded"), version(14, phase="Failed"), version(15, uid="u2"),
        version(16, uid="u2", node="n2"), version(16, uid="u2", node="n2"))]


async def test_specs_are_shared_only_within_one_object() -> None:
    """Keyed by uid: another object (or the same name recreated) with the same spec gets its own."""
    got = await shared_events(line("MODIFIED", version(13)), line("MODIFIED", version(14, uid="u2")),
                              line("MODIFIED", version(15, uid="u2")))
    assert got[1].obj.spec is not got[0].obj.spec and got[2].obj.spec is got[1].obj.spec


async def test_a_delete_forgets_the_objects_spec() -> None:
    sharing = rest._SpecSharing.of(core_v1.Pod)
    assert sharing is not None
    sharing.decode(line("MODIFIED", version(13)))
    sharing.decode(line("MODIFIED", version(14)))
    assert list(sharing.last) == ["u1"]
    sharing.decode(line("DELETED", version(14)))
    assert sharing.last == {}
    sharing.decode(line("DELETED", version(14, uid="u3")))          # never seen: nothing kept
    assert sharing.last == {}
    sharing.decode(line("ADDED", version(15, uid="u4")))
    assert list(sharing.last) == ["u4"] and sharing.last["u4"][0] is None
    sharing.decode(line("DELETED", version(16, uid="u4")))
    assert sharing.last == {}


async def test_without_share_unchanged_specs_every_event_decodes_its_spec() -> None:
    got = await events(pods(line("MODIFIED", version(13)), line("MODIFIED", version(14))))
    assert got[0].obj.spec == got[1].obj.spec and got[0].obj.spec is not got[1].obj.spec


async def test_sharing_keeps_specless_objects_kinds_without_a_spec_and_errors_as_they_were() -> None:
    no_spec = {k: v for k, v in version(13).items() if k != "spec"}
    null_spec = {**version(14), "spec": None}
    got = await shared_events(line("MODIFIED", no_spec), line("MODIFIED", null_spec))
    assert got[0].obj.spec is None and got[1].obj.spec is None and got[1].obj.status.phase == "Running"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u", "resourceVersion": "3"},
          "data": {"k": "v"}}
    assert rest._SpecSharing.of(core_v1.ConfigMap) is None
    cms = ResourceClient(Lines(line("MODIFIED", cm)), lookup("", "v1", "configmaps"), "default")
    (ev,) = await shared_events(client=cms)
    assert ev.obj == msgspec.json.decode(orjson.dumps(cm), type=core_v1.ConfigMap)
    with pytest.raises(errors.Gone):
        await shared_events(line("MODIFIED", version(13)), line("ERROR", GONE))
    with pytest.raises(msgspec.ValidationError):
        await shared_events(line("MODIFIED", {**POD, "spec": "not a spec"}))
    with pytest.raises(errors.Forbidden):
        await shared_events(orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                          "message": "pods is forbidden", "reason": "Forbidden", "code": 403}))
    client = MetadataClient(Lines(line("MODIFIED", POD)), lookup("", "v1", "pods"), "default")
    (ev,) = await shared_events(client=client)
    assert type(ev.obj) is PartialObjectMetadata and ev.obj.metadata.labels == {"app": "web"}
