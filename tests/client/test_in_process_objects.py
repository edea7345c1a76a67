"""The in-process transport hands typed writes and dict patches to the server already decoded;
what gets stored is what the same request as JSON bytes stores."""
from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import core_v1
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

POD = {"metadata": {"name": "web", "labels": {"app": "web"}},
       "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}}


class Spy(InProcessTransport):
    def __init__(self, api: APIServer, *, objects: bool) -> None:
        super().__init__(api)
        self.accepts_objects = objects
        self.seen: list[Request] = []

    def _request(self, *args: Any) -> Request:
        req = super()._request(*args)
        self.seen.append(req)
        return req


def comparable(obj: Any) -> dict[str, Any]:
    d = orjson.loads(types.encode(obj))
    for f in ("uid", "creationTimestamp", "resourceVersion"):
        d["metadata"].pop(f)
    return d


async def run(objects: bool) -> tuple[Spy, dict[str, Any]]:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    spy = Spy(api, objects=objects)
    pods = Clientset(spy).core_v1().pods("default")
    await pods.create(types.from_dict(POD, core_v1.Pod))
    patched = await pods.patch("web", {"status": {"phase": "Running", "podIP": "10.0.0.1"}}, subresource="status")
    return spy, comparable(patched)


async def test_typed_create_and_patch_go_as_dicts_and_store_the_same() -> None:
    spy, as_objects = await run(objects=True)
    assert [(r.method, r.obj is not None, r.body) for r in spy.seen] == [("POST", True, b""), ("PATCH", True, b"")]
    spy, as_bytes = await run(objects=False)
    assert all(r.obj is None and r.body for r in spy.seen)
    assert as_objects == as_bytes and as_objects["status"]["phase"] == "Running"
    assert as_objects["status"]["qosClass"] == "Burstable"          # server-side prepare still ran


async def test_the_server_keeps_no_reference_to_the_callers_patch() -> None:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    pods = Clientset(InProcessTransport(api)).core_v1().pods("default")
    await pods.create(types.from_dict(POD, core_v1.Pod))
    conditions = [{"type": "Ready", "status": "True"}]
    await pods.patch("web", {"status": {"conditions": conditions}}, "merge", subresource="status")
    conditions[0]["status"] = "False"                 # the caller reuses its dict
    kv = await api.storage.get("/registry/pods/default/web")
    assert kv is not None and kv.obj["status"]["conditions"][0]["status"] == "True"


async def test_patch_raw_answers_the_patched_object_undecoded() -> None:
    """patch_raw makes the same request as patch (in process: the patch as a dict, copied) and
    answers the response's bytes, what patch decodes; the server stores the same."""
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    spy = Spy(api, objects=True)
    pods = Clientset(spy).core_v1().pods("default")
    await pods.create(types.from_dict(POD, core_v1.Pod))
    conditions = [{"type": "Ready", "status": "True"}]
    raw = await pods.patch_raw("web", {"status": {"phase": "Running", "conditions": conditions}}, "merge",
                               subresource="status")
    conditions[0]["status"] = "False"                 # the caller reuses its dict
    assert isinstance(raw, bytes) and spy.seen[-1].obj is not None and spy.seen[-1].method == "PATCH"
    kv = await api.storage.get("/registry/pods/default/web")
    assert kv is not None and orjson.loads(raw) == kv.obj
    assert kv.obj["status"]["phase"] == "Running" and kv.obj["status"]["conditions"][0]["status"] == "True"
    assert comparable(types.decode(raw, core_v1.Pod)) == comparable(await pods.get("web"))


async def test_in_process_delete_options_go_as_a_dict_and_act_as_their_json() -> None:
    """A delete's DeleteOptions travel in process as the dict they are (no JSON to parse and
    type-check); over bytes the same request does the same: the uid precondition, the grace
    period, the propagation policy's validation."""
    from kubeplane.api import errors

    async def deletes(objects: bool) -> list[Any]:
        api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
        await api.bootstrap()
        spy = Spy(api, objects=objects)
        pods = Clientset(spy).core_v1().pods("default")
        out: list[Any] = []
        pod = await pods.create(types.from_dict({**POD, "spec": {**POD["spec"], "nodeName": "n1"}}, core_v1.Pod))
        for kw in ({"preconditions": {"uid": "other"}}, {"propagation_policy": "Sideways"},
                   {"grace_period_seconds": 5}, {"grace_period_seconds": 0, "preconditions": {"uid": pod.metadata.uid}}):
            try:
                await pods.delete("web", **kw)
                got = await api.storage.get("/registry/pods/default/web")
                out.append(None if got is None else got.obj["metadata"].get("deletionGracePeriodSeconds"))
            except errors.StatusError as err:
                out.append((err.code, err.message.replace(pod.metadata.uid or "", "<uid>")))
        deletes = [r for r in spy.seen if r.method == "DELETE"]
        assert all((r.obj is not None and not r.body) if objects else (r.obj is None and r.body) for r in deletes)
        return out

    as_objects = await deletes(True)
    assert as_objects == await deletes(False)
    assert [x if x is None or isinstance(x, int) else x[0] for x in as_objects] == [409, 422, 5, None]


async def bind(objects: bool, uid: str | None = None) -> tuple[Spy, dict[str, Any]]:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    spy = Spy(api, objects=objects)
    pods = Clientset(spy).core_v1().pods("default")
    created = await pods.create(types.from_dict(POD, core_v1.Pod))
    await pods.bind("web", "node-1", uid=created.metadata.uid if uid is None else uid)
    d = comparable(await pods.get("web"))
    for c in d["status"]["conditions"]:
        c.pop("lastTransitionTime")
    return spy, d


async def test_binding_goes_as_a_dict_and_stores_the_same() -> None:
    """The scheduler's binding in process: the Binding as Request.obj; the pod bound as by JSON bytes."""
    spy, as_objects = await bind(objects=True)
    assert [(r.method, r.path.rsplit("/", 1)[-1], r.obj is not None, r.body) for r in spy.seen[1:2]] == [
        ("POST", "binding", True, b"")]
    assert spy.seen[1].obj == {"apiVersion": "v1", "kind": "Binding",
                               "metadata": {"name": "web", "namespace": "default", "uid": spy.seen[1].obj["metadata"]["uid"]},
                               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    spy, as_bytes = await bind(objects=False)
    assert spy.seen[1].obj is None and spy.seen[1].body
    assert as_objects == as_bytes and as_objects["spec"]["nodeName"] == "node-1"
    assert as_objects["status"]["conditions"] == [{"type": "PodScheduled", "status": "True"}]


async def test_binding_as_a_dict_keeps_the_uid_precondition() -> None:
    for objects in (True, False):          # the same Conflict either way
        with pytest.raises(errors.Conflict, match="Precondition failed: UID in precondition: other,"):
            await bind(objects, uid="other")


async def test_patch_raw_takes_a_handed_over_patch_as_it_is() -> None:
    """handed_over: the caller never changes the patch nor its values (the kubelet's status
    manager): in process it goes uncopied, and the server stores the same as from a copy."""
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    spy = Spy(api, objects=True)
    pods = Clientset(spy).core_v1().pods("default")
    await pods.create(types.from_dict(POD, core_v1.Pod))
    conditions = [{"type": "Ready", "status": "True"}]
    patch = {"status": {"phase": "Running", "conditions": conditions}}
    raw = await pods.patch_raw("web", patch, "merge", subresource="status", handed_over=True)
    assert spy.seen[-1].obj is patch and spy.seen[-1].query == {}
    kv = await api.storage.get("/registry/pods/default/web")
    assert kv is not None and orjson.loads(raw) == kv.obj
    assert kv.obj["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert patch == {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    await pods.patch_raw("web", {"status": {"phase": "Succeeded"}}, "merge", subresource="status")
    assert spy.seen[-1].obj is not None and (await pods.get("web")).status.phase == "Succeeded"
